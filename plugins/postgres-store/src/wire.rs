//! A small synchronous PostgreSQL client over the host's socket: start-up
//! and authentication (trust, cleartext, MD5, SCRAM-SHA-256), the simple
//! query protocol for migrations, and the extended protocol with text
//! parameters for everything that carries data (no SQL is ever built from
//! a value). `postgres-protocol` frames the messages; this file only drives
//! them.

use std::io::{Read, Write};

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::IsNull;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use stud_sdk::host::socket::{self, Stream};

use crate::url::{Target, Tls};

/// What went wrong talking to the database.
#[derive(Debug)]
pub enum WireError {
    /// The connection is gone or never came up: retry later.
    Lost(String),
    /// The server refused a statement (SQLSTATE, message).
    Server { code: String, message: String },
    /// Authentication or protocol trouble that a retry will not mend.
    Fatal(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Lost(m) | WireError::Fatal(m) => f.write_str(m),
            WireError::Server { code, message } => write!(f, "{message} (SQLSTATE {code})"),
        }
    }
}

/// Whether `host` is this machine (a password to it never crosses a network).
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Most bytes asked of the host per read.
const READ_CHUNK: usize = 256 * 1024;

/// One row borrowed from the message that carried it.
pub type RowRef<'a> = [Option<&'a str>];

/// What a query's rows go to, as they arrive.
pub type OnRow<'f> = dyn FnMut(&RowRef<'_>) -> Result<(), WireError> + 'f;

/// What a batch's answer goes to: a row (`Some`), or a statement's end.
type OnAnswer<'f> = dyn FnMut(Option<&RowRef<'_>>) -> Result<(), WireError> + 'f;

/// One row: each column as text, `None` for NULL.
pub type Row = Vec<Option<String>>;

pub struct Conn {
    stream: Stream,
    buf: BytesMut,
    out: BytesMut,
    /// A message the server sent that left the connection unusable.
    broken: bool,
}

fn lost(e: impl std::fmt::Display) -> WireError {
    WireError::Lost(e.to_string())
}

impl Conn {
    /// Connect and authenticate as `target.user` to `target.database`.
    pub fn open(target: &Target, password: Option<&str>) -> Result<Conn, WireError> {
        let connection = socket::connect(&target.host, target.port, false)
            .map_err(|e| WireError::Lost(e.message().to_string()))?;
        let mut conn = Conn {
            stream: Stream(connection),
            buf: BytesMut::with_capacity(8192),
            out: BytesMut::with_capacity(8192),
            broken: false,
        };
        let tls_on = target.tls != Tls::Off && conn.negotiate_tls(target)?;
        let params = [
            ("user", target.user.as_str()),
            ("database", target.database.as_str()),
            ("application_name", "stud"),
            ("client_encoding", "UTF8"),
            // The server notices a vanished client (a laptop asleep)
            // within a minute, and frees its session locks.
            ("tcp_keepalives_idle", "30"),
            ("tcp_keepalives_interval", "10"),
            ("tcp_keepalives_count", "3"),
        ];
        frontend::startup_message(params.iter().copied(), &mut conn.out).map_err(lost)?;
        conn.send()?;
        // In the clear to a host that is not this machine, where TLS was
        // wanted but not had (`prefer`): a password would go to whoever
        // answered. `sslmode=disable` says the network is trusted.
        let exposed = !tls_on && target.tls != Tls::Off && !is_loopback(&target.host);
        conn.authenticate(target, if exposed { None } else { password }, exposed)?;
        // Parameter statuses and the key data, up to the first ready.
        loop {
            match conn.next()? {
                Message::ReadyForQuery(_) => return Ok(conn),
                Message::ErrorResponse(body) => return Err(fatal_of(server_error(&body))),
                _ => {}
            }
        }
    }

