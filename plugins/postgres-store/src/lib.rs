//! `postgres`: sessions in a PostgreSQL database a team shares, so a
//! session started on one machine is listed, audited and resumed on
//! another.
//!
//! - **Where.** `sessionStores.postgres.url` in the person's global
//!   settings names the server; that exact host and port is the only
//!   address the host lets this component reach. The password comes
//!   through the secret `PGPASSWORD`, never the URL.
//! - **What.** One row per session (id, project, machine, user, times,
//!   title, the manifest as written) and one row per record, numbered.
//!   The tables come from numbered migrations ([`schema`]).
//! - **One writer per session.** The first write to a session takes a
//!   PostgreSQL advisory lock on it, held by this connection for the life
//!   of the process: a second stud, on this machine or another, is refused
//!   (an append of no records claims the session without writing).
//! - **A lost database.** Writes that cannot reach the server are held in
//!   memory, in order, up to `maxPendingRecords` records, and written at
//!   the next call that reaches it. A write is confirmed only once
//!   committed; one still held is reported as not stored, so nothing
//!   confirmed is ever lost.

mod pending;
mod schema;
mod url;
mod wire;

use std::collections::HashMap;

use stud_sdk::prelude::*;

use pending::{Item, Pending};
use url::Target;
use wire::{Conn, WireError};

/// The advisory-lock class of session locks (two-key locks, so they never
/// meet the migration lock's one-key space).
const LOCK_CLASS: &str = "1937012068";
const DEFAULT_MAX_PENDING: usize = 10_000;

/// A session this process writes.
struct Held {
    next: i64,
    /// False after a reconnect that found the lock still taken (the old
    /// connection's server process not gone yet): retried at each write.
    locked: bool,
}

#[derive(Default)]
struct Store {
    /// `None` until a URL is configured: every call then says how to.
    target: Option<Target>,
    password: Option<String>,
    conn: Option<Conn>,
    /// Sessions this process writes: the next record's number in each,
    /// and whether the lock is ours on the connection now.
    held: HashMap<String, Held>,
    /// Sessions another process wrote while this one was cut off from the
    /// database: never written again from here (why, for the error).
    lost: HashMap<String, String>,
    pending: Pending,
}

fn check_id(session_id: &str) -> Result<(), Error> {
    let ok = !session_id.is_empty()
        && session_id.len() <= 128
        && session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "`{session_id}` is not a session id (letters, digits, - and _)"
        )))
    }
}

fn not_found(session_id: &str) -> Error {
    Error::new(
        ErrorClass::Session,
        "not-found",
        format!("no session `{session_id}` in this store (see `stud session list --all`)"),
    )
}

fn busy(session_id: &str) -> Error {
    Error::new(
        ErrorClass::Session,
        "session-busy",
        format!(
            "session {session_id} is open in another stud process (on this machine or another sharing the database); wait for it to finish, or start a new session"
        ),
    )
}

impl Store {
    fn target(&self) -> Result<&Target, Error> {
        self.target.as_ref().ok_or_else(|| {
            Error::new(
                ErrorClass::Validation,
                "not-configured",
                "the postgres session store has no database: set `sessionStores.postgres.url` (e.g. \"postgres://stud@db.internal:5432/stud\") in your global settings",
            )
        })
    }

    fn where_(&self) -> String {
        self.target
            .as_ref()
            .map(|t| format!("{}:{}/{}", t.host, t.port, t.database))
            .unwrap_or_default()
    }

    fn wire_error(&self, e: WireError) -> Error {
        match e {
            WireError::Lost(m) => Error::new(
                ErrorClass::Session,
                "store-unreachable",
                format!(
                    "the session database at {} is unreachable: {m}",
                    self.where_()
                ),
            ),
            WireError::Fatal(m) => Error::new(ErrorClass::Session, "store-refused", m),
            e @ WireError::Server { .. } => Error::new(
                ErrorClass::Session,
                "store-io",
                format!("the session database at {}: {e}", self.where_()),
            ),
        }
    }

