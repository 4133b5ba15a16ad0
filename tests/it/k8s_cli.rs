//! `semanifest check --k8s` as a user runs it on real manifests, through the
//! binary and its JSON report, with the exit code: one bad document among
//! good ones, directories read as kubectl reads them, merge keys, and the
//! exit codes of bad input. The upstream files are the unmodified ones of
//! `tests/data/k8s/upstream/`.

use std::fs;
use std::path::Path;

use crate::support::{run, semanifest, stderr, stdout};

const UPSTREAM: &str = "tests/data/k8s/upstream";

struct Report {
    code: Option<i32>,
    json: serde_json::Value,
    stderr: String,
}

impl Report {
    /// (rule, line, column) of every finding of the Kubernetes phase, in
    /// report order.
    fn k8s(&self) -> Vec<(String, u64, u64)> {
        self.findings()
            .map(|f| {
                let location = &f["location"];
                (
                    f["rule"].as_str().unwrap().to_owned(),
                    location["line"].as_u64().unwrap_or(0),
                    location["column"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    }

    fn findings(&self) -> impl Iterator<Item = &serde_json::Value> {
        self.json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"].as_str().unwrap().starts_with("k8s-"))
    }

    fn find(&self, rule: &str, line: u64) -> &serde_json::Value {
        self.findings()
            .find(|f| f["rule"] == rule && f["location"]["line"] == line)
            .unwrap_or_else(|| panic!("no {rule} at line {line}: {:#}", self.json))
    }
}

fn check_k8s(paths: &[&Path]) -> Report {
    let mut command = semanifest();
    command.args(["check", "--format", "json"]);
    for path in paths {
        command.arg("--k8s").arg(path);
    }
    report_of(&mut command)
}

/// Runs a `check --format json` command and reads its report.
fn report_of(command: &mut std::process::Command) -> Report {
    let output = run(command);
    let json = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&output), stderr(&output)));
    Report {
        code: output.status.code(),
        json,
        stderr: stderr(&output),
    }
}

fn upstream(file: &str) -> String {
    fs::read_to_string(Path::new(UPSTREAM).join(file)).unwrap()
}

fn rule_lines(report: &Report, rule: &str) -> Vec<u64> {
    report
        .k8s()
        .into_iter()
        .filter(|(r, _, _)| r == rule)
        .map(|(_, line, _)| line)
        .collect()
}

/// A bad document first, then kubeadm's unchanged etcd static
/// pod. The etcd volume (line 57 of the upstream file) must be reported
/// below the bad document, whatever the bad document is.
#[test]
fn a_bad_document_hides_no_other_document() {
    let bad_documents = [
        // A Pod whose readOnly: yes fails strict boolean parsing.
        (
            "pod-yes",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    volumeMounts:\n    - {name: v, mountPath: /v, readOnly: yes}\n  volumes:\n  - {name: v, hostPath: {path: /var/mnt/x}}\n",
            Some(("k8s-invalid-object", 9, 42)),
        ),
        // A ConfigMap with a duplicate key.
        (
            "configmap-duplicate",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twice}\ndata:\n  a: one\n  a: two\n",
            Some(("k8s-invalid-object", 6, 3)),
        ),
        // A custom resource whose spec (written before its kind) has a
        // `privileged: yes`: not a workload, so not ours to judge.
        (
            "custom-resource-yes",
            "apiVersion: example.com/v1\nspec:\n  containers:\n  - name: c\n    securityContext: {privileged: yes}\nkind: Sandbox\nmetadata: {name: cr}\n",
            None,
        ),
        // Not YAML at all.
        (
            "syntax-error",
            "apiVersion: v1\nkind: Pod\nspec: [\n",
            Some(("k8s-invalid-yaml", 3, 7)),
        ),
    ];
    let etcd = upstream("kubeadm-etcd.yaml");
    let dir = tempfile::tempdir().unwrap();
    for (name, bad, expected) in bad_documents {
        let file = dir.path().join(format!("{name}.yaml"));
        fs::write(&file, format!("{bad}---\n{etcd}")).unwrap();
        let offset = bad.lines().count() as u64 + 1;
        let report = check_k8s(&[&file]);
        let k8s = report.k8s();
        assert!(
            k8s.contains(&("k8s-hostpath-protected".to_owned(), offset + 57, 13)),
            "{name}: the etcd volume is missing: {k8s:?}"
        );
        match expected {
            Some((rule, line, column)) => {
                assert!(
                    k8s.contains(&(rule.to_owned(), line, column)),
                    "{name}: {k8s:?}"
                );
                // The bad document's finding carries its source line.
                let finding = report.find(rule, line);
                assert_eq!(
                    finding["snippet"],
                    bad.lines().nth(line as usize - 1).unwrap(),
                    "{name}"
                );
            }
            None => {
                assert_eq!(
                    rule_lines(&report, "k8s-skipped-object"),
                    [6],
                    "{name}: {k8s:?}"
                );
                assert!(
                    !k8s.iter().any(|(r, _, _)| r.starts_with("k8s-invalid")),
                    "{name}: {k8s:?}"
                );
            }
        }
        let not_yaml = expected.is_some_and(|(rule, _, _)| rule == "k8s-invalid-yaml");
        assert_eq!(
            report.code,
            Some(if not_yaml { 2 } else { 1 }),
            "{name}: {}",
            report.stderr
        );
    }
}

