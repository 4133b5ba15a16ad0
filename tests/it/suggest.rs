//! `semanifest suggest` as a platform team runs it: on the corpus of real
//! agent manifests, its outputs compared with golden files (the layout
//! and every patched manifest, byte for byte), then the round trip the
//! outputs promise: `build` compiles the suggested layout with secilc
//! (every protection proven) and `check` on the patched manifests reports
//! nothing but what suggest said it could not fix. The control: the same
//! layout with the unpatched manifests still fails.
//!
//! Bless: `SEMANIFEST_BLESS=1 cargo test --test it suggest::` and review
//! the diff of `tests/data/golden/suggest/`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::{run, semanifest, stderr, stdout};

const CORPUS: &str = "tests/data/k8s/corpus";
const GOLDEN: &str = "tests/data/golden/suggest/corpus";

/// The corpus files suggest is shown on: a CSI node plugin, a log
/// shipper, a node monitor, pods below the hostPath root, sockets and
/// devices, a privileged pod, container-level SELinux types, a List.
const FILES: [&str; 8] = [
    "csi-node.yaml",
    "fluent-bit.yaml",
    "node-exporter.yaml",
    "local-path-provisioner.yaml",
    "sockets-and-devices.yaml",
    "privileged-pod.yaml",
    "selinux-types.yaml",
    "kubectl-list.yaml",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn suggest(inputs: &[PathBuf], out: &Path, extra: &[&str]) -> std::process::Output {
    let mut command = semanifest();
    command.current_dir(root()).arg("suggest");
    for input in inputs {
        command.arg("--k8s").arg(input);
    }
    command.arg("--out").arg(out).args(extra);
    run(&mut command)
}

fn corpus_inputs() -> Vec<PathBuf> {
    FILES.iter().map(|f| Path::new(CORPUS).join(f)).collect()
}

/// Every file below `dir`, by relative path.
fn tree(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let text = fs::read_to_string(&path).unwrap();
                files.push((path.strip_prefix(dir).unwrap().to_path_buf(), text));
            }
        }
    }
    files.sort();
    files
}

/// Runs suggest on the corpus into a fresh directory; the human report
/// with the directory's name replaced by `OUT`.
fn corpus_run() -> (tempfile::TempDir, PathBuf, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("suggested");
    let output = suggest(&corpus_inputs(), &out, &[]);
    (dir, out, output)
}

#[test]
fn corpus_outputs_equal_the_goldens() {
    let (_dir, out, output) = corpus_run();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let report = stdout(&output).replace(&out.display().to_string(), "OUT");
    let mut produced = tree(&out);
    produced.push((PathBuf::from("report.txt"), report));
    produced.sort();
    let golden = root().join(GOLDEN);
    if std::env::var_os("SEMANIFEST_BLESS").is_some() {
        let _ = fs::remove_dir_all(&golden);
        for (path, text) in &produced {
            let at = golden.join(path);
            fs::create_dir_all(at.parent().unwrap()).unwrap();
            fs::write(at, text).unwrap();
        }
    }
    let expected = tree(&golden);
    let names = |files: &[(PathBuf, String)]| -> Vec<PathBuf> {
        files.iter().map(|(p, _)| p.clone()).collect()
    };
    assert_eq!(
        names(&produced),
        names(&expected),
        "run SEMANIFEST_BLESS=1 to update"
    );
    for ((path, text), (_, want)) in produced.iter().zip(&expected) {
        assert!(
            text == want,
            "{} differs from {GOLDEN}; if intended, run SEMANIFEST_BLESS=1 cargo test --test it suggest::\n{text}",
            path.display()
        );
    }
}

