//! Depth costs descriptors in O(1): `prune` and `rm -r` finish a chain
//! sixteen times deeper than an open-file limit of 256 (set in a child
//! shell, `ulimit -n`, as a service's `LimitNOFILE=` would; 100,000
//! levels with `--ignored`, and `bench/deep-chain --delete` against `rm -rf`), and
//! a comb deeper than their fd window comes out exactly counted. Control:
//! a deleter that holds one fd per pending level fails under the same
//! limit (a hard limit, which semanifest cannot raise).
//!
//! The depth is modest to keep the suite's wall time: the 100,000-level
//! soak takes about 20 s on a tmpfs (on ext4 the journal makes every tool
//! slower, coreutils `rm -rf` included).

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Output};

use rustix::fs::{Mode, OFlags};

use super::arena::*;

const DEEP: usize = 4_000;
/// What the ignored soak takes.
const SOAK: usize = 100_000;
const LIMIT: &str = "256";

fn open_dir(dir: &OwnedFd, name: &str) -> OwnedFd {
    rustix::fs::openat(
        dir,
        name,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("openat")
}

fn make_file(dir: &OwnedFd, name: &str) {
    rustix::fs::openat(
        dir,
        name,
        OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .expect("file");
}

/// `top/d/d/…/d` (`depth` directories) and a file at the bottom, made a
/// level at a time through fds (no path is that long).
pub(super) fn chain(top: &Path, depth: usize) {
    let mut dir = rustix::fs::open(
        top,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open");
    for _ in 0..depth {
        rustix::fs::mkdirat(&dir, "d", Mode::from_raw_mode(0o755)).expect("mkdirat");
        dir = open_dir(&dir, "d");
    }
    make_file(&dir, "bottom");
}

/// A chain of `depth` levels where each level also holds a file `f` and
/// a directory `s` with a file: four objects a level, and the pending
/// `s` at every level is what a walk comes back up for. Returns the
/// objects made.
fn comb(top: &Path, depth: usize) -> u64 {
    let mut dir = rustix::fs::open(
        top,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open");
    for _ in 0..depth {
        for name in ["s", "d"] {
            rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)).expect("mkdirat");
        }
        make_file(&dir, "f");
        make_file(&open_dir(&dir, "s"), "x");
        dir = open_dir(&dir, "d");
    }
    4 * depth as u64
}

/// `semanifest ARGS...` with the open-file limit at `limit`.
pub(super) fn limited(arena: &Arena, limit: &str, command: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .args(["-c", "ulimit -n \"$0\" && exec \"$@\"", limit])
        .arg(env!("CARGO_BIN_EXE_semanifest"))
        .args([command, "--root"])
        .arg(&arena.root)
        .args(args)
        .output()
        .expect("sh")
}

#[test]
fn prune_and_rm_finish_a_chain_deeper_than_the_open_file_limit() {
    chains_under_the_limit(DEEP);
}

#[test]
#[ignore = "a 100,000-level chain: about 20 s on a tmpfs"]
fn prune_and_rm_finish_a_chain_of_100k_levels_under_the_limit() {
    chains_under_the_limit(SOAK);
}

fn chains_under_the_limit(depth: usize) {
    let arena = placed(Fs::Tmpfs);
    let containerd = arena.path("var/lib/containerd");
    chain(&containerd, depth);

    // Control: one fd per pending level runs out at the limit.
    let naive = Command::new("sh")
        .args([
            "-c",
            "ulimit -n \"$0\" && exec \"$@\"",
            LIMIT,
            "python3",
            "-c",
        ])
        .arg(
            "import os, resource, sys\n\
             print(resource.getrlimit(resource.RLIMIT_NOFILE)[1], flush=True)\n\
             fds = [os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)]\n\
             while True:\n    \
                 fds.append(os.open('d', os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))\n",
        )
        .arg(&containerd)
        .output()
        .expect("python3");
    assert!(!naive.status.success());
    // The hard limit too: semanifest cannot raise its soft limit past it.
    assert_eq!(stdout_of(&naive).trim(), LIMIT);
    assert!(
        stderr_of(&naive).contains("Too many open files"),
        "{}",
        stderr_of(&naive)
    );

    let dry = limited(
        &arena,
        LIMIT,
        "prune",
        &["/var/lib/containerd", "--dry-run", "--json"],
    );
    assert_eq!(dry.status.code(), Some(0), "{}", stderr_of(&dry));
    assert_eq!(json(&dry)["objects"], depth as u64 + 1);
    let output = limited(&arena, LIMIT, "prune", &["/var/lib/containerd", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json(&output);
    assert_eq!(report["objects"], depth as u64 + 1, "{report:#}");
    assert_eq!(report["targets"][0]["complete"], true);
    assert_containerd_emptied(&arena);

    let deep = arena.path("var/mnt/deep");
    std::fs::create_dir(&deep).expect("mkdir");
    chain(&deep, depth);
    let output = limited(&arena, LIMIT, "rm", &["-r", "--json", "/var/mnt/deep"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(json(&output)["objects"], depth as u64 + 2);
    assert!(!deep.exists());
    arena.finish();
}

/// Every level of a comb deeper than the fd window is come back to for
/// its pending directory: nothing is left or counted twice, under a low
/// limit (everything walked alone) and a higher one (the tasks' budget
/// runs out part way down).
#[test]
fn a_comb_deeper_than_the_fd_window_is_deleted_and_counted_exactly() {
    for fs_kind in BOTH {
        let arena = placed(fs_kind);
        for limit in [LIMIT, "512"] {
            let containerd = arena.path("var/lib/containerd");
            let made = comb(&containerd, 1_500);
            let args = ["/var/lib/containerd", "--json"];
            let dry = limited(
                &arena,
                limit,
                "prune",
                &[&args[..], &["--dry-run"]].concat(),
            );
            assert_eq!(dry.status.code(), Some(0), "{}", stderr_of(&dry));
            assert_eq!(json(&dry)["objects"], made, "{limit}");
            let output = limited(&arena, limit, "prune", &args);
            assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
            assert_eq!(json(&output)["objects"], made, "{limit}");
            assert_containerd_emptied(&arena);

            let tree = arena.path("var/mnt/comb");
            std::fs::create_dir(&tree).expect("mkdir");
            let made = comb(&tree, 1_500);
            let output = limited(&arena, limit, "rm", &["-r", "--json", "/var/mnt/comb"]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
            assert_eq!(json(&output)["objects"], made + 1, "{limit}");
            assert!(!tree.exists());
        }
        arena.finish();
    }
}
