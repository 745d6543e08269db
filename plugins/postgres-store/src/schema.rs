//! The store's tables, made and moved forward by numbered migrations the
//! component runs itself, each in its own transaction with the version it
//! leaves. A database whose schema is newer than this build knows is
//! refused rather than written with older assumptions.

use crate::wire::{Conn, WireError};

/// Each migration's SQL; its version is its position plus one.
const MIGRATIONS: &[&str] = &[
    // 1: sessions by id with who, where and when; records in order.
    "CREATE TABLE stud_sessions (
        session_id   text PRIMARY KEY,
        project_root text NOT NULL DEFAULT '',
        machine      text NOT NULL DEFAULT '',
        username     text NOT NULL DEFAULT '',
        created_ms   bigint NOT NULL DEFAULT 0,
        updated_ms   bigint NOT NULL DEFAULT 0,
        title        text NOT NULL DEFAULT '',
        manifest     text
     );
     CREATE INDEX stud_sessions_by_update ON stud_sessions (updated_ms DESC);
     CREATE INDEX stud_sessions_by_project ON stud_sessions (project_root, updated_ms DESC);
     CREATE TABLE stud_records (
        session_id text   NOT NULL,
        seq        bigint NOT NULL,
        record     text   NOT NULL,
        PRIMARY KEY (session_id, seq)
     );",
];

/// The newest version this build writes.
pub const CURRENT: i64 = MIGRATIONS.len() as i64;

#[derive(Debug)]
pub enum SchemaError {
    Wire(WireError),
    /// Another stud, newer than this one, moved the schema on.
    Newer {
        found: i64,
    },
}

impl From<WireError> for SchemaError {
    fn from(e: WireError) -> Self {
        SchemaError::Wire(e)
    }
}

/// Bring the database to [`CURRENT`]. Two processes starting at once take
/// turns on an advisory lock, so each migration runs once; each runs in a
/// transaction with the version it leaves.
pub fn migrate(conn: &mut Conn) -> Result<(), SchemaError> {
    conn.simple("SELECT pg_advisory_lock(7355608)")?;
    let result = migrate_locked(conn);
    if !conn.is_broken() {
        let _ = conn.simple("SELECT pg_advisory_unlock(7355608)");
    }
    result
}

fn migrate_locked(conn: &mut Conn) -> Result<(), SchemaError> {
    // Asked first: a role that may use the tables but not create any
    // (PostgreSQL 15's default on `public`) fails even `IF NOT EXISTS`.
    let exists = conn.simple("SELECT to_regclass('stud_schema') IS NOT NULL")?;
    if exists
        .first()
        .and_then(|r| r.first())
        .and_then(|v| v.as_deref())
        != Some("t")
    {
        conn.simple("CREATE TABLE IF NOT EXISTS stud_schema (version bigint NOT NULL)")?;
    }
    // Each pass moves the version on by one: more passes than there are
    // migrations means the server is not keeping what it is told.
    for _ in 0..=MIGRATIONS.len() {
        let found = version(conn)?;
        if found > CURRENT {
            return Err(SchemaError::Newer { found });
        }
        let Some(sql) = usize::try_from(found).ok().and_then(|i| MIGRATIONS.get(i)) else {
            return Ok(());
        };
        let next = found + 1;
        let script = format!(
            "BEGIN; {sql}; DELETE FROM stud_schema; INSERT INTO stud_schema (version) VALUES ({next}); COMMIT;"
        );
        if let Err(e) = conn.simple(&script) {
            if !conn.is_broken() {
                let _ = conn.simple("ROLLBACK");
            }
            return Err(e.into());
        }
    }
    Err(SchemaError::Wire(WireError::Fatal(
        "the database's stud schema version does not move on as migrations run".into(),
    )))
}

fn version(conn: &mut Conn) -> Result<i64, WireError> {
    let rows = conn.simple("SELECT coalesce(max(version), 0) FROM stud_schema")?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(|v| v.as_deref())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0))
}
