//! `sessionStores.postgres.url`: a libpq connection URI,
//! `postgres://user@host:port/database`. The password never goes in it
//! (settings files are read by people and tools; it comes through the
//! secret PGPASSWORD), and only what this store can honour is accepted.

/// Where to connect, and as whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub database: String,
    pub tls: Tls,
}

/// `sslmode`, as this store honours it. A certificate is always checked
/// (against the web's roots, or only `sslrootcert`'s): stricter than
/// libpq's `prefer` and `require`, which take any certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// `disable`: never.
    Off,
    /// `allow`, `prefer` (the default): when the server speaks it.
    Prefer,
    /// `require`, `verify-ca`, `verify-full`: or not at all.
    Require,
}

/// Why a URL is refused, said so the person can mend the setting.
pub fn parse(url: &str) -> Result<Target, String> {
    let rest = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
        .ok_or("it does not start with postgres://")?;
    let (authority, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let user = match userinfo {
        Some(u) if u.contains(':') => {
            return Err("it carries a password; take it out of the URL and give it through the secret PGPASSWORD (settings `secrets.postgres.PGPASSWORD`)".into());
        }
        Some(u) if !u.is_empty() => decode(u)?,
        _ => "stud".to_string(),
    };
    if hostport.contains(',') {
        return Err("several hosts are not supported; name one".into());
    }
    let (host, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
        let (h, after) = bracketed
            .split_once(']')
            .ok_or("an unclosed [ in the host")?;
        let port = after.strip_prefix(':').unwrap_or("");
        (h.to_string(), port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (hostport.to_string(), ""),
        }
    };
    if host.is_empty() {
        return Err("it names no host (a Unix socket is not reachable from the store)".into());
    }
    let port = if port.is_empty() {
        5432
    } else {
        port.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("the port `{port}` is not a number from 1 to 65535"))?
    };
    let database = if path.is_empty() {
        user.clone()
    } else {
        decode(path)?
    };
    let mut tls = Tls::Prefer;
    let mut rootcert = false;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match (key, value) {
            ("sslmode", "disable") => tls = Tls::Off,
            ("sslmode", "allow" | "prefer") => tls = Tls::Prefer,
            ("sslmode", "require" | "verify-ca" | "verify-full") => tls = Tls::Require,
            ("sslmode", other) => {
                return Err(format!(
                    "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                ));
            }
            // Read by the host, which checks the certificate; naming an
            // authority means TLS is wanted (as libpq's `verify-ca`).
            ("sslrootcert", path) => {
                if !(path.starts_with('/') || path.starts_with("~/")) {
                    return Err(format!(
                        "sslrootcert `{path}` is not an absolute path (or `~/...`)"
                    ));
                }
                rootcert = true;
            }
            ("application_name" | "connect_timeout", _) => {}
            ("password", _) => {
                return Err(
                    "it carries a password; give it through the secret PGPASSWORD instead".into(),
                );
            }
            (other, _) => return Err(format!("the parameter `{other}` is not supported")),
        }
    }
    if rootcert && tls == Tls::Prefer {
        tls = Tls::Require;
    }
    if rootcert && tls == Tls::Off {
        return Err("sslrootcert names an authority but sslmode=disable turns TLS off".into());
    }
    Ok(Target {
        host,
        port,
        user,
        database,
        tls,
    })
}

/// Percent-decoding of one URL part.
fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or("a % without two hex digits")?;
            out.push(
                u8::from_str_radix(hex, 16).map_err(|_| format!("`%{hex}` is not an escape"))?,
            );
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "an escape that is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_host_port_user_and_database() {
        let t = parse("postgres://stud@db.internal:6543/team").unwrap();
        assert_eq!(
            t,
            Target {
                host: "db.internal".into(),
                port: 6543,
                user: "stud".into(),
                database: "team".into(),
                tls: Tls::Prefer,
            }
        );
        let t = parse("postgresql://127.0.0.1").unwrap();
        assert_eq!(
            (t.port, t.user.as_str(), t.database.as_str()),
            (5432, "stud", "stud")
        );
    }

    #[test]
    fn a_password_in_the_url_is_refused() {
        assert!(
            parse("postgres://stud:hunter2@db/x")
                .unwrap_err()
                .contains("PGPASSWORD")
        );
        assert!(
            parse("postgres://stud@db/x?password=a")
                .unwrap_err()
                .contains("PGPASSWORD")
        );
        assert!(parse("mysql://db").is_err());
        assert!(parse("postgres://db:99999/x").is_err());
        assert!(
            parse("postgres://db/x?sslmode=sometimes")
                .unwrap_err()
                .contains("sslmode")
        );
    }

    #[test]
    fn sslmode_and_sslrootcert_say_when_tls_is_required() {
        let tls = |url: &str| parse(url).map(|t| t.tls);
        assert_eq!(tls("postgres://db/x?sslmode=require"), Ok(Tls::Require));
        assert_eq!(tls("postgres://db/x?sslmode=disable"), Ok(Tls::Off));
        // Naming an authority means TLS is wanted.
        assert_eq!(
            tls("postgres://db/x?sslrootcert=/etc/ca.pem"),
            Ok(Tls::Require)
        );
        assert!(tls("postgres://db/x?sslrootcert=ca.pem").is_err());
        assert!(tls("postgres://db/x?sslmode=disable&sslrootcert=/ca.pem").is_err());
    }
}