    /// PostgreSQL's TLS starts in the clear: an `SSLRequest`, one byte of
    /// answer (`S` yes, `N` no), then the handshake on the same socket.
    fn negotiate_tls(&mut self, target: &Target) -> Result<bool, WireError> {
        frontend::ssl_request(&mut self.out);
        self.send()?;
        let mut answer = [0u8; 1];
        let n = self.stream.read(&mut answer).map_err(lost)?;
        match (n, answer[0]) {
            (1, b'S') => self.stream.0.start_tls().map(|()| true).map_err(|e| {
                WireError::Fatal(format!(
                    "TLS with the server at {}:{}: {}; name the server's certificate authority with `sslrootcert=/path/ca.pem` in the URL (or `sslmode=disable` on a network you trust)",
                    target.host,
                    target.port,
                    stud_sdk::Error::from(e).message()
                ))
            }),
            (1, b'N') if target.tls == Tls::Require => Err(WireError::Fatal(format!(
                "the server at {}:{} does not speak TLS, and the URL requires it (sslmode)",
                target.host, target.port
            ))),
            (1, b'N') => Ok(false),
            _ => {
                self.broken = true;
                Err(WireError::Lost(
                    "the server closed the connection at the TLS request".into(),
                ))
            }
        }
    }

    fn authenticate(
        &mut self,
        target: &Target,
        password: Option<&str>,
        exposed: bool,
    ) -> Result<(), WireError> {
        let need = |what: &str| {
            if exposed {
                return WireError::Fatal(format!(
                    "the server at {}:{} does not speak TLS and asks for a password ({what}); stud does not send one in the clear: enable TLS on the server, or set `sslmode=disable` in the URL if the network is trusted",
                    target.host, target.port
                ));
            }
            WireError::Fatal(format!(
                "the server at {}:{} asks user `{}` for a password ({what}); give it through the secret PGPASSWORD (settings `secrets.postgres.PGPASSWORD`, e.g. {{\"env\": \"STUD_PG_PASSWORD\"}})",
                target.host, target.port, target.user
            ))
        };
        match self.next()? {
            Message::AuthenticationOk => Ok(()),
            Message::AuthenticationCleartextPassword => {
                let pw = password.ok_or_else(|| need("cleartext"))?;
                frontend::password_message(pw.as_bytes(), &mut self.out).map_err(lost)?;
                self.send()?;
                self.expect_auth_ok()
            }
            Message::AuthenticationMd5Password(body) => {
                let pw = password.ok_or_else(|| need("MD5"))?;
                let hash = md5_hash(target.user.as_bytes(), pw.as_bytes(), body.salt());
                frontend::password_message(hash.as_bytes(), &mut self.out).map_err(lost)?;
                self.send()?;
                self.expect_auth_ok()
            }
            Message::AuthenticationSasl(body) => {
                let mut mechanisms = body.mechanisms();
                let mut scram = false;
                while let Some(m) = mechanisms.next().map_err(lost)? {
                    scram |= m == SCRAM_SHA_256;
                }
                if !scram {
                    return Err(WireError::Fatal(format!(
                        "the server at {}:{} offers no SASL mechanism stud speaks (SCRAM-SHA-256)",
                        target.host, target.port
                    )));
                }
                let pw = password.ok_or_else(|| need("SCRAM-SHA-256"))?;
                let mut exchange = ScramSha256::new(pw.as_bytes(), ChannelBinding::unsupported());
                frontend::sasl_initial_response(SCRAM_SHA_256, exchange.message(), &mut self.out)
                    .map_err(lost)?;
                self.send()?;
                match self.next()? {
                    Message::AuthenticationSaslContinue(body) => exchange
                        .update(body.data())
                        .map_err(|e| WireError::Fatal(e.to_string()))?,
                    Message::ErrorResponse(body) => return Err(fatal_of(server_error(&body))),
                    _ => return Err(WireError::Fatal("unexpected message during SCRAM".into())),
                }
                frontend::sasl_response(exchange.message(), &mut self.out).map_err(lost)?;
                self.send()?;
                match self.next()? {
                    Message::AuthenticationSaslFinal(body) => exchange
                        .finish(body.data())
                        .map_err(|e| WireError::Fatal(format!("the server's SCRAM proof: {e}")))?,
                    Message::ErrorResponse(body) => return Err(fatal_of(server_error(&body))),
                    _ => return Err(WireError::Fatal("unexpected message during SCRAM".into())),
                }
                self.expect_auth_ok()
            }
            Message::ErrorResponse(body) => Err(fatal_of(server_error(&body))),
            _ => Err(WireError::Fatal(format!(
                "the server at {}:{} asks for an authentication method stud does not speak (use scram-sha-256, md5 or password in pg_hba.conf)",
                target.host, target.port
            ))),
        }
    }

