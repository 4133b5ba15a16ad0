//! A node root on a real filesystem for each test: a tmpfs or an ext4
//! image mounted in a private mount namespace of the test's thread (the
//! processes it starts inherit it; nothing shows on the host), with
//! `etc/passwd`, `etc/group` and a sentinel etcd tree whose digest must
//! come out of every test unchanged.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

pub const ETCD_LABEL: &str = "system_u:object_r:etcd_var_t:s0";
pub const ETCD_UID: u32 = 998;
pub const ETCD_GID: u32 = 997;

/// Which filesystem the root is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fs {
    Tmpfs,
    Ext4,
    /// XFS (xfsprogs), which keeps project IDs on every inode even where
    /// the kernel has no quota support.
    Xfs,
}

pub const BOTH: [Fs; 2] = [Fs::Tmpfs, Fs::Ext4];

pub struct Arena {
    /// Holds the image and the mount point; removed last.
    dir: tempfile::TempDir,
    /// The node's root (the mount point).
    pub root: PathBuf,
    /// Mounted by the test (innermost last), unmounted on drop.
    mounts: Vec<PathBuf>,
    sentinel: String,
}

impl Arena {
    /// A fresh root with accounts and the sentinel etcd tree (labelled,
    /// owned by etcd) at `var/lib/etcd`.
    pub fn new(fs: Fs) -> Self {
        private_mount_namespace();
        // In the system's temporary directory, not the build's: tests run
        // semanifest as nobody below the root, which needs every directory
        // above it searchable by others, and a checkout may sit below one
        // that is not (`mktemp -d` makes 0700).
        let dir = tempfile::Builder::new()
            .prefix("semanifest-node-")
            .tempdir_in(std::env::temp_dir())
            .expect("tempdir");
        let root = dir.path().join("root");
        fs::create_dir(&root).expect("mount point");
        match fs {
            Fs::Tmpfs => {
                run(Command::new("mount")
                    .args(["-t", "tmpfs", "-o", "size=1g,mode=0755", "none"])
                    .arg(&root));
            }
            Fs::Ext4 => {
                let image = dir.path().join("ext4.img");
                fs::File::create(&image)
                    .and_then(|file| file.set_len(512 << 20))
                    .expect("image");
                run(Command::new("mkfs.ext4")
                    .args(["-q", "-F", "-E", "lazy_itable_init=1,lazy_journal_init=1"])
                    .arg(&image));
                run(Command::new("mount")
                    .arg("-o")
                    .arg("loop")
                    .arg(&image)
                    .arg(&root));
            }
            Fs::Xfs => {
                let image = dir.path().join("xfs.img");
                fs::File::create(&image)
                    .and_then(|file| file.set_len(512 << 20))
                    .expect("image");
                run(Command::new("mkfs.xfs").args(["-q", "-f"]).arg(&image));
                run(Command::new("mount")
                    .arg("-o")
                    .arg("loop")
                    .arg(&image)
                    .arg(&root));
            }
        }
        let mut arena = Arena {
            dir,
            root,
            mounts: Vec::new(),
            sentinel: String::new(),
        };
        arena.mounts.push(arena.root.clone());
        fs::create_dir_all(arena.root.join("etc")).expect("etc");
        fs::write(
            arena.root.join("etc/passwd"),
            format!(
                "root:x:0:0:root:/root:/bin/sh\n\
                 etcd:x:{ETCD_UID}:{ETCD_GID}:etcd:/var/lib/etcd:/usr/sbin/nologin\n\
                 kubelet:x:1001:1001::/:/usr/sbin/nologin\n"
            ),
        )
        .expect("passwd");
        fs::write(
            arena.root.join("etc/group"),
            format!("root:x:0:\netcd:x:{ETCD_GID}:\nkubelet:x:1001:\n"),
        )
        .expect("group");
        arena.make_sentinel();
        arena.sentinel = arena.sentinel_digest();
        arena
    }

    /// `ROOT/rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// A scratch directory outside the root (same test, not mounted).
    pub fn outside(&self) -> PathBuf {
        let outside = self.dir.path().join("outside");
        fs::create_dir_all(&outside).expect("outside");
        outside
    }