    /// A working connection, opened (and the schema brought up to date,
    /// the held sessions' locks taken again) when there is none.
    fn conn(&mut self) -> Result<&mut Conn, WireError> {
        if self.conn.as_ref().is_some_and(Conn::is_broken) {
            self.conn = None;
        }
        if self.conn.is_none() {
            let Some(target) = self.target.clone() else {
                return Err(WireError::Fatal("no database configured".into()));
            };
            let mut conn = Conn::open(&target, self.password.as_deref())?;
            schema::migrate(&mut conn).map_err(|e| match e {
                schema::SchemaError::Wire(w) => w,
                schema::SchemaError::Newer { found } => WireError::Fatal(format!(
                    "the database's stud schema is version {found}, newer than this stud knows ({}); upgrade stud on this machine",
                    schema::CURRENT
                )),
            })?;
            // The new connection holds no lock: take the held sessions'
            // again, each checked against what the database now has.
            for h in self.held.values_mut() {
                h.locked = false;
            }
            self.conn = Some(conn);
            let ids: Vec<String> = self.held.keys().cloned().collect();
            for id in ids {
                self.relock(&id)?;
            }
        }
        match self.conn.as_mut() {
            Some(c) => Ok(c),
            None => Err(WireError::Lost("no connection".into())),
        }
    }

    /// Take `session_id` for writing (once per process): its lock, and
    /// where its records go on.
    fn claim(&mut self, session_id: &str) -> Result<Result<i64, Error>, WireError> {
        if let Some(why) = self.lost.get(session_id) {
            return Ok(Err(Error::new(
                ErrorClass::Session,
                "session-busy",
                why.clone(),
            )));
        }
        if let Some(h) = self.held.get(session_id) {
            if h.locked {
                return Ok(Ok(h.next));
            }
            return Ok(match self.relock(session_id)? {
                Some(next) => Ok(next),
                None => match self.lost.get(session_id) {
                    Some(why) => Err(Error::new(ErrorClass::Session, "session-busy", why.clone())),
                    None => Err(Error::new(
                        ErrorClass::Session,
                        "store-unreachable",
                        format!(
                            "session {session_id} is still locked by this process's previous connection to the database (the server drops it within a minute); its records stay held"
                        ),
                    )),
                },
            });
        }
        let conn = self.conn()?;
        if !try_lock(conn, session_id)? {
            return Ok(Err(busy(session_id)));
        }
        let next = next_seq(conn, session_id)?;
        self.held
            .insert(session_id.to_string(), Held { next, locked: true });
        Ok(Ok(next))
    }

    /// Take a held session's lock again after a reconnect. The records
    /// the database has must be the ones this process wrote (plus, at
    /// most, the batch whose commit answer was lost); otherwise another
    /// process wrote it meanwhile and it is given up. `None`: not ours now.
    fn relock(&mut self, session_id: &str) -> Result<Option<i64>, WireError> {
        let Some(expected) = self.held.get(session_id).map(|h| h.next) else {
            return Ok(None);
        };
        let Some(conn) = self.conn.as_mut() else {
            return Err(WireError::Lost("no connection".into()));
        };
        if !try_lock(conn, session_id)? {
            return Ok(None);
        }
        let found = next_seq(conn, session_id)?;
        let in_flight = match self.pending.front() {
            Some(Item::Records {
                session_id: s,
                records,
                first_seq: Some(first),
            }) if s == session_id && *first == expected => Some(records.len() as i64),
            _ => None,
        };
        if found == expected {
            // As we left it.
        } else if in_flight.is_some_and(|n| found == expected + n) {
            // The batch in flight at the outage was committed.
            self.pending.pop_front();
        } else {
            let why = format!(
                "session {session_id} was written by another stud process while this one was cut off from the database; this process writes it no more ({} records it held are not stored)",
                self.pending.records_of(session_id)
            );
            self.pending.drop_session(session_id);
            self.held.remove(session_id);
            self.lost.insert(session_id.to_string(), why);
            if let Some(conn) = self.conn.as_mut() {
                unlock(conn, session_id)?;
            }
            return Ok(None);
        }
        if let Some(h) = self.held.get_mut(session_id) {
            h.next = found;
            h.locked = true;
        }
        Ok(Some(found))
    }

