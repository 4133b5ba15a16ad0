//! Shared fixtures for the relabel tests: tree builders, label and metadata
//! dumps that work below PATH_MAX, and runners for `setfiles` and
//! `semanifest relabel`.
//!
//! These tests need root (device nodes, mounts, `security.*` xattrs), a
//! mounted `/proc` and `setfiles` (package policycoreutils). They fail with a
//! clear message when those are missing rather than skipping.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString, OsStr};
use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, RawDir, XattrFlags, CWD};
use rustix::io::Errno;

pub const XATTR: &str = "security.selinux";

/// Fails the test unless it can do what these tests need.
pub fn require_privileges() {
    assert!(
        rustix::process::geteuid().is_root(),
        "the relabel tests must run as root (device nodes, mounts, security.* xattrs)"
    );
    assert!(
        Path::new("/proc/self/fd").exists(),
        "the relabel tests need /proc mounted"
    );
}

pub fn setfiles_path() -> PathBuf {
    for candidate in ["/usr/sbin/setfiles", "/sbin/setfiles"] {
        if Path::new(candidate).exists() {
            return PathBuf::from(candidate);
        }
    }
    panic!(
        "setfiles not found: install the Debian package policycoreutils (listed in .ci/packages)"
    );
}

pub fn semanifest() -> Command {
    Command::new(env!("CARGO_BIN_EXE_semanifest"))
}

/// A scratch directory on the test machine's ext4 root (not tmpfs: the
/// tests compare with setfiles on a real xattr-capable disk filesystem).
pub fn scratch() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    fs::create_dir_all(base).expect("create CARGO_TARGET_TMPDIR");
    tempfile::Builder::new()
        .prefix("relabel-")
        .tempdir_in(base)
        .expect("create scratch dir")
}

