//! `--check`, `--dry-run`, `--type-only` (against setfiles without `-F`,
//! which is restorecon's type-only rule), `--exclude`, `--verbose` output and
//! operands that are files or symlinks.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::relabel::*;

const SPECS: &str = "\
/srv(/.*)?\tsystem_u:object_r:var_t:s0
/srv/log(/.*)?\tsystem_u:object_r:var_log_t:s0
/srv/log/current\t-l\tsystem_u:object_r:var_log_link_t:s0
/srv/etc(/.*)?\tsystem_u:object_r:etc_t:s0
";

struct Fixture {
    _scratch: tempfile::TempDir,
    fc: PathBuf,
    root: PathBuf,
}

impl Fixture {
    fn new(root_name: &str) -> Self {
        require_privileges();
        let scratch = scratch();
        let fc = scratch.path().join("file_contexts");
        write_file(&fc, SPECS);
        let root = scratch.path().join(root_name);
        let tree = TreeBuilder::new(&root.join("srv"));
        tree.file("log/messages", "m")
            .symlink("log/current", "messages")
            .raw_file("log", b"evil\nname\x1b[2J", "x")
            .file("etc/conf", "c")
            .file("etc/skip/me", "s")
            .file("data", "d");
        Self {
            _scratch: scratch,
            fc,
            root,
        }
    }

    fn srv(&self) -> PathBuf {
        self.root.join("srv")
    }

    fn relabel(&self, extra: &[&str]) -> std::process::Output {
        relabel(&self.fc, Some(&self.root), extra, &[&self.srv()])
    }

    fn setfiles(&self, extra: &[&str]) -> std::process::Output {
        let mut command = Command::new(setfiles_path());
        command
            .args(extra)
            .arg("-r")
            .arg(&self.root)
            .arg(&self.fc)
            .arg(self.srv());
        run(&mut command)
    }
}

fn json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn ctimes(root: &Path) -> BTreeMap<Vec<u8>, (i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    dump(root)
        .into_keys()
        .map(|path| {
            let meta =
                std::fs::symlink_metadata(root.join(OsStr::from_bytes(&path))).expect("lstat");
            (path, (meta.ctime(), meta.ctime_nsec()))
        })
        .collect()
}

