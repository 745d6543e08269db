//! Real, throwaway PostgreSQL servers for the session store's tests: each
//! its own `initdb` under `<target>/tmp/pg/<pid>-<n>`, listening on
//! 127.0.0.1 only, on a free port, with password (SCRAM) authentication
//! over TCP as the tests' stores use it.
//!
//! PostgreSQL refuses to run as root, so under root (CI containers) its
//! tools run as `nobody` through `runuser`, in folders `nobody` can reach.
//!
//! [`Pg::start_with_tls`] also gives the server a certificate from a test
//! certificate authority the `openssl` command line makes in its folder.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// Unique server folders and database names within this process (the pid
/// sets processes apart).
static NEXT: AtomicU32 = AtomicU32::new(0);

/// The uid and gid of `nobody` (Debian's), who runs the servers under root.
const NOBODY: u32 = 65534;

/// A PostgreSQL server of its own: stopped and its folder removed when
/// dropped.
pub struct Pg {
    /// `<target>/tmp/pg/<pid>-<n>`: the data, the log and the socket.
    dir: PathBuf,
    data: PathBuf,
    socket: PathBuf,
    log: PathBuf,
    bin: PathBuf,
    port: u16,
    /// Server options beyond the ones every server has (TLS's), for every
    /// start, [`Pg::start_again`] too.
    options: String,
}

/// A TLS certificate authority and a server certificate it signed for
/// `127.0.0.1` and `localhost` (subjectAltName IP:127.0.0.1,
/// DNS:localhost), made with the `openssl` command line in the server's
/// folder.
pub struct Tls {
    /// The CA certificate (PEM), readable by anyone: the one root a client
    /// needs to verify the server as `127.0.0.1` or `localhost`.
    pub ca_pem: PathBuf,
}

impl Pg {
    /// The superuser's password (host connections need it: SCRAM).
    pub const PASSWORD: &'static str = "stud-test-secret";

    /// A new server of its own (initdb + `pg_ctl start -w`), listening on
    /// 127.0.0.1 on a free port, its unix socket in its own folder: for
    /// tests that stop, kill or break their server.
    pub fn start() -> Pg {
        let mut pg = Pg::init();
        pg.launch();
        pg
    }

    /// A server of its own, as [`Pg::start`], that also speaks TLS
    /// (`ssl=on`, its certificate and key from a CA made for it, see
    /// [`Tls`]). Host connections may use TLS or not: pg_hba's `host`
    /// lines allow both, with SCRAM.
    pub fn start_with_tls() -> (Pg, Tls) {
        let mut pg = Pg::init();
        let (tls, cert, key) = make_tls(&pg.dir.join("tls"));
        pg.options = format!(
            " -c ssl=on -c ssl_cert_file='{}' -c ssl_key_file='{}'",
            cert.display(),
            key.display()
        );
        pg.launch();
        (pg, tls)
    }

    /// A server's folder and cluster, not started yet.
    fn init() -> Pg {
        let bin = bin_dir().clone();
        remove_stale();
        let base = base_dir();
        let dir = base.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        make_dir(&dir, 0o755);
        // A socket path has at most 107 bytes; a deep target dir gets the
        // socket a folder under the system temp dir instead.
        let mut socket = dir.join("s");
        if socket.as_os_str().len() > 80 {
            socket = std::env::temp_dir().join(format!(
                "stud-pg-{}",
                dir.file_name().expect("named").to_string_lossy()
            ));
        }
        // Only the server's user (and root) may connect through it: the
        // socket trusts whoever can.
        make_dir(&socket, 0o700);
        let pg = Pg {
            data: dir.join("data"),
            log: dir.join("server.log"),
            dir,
            socket,
            bin,
            port: 0,
            options: String::new(),
        };
        pg.initdb();
        pg
    }

    /// Start the server on a free port.
    fn launch(&mut self) {
        for attempt in 1..=3 {
            // Another process can take the port between our probe and the
            // server's bind: a failed start tries another.
            self.port = free_port();
            let out = self.pg_ctl_start();
            if out.status.success() {
                return;
            }
            self.pg_ctl(&["stop", "-m", "immediate"]);
            if attempt == 3 {
                panic!(
                    "PostgreSQL did not start (3 tries, last on port {}): {}\n{}\n\
                     log {}:\n{}",
                    self.port,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                    self.log.display(),
                    self.log_tail()
                );
            }
        }
        unreachable!("the loop returns or panics")
    }

