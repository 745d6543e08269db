//! Who published an extension: minisign signatures (the format and tool
//! publishers already use) over the archive, checked at install against
//! the publishers the user trusts in their global settings.
//!
//! A signature states what it is for: minisign's trusted comment (signed
//! with the archive) reads `stud-extension id=<id> version=<version>
//! sha256=<archive hex>` ([`Statement`]), and install checks it against
//! the archive it holds. A signature therefore vouches for one release of
//! one extension, never for another id or version. A signature without
//! that statement (made before stud wrote it, or by `minisign` without
//! `-t`) binds nothing: it counts as unsigned.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use minisign::{KeyPair, PublicKey, PublicKeyBox, SecretKeyBox, SignatureBox};

/// Where `stud ext sign` reads a secret key's password from (none: the key
/// is not encrypted). stud never prompts: signing runs in scripts.
pub const PASSWORD_VAR: &str = "STUD_SIGNING_PASSWORD";

pub use crate::config::publishers::{SignaturePolicy, TrustedPublisher};

/// The release a signature vouches for: its trusted comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub id: String,
    pub version: String,
    /// Hex sha256 of the archive.
    pub sha256: String,
}

/// How a statement starts.
const STATEMENT_TAG: &str = "stud-extension";

impl Statement {
    /// The statement of `archive` (an extension archive's bytes).
    pub fn of(archive: &[u8], id: &str, version: &str) -> Self {
        Statement {
            id: id.to_string(),
            version: version.to_string(),
            sha256: crate::digest::Sha256Digest::of(archive).hex().to_string(),
        }
    }

    /// Read a trusted comment; `None` unless it is a whole statement.
    pub fn parse(comment: &str) -> Option<Self> {
        let mut words = comment.split_whitespace();
        if words.next()? != STATEMENT_TAG {
            return None;
        }
        let (mut id, mut version, mut sha256) = (None, None, None);
        for word in words {
            match word.split_once('=')? {
                ("id", v) => id = Some(v.to_string()),
                ("version", v) => version = Some(v.to_string()),
                ("sha256", v) => sha256 = Some(v.to_ascii_lowercase()),
                _ => return None,
            }
        }
        Some(Statement {
            id: id?,
            version: version?,
            sha256: sha256?,
        })
    }

    /// `` `id` version (sha256 ...) ``, for messages.
    fn describe(&self) -> String {
        format!(
            "`{}` {} (archive sha256 {})",
            self.id, self.version, self.sha256
        )
    }
}

impl std::fmt::Display for Statement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{STATEMENT_TAG} id={} version={} sha256={}",
            self.id, self.version, self.sha256
        )
    }
}

/// What a signature said about an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    Unsigned,
    /// Signed by a key no trusted publisher has.
    UnknownKey {
        key_id: String,
    },
    /// A trusted publisher's signature that does not say which release it
    /// is for (no [`Statement`]): it binds nothing, so it counts as
    /// unsigned.
    Unbound {
        publisher: String,
        key_id: String,
    },
    /// A trusted publisher's signature stating this very release.
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
            Signed::Unbound { publisher, key_id } => format!(
                "signed by {publisher} (key {key_id}) with a signature that does not say which extension it signs (no `{STATEMENT_TAG} id=... version=... sha256=...` trusted comment), so it counts as unsigned"
            ),
            Signed::By { publisher, key_id } => format!("signed by {publisher} (key {key_id})"),
        }
    }

    /// The key id of the trusted publisher who vouches for the release
    /// (`None` when none does): what the lockfile pins.
    pub fn signer_key(&self) -> Option<&str> {
        match self {
            Signed::By { key_id, .. } => Some(key_id),
            _ => None,
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
    #[error(
        "{}: the signature of {signer} is for {signed}, but this archive holds {holds}: a signature counts only for the release it names; nothing was installed",
        .file.display()
    )]
    OtherRelease {
        /// `Ada (key 0123...)`.
        signer: String,
        file: PathBuf,
        signed: String,
        holds: String,
    },
    #[error("{}: not a minisign signature ({reason})", .file.display())]
    Unreadable { file: PathBuf, reason: String },
    #[error(
        "{}: only an extension archive (from `stud ext pack`) is signed, since the signature names the extension and version it holds: {reason}",
        .file.display()
    )]
    NotAnArchive { file: PathBuf, reason: String },
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

