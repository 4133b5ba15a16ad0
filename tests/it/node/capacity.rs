//! `capacity:` and `mount: options:` on real filesystems of this host.
//!
//! Limits are enforced only where the kernel has quota support (the VM
//! suite's Debian kernel): here, `apply` must refuse a filesystem without
//! project quotas before changing anything, and tagging is proven on XFS,
//! which keeps project IDs on every inode without quota support, with
//! `apply --capacity tag-only`. `lsattr -p` (e2fsprogs) is the oracle for
//! project IDs and inherit flags. The live mount flags are read by
//! `apply --check` and `check --labels` and judged against `findmnt`.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::symlink;
use std::process::Command;

use super::arena::*;

/// The default layout with a capacity (and mount flags) on /var/mnt.
fn capacity_layout(arena: &Arena, capacity: &str, options: &str) -> String {
    let text = include_str!("../../../layouts/structured-var.yaml").replace(
        "      mount: { propagation: rshared }\n      removable: true",
        &format!(
            "      mount: {{ propagation: rshared{options} }}\n{capacity}      removable: true"
        ),
    );
    assert!(text.contains("removable: true") && text.contains(capacity));
    let path = arena.outside().join("capacity.yaml");
    fs::write(&path, text).expect("layout");
    path.to_str().expect("utf-8").to_owned()
}

const CAPACITY: &str = "      capacity: { limit: 64Mi, inodes: 1000 }\n";
/// `/var/mnt`'s project ID, derived from the path (docs/manifest.md).
const VAR_MNT_PROJECT: u32 = 1_164_479_881;

/// `lsattr -dp PATH`: (project ID, inherit flag `P`).
fn lsattr(path: &std::path::Path) -> (u32, bool) {
    let out = run(Command::new("lsattr").arg("-dp").arg(path));
    let mut fields = out.split_whitespace();
    let project = fields.next().expect("project").parse().expect("number");
    let flags = fields.next().expect("flags");
    (project, flags.contains('P'))
}

/// Every object at and below `top` (not following symlinks).
fn tree(top: &std::path::Path) -> Vec<std::path::PathBuf> {
    walk(top)
}

