//! Policy stores for the module target's tests: Debian's refpolicy store
//! built here, the Fedora targeted store fixture, private copies to install
//! into, and proof that a store (or any tree) is left untouched: a digest
//! of every file before and after.

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

use std::io::Write as _;
use std::process::Command;
use std::sync::OnceLock;

use super::run_ok;

/// The packages whose versions decide the refpolicy store's contents.
const REFPOLICY_PACKAGES: &[&str] = &[
    "selinux-policy-default",
    "selinux-policy-src",
    "selinux-policy-dev",
    "policycoreutils",
    "secilc",
];

/// Runs `build` into `CARGO_TARGET_TMPDIR/NAME-KEY` once per key, under a
/// lock (parallel tests and test binaries share one result), and returns
/// the directory; `build` gets a fresh directory to fill.
fn cached(name: &str, key: &str, build: impl FnOnce(&Path)) -> PathBuf {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR"));
    fs::create_dir_all(cache).expect("target/tmp");
    let root = cache.join(format!("{name}-{key}"));
    let lock = fs::File::create(cache.join(format!("{name}-{key}.lock"))).expect("lock file");
    lock.lock().expect("lock the cache");
    let done = root.join(".complete");
    if !done.exists() {
        let building = cache.join(format!("{name}-{key}.building"));
        let _ = fs::remove_dir_all(&building);
        build(&building);
        let _ = fs::remove_dir_all(&root);
        fs::rename(&building, &root).expect("move the built store in place");
        fs::write(&done, key).expect("mark the store complete");
    }
    lock.unlock().expect("unlock the cache");
    root
}

/// A `semodule -p` root holding Debian's refpolicy store plus its container
/// module, built by `scripts/refpolicy-store` once per machine and package
/// versions into `target/tmp/` (about 10 s) and never modified afterwards:
/// tests that install into a store work on a copy ([`copy_of`]).
pub fn refpolicy_store() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/refpolicy-store");
        let versions = run_ok(
            Command::new("dpkg-query")
                .arg("-W")
                .arg("-f=${Package} ${Version}\n")
                .args(REFPOLICY_PACKAGES),
        );
        let mut hasher = DefaultHasher::new();
        versions.hash(&mut hasher);
        fs::read(&script)
            .expect("scripts/refpolicy-store")
            .hash(&mut hasher);
        let key = format!("{:016x}", hasher.finish());
        cached("refpolicy-store", &key, |dir| {
            run_ok(Command::new(&script).arg(dir));
        })
    })
    .clone()
}

/// The environment variable naming the Fedora targeted store fixture.
pub const FEDORA_STORE_VAR: &str = "SEMANIFEST_FEDORA_STORE";

/// A `semodule -p ROOT -s targeted` root holding a Fedora targeted store
/// (selinux-policy with container-selinux), from the tarball or unpacked
/// root that `SEMANIFEST_FEDORA_STORE` names (`.ci/run` sets it when the
/// fixture is there). `None` when it is unset: the calling test says on the
/// real standard error that it was skipped, and returns.
pub fn fedora_store(test: &str) -> Option<PathBuf> {
    let Some(given) = std::env::var_os(FEDORA_STORE_VAR).filter(|v| !v.is_empty()) else {
        // Not through `eprintln!`, which the test harness captures.
        let _ = writeln!(
            std::io::stderr(),
            "{test}: SKIPPED: {FEDORA_STORE_VAR} is unset (a Fedora targeted store: a .tar.zst of a root, or the root)"
        );
        return None;
    };
    let given = PathBuf::from(given);
    if given.is_dir() {
        return Some(given);
    }
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    Some(
        ROOT.get_or_init(|| {
            let metadata = fs::metadata(&given)
                .unwrap_or_else(|e| panic!("{FEDORA_STORE_VAR}={}: {e}", given.display()));
            let mut hasher = DefaultHasher::new();
            fs::canonicalize(&given).unwrap().hash(&mut hasher);
            metadata.len().hash(&mut hasher);
            metadata.modified().ok().hash(&mut hasher);
            let key = format!("{:016x}", hasher.finish());
            cached("fedora-store", &key, |dir| {
                fs::create_dir_all(dir).unwrap();
                run_ok(
                    Command::new("tar")
                        .arg("-C")
                        .arg(dir)
                        .arg("--zstd")
                        .arg("-xf")
                        .arg(&given),
                );
            })
        })
        .clone(),
    )
}

/// The store directory of a root, `ROOT/var/lib/selinux/NAME`.
pub fn store_dir(root: &Path, name: &str) -> PathBuf {
    root.join("var/lib/selinux").join(name)
}

/// A private copy of a store root, to install into or change.
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

/// `semodule -n -p ROOT -s NAME -X 400 -i MODULE`: what a node runs.
pub fn semodule_install(root: &Path, name: &str, module: &Path) {
    run_ok(
        Command::new(super::tool("semodule", "policycoreutils"))
            .arg("-n")
            .arg("-p")
            .arg(root)
            .args(["-s", name, "-X", "400", "-i"])
            .arg(module),
    );
}
