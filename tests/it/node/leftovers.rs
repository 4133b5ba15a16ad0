//! What cannot be deleted never stops the node, and a full filesystem
//! is still pruned: an immutable file (`chattr +i`, on ext4), a mount
//! placed in a trash or a deep chain left in one is reported (human,
//! JSON, `check --labels`) while `apply`, the boot unit's command, places
//! the tree and exits 0, and the next prune tries again; a filesystem
//! with no room for the trash is pruned in place. Controls: the immutable
//! file resists `rm -f`, and the full filesystem refuses the `mkdir` a
//! trash needs.

use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::process::Command;

use super::arena::*;
use super::depth::{chain, limited};
use super::prune::fill;

const TRASH: &str = ".semanifest-trash";

fn chattr(flag: &str, path: &Path) {
    run(Command::new("chattr").arg(flag).arg(path));
}

/// A trash as an interrupted prune leaves it: a directory with
/// semanifest's mark, made here by hand.
fn leftover_trash(dir: &Path) -> std::path::PathBuf {
    let trash = dir.join(TRASH);
    fs::create_dir(&trash).expect("mkdir");
    rustix::fs::setxattr(
        &trash,
        "trusted.semanifest",
        b"trash",
        rustix::fs::XattrFlags::empty(),
    )
    .expect("mark");
    trash
}