    fn expect_auth_ok(&mut self) -> Result<(), WireError> {
        match self.next()? {
            Message::AuthenticationOk => Ok(()),
            Message::ErrorResponse(body) => Err(fatal_of(server_error(&body))),
            _ => Err(WireError::Fatal(
                "unexpected message after the password".into(),
            )),
        }
    }

    /// Whether a message left the connection unusable (reconnect).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Use a new connection next time (the server is read-only now, or
    /// shutting down).
    pub fn mark_broken(&mut self) {
        self.broken = true;
    }

    fn send(&mut self) -> Result<(), WireError> {
        let bytes = self.out.split();
        let r = self.stream.write_all(&bytes).map_err(lost);
        if r.is_err() {
            self.broken = true;
        }
        r
    }

    /// The next whole message from the server.
    fn next(&mut self) -> Result<Message, WireError> {
        loop {
            match Message::parse(&mut self.buf) {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => {
                    self.broken = true;
                    return Err(WireError::Fatal(format!(
                        "a malformed message from the server: {e}"
                    )));
                }
            }
            // Large reads: a listing of 100,000 sessions is megabytes, and
            // each read is a call into the host.
            let at = self.buf.len();
            self.buf.resize(at + READ_CHUNK, 0);
            let n = match self.stream.read(&mut self.buf[at..]) {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(at);
                    self.broken = true;
                    return Err(lost(e));
                }
            };
            self.buf.truncate(at + n);
            if n == 0 {
                self.broken = true;
                return Err(WireError::Lost("the server closed the connection".into()));
            }
        }
    }

    /// Run SQL text (several statements allowed) and return every row of
    /// the last one that returned rows.
    pub fn simple(&mut self, sql: &str) -> Result<Vec<Row>, WireError> {
        frontend::query(sql, &mut self.out).map_err(lost)?;
        self.send()?;
        self.collect()
    }

    /// Run statements, each with its text parameters, as one implicit
    /// transaction: one `Sync` ends the batch, so either every statement
    /// took effect or none did. Returns the rows of each.
    pub fn batch(
        &mut self,
        statements: &[(&str, Vec<Option<&str>>)],
    ) -> Result<Vec<Vec<Row>>, WireError> {
        self.send_batch(statements)?;
        let mut results = Vec::with_capacity(statements.len());
        let mut rows = Vec::new();
        self.receive(&mut |row| {
            match row {
                Some(row) => rows.push(row.iter().map(|v| v.map(str::to_string)).collect()),
                None => results.push(std::mem::take(&mut rows)),
            }
            Ok(())
        })?;
        Ok(results)
    }

    /// One statement; each row given to `each` as borrowed text, so a
    /// listing of 100,000 rows makes no copy it does not keep.
    pub fn query_each(
        &mut self,
        sql: &str,
        params: Vec<Option<&str>>,
        each: &mut OnRow<'_>,
    ) -> Result<(), WireError> {
        self.send_batch(&[(sql, params)])?;
        self.receive(&mut |row| match row {
            Some(row) => each(row),
            None => Ok(()),
        })
    }

    fn send_batch(&mut self, statements: &[(&str, Vec<Option<&str>>)]) -> Result<(), WireError> {
        let encoded = self.encode_batch(statements);
        if encoded.is_err() {
            // Half a batch must never go out with the next one.
            self.out.clear();
        }
        encoded?;
        frontend::sync(&mut self.out);
        self.send()
    }

    fn encode_batch(&mut self, statements: &[(&str, Vec<Option<&str>>)]) -> Result<(), WireError> {
        for (sql, params) in statements {
            frontend::parse("", sql, std::iter::empty(), &mut self.out).map_err(lost)?;
            frontend::bind(
                "",
                "",
                std::iter::empty(),
                params.iter(),
                |p, buf| {
                    Ok(match p {
                        Some(text) => {
                            buf.extend_from_slice(text.as_bytes());
                            IsNull::No
                        }
                        None => IsNull::Yes,
                    })
                },
                std::iter::empty(),
                &mut self.out,
            )
            .map_err(|e| match e {
                frontend::BindError::Conversion(e) => WireError::Fatal(format!("a parameter: {e}")),
                frontend::BindError::Serialization(e) => {
                    WireError::Fatal(format!("a parameter: {e}"))
                }
            })?;
            frontend::execute("", 0, &mut self.out).map_err(lost)?;
        }
        Ok(())
    }

    /// Read a batch's answer up to the server's ready: each row to `on`
    /// (`Some`), and each statement's end (`None`). The first error the
    /// server sent, once it is ready again.
    fn receive(&mut self, on: &mut OnAnswer<'_>) -> Result<(), WireError> {
        let result = self.receive_until_ready(on);
        // Stopped before the server was ready: what it still sends would
        // answer the next query. Never reuse such a connection.
        if matches!(result, Err(WireError::Lost(_) | WireError::Fatal(_))) {
            self.broken = true;
        }
        result
    }

    fn receive_until_ready(&mut self, on: &mut OnAnswer<'_>) -> Result<(), WireError> {
        let mut failure = None;
        loop {
            match self.next()? {
                Message::DataRow(body) => {
                    let buf = body.buffer();
                    let mut ranges = body.ranges();
                    let mut values: Vec<Option<&str>> = Vec::with_capacity(8);
                    while let Some(range) = ranges.next().map_err(lost)? {
                        values.push(match range {
                            Some(r) => Some(std::str::from_utf8(&buf[r]).map_err(|_| {
                                WireError::Fatal("a value that is not UTF-8".into())
                            })?),
                            None => None,
                        });
                    }
                    if failure.is_none() {
                        on(Some(&values))?;
                    }
                }
                Message::CommandComplete(_) | Message::EmptyQueryResponse => on(None)?,
                Message::ErrorResponse(body) => failure = Some(server_error(&body)),
                Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One statement with parameters; its rows.
    pub fn query(&mut self, sql: &str, params: Vec<Option<&str>>) -> Result<Vec<Row>, WireError> {
        let mut results = self.batch(&[(sql, params)])?;
        Ok(results.pop().unwrap_or_default())
    }

    fn collect(&mut self) -> Result<Vec<Row>, WireError> {
        let result = self.collect_until_ready();
        if matches!(result, Err(WireError::Lost(_) | WireError::Fatal(_))) {
            self.broken = true;
        }
        result
    }

    fn collect_until_ready(&mut self) -> Result<Vec<Row>, WireError> {
        let mut rows = Vec::new();
        let mut last = Vec::new();
        let mut failure = None;
        loop {
            match self.next()? {
                Message::DataRow(body) => rows.push(row_of(&body)?),
                Message::CommandComplete(_) if !rows.is_empty() => {
                    last = std::mem::take(&mut rows);
                }
                Message::ErrorResponse(body) => failure = Some(server_error(&body)),
                Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(last),
        }
    }

    /// Say goodbye (best effort): the server ends the session at once
    /// rather than after noticing the closed socket.
    pub fn close(mut self) {
        frontend::terminate(&mut self.out);
        let _ = self.send();
    }
}

fn row_of(body: &postgres_protocol::message::backend::DataRowBody) -> Result<Row, WireError> {
    let buf = body.buffer();
    let mut ranges = body.ranges();
    let mut row = Vec::new();
    while let Some(range) = ranges.next().map_err(lost)? {
        row.push(match range {
            Some(r) => Some(
                std::str::from_utf8(&buf[r])
                    .map_err(|_| WireError::Fatal("a value that is not UTF-8".into()))?
                    .to_string(),
            ),
            None => None,
        });
    }
    Ok(row)
}

fn server_error(body: &postgres_protocol::message::backend::ErrorResponseBody) -> WireError {
    let mut code = String::new();
    let mut message = String::new();
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        let value = String::from_utf8_lossy(f.value_bytes()).into_owned();
        match f.type_() {
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
    }
    WireError::Server { code, message }
}

/// An error during start-up is not mended by retrying the same statement.
/// A server starting up or shutting down (SQLSTATE classes 57 and 08) is
/// worth another try later.
fn fatal_of(e: WireError) -> WireError {
    match e {
        WireError::Server { code, message } if code.starts_with("57") || code.starts_with("08") => {
            WireError::Lost(format!(
                "the server is not taking connections: {message} (SQLSTATE {code})"
            ))
        }
        WireError::Server { code, message } => WireError::Fatal(format!(
            "the server refused the connection: {message} (SQLSTATE {code})"
        )),
        other => other,
    }
}