    /// The one server this test binary shares, for tests that only need a
    /// database (one [`Pg::create_db`] each): started at first use, stopped
    /// at process exit (statics are never dropped, so an `atexit` handler
    /// does it).
    pub fn shared() -> &'static Pg {
        static SHARED: OnceLock<Pg> = OnceLock::new();
        extern "C" fn stop_shared() {
            if let Some(pg) = SHARED.get() {
                pg.pg_ctl(&["stop", "-m", "immediate"]);
                let _ = std::fs::remove_dir_all(&pg.dir);
                let _ = std::fs::remove_dir_all(&pg.socket);
            }
        }
        SHARED.get_or_init(|| {
            let pg = Pg::start();
            // SAFETY: registers a plain function with no arguments.
            let rc = unsafe { libc::atexit(stop_shared) };
            assert_eq!(rc, 0, "atexit refused the shared PostgreSQL's stop");
            pg
        })
    }

    /// The TCP port on 127.0.0.1 (the same after [`Pg::start_again`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A fresh database for one test, returned as its name (unique across
    /// the tests running in parallel: the prefix, the pid and a counter).
    pub fn create_db(&self, prefix: &str) -> String {
        let prefix: String = prefix
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        let name = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        name
    }

    /// `postgres://stud@127.0.0.1:<port>/<db>`, without the password (the
    /// tests pass it as a secret, as a person would).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://stud@127.0.0.1:{}/{db}", self.port)
    }

    /// Stop the server (`pg_ctl stop -m fast -w`): with
    /// [`Pg::start_again`], a database restart.
    pub fn stop(&self) {
        let out = self.pg_ctl(&["stop", "-m", "fast", "-w"]);
        assert!(
            out.status.success(),
            "pg_ctl stop failed: {}\nlog:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log_tail()
        );
    }

    /// Start the server again on the same port and data (after
    /// [`Pg::stop`], or after its processes were killed).
    pub fn start_again(&self) {
        let out = self.pg_ctl_start();
        assert!(
            out.status.success(),
            "PostgreSQL did not start again on port {}: {}\nlog {}:\n{}",
            self.port,
            String::from_utf8_lossy(&out.stderr),
            self.log.display(),
            self.log_tail()
        );
    }

    /// Run SQL through psql as `stud` over TCP (with the password), and
    /// return its output: tuples only, unaligned (`-At`), without the last
    /// newline. Panics with psql's stderr when it fails.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = self.try_psql(db, sql);
        assert!(
            out.status.success(),
            "psql on {db} failed: {sql}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("psql printed UTF-8");
        text.trim_end_matches('\n').to_string()
    }

    /// Like [`Pg::psql`], the result unchecked: for a test that expects
    /// the server to be down or the SQL to fail.
    pub fn try_psql(&self, db: &str, sql: &str) -> Output {
        self.psql_command(db)
            .args(["-c", sql])
            .output()
            .unwrap_or_else(|e| panic!("run psql: {e}"))
    }

    /// psql as `stud` on `db`, reading SQL from its stdin and printing
    /// results (`-At`) on its stdout, both piped: a database session a
    /// test keeps open (a transaction holding a lock, say) while `stud`
    /// runs. Closing its stdin ends it.
    pub fn psql_session(&self, db: &str) -> std::process::Child {
        self.psql_command(db)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start psql: {e}"))
    }

    fn psql_command(&self, db: &str) -> Command {
        let psql = [self.bin.join("psql"), PathBuf::from("/usr/bin/psql")]
            .into_iter()
            .find(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("psql"));
        let mut c = Command::new(&psql);
        c.args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "stud", "-d", db])
            .env("PGPASSWORD", Self::PASSWORD)
            .env("PGCONNECT_TIMEOUT", "10")
            .env_remove("PGOPTIONS")
            .env_remove("PGSERVICE")
            .env_remove("PGSSLMODE");
        c
    }

    /// The cluster: `stud` the superuser, SCRAM over TCP, trust on the
    /// socket (its folder is the server user's only), no fsync while it is made (the
    /// server itself keeps fsync and synchronous commit on: tests restart
    /// and kill it and expect committed data back).
    fn initdb(&self) {
        let pwfile = self.dir.join("pwfile");
        std::fs::write(&pwfile, Self::PASSWORD).expect("write the password file");
        if as_nobody() {
            std::os::unix::fs::chown(&pwfile, Some(NOBODY), Some(NOBODY))
                .expect("chown the password file to nobody");
        }
        let out = self
            .tool("initdb")
            .arg("-D")
            .arg(&self.data)
            .args(["-U", "stud", "-E", "UTF8", "--locale=C", "--no-sync"])
            .args(["--auth-host=scram-sha-256", "--auth-local=trust"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .output()
            .expect("run initdb");
        let _ = std::fs::remove_file(&pwfile);
        assert!(
            out.status.success(),
            "initdb failed in {}:\n{}\n{}",
            self.data.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn pg_ctl_start(&self) -> Output {
        for path in [&self.dir, &self.socket] {
            assert!(
                !path.to_string_lossy().contains('\''),
                "a quote in {} (pg_ctl passes the options through a shell)",
                path.display()
            );
        }
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k '{}' -c max_connections=200{}",
            self.port,
            self.socket.display(),
            self.options
        );
        self.tool("pg_ctl")
            .args(["start", "-w", "-t", "60", "-D"])
            .arg(&self.data)
            .arg("-l")
            .arg(&self.log)
            .args(["-o", &options])
            .output()
            .expect("run pg_ctl start")
    }

    /// `pg_ctl <args> -D <data>`, errors left to the caller.
    fn pg_ctl(&self, args: &[&str]) -> Output {
        pg_ctl_at(&self.bin, &self.data, args)
    }

    /// A PostgreSQL tool, as `nobody` under root, in the server's folder
    /// (the tools look up the current folder, which `nobody` may not read).
    fn tool(&self, name: &str) -> Command {
        tool_at(&self.bin, &self.dir, name)
    }

    /// The last 40 lines of the server's log.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log)
            .unwrap_or_else(|e| format!("(no log {}: {e})", self.log.display()));
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        self.pg_ctl(&["stop", "-m", "immediate"]);
        let _ = std::fs::remove_dir_all(&self.socket);
        if std::thread::panicking() {
            // Keep the log of a failed test.
            let _ = std::fs::remove_dir_all(&self.data);
            eprintln!("PostgreSQL's log: {}", self.log.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The `openssl` configuration of [`make_tls`]: its certificates' v3
/// extensions, as rustls and webpki want them.
const OPENSSL_CNF: &str = "\
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
";

/// A test CA and a server certificate it signed, in `dir` (made here): EC
/// P-256 keys, valid for two days. Returns the [`Tls`], the server's
/// certificate and its key, which the server's user owns with mode 0600
/// (PostgreSQL refuses a key others may read).
fn make_tls(dir: &Path) -> (Tls, PathBuf, PathBuf) {
    make_dir(dir, 0o755);
    std::fs::write(dir.join("openssl.cnf"), OPENSSL_CNF).expect("write openssl.cnf");
    // `words` split at spaces, then `args` as they are.
    let openssl = |words: &str, args: &[&str]| {
        let out = Command::new("openssl")
            .args(words.split(' '))
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| {
                panic!("run openssl (the TLS tests need the openssl command line): {e}")
            });
        assert!(
            out.status.success(),
            "openssl {words} {} failed in {}:\n{}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let new_key = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -config openssl.cnf";
    openssl(
        &format!("req -x509 {new_key} -keyout ca.key -out ca.pem -days 2 -extensions ca"),
        &["-subj", "/CN=stud test CA"],
    );
    openssl(
        &format!("req -new {new_key} -keyout server.key -out server.csr -subj /CN=127.0.0.1"),
        &[],
    );
    // -CAcreateserial: a random serial (ca.srl keeps it).
    openssl(
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
         -out server.pem -extfile openssl.cnf -extensions server",
        &[],
    );
    let mode = |name: &str, mode: u32| {
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod {name}: {e}"));
    };
    mode("ca.key", 0o600);
    mode("ca.pem", 0o644);
    mode("server.pem", 0o644);
    mode("server.key", 0o600);
    if as_nobody() {
        std::os::unix::fs::chown(dir.join("server.key"), Some(NOBODY), Some(NOBODY))
            .expect("chown the server's key to nobody");
    }
    let tls = Tls {
        ca_pem: dir.join("ca.pem"),
    };
    (tls, dir.join("server.pem"), dir.join("server.key"))
}

fn pg_ctl_at(bin: &Path, data: &Path, args: &[&str]) -> Output {
    let dir = data.parent().unwrap_or(data);
    tool_at(bin, dir, "pg_ctl")
        .args(args)
        .arg("-D")
        .arg(data)
        .output()
        .expect("run pg_ctl")
}

fn tool_at(bin: &Path, dir: &Path, name: &str) -> Command {
    let path = bin.join(name);
    let mut cmd = if as_nobody() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "nobody", "--"]).arg(path);
        cmd
    } else {
        Command::new(path)
    };
    cmd.current_dir(dir).env_remove("PGDATA").env("LC_ALL", "C");
    cmd
}

/// Under root the servers run as `nobody`.
fn as_nobody() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A folder the server's user owns (`nobody` under root).
fn make_dir(dir: &Path, mode: u32) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", dir.display()));
    if as_nobody() {
        std::os::unix::fs::chown(dir, Some(NOBODY), Some(NOBODY))
            .unwrap_or_else(|e| panic!("chown {} to nobody: {e}", dir.display()));
    }
}

/// `<target>/tmp/pg`, open to every user (the servers' folders in it are
/// `nobody`'s under root).
fn base_dir() -> PathBuf {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pg");
    std::fs::create_dir_all(&base).unwrap_or_else(|e| panic!("mkdir {}: {e}", base.display()));
    if as_nobody() {
        for dir in [base.parent().expect("target/tmp"), &base] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|e| panic!("chmod {}: {e}", dir.display()));
        }
    }
    base
}

