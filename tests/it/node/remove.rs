//! `semanifest rm`: removes only strictly below a removable root, never
//! through a symlink or a mount, never a protected label, also while
//! another thread swaps directories for symlinks into the sentinel.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use fsroot::Root;
use node::{self, RemoveOptions};

use super::arena::*;

const MNT_LABEL: &str = "system_u:object_r:var_mnt_t:s0";

/// `semanifest rm --root ROOT ARGS...`.
fn rm(arena: &Arena, args: &[&OsStr]) -> Output {
    let mut all: Vec<&OsStr> = vec![OsStr::new("rm"), OsStr::new("--root")];
    all.push(arena.root.as_os_str());
    all.extend_from_slice(args);
    arena.semanifest(&all)
}

fn rm_paths(arena: &Arena, flags: &[&str], paths: &[&Path]) -> Output {
    let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
    args.extend(paths.iter().map(|p| p.as_os_str()));
    rm(arena, &args)
}

#[track_caller]
fn expect(output: &Output, code: i32, message: &str) {
    let stderr = stderr_of(output);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(message), "wanted {message:?} in:\n{stderr}");
}

fn exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// A small tree: `dir/{a, b/c, b/d/e, link -> ../..}`, labelled like a pod's.
fn tree(dir: &Path) {
    fs::create_dir_all(dir.join("b/d")).expect("tree");
    fs::write(dir.join("a"), vec![7u8; 10_000]).expect("a");
    fs::write(dir.join("b/c"), "c").expect("c");
    fs::write(dir.join("b/d/e"), "e").expect("e");
    symlink("../..", dir.join("link")).expect("link");
    for entry in walk(dir) {
        set_label(&entry, MNT_LABEL);
    }
}