    /// The etcd data a node must never lose: files of several sizes and
    /// modes, a subdirectory, a symlink and a hard link, every object
    /// labelled etcd_var_t and owned by etcd.
    fn make_sentinel(&self) {
        let etcd = self.path("var/lib/etcd");
        fs::create_dir_all(etcd.join("member/snap")).expect("etcd");
        fs::create_dir_all(etcd.join("member/wal")).expect("etcd");
        let db: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        fs::write(etcd.join("member/snap/db"), &db).expect("db");
        fs::write(
            etcd.join("member/wal/0000000000000000-0000000000000000.wal"),
            b"wal",
        )
        .expect("wal");
        fs::write(
            etcd.join("member/snap/0000000000000002-0000000000000010.snap"),
            b"snap",
        )
        .expect("snap");
        fs::hard_link(
            etcd.join("member/snap/db"),
            etcd.join("member/snap/db.link"),
        )
        .expect("hard link");
        symlink("member/snap", etcd.join("current")).expect("symlink");
        for (path, mode) in [
            ("", 0o700),
            ("member", 0o700),
            ("member/snap", 0o700),
            ("member/wal", 0o700),
            ("member/snap/db", 0o600),
            ("member/wal/0000000000000000-0000000000000000.wal", 0o600),
            ("member/snap/0000000000000002-0000000000000010.snap", 0o640),
        ] {
            fs::set_permissions(etcd.join(path), fs::Permissions::from_mode(mode)).expect("chmod");
        }
        for entry in walk(&etcd) {
            rustix::fs::chownat(
                rustix::fs::CWD,
                &entry,
                Some(rustix::fs::Uid::from_raw(ETCD_UID)),
                Some(rustix::fs::Gid::from_raw(ETCD_GID)),
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .expect("chown");
            set_label(&entry, ETCD_LABEL);
        }
    }

    /// SHA-256 over the sentinel tree: every object's relative path, type,
    /// mode, owner, label and contents (or link target).
    pub fn sentinel_digest(&self) -> String {
        tree_digest(&self.path("var/lib/etcd"))
    }

    /// Ends a test: the sentinel must be exactly as it was.
    pub fn finish(self) {
        let now = self.sentinel_digest();
        eprintln!("sentinel etcd tree sha256 {} -> {now}", self.sentinel);
        assert_eq!(now, self.sentinel, "the sentinel etcd tree changed");
    }

    /// Mounts something the test needs (a bind mount, a nested tmpfs);
    /// unmounted when the arena drops.
    pub fn mount(&mut self, args: &[&OsStr], target: &Path) {
        let mut command = Command::new("mount");
        command.args(args).arg(target);
        run(&mut command);
        self.mounts.push(target.to_path_buf());
    }

    /// `semanifest ARGS...`.
    pub fn semanifest(&self, args: &[&OsStr]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_semanifest"))
            .args(args)
            .output()
            .expect("run semanifest")
    }

    /// `semanifest COMMAND --root ROOT ARGS...`.
    pub fn on_root(&self, command: &str, args: &[&str]) -> Output {
        let mut all: Vec<&OsStr> = vec![OsStr::new(command), OsStr::new("--root")];
        all.push(self.root.as_os_str());
        all.extend(args.iter().map(OsStr::new));
        self.semanifest(&all)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for target in self.mounts.iter().rev() {
            let _ = Command::new("umount").arg("-l").arg(target).output();
        }
    }
}

/// Moves the calling thread (one test) into a mount namespace of its own,
/// with every mount private, once.
fn private_mount_namespace() {
    thread_local!(static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    if DONE.with(|done| done.replace(true)) {
        return;
    }
    // SAFETY: only the mount namespace (and with it the thread's fs
    // context) is unshared; the fd table stays shared, which is what the
    // `unsafe` guards against.
    #[allow(unsafe_code)]
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }
        .expect("unshare(CLONE_NEWNS): the node tests need root");
    rustix::mount::mount_change(
        "/",
        rustix::mount::MountPropagationFlags::PRIVATE | rustix::mount::MountPropagationFlags::REC,
    )
    .expect("make / rprivate");
}

pub fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every object at and below `top`, sorted, symlinks not followed.
pub fn walk(top: &Path) -> Vec<PathBuf> {
    let mut out = vec![top.to_path_buf()];
    let mut index = 0;
    while index < out.len() {
        let path = out[index].clone();
        index += 1;
        let meta = fs::symlink_metadata(&path).expect("lstat");
        if meta.is_dir() {
            let mut children: Vec<PathBuf> = fs::read_dir(&path)
                .expect("read_dir")
                .map(|entry| entry.expect("entry").path())
                .collect();
            children.sort();
            out.extend(children);
        }
    }
    out.sort();
    out
}

/// SHA-256 over the objects at and below `top` (see `sentinel_digest`).
pub fn tree_digest(top: &Path) -> String {
    let mut hasher = Sha256::new();
    for path in walk(top) {
        let meta = fs::symlink_metadata(&path).expect("lstat");
        let rel = path.strip_prefix(top).expect("below");
        hasher.update(rel.as_os_str().as_bytes());
        hasher.update([0]);
        hasher.update(format!("{:o} {} {}\0", meta.mode(), meta.uid(), meta.gid()));
        hasher.update(label_of(&path).unwrap_or_default());
        hasher.update([0]);
        if meta.file_type().is_symlink() {
            hasher.update(
                fs::read_link(&path)
                    .expect("readlink")
                    .as_os_str()
                    .as_bytes(),
            );
        } else if meta.is_file() {
            hasher.update(fs::read(&path).expect("read"));
        }
        hasher.update([0xff]);
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The `security.selinux` value of `path` itself (not a symlink's target),
/// without its trailing NUL.
pub fn label_of(path: &Path) -> Option<String> {
    let mut buffer = vec![0u8; 1024];
    match rustix::fs::lgetxattr(path, "security.selinux", &mut buffer) {
        Ok(len) => {
            let value = &buffer[..len];
            let value = value.strip_suffix(b"\0").unwrap_or(value);
            Some(String::from_utf8_lossy(value).into_owned())
        }
        Err(_) => None,
    }
}

pub fn set_label(path: &Path, label: &str) {
    let mut value = label.as_bytes().to_vec();
    value.push(0);
    rustix::fs::lsetxattr(
        path,
        "security.selinux",
        &value,
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap_or_else(|error| panic!("label {}: {error}", path.display()));
}

pub fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn stdout_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("lstat").mode() & 0o7777
}

pub fn owner_of(path: &Path) -> (u32, u32) {
    let meta = fs::symlink_metadata(path).expect("lstat");
    (meta.uid(), meta.gid())
}

/// The default layout with `owner:` lines added (etcd by name, the pods'
/// root by ids), written next to the root.
pub fn layout_with_owners(arena: &Arena) -> PathBuf {
    let text = include_str!("../../../layouts/structured-var.yaml")
        .replace(
            "      mode: \"0700\"\n      access: { etcd: write }",
            "      mode: \"0700\"\n      owner: etcd\n      access: { etcd: write }",
        )
        .replace(
            "      access: { pods: write, kubelet: write, containerd: write }\n      hostPath: true",
            "      owner: \"1000:1000\"\n      access: { pods: write, kubelet: write, containerd: write }\n      hostPath: true",
        );
    assert!(text.contains("owner: etcd") && text.contains("owner: \"1000:1000\""));
    let path = arena.outside().join("owners.yaml");
    fs::write(&path, text).expect("layout");
    path
}

/// A root with the default layout placed.
pub fn placed(fs: Fs) -> Arena {
    let arena = Arena::new(fs);
    let output = arena.on_root("apply", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    arena
}

pub fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("JSON: {e}\n{}{}", stdout_of(output), stderr_of(output)))
}

/// SHA-256 of `path`'s tree, or `absent` when it does not exist.
pub fn digest(path: &Path) -> String {
    if fs::symlink_metadata(path).is_err() {
        return "absent".to_owned();
    }
    tree_digest(path)
}

/// The names in a directory.
pub fn names(dir: &Path) -> std::collections::BTreeSet<std::ffi::OsString> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("entry").file_name())
        .collect()
}

/// The declared paths below `/var/lib/containerd`: cache like it and not
/// protected, so a prune of it empties them and keeps them (with the
/// undeclared directory on the way to the sandboxes).
pub const CONTAINERD_NESTED: [&str; 2] = [
    "var/lib/containerd/io.containerd.snapshotter.v1.overlayfs",
    "var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes",
];

/// What `/var/lib/containerd` holds once emptied, besides `others`: the
/// ways to its declared paths.
pub fn containerd_names(others: &[&str]) -> std::collections::BTreeSet<std::ffi::OsString> {
    [
        "io.containerd.grpc.v1.cri",
        "io.containerd.snapshotter.v1.overlayfs",
    ]
    .iter()
    .chain(others)
    .map(std::ffi::OsString::from)
    .collect()
}

/// `/var/lib/containerd` emptied: nothing left in it but its declared
/// paths, each empty, and the directory on the way to one.
pub fn assert_containerd_emptied(arena: &Arena) {
    let containerd = arena.path("var/lib/containerd");
    assert_eq!(names(&containerd), containerd_names(&[]));
    assert_eq!(
        names(&containerd.join("io.containerd.grpc.v1.cri")),
        ["sandboxes"].map(std::ffi::OsString::from).into()
    );
    for rel in CONTAINERD_NESTED {
        assert!(names(&arena.path(rel)).is_empty(), "{rel} emptied");
    }
}

/// Unmounts what the test mounted at `target`. The test's own thread
/// must hold no fd below it: a child another test spawns meanwhile
/// copies the process's fd table, and its copy keeps the mount busy
/// until that child has exec'd and been scheduled again.
pub fn umount(target: &Path) {
    run(Command::new("umount").arg(target));
}

/// A copy of the sentinel etcd tree outside the root, labelled and owned
/// as etcd's: what the controls attack instead of the sentinel itself.
pub fn decoy(arena: &Arena, name: &str) -> PathBuf {
    let decoy = arena.outside().join(name);
    run(Command::new("cp")
        .arg("-a")
        .arg(arena.path("var/lib/etcd"))
        .arg(&decoy));
    for entry in walk(&decoy) {
        set_label(&entry, ETCD_LABEL);
    }
    decoy
}

/// What a deleter that walks by path does to the contents of `dir`
/// (`find DIR -mindepth 1 -delete`: no `-xdev`, and the path itself is
/// taken as given): the naive implementation the controls run, in a
/// child process (see [`umount`]).
pub fn naive_empty(dir: &Path) {
    run(Command::new("find")
        .arg(dir)
        .args(["-mindepth", "1", "-delete"]));
}
