//! Extension indexes (`extensionIndexes`): JSON documents in the shape of
//! Spin's plugin index that list extensions and, per version, the
//! archive's URL, sha256 and minisign signature, the publisher, the
//! contract range and a capabilities summary. `stud ext search` reads them,
//! `stud ext install NAME[@RANGE]` resolves against them (semver, and only
//! versions whose contract range includes this stud's), `outdated` and
//! `update` compare with what is installed. Each fetch is cached, so
//! `search` works offline from the last copy.

use std::path::{Path, PathBuf};

use semver::{Version, VersionReq};
use serde::{Deserialize, Serialize};

use super::install::{InstallError, Source, download};
use crate::contract::HOST_CONTRACT;
use crate::digest::Sha256Digest;
use crate::manifest::ExtensionId;

/// Largest index document read.
pub const MAX_INDEX_BYTES: usize = 8 * 1024 * 1024;
/// Largest signature file read.
const MAX_SIGNATURE_BYTES: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(
        "no extension index is configured; add `\"extensionIndexes\": [\"https://...\"]` to ~/.stud/settings.json, or install from a folder, archive or URL"
    )]
    NoIndexes,
    #[error("`{0}` is not a version range: {1}; write it like `^1`, `~1.2`, `>=1.0, <2`")]
    BadRange(String, String),
    #[error("no index lists `{id}` (searched {})", .searched.join(", "))]
    NotFound { id: String, searched: Vec<String> },
    #[error(
        "no version of `{id}` fits {range} and this stud (contract {HOST_CONTRACT}):\n  {}",
        .why.join("\n  ")
    )]
    NoMatch {
        id: String,
        range: String,
        why: Vec<String>,
    },
    /// An entry whose URL cannot be used: which index, entry and field.
    #[error("{0}")]
    BadEntry(String),
    #[error(transparent)]
    Install(#[from] InstallError),
}

/// An index document.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Index {
    #[serde(default)]
    pub extensions: Vec<IndexEntry>,
}

/// One extension of an index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexEntry {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub versions: Vec<IndexVersion>,
}

/// One published version.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexVersion {
    pub version: Version,
    /// The archive (`stud ext pack`), absolute or relative to the index.
    pub url: String,
    /// Hex sha256 of the archive.
    pub sha256: String,
    /// Its `.minisig`, absolute or relative to the index.
    #[serde(default)]
    pub signature: Option<String>,
    /// Who says they published it (shown; the signature decides).
    #[serde(default)]
    pub publisher: Option<String>,
    /// The manifest's `contract` range.
    pub contract: VersionReq,
    /// What it asks for, in words (shown before the download).
    #[serde(default)]
    pub capabilities: Vec<String>,
}

impl IndexVersion {
    /// Whether this stud can load it.
    pub fn fits_host(&self) -> bool {
        self.contract.matches(&HOST_CONTRACT)
    }
}

/// An index as read now, or from the cache when it could not be.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub url: String,
    pub index: Index,
    /// Why the live copy could not be read (then `index` is the cached
    /// copy, or empty when there is none).
    pub problem: Option<String>,
    /// When the cached copy used was saved (Unix seconds).
    pub cached_at: Option<u64>,
}

fn cache_file(home: &Path, url: &str) -> PathBuf {
    home.join("cache")
        .join("indexes")
        .join(format!("{}.json", Sha256Digest::of(url.as_bytes()).hex()))
}

fn parse(bytes: &[u8]) -> Result<Index, String> {
    if bytes.len() > MAX_INDEX_BYTES {
        return Err(format!("larger than {MAX_INDEX_BYTES} bytes"));
    }
    serde_json::from_slice(bytes).map_err(|e| format!("not an extension index: {e}"))
}

