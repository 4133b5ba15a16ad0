//! `semanifest admission`: the emitted objects for the default layout are
//! the committed goldens byte for byte, `--out` writes the same objects the
//! stream holds, and `--action` changes only what the cluster does.
//!
//! After an intended change to the output, regenerate the goldens with
//! `SEMANIFEST_BLESS=1 cargo test --test it admission::` and review the diff.

use std::fs;
use std::path::PathBuf;

use crate::support::{data, run, semanifest, stderr, stdout};

fn golden_dir() -> PathBuf {
    data("golden/admission/structured-var")
}

fn emit(args: &[&str]) -> String {
    let output = run(semanifest().arg("admission").args(args));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stdout(&output)
}

fn check_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("SEMANIFEST_BLESS").is_some() {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, actual).unwrap();
        return;
    }
    let expected = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run SEMANIFEST_BLESS=1 cargo test --test it admission::",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{} differs from the output (first differing line: {:?}); \
         if the change is meant, SEMANIFEST_BLESS=1 cargo test --test it admission::",
        path.display(),
        expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1)
    );
}

/// (format, the files `--out` writes).
const FORMATS: [(&str, &[&str]); 3] = [
    (
        "vap",
        &[
            "validatingadmissionpolicy.yaml",
            "validatingadmissionpolicybinding.yaml",
        ],
    ),
    ("kyverno", &["clusterpolicy.yaml"]),
    (
        "gatekeeper",
        &["constrainttemplate.yaml", "constraint.yaml"],
    ),
];

#[test]
fn default_layout_outputs_equal_the_goldens_and_out_writes_the_stream() {
    for (format, files) in FORMATS {
        let streamed = emit(&["--format", format]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("policy");
        emit(&["--format", format, "--out", out.to_str().unwrap()]);
        let written: Vec<String> = files
            .iter()
            .map(|file| {
                let text = fs::read_to_string(out.join(file))
                    .unwrap_or_else(|e| panic!("{format}: {file}: {e}"));
                check_golden(file, &text);
                text
            })
            .collect();
        assert_eq!(streamed, written.join("---\n"), "{format}");
        let mut names: Vec<String> = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut expected: Vec<String> = files.iter().map(|f| (*f).to_owned()).collect();
        expected.sort();
        assert_eq!(names, expected, "{format}: --out writes exactly these");
    }
}

#[test]
fn the_action_changes_only_what_the_cluster_does() {
    let deny = emit(&[]);
    assert!(deny.contains("validationActions:\n  - Deny\n"), "{deny}");
    for (action, vap_word, kyverno_word) in [("warn", "Warn", "Audit"), ("audit", "Audit", "Audit")]
    {
        let other = emit(&["--action", action]);
        let changed: Vec<(&str, &str)> = deny
            .lines()
            .zip(other.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(
            changed,
            [("  - Deny", format!("  - {vap_word}").as_str())],
            "{action}"
        );
        let kyverno = emit(&["--format", "kyverno", "--action", action]);
        assert!(
            kyverno.contains(&format!("failureAction: {kyverno_word}\n")),
            "{kyverno}"
        );
        assert_eq!(kyverno.contains("emitWarning: true"), action == "warn");
        let gatekeeper = emit(&["--format", "gatekeeper", "--action", action]);
        let expected = if action == "warn" { "warn" } else { "dryrun" };
        assert!(
            gatekeeper.contains(&format!("enforcementAction: {expected}\n")),
            "{gatekeeper}"
        );
    }
}

#[test]
fn messages_name_the_layout_file_and_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("node.yaml");
    fs::write(&layout, layout::manifest::DEFAULT_LAYOUT).unwrap();
    let text = emit(&["--layout", layout.to_str().unwrap()]);
    let etcd = crate::support::etcd_protected_line();
    assert!(
        text.contains(&format!("/var/lib/etcd (line {etcd})")),
        "the protected path's line: {text}"
    );
    assert!(text.contains(&format!("({})", layout.display())), "{text}");
}

#[test]
fn a_bad_layout_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("bad.yaml");
    fs::write(&layout, "kind: Layout\nspec: [\n").unwrap();
    let output = run(semanifest().args(["admission", "--layout"]).arg(&layout));
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("bad.yaml"), "{}", stderr(&output));
}

fn python(script: &str, args: &[&std::path::Path]) -> (Option<i32>, String) {
    let output = crate::support::venv_python()
        .arg(script)
        .args(args)
        .output()
        .expect("run .venv/bin/python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

const SCHEMA: &str = "tests/data/admission/admissionregistration-v1.schema.json";

#[test]
fn every_object_validates_against_the_admissionregistration_v1_schema() {
    let dir = tempfile::tempdir().unwrap();
    for action in ["deny", "warn", "audit"] {
        let file = dir.path().join(format!("{action}.yaml"));
        fs::write(&file, emit(&["--action", action])).unwrap();
        let (code, text) = python(
            ".ci/validate-admission-schema.py",
            &[std::path::Path::new(SCHEMA), &file],
        );
        assert_eq!(code, Some(0), "{action}: {text}");
        assert!(text.contains("validated 2 documents"), "{text}");
    }
    // Control: a misspelt field, which the API server would drop without
    // a word, is refused.
    let file = dir.path().join("misspelt.yaml");
    fs::write(
        &file,
        emit(&[]).replace("messageExpression:", "messageExpresion:"),
    )
    .unwrap();
    let (code, text) = python(
        ".ci/validate-admission-schema.py",
        &[std::path::Path::new(SCHEMA), &file],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("'messageExpresion' was unexpected"), "{text}");
}

#[test]
fn every_cel_expression_compiles_in_an_independent_engine() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["vap", "kyverno"] {
        let file = dir.path().join(format!("{format}.yaml"));
        fs::write(&file, emit(&["--format", format])).unwrap();
        let (code, text) = python(
            ".ci/admission-cel.py",
            &[std::path::Path::new("compile"), &file],
        );
        assert_eq!(code, Some(0), "{format}: {text}");
        // 13 variables, 6 validations, 6 messageExpressions.
        assert!(text.contains("compiled 25 expressions"), "{format}: {text}");
    }
    // Control: an expression that does not parse is reported.
    let file = dir.path().join("broken.yaml");
    fs::write(
        &file,
        emit(&[]).replacen(
            "size(variables.invalidPaths) == 0",
            "size(variables.invalidPaths) == ",
            1,
        ),
    )
    .unwrap();
    let (code, text) = python(
        ".ci/admission-cel.py",
        &[std::path::Path::new("compile"), &file],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("validation 0"), "{text}");
}