#[test]
fn an_immutable_file_stays_in_the_trash_as_a_warning_and_never_fails_apply() {
    let arena = placed(Fs::Ext4);
    let containerd = arena.path("var/lib/containerd");
    fill(&containerd, "i");
    fs::create_dir(containerd.join("snap")).expect("mkdir");
    let locked = containerd.join("snap/locked");
    fs::write(&locked, "immutable").expect("write");
    chattr("+i", &locked);
    // Control: it cannot be removed.
    let rm = Command::new("rm")
        .arg("-f")
        .arg(&locked)
        .output()
        .expect("rm");
    assert!(!rm.status.success() && locked.exists());

    let output = arena.on_root("prune", &["/var/lib/containerd", "--json"]);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let in_trash = containerd.join(TRASH).join("snap/locked");
    let warning = format!(
        "semanifest: warning: {}: cannot remove: Operation not permitted",
        in_trash.display()
    );
    assert!(stderr.contains(&warning), "{warning}\n{stderr}");
    let report = json(&output);
    assert_eq!(
        report["errors"].as_array().map(Vec::len),
        Some(0),
        "{report:#}"
    );
    assert_eq!(
        report["warnings"].as_array().map(Vec::len),
        Some(1),
        "{report:#}"
    );
    assert_eq!(report["targets"][0]["left_in_trash"], 1);
    assert_eq!(report["targets"][0]["complete"], false);
    assert_eq!(names(&containerd), containerd_names(&[TRASH]));
    let output = arena.on_root("prune", &["/var/lib/containerd"]);
    assert!(
        stdout_of(&output).contains("1 objects could not be deleted and stay in .semanifest-trash"),
        "{}",
        stdout_of(&output)
    );

    // apply, as the boot unit runs it: the tree placed, exit 0, a warning.
    let output = arena.on_root("apply", &[]);
    let (stdout, stderr) = (stdout_of(&output), stderr_of(&output));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&warning), "{stderr}");
    assert!(stderr.contains(", 1 warnings"), "{stderr}");
    let line = format!(
        "could not empty {}/{TRASH}: 1 objects could not be deleted and stay in it",
        containerd.display()
    );
    assert!(stdout.contains(&line), "{line}\n{stdout}");
    assert!(
        !stdout.contains("emptied"),
        "no success said for a failure: {stdout}"
    );
    let report = json(&arena.on_root("apply", &["--json"]));
    assert_eq!(report["warnings"].as_array().map(Vec::len), Some(1));
    assert_eq!(report["errors"].as_array().map(Vec::len), Some(0));

    // check --labels shows it.
    let root = arena.root.to_str().expect("utf-8");
    let output = arena.semanifest(&["check", "--labels", root, "--format", "json"].map(OsStr::new));
    let findings = json(&output)["findings"].clone();
    let shown = findings
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "apply-drift")
        .filter_map(|f| f["message"].as_str())
        .find(|m| m.contains(TRASH));
    let expected = format!("{} holds a trash (.semanifest-trash)", containerd.display());
    assert!(
        shown.is_some_and(|m| m.starts_with(&expected) && m.contains(": 1 entries")),
        "{findings:#}"
    );

    // Once it may go, the next prune takes it and the trash.
    chattr("-i", &in_trash);
    let output = arena.on_root("prune", &["/var/lib/containerd", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(json(&output)["warnings"].as_array().map(Vec::len), Some(0));
    assert_containerd_emptied(&arena);
    arena.finish();
}

/// An immutable file directly in a pruned path cannot be moved: it is
/// left in the path, an error (exit 1). The boot unit's prune of
/// ephemeral paths runs with `-` for this reason (docs/units.md).
#[test]
fn an_immutable_entry_of_a_pruned_path_is_an_error_naming_it() {
    let arena = placed(Fs::Ext4);
    let containerd = arena.path("var/lib/containerd");
    let locked = containerd.join("locked");
    fs::write(&locked, "immutable").expect("write");
    fs::write(containerd.join("other"), "goes").expect("write");
    chattr("+i", &locked);
    let output = arena.on_root("prune", &["/var/lib/containerd"]);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let line = format!(
        "semanifest: error: {}: cannot move into the trash: Operation not permitted",
        locked.display()
    );
    assert!(stderr.contains(&line), "{line}\n{stderr}");
    assert_eq!(names(&containerd), containerd_names(&["locked"]));
    chattr("-i", &locked);
    arena.finish();
}

/// A mount placed inside a trash (a bind of an outside directory) is
/// never crossed: a warning for apply and prune, exit 0, the outside
/// directory untouched; unmounted, the next prune empties the trash.
#[test]
fn a_mount_in_a_leftover_trash_is_a_warning_and_never_crossed() {
    let mut arena = placed(Fs::Tmpfs);
    let containerd = arena.path("var/lib/containerd");
    let trash = leftover_trash(&containerd);
    fs::create_dir_all(trash.join("x")).expect("mkdir");
    fs::write(trash.join("old"), "left by a crash").expect("write");
    let outside = arena.outside().join("victim");
    fill(&outside, "v");
    let victim = digest(&outside);
    arena.mount(
        &[OsStr::new("--bind"), outside.as_os_str()],
        &trash.join("x"),
    );
    for command in ["apply", "prune"] {
        let args: &[&str] = if command == "apply" {
            &[]
        } else {
            &["/var/lib/containerd"]
        };
        let output = arena.on_root(command, args);
        let stderr = stderr_of(&output);
        assert_eq!(output.status.code(), Some(0), "{command}: {stderr}");
        let line = format!(
            "semanifest: warning: {}/x: a mount point: never crossed, kept",
            trash.display()
        );
        assert!(stderr.contains(&line), "{command}: {line}\n{stderr}");
        assert_eq!(digest(&outside), victim);
    }
    assert!(!trash.join("old").exists(), "the rest of the trash went");
    umount(&trash.join("x"));
    let output = arena.on_root("prune", &["/var/lib/containerd"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_containerd_emptied(&arena);
    assert_eq!(digest(&outside), victim);
    arena.finish();
}

/// A chain deeper than the open-file limit left in a trash: the boot
/// unit's apply, under that limit, empties it.
#[test]
fn a_deep_chain_left_in_a_trash_is_emptied_by_apply_under_a_low_limit() {
    let arena = placed(Fs::Tmpfs);
    let containerd = arena.path("var/lib/containerd");
    let trash = leftover_trash(&containerd);
    chain(&trash, 2_000);
    let output = limited(&arena, "256", "apply", &[]);
    let stdout = stdout_of(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let line = format!(
        "emptied {}/{TRASH}: a trash left by an interrupted prune (2001 objects,",
        containerd.display()
    );
    assert!(stdout.contains(&line), "{line}\n{stdout}");
    assert_containerd_emptied(&arena);
    arena.finish();
}

/// Fills the filesystem at `dir` (files of `chunk` bytes, then single
/// bytes, then empty files) until it refuses more; the objects made.
fn fill_up(dir: &Path, chunk: usize) -> u64 {
    let mut made = 0;
    let block = vec![b'x'; chunk];
    for size in [chunk, 1, 0] {
        loop {
            let path = dir.join(format!("fill-{made}"));
            match fs::write(&path, &block[..size]) {
                Ok(()) => made += 1,
                Err(_) => {
                    // A file created before the write failed counts too.
                    if path.exists() {
                        made += 1;
                    }
                    break;
                }
            }
        }
    }
    made
}

/// The free blocks of the filesystem at `path`.
fn free_bytes(path: &Path) -> u64 {
    let stat = rustix::fs::statvfs(path).expect("statvfs");
    stat.f_bfree * stat.f_frsize
}

/// A full filesystem at a pruned path (a tmpfs out of inodes, an ext4
/// out of blocks): the trash cannot be made (control: `mkdir` fails with
/// ENOSPC), so prune deletes in place, frees the space, and says so.
#[test]
fn a_full_filesystem_is_pruned_in_place_and_the_report_says_so() {
    for fs_kind in BOTH {
        let mut arena = placed(Fs::Tmpfs);
        let containerd = arena.path("var/lib/containerd");
        match fs_kind {
            Fs::Tmpfs => arena.mount(
                &[
                    OsStr::new("-t"),
                    OsStr::new("tmpfs"),
                    OsStr::new("-o"),
                    OsStr::new("size=4m,nr_inodes=64"),
                    OsStr::new("full"),
                ],
                &containerd,
            ),
            Fs::Ext4 => {
                let image = arena.outside().join("small.img");
                fs::File::create(&image)
                    .and_then(|file| file.set_len(4 << 20))
                    .expect("image");
                run(Command::new("mkfs.ext4")
                    .args(["-q", "-F", "-O", "^has_journal", "-m", "0"])
                    .arg(&image));
                arena.mount(
                    &[OsStr::new("-o"), OsStr::new("loop"), image.as_os_str()],
                    &containerd,
                );
            }
            Fs::Xfs => unreachable!("BOTH is tmpfs and ext4"),
        }
        fs::create_dir_all(containerd.join("snapshots/1/fs")).expect("mkdir");
        fs::write(containerd.join("snapshots/1/fs/layer"), vec![7u8; 64 << 10]).expect("write");
        // The files, snapshots/1/fs/layer, and lost+found on ext4.
        let made = fill_up(&containerd, 256 << 10) + 4 + u64::from(fs_kind == Fs::Ext4);
        // Control: no room for a trash.
        let probe = fs::create_dir(containerd.join(".probe")).expect_err("full");
        assert_eq!(probe.raw_os_error(), Some(28), "{probe}");
        let before = free_bytes(&containerd);

        let output = arena.on_root("prune", &["/var/lib/containerd", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        let report = json(&output);
        let target = &report["targets"][0];
        assert_eq!(target["objects"], made, "{fs_kind:?}: {report:#}");
        // Once deleting in place made room, the trash takes the rest.
        let in_place = target["in_place_entries"].as_u64().expect("count");
        assert!(in_place >= 1, "{report:#}");
        assert_eq!(
            target["in_place_reason"],
            "no room to create .semanifest-trash (no space left on device)"
        );
        assert_eq!(target["complete"], true);
        // The filesystem mounted at the path hides the declared paths below.
        assert!(names(&containerd).is_empty());
        assert!(free_bytes(&containerd) > before, "{fs_kind:?}: space freed");
        // The words say it too.
        fill_up(&containerd, 256 << 10);
        let output = arena.on_root("prune", &["/var/lib/containerd"]);
        assert!(
            stdout_of(&output).contains("of the entries deleted in place, not through the trash"),
            "{}",
            stdout_of(&output)
        );
        umount(&containerd);
        arena.finish();
    }
}