/// Check `bytes` (read from `file`, an archive holding the release
/// `holds`) against `signature` (the text of its `.minisig`, if it has
/// one) and `publishers`, under `policy`.
pub fn check(
    bytes: &[u8],
    file: &Path,
    holds: &Statement,
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
                    // Verified with the archive: the trusted comment is
                    // what the publisher signed.
                    match Statement::parse(&sig.trusted_comment().unwrap_or_default()) {
                        None => Signed::Unbound {
                            publisher: p.name.clone(),
                            key_id: id,
                        },
                        Some(stated) if &stated == holds => Signed::By {
                            publisher: p.name.clone(),
                            key_id: id,
                        },
                        Some(stated) => {
                            return Err(SigningError::OtherRelease {
                                signer: format!("{} (key {id})", p.name),
                                file: file.to_path_buf(),
                                signed: stated.describe(),
                                holds: holds.describe(),
                            });
                        }
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

/// Sign `file` (an extension archive) with the secret key at `key` (its
/// public key beside it as `.pub` is not needed), stating the release it
/// holds; writes `<file>.minisig` and returns its path.
pub fn sign(file: &Path, key: &Path, password: Option<String>) -> Result<PathBuf, SigningError> {
    let text = std::fs::read_to_string(key).map_err(io("read", key))?;
    let sk = SecretKeyBox::from_string(&text)
        .and_then(|b| b.into_secret_key(Some(password.unwrap_or_default())))
        .map_err(key_err(format!(
            "{}: cannot use this secret key (an encrypted key needs its password in {PASSWORD_VAR})",
            key.display()
        )))?;
    let bytes = std::fs::read(file).map_err(io("read", file))?;
    let (id, version) =
        super::install::archive_release(&bytes).map_err(|e| SigningError::NotAnArchive {
            file: file.to_path_buf(),
            reason: e.to_string(),
        })?;
    let statement = Statement::of(&bytes, &id, &version);
    let sig = minisign::sign(
        None,
        &sk,
        Cursor::new(&bytes),
        Some(&statement.to_string()),
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

    /// A `.tar.gz` holding an extension `id` `version` (its component is
    /// not a real one: signing reads only the manifest).
    fn archive(id: &str, version: &str) -> Vec<u8> {
        let manifest = format!(
            "id = \"{id}\"\nname = \"X\"\nversion = \"{version}\"\nkind = \"tool\"\ncontract = \"^0.1\"\ncomponent = \"x.wasm\"\n"
        );
        let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (name, bytes) in [
            ("extension.toml", manifest.as_bytes()),
            ("x.wasm", b"\0asm"),
        ] {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, name, bytes).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn a_signature_vouches_for_the_release_it_states_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let (key, id) = keygen(dir.path(), None).unwrap();
        let file = dir.path().join("x.tar.gz");
        let bytes = archive("shout", "1.0.0");
        std::fs::write(&file, &bytes).unwrap();
        let sig_path = sign(&file, &dir.path().join("stud.key"), None).unwrap();
        let sig = std::fs::read_to_string(&sig_path).unwrap();
        let trusted = [TrustedPublisher {
            name: "Ada".into(),
            key: key.clone(),
        }];
        let holds = Statement::of(&bytes, "shout", "1.0.0");
        let check_as = |bytes: &[u8], holds: &Statement, policy| {
            check(
                bytes,
                &file,
                holds,
                Some((&sig_path, &sig)),
                &trusted,
                policy,
            )
        };
        assert_eq!(
            check_as(&bytes, &holds, SignaturePolicy::Trusted).unwrap(),
            Signed::By {
                publisher: "Ada".into(),
                key_id: id
            }
        );
        // Other bytes: the signature does not match, naming the publisher.
        let mut changed = bytes.clone();
        changed.push(0);
        let bad = check_as(&changed, &holds, SignaturePolicy::Any).unwrap_err();
        assert!(
            bad.to_string().contains("Ada") && bad.to_string().contains("x.tar.gz"),
            "{bad}"
        );
        // The same bytes taken for another release: refused by name.
        let other = Statement {
            version: "1.1.0".into(),
            ..holds.clone()
        };
        let moved = check_as(&bytes, &other, SignaturePolicy::Any).unwrap_err();
        assert!(
            matches!(moved, SigningError::OtherRelease { .. })
                && moved.to_string().contains("`shout` 1.0.0")
                && moved.to_string().contains("`shout` 1.1.0"),
            "{moved}"
        );
        // Unknown and unsigned: allowed by default, refused under `trusted`.
        let unknown = check(
            &bytes,
            &file,
            &holds,
            Some((&sig_path, &sig)),
            &[],
            SignaturePolicy::Any,
        )
        .unwrap();
        assert!(matches!(unknown, Signed::UnknownKey { .. }));
        assert!(
            check(
                &bytes,
                &file,
                &holds,
                None,
                &trusted,
                SignaturePolicy::Trusted
            )
            .is_err()
        );
        assert_eq!(
            public_key_line(&std::fs::read_to_string(dir.path().join("stud.pub")).unwrap()),
            Some(key)
        );
        // Only an extension archive is signed.
        let plain = dir.path().join("notes.txt");
        std::fs::write(&plain, b"not an archive").unwrap();
        assert!(matches!(
            sign(&plain, &dir.path().join("stud.key"), None),
            Err(SigningError::NotAnArchive { .. })
        ));
    }

    #[test]
    fn statements_parse_whole_or_not_at_all() {
        let s = Statement::parse("stud-extension id=shout version=1.2.0 sha256=AB").unwrap();
        assert_eq!(
            (s.id.as_str(), s.version.as_str(), s.sha256.as_str()),
            ("shout", "1.2.0", "ab")
        );
        assert_eq!(Statement::parse(&s.to_string()), Some(s));
        for comment in [
            "file:shout-1.2.0.tar.gz",
            "stud-extension id=shout version=1.2.0",
            "stud-extension id=shout version=1.2.0 sha256=ab extra=1",
            "stud-extension id=shout version=1.2.0 sha256",
        ] {
            assert_eq!(Statement::parse(comment), None, "{comment}");
        }
    }
}
