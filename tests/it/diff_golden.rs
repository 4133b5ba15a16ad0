//! `semanifest diff` on realistic layout changes (`tests/data/diff/CASE/`,
//! `old.yaml` → `new.yaml`, optional `k8s/`): golden output in all three
//! formats, the exit code, the JSON against its schema (python
//! `jsonschema`), and the policy-level cross-check — both layouts compiled
//! by secilc, allow rules compared by sediff, and every changed rule
//! explained by a reported change (and every reported access, traversal
//! and transition change visible in sediff).
//!
//! `SEMANIFEST_BLESS=1 cargo test --test it diff_golden::` rewrites the golden
//! files after an intended change; review the diff.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{data, run, semanifest, stderr, stdout, tool, venv_python};
use layout::diag::Source;
use layout::manifest;
use semanifest::diff::{self, sediff, Category};

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = fs::read_dir(data("diff"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("old.yaml").is_file())
        .collect();
    cases.sort();
    cases
}

fn relative(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .display()
        .to_string()
}

fn diff_args(case: &Path) -> Vec<String> {
    let mut args = vec![
        "diff".to_owned(),
        relative(&case.join("old.yaml")),
        relative(&case.join("new.yaml")),
    ];
    if case.join("k8s").is_dir() {
        args.extend(["--k8s".to_owned(), relative(&case.join("k8s"))]);
    }
    args
}

fn bless() -> bool {
    std::env::var_os("SEMANIFEST_BLESS").is_some()
}

fn parse(path: &Path) -> manifest::Parsed {
    let source = Source::new(relative(path), fs::read_to_string(path).unwrap());
    manifest::parse(source, &policy::base_facts()).unwrap_or_else(|report| panic!("{report}"))
}

fn library_diff(case: &Path) -> (manifest::Parsed, manifest::Parsed, diff::LayoutDiff) {
    let (old, new) = (parse(&case.join("old.yaml")), parse(&case.join("new.yaml")));
    let result = diff::diff(&old, &new, &diff::DiffOptions::default()).unwrap();
    (old, new, result)
}

#[test]
fn golden_outputs_and_exit_codes() {
    let cases = cases();
    assert!(cases.len() >= 8, "{cases:?}");
    let mut exits = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let mut json_relevant = None;
        for (format, file) in [
            ("human", "expected.txt"),
            ("markdown", "expected.md"),
            ("json", "expected.json"),
        ] {
            let output = run(semanifest()
                .args(diff_args(case))
                .args(["--format", format]));
            let code = output.status.code();
            assert!(
                matches!(code, Some(0 | 1)),
                "{name} {format}: {code:?} {}",
                stderr(&output)
            );
            let text = stdout(&output);
            let golden = case.join(file);
            if bless() {
                fs::write(&golden, &text).unwrap();
            }
            let expected = fs::read_to_string(&golden).unwrap_or_else(|_| {
                panic!("{}: missing; run with SEMANIFEST_BLESS=1", golden.display())
            });
            assert_eq!(
                text,
                expected,
                "{name} --format {format} differs from {}",
                golden.display()
            );
            if format == "json" {
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                json_relevant = value["security_relevant"].as_bool();
            }
            exits.push((name.clone(), code));
        }
        let relevant = json_relevant.unwrap();
        for (_, code) in exits.iter().filter(|(n, _)| *n == name) {
            assert_eq!(
                *code,
                Some(relevant as i32),
                "{name}: exit code follows security_relevant"
            );
        }
    }
    // Both outcomes are covered.
    assert!(exits.iter().any(|(_, c)| *c == Some(0)) && exits.iter().any(|(_, c)| *c == Some(1)));
}

#[test]
fn every_case_changes_something_but_the_control() {
    for case in cases() {
        let (_, _, result) = library_diff(&case);
        let empty = result.changes.is_empty() && result.labels.is_empty();
        let control = case.ends_with("no-change-in-meaning");
        assert_eq!(empty, control, "{}", case.display());
    }
}

#[test]
fn sediff_finds_no_allow_rule_the_diff_does_not_explain() {
    tool("sediff", "setools");
    tool("secilc", "secilc");
    let mut rules_seen = 0;
    for case in cases() {
        let (old, new, result) = library_diff(&case);
        let check = sediff::cross_check(&old, &new, &result).unwrap();
        rules_seen += check.rules.len();
        assert_eq!(
            check.unexplained,
            Vec::new(),
            "{}: sediff reports allow rules the diff does not explain",
            case.display()
        );
        // The other direction, for the changes that name exact types: each
        // shows up in sediff (a reported change the policy does not make
        // would be noise in review).
        for change in &result.changes {
            if !matches!(
                change.category,
                Category::Access | Category::Traversal | Category::Transition
            ) {
                continue;
            }
            let seen = check.rules.iter().any(|rule| {
                change
                    .policy_pairs
                    .iter()
                    .any(|(s, t)| *s == rule.source && *t == rule.target)
            });
            assert!(
                seen,
                "{}: `{}` changes no allow rule",
                case.display(),
                change.summary
            );
        }
        // Control: without the changes, the same rules are unexplained.
        if !check.rules.is_empty() {
            let stripped = diff::LayoutDiff {
                changes: Vec::new(),
                ..result
            };
            assert!(
                check
                    .rules
                    .iter()
                    .any(|rule| !sediff::explained(&stripped, rule)),
                "{}: the cross-check could not fail",
                case.display()
            );
        }
    }
    assert!(rules_seen > 100, "{rules_seen}");
}

