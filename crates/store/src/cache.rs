//! What a build learns about a store that depends on the store's content
//! alone, kept between builds: whether our compilation of the store
//! reproduces what it built (and which of its own neverallows it breaks).
//! A store compiles the same way every time, so the second build against
//! an unchanged store compiles it once (store + module), not three times.
//!
//! Entries are keyed by a SHA-256 of everything that decides them (the
//! module files, the settings, the built policy, the secilc and libsepol
//! that compiled it); a changed byte is a miss. Only verdicts that were
//! fully established are kept. The directory is `$SEMANIFEST_CACHE_DIR`,
//! else `$XDG_CACHE_HOME/semanifest`, else `~/.cache/semanifest`;
//! `SEMANIFEST_CACHE_DIR=off` turns it off. A cache that cannot be read or
//! written is skipped, never an error.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Bump when what an entry means changes.
const FORMAT: &str = "semanifest-store-cache 1";

#[derive(Debug, Clone)]
pub(crate) struct Cache {
    dir: Option<PathBuf>,
}

impl Cache {
    /// The cache the environment names (see the module docs).
    pub(crate) fn from_env() -> Cache {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let dir = match var("SEMANIFEST_CACHE_DIR") {
            Some(dir) if dir == "off" => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None => var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))
                .map(|base| base.join("semanifest")),
        };
        Cache {
            dir: dir.map(|d| d.join("store")),
        }
    }

    pub(crate) fn is_on(&self) -> bool {
        self.dir.is_some()
    }

    fn entry(&self, kind: &str, key: &Key) -> Option<PathBuf> {
        Some(self.dir.as_ref()?.join(format!("{kind}-{}.json", key.0)))
    }

    pub(crate) fn get<T: DeserializeOwned>(&self, kind: &str, key: &Key) -> Option<T> {
        let path = self.entry(kind, key)?;
        let bytes = fs::read(&path).ok()?;
        match serde_json::from_slice(&bytes) {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::debug!("cache entry {} unreadable: {error}", path.display());
                None
            }
        }
    }

    /// Stores `value`; written beside and renamed, so a reader never sees
    /// half an entry.
    pub(crate) fn put<T: Serialize>(&self, kind: &str, key: &Key, value: &T) {
        let Some(path) = self.entry(kind, key) else {
            return;
        };
        let write = || -> std::io::Result<()> {
            let dir = path.parent().unwrap_or(Path::new("."));
            fs::create_dir_all(dir)?;
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            file.write_all(&serde_json::to_vec(value).map_err(std::io::Error::other)?)?;
            file.persist(&path).map_err(|e| e.error)?;
            Ok(())
        };
        if let Err(error) = write() {
            tracing::debug!("cache entry {} not written: {error}", path.display());
        }
    }
}

/// A cache key: the hex SHA-256 of what was fed to a [`KeyBuilder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key(String);

pub(crate) struct KeyBuilder(Sha256);

impl KeyBuilder {
    pub(crate) fn new(kind: &str) -> KeyBuilder {
        let mut builder = KeyBuilder(Sha256::new());
        builder.text(FORMAT).text(kind);
        builder
    }

    /// A length-prefixed field, so two fields never run into each other.
    pub(crate) fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    pub(crate) fn text(&mut self, text: &str) -> &mut Self {
        self.bytes(text.as_bytes())
    }

    /// A file's content (an unreadable file is an error: no key).
    pub(crate) fn file(&mut self, path: &Path) -> std::io::Result<&mut Self> {
        let bytes = fs::read(path)?;
        Ok(self.bytes(&bytes))
    }

    /// An executable's identity: its path, size and modification time
    /// (cheaper than its content, and changed by every package upgrade).
    pub(crate) fn program(&mut self, path: &Path) -> &mut Self {
        let identity = fs::canonicalize(path)
            .and_then(|real| {
                let meta = fs::metadata(&real)?;
                let modified = meta
                    .modified()?
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                Ok(format!(
                    "{} {} {}",
                    real.display(),
                    meta.len(),
                    modified.as_nanos()
                ))
            })
            .unwrap_or_else(|_| format!("{} unknown", path.display()));
        self.text(&identity)
    }

    pub(crate) fn finish(&self) -> Key {
        let digest = self.0.clone().finalize();
        Key(digest.iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// The libsepol that secilc links (it is what compiles): its identity, as
/// [`KeyBuilder::program`], searched where the dynamic loader looks first.
pub(crate) fn libsepol() -> Option<PathBuf> {
    let from_env = std::env::var_os("LD_LIBRARY_PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default();
    let standard = [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/lib64",
        "/usr/lib",
        "/lib",
    ];
    from_env
        .into_iter()
        .chain(standard.iter().map(PathBuf::from))
        .map(|dir| dir.join("libsepol.so.2"))
        .find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_do_not_run_into_each_other() {
        let a = KeyBuilder::new("k").text("ab").text("c").finish();
        let b = KeyBuilder::new("k").text("a").text("bc").finish();
        assert_ne!(a, b);
        assert_eq!(a, KeyBuilder::new("k").text("ab").text("c").finish());
    }

    #[test]
    fn entries_round_trip_and_a_miss_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache {
            dir: Some(dir.path().join("store")),
        };
        let key = KeyBuilder::new("t").text("x").finish();
        assert_eq!(cache.get::<Vec<String>>("t", &key), None);
        cache.put("t", &key, &vec!["v".to_owned()]);
        assert_eq!(
            cache.get::<Vec<String>>("t", &key),
            Some(vec!["v".to_owned()])
        );
        let off = Cache { dir: None };
        off.put("t", &key, &1);
        assert_eq!(off.get::<i32>("t", &key), None);
    }
}
