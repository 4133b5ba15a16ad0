//! The Debian refpolicy store with its container module, built once per
//! machine and package versions by `scripts/refpolicy-store` into
//! `target/tmp/` (about 10 s; tests that install into a store work on a
//! copy), and helpers to prove a store is left untouched.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::run_ok;

/// The packages whose versions decide the store's contents.
const PACKAGES: &[&str] = &[
    "selinux-policy-default",
    "selinux-policy-src",
    "selinux-policy-dev",
    "policycoreutils",
    "secilc",
];

/// A `semodule -p` root holding Debian's refpolicy store plus its container
/// module. Built on first use (under a lock, so parallel tests and test
/// binaries share one build) and never modified afterwards.
pub fn refpolicy_store() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/refpolicy-store");
    let mut versions = Command::new("dpkg-query");
    versions
        .arg("-W")
        .arg("-f=${Package} ${Version}\n")
        .args(PACKAGES);
    let versions = run_ok(&mut versions);
    let mut hasher = DefaultHasher::new();
    versions.hash(&mut hasher);
    fs::read(&script)
        .expect("scripts/refpolicy-store")
        .hash(&mut hasher);
    let key = format!("{:016x}", hasher.finish());

    let cache = Path::new(env!("CARGO_TARGET_TMPDIR"));
    fs::create_dir_all(cache).expect("target/tmp");
    let root = cache.join(format!("refpolicy-store-{key}"));
    let lock =
        fs::File::create(cache.join(format!("refpolicy-store-{key}.lock"))).expect("lock file");
    lock.lock().expect("lock the store cache");
    let done = root.join(".complete");
    if !done.exists() {
        let building = cache.join(format!("refpolicy-store-{key}.building"));
        let _ = fs::remove_dir_all(&building);
        run_ok(Command::new(&script).arg(&building));
        let _ = fs::remove_dir_all(&root);
        fs::rename(&building, &root).expect("move the built store in place");
        fs::write(&done, versions).expect("mark the store complete");
    }
    lock.unlock().expect("unlock the store cache");
    root
}

/// The store directory inside a root built by [`refpolicy_store`].
pub fn store_dir(root: &Path) -> PathBuf {
    root.join("var/lib/selinux/default")
}

/// A private copy of a store root, to install into.
pub fn copy_of(root: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().expect("temporary directory");
    run_ok(
        Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", root.display()))
            .arg(copy.path()),
    );
    copy
}

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
