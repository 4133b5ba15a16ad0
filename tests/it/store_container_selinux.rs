//! The `container-selinux` profile (Fedora, RHEL, RHCOS), against a stub
//! store that declares the same attributes, types and file contexts
//! (`tests/data/stores/container-selinux`, a directory of extracted CIL):
//! no such store exists on the machines these tests run on.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::store::digest;
use crate::support::{data, run, run_ok, semanifest, stderr, stdout, tool};

fn stub() -> std::path::PathBuf {
    data("stores/container-selinux")
}

fn build(out: &Path, extra: &[&str]) -> std::process::Output {
    run(semanifest()
        .args(["build", "--target", "module", "--against"])
        .arg(stub())
        .arg("--out")
        .arg(out)
        .args(extra))
}

fn report(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(out.join("report.json")).unwrap()).unwrap()
}

/// secilc over `files` in the given order, as the store would compile them.
fn secilc(dir: &Path, files: &[std::path::PathBuf]) -> std::process::Output {
    let mut command = Command::new(tool("secilc", "secilc"));
    command
        .arg("-o")
        .arg(dir.join("policy.33"))
        .arg("-f")
        .arg(dir.join("file_contexts"))
        .args(files);
    run(&mut command)
}

fn stub_modules(except: &[&str]) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = fs::read_dir(stub())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cil"))
        .filter(|p| !except.iter().any(|name| p.file_stem().unwrap() == *name))
        .collect();
    files.sort();
    files
}