    /// Write what is held, oldest first. Stops at the first failure,
    /// leaving it and what follows held.
    fn flush(&mut self) -> Result<(), Error> {
        while let Some(item) = self.pending.front() {
            let session_id = item.session_id().to_string();
            // A connection first: a reconnect takes the held sessions'
            // locks again (and may settle the front item).
            if let Err(e) = self.conn() {
                return Err(self.wire_error(e));
            }
            if self.pending.front().map(Item::session_id) != Some(session_id.as_str()) {
                continue;
            }
            let next = match self.claim(&session_id) {
                Ok(Ok(next)) => next,
                Ok(Err(e)) => {
                    if e.code() == "session-busy" && !self.held.contains_key(&session_id) {
                        // Never ours: what was queued for it cannot go in.
                        self.pending.drop_session(&session_id);
                    }
                    return Err(e);
                }
                Err(e) => return Err(self.wire_error(e)),
            };
            let result = match self.pending.front_mut() {
                Some(Item::Records {
                    records, first_seq, ..
                }) => {
                    // The numbers are fixed at the first try, so a retry
                    // after a commit whose answer was lost writes nothing twice.
                    let first = *first_seq.get_or_insert(next);
                    let n = records.len() as i64;
                    let result = write_records(self.conn.as_mut(), &session_id, first, records);
                    if result.is_ok()
                        && let Some(h) = self.held.get_mut(&session_id)
                    {
                        h.next = h.next.max(first + n);
                    }
                    result
                }
                Some(Item::Manifest { text, .. }) => {
                    write_manifest(self.conn.as_mut(), &session_id, text)
                }
                None => Ok(()),
            };
            match result {
                Ok(()) => {
                    self.pending.pop_front();
                }
                // The server refused this write itself (bad data, a
                // constraint): retrying cannot help, and it must not block
                // the ones after it. Anything else is retried.
                Err(WireError::Server { code, .. }) if code == "23505" => {
                    // Its numbers are taken: another process writes it.
                    let why = format!(
                        "session {session_id} was written by another stud process; this process writes it no more ({} records it held are not stored)",
                        self.pending.records_of(&session_id)
                    );
                    self.pending.drop_session(&session_id);
                    self.held.remove(&session_id);
                    self.lost.insert(session_id.clone(), why.clone());
                    return Err(Error::new(ErrorClass::Session, "session-busy", why));
                }
                Err(WireError::Server { code, message })
                    if code.starts_with("22") || code.starts_with("23") =>
                {
                    self.pending.pop_front();
                    return Err(self.wire_error(WireError::Server { code, message }));
                }
                Err(WireError::Server { code, message }) => {
                    // A read-only standby after a failover, a shutdown, a
                    // conflict: another connection may do better.
                    if let Some(c) = self.conn.as_mut() {
                        c.mark_broken();
                    }
                    return Err(
                        self.wire_error(WireError::Lost(format!("{message} (SQLSTATE {code})")))
                    );
                }
                Err(e) => return Err(self.wire_error(e)),
            }
        }
        Ok(())
    }

    /// Queue a write and try to get everything held written.
    fn write(&mut self, item: Item) -> Result<(), Error> {
        let records = item.record_count();
        if let Err(dropped) = self.pending.push(item) {
            return Err(Error::new(
                ErrorClass::Session,
                "store-unreachable",
                format!(
                    "the session database at {} has been unreachable for {} held records (the most `maxPendingRecords` keeps); these {dropped} are not kept",
                    self.where_(),
                    self.pending.records()
                ),
            ));
        }
        match self.flush() {
            Ok(()) => Ok(()),
            Err(e) if e.code() == "store-unreachable" => Err(Error::new(
                ErrorClass::Session,
                "store-unreachable",
                format!(
                    "{}; {} records held in memory (this write's {records} among them), written in order once it is back",
                    e.message(),
                    self.pending.records()
                ),
            )),
            Err(e) => Err(e),
        }
    }
}

fn try_lock(conn: &mut Conn, session_id: &str) -> Result<bool, WireError> {
    let rows = conn.query(
        &format!("SELECT pg_try_advisory_lock({LOCK_CLASS}, hashtext($1))"),
        vec![Some(session_id)],
    )?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(|v| v.as_deref())
        == Some("t"))
}