/// Read every index (in order), falling back to its cached copy.
pub async fn fetch_all(home: &Path, urls: &[String]) -> Result<Vec<Fetched>, IndexError> {
    if urls.is_empty() {
        return Err(IndexError::NoIndexes);
    }
    let mut out = Vec::new();
    for url in urls {
        let live = match Source::parse(url) {
            Ok(Source::Url(_)) => match download(url).await {
                Ok((bytes, _)) => parse(&bytes).map(|index| (index, bytes)),
                Err(e) => Err(e.to_string()),
            },
            Ok(_) => Err("an index must be an https:// URL (or http://127.0.0.1)".to_string()),
            Err(e) => Err(e.to_string()),
        };
        let cache = cache_file(home, url);
        match live {
            Ok((index, bytes)) => {
                if let Some(dir) = cache.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                // A cache that cannot be written costs only offline search.
                let _ = crate::atomic_write::write_atomic(&cache, &bytes);
                out.push(Fetched {
                    url: url.clone(),
                    index,
                    problem: None,
                    cached_at: None,
                });
            }
            Err(problem) => {
                let cached = std::fs::read(&cache).ok().and_then(|b| parse(&b).ok());
                let cached_at = cached.as_ref().and_then(|_| {
                    let modified = std::fs::metadata(&cache).and_then(|m| m.modified()).ok()?;
                    modified
                        .duration_since(std::time::UNIX_EPOCH)
                        .ok()
                        .map(|d| d.as_secs())
                });
                out.push(Fetched {
                    url: url.clone(),
                    index: cached.unwrap_or_default(),
                    problem: Some(problem),
                    cached_at,
                });
            }
        }
    }
    Ok(out)
}

/// `NAME` or `NAME@RANGE`, when `text` reads as one.
pub fn parse_ref(text: &str) -> Option<(ExtensionId, Option<&str>)> {
    let (name, range) = match text.split_once('@') {
        Some((n, r)) => (n, Some(r)),
        None => (text, None),
    };
    name.parse::<ExtensionId>().ok().map(|id| (id, range))
}

pub fn parse_range(text: Option<&str>) -> Result<VersionReq, IndexError> {
    match text {
        None => Ok(VersionReq::STAR),
        Some(t) => VersionReq::parse(t).map_err(|e| IndexError::BadRange(t.into(), e.to_string())),
    }
}

/// A version found in an index.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    pub index: &'a str,
    pub entry: &'a IndexEntry,
    pub version: &'a IndexVersion,
}

impl Candidate<'_> {
    fn join(&self, field: &'static str, value: &str) -> Result<String, IndexError> {
        let bad = |reason: String| {
            IndexError::BadEntry(format!(
                "index {}: `{}` {} has a bad {field} `{value}`: {reason}",
                self.index, self.entry.id, self.version.version
            ))
        };
        let base = reqwest::Url::parse(self.index).map_err(|e| bad(e.to_string()))?;
        base.join(value)
            .map(|u| u.to_string())
            .map_err(|e| bad(e.to_string()))
    }

    /// The archive's URL.
    pub fn archive_url(&self) -> Result<String, IndexError> {
        self.join("url", &self.version.url)
    }

    /// The signature's URL, when the index names one.
    pub fn signature_url(&self) -> Result<Option<String>, IndexError> {
        self.version
            .signature
            .as_deref()
            .map(|s| self.join("signature", s))
            .transpose()
    }

    /// Download the signature text.
    pub async fn signature(&self) -> Result<Option<(PathBuf, String)>, IndexError> {
        let Some(url) = self.signature_url()? else {
            return Ok(None);
        };
        Source::parse(&url)?;
        let (bytes, _) = download(&url).await?;
        if bytes.len() > MAX_SIGNATURE_BYTES {
            return Err(InstallError::Download {
                url,
                message: format!("a signature larger than {MAX_SIGNATURE_BYTES} bytes"),
            }
            .into());
        }
        Ok(Some((
            PathBuf::from(&url),
            String::from_utf8_lossy(&bytes).into_owned(),
        )))
    }
}

/// Every version of `id` in these indexes, the newest first (an earlier
/// index wins a tie).
pub fn versions<'a>(fetched: &'a [Fetched], id: &str) -> Vec<Candidate<'a>> {
    let mut out: Vec<Candidate> = fetched
        .iter()
        .flat_map(|f| {
            f.index
                .extensions
                .iter()
                .filter(|e| e.id == id)
                .flat_map(move |entry| {
                    entry.versions.iter().map(move |version| Candidate {
                        index: &f.url,
                        entry,
                        version,
                    })
                })
        })
        .collect();
    out.sort_by(|a, b| b.version.version.cmp(&a.version.version));
    out
}

