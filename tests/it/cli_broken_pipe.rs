//! A reader that stops early (`semanifest … | head -1`) ends every
//! subcommand quietly with exit 0, as ripgrep does: no panic, no message,
//! whatever the command would otherwise have exited with.
//!
//! Two readers: one that reads the first line and closes the pipe while
//! the command is still writing (large outputs only, so the command must
//! meet the closed pipe), and one that is gone before the command starts
//! (every subcommand that writes to standard output, whatever its size).
//! Each has a control that reads everything and sees the full output and
//! the usual exit code.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use crate::support::semanifest;

const LAYOUT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/layouts/structured-var.yaml");

struct Ended {
    status: ExitStatus,
    stderr: String,
}

impl Ended {
    fn assert_quiet_success(&self, what: &str) {
        assert_eq!(self.status.code(), Some(0), "{what}: {}", self.stderr);
        for noise in ["panicked", "Broken pipe", "semanifest: error"] {
            assert!(!self.stderr.contains(noise), "{what}: {}", self.stderr);
        }
    }
}

/// Like `command | head -1`: reads one line, then closes the pipe.
fn head_1(command: &mut Command) -> (String, Ended) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn semanifest");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut first)
        .expect("read the first line");
    // The reader is dropped here: the pipe has no reader any more.
    (first, finish(child))
}

/// The command's standard output is a pipe whose reader is gone before
/// the command starts: its first write meets the closed pipe.
fn closed_before_start(command: &mut Command) -> Ended {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let child = command
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn semanifest");
    // Drop our copy of the writer with the Command.
    finish(child)
}

/// The control: everything read.
fn read_all(command: &mut Command) -> (String, Ended) {
    let output = command.output().expect("run semanifest");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        Ended {
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        },
    )
}

fn finish(mut child: std::process::Child) -> Ended {
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    Ended {
        status: child.wait().expect("wait for semanifest"),
        stderr,
    }
}

/// 200 Pods, each mounting a hostPath outside every root, privileged:
/// several findings each, about 200 KB of human output.
fn manifests(dir: &Path) {
    for i in 0..200 {
        fs::write(
            dir.join(format!("pod-{i:03}.yaml")),
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: pod-{i}}}\nspec:\n  containers:\n    \
                 - name: c\n      securityContext: {{privileged: true}}\n      \
                 volumeMounts: [{{name: v, mountPath: /m}}]\n  volumes:\n    \
                 - name: v\n      hostPath: {{path: /etc/pod-{i}}}\n"
            ),
        )
        .unwrap();
    }
}

#[test]
fn check_k8s_into_head_ends_quietly_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    manifests(dir.path());
    for format in ["human", "json", "sarif"] {
        let command = || {
            let mut command = semanifest();
            command
                .args(["check", "--format", format, "--k8s"])
                .arg(dir.path());
            command
        };
        let (all, control) = read_all(&mut command());
        assert_eq!(
            control.status.code(),
            Some(1),
            "{format}: {}",
            control.stderr
        );
        assert!(all.len() > 150_000, "{format}: {} bytes", all.len());
        assert!(all.contains("pod-199"), "{format}");

        let (first, ended) = head_1(&mut command());
        assert_eq!(first, all.lines().next().unwrap().to_owned() + "\n");
        ended.assert_quiet_success(&format!("check --format {format} | head -1"));
        closed_before_start(&mut command())
            .assert_quiet_success(&format!("check --format {format} >&-"));
    }
}

#[test]
fn lookup_into_head_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dir.path().join("paths");
    let list: String = (0..100_000)
        .map(|i| format!("/var/lib/kubelet/pods/{i}/volumes\n"))
        .collect();
    fs::write(&paths, &list).unwrap();
    let command = || {
        let mut command = semanifest();
        command
            .args(["lookup", "--layout", LAYOUT, "--from"])
            .arg(&paths);
        command
    };
    let (all, control) = read_all(&mut command());
    assert_eq!(control.status.code(), Some(0), "{}", control.stderr);
    assert_eq!(all.lines().count(), 100_000);

    let (first, ended) = head_1(&mut command());
    assert!(
        first.starts_with("/var/lib/kubelet/pods/0/volumes\t"),
        "{first}"
    );
    ended.assert_quiet_success("lookup | head -1");
    closed_before_start(&mut command()).assert_quiet_success("lookup >&-");
}

#[test]
fn relabel_into_head_still_walks_everything_then_ends_quietly() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("var/lib/scratch");
    fs::create_dir_all(&dir).unwrap();
    for i in 0..3000 {
        fs::write(dir.join(format!("file-{i:04}")), b"").unwrap();
    }
    // --check lists every unlabelled object and exits 1 on drift.
    let command = || {
        let mut command = semanifest();
        command
            .args(["relabel", "--layout", LAYOUT, "--check", "--root"])
            .arg(root.path())
            .arg(root.path().join("var"));
        command
    };
    let (all, control) = read_all(&mut command());
    assert_eq!(control.status.code(), Some(1), "{}", control.stderr);
    assert!(all.lines().count() > 3000, "{}", all.lines().count());

    let (first, ended) = head_1(&mut command());
    assert!(first.starts_with("drift "), "{first}");
    ended.assert_quiet_success("relabel --check | head -1");
    // The walk was not cut short: the summary counts every object.
    assert!(
        ended.stderr.contains("examined 3003, drifted 3003"),
        "{}",
        ended.stderr
    );
    closed_before_start(&mut command()).assert_quiet_success("relabel --check >&-");
}

#[test]
fn every_other_printing_subcommand_ends_quietly_on_a_closed_pipe() {
    let diff_old = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/layouts/minimal.yaml"
    );
    let empty_root = tempfile::tempdir().unwrap();
    let empty_root = empty_root.path().to_str().unwrap();
    let commands: [&[&str]; 8] = [
        &["apply", "--dry-run", "--root", empty_root],
        &["layout", "show"],
        &["layout", "schema"],
        &["man", "check"],
        &["completions", "bash"],
        &["diff", diff_old, LAYOUT],
        &["check", "--format", "sarif"],
        &["lookup", "--layout", LAYOUT, "/var/lib/etcd"],
    ];
    for args in commands {
        let (all, control) = read_all(semanifest().args(args));
        assert!(
            control.status.success() || control.status.code() == Some(1),
            "{args:?}: {}",
            control.stderr
        );
        assert!(!all.is_empty(), "{args:?} prints nothing");
        closed_before_start(semanifest().args(args)).assert_quiet_success(&format!("{args:?}"));
    }
}
