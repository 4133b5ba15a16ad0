//! The project under test: `semanifest` built with the release profile
//! (the stripped binary that ships: the guest runs what users install),
//! and the policies it compiles for the guest. Also the host-side
//! scenario `control/leaky-cil-rejected-by-build`, decided from
//! `build --format json`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{ensure, Context as _, Result};
use serde::Deserialize;

use crate::boots;
use crate::host::{self, say};
use crate::report::Row;

/// `cargo build --release --bin semanifest` in `repo`: the binary.
pub fn build(repo: &Path, work: &Path) -> Result<PathBuf> {
    say("cargo build --release");
    host::run_logged(
        Command::new("cargo")
            .args(["build", "--release", "--quiet", "--bin", "semanifest"])
            .current_dir(repo),
        &work.join("cargo.log"),
        "cargo build",
    )?;
    Ok(repo.join("target/release/semanifest"))
}

/// The policies the busybox guest loads, in `work/policy`: policy.33 and
/// file_contexts from the embedded default layout, and policy-leaky.33,
/// the same with `leaky.cil` compiled in with neverallow checking off (the
/// control the denial scenarios must fail under).
pub fn policies(testvm: &Path, work: &Path, semanifest: &Path) -> Result<PathBuf> {
    let out = work.join("policy");
    say(format!(
        "semanifest build --out {} (embedded default layout)",
        out.display()
    ));
    host::run_logged(
        Command::new(semanifest).arg("build").arg("--out").arg(&out),
        &work.join("build.log"),
        "semanifest build",
    )?;
    for file in ["policy.33", "file_contexts"] {
        ensure!(
            fs::metadata(out.join(file)).is_ok_and(|m| m.len() > 0),
            "semanifest build wrote no {file} in {}",
            out.display()
        );
    }

    let leaky = testvm.join("leaky.cil");
    // The control policy: the same build with neverallow checking off.
    host::run_logged(
        Command::new(semanifest)
            .arg("build")
            .arg("--include")
            .arg(&leaky)
            .arg("--unsafe-disable-neverallow")
            .arg("--out")
            .arg(work.join("policy-leaky")),
        &work.join("leaky-unchecked.log"),
        "building the leaky control policy",
    )?;
    fs::copy(
        work.join("policy-leaky/policy.33"),
        out.join("policy-leaky.33"),
    )?;
    Ok(out)
}

/// The parts of `build --format json` (docs/build-json.md) the control
/// reads.
#[derive(Deserialize)]
struct BuildReport {
    ok: bool,
    errors: Vec<BuildReportError>,
}

#[derive(Deserialize)]
struct BuildReportError {
    kind: String,
    message: String,
    #[serde(rename = "type")]
    type_name: Option<String>,
}

const LEAKY_EXPECTED: &str = "build fails (neverallow)";

/// The host-side control `control/leaky-cil-rejected-by-build`: `build
/// --include leaky.cil --format json` must be refused, for a broken
/// neverallow. The report on standard output, the human errors in
/// `leaky-build.log`.
pub fn leaky_rejected(testvm: &Path, work: &Path, semanifest: &Path) -> Result<Row> {
    let leaky = testvm.join("leaky.cil");
    let log = work.join("leaky-build.log");
    let output = Command::new(semanifest)
        .arg("build")
        .arg("--include")
        .arg(&leaky)
        .arg("--out")
        .arg(work.join("policy-leaky-build"))
        .args(["--format", "json"])
        .stdin(Stdio::null())
        .stderr(fs::File::create(&log)?)
        .output()
        .context("cannot run semanifest build")?;
    fs::write(work.join("leaky-build.json"), &output.stdout)?;
    let report = serde_json::from_slice::<BuildReport>(&output.stdout);
    Ok(judge_leaky(
        output.status.success(),
        report.as_ref().map_err(|e| e.to_string()),
    ))
}

/// The verdict: the build must fail, and every error must be a broken
/// neverallow.
fn judge_leaky(succeeded: bool, report: Result<&BuildReport, String>) -> Row {
    let row = |observed: String, passed| {
        Row::new(boots::LEAKY_CIL_REJECTED, LEAKY_EXPECTED, observed, passed)
    };
    if succeeded {
        return row("build succeeded".into(), false);
    }
    let report = match report {
        Ok(report) => report,
        Err(error) => return row(format!("failed without a JSON report: {error}"), false),
    };
    let broken: Option<Vec<&str>> = report
        .errors
        .iter()
        .map(|e| {
            (e.kind == "neverallow")
                .then_some(e.type_name.as_deref())
                .flatten()
        })
        .collect();
    match broken {
        Some(types) if !report.ok && !types.is_empty() => row(
            format!("rejected, neverallow on: {}", types.join(" ")),
            true,
        ),
        _ => {
            let reasons: Vec<String> = report
                .errors
                .iter()
                .map(|e| format!("{}: {}", e.kind, e.message))
                .collect();
            let text: String = reasons.join("; ").chars().take(200).collect();
            row(format!("failed for another reason: {text}"), false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(json: &str) -> BuildReport {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_leaky_control_passes_only_on_neverallow_errors() {
        let rejected = report(
            r#"{"schema":"semanifest-build","ok":false,"written":[],"errors":[
                {"kind":"neverallow","message":"m","path":"/var/lib/etcd","type":"etcd_var_t"},
                {"kind":"neverallow","message":"m","path":"/var/log/audit","type":"audit_log_t"}]}"#,
        );
        let row = judge_leaky(false, Ok(&rejected));
        assert!(row.passed);
        assert_eq!(
            row.observed,
            "rejected, neverallow on: etcd_var_t audit_log_t"
        );
        assert_eq!(row.name, "control/leaky-cil-rejected-by-build");
        assert_eq!(row.expected, "build fails (neverallow)");

        // Controls: a build that succeeds, one that fails to compile, and
        // one whose report cannot be read.
        assert_eq!(judge_leaky(true, Ok(&rejected)).observed, "build succeeded");
        let syntax = report(
            r#"{"ok":false,"errors":[{"kind":"secilc","message":"secilc rejected the policy"}]}"#,
        );
        let row = judge_leaky(false, Ok(&syntax));
        assert!(!row.passed);
        assert_eq!(
            row.observed,
            "failed for another reason: secilc: secilc rejected the policy"
        );
        let mixed = report(
            r#"{"ok":false,"errors":[{"kind":"neverallow","message":"m","type":"etcd_var_t"},{"kind":"error","message":"disk full"}]}"#,
        );
        assert!(!judge_leaky(false, Ok(&mixed)).passed);
        let row = judge_leaky(false, Err("EOF while parsing".into()));
        assert!(!row.passed);
        assert!(row.observed.starts_with("failed without a JSON report"));
    }
}