/// A directory holding only `pod.json` (hostPath
/// /var/lib/etcd) is read, like `kubectl apply -f DIR` reads it, and what
/// is skipped is noted.
#[test]
fn a_directory_is_read_like_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let pod = r#"{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {"name": "etcd-reader"},
  "spec": {
    "containers": [{"name": "c", "image": "busybox", "volumeMounts": [{"name": "etcd", "mountPath": "/etcd"}]}],
    "volumes": [{"name": "etcd", "hostPath": {"path": "/var/lib/etcd"}}]
  }
}
"#;
    fs::write(dir.path().join("pod.json"), pod).unwrap();
    let report = check_k8s(&[dir.path()]);
    assert!(
        report
            .k8s()
            .contains(&("k8s-hostpath-protected".to_owned(), 7, 55)),
        "{:?}",
        report.k8s()
    );
    assert_eq!(report.code, Some(1));

    // A dot-file is read too; an upper-case extension and a README are
    // noted, not read, and do not change the exit code.
    fs::remove_file(dir.path().join("pod.json")).unwrap();
    fs::write(dir.path().join(".pod.yaml"), upstream("kubeadm-etcd.yaml")).unwrap();
    fs::write(dir.path().join("POD.YAML"), "kind: Pod\n").unwrap();
    fs::write(dir.path().join("README.md"), "# manifests\n").unwrap();
    let report = check_k8s(&[dir.path()]);
    assert!(
        rule_lines(&report, "k8s-hostpath-protected").contains(&57),
        "{:?}",
        report.k8s()
    );
    let notes: Vec<&str> = report
        .findings()
        .filter(|f| f["rule"] == "k8s-skipped-file")
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].contains("POD.YAML") && notes[0].contains("kubectl"),
        "{notes:?}"
    );
    assert!(notes[1].contains("README.md"), "{notes:?}");
    assert_eq!(report.code, Some(1));
}

/// Positions at the `path:` value through merge keys and
/// aliases, with a note saying where the value came from.
#[test]
fn positions_through_merge_keys_and_aliases() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("merge.yaml");
    let text = "\
apiVersion: v1
kind: Pod
metadata: {name: merged}
spec:
  containers:
  - name: c
    image: busybox
    volumeMounts: [{name: pki, mountPath: /pki, readOnly: true}, {name: etcd, mountPath: /etcd, readOnly: true}, {name: logs, mountPath: /logs, readOnly: true}]
  volumes:
  - name: pki
    <<: {hostPath: {path: /var/lib/kubelet/pki}}
  - name: etcd
    hostPath: {path: &etcd /var/lib/etcd}
  - name: logs
    hostPath:
      path: *etcd