#[test]
fn domains_map_to_the_container_selinux_names() {
    let out = tempfile::tempdir().unwrap();
    let before = digest(&stub());
    let output = build(out.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(digest(&stub()), before, "the build wrote into the store");
    let report = report(out.path());
    assert_eq!(report["profile"], "container-selinux");
    assert_eq!(report["verification"]["result"], "unavailable");
    let mapped = |key: &str| {
        let domain = report["domains"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["key"] == key)
            .unwrap()
            .clone();
        (
            domain["store_type"].as_str().unwrap().to_owned(),
            domain["origin"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        mapped("containerd"),
        ("container_runtime_t".into(), "runtime".into())
    );
    assert_eq!(mapped("kubelet"), ("kubelet_t".into(), "store".into()));
    assert_eq!(mapped("pods"), ("container_t".into(), "store".into()));
    assert_eq!(mapped("etcd"), ("etcd_t".into(), "declared".into()));
    // container_engine_t is a container domain, so it is in the workload set,
    // as the layout's agents are; the unconfined runtime and spc_t are not.
    assert_eq!(
        report["workload_set"],
        serde_json::json!([
            "cni_agent_t",
            "container_engine_t",
            "container_t",
            "csi_node_t",
            "device_plugin_t",
            "log_reader_t",
            "node_monitor_t"
        ])
    );
}

#[test]
fn prediction_is_what_secilc_builds_from_the_store_and_the_module() {
    let out = tempfile::tempdir().unwrap();
    assert!(build(out.path(), &[]).status.success());
    let mut files = stub_modules(&[]);
    files.push(out.path().join("structured_var.cil"));
    files.sort_by_key(|p| p.file_stem().unwrap().to_owned());
    let compiled = tempfile::tempdir().unwrap();
    let output = secilc(compiled.path(), &files);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        fs::read(compiled.path().join("policy.33")).unwrap(),
        fs::read(out.path().join("policy.33")).unwrap()
    );

    // sesearch: container_t may not touch protected types beyond the
    // traversal the store grants every domain.
    let policy = out.path().join("policy.33");
    for protected in [
        "etcd_var_t",
        "kubelet_pki_t",
        "kubelet_var_t",
        "audit_log_t",
        "overlays_var_t",
    ] {
        let rules = run_ok(
            Command::new(tool("sesearch", "setools"))
                .args(["-A", "-s", "container_t", "-t", protected])
                .arg(&policy),
        );
        for rule in rules.lines().filter(|l| l.starts_with("allow")) {
            assert!(
                rule.contains(":dir { getattr search }"),
                "{protected}: {rule}"
            );
        }
    }
}

#[test]
fn rules_on_modules_that_may_be_missing_sit_in_optional_blocks() {
    // The default layout labels containerd's snapshot and sandbox
    // directories with the base policy's container_file_t: on a store that
    // content is left to the store's own container policy, so no file
    // context of the module names a type of the container module, and the
    // module needs no module but the base.
    let out = tempfile::tempdir().unwrap();
    let output = build(out.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let cil = fs::read_to_string(out.path().join("structured_var.cil")).unwrap();
    assert!(
        cil.contains(";; Needs module container: left out if it is removed."),
        "{cil}"
    );
    assert!(
        cil.contains(";; Needs module virt: left out if it is removed."),
        "{cil}"
    );
    assert!(
        !cil.lines()
            .any(|l| l.starts_with("(filecon") && l.contains("container_file_t")),
        "{cil}"
    );
    // The proof: the module still compiles once container-selinux is gone
    // (its blocks drop out), and the file types it declares stay.
    let without_container = |module: &Path| {
        let mut files = stub_modules(&["container"]);
        files.push(module.to_path_buf());
        let compiled = tempfile::tempdir().unwrap();
        let output = secilc(compiled.path(), &files);
        let contexts =
            fs::read_to_string(compiled.path().join("file_contexts")).unwrap_or_default();
        (output, contexts)
    };
    let (output, contexts) = without_container(&out.path().join("structured_var.cil"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(contexts.contains("etcd_var_t"), "{contexts}");

    // Control: one file context naming container_file_t, as the module
    // wrote for those directories before, ties it to the container module.
    let tied = out.path().join("tied.cil");
    fs::write(
        &tied,
        format!(
            "{cil}(filecon \"/var/lib/containerd/io\\.containerd\\.grpc\\.v1\\.cri/sandboxes(/.*)?\" any \
             (system_u object_r container_file_t ((s0) (s0))))\n"
        ),
    )
    .unwrap();
    let (output, _) = without_container(&tied);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("filecon"), "{}", stderr(&output));
}

#[test]
fn leaky_include_fails_at_the_manifest_line() {
    let dir = tempfile::tempdir().unwrap();
    let leaky = dir.path().join("leaky.cil");
    fs::write(
        &leaky,
        "(allow container_t kubelet_pki_t (file (read open)))\n",
    )
    .unwrap();
    let output = build(
        &dir.path().join("out"),
        &["--include", leaky.to_str().unwrap()],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    // The line of `protected: true` of /var/lib/kubelet/pki.
    let lines: Vec<&str> = layout::manifest::DEFAULT_LAYOUT.lines().collect();
    let pki = lines
        .iter()
        .position(|line| line.ends_with("- path: /var/lib/kubelet/pki"))
        .expect("pki in the default layout");
    let line = 1
        + pki
        + lines[pki..]
            .iter()
            .position(|line| line.trim() == "protected: true")
            .expect("pki is protected");
    assert!(err.contains(&format!("<embedded default layout>:{line}:18: error[neverallow]: protected path `/var/lib/kubelet/pki`")), "{err}");
    assert!(err.contains("leaky.cil:1"), "{err}");
}

#[test]
fn check_against_reports_reach_by_granting_attribute() {
    let output = run(semanifest()
        .args(["check", "--format", "json", "--against"])
        .arg(stub()));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let reach: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "store-reach")
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(reach.len(), 5, "{reach:#?}");
    assert!(
        reach
            .iter()
            .all(|m| m.contains("via files_unconfined_type → file_type (write:")),
        "{reach:#?}"
    );
    assert!(reach.iter().all(|m| m.contains("spc_t")), "{reach:#?}");
}

#[test]
fn a_profile_that_does_not_fit_is_refused_with_what_is_missing() {
    let out = tempfile::tempdir().unwrap();
    let output = build(out.path(), &["--profile", "refpolicy"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("profile refpolicy does not fit this store"),
        "{err}"
    );
    assert!(
        err.contains("attribute privileged_container_domain"),
        "{err}"
    );
}

#[test]
fn maps_are_checked() {
    let out = tempfile::tempdir().unwrap();
    let output = build(out.path(), &["--map", "pods=spc_t"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("privileged container domain"),
        "{}",
        stderr(&output)
    );
    let output = build(out.path(), &["--map", "nosuch=spc_t"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("the layout has no domain `nosuch`"),
        "{}",
        stderr(&output)
    );
    let output = build(out.path(), &["--map", "kubelet=var_t"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("the store has no domain `var_t`"),
        "{}",
        stderr(&output)
    );
    let output = build(out.path(), &["--map", "kubelet=container_runtime_t"]);
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
}

#[test]
fn what_is_not_a_store_is_refused_clearly() {
    let empty = tempfile::tempdir().unwrap();
    let output = run(semanifest()
        .args(["build", "--target", "module", "--against"])
        .arg(empty.path())
        .arg("--out")
        .arg(empty.path().join("out")));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not a policy store"),
        "{}",
        stderr(&output)
    );
    let output = run(semanifest()
        .args(["build", "--target", "module", "--out"])
        .arg(empty.path()));
    assert_eq!(output.status.code(), Some(2));
    // clap's own requirement (`--target module` requires `--against`).
    assert!(
        stderr(&output).contains("required arguments were not provided")
            && stderr(&output).contains("--against <STORE>"),
        "{}",
        stderr(&output)
    );
    let output = run(semanifest()
        .args(["build", "--against", "/", "--out"])
        .arg(empty.path()));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("need --target module"),
        "{}",
        stderr(&output)
    );
}