pub fn write_file(path: &Path, contents: &str) {
    fs::write(path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

pub fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    output
}

pub fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `setfiles -F -T 1 [-r ROOT] FC PATH...` (full contexts, one thread: see
/// the hard-link note in relabel_setfiles.rs).
pub fn setfiles(fc: &Path, root: Option<&Path>, paths: &[&Path]) -> Output {
    let mut command = Command::new(setfiles_path());
    command.arg("-F").args(["-T", "1"]);
    if let Some(root) = root {
        command.arg("-r").arg(root);
    }
    command.arg(fc).args(paths);
    run(&mut command)
}

/// `semanifest relabel --file-contexts FC [--root ROOT] EXTRA... PATH...`.
pub fn relabel(fc: &Path, root: Option<&Path>, extra: &[&str], paths: &[&Path]) -> Output {
    let mut command = semanifest();
    command.arg("relabel").arg("--file-contexts").arg(fc);
    if let Some(root) = root {
        command.arg("--root").arg(root);
    }
    command.args(extra).args(paths);
    run(&mut command)
}

/// Builds trees below a directory with fd-relative calls, so they can be
/// deeper than PATH_MAX.
pub struct TreeBuilder {
    root: PathBuf,
}

impl TreeBuilder {
    pub fn new(root: &Path) -> Self {
        fs::create_dir_all(root).expect("create tree root");
        Self {
            root: root.to_path_buf(),
        }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    pub fn dir(&self, relative: &str) -> &Self {
        fs::create_dir_all(self.path(relative)).expect("create dir");
        self
    }

    pub fn file(&self, relative: &str, contents: &str) -> &Self {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
        write_file(&path, contents);
        self
    }

    pub fn raw_file(&self, parent: &str, name: &[u8], contents: &str) -> &Self {
        let path = self.path(parent).join(OsStr::from_bytes(name));
        write_file(&path, contents);
        self
    }

    pub fn symlink(&self, relative: &str, target: &str) -> &Self {
        std::os::unix::fs::symlink(target, self.path(relative)).expect("symlink");
        self
    }

    pub fn hard_link(&self, existing: &str, new: &str) -> &Self {
        fs::hard_link(self.path(existing), self.path(new)).expect("hard link");
        self
    }

    pub fn fifo(&self, relative: &str) -> &Self {
        self.node(relative, FileType::Fifo, 0)
    }

    pub fn char_device(&self, relative: &str) -> &Self {
        // 1:3 is /dev/null: harmless if anything ever opened it.
        self.node(
            relative,
            FileType::CharacterDevice,
            rustix::fs::makedev(1, 3),
        )
    }

    pub fn block_device(&self, relative: &str) -> &Self {
        // 7:200: a loop minor that is normally unused.
        self.node(relative, FileType::BlockDevice, rustix::fs::makedev(7, 200))
    }

    pub fn socket(&self, relative: &str) -> &Self {
        let listener =
            std::os::unix::net::UnixListener::bind(self.path(relative)).expect("bind socket");
        drop(listener);
        self
    }

    fn node(&self, relative: &str, kind: FileType, device: u64) -> &Self {
        rfs::mknodat(
            CWD,
            self.path(relative).as_path(),
            kind,
            Mode::from_raw_mode(0o644),
            device,
        )
        .unwrap_or_else(|e| panic!("mknod {relative}: {e}"));
        self
    }

    pub fn chmod(&self, relative: &str, mode: u32) -> &Self {
        fs::set_permissions(self.path(relative), fs::Permissions::from_mode(mode)).expect("chmod");
        self
    }

    /// A chain of `depth` directories named `component` below `relative`,
    /// built with fd-relative calls, with a file at the bottom. Returns the
    /// length of the deepest path in bytes.
    pub fn deep_chain(&self, relative: &str, component: &str, depth: usize) -> usize {
        let start = self.path(relative);
        fs::create_dir_all(&start).expect("create chain start");
        let mut dir = open_dir(&start);
        let mut length = start.as_os_str().len();
        for _ in 0..depth {
            match rfs::mkdirat(&dir, component, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => panic!("mkdirat: {e}"),
            }
            dir = rfs::openat(
                &dir,
                component,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .expect("open chain dir");
            length += 1 + component.len();
        }
        let file = rfs::openat(
            &dir,
            "bottom.log",
            OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .expect("create bottom file");
        drop(file);
        length + "/bottom.log".len()
    }
}

fn open_dir(path: &Path) -> OwnedFd {
    rfs::openat(
        CWD,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// Everything a relabel may or may not change about one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub kind: FileType,
    /// The raw `security.selinux` value (with its NUL), `None` if absent.
    pub label: Option<Vec<u8>>,
    pub meta: Meta,
}

/// What a relabel must never change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: (i64, u64),
    pub size: u64,
    /// Regular files: contents; symlinks: target.
    pub data: Vec<u8>,
}

/// Every object below (and including) `root`, keyed by its path relative to
/// `root` ("" for the root). Reads through directory fds, and reads labels
/// with `lgetxattr` on `/proc/self/fd/DIR/NAME` (deliberately not the
/// relabeler's own method), so it works below PATH_MAX and never follows
/// symlinks. Does not enter other filesystems.
pub fn dump(root: &Path) -> BTreeMap<Vec<u8>, Object> {
    let mut objects = BTreeMap::new();
    let parent = root.parent().expect("root has a parent");
    let name = root.file_name().expect("root has a name");
    let parent_fd = open_dir(parent);
    let root_stat = rfs::statat(CWD, root, AtFlags::SYMLINK_NOFOLLOW).expect("stat root");
    let name = CString::new(name.as_bytes()).expect("no NUL");
    dump_entry(
        &parent_fd,
        &name,
        Vec::new(),
        root_stat.st_dev,
        &mut objects,
    );
    objects
}

fn dump_entry(
    dir: &OwnedFd,
    name: &CStr,
    relative: Vec<u8>,
    device: u64,
    objects: &mut BTreeMap<Vec<u8>, Object>,
) {
    let stat = rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).expect("stat during dump");
    let kind = FileType::from_raw_mode(stat.st_mode);
    let label = read_label_at(dir, name);
    let data = match kind {
        FileType::RegularFile => {
            let fd = rfs::openat(
                dir,
                name,
                OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                Mode::empty(),
            )
            .expect("open file during dump");
            fs::read(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("read file during dump")
        }
        FileType::Symlink => rfs::readlinkat(dir, name, Vec::new())
            .expect("readlink")
            .into_bytes(),
        _ => Vec::new(),
    };
    let meta = Meta {
        mode: stat.st_mode,
        uid: stat.st_uid,
        gid: stat.st_gid,
        mtime: (stat.st_mtime as i64, stat.st_mtime_nsec as u64),
        size: stat.st_size as u64,
        data,
    };
    objects.insert(relative.clone(), Object { kind, label, meta });
    if kind != FileType::Directory || stat.st_dev != device {
        return;
    }
    let fd = rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open dir during dump");
    let mut names = Vec::new();
    let mut buffer = Vec::with_capacity(16 * 1024);
    let mut entries = RawDir::new(&fd, buffer.spare_capacity_mut());
    while let Some(entry) = entries.next() {
        let entry = entry.expect("getdents during dump");
        let child = entry.file_name();
        if !matches!(child.to_bytes(), b"." | b"..") {
            names.push(child.to_owned());
        }
    }
    for child in names {
        let mut child_relative = relative.clone();
        if !child_relative.is_empty() {
            child_relative.push(b'/');
        }
        child_relative.extend_from_slice(child.as_bytes());
        dump_entry(&fd, &child, child_relative, device, objects);
    }
}

fn read_label_at(dir: &OwnedFd, name: &CStr) -> Option<Vec<u8>> {
    let mut path = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
    path.extend_from_slice(name.to_bytes());
    let path = CString::new(path).expect("no NUL");
    let mut buffer = vec![0u8; 4096];
    match rfs::lgetxattr(path.as_c_str(), XATTR, &mut buffer[..]) {
        Ok(len) => {
            buffer.truncate(len);
            Some(buffer)
        }
        Err(Errno::NODATA) => None,
        Err(e) => panic!("lgetxattr {path:?}: {e}"),
    }
}

/// Writes a raw label (no NUL added) on `path` without following symlinks.
pub fn set_label(path: &Path, value: &[u8]) {
    rfs::lsetxattr(path, XATTR, value, XattrFlags::empty())
        .unwrap_or_else(|e| panic!("lsetxattr {}: {e}", path.display()));
}

pub fn label_of(path: &Path) -> Option<Vec<u8>> {
    let mut buffer = vec![0u8; 4096];
    match rfs::lgetxattr(path, XATTR, &mut buffer[..]) {
        Ok(len) => {
            buffer.truncate(len);
            Some(buffer)
        }
        Err(Errno::NODATA) => None,
        Err(e) => panic!("lgetxattr {}: {e}", path.display()),
    }
}

/// (device, inode) of `path`, not following symlinks.
pub fn inode_of(path: &Path) -> (u64, u64) {
    let stat = rfs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW).expect("lstat");
    (stat.st_dev, stat.st_ino)
}

/// Only the labels of a dump.
pub fn labels(objects: &BTreeMap<Vec<u8>, Object>) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
    objects
        .iter()
        .map(|(path, object)| (path.clone(), object.label.clone()))
        .collect()
}

/// Only what must never change.
pub fn metadata(objects: &BTreeMap<Vec<u8>, Object>) -> BTreeMap<Vec<u8>, Meta> {
    objects
        .iter()
        .map(|(path, object)| (path.clone(), object.meta.clone()))
        .collect()
}

/// Lists the differing entries of two label dumps, readable in a failure.
pub fn label_differences(
    left: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    right: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
) -> Vec<String> {
    let show = |label: Option<&Option<Vec<u8>>>| match label {
        None => "<missing object>".to_owned(),
        Some(None) => "<no label>".to_owned(),
        Some(Some(value)) => format!("{:?}", String::from_utf8_lossy(value)),
    };
    let mut keys: Vec<&Vec<u8>> = left.keys().chain(right.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|key| left.get(*key) != right.get(*key))
        .map(|key| {
            format!(
                "{}: {} vs {}",
                String::from_utf8_lossy(key),
                show(left.get(key)),
                show(right.get(key))
            )
        })
        .collect()
}

/// Runs a `mount` command, panicking with its stderr on failure.
pub fn mount(args: &[&str]) {
    let output = run(Command::new("mount").args(args));
    assert!(
        output.status.success(),
        "mount {args:?} failed: {}",
        stderr_of(&output)
    );
}

/// Unmounts on drop, so a failing test does not leave mounts behind.
pub struct MountGuard(pub PathBuf);

impl Drop for MountGuard {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}