/// The number the session's next record gets.
fn next_seq(conn: &mut Conn, session_id: &str) -> Result<i64, WireError> {
    let rows = conn.query(
        "SELECT coalesce(max(seq), 0) + 1 FROM stud_records WHERE session_id = $1",
        vec![Some(session_id)],
    )?;
    rows.first()
        .and_then(|r| r.first())
        .and_then(|v| v.as_deref())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| WireError::Fatal("the database did not say how long the session is".into()))
}

fn unlock(conn: &mut Conn, session_id: &str) -> Result<(), WireError> {
    conn.query(
        &format!("SELECT pg_advisory_unlock({LOCK_CLASS}, hashtext($1))"),
        vec![Some(session_id)],
    )
    .map(|_| ())
}

fn write_records(
    conn: Option<&mut Conn>,
    session_id: &str,
    first: i64,
    records: &[String],
) -> Result<(), WireError> {
    let conn = conn.ok_or_else(|| WireError::Lost("no connection".into()))?;
    let seqs: Vec<String> = (0..records.len() as i64)
        .map(|i| (first + i).to_string())
        .collect();
    let statements: Vec<(&str, Vec<Option<&str>>)> = records
        .iter()
        .zip(&seqs)
        .map(|(r, seq)| {
            (
                // No `ON CONFLICT`: a number already taken (another
                // process wrote the session) fails the whole batch, so
                // none of it lands among another's records.
                "INSERT INTO stud_records (session_id, seq, record) VALUES ($1, $2, $3)",
                vec![Some(session_id), Some(seq.as_str()), Some(r.as_str())],
            )
        })
        .collect();
    conn.batch(&statements).map(|_| ())
}

fn write_manifest(conn: Option<&mut Conn>, session_id: &str, text: &str) -> Result<(), WireError> {
    let conn = conn.ok_or_else(|| WireError::Lost("no connection".into()))?;
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    // PostgreSQL text holds no NUL; a title is the person's or a model's words.
    let s = |k: &str| v[k].as_str().unwrap_or("").replace('\0', "");
    let n = |k: &str| v[k].as_u64().unwrap_or(0).to_string();
    let created = n("created_ms");
    let updated = v["updated_ms"]
        .as_u64()
        .map(|u| u.to_string())
        .unwrap_or_else(|| created.clone());
    let (root, machine, user, title) = (s("project_root"), s("machine"), s("user"), s("title"));
    conn.query(
        "INSERT INTO stud_sessions (session_id, project_root, machine, username, created_ms, updated_ms, title, manifest)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (session_id) DO UPDATE SET project_root = EXCLUDED.project_root,
           machine = EXCLUDED.machine, username = EXCLUDED.username, created_ms = EXCLUDED.created_ms,
           updated_ms = EXCLUDED.updated_ms, title = EXCLUDED.title, manifest = EXCLUDED.manifest",
        vec![
            Some(session_id),
            Some(&root),
            Some(&machine),
            Some(&user),
            Some(&created),
            Some(&updated),
            Some(&title),
            Some(text),
        ],
    )
    .map(|_| ())
}