#[test]
fn files_symlinks_and_trees_below_the_removable_root_go() {
    for fs_kind in BOTH {
        let arena = placed(fs_kind);
        let scratch = arena.path("var/mnt/scratch");
        tree(&scratch);
        fs::write(arena.path("var/mnt/file"), "x").expect("file");
        symlink(arena.path("var/lib/etcd"), arena.path("var/mnt/to-etcd")).expect("link");
        fs::create_dir(arena.path("var/mnt/empty")).expect("empty");

        // A file, by its path on this machine.
        let output = rm_paths(&arena, &[], &[&arena.path("var/mnt/file")]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        assert!(
            stdout_of(&output).starts_with("removed "),
            "{}",
            stdout_of(&output)
        );
        assert!(!exists(&arena.path("var/mnt/file")));

        // A symlink to etcd, as a layout path: the link goes, never its target.
        let output = rm(&arena, &[OsStr::new("/var/mnt/to-etcd")]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        assert!(!exists(&arena.path("var/mnt/to-etcd")));
        let output = rm(&arena, &[OsStr::new("-r"), OsStr::new("/var/mnt/empty")]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));

        // Dry run: counted, nothing removed.
        let output = rm(
            &arena,
            &[OsStr::new("-rn"), OsStr::new("--json"), scratch.as_os_str()],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        let dry = json(&output);
        assert_eq!(dry["dry_run"], true);
        assert_eq!(dry["objects"], 7, "{dry:#}");
        // Bytes are counted only when asked for (`--bytes`).
        assert_eq!(dry["bytes"], serde_json::Value::Null, "{dry:#}");
        assert_eq!(dry["operands"][0]["bytes"], serde_json::Value::Null);
        assert_eq!(tree_digest(&scratch).len(), 64);
        assert!(exists(&scratch.join("b/d/e")));

        let output = rm(
            &arena,
            &[
                OsStr::new("-r"),
                OsStr::new("--bytes"),
                OsStr::new("--json"),
                scratch.as_os_str(),
            ],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        let report = json(&output);
        assert_eq!(report["objects"], 7, "{report:#}");
        assert_eq!(report["operands"][0]["kind"], "directory");
        assert_eq!(report["operands"][0]["complete"], true);
        assert!(report["bytes"].as_u64().unwrap() >= 10_000, "{report:#}");
        assert_eq!(report["operands"][0]["bytes"], report["bytes"]);
        assert_eq!(report["refused"], serde_json::json!([]));
        assert!(!exists(&scratch));
        // The removable root and everything around it stays.
        assert!(arena.path("var/mnt").is_dir());
        assert_eq!(label_of(&arena.path("var/mnt")).as_deref(), Some(MNT_LABEL));
        arena.finish();
    }
}

/// Every refusal exits 2 with its own message and removes nothing, not
/// even the other operands; each has a control that the same shape inside
/// the removable root is removed.
#[test]
fn refusals_exit_2_with_their_message_and_remove_nothing() {
    let arena = placed(Fs::Tmpfs);
    let keep = arena.path("var/mnt/keep");
    fs::write(&keep, "k").expect("keep");
    fs::create_dir_all(arena.path("var/mnt/dir/sub")).expect("dir");
    let etcd_member = arena.path("var/lib/etcd/member");
    let cases: Vec<(Vec<OsString>, &str)> = vec![
        (
            vec!["-r".into(), arena.path("var/mnt").into()],
            "is the removable root /var/mnt itself; rm removes only what is below it",
        ),
        (
            vec!["-r".into(), "/var/mnt".into()],
            "is the removable root /var/mnt itself",
        ),
        (
            vec!["-r".into(), "/var/mnt/../lib/etcd".into()],
            "contains `..`; rm takes paths without `..`",
        ),
        (
            vec![arena.path("var/mnt/dir/../keep").into()],
            "contains `..`",
        ),
        (
            vec!["-r".into(), etcd_member.clone().into()],
            "not below a removable root of the layout (/var/mnt)",
        ),
        (
            vec!["-r".into(), "/var/lib/containerd".into()],
            "not below a removable root of the layout (/var/mnt); rm removes nothing else",
        ),
        (
            vec!["-r".into(), "/var".into()],
            "not below a removable root",
        ),
        (
            vec!["-r".into(), "/etc".into()],
            "not below a removable root of the layout (/var/mnt)",
        ),
        (
            vec!["-r".into(), "relative/outside".into()],
            "relative/outside: is a relative path; rm takes layout paths (/var/mnt/x, below \
             --root)",
        ),
        // Relative even where it would name a removable path from /.
        (
            vec!["-r".into(), "var/mnt/dir".into()],
            "var/mnt/dir: is a relative path",
        ),
        (
            vec![arena.path("var/mnt/dir").into()],
            "is a directory; rm -r removes it and everything below it",
        ),
    ];
    for (args, message) in &cases {
        let mut all: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        // A valid operand alongside: not removed either.
        all.push(keep.as_os_str());
        let output = rm(&arena, &all);
        expect(&output, 2, message);
        assert!(
            stderr_of(&output).contains("(nothing was removed)"),
            "{}",
            stderr_of(&output)
        );
        assert!(exists(&keep), "{args:?}");
        assert!(exists(&arena.path("var/mnt/dir/sub")), "{args:?}");
    }
    // A path that does not exist: an error (exit 1), the rest goes.
    let output = rm_paths(&arena, &[], &[&arena.path("var/mnt/nothing"), &keep]);
    expect(
        &output,
        1,
        "var/mnt/nothing: cannot remove: no such file or directory",
    );
    assert!(!exists(&keep));
    // Controls: the same shapes strictly inside the removable root go.
    let output = rm(&arena, &[OsStr::new("-r"), OsStr::new("/var/mnt/./dir/")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(!exists(&arena.path("var/mnt/dir")));
    arena.finish();
}

/// A layout whose removable root holds a protected path: refused by the
/// layout, whatever is on disk.
#[test]
fn a_protected_path_inside_a_removable_root_is_refused() {
    let arena = Arena::new(Fs::Tmpfs);
    let layout = arena.outside().join("scratch.yaml");
    fs::write(
        &layout,
        "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata: { name: scratch }\nspec:\n  \
         domains:\n    app: { type: app_t }\n  paths:\n    - path: /var/scratch\n      \
         type: scratch_t\n      access: { app: write }\n      removable: true\n    \
         - path: /var/scratch/keep\n      type: keep_t\n      access: { app: write }\n      \
         protected: true\n",
    )
    .expect("layout");
    let with = |args: &[&OsStr]| {
        let mut all = vec![OsStr::new("--layout"), layout.as_os_str()];
        all.extend_from_slice(args);
        rm(&arena, &all)
    };
    let output = arena.on_root("apply", &["--layout", layout.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    fs::create_dir_all(arena.path("var/scratch/keep/data")).expect("data");
    fs::create_dir_all(arena.path("var/scratch/other/data")).expect("data");
    for (path, message) in [
        (
            "/var/scratch/keep",
            "lies in the protected layout path /var/scratch/keep",
        ),
        (
            "/var/scratch/keep/data",
            "lies in the protected layout path",
        ),
        (
            "/var/mnt/x",
            "not below a removable root of the layout (/var/scratch)",
        ),
    ] {
        let output = with(&[OsStr::new("-r"), OsStr::new(path)]);
        expect(&output, 2, message);
    }
    assert!(arena.path("var/scratch/keep/data").is_dir());
    // Control.
    let output = with(&[OsStr::new("-r"), OsStr::new("/var/scratch/other")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(!exists(&arena.path("var/scratch/other")));
    arena.finish();
}

/// A symlink into etcd at every position of the path, with absolute and
/// relative targets: refused before the last component, unlinked (never
/// followed) as the last one.
#[test]
fn symlinks_into_etcd_at_every_position_are_never_followed() {
    for fs_kind in BOTH {
        let arena = placed(fs_kind);
        let etcd = arena.path("var/lib/etcd");
        // The path a/b/c/snap/db under /var/mnt mirrors etcd's member/snap/db.
        let components = ["a", "b", "c", "snap", "db"];
        for position in 0..components.len() {
            for absolute in [true, false] {
                let base = arena.path("var/mnt/t");
                let _ = fs::remove_dir_all(&base);
                let mut dir = base.clone();
                fs::create_dir_all(&dir).expect("base");
                for component in &components[..position] {
                    dir = dir.join(component);
                    fs::create_dir(&dir).expect("dir");
                }
                // The component at `position` is a symlink to etcd's
                // directory (or file) that a follower would reach.
                let target_in_etcd = match position {
                    0..=2 => etcd.join("member"),
                    3 => etcd.join("member/snap"),
                    _ => etcd.join("member/snap/db"),
                };
                let link = dir.join(components[position]);
                let target = if absolute {
                    target_in_etcd.clone()
                } else {
                    relative(&dir, &target_in_etcd)
                };
                symlink(&target, &link).expect("symlink");
                // Below the link, the rest of the path exists in etcd
                // (member/snap/db through "member" for a/b/c → see below).
                let operand: PathBuf = base.join(components.join("/"));
                let last = position == components.len() - 1;
                for flags in [&[][..], &["-r"][..]] {
                    let output = rm_paths(&arena, flags, &[&operand]);
                    if last {
                        assert_eq!(
                            output.status.code(),
                            Some(0),
                            "{position} {absolute}: {}",
                            stderr_of(&output)
                        );
                        assert!(!exists(&link));
                        symlink(&target, &link).expect("symlink again");
                    } else {
                        let named =
                            format!("{} is a symlink; rm never follows symlinks", link.display());
                        expect(&output, 2, &named);
                        assert!(exists(&link));
                    }
                    // Also the link's directory and everything up to it.
                    if position > 0 {
                        let output = rm_paths(&arena, &["-r", "--dry-run"], &[&link]);
                        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
                    }
                }
                // Removing the tree that holds the link removes the link.
                let output = rm_paths(&arena, &["-r"], &[&base]);
                assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
                assert!(!exists(&base));
                assert_eq!(arena.sentinel_digest(), tree_digest_of_sentinel(&arena));
            }
        }
        // The removable root itself a symlink into etcd, and /var one.
        let mnt = arena.path("var/mnt");
        fs::rename(&mnt, arena.path("var/mnt.real")).expect("move");
        symlink("lib/etcd", &mnt).expect("symlink");
        let output = rm_paths(&arena, &["-r"], &[&mnt.join("member")]);
        expect(
            &output,
            2,
            &format!(
                "{}: {} is a symlink on the way to the removable root /var/mnt",
                mnt.join("member").display(),
                mnt.display()
            ),
        );
        fs::remove_file(&mnt).expect("unlink");
        fs::rename(arena.path("var/mnt.real"), &mnt).expect("move back");
        fs::rename(arena.path("var"), arena.path("var.real")).expect("move");
        symlink("var.real", arena.path("var")).expect("symlink");
        fs::create_dir(arena.path("var.real/mnt/x")).expect("x");
        let output = rm_paths(&arena, &["-r"], &[&arena.path("var/mnt/x")]);
        expect(&output, 2, "is a symlink");
        assert!(exists(&arena.path("var.real/mnt/x")));
        fs::remove_file(arena.path("var")).expect("unlink");
        fs::rename(arena.path("var.real"), arena.path("var")).expect("move back");
        // Control: the same operand without the symlink goes.
        let output = rm_paths(&arena, &["-r"], &[&arena.path("var/mnt/x")]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        arena.finish();
    }
}

fn tree_digest_of_sentinel(arena: &Arena) -> String {
    tree_digest(&arena.path("var/lib/etcd"))
}

/// `target` relative to directory `from` (both absolute, no symlinks).
fn relative(from: &Path, target: &Path) -> PathBuf {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = target.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for component in &to[common..] {
        out.push(component);
    }
    out
}

/// A bind mount of etcd's directory (and of one etcd file) under /var/mnt,
/// and another filesystem: refused however they are named; control: once
/// unmounted, the same operands go.
#[test]
fn mounts_below_the_removable_root_are_never_crossed_or_removed() {
    let mut arena = placed(Fs::Ext4);
    let etcd = arena.path("var/lib/etcd");
    let bind_dir = arena.path("var/mnt/pod/etcd");
    let bind_file = arena.path("var/mnt/pod/db");
    let tmpfs = arena.path("var/mnt/other/tmp");
    fs::create_dir_all(&bind_dir).expect("mount point");
    fs::write(&bind_file, "").expect("mount point");
    fs::create_dir_all(&tmpfs).expect("mount point");
    arena.mount(&[OsStr::new("--bind"), etcd.as_os_str()], &bind_dir);
    arena.mount(
        &[
            OsStr::new("--bind"),
            etcd.join("member/snap/db").as_os_str(),
        ],
        &bind_file,
    );
    arena.mount(
        &[OsStr::new("-t"), OsStr::new("tmpfs"), OsStr::new("none")],
        &tmpfs,
    );
    fs::write(tmpfs.join("f"), "f").expect("f");
    let crossing = format!(
        "{} is a mount point; rm never crosses mounts",
        bind_dir.display()
    );
    let cases: Vec<(&[&str], PathBuf, &str)> = vec![
        (
            &["-r"],
            bind_dir.clone(),
            "is a mount point (another filesystem or a bind mount)",
        ),
        (
            &[],
            bind_file.clone(),
            "is a mount point (another filesystem or a bind mount)",
        ),
        (&[], bind_dir.join("member/snap/db"), &crossing),
        (&["-r"], arena.path("var/mnt/pod"), "holds the mount point"),
        (&["-r"], tmpfs.clone(), "is a mount point"),
        (
            &[],
            tmpfs.join("f"),
            "is a mount point; rm never crosses mounts",
        ),
        (
            &["-r"],
            arena.path("var/mnt/other"),
            "holds the mount point",
        ),
    ];
    for (flags, path, message) in &cases {
        let output = rm_paths(&arena, flags, &[path]);
        expect(&output, 2, message);
    }
    assert!(exists(&bind_dir.join("member/snap/db")));
    assert!(exists(&tmpfs.join("f")));
    // Control: unmounted, the same trees go.
    for target in [&bind_file, &bind_dir, &tmpfs] {
        run(Command::new("umount").arg(target));
    }
    let output = rm_paths(
        &arena,
        &["-r"],
        &[&arena.path("var/mnt/pod"), &arena.path("var/mnt/other")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(!exists(&arena.path("var/mnt/pod")));
    arena.finish();
}

/// A hard link to an etcd file under /var/mnt carries etcd's label: it is
/// refused as an operand and kept inside a tree (the rest goes, exit 2).
/// Control: a hard link to an unprotected file goes.
#[test]
fn a_hard_link_to_an_etcd_file_is_refused_by_its_label() {
    for fs_kind in BOTH {
        let arena = placed(fs_kind);
        let pod = arena.path("var/mnt/pod");
        tree(&pod);
        let link = pod.join("b/db");
        fs::hard_link(arena.path("var/lib/etcd/member/snap/db"), &link).expect("link");
        let output = rm_paths(&arena, &[], &[&link]);
        expect(
            &output,
            2,
            "db: labelled `system_u:object_r:etcd_var_t:s0`, a protected type: never removed",
        );
        let output = rm_paths(&arena, &["-r", "--json"], &[&pod]);
        expect(
            &output,
            2,
            "labelled `system_u:object_r:etcd_var_t:s0`, a protected type",
        );
        let report = json(&output);
        assert_eq!(report["refused_total"], 1, "{report:#}");
        assert_eq!(report["operands"][0]["complete"], false, "{report:#}");
        assert!(exists(&link));
        assert!(!exists(&pod.join("a")) && !exists(&pod.join("b/d")));
        assert!(stdout_of(&output).contains("\"refused\""));
        // Control: the same link to a file of the pod's goes.
        fs::remove_file(&link).expect("unlink");
        fs::write(pod.join("mine"), "m").expect("mine");
        set_label(&pod.join("mine"), MNT_LABEL);
        fs::hard_link(pod.join("mine"), &link).expect("link");
        let output = rm_paths(&arena, &["-r"], &[&pod]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        assert!(!exists(&pod));
        arena.finish();
    }
}

#[test]
fn non_utf8_names_are_removed_and_shown_escaped() {
    let arena = placed(Fs::Ext4);
    let name = OsString::from_vec(b"caf\xe9\xff\ndir".to_vec());
    let dir = arena.path("var/mnt").join(&name);
    fs::create_dir(&dir).expect("dir");
    for raw in [&b"\xfe\xfd"[..], b"ok", b"tab\there"] {
        fs::write(dir.join(OsStr::from_bytes(raw)), raw).expect("file");
    }
    let file = arena
        .path("var/mnt")
        .join(OsStr::from_bytes(b"lone\x80file"));
    fs::write(&file, "x").expect("file");
    let output = rm_paths(&arena, &["-r", "--json"], &[&dir, &file]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json(&output);
    assert_eq!(report["objects"], 5, "{report:#}");
    let shown = report["operands"][0]["path"].as_str().unwrap();
    assert!(shown.ends_with("/var/mnt/caf\\xe9\\xff\\ndir"), "{shown}");
    assert!(!exists(&dir) && !exists(&file));
    // Refusals name them escaped too.
    let bad = arena.path("var/mnt").join(OsStr::from_bytes(b"x\xff"));
    fs::create_dir(&bad).expect("dir");
    let output = rm_paths(&arena, &[], &[&bad]);
    expect(&output, 2, "/var/mnt/x\\xff: is a directory");
    arena.finish();
}

/// A chain of directories whose path is several times PATH_MAX goes
/// whole (every level is reached from its parent's fd).
#[test]
fn a_tree_deeper_than_path_max_is_removed() {
    use rustix::fs::{mkdirat, openat, Mode, OFlags};
    let arena = placed(Fs::Tmpfs);
    let top = arena.path("var/mnt/deep");
    fs::create_dir(&top).expect("top");
    let name = "d".repeat(250);
    let depth = 70; // 70 * 251 bytes: over four times PATH_MAX
    let mut fd = openat(
        rustix::fs::CWD,
        top.as_path(),
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open");
    for _ in 0..depth {
        mkdirat(&fd, name.as_str(), Mode::from_raw_mode(0o755)).expect("mkdir");
        let file = openat(
            &fd,
            "f",
            OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .expect("file");
        drop(file);
        fd = openat(
            &fd,
            name.as_str(),
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open");
    }
    drop(fd);
    let output = rm_paths(&arena, &["-r", "--json"], &[&top]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(json(&output)["objects"], 2 * depth + 1);
    assert!(!exists(&top));
    arena.finish();
}

#[test]
fn a_read_only_filesystem_is_reported_and_nothing_changes() {
    let mut arena = placed(Fs::Ext4);
    let pod = arena.path("var/mnt/pod");
    tree(&pod);
    fs::write(arena.path("var/mnt/file"), "f").expect("file");
    let before = tree_digest(&arena.path("var"));
    // /var/mnt bound onto itself read-only, as the layout's propagation
    // mount makes it a mount point of its own.
    let mnt = arena.path("var/mnt");
    arena.mount(&[OsStr::new("--bind"), mnt.as_os_str()], &mnt);
    arena.mount(&[OsStr::new("-o"), OsStr::new("remount,bind,ro")], &mnt);
    let output = rm_paths(&arena, &["-r"], &[&pod, &arena.path("var/mnt/file")]);
    expect(&output, 1, "cannot remove: read-only filesystem");
    assert_eq!(tree_digest(&arena.path("var")), before);
    // Control: writable again, the same run removes both.
    run(Command::new("mount")
        .args(["-o", "remount,bind,rw"])
        .arg(&mnt));
    let output = rm_paths(&arena, &["-r"], &[&pod, &arena.path("var/mnt/file")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(!exists(&pod));
    arena.finish();
}

#[test]
fn permission_errors_are_reported_per_object() {
    let arena = placed(Fs::Ext4);
    let pod = arena.path("var/mnt/pod");
    tree(&pod);
    // Root itself is refused by an immutable file.
    run(Command::new("chattr").arg("+i").arg(pod.join("b/c")));
    let output = rm_paths(&arena, &["-r"], &[&pod]);
    expect(
        &output,
        1,
        "pod/b/c: cannot remove: Operation not permitted",
    );
    assert!(exists(&pod.join("b/c")));
    assert!(!exists(&pod.join("a")) && !exists(&pod.join("b/d")));
    run(Command::new("chattr").arg("-i").arg(pod.join("b/c")));

    // As nobody, in a directory only root may write.
    tree(&arena.path("var/mnt/pod2"));
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_semanifest"))
        .args(["rm", "-r", "--dry-run", "--root"])
        .arg(&arena.root)
        .arg(arena.path("var/mnt/pod2"))
        .output()
        .expect("setpriv");
    assert_eq!(
        output.status.code(),
        Some(0),
        "dry run reads only: {}",
        stderr_of(&output)
    );
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_semanifest"))
        .args(["rm", "-r", "--root"])
        .arg(&arena.root)
        .arg(arena.path("var/mnt/pod2"))
        .output()
        .expect("setpriv");
    // Taking the root's lock needs no write access; removing does.
    expect(&output, 1, "pod2/a: cannot remove: Permission denied");
    assert!(exists(&arena.path("var/mnt/pod2/b/d/e")));
    // Control: as root the same tree goes.
    let output = rm_paths(&arena, &["-r"], &[&arena.path("var/mnt/pod2"), &pod]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    arena.finish();
}

/// docs/rm-json.md lists exactly the fields `--json` prints, and its
/// example has them. Control: a document without one row disagrees.
#[test]
fn json_fields_are_the_documented_ones() {
    let docs = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/rm-json.md"))
        .expect("docs/rm-json.md");
    let documented = |text: &str, table: usize| -> std::collections::BTreeSet<String> {
        text.split("| field |")
            .nth(table)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split_once('`'))
            .map(|(field, _)| field.to_owned())
            .collect()
    };
    let keys = |value: &serde_json::Value| -> std::collections::BTreeSet<String> {
        value.as_object().expect("object").keys().cloned().collect()
    };
    let top = documented(&docs, 1);
    let operand = documented(&docs, 2);
    let problem = documented(&docs, 3);
    let example: serde_json::Value = serde_json::from_str(
        docs.split("```json\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("an example"),
    )
    .expect("example JSON");
    assert_eq!(keys(&example), top);
    let arena = placed(Fs::Tmpfs);
    let pod = arena.path("var/mnt/pod");
    tree(&pod);
    fs::hard_link(arena.path("var/lib/etcd/member/snap/db"), pod.join("db")).expect("link");
    let output = rm_paths(&arena, &["-r", "--json"], &[&pod]);
    let report = json(&output);
    assert_eq!(keys(&report), top);
    assert_eq!(keys(&report["operands"][0]), operand);
    assert_eq!(keys(&report["refused"][0]), problem);
    let without: String = docs
        .lines()
        .filter(|line| !line.starts_with("| `bytes`"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_ne!(documented(&without, 1), top);
    arena.finish();
}

// ---------------------------------------------------------------------
// Races: a thread swaps directories and symlinks into etcd while the tree
// is being removed.

/// Swaps `a` and `b` (paths) with `renameat2(RENAME_EXCHANGE)` in a loop
/// until stopped; counts the swaps that happened.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(pairs: Vec<(PathBuf, PathBuf)>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let handle = {
            let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for (a, b) in &pairs {
                        if rustix::fs::renameat_with(
                            rustix::fs::CWD,
                            a,
                            rustix::fs::CWD,
                            b,
                            rustix::fs::RenameFlags::EXCHANGE,
                        )
                        .is_ok()
                        {
                            swaps.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        };
        Swapper {
            stop,
            swaps,
            handle: Some(handle),
        }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            handle.join().expect("swapper");
        }
        self.swaps.load(Ordering::Relaxed)
    }
}

/// The raced tree: `t/d/{f1,f2,e/{f3,f4}}` with `t/l` (absolute) and
/// `t/d/l2` (relative) symlinks to `victim` and `victim/member`.
fn raced_tree(t: &Path, victim: &Path) {
    // The symlinks come last, l2 before l: until l exists nothing is
    // swapped, so nothing here is ever written through a symlink.
    fs::create_dir_all(t.join("d/e")).expect("tree");
    for file in ["d/f1", "d/f2", "d/e/f3", "d/e/f4"] {
        fs::write(t.join(file), "x").expect("file");
    }
    // d/l2 -> ../../../<victim>/member, whichever name d has later.
    let rel = relative(&t.join("d"), &victim.join("member"));
    symlink(rel, t.join("d/l2")).expect("l2");
    symlink(victim, t.join("l")).expect("l");
}

fn raced_pairs(t: &Path) -> Vec<(PathBuf, PathBuf)> {
    vec![
        (t.join("d"), t.join("l")),
        (t.join("d/e"), t.join("d/l2")),
        (t.join("l/e"), t.join("l/l2")),
    ]
}

/// Removes what is left of `t` once the swapper has stopped.
fn clear(t: &Path) {
    if exists(t) {
        Command::new("rm").arg("-rf").arg(t).status().expect("rm");
    }
}

/// 10,000 removals through the library and 300 through the binary while
/// a thread swaps the tree's directories with symlinks into etcd: etcd is
/// never touched. Control: a path-walking deleter (lstat, then open by
/// path, as deleters without fds do) on the same race escapes into a copy
/// of etcd, and without the race it does not.
#[test]
fn racing_symlink_swaps_never_make_rm_delete_outside() {
    const LIBRARY_RUNS: usize = 10_000;
    const BINARY_RUNS: usize = 300;
    let arena = placed(Fs::Tmpfs);
    let etcd = arena.path("var/lib/etcd");
    let t = arena.path("var/mnt/t");
    let parsed = layout::manifest::default_layout(&policy::base_facts()).expect("default layout");
    let root = Root::open(&arena.root).expect("root");
    let options = RemoveOptions {
        recursive: true,
        dry_run: false,
        jobs: None,
        count_bytes: false,
    };
    // The deleting threads change their own working directories only.
    let cwd = std::env::current_dir().expect("cwd");
    let swapper = Swapper::start(raced_pairs(&t));
    let (mut complete, mut kept, mut refused) = (0u64, 0u64, 0u64);
    let mut samples = std::collections::BTreeSet::new();
    for run in 0..LIBRARY_RUNS {
        clear_while_racing(&t, &parsed.layout, &root);
        raced_tree(&t, &etcd);
        let report = node::remove(&parsed.layout, &root, &[t.as_path()], options).expect("remove");
        match report.operands.first() {
            Some(done) if done.complete => complete += 1,
            Some(_) => kept += 1,
            None => refused += 1,
        }
        for problem in report.errors.iter().chain(&report.refused) {
            let at = problem.path.rsplit('/').next().unwrap_or_default();
            samples.insert(format!("{at}: {}", problem.message));
        }
        assert!(
            report
                .refused
                .iter()
                .all(|r| !r.path.contains("var/lib/etcd")),
            "{report:?}"
        );
        assert!(
            etcd.join("member/snap/db").exists(),
            "run {run}: {report:?}"
        );
        if run % 1000 == 0 {
            assert_eq!(arena.sentinel_digest(), tree_digest_of_sentinel(&arena));
        }
    }
    assert_eq!(std::env::current_dir().expect("cwd"), cwd);
    let mut binary_codes = [0u32; 3];
    for _ in 0..BINARY_RUNS {
        clear_while_racing(&t, &parsed.layout, &root);
        raced_tree(&t, &etcd);
        let output = rm_paths(&arena, &["-r"], &[&t]);
        let code = output.status.code().expect("exit code") as usize;
        assert!(code <= 2, "{}", stderr_of(&output));
        binary_codes[code] += 1;
        assert!(
            !stderr_of(&output).contains("var/lib/etcd"),
            "{}",
            stderr_of(&output)
        );
    }
    let swaps = swapper.stop();
    clear(&t);
    eprintln!("what the race made rm report: {samples:#?}");
    eprintln!(
        "library: {LIBRARY_RUNS} runs ({complete} complete, {kept} partial, {refused} refused); \
         binary: {BINARY_RUNS} runs (exit 0/1/2: {binary_codes:?}); {swaps} swaps"
    );
    assert!(swaps > 10_000, "the swapper ran: {swaps} swaps");
    arena.finish();

    // Control, on a copy of etcd (the sentinel stays untouched).
    let arena = placed(Fs::Tmpfs);
    let root = Root::open(&arena.root).expect("root");
    let decoy = arena.path("var/lib/decoy");
    run(Command::new("cp")
        .arg("-a")
        .arg(etcd_of(&arena))
        .arg(&decoy));
    let t = arena.path("var/mnt/t");
    let originals = walk(&decoy);
    let intact = || originals.iter().all(|path| exists(path));
    // Without the race the path walker stays inside.
    raced_tree(&t, &decoy);
    path_walking_rm(&t);
    assert!(!exists(&t));
    assert!(intact());
    let swapper = Swapper::start(raced_pairs(&t));
    let mut escaped_after = None;
    for run in 0..1000 {
        clear_while_racing(&t, &parsed.layout, &root);
        raced_tree(&t, &decoy);
        path_walking_rm(&t);
        if !intact() {
            escaped_after = Some(run + 1);
            break;
        }
    }
    swapper.stop();
    clear(&t);
    eprintln!("control: the path walker escaped into the copy after {escaped_after:?} runs");
    assert!(
        escaped_after.is_some(),
        "the race can make a path walker escape"
    );
    arena.finish();
}

fn etcd_of(arena: &Arena) -> PathBuf {
    arena.path("var/lib/etcd")
}

/// Clears `t` with the library while the swapper runs (a partial run
/// may leave some of it).
fn clear_while_racing(t: &Path, layout: &layout::model::Layout, root: &Root) {
    let options = RemoveOptions {
        recursive: true,
        dry_run: false,
        jobs: Some(std::num::NonZeroUsize::MIN),
        count_bytes: false,
    };
    for _ in 0..100 {
        if !exists(t) {
            return;
        }
        let _ = node::remove(layout, root, &[t], options);
    }
    panic!("{} could not be cleared", t.display());
}

/// A deleter that walks by path: `lstat` says directory, then the path is
/// listed and its entries removed by path (what deleters without fds do).
/// It pauses a few microseconds after each `lstat`, as a loaded machine
/// would pause it, so the swapper (about one swap every 20 µs) gets into
/// its window within a few runs.
fn path_walking_rm(path: &Path) {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    std::thread::sleep(std::time::Duration::from_micros(30));
    if meta.is_dir() {
        if let Ok(entries) = fs::read_dir(path) {
            for entry in entries.flatten() {
                path_walking_rm(&entry.path());
            }
        }
        let _ = fs::remove_dir(path);
    } else {
        let _ = fs::remove_file(path);
    }
}
