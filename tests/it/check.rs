//! `semanifest check` as CI runs it: exit codes, positions, and each phase
//! with a control showing it can fail.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::{run, semanifest, stderr, stdout};

fn check(args: &[&str]) -> std::process::Output {
    run(semanifest().arg("check").args(args))
}

#[test]
fn default_layout_is_clean() {
    let output = check(&[]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    // The bind-mount note keeps the design choice visible.
    assert!(
        stdout(&output).contains("note[layout-below-protected]"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn leaky_include_is_reported_at_the_protected_line() {
    let dir = tempfile::tempdir().unwrap();
    let leaky = dir.path().join("leaky.cil");
    fs::write(
        &leaky,
        "(allow container_t kubelet_pki_t (file (read open)))\n",
    )
    .unwrap();
    let output = check(&["--include", leaky.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let findings = json["findings"].as_array().unwrap();
    let neverallow: Vec<_> = findings
        .iter()
        .filter(|f| f["rule"] == "policy-neverallow")
        .collect();
    assert_eq!(neverallow.len(), 1, "{json:#}");
    let location = &neverallow[0]["location"];
    // `protected: true` of /var/lib/kubelet/pki in the embedded layout.
    assert_eq!(location["file"], "<embedded default layout>");
    let lines: Vec<&str> = layout::manifest::DEFAULT_LAYOUT.lines().collect();
    let pki = lines
        .iter()
        .position(|line| line.ends_with("- path: /var/lib/kubelet/pki"))
        .expect("pki in the default layout");
    let protected = pki
        + lines[pki..]
            .iter()
            .position(|line| line.trim() == "protected: true")
            .expect("pki is protected");
    assert_eq!(
        (location["line"].as_u64(), location["column"].as_u64()),
        (Some(protected as u64 + 1), Some(18)),
        "{json:#}"
    );
    assert!(neverallow[0]["message"]
        .as_str()
        .unwrap()
        .contains("/var/lib/kubelet/pki"));
}

#[test]
fn workload_transition_into_a_protected_domain_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let extra = dir.path().join("transition.cil");
    fs::write(
        &extra,
        "(allow container_t etcd_t (process (transition)))\n",
    )
    .unwrap();
    let output = check(&["--include", extra.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("error[policy-transition]"), "{text}");
    assert!(text.contains("container_t → etcd_t"), "{text}");
    assert!(text.contains("`/var/lib/etcd`"), "{text}");
    // Control: a transition into a domain without protected access is fine.
    fs::write(&extra, "(type probe_t)\n(roletype system_r probe_t)\n(typeattributeset domain (probe_t))\n(allow container_t probe_t (process (transition)))\n").unwrap();
    let output = check(&["--include", extra.to_str().unwrap()]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
}

#[test]
fn invalid_layout_findings_carry_positions_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("bad.yaml");
    let text =
        layout::manifest::DEFAULT_LAYOUT.replace("- path: /var/mnt\n", "- path: /var/mnt/\n");
    fs::write(&layout, text).unwrap();
    let output = check(&["--layout", layout.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let line = 1 + layout::manifest::DEFAULT_LAYOUT
        .lines()
        .position(|line| line.ends_with("- path: /var/mnt"))
        .expect("/var/mnt in the default layout");
    assert!(
        stdout(&output).contains(&format!("{}:{line}:13", layout.display())),
        "{}",
        stdout(&output)
    );
    assert!(
        stdout(&output).contains("error[layout-path]"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn base_overlap_is_a_warning_and_deny_warnings_fails() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("dev.yaml");
    let text = layout::manifest::DEFAULT_LAYOUT.to_owned()
        + "\n    - path: /dev/shm\n      type: shm_t\n      access: { pods: write }\n";
    fs::write(&layout, text).unwrap();
    let output = check(&["--layout", layout.to_str().unwrap()]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).contains("warning[layout-fc-base]"),
        "{}",
        stdout(&output)
    );
    assert!(
        stdout(&output).contains("`system_u:object_r:device_t:s0`"),
        "{}",
        stdout(&output)
    );
    let output = check(&["--layout", layout.to_str().unwrap(), "--deny-warnings"]);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn k8s_findings_and_unreadable_input() {
    let corpus = crate::support::data("k8s/corpus/etcd-backup.yaml");
    let output = check(&["--k8s", corpus.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("error[k8s-hostpath-protected]"),
        "{}",
        stdout(&output)
    );
    let output = check(&["--k8s", "/no/such/dir"]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("/no/such/dir"),
        "{}",
        stderr(&output)
    );
}

fn setfattr(path: &Path, value: &str) {
    let status = Command::new(crate::support::tool("setfattr", "attr"))
        .args(["-h", "-n", "security.selinux", "-v", value])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn labels_report_exactly_the_injected_drift() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path();
    for sub in [
        "var/lib/etcd/member/snap",
        "var/mnt/data",
        "var/log/pods/ns_pod",
        "var/lib/kubelet/pki",
    ] {
        fs::create_dir_all(root.join(sub)).unwrap();
    }
    for file in [
        "var/lib/etcd/member/snap/db",
        "var/mnt/data/a",
        "var/log/pods/ns_pod/0.log",
        "var/lib/kubelet/pki/kubelet.key",
    ] {
        fs::write(root.join(file), b"x").unwrap();
    }
    // Place the layout's directories and label everything correctly first.
    let output = run(semanifest().args(["apply", "--root"]).arg(root));
    assert!(output.status.success(), "{}", stderr(&output));
    relabel_with_default_layout(root);
    // Control: a correctly labelled tree has no drift.
    let output = check(&["--labels", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );

    // In path order, which is the order findings are reported in.
    let drifted = [
        "var/lib/etcd/member/snap/db",
        "var/log/pods/ns_pod/0.log",
        "var/mnt/data",
    ];
    setfattr(&root.join(drifted[0]), "system_u:object_r:var_mnt_t:s0");
    setfattr(
        &root.join(drifted[1]),
        "system_u:object_r:pods_log_t:s0:c1,c2",
    );
    setfattr(&root.join(drifted[2]), "system_u:object_r:var_t:s0");
    let output = check(&["--labels", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let reported: Vec<String> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "labels-drift")
        .map(|f| f["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(reported.len(), drifted.len(), "{reported:#?}");
    for (message, path) in reported.iter().zip(drifted) {
        assert!(
            message.starts_with(&format!("{}/{path} is labelled", root.display())),
            "{message}"
        );
    }
    assert!(
        stderr(&output).contains("3 with a different label"),
        "{}",
        stderr(&output)
    );
}

/// Unmounts on drop, so a failing test leaves no mount behind.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// `--labels` walks like `relabel` (one resolution below the root, through
/// `fsroot`): a symlink to a tree outside the root is not followed and a
/// same-filesystem bind mount of it is not entered, so the outside tree's
/// wrong labels are never reported. Control: `relabel --check
/// --cross-mounts` reaches the same objects through the mount and finds
/// them drifted.
#[test]
fn labels_stay_below_the_root_like_relabel() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    fs::create_dir_all(root.join("var/mnt/data")).unwrap();
    fs::create_dir_all(root.join("var/mnt/bound")).unwrap();
    fs::write(root.join("var/mnt/data/a"), b"x").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("var/mnt/escape")).unwrap();
    fs::create_dir_all(outside.join("sub")).unwrap();
    fs::write(outside.join("sub/secret"), b"x").unwrap();
    let output = run(semanifest().args(["apply", "--root"]).arg(&root));
    assert!(output.status.success(), "{}", stderr(&output));
    relabel_with_default_layout(&root);
    for object in ["", "sub", "sub/secret"] {
        setfattr(&outside.join(object), "system_u:object_r:etc_t:s0");
    }
    let status = Command::new("mount")
        .arg("--bind")
        .arg(&outside)
        .arg(root.join("var/mnt/bound"))
        .status()
        .unwrap();
    assert!(status.success(), "mount --bind");
    let _mount = Unmount(root.join("var/mnt/bound"));

    let output = check(&["--labels", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(!stdout(&output).contains("secret"), "{}", stdout(&output));

    let output = run(semanifest()
        .args([
            "relabel",
            "--layout",
            "layouts/structured-var.yaml",
            "--check",
            "--cross-mounts",
            "--verbose",
            "--root",
        ])
        .arg(&root)
        .arg(&root));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let reported = format!("{}{}", stdout(&output), stderr(&output));
    assert!(reported.contains("var/mnt/bound/sub/secret"), "{reported}");
    assert!(!reported.contains("escape/"), "{reported}");
}

/// `--labels` walks with the relabeler, which raises its own soft limit on
/// open files: a tree that holds more directories open than the soft
/// limit allows is checked without an error. Control: with the hard limit
/// as low as the soft one, the same walk runs out of descriptors.
#[test]
fn labels_walk_raises_the_open_file_limit() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path();
    // 600 levels, each with the way down and three leaf directories: a
    // level whose leaves are still queued keeps its descriptor open while
    // the walk goes deeper. Whether they are still queued depends on two
    // things the test must pin down, or the control finds no error on some
    // machines (it did, on one whose ext4 listed `a` first):
    // - where the way down comes in the listing: the walk takes the last
    //   entry listed first, so a level whose way down is listed first is
    //   done before the walk descends. ext4 lists by a hash of the name,
    //   seeded per filesystem, others by creation order or its reverse;
    //   so every level has its own names (a hash puts the way down first
    //   on about a quarter of the levels), and every other level makes it
    //   last (creation order in either direction leaves half);
    // - a second thread, which steals the oldest queued leaves and closes
    //   the levels above about as fast as the walk descends: one thread
    //   (rayon's RAYON_NUM_THREADS) holds a level until its leaves are done.
    // Measured on tmpfs and six fresh ext4 filesystems: the control always
    // fails; with the same names at every level, or two threads, it passed
    // on some of them.
    let mut level = root.join("var");
    for depth in 0..600 {
        let down = level.join(format!("a{depth}"));
        if depth % 2 == 1 {
            fs::create_dir(&down).unwrap();
        }
        for leaf in ["b", "c", "d"] {
            fs::create_dir_all(level.join(format!("{leaf}{depth}"))).unwrap();
        }
        fs::create_dir_all(&down).unwrap();
        level = down;
    }
    let with_limit = |limit: &str| {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("ulimit {limit} 128 && exec \"$0\" \"$@\""))
            .env("RAYON_NUM_THREADS", "1")
            .arg(env!("CARGO_BIN_EXE_semanifest"))
            .args(["check", "--format", "json", "--labels"])
            .arg(root);
        let output = run(&mut command);
        let json: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", stderr(&output)));
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "labels-error")
            .map(|f| f["message"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    // Control: soft and hard limit 128.
    let errors = with_limit("-n");
    assert!(
        errors.iter().any(|e| e.contains("Too many open files")),
        "{errors:#?}"
    );
    // Soft limit 128, hard limit as before: raised, no error.
    let errors = with_limit("-Sn");
    assert!(errors.is_empty(), "{errors:#?}");
}

/// An image that holds `/var/run` as a symlink (Debian's `var/run ->
/// ../run`): `--keep-symlink /var/run` keeps it as `apply --keep-symlink`
/// does, a note instead of `apply-blocked`, and nothing below the link's
/// target is reported or changed. Control: without the flag the same root
/// reports `apply-blocked` at /var/run. A path the layout does not have,
/// or the flag without --labels, is a usage error.
#[test]
fn labels_keep_a_symlink_as_apply_does() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("var")).unwrap();
    fs::create_dir_all(root.join("run/lock")).unwrap();
    fs::write(root.join("run/lock/held"), b"x").unwrap();
    std::os::unix::fs::symlink("../run", root.join("var/run")).unwrap();
    let output = run(semanifest()
        .args(["apply", "--keep-symlink", "/var/run", "--root"])
        .arg(root));
    assert!(output.status.success(), "{}", stderr(&output));
    relabel_with_default_layout(root);
    let run_before = fs::read_dir(root.join("run"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect::<Vec<_>>();
    let rules = |output: &std::process::Output| -> Vec<(String, String)> {
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["rule"].as_str().unwrap().to_owned(),
                    f["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let var_run = format!("{}/var/run", root.display());

    // Control: without the flag, /var/run is in the way of apply.
    let output = check(&["--labels", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let found = rules(&output);
    assert!(
        found
            .iter()
            .any(|(rule, message)| rule == "apply-blocked" && message.starts_with(&var_run)),
        "{found:#?}"
    );

    let output = check(&[
        "--labels",
        root.to_str().unwrap(),
        "--keep-symlink",
        "/var/run",
        "--format",
        "json",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let found = rules(&output);
    assert!(
        !found
            .iter()
            .any(|(rule, _)| rule.starts_with("apply-") && rule != "apply-kept-symlink"),
        "{found:#?}"
    );
    assert_eq!(
        found
            .iter()
            .filter(|(rule, _)| rule == "apply-kept-symlink")
            .map(|(_, message)| message.as_str())
            .collect::<Vec<_>>(),
        [format!(
            "{var_run}: a symlink to /run, kept as the image holds it (never followed)"
        )],
        "{found:#?}"
    );
    let output = check(&[
        "--labels",
        root.to_str().unwrap(),
        "--keep-symlink",
        "/var/run",
    ]);
    assert!(
        stdout(&output).contains("note[apply-kept-symlink]"),
        "{}",
        stdout(&output)
    );
    assert_eq!(
        fs::read_link(root.join("var/run")).unwrap(),
        Path::new("../run")
    );
    assert_eq!(
        fs::read_dir(root.join("run"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>(),
        run_before
    );

    let output = check(&[
        "--labels",
        root.to_str().unwrap(),
        "--keep-symlink",
        "/srv/x",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--keep-symlink /srv/x: not a path of the layout"),
        "{}",
        stderr(&output)
    );
    let output = check(&["--keep-symlink", "/var/run"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--labels"), "{}", stderr(&output));
}

/// Labels everything below `root` as the default layout says (`relabel
/// --root`), so that only what a test injects afterwards differs.
fn relabel_with_default_layout(root: &Path) {
    let output = run(semanifest()
        .args([
            "relabel",
            "--layout",
            "layouts/structured-var.yaml",
            "--root",
        ])
        .arg(root)
        .arg(root));
    assert!(output.status.success(), "{}", stderr(&output));
}

/// A rule id or name names one rule across every producer. Control: the
/// same list twice is caught.
#[test]
fn rule_ids_and_names_are_unique_across_producers() {
    let all: Vec<&layout::diag::Rule> = semanifest::check::rules::RULES
        .iter()
        .chain(layout::manifest::rules::RULES.iter())
        .chain(k8s::RULES.iter())
        .copied()
        .collect();
    let unique = |rules: &[&layout::diag::Rule]| {
        let ids: std::collections::BTreeSet<&str> = rules.iter().map(|r| r.id).collect();
        let names: std::collections::BTreeSet<&str> = rules.iter().map(|r| r.name).collect();
        ids.len() == rules.len() && names.len() == rules.len()
    };
    assert!(unique(&all));
    let twice: Vec<_> = all.iter().chain(&all).copied().collect();
    assert!(!unique(&twice));
}
