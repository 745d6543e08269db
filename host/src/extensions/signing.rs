//! Who published an extension: minisign signatures (the format and tool
//! publishers already use) over the archive, checked at install against
//! the publishers the user trusts in their global settings.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use minisign::{KeyPair, PublicKey, PublicKeyBox, SecretKeyBox, SignatureBox};
use serde::{Deserialize, Serialize};

/// Where `stud ext sign` reads a secret key's password from (none: the key
/// is not encrypted). stud never prompts: signing runs in scripts.
pub const PASSWORD_VAR: &str = "STUD_SIGNING_PASSWORD";

/// A publisher the user trusts: a name to show and a minisign public key
/// (the base64 line of a `.pub` file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedPublisher {
    pub name: String,
    pub key: String,
}

/// Which extensions install.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignaturePolicy {
    /// Unsigned ones and ones signed by a key not trusted install (the
    /// consent text says so); a signature that does not verify never does.
    #[default]
    Any,
    /// Only archives signed by a trusted publisher.
    Trusted,
}

/// What a signature said about an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    Unsigned,
    /// Signed by a key no trusted publisher has.
    UnknownKey {
        key_id: String,
    },
    By {
        publisher: String,
        key_id: String,
    },
}

impl Signed {
    /// For the consent text and `ext info`.
    pub fn describe(&self) -> String {
        match self {
            Signed::Unsigned => "unsigned".into(),
            Signed::UnknownKey { key_id } => {
                format!("signed by key {key_id}, which no trusted publisher has")
            }
            Signed::By { publisher, key_id } => format!("signed by {publisher} (key {key_id})"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    #[error(
        "{}: the signature of {publisher} (key {key_id}) does not match this file: it was changed after it was signed, or signed as another file; nothing was installed",
        .file.display()
    )]
    Bad {
        publisher: String,
        key_id: String,
        file: PathBuf,
    },
    #[error("{}: not a minisign signature ({reason})", .file.display())]
    Unreadable { file: PathBuf, reason: String },
    #[error("{what}: {reason}")]
    Key { what: String, reason: String },
    #[error(
        "{file} is {signed}; `signaturePolicy` is \"trusted\", so only extensions signed by a publisher in `trustedPublishers` install"
    )]
    Refused { file: String, signed: String },
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

fn key_err(what: impl Into<String>) -> impl FnOnce(minisign::PError) -> SigningError {
    let what = what.into();
    move |e| SigningError::Key {
        what,
        reason: e.to_string(),
    }
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SigningError + use<> {
    let path = path.to_path_buf();
    move |source| SigningError::Io { what, path, source }
}

/// minisign's key id: the key number as a 16-digit hex (as `minisign -V`
/// prints it).
fn key_id(keynum: &[u8]) -> String {
    keynum.iter().rev().map(|b| format!("{b:02X}")).collect()
}

/// The signature file next to `file`.
pub fn signature_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".minisig");
    PathBuf::from(name)
}

/// Check `bytes` (read from `file`) against `signature` (the text of its
/// `.minisig`, if it has one) and `publishers`, under `policy`.
pub fn check(
    bytes: &[u8],
    file: &Path,
    signature: Option<(&Path, &str)>,
    publishers: &[TrustedPublisher],
    policy: SignaturePolicy,
) -> Result<Signed, SigningError> {
    let signed = match signature {
        None => Signed::Unsigned,
        Some((sig_file, text)) => {
            let sig = SignatureBox::from_string(text).map_err(|e| SigningError::Unreadable {
                file: sig_file.to_path_buf(),
                reason: e.to_string(),
            })?;
            let id = key_id(sig.keynum());
            let mut found = None;
            for p in publishers {
                let pk = PublicKey::from_base64(p.key.trim())
                    .map_err(key_err(format!("trustedPublishers: `{}`: key", p.name)))?;
                if pk.keynum() == sig.keynum() {
                    found = Some((p, pk));
                    break;
                }
            }
            match found {
                None => Signed::UnknownKey { key_id: id },
                Some((p, pk)) => {
                    minisign::verify(&pk, &sig, Cursor::new(bytes), true, false, false).map_err(
                        |_| SigningError::Bad {
                            publisher: p.name.clone(),
                            key_id: id.clone(),
                            file: file.to_path_buf(),
                        },
                    )?;
                    Signed::By {
                        publisher: p.name.clone(),
                        key_id: id,
                    }
                }
            }
        }
    };
    if policy == SignaturePolicy::Trusted && !matches!(signed, Signed::By { .. }) {
        return Err(SigningError::Refused {
            file: file.display().to_string(),
            signed: signed.describe(),
        });
    }
    Ok(signed)
}

