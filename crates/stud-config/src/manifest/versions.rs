//! Semantic versions and ranges in a manifest, and the contract check:
//! an extension states which `stud:extension` contract versions it was
//! built for, and a host that offers none of them must refuse it before
//! loading anything.

use semver::{Comparator, Op, Version, VersionReq};

use super::problems::quote;

/// Parses a version; the error completes "`field`: ...". `key` names the
/// key in the suggested line (`version = "1.0.0"`).
pub fn parse_version(text: &str, key: &str) -> Result<Version, String> {
    Version::parse(text).map_err(|_| {
        format!(
            "{} is not a semantic version; write e.g. {key} = \"{}\"",
            quote(text),
            suggest_version(text)
        )
    })
}

/// Parses a version range (Cargo syntax: `^0.1`, `>=0.1.0, <0.3.0`).
pub fn parse_requirement(text: &str, key: &str, example: &str) -> Result<VersionReq, String> {
    VersionReq::parse(text).map_err(|e| {
        format!(
            "{} is not a version range ({e}); write e.g. {key} = \"{example}\"",
            quote(text)
        )
    })
}

/// `Some(problem)` when the host's contract version is outside `req`.
pub fn contract_mismatch(req: &VersionReq, host: &Version) -> Option<String> {
    if req.matches(host) {
        return None;
    }
    let series = if host.major > 0 {
        format!("{}.x", host.major)
    } else {
        format!("0.{}.x", host.minor)
    };
    let other = if wants_newer(req, host) {
        "upgrade stud".to_string()
    } else {
        format!("use a stud release that supports {req}")
    };
    Some(format!(
        "this extension needs contract {req} but this stud supports {host}; install a version of the extension built for {series} or {other}"
    ))
}

/// Whether `req` asks for contracts newer than `host` (so upgrading stud
/// is the fix) rather than older ones.
fn wants_newer(req: &VersionReq, host: &Version) -> bool {
    req.comparators.iter().any(|c: &Comparator| {
        let base = Version::new(c.major, c.minor.unwrap_or(0), c.patch.unwrap_or(0));
        match c.op {
            Op::Greater => base >= *host,
            Op::Less | Op::LessEq => false,
            _ => base > *host,
        }
    })
}

/// `1.0` -> `1.0.0`, `v2` -> `2.0.0`; anything else -> `0.1.0`.
fn suggest_version(text: &str) -> String {
    let bare = text.trim().trim_start_matches(['v', 'V']);
    let parts: Vec<&str> = bare.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() <= 3 && parts.iter().all(numeric) {
        let mut candidate = parts.join(".");
        for _ in parts.len()..3 {
            candidate.push_str(".0");
        }
        if Version::parse(&candidate).is_ok() {
            return candidate;
        }
    }
    "0.1.0".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(suggest_version("1.0"), "1.0.0");
        assert_eq!(suggest_version("v2"), "2.0.0");
        assert_eq!(suggest_version("1.2.3.4"), "0.1.0");
        assert_eq!(suggest_version("latest"), "0.1.0");
    }

    #[test]
    fn contract_direction() {
        let host = Version::new(0, 1, 0);
        let check = |r: &str| {
            VersionReq::parse(r)
                .ok()
                .and_then(|r| contract_mismatch(&r, &host))
        };
        assert_eq!(check("^0.1"), None);
        assert_eq!(check(">=0.1.0, <0.3.0"), None);
        assert!(check("^0.2").is_some_and(|m| m.ends_with("built for 0.1.x or upgrade stud")));
        assert!(check(">0.1.0").is_some_and(|m| m.ends_with("upgrade stud")));
        assert!(
            check("^0.0.3").is_some_and(|m| m.ends_with("use a stud release that supports ^0.0.3"))
        );
    }
}