";
    fs::write(&file, text).unwrap();
    let report = check_k8s(&[&file]);
    let protected: Vec<(u64, u64)> = report
        .k8s()
        .into_iter()
        .filter(|(rule, _, _)| rule == "k8s-hostpath-protected")
        .map(|(_, line, column)| (line, column))
        .collect();
    // The merged value where it is written (not the `{` after `<<:`), the
    // anchored scalar, and the alias token that is this volume's value.
    assert_eq!(protected, [(11, 27), (13, 28), (16, 13)]);
    let related = |line: u64| -> Vec<(u64, u64, String)> {
        report.find("k8s-hostpath-protected", line)["related"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["location"]["file"] == file.display().to_string())
            .map(|r| {
                (
                    r["location"]["line"].as_u64().unwrap(),
                    r["location"]["column"].as_u64().unwrap(),
                    r["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let merged = related(11);
    assert_eq!(merged.len(), 1, "{merged:?}");
    assert_eq!((merged[0].0, merged[0].1), (11, 9));
    assert!(merged[0].2.contains("merge key"), "{merged:?}");
    assert!(related(13).is_empty());
    let aliased = related(16);
    assert_eq!(aliased.len(), 1, "{aliased:?}");
    assert_eq!((aliased[0].0, aliased[0].1), (13, 28));
    assert!(aliased[0].2.contains("alias"), "{aliased:?}");
}

/// Exit 2 for a file that is not YAML, with the finding and its
/// source line; exit 1 for findings, a document that is YAML but not an
/// object included; 0 for clean input.
#[test]
fn exit_codes_and_snippets() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yaml");
    fs::write(&broken, "kind: Pod\nspec: [\n").unwrap();
    let report = check_k8s(&[&broken]);
    assert_eq!(report.code, Some(2), "{}", report.stderr);
    let finding = report.find("k8s-invalid-yaml", 2);
    assert_eq!(finding["snippet"], "spec: [");
    assert_eq!(finding["location"]["column"], 7);

    // The human output shows the source line under the error.
    let output = run(semanifest().args(["check", "--k8s"]).arg(&broken));
    assert_eq!(output.status.code(), Some(2));
    let text = stdout(&output);
    assert!(
        text.contains("error[k8s-invalid-yaml]") && text.contains("2 | spec: ["),
        "{text}"
    );

    // Not UTF-8: an input error, exit 2.
    let latin1 = dir.path().join("latin1.yaml");
    fs::write(&latin1, b"kind: Pod # \xe9\n").unwrap();
    let report = check_k8s(&[&latin1]);
    assert_eq!(report.code, Some(2));
    assert!(
        report.stderr.contains("not valid UTF-8"),
        "{}",
        report.stderr
    );

    // YAML, not an object: a finding, exit 1.
    let shape = dir.path().join("shape.yaml");
    fs::write(&shape, "kind: Pod\nspec:\n  volumes: /var/lib/etcd\n").unwrap();
    let report = check_k8s(&[&shape]);
    assert_eq!(report.code, Some(1), "{}", report.stderr);
    assert_eq!(report.k8s(), [("k8s-invalid-object".to_owned(), 3, 12)]);

    // Control: a clean workload exits 0.
    let clean = dir.path().join("clean.yaml");
    fs::write(
        &clean,
        "kind: Pod\nspec:\n  containers: [{name: c, volumeMounts: [{name: v, mountPath: /v}]}]\n  volumes: [{name: v, hostPath: {path: /var/mnt/data}}]\n",
    )
    .unwrap();
    assert_eq!(check_k8s(&[&clean]).code, Some(0));
    // And the not-YAML file wins over findings elsewhere: still 2.
    assert_eq!(check_k8s(&[&shape, &broken]).code, Some(2));
}

/// Aws-ebs-csi-driver's Windows DaemonSet (unmodified) is one
/// note at its `kubernetes.io/os: windows`, not six "not absolute" errors.
#[test]
fn windows_workloads_are_skipped_with_a_note() {
    let windows = Path::new(UPSTREAM).join("aws-ebs-csi-driver-node-windows.yaml");
    let report = check_k8s(&[&windows]);
    assert_eq!(report.k8s(), [("k8s-skipped-non-linux".to_owned(), 45, 27)]);
    let note = report.find("k8s-skipped-non-linux", 45);
    assert_eq!(note["severity"], "note");
    assert_eq!(note["snippet"], "        kubernetes.io/os: windows");
    assert!(
        note["message"]
            .as_str()
            .unwrap()
            .contains("6 hostPath volumes"),
        "{note:#}"
    );
    assert_eq!(report.code, Some(0));

    // Control: the same DaemonSet pinned to Linux is checked (6 invalid
    // paths), so the note above is the OS pin's doing.
    let dir = tempfile::tempdir().unwrap();
    let linux = dir.path().join("linux.yaml");
    fs::write(
        &linux,
        upstream("aws-ebs-csi-driver-node-windows.yaml")
            .replace("kubernetes.io/os: windows", "kubernetes.io/os: linux"),
    )
    .unwrap();
    let report = check_k8s(&[&linux]);
    assert_eq!(
        rule_lines(&report, "k8s-hostpath-invalid").len(),
        6,
        "{:?}",
        report.k8s()
    );
    assert_eq!(report.code, Some(1));

    // Required node affinity pins it too, when every term excludes Linux.
    let affinity = |terms: &str| {
        format!(
            "kind: Pod\nspec:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n{terms}  volumes: [{{name: v, hostPath: {{path: 'C:\\var'}}}}]\n"
        )
    };
    let pinned = dir.path().join("affinity.yaml");
    fs::write(
        &pinned,
        affinity("        - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [windows]}]\n        - matchExpressions: [{key: kubernetes.io/os, operator: NotIn, values: [linux]}]\n"),
    )
    .unwrap();
    let report = check_k8s(&[&pinned]);
    assert_eq!(report.k8s(), [("k8s-skipped-non-linux".to_owned(), 7, 77)]);
    // Control: a second term that admits Linux makes it checkable.
    fs::write(
        &pinned,
        affinity("        - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [windows]}]\n        - matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]\n"),
    )
    .unwrap();
    let report = check_k8s(&[&pinned]);
    assert_eq!(
        rule_lines(&report, "k8s-hostpath-invalid"),
        [9],
        "{:?}",
        report.k8s()
    );
}

/// Rook's cleanup job shape: a privileged container mounting
/// `path: "<dataDirHostPath>"` keeps the privileged finding, at its
/// `privileged:` value, beside the invalid path.
#[test]
fn privileged_with_an_invalid_path_keeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cleanup.yaml");
    fs::write(
        &file,
        "\
apiVersion: batch/v1
kind: Job
metadata: {name: cleanup}
spec:
  template:
    spec:
      containers:
      - name: host-cleanup
        image: rook/ceph
        securityContext: {privileged: true}
        volumeMounts: [{name: cleanup, mountPath: /rook}]
      volumes:
      - name: cleanup
        hostPath: {path: \"<dataDirHostPath>\"}
",
    )
    .unwrap();
    let report = check_k8s(&[&file]);
    assert_eq!(
        report.k8s(),
        [
            ("k8s-hostpath-invalid".to_owned(), 14, 26),
            ("k8s-hostpath-privileged".to_owned(), 10, 39)
        ]
    );
    let message = report.find("k8s-hostpath-privileged", 10)["message"].clone();
    assert!(
        message
            .as_str()
            .is_some_and(|m| m.contains("mounts hostPath volume `cleanup` at `/rook`; ")),
        "{message}"
    );
}

/// The whole upstream directory through the CLI: no input error, every
/// finding of the reviewed list, exit 1.
#[test]
fn the_upstream_directory_through_the_cli() {
    let report = check_k8s(&[Path::new(UPSTREAM)]);
    assert_eq!(report.code, Some(1), "{}", report.stderr);
    assert!(report.stderr.is_empty(), "{}", report.stderr);
    let expected = fs::read_to_string("tests/data/k8s/upstream.expected").unwrap();
    assert_eq!(report.k8s().len(), expected.lines().count());
}

/// `check --k8s` judges from the validated layout and runs no secilc (a
/// secilc that does not exist is never asked for); `--policy` still runs
/// it, which is the control: the same missing secilc is then bad input.
#[test]
fn k8s_alone_runs_no_policy_compiler() {
    let file = Path::new("tests/data/k8s/corpus/etcd-backup.yaml");
    let with = |extra: &[&str]| {
        let mut command = semanifest();
        command
            .args([
                "check",
                "--format",
                "json",
                "--secilc",
                "/nonexistent/secilc",
            ])
            .args(extra)
            .arg("--k8s")
            .arg(file);
        run(&mut command)
    };
    let alone = with(&[]);
    assert_eq!(alone.status.code(), Some(1), "{}", stderr(&alone));
    assert!(stderr(&alone).is_empty(), "{}", stderr(&alone));
    let report: serde_json::Value = serde_json::from_slice(&alone.stdout).unwrap();
    assert!(report["summary"]["errors"].as_u64().unwrap() > 0);

    let policy = with(&["--policy"]);
    assert_eq!(policy.status.code(), Some(2), "{}", stdout(&policy));
    assert!(stderr(&policy).contains("secilc"), "{}", stderr(&policy));
}

/// `check --layout L --k8s` on the corpus's privileged debugging pod: a
/// layout naming it in `privilegedExceptions` turns the privileged error
/// into a note at the same `privileged:` line, with the reason, and the
/// run exits 0. Controls: the default layout, and an exception for the
/// same name in another namespace, keep the error and exit 1.
#[test]
fn privileged_exceptions_through_the_cli() {
    let pod = Path::new("tests/data/k8s/corpus/privileged-pod.yaml");
    let privileged_line = fs::read_to_string(pod)
        .unwrap()
        .lines()
        .position(|l| l.contains("privileged: true"))
        .unwrap() as u64
        + 1;
    let dir = tempfile::tempdir().unwrap();
    let layout_with = |namespace: &str| {
        let layout = dir.path().join(format!("layout-{namespace}.yaml"));
        let text = ::layout::manifest::DEFAULT_LAYOUT.replacen(
            "\n  paths:\n",
            &format!(
                "\n  privilegedExceptions:\n    - {{ namespace: {namespace}, name: node-debugger, reason: inspects the node's processes }}\n  paths:\n"
            ),
            1,
        );
        assert_ne!(
            text,
            ::layout::manifest::DEFAULT_LAYOUT,
            "no `paths:` in the default layout"
        );
        fs::write(&layout, text).unwrap();
        layout
    };
    let check = |layout: Option<&Path>| {
        let mut command = semanifest();
        command.args(["check", "--format", "json"]);
        if let Some(layout) = layout {
            command.arg("--layout").arg(layout);
        }
        report_of(command.arg("--k8s").arg(pod))
    };

    let accepted = check(Some(&layout_with("default")));
    assert_eq!(accepted.code, Some(0), "{:#}", accepted.json);
    let note = accepted.find("k8s-privileged-accepted", privileged_line);
    assert_eq!(note["severity"], "note", "{note:#}");
    assert!(
        note["message"]
            .as_str()
            .unwrap()
            .contains("inspects the node's processes"),
        "{note:#}"
    );
    assert_eq!(
        rule_lines(&accepted, "k8s-hostpath-privileged"),
        Vec::<u64>::new()
    );

    for control in [check(None), check(Some(&layout_with("kube-system")))] {
        assert_eq!(control.code, Some(1), "{}", control.stderr);
        assert_eq!(
            rule_lines(&control, "k8s-hostpath-privileged"),
            vec![privileged_line]
        );
        assert_eq!(
            rule_lines(&control, "k8s-privileged-accepted"),
            Vec::<u64>::new()
        );
    }
}