#[test]
fn refused_on_ext4_without_project_quotas_and_nothing_is_changed() {
    let arena = Arena::new(Fs::Ext4);
    let layout = capacity_layout(&arena, CAPACITY, "");
    let before = tree(&arena.root);
    let output = arena.on_root("apply", &["--layout", &layout]);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let mount = arena.root.display().to_string();
    assert!(
        stderr.contains(&format!("{mount}/var/mnt: `capacity:`"))
            && stderr.contains(&format!("the filesystem at {mount} (ext4 on /dev/loop"))
            && stderr.contains("mkfs.ext4 -O quota,project")
            && stderr.contains("-o prjquota"),
        "{stderr}"
    );
    assert_eq!(tree(&arena.root), before, "nothing may be created");
    // --check cannot judge it either.
    let output = arena.on_root("apply", &["--layout", &layout, "--check"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    // Control: without the capacity, the same apply places the layout.
    let output = arena.on_root("apply", &["--layout", &layout, "--capacity", "skip"]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(arena.path("var/mnt").is_dir());
    arena.finish();
}

#[test]
fn refused_on_tmpfs_and_on_xfs_without_quota_support() {
    for fs in [Fs::Tmpfs, Fs::Xfs] {
        let arena = Arena::new(fs);
        let layout = capacity_layout(&arena, CAPACITY, "");
        let output = arena.on_root("apply", &["--layout", &layout]);
        let stderr = stderr_of(&output);
        assert_eq!(output.status.code(), Some(2), "{fs:?}: {stderr}");
        let expected = match fs {
            Fs::Tmpfs => "is tmpfs: semanifest sets project quotas on ext4 and XFS only",
            _ => "mount it with `-o prjquota`",
        };
        assert!(stderr.contains(expected), "{fs:?}: {stderr}");
        assert!(!arena.path("var/mnt").exists(), "{fs:?}: nothing created");
        // df says why it cannot read the use, per path.
        let output = arena.on_root("df", &["--layout", &layout]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
        arena.finish();
    }
}

#[test]
fn tag_only_tags_every_object_sets_inherit_and_then_changes_nothing() {
    let mut arena = Arena::new(Fs::Xfs);
    let layout = capacity_layout(&arena, CAPACITY, "");
    // A tree written before the capacity existed: untagged.
    let mnt = arena.path("var/mnt");
    fs::create_dir_all(mnt.join("pod-a/deep/deeper")).expect("dirs");
    for i in 0..50 {
        fs::write(mnt.join(format!("pod-a/deep/f{i}")), vec![7u8; 4096]).expect("file");
    }
    fs::write(mnt.join("pod-a/deep/deeper/last"), b"x").expect("file");
    fs::hard_link(mnt.join("pod-a/deep/f0"), mnt.join("pod-a/link")).expect("hard link");
    run(Command::new("mkfifo").arg(mnt.join("pod-a/fifo")));
    symlink("deep/f1", mnt.join("pod-a/rel-link")).expect("symlink");
    // A symlink out of the capacity, to etcd's data: never followed.
    symlink(
        arena.path("var/lib/etcd/member/snap/db"),
        mnt.join("pod-a/to-etcd"),
    )
    .expect("symlink");
    // A mount below: never entered.
    let elsewhere = arena.outside().join("elsewhere");
    fs::create_dir_all(&elsewhere).expect("elsewhere");
    fs::write(elsewhere.join("theirs"), b"theirs").expect("file");
    fs::create_dir(mnt.join("bound")).expect("mount point");
    arena.mount(
        &[OsStr::new("--bind"), elsewhere.as_os_str()],
        &mnt.join("bound"),
    );
    // Control: the tree starts untagged, as the oracle sees it.
    for path in ["pod-a", "pod-a/deep", "pod-a/deep/f3"] {
        assert_eq!(lsattr(&mnt.join(path)).0, 0, "{path}");
    }
    let output = arena.on_root(
        "apply",
        &["--layout", &layout, "--capacity", "tag-only", "--check"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert!(
        stdout_of(&output).contains(&format!(
            "objects not tagged with project {VAR_MNT_PROJECT}"
        )),
        "{}",
        stdout_of(&output)
    );

    // First through open files only, as kernels before 6.17 must: the
    // FIFO and the two symlinks are never opened, so they stay untagged.
    let output = Command::new(env!("CARGO_BIN_EXE_semanifest"))
        .args([
            "apply",
            "--layout",
            &layout,
            "--capacity",
            "tag-only",
            "--json",
            "--root",
        ])
        .arg(&arena.root)
        .env("SEMANIFEST_TAG_BY_FD", "1")
        .output()
        .expect("semanifest");
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(
        stderr_of(&output).contains("3 symlinks, FIFOs, sockets or devices keep their project ID")
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let capacity = &report["capacities"][0];
    assert_eq!(capacity["untaggable"], 3, "{capacity}");
    // /var/mnt, pod-a, deep, deeper, 51 files, the hard link, the FIFO,
    // two symlinks, and the mount point (counted, not entered).
    assert_eq!(capacity["objects"], 60, "{capacity}");
    assert_eq!(capacity["mounts"], 1, "{capacity}");
    let untaggable = capacity["untaggable"].as_u64().expect("untaggable");
    assert_eq!(
        capacity["tagged"].as_u64().expect("tagged") + untaggable,
        58,
        "everything but the mount point, the hard link's inode once: {capacity}"
    );
    for path in tree(&mnt.join("pod-a")) {
        let meta = fs::symlink_metadata(&path).expect("lstat");
        if meta.is_dir() {
            assert_eq!(lsattr(&path), (VAR_MNT_PROJECT, true), "{}", path.display());
        } else if meta.is_file() {
            assert_eq!(lsattr(&path).0, VAR_MNT_PROJECT, "{}", path.display());
        }
    }
    assert_eq!(lsattr(&mnt), (VAR_MNT_PROJECT, true));
    // Never followed, never entered.
    assert_eq!(lsattr(&arena.path("var/lib/etcd/member/snap/db")).0, 0);
    assert_eq!(lsattr(&elsewhere.join("theirs")).0, 0);
    assert_eq!(lsattr(&elsewhere).0, 0);
    // By name (file_setattr, Linux 6.17): the three are tagged too.
    let output = arena.on_root(
        "apply",
        &["--layout", &layout, "--capacity", "tag-only", "--json"],
    );
    assert!(output.status.success(), "{}", stderr_of(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let capacity = &report["capacities"][0];
    let by_name = capacity["untaggable"] == 0;
    assert_eq!(
        capacity["tagged"],
        if by_name { 3 } else { 0 },
        "{capacity}"
    );
    // New objects inherit, with no apply.
    fs::write(mnt.join("pod-a/new"), b"new").expect("file");
    assert_eq!(lsattr(&mnt.join("pod-a/new")).0, VAR_MNT_PROJECT);

    // Idempotent.
    let output = arena.on_root("apply", &["--layout", &layout, "--capacity", "tag-only"]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert_eq!(stdout_of(&output), "", "a second run changes nothing");
    // Drift: one file moved out of the project is found and repaired.
    run(Command::new("chattr")
        .args(["-p", "7"])
        .arg(mnt.join("pod-a/deep/f9")));
    let output = arena.on_root(
        "apply",
        &["--layout", &layout, "--capacity", "tag-only", "--check"],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout_of(&output).contains(": 1 objects not tagged"),
        "{}",
        stdout_of(&output)
    );
    let output = arena.on_root("apply", &["--layout", &layout, "--capacity", "tag-only"]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert_eq!(lsattr(&mnt.join("pod-a/deep/f9")).0, VAR_MNT_PROJECT);
    arena.finish();
}

#[test]
fn a_project_id_set_in_the_layout_is_the_one_used() {
    let arena = Arena::new(Fs::Xfs);
    let layout = capacity_layout(&arena, "      capacity: { project: 4242 }\n", "");
    fs::create_dir_all(arena.path("var/mnt/a")).expect("dirs");
    let output = arena.on_root("apply", &["--layout", &layout, "--capacity", "tag-only"]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert_eq!(lsattr(&arena.path("var/mnt/a")), (4242, true));
    arena.finish();
}

/// The mount flags of `path` as `findmnt` reads them.
fn findmnt_options(path: &std::path::Path) -> String {
    run(Command::new("findmnt")
        .args(["-n", "-o", "VFS-OPTIONS", "--mountpoint"])
        .arg(path))
    .trim()
    .to_owned()
}

#[test]
fn live_mount_flags_are_checked_by_apply_and_check_labels() {
    let mut arena = Arena::new(Fs::Tmpfs);
    let layout = capacity_layout(&arena, "", ", options: [nodev, nosuid, noexec]");
    let root = arena.root.to_str().expect("utf-8").to_owned();
    let output = arena.on_root("apply", &["--layout", &layout]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let output = arena.on_root("relabel", &["--layout", &layout, &root]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let mnt = arena.path("var/mnt");
    let check_labels = |arena: &Arena| {
        arena.semanifest(&["check", "--layout", &layout, "--labels", &root].map(OsStr::new))
    };
    // Not mounted: the flags are missing.
    let output = arena.on_root("apply", &["--layout", &layout, "--check"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert!(
        stdout_of(&output).contains("var/mnt: mounted without nodev, nosuid, noexec"),
        "{}",
        stdout_of(&output)
    );
    let output = check_labels(&arena);
    assert_eq!(output.status.code(), Some(1), "{}", stdout_of(&output));
    assert!(stdout_of(&output).contains("is mounted without nodev, nosuid, noexec"));
    // What the mount unit does: bound onto itself, remounted with them.
    arena.mount(&[OsStr::new("--bind"), mnt.as_os_str()], &mnt);
    run(Command::new("mount")
        .args(["-o", "remount,bind,nodev,nosuid,noexec"])
        .arg(&mnt));
    let options = findmnt_options(&mnt);
    assert!(
        options.contains("noexec") && options.contains("nodev"),
        "{options}"
    );
    let output = arena.on_root("apply", &["--layout", &layout, "--check"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout_of(&output));
    let output = check_labels(&arena);
    assert_eq!(output.status.code(), Some(0), "{}", stdout_of(&output));
    // One flag dropped is one flag reported.
    run(Command::new("mount")
        .args(["-o", "remount,bind,nodev,nosuid,exec"])
        .arg(&mnt));
    let output = arena.on_root("apply", &["--layout", &layout, "--check"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout_of(&output).contains("mounted without noexec"),
        "{}",
        stdout_of(&output)
    );
    arena.finish();
}

#[test]
fn a_tree_deeper_than_path_max_and_the_open_file_limit_is_tagged_whole() {
    use rustix::fs::{mkdirat, openat, Mode, OFlags};
    let arena = Arena::new(Fs::Xfs);
    let layout = capacity_layout(&arena, CAPACITY, "");
    fs::create_dir_all(arena.path("var/mnt")).expect("var/mnt");
    // 3000 levels of `dd/`: 9000 bytes of path, past PATH_MAX (4096),
    // made a level at a time from the last one's fd.
    const DEPTH: u64 = 3000;
    let mut dir = openat(
        rustix::fs::CWD,
        arena.path("var/mnt"),
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .expect("open var/mnt");
    for _ in 0..DEPTH {
        mkdirat(&dir, "dd", Mode::from_raw_mode(0o755)).expect("mkdir");
        dir = openat(
            &dir,
            "dd",
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .expect("open");
    }
    drop(dir);
    // The walk holds about one fd per pending directory, never one per
    // level: 64 open files are plenty.
    let output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_semanifest"))
        .args([
            "apply",
            "--layout",
            &layout,
            "--capacity",
            "tag-only",
            "--json",
            "--root",
        ])
        .arg(&arena.root)
        .output()
        .expect("semanifest");
    assert!(output.status.success(), "{}", stderr_of(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let capacity = &report["capacities"][0];
    assert_eq!(capacity["objects"], DEPTH + 1, "{capacity}");
    assert_eq!(capacity["tagged"], DEPTH + 1, "{capacity}");
    assert_eq!(report["errors"], serde_json::json!([]));
    arena.finish();
}