impl SessionStore for Store {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.pending = Pending::new(
            config["maxPendingRecords"]
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(DEFAULT_MAX_PENDING),
        );
        let Some(url) = config["url"].as_str() else {
            // Not configured: loaded, and says how to configure it when used.
            return Ok(());
        };
        let target = url::parse(url).map_err(|why| {
            Error::invalid_input(format!(
                "settings.json: sessionStores.postgres.url `{url}`: {why}"
            ))
        })?;
        self.target = Some(target);
        self.password = stud_sdk::host::secret("PGPASSWORD")
            .ok()
            .filter(|p| !p.is_empty());
        // Reach the database now: a store that cannot is reported when the
        // session starts, not at its first write.
        self.conn().map(|_| ()).map_err(|e| self.wire_error(e))
    }

    fn deactivate(&mut self) -> Result<(), Error> {
        let left = if self.flush().is_err() {
            self.pending.records()
        } else {
            0
        };
        if let Some(conn) = self.conn.take() {
            conn.close();
        }
        self.held.clear();
        if left > 0 {
            return Err(Error::new(
                ErrorClass::Session,
                "store-unreachable",
                format!(
                    "{left} records could not be written to the session database at {} before the session ended",
                    self.where_()
                ),
            ));
        }
        Ok(())
    }

    fn append(&mut self, session_id: &str, records: Vec<String>) -> Result<(), Error> {
        check_id(session_id)?;
        self.target()?;
        if records.is_empty() {
            // A claim: the session is ours to write, or somebody else's.
            return match self.claim(session_id) {
                Ok(Ok(_)) => self.flush(),
                Ok(Err(e)) => Err(e),
                Err(e) => Err(self.wire_error(e)),
            };
        }
        self.write(Item::Records {
            session_id: session_id.to_string(),
            records,
            first_seq: None,
        })
    }

    fn write_manifest(&mut self, session_id: &str, manifest: String) -> Result<(), Error> {
        check_id(session_id)?;
        self.target()?;
        serde_json::from_str::<Value>(&manifest)?;
        self.write(Item::Manifest {
            session_id: session_id.to_string(),
            text: manifest,
        })
    }

    fn read(&mut self, session_id: &str) -> Result<SessionData, Error> {
        check_id(session_id)?;
        self.target()?;
        // What this process still holds goes in first, when it can.
        let _ = self.flush();
        let rows = self
            .conn()
            .and_then(|c| {
                c.batch(&[
                    (
                        "SELECT manifest FROM stud_sessions WHERE session_id = $1",
                        vec![Some(session_id)],
                    ),
                    (
                        "SELECT record FROM stud_records WHERE session_id = $1 ORDER BY seq",
                        vec![Some(session_id)],
                    ),
                ])
            })
            .map_err(|e| self.wire_error(e))?;
        let manifest = rows
            .first()
            .and_then(|r| r.first())
            .and_then(|r| r.first().cloned().flatten())
            .ok_or_else(|| not_found(session_id))?;
        let records = rows
            .get(1)
            .map(|rs| {
                rs.iter()
                    .filter_map(|r| r.first().cloned().flatten())
                    .collect()
            })
            .unwrap_or_default();
        Ok(SessionData { manifest, records })
    }

    fn list(&mut self) -> Result<Vec<SessionSummary>, Error> {
        self.target()?;
        let mut out = Vec::new();
        let listed = self.conn().and_then(|c| {
            c.query_each(
                "SELECT session_id, project_root, created_ms, updated_ms, title FROM stud_sessions
                 WHERE manifest IS NOT NULL ORDER BY updated_ms DESC",
                vec![],
                &mut |row| {
                    let text = |i: usize| row.get(i).copied().flatten();
                    let number = |i: usize| text(i).and_then(|t| t.parse().ok()).unwrap_or(0);
                    if let Some(id) = text(0) {
                        out.push(SessionSummary {
                            session_id: id.to_string(),
                            project_root: text(1).unwrap_or_default().to_string(),
                            created_ms: number(2),
                            updated_ms: number(3),
                            title: text(4).unwrap_or_default().to_string(),
                        });
                    }
                    Ok(())
                },
            )
        });
        listed.map_err(|e| self.wire_error(e))?;
        Ok(out)
    }

    fn delete(&mut self, session_id: &str) -> Result<(), Error> {
        check_id(session_id)?;
        self.target()?;
        // Never under a process that is writing it.
        match self.claim(session_id) {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(self.wire_error(e)),
        }
        self.pending.drop_session(session_id);
        let rows = self
            .conn()
            .and_then(|c| {
                c.batch(&[
                    (
                        "DELETE FROM stud_records WHERE session_id = $1",
                        vec![Some(session_id)],
                    ),
                    (
                        "DELETE FROM stud_sessions WHERE session_id = $1 RETURNING session_id",
                        vec![Some(session_id)],
                    ),
                ])
            })
            .map_err(|e| self.wire_error(e))?;
        self.held.remove(session_id);
        if let Some(c) = self.conn.as_mut() {
            let _ = c.query(
                &format!("SELECT pg_advisory_unlock({LOCK_CLASS}, hashtext($1))"),
                vec![Some(session_id)],
            );
        }
        if rows.get(1).is_none_or(|r| r.is_empty()) {
            return Err(not_found(session_id));
        }
        Ok(())
    }
}

stud_sdk::export_session_store!(Store);