/// The newest version of `id` inside `range` that this stud can load.
pub fn resolve<'a>(
    fetched: &'a [Fetched],
    id: &str,
    range: &VersionReq,
) -> Result<Candidate<'a>, IndexError> {
    let all = versions(fetched, id);
    if all.is_empty() {
        return Err(IndexError::NotFound {
            id: id.to_string(),
            searched: fetched.iter().map(|f| f.url.clone()).collect(),
        });
    }
    if let Some(c) = all
        .iter()
        .find(|c| range.matches(&c.version.version) && c.version.fits_host())
    {
        return Ok(c.clone());
    }
    let why = all
        .iter()
        .map(|c| {
            let v = &c.version;
            if !range.matches(&v.version) {
                format!("{}: outside {range}", v.version)
            } else {
                format!(
                    "{}: built for contract {}; a newer stud is needed",
                    v.version, v.contract
                )
            }
        })
        .collect();
    Err(IndexError::NoMatch {
        id: id.to_string(),
        range: range.to_string(),
        why,
    })
}

/// What `search` shows of one extension.
pub struct Hit<'a> {
    pub index: &'a str,
    pub entry: &'a IndexEntry,
    /// The newest version this stud can load.
    pub latest: Option<&'a IndexVersion>,
}

/// Extensions whose id, name or description contains `text` (any case).
pub fn search<'a>(fetched: &'a [Fetched], text: &str) -> Vec<Hit<'a>> {
    let needle = text.to_lowercase();
    let mut hits = Vec::new();
    for f in fetched {
        for entry in &f.index.extensions {
            let fields = [
                Some(entry.id.as_str()),
                entry.name.as_deref(),
                entry.description.as_deref(),
            ];
            if !fields
                .iter()
                .flatten()
                .any(|t| t.to_lowercase().contains(&needle))
            {
                continue;
            }
            let latest = entry
                .versions
                .iter()
                .filter(|v| v.fits_host())
                .max_by(|a, b| a.version.cmp(&b.version));
            hits.push(Hit {
                index: &f.url,
                entry,
                latest,
            });
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetched(versions: &[(&str, &str)]) -> Vec<Fetched> {
        let versions = versions
            .iter()
            .map(|(v, c)| IndexVersion {
                version: v.parse().unwrap(),
                url: format!("shout-{v}.tar.gz"),
                sha256: "00".into(),
                signature: Some(format!("shout-{v}.tar.gz.minisig")),
                publisher: None,
                contract: c.parse().unwrap(),
                capabilities: vec![],
            })
            .collect();
        vec![Fetched {
            url: "https://example.com/ext/index.json".into(),
            index: Index {
                extensions: vec![IndexEntry {
                    id: "shout".into(),
                    name: None,
                    description: Some("Loud".into()),
                    kind: None,
                    versions,
                }],
            },
            problem: None,
            cached_at: None,
        }]
    }

    #[test]
    fn resolution_takes_the_newest_in_range_that_fits_this_stud() {
        let f = fetched(&[
            ("1.0.0", "^0.1"),
            ("1.2.0", "^0.1"),
            ("1.3.0", "^0.2"),
            ("2.0.0", "^0.1"),
        ]);
        let pick = |r: Option<&str>| {
            resolve(&f, "shout", &parse_range(r).unwrap()).map(|c| c.version.version.to_string())
        };
        assert_eq!(pick(Some("^1")).unwrap(), "1.2.0");
        assert_eq!(pick(None).unwrap(), "2.0.0");
        assert_eq!(pick(Some("=1.0.0")).unwrap(), "1.0.0");
        let e = pick(Some("~1.3")).unwrap_err().to_string();
        assert!(e.contains("1.3.0: built for contract ^0.2"), "{e}");
        assert!(e.contains("1.2.0: outside ~1.3"), "{e}");
        let c = resolve(&f, "shout", &VersionReq::STAR).unwrap();
        assert_eq!(
            c.archive_url().unwrap(),
            "https://example.com/ext/shout-2.0.0.tar.gz"
        );
        assert!(matches!(
            resolve(&f, "whisper", &VersionReq::STAR),
            Err(IndexError::NotFound { .. })
        ));
        assert!(parse_range(Some("one")).is_err());
    }

    #[test]
    fn names_and_ranges_parse() {
        let (id, range) = parse_ref("shout@^1").unwrap();
        assert_eq!((id.as_str(), range), ("shout", Some("^1")));
        assert!(parse_ref("./shout").is_none());
        assert!(parse_ref("shout.tar.gz").is_none());
    }
}