#[test]
fn check_reports_drift_writes_nothing_and_exits_1() {
    let fixture = Fixture::new("image");
    let before = dump(&fixture.srv());
    let before_ctimes = ctimes(&fixture.srv());
    let output = fixture.relabel(&["--check"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert_eq!(dump(&fixture.srv()), before);
    assert_eq!(ctimes(&fixture.srv()), before_ctimes, "no setxattr at all");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let messages = fixture.srv().join("log/messages");
    assert!(
        stdout.contains(&format!(
            "drift {}: found <no label>, expected system_u:object_r:var_log_t:s0",
            messages.display()
        )),
        "{stdout}"
    );
    // One line per object: srv, log, 3 entries in log, etc, etc/conf,
    // etc/skip, etc/skip/me, data.
    assert_eq!(stdout.lines().count(), 10, "{stdout}");

    // After a relabel there is no drift.
    let output = fixture.relabel(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let output = fixture.relabel(&["--check"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(output.stdout.is_empty());

    // Control: one planted wrong label is exactly what --check reports.
    set_label(&messages, b"system_u:object_r:etc_t:s0\0");
    let output = fixture.relabel(&["--check"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!(
            "drift {}: found system_u:object_r:etc_t:s0, expected system_u:object_r:var_log_t:s0\n",
            messages.display()
        )
    );
}

#[test]
fn dry_run_writes_nothing_and_counts_what_it_would_do() {
    let fixture = Fixture::new("image");
    let before = dump(&fixture.srv());
    let before_ctimes = ctimes(&fixture.srv());
    let output = fixture.relabel(&["--dry-run", "--verbose", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(dump(&fixture.srv()), before);
    assert_eq!(ctimes(&fixture.srv()), before_ctimes);
    let summary = json(&output);
    assert_eq!(summary["mode"], "dry-run");
    assert_eq!(summary["relabelled"], 10, "{summary}");
    // With --json the change lines go to stderr, and hostile names are
    // escaped there.
    let stderr = stderr_of(&output);
    let evil = format!(
        "would relabel {}/log/evil\\nname\\u{{1b}}[2J from <no label> to",
        fixture.srv().display()
    );
    assert!(stderr.contains(&evil), "{stderr}");
    assert!(!stderr.contains('\x1b'), "raw escape in output: {stderr:?}");

    // Control: the same run without --dry-run writes all ten.
    let output = fixture.relabel(&["--json"]);
    assert_eq!(json(&output)["relabelled"], 10);
    assert_ne!(labels(&dump(&fixture.srv())), labels(&before));
}

#[test]
fn type_only_matches_setfiles_without_force() {
    // Plant the same starting labels in two copies: some unlabelled, some
    // with the right type and foreign user/range, some with a wrong type.
    let plant = |srv: &Path| {
        set_label(
            &srv.join("log/messages"),
            b"unconfined_u:object_r:var_log_t:s0:c1\0",
        );
        set_label(
            &srv.join("etc/conf"),
            b"unconfined_u:object_r:var_log_t:s0:c2.c3\0",
        );
        set_label(&srv.join("data"), b"staff_u:object_r:etc_t\0");
        set_label(
            &srv.join("log/current"),
            b"user_u:object_r:var_t:s0-s0:c0.c1023\0",
        );
    };
    let left = Fixture::new("left");
    let right = Fixture::new("right");
    plant(&left.srv());
    plant(&right.srv());
    let output = left.setfiles(&["-T", "1"]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let output = right.relabel(&["--type-only"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let left_labels = labels(&dump(&left.srv()));
    let right_labels = labels(&dump(&right.srv()));
    let differences = label_differences(&left_labels, &right_labels);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    let get = |path: &str| right_labels[path.as_bytes()].clone();
    assert_eq!(
        get("log/messages"),
        Some(b"unconfined_u:object_r:var_log_t:s0:c1\0".to_vec())
    );
    assert_eq!(
        get("etc/conf"),
        Some(b"unconfined_u:object_r:etc_t:s0:c2.c3\0".to_vec())
    );
    assert_eq!(get("data"), Some(b"staff_u:object_r:var_t\0".to_vec()));
    assert_eq!(
        get("log/current"),
        Some(b"user_u:object_r:var_log_link_t:s0-s0:c0.c1023\0".to_vec())
    );
    assert_eq!(get(""), Some(b"system_u:object_r:var_t:s0\0".to_vec()));

    // Control: the default (full) mode replaces user and range too.
    let output = right.relabel(&[]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        label_of(&right.srv().join("log/messages")),
        Some(b"system_u:object_r:var_log_t:s0\0".to_vec())
    );
}

#[test]
fn excluded_subtrees_are_left_alone_like_setfiles_e() {
    let left = Fixture::new("left");
    let right = Fixture::new("right");
    let output = left.setfiles(&[
        "-F",
        "-e",
        left.srv().join("etc/skip").to_str().expect("utf-8"),
    ]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let exclude = right.srv().join("etc/skip/");
    let output = right.relabel(&["--json", "--exclude", exclude.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(json(&output)["excluded"], 1);
    let left_labels = labels(&dump(&left.srv()));
    let right_labels = labels(&dump(&right.srv()));
    assert!(label_differences(&left_labels, &right_labels).is_empty());
    assert_eq!(right_labels[&b"etc/skip"[..]], None);
    assert_eq!(right_labels[&b"etc/skip/me"[..]], None);
    // Control: the sibling outside the exclude was labelled.
    assert_eq!(
        right_labels[&b"etc/conf"[..]],
        Some(b"system_u:object_r:etc_t:s0\0".to_vec())
    );
}

#[test]
fn file_and_symlink_operands_label_only_themselves() {
    let fixture = Fixture::new("image");
    let current = fixture.srv().join("log/current");
    let output = relabel(&fixture.fc, Some(&fixture.root), &["--json"], &[&current]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(json(&output)["examined"], 1);
    assert_eq!(
        label_of(&current),
        Some(b"system_u:object_r:var_log_link_t:s0\0".to_vec())
    );
    // The link's target is not touched.
    assert_eq!(label_of(&fixture.srv().join("log/messages")), None);

    let output = relabel(
        &fixture.fc,
        Some(&fixture.root),
        &[],
        &[&fixture.srv().join("log/messages")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(
        label_of(&fixture.srv().join("log/messages")),
        Some(b"system_u:object_r:var_log_t:s0\0".to_vec())
    );
}

#[test]
fn without_root_the_lookup_uses_the_real_path() {
    let fixture = Fixture::new("image");
    // Specs for the tree's real location, with regex metacharacters escaped.
    let real = fixture.srv().canonicalize().expect("canonical");
    let escaped: String = real
        .to_str()
        .expect("utf-8 scratch path")
        .chars()
        .flat_map(|c| {
            let meta = ".^$?*+|[](){}\\".contains(c);
            meta.then_some('\\').into_iter().chain(std::iter::once(c))
        })
        .collect();
    let fc = fixture.root.join("real.fc");
    write_file(
        &fc,
        &format!("{escaped}(/.*)?\tsystem_u:object_r:real_t:s0\n"),
    );
    let output = relabel(&fc, None, &[], &[&fixture.srv()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(
        label_of(&real.join("data")),
        Some(b"system_u:object_r:real_t:s0\0".to_vec())
    );
}

/// docs/relabel-json.md documents exactly the fields `--json` prints, in
/// every mode, and its example has the same fields. Control: a field the
/// documentation does not list would fail the comparison (checked against
/// a document with one row removed).
#[test]
fn json_summary_fields_are_the_documented_ones() {
    let docs = std::fs::read_to_string("docs/relabel-json.md").expect("docs/relabel-json.md");
    let documented = |text: &str| -> std::collections::BTreeSet<String> {
        text.lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split_once('`'))
            .map(|(field, _)| field.to_owned())
            .collect()
    };
    let fields = documented(&docs);
    let keys = |value: &serde_json::Value| -> std::collections::BTreeSet<String> {
        value
            .as_object()
            .expect("an object")
            .keys()
            .cloned()
            .collect()
    };
    let example = docs
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("an example");
    assert_eq!(keys(&serde_json::from_str(example).unwrap()), fields);
    for (args, mode) in [
        (&["--json", "--dry-run"][..], "dry-run"),
        (&["--json", "--check"][..], "check"),
        (&["--json"][..], "write"),
    ] {
        let fixture = Fixture::new("image");
        let summary = json(&fixture.relabel(args));
        assert_eq!(summary["mode"], mode);
        assert_eq!(keys(&summary), fields, "{args:?}");
    }
    let without_errors: String = docs
        .lines()
        .filter(|line| !line.starts_with("| `errors`"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_ne!(documented(&without_errors), fields);
}
