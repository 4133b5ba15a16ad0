//! `semanifest check --labels ROOT` reports what `apply` would change
//! besides labels: missing declared directories, another mode or owner,
//! and what is in the way.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use super::arena::*;

fn apply_findings(output: &std::process::Output) -> Vec<(String, String, String)> {
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout_of(output), stderr_of(output)));
    json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"].as_str().is_some_and(|r| r.starts_with("apply-")))
        .map(|f| {
            let text = |key: &str| f[key].as_str().unwrap_or_default().to_owned();
            (text("rule"), text("severity"), text("message"))
        })
        .collect()
}

#[test]
fn check_labels_reports_mode_owner_missing_and_blocked_directories() {
    let arena = Arena::new(Fs::Ext4);
    let layout = layout_with_owners(&arena);
    let layout = layout.to_str().expect("utf-8");
    let root = arena.root.to_str().expect("utf-8");
    let check = || {
        arena.semanifest(
            &[
                "check", "--layout", layout, "--labels", root, "--format", "json",
            ]
            .map(std::ffi::OsStr::new),
        )
    };
    let output = arena.on_root("apply", &["--layout", layout]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let output = arena.on_root("relabel", &["--layout", layout, root]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    // Control: right after apply, nothing to report.
    let output = check();
    assert_eq!(apply_findings(&output), []);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));

    fs::set_permissions(
        arena.path("var/lib/containerd"),
        fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    std::os::unix::fs::lchown(arena.path("var/mnt"), Some(0), Some(0)).expect("chown");
    fs::remove_dir(arena.path("var/log/audit")).expect("rmdir");
    fs::remove_dir(arena.path("var/run")).expect("rmdir");
    fs::write(arena.path("var/run"), "in the way").expect("file");
    let output = check();
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    let shown = |rel: &str| arena.path(rel).display().to_string();
    assert_eq!(
        apply_findings(&output),
        [
            (
                "apply-drift".to_owned(),
                "error".to_owned(),
                format!(
                    "{} has mode 0755, the layout says 0700",
                    shown("var/lib/containerd")
                )
            ),
            (
                "apply-missing".to_owned(),
                "warning".to_owned(),
                format!(
                    "{} is missing; `semanifest apply` creates it",
                    shown("var/log/audit")
                )
            ),
            (
                "apply-drift".to_owned(),
                "error".to_owned(),
                format!(
                    "{} is owned by 0:0, the layout says 1000:1000",
                    shown("var/mnt")
                )
            ),
            (
                "apply-blocked".to_owned(),
                "error".to_owned(),
                format!(
                    "{}: is a regular file, not a directory; apply never deletes or replaces it",
                    shown("var/run")
                )
            ),
        ]
    );
    assert!(
        stderr_of(&output).contains("4 differences from the layout's directories"),
        "{}",
        stderr_of(&output)
    );
    // check wrote nothing.
    assert!(!arena.path("var/log/audit").exists());
    assert_eq!(mode_of(&arena.path("var/lib/containerd")), 0o755);
    arena.finish();
}