#[test]
fn manifests_change_only_where_the_type_is_set() {
    let (_dir, out, _) = corpus_run();
    for file in FILES {
        let before = fs::read_to_string(root().join(CORPUS).join(file)).unwrap();
        let after = fs::read_to_string(out.join("k8s").join(file)).unwrap();
        // Every line of the input is still there, in order; what was added
        // is SELinux options and nothing else.
        let is_type = |line: &str| line.trim_start().starts_with("type: ");
        let mut added = Vec::new();
        let mut replaced = Vec::new();
        let mut old = before.lines().peekable();
        for line in after.lines() {
            match old.peek() {
                Some(&same) if same == line => {
                    old.next();
                }
                // A type already written is replaced in place
                // (selinux-types.yaml), its comment kept.
                Some(&was) if is_type(was) && is_type(line) => {
                    replaced.push((was.to_owned(), line.to_owned()));
                    old.next();
                }
                _ => added.push(line.to_owned()),
            }
        }
        assert_eq!(old.next(), None, "{file}: input lines lost");
        for line in &added {
            let key = line.trim_start();
            assert!(
                key.starts_with("securityContext:")
                    || key.starts_with("seLinuxOptions:")
                    || key.starts_with("type: "),
                "{file}: added {line:?}"
            );
        }
        for (was, line) in replaced {
            let comment = |l: &str| l.find(" #").map(|at| l[at..].to_owned());
            assert_eq!(
                comment(&was),
                comment(&line),
                "{file}: {was:?} became {line:?}"
            );
        }
    }
}