#[test]
fn policy_flag_runs_the_cross_check() {
    let case = data("diff/widen-workload-access");
    let output = run(semanifest().args(diff_args(&case)).arg("--policy"));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("allow rule change(s) reported by sediff are explained"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn json_follows_the_committed_schema() {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/diff.schema.json");
    let generated = format!(
        "{}\n",
        serde_json::to_string_pretty(&diff::json_schema()).unwrap()
    );
    if bless() {
        fs::write(&schema_path, &generated).unwrap();
    }
    let committed = fs::read_to_string(&schema_path).unwrap();
    assert!(
        committed == generated,
        "docs/diff.schema.json is stale: SEMANIFEST_BLESS=1 cargo test --test it diff_golden::"
    );
    let files: Vec<PathBuf> = cases().iter().map(|c| c.join("expected.json")).collect();
    let output = run(venv_python()
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/validate-json.py"))
        .arg(&schema_path)
        .args(&files));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    // Control: a document with an unknown category is rejected.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    let mut value: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(data("diff/widen-workload-access/expected.json")).unwrap(),
    )
    .unwrap();
    value["changes"][0]["category"] = "sideways".into();
    fs::write(&bad, value.to_string()).unwrap();
    let output = run(venv_python()
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/validate-json.py"))
        .arg(&schema_path)
        .arg(&bad));
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
}

fn git(dir: &Path, args: &[&str]) {
    let output = run(Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args));
    assert!(output.status.success(), "git {args:?}: {}", stderr(&output));
}

#[test]
fn git_revisions_are_read_with_git_show() {
    let repo = tempfile::tempdir().unwrap();
    let case = data("diff/unprotect-kubelet-state");
    fs::create_dir(repo.path().join("node")).unwrap();
    fs::copy(case.join("old.yaml"), repo.path().join("node/layout.yaml")).unwrap();
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-qm", "old"]);
    fs::copy(case.join("new.yaml"), repo.path().join("node/layout.yaml")).unwrap();

    let output = run(semanifest().current_dir(repo.path()).args([
        "diff",
        "git:HEAD:node/layout.yaml",
        "node/layout.yaml",
        "--format",
        "json",
    ]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["old"], "git:HEAD:node/layout.yaml");
    let expected: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(case.join("expected.json")).unwrap()).unwrap();
    assert_eq!(value["changes"], expected["changes"]);
    // From a subdirectory, the path is relative to it, as typed.
    let output = run(semanifest().current_dir(repo.path().join("node")).args([
        "diff",
        "git:HEAD:layout.yaml",
        "layout.yaml",
    ]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    // Control: the same revision on both sides changes nothing.
    let output = run(semanifest().current_dir(repo.path()).args([
        "diff",
        "git:HEAD:node/layout.yaml",
        "git:HEAD:node/layout.yaml",
    ]));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("No change in meaning."));

    // Bad input: exit 2 with a clear message, never a panic.
    for (spec, message) in [
        (
            "git:nosuchrev:node/layout.yaml",
            "git show nosuchrev:./node/layout.yaml failed",
        ),
        ("git:HEAD", "expected git:REV:PATH"),
        ("git:HEAD:node/missing.yaml", "failed"),
        ("missing.yaml", "missing.yaml: cannot read"),
    ] {
        let output =
            run(semanifest()
                .current_dir(repo.path())
                .args(["diff", spec, "node/layout.yaml"]));
        assert_eq!(output.status.code(), Some(2), "{spec}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(message),
            "{spec}: {}",
            stderr(&output)
        );
        assert!(!stderr(&output).contains("panicked"), "{spec}");
    }
    // A malformed layout at a revision is reported at git:REV:PATH:LINE:COL.
    fs::write(
        repo.path().join("node/layout.yaml"),
        fs::read_to_string(case.join("old.yaml"))
            .unwrap()
            .replace("type: etcd_var_t", "type: EtcdVar"),
    )
    .unwrap();
    git(repo.path(), &["commit", "-qam", "broken"]);
    let output = run(semanifest().current_dir(repo.path()).args([
        "diff",
        "git:HEAD:node/layout.yaml",
        "git:HEAD~1:node/layout.yaml",
    ]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("git:HEAD:node/layout.yaml:"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("error[type-name]"),
        "{}",
        stderr(&output)
    );
}
