//! Proof that a policy store (or any tree) is left untouched: a digest of
//! every file before and after.

use std::collections::BTreeMap;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

/// Every file under `root` with its size, modification time and a hash
/// of its bytes: equal digests mean nothing was written.
pub fn digest(root: &Path) -> BTreeMap<PathBuf, (u64, i128, u64)> {
    let mut entries = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read store directory") {
            let entry = entry.expect("directory entry");
            let metadata = fs::symlink_metadata(entry.path()).expect("metadata");
            let relative = entry.path().strip_prefix(root).unwrap().to_owned();
            let mtime = metadata
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            if metadata.is_dir() {
                entries.insert(relative, (0, mtime, 0));
                stack.push(entry.path());
            } else {
                let mut hasher = DefaultHasher::new();
                if metadata.is_file() {
                    fs::read(entry.path()).expect("read").hash(&mut hasher);
                }
                entries.insert(relative, (metadata.len(), mtime, hasher.finish()));
            }
        }
    }
    entries
}
