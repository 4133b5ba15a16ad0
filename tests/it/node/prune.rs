//! `semanifest prune`: declared paths emptied by lifecycle or name, each
//! directory kept with its mode, owner and label; never a symlink
//! followed, never a mount crossed, never another lifecycle or an
//! unselected protected path entered; crash-safe through the trash.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::arena::*;

const TRASH: &str = ".semanifest-trash";

/// A directory's own mode, owner and label.
fn dir_state(path: &Path) -> (u32, (u32, u32), Option<String>) {
    (mode_of(path), owner_of(path), label_of(path))
}

fn names_of(list: &[&str]) -> BTreeSet<OsString> {
    list.iter().map(OsString::from).collect()
}

/// A varied tree below `dir`: nested directories, files of several sizes
/// and modes, symlinks (dangling, relative, absolute), a hard link, a FIFO,
/// a non-UTF-8 name, an empty directory. Returns the objects made.
pub(super) fn fill(dir: &Path, tag: &str) -> u64 {
    let mut made = 0;
    fs::create_dir_all(dir.join("blobs/sha256")).expect("mkdir");
    fs::create_dir_all(dir.join("snapshots/1/fs/usr/bin")).expect("mkdir");
    fs::create_dir_all(dir.join("empty")).expect("mkdir");
    made += 8;
    for i in 0..20 {
        fs::write(
            dir.join(format!("blobs/sha256/{tag}{i:04}")),
            vec![b'a' + (i % 26) as u8; 100 * i],
        )
        .expect("blob");
        made += 1;
    }
    fs::write(dir.join("snapshots/1/fs/usr/bin/sh"), b"#!").expect("sh");
    fs::set_permissions(
        dir.join("snapshots/1/fs/usr/bin/sh"),
        fs::Permissions::from_mode(0o4755),
    )
    .expect("chmod");
    fs::hard_link(
        dir.join("snapshots/1/fs/usr/bin/sh"),
        dir.join("snapshots/1/fs/usr/bin/ash"),
    )
    .expect("hard link");
    symlink("sh", dir.join("snapshots/1/fs/usr/bin/bash")).expect("symlink");
    symlink("/nonexistent", dir.join("dangling")).expect("symlink");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        dir.join("fifo"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("fifo");
    fs::write(
        dir.join(OsStr::from_bytes(b"caf\xe9-\xff\nname")),
        b"latin-1",
    )
    .expect("non-UTF-8");
    made += 6;
    made
}

/// The declared paths whose trees a prune must leave alone.
fn digests(arena: &Arena, rels: &[&str]) -> BTreeMap<String, String> {
    rels.iter()
        .map(|rel| (rel.to_string(), digest(&arena.path(rel))))
        .collect()
}

/// Symlinks from a pruned tree into the etcd tree at every depth:
/// relative and absolute, to directories and to files. Each is checked to
/// lead into etcd (so a walker that follows them would reach it).
fn links_into_etcd(arena: &Arena, dir: &Path) {
    let etcd = arena.path("var/lib/etcd");
    let depth = dir
        .strip_prefix(&arena.root)
        .expect("below root")
        .components()
        .count();
    let up = "../".repeat(depth);
    fs::create_dir_all(dir.join("a/b/c")).expect("mkdir");
    let links: [(&str, PathBuf); 6] = [
        ("etcd-abs", etcd.clone()),
        ("etcd-rel", PathBuf::from(format!("{up}var/lib/etcd"))),
        ("a/db", etcd.join("member/snap/db")),
        (
            "a/b/member",
            PathBuf::from(format!("../../{up}var/lib/etcd/member")),
        ),
        ("a/b/c/wal", etcd.join("member/wal")),
        (
            "a/b/c/trailing",
            PathBuf::from(format!("{}/", etcd.display())),
        ),
    ];
    for (rel, target) in &links {
        symlink(target, dir.join(rel)).expect("symlink");
    }
    // Control: each really leads into etcd.
    assert!(fs::read_dir(dir.join("etcd-abs/member/snap")).is_ok());
    assert!(fs::read_dir(dir.join("etcd-rel/member/snap")).is_ok());
    assert_eq!(
        fs::read(dir.join("a/db")).expect("through the link").len(),
        300_000
    );
    assert!(fs::read_dir(dir.join("a/b/member/wal")).is_ok());
    assert!(fs::read_dir(dir.join("a/b/c/wal")).is_ok());
    assert!(fs::read_dir(dir.join("a/b/c/trailing/member")).is_ok());
}

#[test]
fn corrupt_containerd_on_a_control_plane_node() {
    for fs_kind in BOTH {
        let arena = placed(fs_kind);
        let containerd = arena.path("var/lib/containerd");
        let mut made = fill(&containerd, "c");
        links_into_etcd(&arena, &containerd);
        for rel in CONTAINERD_NESTED {
            made += fill(&arena.path(rel), "n");
        }
        fill(&arena.path("var/mnt"), "m");
        fill(&arena.path("var/lib/kubelet/pods"), "p");
        let state = dir_state(&containerd);
        let nested_states: Vec<_> = CONTAINERD_NESTED
            .iter()
            .map(|rel| dir_state(&arena.path(rel)))
            .collect();
        let others = [
            "var/mnt",
            "var/lib/kubelet",
            "var/lib/cni",
            "var/log",
            "var/run",
            "var/system",
            "etc",
        ];
        let before = digests(&arena, &others);

        let output = arena.on_root("prune", &["/var/lib/containerd", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        let report = json(&output);
        // The declared paths below, cache too, are emptied with it.
        let targets: Vec<(&str, &str)> = report["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .map(|t| {
                assert_eq!(t["lifecycle"], "cache");
                assert_eq!(t["complete"], true);
                (
                    t["layout_path"].as_str().expect("path"),
                    t["reason"].as_str().expect("reason"),
                )
            })
            .collect();
        assert_eq!(
            targets,
            [
                ("/var/lib/containerd", "named"),
                (
                    "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes",
                    "nested"
                ),
                (
                    "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs",
                    "nested"
                ),
            ]
        );
        // fill's objects, the six links and a/, a/b, a/b/c.
        assert_eq!(report["objects"], made + 9, "{report:#}");
        assert!(report["bytes"].as_u64().expect("bytes") > 0, "{report:#}");

        assert_containerd_emptied(&arena);
        assert_eq!(dir_state(&containerd), state, "the directory itself kept");
        for (rel, state) in CONTAINERD_NESTED.iter().zip(&nested_states) {
            assert_eq!(&dir_state(&arena.path(rel)), state, "{rel} kept");
        }
        assert_eq!(digests(&arena, &others), before, "nothing else changed");
        arena.finish();
    }
}

#[test]
fn upgrade_prunes_cache_keeping_var_mnt_and_etcd() {
    let mut arena = placed(Fs::Ext4);
    // /var/run is a tmpfs of its own, as the layout declares.
    let run = arena.path("var/run");
    arena.mount(
        &[OsStr::new("-t"), OsStr::new("tmpfs"), OsStr::new("none")],
        &run,
    );
    set_label(&run, "system_u:object_r:var_run_t:s0");
    for rel in [
        "var/lib/containerd",
        CONTAINERD_NESTED[0],
        CONTAINERD_NESTED[1],
        "var/system/overlays",
        "var/mnt",
        "var/run",
        "var/lib/kubelet/pods",
        "var/log/pods",
    ] {
        fill(&arena.path(rel), "u");
    }
    let kept = [
        "var/mnt",
        "var/run",
        "var/lib/kubelet",
        "var/log",
        "var/lib/cni",
        "etc",
    ];
    let before = digests(&arena, &kept);
    let emptied = [
        "var/lib/containerd",
        CONTAINERD_NESTED[0],
        CONTAINERD_NESTED[1],
        "var/system/overlays",
    ];
    let states: Vec<_> = emptied
        .iter()
        .map(|rel| dir_state(&arena.path(rel)))
        .collect();

    // A dry run says what would go and changes nothing.
    let dry = arena.on_root("prune", &["--lifecycle", "cache", "--dry-run", "--json"]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr_of(&dry));
    let dry = json(&dry);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(digests(&arena, &kept), before);
    assert!(!names(&arena.path("var/lib/containerd")).is_empty());

    let output = arena.on_root("prune", &["--lifecycle", "cache", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json(&output);
    let pruned: Vec<&str> = report["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .map(|t| t["layout_path"].as_str().expect("path"))
        .collect();
    assert_eq!(
        pruned,
        [
            "/var/lib/containerd",
            "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes",
            "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs",
            "/var/system/overlays"
        ]
    );
    assert_eq!(
        report["objects"], dry["objects"],
        "the dry run counted right"
    );
    // A dry run counts no bytes for files with several links (it cannot
    // see the last one go).
    assert!(
        dry["bytes"].as_u64() <= report["bytes"].as_u64(),
        "{dry:#}\n{report:#}"
    );
    assert!(dry["bytes"].as_u64() > Some(0), "{dry:#}");
    assert_containerd_emptied(&arena);
    assert!(names(&arena.path("var/system/overlays")).is_empty());
    for (rel, state) in emptied.iter().zip(&states) {
        assert_eq!(&dir_state(&arena.path(rel)), state, "{rel}");
    }
    assert_eq!(digests(&arena, &kept), before, "/var/mnt and the rest kept");

    // Control: the selection is what decides; ephemeral empties the tmpfs
    // at /var/run (a mount point itself) and nothing else.
    let output = arena.on_root("prune", &["--lifecycle", "ephemeral"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(names(&run).is_empty());
    assert_eq!(digest(&arena.path("var/mnt")), before["var/mnt"]);
    arena.finish();
}

/// Named paths: a same-lifecycle unprotected path below is emptied and
/// kept; a protected one, and one with another lifecycle, are kept whole.
#[test]
fn nested_paths_follow_their_lifecycle_and_protection() {
    let arena = placed(Fs::Tmpfs);
    for rel in [
        "var/lib/kubelet",
        "var/lib/kubelet/pods",
        "var/lib/kubelet/pki",
        "var/log",
        "var/log/pods",
        "var/log/audit",
    ] {
        fill(&arena.path(rel), "n");
    }
    let pki = digest(&arena.path("var/lib/kubelet/pki"));
    let audit = digest(&arena.path("var/log/audit"));
    let pods_state = dir_state(&arena.path("var/lib/kubelet/pods"));

    let output = arena.on_root("prune", &["/var/lib/kubelet", "/var/log/", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json(&output);
    let targets: Vec<(String, String)> = report["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .map(|t| {
            (
                t["layout_path"].as_str().expect("path").to_owned(),
                t["reason"].as_str().expect("reason").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        targets,
        [
            ("/var/lib/kubelet".to_owned(), "named".to_owned()),
            (
                "/var/lib/kubelet/device-plugins".to_owned(),
                "nested".to_owned()
            ),
            ("/var/lib/kubelet/plugins".to_owned(), "nested".to_owned()),
            (
                "/var/lib/kubelet/plugins_registry".to_owned(),
                "nested".to_owned()
            ),
            (
                "/var/lib/kubelet/pod-resources".to_owned(),
                "nested".to_owned()
            ),
            ("/var/lib/kubelet/pods".to_owned(), "nested".to_owned()),
            ("/var/log".to_owned(), "named".to_owned()),
            ("/var/log/pods".to_owned(), "nested".to_owned()),
        ]
    );
    assert_eq!(
        report["targets"][0]["kept"][0]["why"], "protected",
        "{report:#}"
    );
    assert_eq!(
        names(&arena.path("var/lib/kubelet")),
        names_of(&[
            "device-plugins",
            "pki",
            "plugins",
            "plugins_registry",
            "pod-resources",
            "pods"
        ])
    );
    for nested in [
        "device-plugins",
        "plugins",
        "plugins_registry",
        "pod-resources",
    ] {
        let path = arena.path(&format!("var/lib/kubelet/{nested}"));
        assert!(names(&path).is_empty(), "{nested}");
    }
    assert!(names(&arena.path("var/lib/kubelet/pods")).is_empty());
    assert_eq!(dir_state(&arena.path("var/lib/kubelet/pods")), pods_state);
    assert_eq!(digest(&arena.path("var/lib/kubelet/pki")), pki);
    assert_eq!(names(&arena.path("var/log")), names_of(&["audit", "pods"]));
    assert_eq!(digest(&arena.path("var/log/audit")), audit);

    // Control: named itself, a protected path is emptied.
    let output = arena.on_root("prune", &["/var/log/audit"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(names(&arena.path("var/log/audit")).is_empty());
    arena.finish();
}

/// Naming /var: undeclared directories on the way to kept paths are
/// emptied of everything else and kept; other lifecycles and protected
/// paths are kept whole.
#[test]
fn undeclared_directories_on_the_way_are_emptied_and_kept() {
    let arena = placed(Fs::Tmpfs);
    fill(&arena.path("var/lib/stray"), "s");
    fs::write(arena.path("var/lib/file"), "x").expect("file");
    fill(&arena.path("var/system/other"), "o");
    fill(&arena.path("var/lib/containerd"), "c");
    fill(&arena.path("var/tmp"), "t");
    let containerd = digest(&arena.path("var/lib/containerd"));
    let kubelet = digest(&arena.path("var/lib/kubelet"));
    let output = arena.on_root("prune", &["/var"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(
        names(&arena.path("var")),
        names_of(&["lib", "log", "mnt", "run", "system"])
    );
    assert_eq!(
        names(&arena.path("var/lib")),
        names_of(&["cni", "containerd", "etcd", "kubelet"])
    );
    assert_eq!(names(&arena.path("var/system")), names_of(&["overlays"]));
    assert_eq!(digest(&arena.path("var/lib/containerd")), containerd);
    assert_eq!(digest(&arena.path("var/lib/kubelet")), kubelet);
    arena.finish();
}

/// The pruned path, an ancestor of it, or an undeclared directory on the
/// way being a symlink into etcd: an error that names it, nothing followed.
#[test]
fn symlinks_into_etcd_are_never_followed_at_any_position() {
    for fs_kind in BOTH {
        let arena = placed(fs_kind);
        let containerd = arena.path("var/lib/containerd");
        // Entries at every depth (checked to lead into etcd).
        links_into_etcd(&arena, &containerd);
        let output = arena.on_root("prune", &["/var/lib/containerd"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        assert_containerd_emptied(&arena);

        // The pruned path itself (its declared paths, emptied, go too).
        fs::remove_dir_all(&containerd).expect("rm");
        symlink("etcd", &containerd).expect("symlink");
        assert!(
            fs::read_dir(&containerd).is_ok(),
            "control: leads into etcd"
        );
        let output = arena.on_root("prune", &["/var/lib/containerd"]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
        let line = format!(
            "semanifest: error: {}: {} is a symlink",
            containerd.display(),
            containerd.display()
        );
        assert!(
            stderr_of(&output).contains(&line),
            "{line}\n{}",
            stderr_of(&output)
        );
        fs::remove_file(&containerd).expect("rm");
        fs::create_dir(&containerd).expect("mkdir");

        // An ancestor of the pruned path.
        let system = arena.path("var/system");
        fs::remove_dir_all(&system).expect("rm");
        symlink("lib/etcd", &system).expect("symlink");
        let output = arena.on_root("prune", &["--lifecycle", "cache"]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
        assert!(
            stderr_of(&output).contains(&format!("{} is a symlink", system.display())),
            "{}",
            stderr_of(&output)
        );

        // A declared path below a pruned one, emptied with it (same
        // lifecycle): /var/log/pods when /var/log is named.
        let pods = arena.path("var/log/pods");
        fs::remove_dir(&pods).expect("rmdir");
        symlink("../lib/etcd", &pods).expect("symlink");
        assert!(
            fs::read_dir(pods.join("member")).is_ok(),
            "control: leads into etcd"
        );
        fs::write(arena.path("var/log/syslog"), "x").expect("file");
        let output = arena.on_root("prune", &["/var/log"]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
        assert!(
            stderr_of(&output).contains(&format!("{} is a symlink", pods.display())),
            "{}",
            stderr_of(&output)
        );
        assert!(
            !arena.path("var/log/syslog").exists(),
            "the rest was pruned"
        );
        assert_eq!(
            fs::read_link(&pods).expect("kept"),
            Path::new("../lib/etcd")
        );
        fs::remove_file(&pods).expect("rm");
        fs::create_dir(&pods).expect("mkdir");

        // An undeclared directory on the way to a kept path (/var/system
        // leads to /var/system/overlays when /var is pruned).
        fs::write(arena.path("var/tmp-file"), "x").expect("file");
        let output = arena.on_root("prune", &["/var"]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
        assert!(
            stderr_of(&output).contains(&format!(
                "{}: a symlink where the layout's paths below lead (never followed); kept",
                system.display()
            )),
            "{}",
            stderr_of(&output)
        );
        assert!(!arena.path("var/tmp-file").exists(), "the rest was pruned");
        fs::remove_file(&system).expect("rm");
        let output = arena.on_root("apply", &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        arena.finish();
    }
}

/// A bind mount below a pruned path (of etcd itself, of an etcd file, of
/// an outside directory): an error naming each, nothing under it touched,
/// the rest pruned.
#[test]
fn a_bind_mount_below_a_pruned_path_is_named_and_untouched() {
    for fs_kind in BOTH {
        let mut arena = placed(fs_kind);
        let containerd = arena.path("var/lib/containerd");
        fill(&containerd, "b");
        let outside = arena.outside().join("victim");
        fill(&outside, "v");
        let victim = digest(&outside);
        let etcd = arena.path("var/lib/etcd");
        let bind_dir = containerd.join(OsStr::from_bytes(b"snapshots/1/etcd-\xff"));
        let bind_file = containerd.join("blobs/db");
        let bind_outside = containerd.join("outside");
        fs::create_dir_all(&bind_dir).expect("mkdir");
        fs::write(&bind_file, "").expect("file");
        fs::create_dir_all(&bind_outside).expect("mkdir");
        arena.mount(&[OsStr::new("--bind"), etcd.as_os_str()], &bind_dir);
        arena.mount(
            &[
                OsStr::new("--bind"),
                etcd.join("member/snap/db").as_os_str(),
            ],
            &bind_file,
        );
        arena.mount(&[OsStr::new("--bind"), outside.as_os_str()], &bind_outside);
        // Control: the mounts expose etcd and the victim.
        assert_eq!(fs::read(&bind_file).expect("db").len(), 300_000);
        assert!(bind_dir.join("member/wal").is_dir());

        let output = arena.on_root("prune", &["/var/lib/containerd", "--json"]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
        let stderr = stderr_of(&output);
        for mount in [
            format!("{}/snapshots/1/etcd-\\xff", containerd.display()),
            bind_file.display().to_string(),
            bind_outside.display().to_string(),
        ] {
            let line = format!(
                "semanifest: error: {mount}: a mount point below {}: prune never crosses a \
                 mount; nothing under it was touched",
                containerd.display()
            );
            assert!(stderr.contains(&line), "{line}\n{stderr}");
        }
        assert_eq!(json(&output)["targets"][0]["complete"], false);
        assert_eq!(digest(&outside), victim, "the outside victim");
        // Only the ways to the mounts are left.
        assert_eq!(
            names(&containerd),
            containerd_names(&["blobs", "outside", "snapshots"])
        );
        assert_eq!(names(&containerd.join("blobs")), names_of(&["db"]));
        assert_eq!(names(&containerd.join("snapshots")), names_of(&["1"]));
        assert_eq!(
            names(&containerd.join("snapshots/1")),
            [OsString::from_vec(b"etcd-\xff".to_vec())].into()
        );
        // Control: unmounted, the same prune takes everything.
        for mount in [&bind_dir, &bind_file, &bind_outside] {
            run(Command::new("umount").arg(mount));
        }
        let output = arena.on_root("prune", &["/var/lib/containerd"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        assert_containerd_emptied(&arena);
        assert_eq!(digest(&outside), victim);
        arena.finish();
    }
}

#[test]
fn non_utf8_names_are_pruned_and_reported_escaped() {
    let arena = placed(Fs::Tmpfs);
    let containerd = arena.path("var/lib/containerd");
    let weird: [&[u8]; 5] = [b"\xff", b"a\nb", b"\xc3\x28", b"tab\there", b"\x1b[31m"];
    for name in weird {
        let dir = containerd.join(OsStr::from_bytes(name));
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(dir.join(OsStr::from_bytes(name)), name).expect("file");
    }
    assert_eq!(
        names(&containerd).len(),
        containerd_names(&[]).len() + weird.len(),
        "control: all made"
    );
    let output = arena.on_root("prune", &["/var/lib/containerd", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(json(&output)["objects"], 2 * weird.len());
    assert_containerd_emptied(&arena);
    arena.finish();
}

/// Deeper than PATH_MAX: nothing is ever resolved by its whole path.
#[test]
fn a_tree_deeper_than_path_max_is_pruned() {
    for fs_kind in BOTH {
        let arena = placed(fs_kind);
        let containerd = arena.path("var/lib/containerd");
        let name = "d".repeat(250);
        let levels = 40;
        let mut dir = rustix::fs::open(
            &containerd,
            rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .expect("open");
        for _ in 0..levels {
            rustix::fs::mkdirat(&dir, name.as_str(), rustix::fs::Mode::from_raw_mode(0o755))
                .expect("mkdirat");
            rustix::fs::openat(
                &dir,
                "f",
                rustix::fs::OFlags::CREATE
                    | rustix::fs::OFlags::WRONLY
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::from_raw_mode(0o644),
            )
            .expect("file");
            dir = rustix::fs::openat(
                &dir,
                name.as_str(),
                rustix::fs::OFlags::DIRECTORY
                    | rustix::fs::OFlags::RDONLY
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .expect("openat");
        }
        // Control: the deepest directory has no usable path.
        let deepest: PathBuf = std::iter::repeat_n(name.as_str(), levels).collect();
        let deepest = containerd.join(deepest);
        assert!(deepest.as_os_str().len() > 4096);
        assert_eq!(
            fs::metadata(&deepest).map_err(|e| e.raw_os_error()).err(),
            Some(Some(rustix::io::Errno::NAMETOOLONG.raw_os_error()))
        );
        let output = arena.on_root("prune", &["/var/lib/containerd", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        assert_eq!(json(&output)["objects"], 2 * levels as u64);
        assert_containerd_emptied(&arena);
        arena.finish();
    }
}

#[test]
fn a_read_only_filesystem_is_reported_and_left_alone() {
    let mut arena = placed(Fs::Ext4);
    let containerd = arena.path("var/lib/containerd");
    fill(&containerd, "r");
    let before = digest(&arena.path("var"));
    let root = arena.root.clone();
    arena.mount(&[OsStr::new("-o"), OsStr::new("remount,ro")], &root);
    let output = arena.on_root("prune", &["--lifecycle", "cache"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    let line = format!(
        "semanifest: error: {}/{TRASH}: cannot create: read-only filesystem",
        containerd.display()
    );
    assert!(
        stderr_of(&output).contains(&line),
        "{line}\n{}",
        stderr_of(&output)
    );
    assert_eq!(digest(&arena.path("var")), before);
    // Control: read-write again, the same prune empties it.
    arena.mount(&[OsStr::new("-o"), OsStr::new("remount,rw")], &root);
    let output = arena.on_root("prune", &["--lifecycle", "cache"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_containerd_emptied(&arena);
    arena.finish();
}

#[test]
fn permission_errors_are_reported_and_the_rest_pruned() {
    let arena = placed(Fs::Ext4);
    let containerd = arena.path("var/lib/containerd");
    fill(&containerd, "p");
    let as_nobody = || {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_semanifest"))
            .args(["prune", "/var/lib/containerd", "--root"])
            .arg(&arena.root)
            .output()
            .expect("setpriv")
    };
    // As nobody: containerd (0700) cannot be listed, then (0755) the
    // trash cannot be made; nothing moves.
    for (mode, line) in [
        (
            0o700,
            format!("{}: cannot open: Permission denied", containerd.display()),
        ),
        (
            0o755,
            format!(
                "{}/{TRASH}: cannot create: Permission denied",
                containerd.display()
            ),
        ),
    ] {
        fs::set_permissions(&containerd, fs::Permissions::from_mode(mode)).expect("chmod");
        let before = digest(&arena.path("var"));
        let output = as_nobody();
        assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
        let line = format!("semanifest: error: {line}");
        assert!(
            stderr_of(&output).contains(&line),
            "{line}\n{}",
            stderr_of(&output)
        );
        assert_eq!(digest(&arena.path("var")), before);
    }
    fs::set_permissions(&containerd, fs::Permissions::from_mode(0o700)).expect("chmod");

    // As root, an immutable entry cannot move and one deep in a tree
    // cannot be deleted: both named, everything else goes.
    fs::write(containerd.join("locked"), "immutable").expect("file");
    run(Command::new("chattr")
        .arg("+i")
        .arg(containerd.join("locked")));
    run(Command::new("chattr")
        .arg("+i")
        .arg(containerd.join("snapshots/1/fs/usr/bin/sh")));
    let output = arena.on_root("prune", &["/var/lib/containerd", "--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    let stderr = stderr_of(&output);
    for line in [
        format!(
            "{}/locked: cannot move into the trash: Operation not permitted",
            containerd.display()
        ),
        format!(
            "{}/{TRASH}/snapshots/1/fs/usr/bin/sh: cannot remove: Operation not permitted",
            containerd.display()
        ),
    ] {
        assert!(stderr.contains(&line), "{line}\n{stderr}");
    }
    assert_eq!(names(&containerd), containerd_names(&["locked", TRASH]));
    // Control: once mutable, a rerun empties the trash left behind too.
    run(Command::new("chattr")
        .arg("-i")
        .arg(containerd.join("locked")));
    run(Command::new("chattr")
        .arg("-i")
        .arg(containerd.join(format!("{TRASH}/snapshots/1/fs/usr/bin/sh"))));
    let output = arena.on_root("prune", &["/var/lib/containerd", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json(&output);
    assert!(
        report["targets"][0]["leftover_objects"].as_u64() >= Some(6),
        "{report:#}"
    );
    assert_containerd_emptied(&arena);
    arena.finish();
}

/// A `.semanifest-trash` without semanifest's mark (a pod may write one
/// into a hostPath root) is never emptied, and the directory holding it is
/// not pruned; with the mark it is a leftover and is emptied.
#[test]
fn a_foreign_trash_is_never_emptied() {
    let arena = placed(Fs::Tmpfs);
    let mnt = arena.path("var/mnt");
    fill(&mnt, "f");
    let foreign = mnt.join(TRASH);
    fs::create_dir(&foreign).expect("mkdir");
    fs::write(foreign.join("pod-data"), "mine").expect("data");
    let before = digest(&mnt);
    let output = arena.on_root("prune", &["/var/mnt"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    let line = format!(
        "semanifest: error: {}: not a trash semanifest made (no trusted.semanifest mark): never \
         emptied",
        foreign.display()
    );
    assert!(
        stderr_of(&output).contains(&line),
        "{line}\n{}",
        stderr_of(&output)
    );
    assert_eq!(digest(&mnt), before, "nothing in it pruned");
    // Neither does apply empty it.
    let output = arena.on_root("apply", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(digest(&mnt), before);

    // An empty unmarked one (a crash between mkdir and the mark) is
    // removed and the prune goes on.
    fs::remove_file(foreign.join("pod-data")).expect("rm");
    let output = arena.on_root("prune", &["/var/mnt"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(names(&mnt).is_empty());

    // Control: with the mark, the same directory is ours and emptied.
    fill(&mnt, "g");
    fs::create_dir(&foreign).expect("mkdir");
    fs::write(foreign.join("leftover"), "old").expect("data");
    run(Command::new("setfattr")
        .args(["-n", "trusted.semanifest", "-v", "trash"])
        .arg(&foreign));
    let output = arena.on_root("prune", &["/var/mnt", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(json(&output)["targets"][0]["leftover_objects"], 1);
    assert!(names(&mnt).is_empty());
    arena.finish();
}

/// One object's description for the crash checks (no name: entries may
/// sit in the trash).
fn object_digest(path: &Path) -> String {
    let meta = fs::symlink_metadata(path).expect("lstat");
    let mut hasher = Sha256::new();
    hasher.update(format!("{:o} {} {}\0", meta.mode(), meta.uid(), meta.gid()));
    if meta.file_type().is_symlink() {
        hasher.update(
            fs::read_link(path)
                .expect("readlink")
                .as_os_str()
                .as_bytes(),
        );
    } else if meta.is_file() {
        hasher.update(fs::read(path).expect("read"));
    }
    format!("{:x}", hasher.finalize())
}

/// Every object below `top` (included, as ``) by relative path.
fn objects(top: &Path) -> BTreeMap<Vec<u8>, String> {
    walk(top)
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(top).expect("below");
            (rel.as_os_str().as_bytes().to_vec(), object_digest(&path))
        })
        .collect()
}

type Entries = BTreeMap<OsString, BTreeMap<Vec<u8>, String>>;

/// A large tree for the crash test: many entries (so kills land while
/// they move) holding many objects (and while they are deleted).
fn large_tree(dir: &Path) -> Entries {
    for i in 0..12_000 {
        fs::write(dir.join(format!("f{i:05}")), format!("{i}")).expect("file");
    }
    for i in 0..150 {
        let sub = dir.join(format!("d{i:04}"));
        for j in 0..5 {
            let leaf = sub.join(format!("s{j}"));
            fs::create_dir_all(&leaf).expect("mkdir");
            for k in 0..30 {
                fs::write(leaf.join(format!("{k}")), format!("{i}/{j}/{k}")).expect("file");
            }
            symlink("../../../etcd", leaf.join("link")).expect("symlink");
        }
    }
    // Not the ways to the declared paths below: they stay, emptied.
    let kept = containerd_names(&[]);
    names(dir)
        .into_iter()
        .filter(|name| !kept.contains(name))
        .map(|name| {
            let entry = objects(&dir.join(&name));
            (name, entry)
        })
        .collect()
}

/// What a killed prune may leave: each entry in place and whole, or in
/// the trash (under its own name) with what is left of it unchanged; while
/// any entry is still in place none has been deleted (the ways to the
/// declared paths below stay). `Ok` says where the kill landed.
fn check_crash_state(dir: &Path, original: &Entries) -> Result<String, String> {
    let trash = dir.join(TRASH);
    let kept = containerd_names(&[]);
    let mut in_place = BTreeSet::new();
    for name in names(dir) {
        if name == TRASH || kept.contains(&name) {
            continue;
        }
        let Some(objects_then) = original.get(&name) else {
            return Err(format!("{name:?} appeared in place"));
        };
        if &objects(&dir.join(&name)) != objects_then {
            return Err(format!("{name:?} changed in place"));
        }
        in_place.insert(name);
    }
    let mut in_trash = BTreeMap::new();
    if trash.is_dir() {
        for name in names(&trash) {
            let Some(objects_then) = original.get(&name) else {
                return Err(format!("{name:?} appeared in the trash"));
            };
            let now = objects(&trash.join(&name));
            if now.iter().any(|(rel, d)| objects_then.get(rel) != Some(d)) {
                return Err(format!("{name:?} changed in the trash"));
            }
            in_trash.insert(name, now.len() == objects_then.len());
        }
    }
    let missing = original
        .keys()
        .filter(|name| !in_place.contains(*name) && !in_trash.contains_key(*name))
        .count();
    let partial = in_trash.values().filter(|whole| !**whole).count();
    if !in_place.is_empty() && (missing > 0 || partial > 0) {
        return Err(format!(
            "{} entries in place, yet {missing} gone and {partial} partly deleted",
            in_place.len()
        ));
    }
    Ok(format!(
        "{} in place, {} in the trash ({partial} partly deleted), {missing} deleted",
        in_place.len(),
        in_trash.len()
    ))
}

/// kill -9 at random points of a prune of a large tree: every entry is in
/// place or in the trash, never lost elsewhere; a rerun (prune, or apply)
/// completes it.
#[test]
fn a_prune_killed_at_random_points_loses_nothing_and_a_rerun_completes_it() {
    let arena = placed(Fs::Tmpfs);
    let containerd = arena.path("var/lib/containerd");
    let original = large_tree(&containerd);
    let lib = names(&arena.path("var/lib"));
    let others = digests(&arena, &["var/mnt", "var/lib/kubelet", "var/log", "etc"]);

    // Control: the checker sees an entry lost while others are in place.
    fs::rename(containerd.join("f00007"), arena.path("lost")).expect("mv");
    assert!(check_crash_state(&containerd, &original).is_err());
    fs::rename(arena.path("lost"), containerd.join("f00007")).expect("mv back");
    assert!(check_crash_state(&containerd, &original).is_ok());

    // How long an uninterrupted run takes.
    let started = Instant::now();
    let output = arena.on_root("prune", &["/var/lib/containerd"]);
    let full = started.elapsed();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_containerd_emptied(&arena);

    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    eprintln!("full run {full:?}, seed {seed}");
    let mut landed = Vec::new();
    for round in 0..10 {
        assert_eq!(large_tree(&containerd), original);
        // xorshift: kill points spread over the whole run.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Half the points in the first half, where entries still move.
        let span = if round % 2 == 0 { 0.5 } else { 1.0 };
        let delay = full.mul_f64(span * (seed % 1000) as f64 / 1000.0);
        let mut child = Command::new(env!("CARGO_BIN_EXE_semanifest"))
            .args(["prune", "/var/lib/containerd", "--root"])
            .arg(&arena.root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(delay);
        child.kill().expect("kill -9");
        let status = child.wait().expect("wait");
        let state = check_crash_state(&containerd, &original)
            .unwrap_or_else(|problem| panic!("round {round}, kill after {delay:?}: {problem}"));
        eprintln!("round {round}: kill after {delay:?} ({status}): {state}");
        landed.push(state);
        assert_eq!(names(&arena.path("var/lib")), lib, "nothing moved out");
        // Reruns alternate between prune and apply (apply empties the trash
        // only; prune the rest too).
        if round % 2 == 1 {
            let output = arena.on_root("apply", &[]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
            // Gone, or empty and unmarked (killed between its mkdir and
            // its mark), which apply leaves and prune removes.
            let trash = containerd.join(TRASH);
            assert!(!trash.exists() || names(&trash).is_empty());
        }
        let output = arena.on_root("prune", &["/var/lib/containerd"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        assert_containerd_emptied(&arena);
    }
    eprintln!("kill points: {landed:#?}");
    assert_eq!(
        digests(&arena, &["var/mnt", "var/lib/kubelet", "var/log", "etc"]),
        others
    );
    arena.finish();
}

/// Bad input: nothing changes, exit 2 naming what is wrong.
#[test]
fn bad_selections_are_refused_before_anything_changes() {
    let arena = placed(Fs::Tmpfs);
    fill(&arena.path("var/lib/containerd"), "x");
    let before = digest(&arena.path("var"));
    for (args, message) in [
        (
            &["/var/lib/nope"][..],
            "/var/lib/nope: not a path of the layout",
        ),
        (
            &["var/lib/containerd"][..],
            "var/lib/containerd: a relative path; prune takes layout paths, which are absolute",
        ),
        (
            &["--lifecycle", "persistent"][..],
            "persistent paths are never pruned by lifecycle",
        ),
        (
            &["--lifecycle", "forever"][..],
            "unknown lifecycle `forever` (expected `cache` or `ephemeral`)",
        ),
        (
            &["--lifecycle", "cache", "/var/mnt"][..],
            "cannot be used with",
        ),
        (&[][..], "required"),
    ] {
        let output = arena.on_root("prune", args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr_of(&output)
        );
        assert!(
            stderr_of(&output).contains(message),
            "{args:?}: {}",
            stderr_of(&output)
        );
    }
    assert_eq!(digest(&arena.path("var")), before);
    // Control: a good selection changes it.
    let output = arena.on_root("prune", &["/var/lib/containerd"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_ne!(digest(&arena.path("var")), before);
    arena.finish();
}

/// docs/prune-json.md lists every field the report has, and the report
/// every field the document lists.
#[test]
fn the_json_report_is_the_documented_one() {
    let arena = placed(Fs::Tmpfs);
    fill(&arena.path("var/lib/containerd"), "j");
    fill(&arena.path("var/lib/kubelet/pods"), "j");
    let output = arena.on_root(
        "prune",
        &["/var/lib/containerd", "/var/lib/kubelet", "--json"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json(&output);
    let doc = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/prune-json.md"))
        .expect("docs/prune-json.md");
    let documented: BTreeSet<String> = doc
        .lines()
        .filter(|line| line.starts_with("| `"))
        .flat_map(|line| {
            let cell = line.split('|').nth(1).unwrap_or_default();
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut seen = BTreeSet::new();
    let object_keys = |value: &serde_json::Value, seen: &mut BTreeSet<String>| {
        for key in value.as_object().expect("object").keys() {
            seen.insert(key.clone());
        }
    };
    object_keys(&report, &mut seen);
    for target in report["targets"].as_array().expect("targets") {
        object_keys(target, &mut seen);
    }
    assert_eq!(seen, documented, "fields and docs/prune-json.md agree");
    let kept = &report["targets"][0]["kept"];
    assert_eq!(kept, &serde_json::json!([]));
    let kubelet = report["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .find(|t| t["layout_path"] == "/var/lib/kubelet")
        .expect("the kubelet target");
    let kept = &kubelet["kept"][0];
    let keys: BTreeSet<&str> = kept
        .as_object()
        .expect("kept")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["lifecycle", "path", "why"].into());
    arena.finish();
}

/// A process swapping a directory of the pruned tree with a symlink into
/// etcd (`renameat2(RENAME_EXCHANGE)`, as fast as it can) while prune
/// runs: prune moves whichever is there by name and deletes through
/// directory fds, so etcd stays byte-identical. Control: the swap really
/// puts a link into etcd where the directory was.
#[test]
fn a_swapper_racing_prune_never_leads_it_into_etcd() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let arena = placed(Fs::Tmpfs);
    let containerd = arena.path("var/lib/containerd");
    let sentinel = arena.sentinel_digest();
    // The swapper thread is outside the test thread's mount namespace: it
    // reaches the tree through an fd.
    let dir = rustix::fs::open(
        &containerd,
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .expect("open");
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if rustix::fs::renameat_with(
                    &dir,
                    "d",
                    &dir,
                    "l",
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .is_ok()
                {
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            }
            dir
        })
    };
    let mut partial = 0;
    for _ in 0..150 {
        // Made aside and renamed in, so nothing is created through a link.
        let aside = containerd.join("d.new");
        fs::create_dir_all(aside.join("sub/deeper")).expect("mkdir");
        for i in 0..20 {
            fs::write(aside.join(format!("sub/f{i}")), "x").expect("file");
        }
        fs::rename(&aside, containerd.join("d")).expect("mv");
        symlink("../etcd", containerd.join("l")).expect("symlink");
        let output = arena.on_root("prune", &["/var/lib/containerd"]);
        match output.status.code() {
            Some(0) => {}
            Some(1) => partial += 1,
            other => panic!("{other:?}: {}", stderr_of(&output)),
        }
        assert_eq!(arena.sentinel_digest(), sentinel, "etcd changed");
        if names(&containerd) != containerd_names(&[]) {
            let output = arena.on_root("prune", &["/var/lib/containerd"]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let dir = swapper.join().expect("swapper");
    let swaps = swaps.load(Ordering::Relaxed);
    eprintln!("150 prunes against {swaps} exchanges; {partial} ended with exit 1");
    assert!(swaps > 0);
    // Control: an exchange puts the link into etcd where the directory was.
    fs::create_dir(containerd.join("d")).expect("mkdir");
    symlink("../etcd", containerd.join("l")).expect("symlink");
    rustix::fs::renameat_with(&dir, "d", &dir, "l", rustix::fs::RenameFlags::EXCHANGE)
        .expect("exchange");
    assert!(fs::read_dir(containerd.join("d/member/snap")).is_ok());
    arena.finish();
}

/// An image that holds `/var/run` as a symlink to `/run`, as Debian's
/// does: `--lifecycle ephemeral` stops at it (control), `--keep-symlink
/// /var/run` leaves it and what it points to alone, as apply does; a
/// kept symlink into the layout stays an error.
#[test]
fn keep_symlink_leaves_a_var_run_the_image_holds_as_a_link() {
    let arena = placed(Fs::Tmpfs);
    let var_run = arena.path("var/run");
    fs::remove_dir_all(&var_run).expect("rm var/run");
    fs::create_dir_all(arena.path("run/systemd")).expect("mkdir run");
    fs::write(arena.path("run/systemd/notify"), b"pid 1 state").expect("write");
    symlink("../run", &var_run).expect("symlink");
    let before = digests(&arena, &["run", "var/lib", "var/mnt"]);

    // Control: without the flag the symlink is an error, never followed.
    let output = arena.on_root("prune", &["--lifecycle", "ephemeral"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert!(
        stderr_of(&output).contains("is a symlink"),
        "{}",
        stderr_of(&output)
    );
    assert_eq!(digests(&arena, &["run", "var/lib", "var/mnt"]), before);

    let output = arena.on_root(
        "prune",
        &[
            "--lifecycle",
            "ephemeral",
            "--keep-symlink",
            "/var/run",
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json(&output);
    let target = &report["targets"][0];
    assert_eq!(target["layout_path"], "/var/run", "{report:#}");
    assert_eq!(target["symlink"], "/run", "{report:#}");
    assert_eq!(target["complete"], true);
    assert_eq!(report["objects"], 0);
    assert_eq!(fs::read_link(&var_run).expect("link"), Path::new("../run"));
    assert_eq!(digests(&arena, &["run", "var/lib", "var/mnt"]), before);
    let output = arena.on_root(
        "prune",
        &["--lifecycle", "ephemeral", "--keep-symlink", "/var/run"],
    );
    assert!(
        stdout_of(&output).contains("the image holds it as a symlink to /run"),
        "{}",
        stdout_of(&output)
    );

    // A symlink into the layout is not kept: an error, nothing followed.
    fs::remove_file(&var_run).expect("rm link");
    symlink("lib/etcd", &var_run).expect("symlink");
    let output = arena.on_root(
        "prune",
        &["--lifecycle", "ephemeral", "--keep-symlink", "/var/run"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert!(
        stderr_of(&output).contains("overlaps the layout"),
        "{}",
        stderr_of(&output)
    );
    // A path that is no layout path nor an ancestor of one: bad input.
    let output = arena.on_root(
        "prune",
        &["--lifecycle", "ephemeral", "--keep-symlink", "/srv/x"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    assert_eq!(digests(&arena, &["run", "var/lib", "var/mnt"]), before);
    arena.finish();
}