/// The round trip: the suggested layout builds (secilc proves every
/// neverallow with the new agents in), and `check` on the patched
/// manifests reports errors only at what suggest said it could not fix:
/// protected paths, privileged containers and a path outside the layout
/// and every host class. The control: the unpatched manifests against the
/// same layout still fail where the patched ones pass.
#[test]
fn suggested_layout_builds_and_check_passes_but_for_what_suggest_left() {
    let (dir, out, _) = corpus_run();
    let layout = out.join("layout.yaml");
    let build = run(semanifest()
        .arg("build")
        .arg("--layout")
        .arg(&layout)
        .arg("--out")
        .arg(dir.path().join("build")));
    assert_eq!(build.status.code(), Some(0), "{}", stderr(&build));
    assert!(dir.path().join("build/policy.33").is_file());

    let check = |k8s: &Path| -> Vec<(String, String, u64)> {
        let output = run(semanifest()
            .current_dir(root())
            .args(["check", "--format", "json", "--layout"])
            .arg(&layout)
            .arg("--k8s")
            .arg(k8s));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", stderr(&output)));
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "error")
            .map(|f| {
                let file = f["location"]["file"].as_str().unwrap_or("");
                let name = Path::new(file)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                (
                    name,
                    f["rule"].as_str().unwrap().to_owned(),
                    f["location"]["line"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let mut patched = check(&out.join("k8s"));
    patched.sort();
    let expected = [
        ("csi-node.yaml", "k8s-hostpath-privileged", 57),
        ("fluent-bit.yaml", "k8s-hostpath-protected", 51),
        ("kubectl-list.yaml", "k8s-hostpath-protected", 46),
        ("node-exporter.yaml", "k8s-hostpath-protected", 97),
        ("privileged-pod.yaml", "k8s-hostpath-privileged", 22),
    ];
    let expected: Vec<(String, String, u64)> = expected
        .iter()
        .map(|(f, r, l)| ((*f).to_owned(), (*r).to_owned(), *l))
        .collect();
    assert_eq!(patched, expected);

    // Control: without the seLinuxOptions patch, the workloads suggest
    // confined fail against the very same layout.
    let original = check(&root().join(CORPUS).join("sockets-and-devices.yaml"));
    let rules: Vec<&str> = original.iter().map(|(_, r, _)| r.as_str()).collect();
    assert_eq!(
        rules,
        [
            "k8s-hostpath-outside-root",
            "k8s-hostpath-outside-root",
            "k8s-hostpath-outside-root"
        ],
        "{original:?}"
    );
    assert!(!patched
        .iter()
        .any(|(f, _, _)| f == "sockets-and-devices.yaml"));
}

#[test]
fn exit_codes_say_whether_everything_was_confined() {
    let dir = tempfile::tempdir().unwrap();
    let confined = suggest(
        &[Path::new(CORPUS).join("sockets-and-devices.yaml")],
        &dir.path().join("a"),
        &[],
    );
    assert_eq!(confined.status.code(), Some(0), "{}", stdout(&confined));
    let privileged = suggest(
        &[Path::new(CORPUS).join("privileged-pod.yaml")],
        &dir.path().join("b"),
        &[],
    );
    assert_eq!(privileged.status.code(), Some(1), "{}", stdout(&privileged));

    // Bad input: nothing is written.
    let bad = dir.path().join("bad.yaml");
    fs::write(&bad, "kind: Pod\nspec:\n  containers: [\n").unwrap();
    let out = dir.path().join("c");
    let invalid = suggest(std::slice::from_ref(&bad), &out, &[]);
    assert_eq!(invalid.status.code(), Some(2));
    assert!(
        stderr(&invalid).contains(&format!("{}:3:15: invalid YAML", bad.display())),
        "{}",
        stderr(&invalid)
    );
    assert!(!out.exists());
    let missing = suggest(&[dir.path().join("nope.yaml")], &out, &[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("nope.yaml"),
        "{}",
        stderr(&missing)
    );
    assert!(!out.exists());
}

#[test]
fn a_non_empty_directory_is_refused_and_symlinks_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("keep"), "mine").unwrap();
    let input = [Path::new(CORPUS).join("sockets-and-devices.yaml")];
    let refused = suggest(&input, &out, &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("not empty"),
        "{}",
        stderr(&refused)
    );
    assert!(!out.join("layout.yaml").exists());

    // With --force it writes, but never through a symlink in DIR.
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("k8s")).unwrap();
    let forced = suggest(&input, &out, &["--force"]);
    assert_eq!(forced.status.code(), Some(2), "{}", stdout(&forced));
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert_eq!(fs::read_to_string(out.join("keep")).unwrap(), "mine");

    fs::remove_file(out.join("k8s")).unwrap();
    let forced = suggest(&input, &out, &["--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert!(out.join("k8s/sockets-and-devices.yaml").is_file());
}

#[test]
fn list_items_and_documents_are_patched_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir_all(input.join("sub")).unwrap();
    let list = "\
apiVersion: v1
kind: List
items:
- kind: Pod
  metadata: {name: stats}
  spec:
    containers:
    - name: c
      volumeMounts: [{name: proc, mountPath: /host/proc, readOnly: true}]
    volumes:
    - {name: proc, hostPath: {path: /proc}}
---
# untouched
kind: ConfigMap
metadata: {name: x}
";
    fs::write(input.join("sub/list.yaml"), list).unwrap();
    let out = dir.path().join("out");
    let output = suggest(std::slice::from_ref(&input), &out, &["--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let patched = fs::read_to_string(out.join("k8s/sub/list.yaml")).unwrap();
    let expected = list.replace(
        "  spec:\n    containers:",
        "  spec:\n    securityContext:\n      seLinuxOptions:\n        type: node_monitor_t\n    containers:",
    );
    assert_eq!(patched, expected);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["summary"]["confined"], 1, "{json:#}");
    assert_eq!(
        json["workloads"][0]["domain"]["selinuxType"],
        "node_monitor_t"
    );
    assert_eq!(json["workloads"][0]["domain"]["new"], false);
    assert_eq!(json["workloads"][0]["status"], "confined");
}

/// On the unmodified upstream manifests (CSI drivers, CNI agents, log
/// shippers, monitors, device plugins, kubeadm's static pods): the
/// suggested layout builds, `check` on the patched manifests finds
/// exactly the errors suggest's own judgement left, and every workload
/// left with one was told why.
#[test]
fn upstream_round_trip_leaves_only_what_was_explained() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = suggest(
        &[PathBuf::from("tests/data/k8s/upstream")],
        &out,
        &["--format", "json"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let workloads = report["workloads"].as_array().unwrap();
    assert!(workloads.len() >= 10, "{report:#}");
    let mut remaining = 0;
    for workload in workloads {
        let left = workload["remaining"].as_array().unwrap().len();
        remaining += left;
        if left > 0 {
            assert!(
                !workload["errors"].as_array().unwrap().is_empty(),
                "unexplained: {workload:#}"
            );
        }
    }
    let build = run(semanifest()
        .arg("build")
        .arg("--layout")
        .arg(out.join("layout.yaml"))
        .arg("--out")
        .arg(dir.path().join("build")));
    assert_eq!(build.status.code(), Some(0), "{}", stderr(&build));
    let check = run(semanifest()
        .args(["check", "--format", "json", "--layout"])
        .arg(out.join("layout.yaml"))
        .arg("--k8s")
        .arg(out.join("k8s")));
    let json: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let errors = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .count();
    assert_eq!(errors, remaining, "{json:#}");
    assert!(remaining > 0);
}
