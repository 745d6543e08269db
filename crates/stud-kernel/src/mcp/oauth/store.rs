//! Tokens for one server's URL, in `<stud home>/mcp-auth/<key>.json`
//! (0600, in a 0700 folder), never in settings. The file is keyed by the
//! server's URL and names it inside: a token is only ever sent to the URL
//! it was issued for, so a project that points a server id at another
//! host gets no token. A file lock beside it orders refreshes between
//! stud processes (refresh tokens are rotated: two refreshing at once
//! would log one of them out).

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The folder under the stud home.
pub const FOLDER: &str = "mcp-auth";

#[derive(Serialize, Deserialize)]
struct TokenFile {
    /// The server id when the login happened (for people reading it).
    server: String,
    /// The URL the tokens are for; a file for another URL is ignored.
    url: String,
    credentials: StoredCredentials,
}

/// One server URL's tokens on disk.
#[derive(Clone, Debug)]
pub struct TokenStore {
    server: String,
    url: String,
    path: PathBuf,
}

impl TokenStore {
    pub fn new(home_root: &Path, server: &str, url: &str) -> Self {
        let key = hex::encode(&Sha256::digest(url.as_bytes())[..12]);
        TokenStore {
            server: server.to_string(),
            url: url.to_string(),
            path: home_root.join(FOLDER).join(format!("{key}.json")),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a login for this URL is kept.
    pub fn exists(&self) -> bool {
        self.read().ok().flatten().is_some()
    }

    fn read(&self) -> Result<Option<StoredCredentials>, std::io::Error> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        // A damaged file is a missing login (the person logs in again),
        // not an error that stops the server.
        Ok(serde_json::from_slice::<TokenFile>(&bytes)
            .ok()
            .filter(|f| f.url == self.url)
            .map(|f| f.credentials))
    }

    fn write(&self, credentials: StoredCredentials) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        let file = TokenFile {
            server: self.server.clone(),
            url: self.url.clone(),
            credentials,
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
        // A fresh temp file is created 0600 and renamed over the old one.
        crate::atomic_write::write_atomic(&self.path, &bytes)
    }

    /// Forget the login; whether there was one.
    pub fn remove(&self) -> std::io::Result<bool> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

fn store_error(e: impl std::fmt::Display, path: &Path) -> AuthError {
    AuthError::CredentialStoreError(format!("{}: {e}", path.display()))
}

#[async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(|e| store_error(e, &self.path))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials)
            .map_err(|e| store_error(e, &self.path))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove()
            .map(|_| ())
            .map_err(|e| store_error(e, &self.path))
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let lock = self.path.with_extension("lock");
        let dir = self.path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let file = tokio::task::spawn_blocking(move || {
            create_private_dir(&dir)?;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock)?;
            file.lock()?;
            Ok::<_, std::io::Error>(file)
        })
        .await
        .map_err(|e| store_error(e, &self.path))?
        .map_err(|e| store_error(e, &self.path))?;
        Ok(Some(CredentialRefreshGuard::new(file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(id: &str) -> StoredCredentials {
        StoredCredentials::new(id.into(), None, vec![], Some(1))
    }

    /// The file is private, keyed by the URL, and a file written for one
    /// URL is never read for another (a project pointing the same id
    /// elsewhere gets nothing).
    #[tokio::test]
    async fn tokens_are_private_and_bound_to_their_url() {
        let home = tempfile::tempdir().unwrap();
        let a = TokenStore::new(home.path(), "docs", "https://a.example/mcp");
        a.save(creds("client-a")).await.unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(a.path()), 0o600);
            assert_eq!(mode(a.path().parent().unwrap()), 0o700);
        }
        let loaded = a.load().await.unwrap().expect("kept");
        assert_eq!(loaded.client_id, "client-a");

        let elsewhere = TokenStore::new(home.path(), "docs", "https://evil.example/mcp");
        assert!(elsewhere.load().await.unwrap().is_none());
        // Even a file copied over to the other key names its own URL.
        std::fs::copy(a.path(), elsewhere.path()).unwrap();
        assert!(elsewhere.load().await.unwrap().is_none());

        assert!(a.remove().unwrap());
        assert!(a.load().await.unwrap().is_none());
        assert!(!a.remove().unwrap());
    }
}