/// A new key pair in `dir` (`stud.pub`, `stud.key` readable by the user
/// only); encrypted with `password` when one is given. Returns the public
/// key's base64 line (what `trustedPublishers` takes) and its id.
pub fn keygen(dir: &Path, password: Option<String>) -> Result<(String, String), SigningError> {
    // An empty password leaves the key unencrypted (with its checksum);
    // `None` would make the crate prompt.
    let KeyPair { pk, sk } =
        KeyPair::generate_encrypted_keypair(Some(password.unwrap_or_default()))
            .map_err(key_err("generate a key pair"))?;
    std::fs::create_dir_all(dir).map_err(io("create", dir))?;
    let (pub_path, key_path) = (dir.join("stud.pub"), dir.join("stud.key"));
    if key_path.exists() {
        return Err(SigningError::Key {
            what: key_path.display().to_string(),
            reason: "exists already; move it away first (a new key cannot sign for the old one)"
                .into(),
        });
    }
    let pk_box = pk.to_box().map_err(key_err("encode the public key"))?;
    let sk_box = sk
        .to_box(Some("stud extension signing key"))
        .map_err(key_err("encode the secret key"))?;
    std::fs::write(&pub_path, pk_box.to_string()).map_err(io("write", &pub_path))?;
    write_private(&key_path, sk_box.to_string().as_bytes()).map_err(io("write", &key_path))?;
    Ok((pk.to_base64(), key_id(pk.keynum())))
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

/// Sign `file` with the secret key at `key` (its public key beside it as
/// `.pub` is not needed); writes `<file>.minisig` and returns its path.
pub fn sign(file: &Path, key: &Path, password: Option<String>) -> Result<PathBuf, SigningError> {
    let text = std::fs::read_to_string(key).map_err(io("read", key))?;
    let sk = SecretKeyBox::from_string(&text)
        .and_then(|b| b.into_secret_key(Some(password.unwrap_or_default())))
        .map_err(key_err(format!(
            "{}: cannot use this secret key (an encrypted key needs its password in {PASSWORD_VAR})",
            key.display()
        )))?;
    let bytes = std::fs::read(file).map_err(io("read", file))?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sig = minisign::sign(
        None,
        &sk,
        Cursor::new(&bytes),
        Some(&format!("file:{name}")),
        Some("signature from stud ext sign"),
    )
    .map_err(key_err("sign"))?;
    let out = signature_path(file);
    std::fs::write(&out, sig.to_string()).map_err(io("write", &out))?;
    Ok(out)
}

/// The public key line of a `.pub` file's text (or the line itself).
pub fn public_key_line(text: &str) -> Option<String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))?;
    PublicKeyBox::from_string(text)
        .ok()
        .and_then(|b| b.into_public_key().ok())
        .map(|pk| pk.to_base64())
        .or_else(|| PublicKey::from_base64(line).ok().map(|pk| pk.to_base64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_archive_verifies_and_a_changed_one_names_the_publisher() {
        let dir = tempfile::tempdir().unwrap();
        let (key, id) = keygen(dir.path(), None).unwrap();
        let file = dir.path().join("x.tar.gz");
        std::fs::write(&file, b"archive").unwrap();
        let sig_path = sign(&file, &dir.path().join("stud.key"), None).unwrap();
        let sig = std::fs::read_to_string(&sig_path).unwrap();
        let trusted = [TrustedPublisher {
            name: "Ada".into(),
            key: key.clone(),
        }];
        let ok = check(
            b"archive",
            &file,
            Some((&sig_path, &sig)),
            &trusted,
            SignaturePolicy::Trusted,
        )
        .unwrap();
        assert_eq!(
            ok,
            Signed::By {
                publisher: "Ada".into(),
                key_id: id
            }
        );
        let bad = check(
            b"archivE",
            &file,
            Some((&sig_path, &sig)),
            &trusted,
            SignaturePolicy::Any,
        )
        .unwrap_err();
        assert!(
            bad.to_string().contains("Ada") && bad.to_string().contains("x.tar.gz"),
            "{bad}"
        );
        // Unknown and unsigned: allowed by default, refused under `trusted`.
        let unknown = check(
            b"archive",
            &file,
            Some((&sig_path, &sig)),
            &[],
            SignaturePolicy::Any,
        )
        .unwrap();
        assert!(matches!(unknown, Signed::UnknownKey { .. }));
        assert!(check(b"archive", &file, None, &trusted, SignaturePolicy::Trusted).is_err());
        assert_eq!(
            public_key_line(&std::fs::read_to_string(dir.path().join("stud.pub")).unwrap()),
            Some(key)
        );
    }
}