/// Stop the servers and remove the folders of test processes that are
/// gone (killed, so neither `Drop` nor `atexit` ran), once per process.
fn remove_stale() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let Ok(entries) = std::fs::read_dir(base_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
                continue;
            };
            if alive(pid) {
                continue;
            }
            let data = entry.path().join("data");
            if data.join("postmaster.pid").exists() {
                pg_ctl_at(bin_dir(), &data, &["stop", "-m", "immediate"]);
            }
            let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("stud-pg-{name}")));
            let _ = std::fs::remove_dir_all(entry.path());
        }
    });
}

/// Whether process `pid` runs (a zombie does not: a killed test process
/// stays one while an init that reaps lazily has not got to it).
fn alive(pid: i32) -> bool {
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        let state = stat.rsplit(')').next().unwrap_or_default().trim_start();
        return !state.starts_with('Z');
    }
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

/// The folder with `initdb` and `pg_ctl`: `PG_BIN`, else Debian's newest
/// `/usr/lib/postgresql/<version>/bin`, else the one `initdb` on `PATH`
/// resolves to.
fn bin_dir() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    const MISSING: &str = "PostgreSQL is needed for these tests: install Debian's `postgresql` \
        package (apt-get install postgresql) or set PG_BIN to the folder with initdb and pg_ctl";
    BIN.get_or_init(|| {
        let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
        if let Some(dir) = std::env::var_os("PG_BIN") {
            let dir = PathBuf::from(dir);
            assert!(
                has_tools(&dir),
                "{MISSING} (PG_BIN={} lacks them)",
                dir.display()
            );
            return dir;
        }
        let debian = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let version = e.file_name().to_str()?.parse::<f64>().ok()?;
                Some((version, e.path().join("bin")))
            })
            .filter(|(_, bin)| has_tools(bin))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((_, bin)) = debian {
            return bin;
        }
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join("initdb"))
            .find(|initdb| initdb.is_file())
            // pg_ctl finds postgres beside its real path, not a symlink's.
            .and_then(|initdb| std::fs::canonicalize(initdb).ok())
            .and_then(|initdb| initdb.parent().map(Path::to_path_buf))
            .filter(|dir| has_tools(dir))
            .expect(MISSING)
    })
}
