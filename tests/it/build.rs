//! `semanifest build` as a user runs it, checked with independent tools:
//! secilc compiles, sesearch (setools) reads the binary policy back.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{run, semanifest, stderr, tool};

fn build_default(out: &Path, extra: &[&str]) -> std::process::Output {
    run(semanifest().arg("build").arg("--out").arg(out).args(extra))
}

/// `sesearch -A` rules from `source` to `target`, optionally for a class and
/// permission. Attributes are expanded (sesearch's default), so a rule
/// granted through an attribute counts.
fn allow_rules(
    policy: &Path,
    source: &str,
    target: &str,
    class_perm: Option<(&str, &str)>,
) -> Vec<String> {
    let mut command = Command::new(tool("sesearch", "setools"));
    command.args(["-A", "-s", source, "-t", target]);
    if let Some((class, perm)) = class_perm {
        command.args(["-c", class, "-p", perm]);
    }
    command.arg(policy);
    let output = run(&mut command);
    assert!(
        output.status.success(),
        "sesearch failed: {}",
        stderr(&output)
    );
    crate::support::stdout(&output)
        .lines()
        .filter(|l| l.starts_with("allow"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn default_layout_builds_and_sesearch_confirms_the_protections() {
    let out = tempfile::tempdir().unwrap();
    let output = build_default(out.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    for file in [
        "structured_var.cil",
        "base.cil",
        "file_contexts",
        "policy.33",
    ] {
        assert!(out.path().join(file).is_file(), "{file} missing");
    }
    let policy = out.path().join("policy.33");

    // Controls first: the queries do find rules where there are some.
    assert!(!allow_rules(&policy, "etcd_t", "etcd_var_t", Some(("file", "write"))).is_empty());
    assert!(!allow_rules(&policy, "container_t", "var_mnt_t", Some(("file", "write"))).is_empty());
    assert!(!allow_rules(&policy, "container_t", "pods_log_t", Some(("file", "read"))).is_empty());
    assert!(!allow_rules(
        &policy,
        "kubelet_t",
        "kubelet_pki_t",
        Some(("file", "write"))
    )
    .is_empty());

    for protected in [
        "etcd_var_t",
        "kubelet_pki_t",
        "kubelet_var_t",
        "audit_log_t",
        "overlays_var_t",
    ] {
        let rules = allow_rules(&policy, "container_t", protected, None);
        assert!(
            rules.is_empty(),
            "container_t reaches {protected}: {rules:#?}"
        );
    }
    for perm in ["write", "append"] {
        let rules = allow_rules(&policy, "container_t", "pods_log_t", Some(("file", perm)));
        assert!(
            rules.is_empty(),
            "container_t may {perm} pods_log_t: {rules:#?}"
        );
    }
}

#[test]
fn build_is_deterministic() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert!(build_default(a.path(), &[]).status.success());
    assert!(build_default(b.path(), &[]).status.success());
    for file in ["structured_var.cil", "file_contexts", "policy.33"] {
        assert_eq!(
            fs::read(a.path().join(file)).unwrap(),
            fs::read(b.path().join(file)).unwrap(),
            "{file}"
        );
    }
}

#[test]
fn leaky_include_fails_and_names_the_protected_path() {
    let out = tempfile::tempdir().unwrap();
    let leaky = out.path().join("leaky.cil");
    fs::write(
        &leaky,
        "(allow container_t etcd_var_t (file (read open)))\n",
    )
    .unwrap();
    let output = build_default(
        &out.path().join("out"),
        &["--include", leaky.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("protected path `/var/lib/etcd` (etcd_var_t)"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "<embedded default layout>:{}:18: error[neverallow]",
            crate::support::etcd_protected_line()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "granted by {}:1: (allow container_t etcd_var_t",
            leaky.display()
        )),
        "{text}"
    );
    assert!(
        !out.path().join("out/policy.33").exists(),
        "no policy may be left behind"
    );

    // Control: the same include without the protected target builds.
    fs::write(&leaky, "(allow container_t var_mnt_t (file (read open)))\n").unwrap();
    let output = build_default(
        &out.path().join("out"),
        &["--include", leaky.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", stderr(&output));
}

/// `build --format json`: the report on standard output, whatever the
/// outcome.
fn build_json(out: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let output = build_default(out, &[&["--format", "json"], extra].concat());
    let json = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            crate::support::stdout(&output)
        )
    });
    (output.status.code(), json, stderr(&output))
}

#[test]
fn format_json_reports_each_broken_protection_as_a_neverallow_error() {
    let dir = tempfile::tempdir().unwrap();
    let leaky = dir.path().join("leaky.cil");
    // As a careless extra module might: pods may read etcd's data and the
    // kubelet's keys.
    fs::write(
        &leaky,
        "(allow container_t etcd_var_t (file (read open)))\n\
         (allow container_t kubelet_pki_t (file (read open)))\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let (code, json, err) = build_json(&out, &["--include", leaky.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(json["schema"], "semanifest-build");
    assert_eq!(json["version"], 1);
    assert_eq!(json["ok"], false);
    assert_eq!(json["written"], serde_json::json!([]));
    let errors = json["errors"].as_array().unwrap();
    let mut broken: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| {
            assert_eq!(e["kind"], "neverallow", "{e}");
            (e["path"].as_str().unwrap(), e["type"].as_str().unwrap())
        })
        .collect();
    broken.sort();
    assert_eq!(
        broken,
        [
            ("/var/lib/etcd", "etcd_var_t"),
            ("/var/lib/kubelet/pki", "kubelet_pki_t")
        ]
    );
    let etcd = errors.iter().find(|e| e["type"] == "etcd_var_t").unwrap();
    assert_eq!(
        etcd["location"],
        serde_json::json!({"file": "<embedded default layout>", "line": crate::support::etcd_protected_line(), "column": 18, "end_column": 22})
    );
    assert_eq!(
        etcd["granted_by"],
        serde_json::json!([{
            "file": leaky.to_str().unwrap(),
            "line": 1,
            "rule": "(allow container_t etcd_var_t (file (read open)))"
        }])
    );
    // The human report still goes to standard error.
    assert!(err.contains("error[neverallow]"), "{err}");
    assert!(
        !out.join("policy.33").exists(),
        "no policy may be left behind"
    );

    // Control: an include that touches no protected type builds, and the
    // report lists what was written.
    fs::write(&leaky, "(allow container_t var_mnt_t (file (read open)))\n").unwrap();
    let (code, json, err) = build_json(&out, &["--include", leaky.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json["ok"], true);
    assert_eq!(json["errors"], serde_json::json!([]));
    let written: Vec<&str> = json["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for file in ["base.cil", "file_contexts", "policy.33"] {
        let path = out.join(file);
        assert!(written.contains(&path.to_str().unwrap()), "{written:?}");
        assert!(path.is_file());
    }
}

#[test]
fn format_json_reports_other_failures_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    // CIL secilc cannot compile: no protection is involved.
    let broken = dir.path().join("broken.cil");
    fs::write(&broken, "(allow no_such_t var_mnt_t (file (read)))\n").unwrap();
    let (code, json, _) = build_json(
        &dir.path().join("a"),
        &["--include", broken.to_str().unwrap()],
    );
    assert_eq!(code, Some(2));
    assert_eq!(json["errors"][0]["kind"], "secilc", "{json}");
    assert!(
        json["errors"][0]["output"]
            .as_str()
            .unwrap()
            .contains("broken.cil:1"),
        "{json}"
    );
    // A layout that breaks a manifest rule: the code and its position.
    let layout = dir.path().join("l.yaml");
    fs::write(&layout, "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata: {name: x}\nspec:\n  domains: {}\n  paths:\n    - path: /var/\n      type: var_t\n").unwrap();
    let (code, json, _) = build_json(
        &dir.path().join("b"),
        &["--layout", layout.to_str().unwrap()],
    );
    assert_eq!(code, Some(2));
    let error = &json["errors"][0];
    assert_eq!(error["kind"], "layout", "{json}");
    assert_eq!(error["code"], "path-not-normalised", "{json}");
    assert_eq!(error["location"]["line"], 7, "{json}");
    // Anything else: a missing include, named.
    let (code, json, _) = build_json(&dir.path().join("c"), &["--include", "/no/such.cil"]);
    assert_eq!(code, Some(2));
    assert_eq!(json["errors"][0]["kind"], "error", "{json}");
    assert!(
        json["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("/no/such.cil"),
        "{json}"
    );
}

#[test]
fn layout_granting_a_workload_a_protected_path_fails() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("bad.yaml");
    let text = layout::manifest::DEFAULT_LAYOUT.replace(
        "access: { etcd: write }",
        "access: { etcd: write, pods: read }",
    );
    fs::write(&layout, &text).unwrap();
    let output = run(semanifest()
        .args(["build", "--layout"])
        .arg(&layout)
        .arg("--out")
        .arg(dir.path().join("o")));
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains("protected path `/var/lib/etcd` grants access to workload domain `pods`"),
        "{err}"
    );
    assert!(err.contains(&format!("{}:", layout.display())), "{err}");
}

#[test]
fn missing_secilc_says_how_to_install_it() {
    let out = tempfile::tempdir().unwrap();
    let output = run(semanifest()
        .arg("build")
        .arg("--out")
        .arg(out.path())
        .env("PATH", "/nonexistent"));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("apt-get install secilc"),
        "{}",
        stderr(&output)
    );
    let output = build_default(out.path(), &["--secilc", "/no/such/secilc"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("/no/such/secilc"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_missing_install_root_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sysroot");
    let out = dir.path().join("out");
    let output = build_default(&out, &["--install-root", root.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(&format!(
            "{}: the image root does not exist",
            root.display()
        )),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists() && !root.exists());
    // Control: the same command once the root exists.
    fs::create_dir(&root).unwrap();
    let output = build_default(&out, &["--install-root", root.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn install_root_writes_the_selinux_tree_and_drops_stale_bin() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let files = root.join("etc/selinux/semanifest/contexts/files");
    fs::create_dir_all(&files).unwrap();
    fs::write(files.join("file_contexts.bin"), b"stale").unwrap();
    let output = build_default(
        &dir.path().join("out"),
        &["--install-root", root.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let config = fs::read_to_string(root.join("etc/selinux/config")).unwrap();
    assert!(config.contains("SELINUXTYPE=semanifest"), "{config}");
    assert_eq!(
        fs::read(root.join("etc/selinux/semanifest/policy/policy.33")).unwrap(),
        fs::read(dir.path().join("out/policy.33")).unwrap()
    );
    assert!(files.join("file_contexts").is_file());
    assert!(
        !files.join("file_contexts.bin").exists(),
        "stale .bin must be removed"
    );
}

/// containerd's and CRI-O's SELinux library labels a container that asks
/// for nothing from `contexts/lxc_contexts`; without it, no label at all.
/// The install root gets it: the layout's workload domain, which may run
/// from container content.
#[test]
fn install_root_writes_lxc_contexts_for_container_runtimes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fs::create_dir(&root).unwrap();
    let output = build_default(
        &dir.path().join("out"),
        &["--install-root", root.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let lxc = fs::read_to_string(root.join("etc/selinux/semanifest/contexts/lxc_contexts"))
        .expect("lxc_contexts installed");
    // What go-selinux reads: KEY = "CONTEXT" lines, `#` comments.
    let entries: Vec<(&str, &str)> = lxc
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once('='))
        .map(|(key, value)| (key.trim(), value.trim().trim_matches('"')))
        .collect();
    assert_eq!(
        entries,
        [
            ("process", "system_u:system_r:container_t:s0"),
            ("file", "system_u:object_r:container_file_t:s0"),
        ],
        "{lxc}"
    );
    // The process may run from files of that label: its entrypoint.
    let rules = run(Command::new(tool("sesearch", "setools"))
        .args([
            "-A",
            "-s",
            "container_t",
            "-t",
            "container_file_t",
            "-c",
            "file",
            "-p",
            "entrypoint",
        ])
        .arg(dir.path().join("out/policy.33")));
    assert!(
        crate::support::stdout(&rules).contains("entrypoint"),
        "{}",
        crate::support::stdout(&rules)
    );
    // Control: a layout without a workload domain gets none.
    let layout = dir.path().join("no-pods.yaml");
    fs::write(
        &layout,
        "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata: {name: no-pods}\nspec:\n  domains:\n    etcd: { type: etcd_t }\n  paths:\n    - path: /var/lib/etcd\n      type: etcd_var_t\n      access: { etcd: write }\n",
    )
    .unwrap();
    let bare = dir.path().join("bare");
    fs::create_dir(&bare).unwrap();
    let output = run(semanifest()
        .arg("build")
        .arg("--layout")
        .arg(&layout)
        .arg("--out")
        .arg(dir.path().join("out-bare"))
        .arg("--install-root")
        .arg(&bare));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(bare
        .join("etc/selinux/semanifest/policy/policy.33")
        .is_file());
    assert!(!bare
        .join("etc/selinux/semanifest/contexts/lxc_contexts")
        .exists());
}

/// Nothing a build writes is written through a symlink: an image whose
/// `etc/selinux` points out of it is refused with nothing written there,
/// and a symlink planted at an output's name is replaced, its target
/// untouched. Control: the same image with a real directory installs
/// (above).
#[test]
fn install_root_and_outputs_follow_no_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("etc")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("etc/selinux")).unwrap();
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    let sentinel = dir.path().join("sentinel");
    fs::write(&sentinel, "untouched").unwrap();
    std::os::unix::fs::symlink(&sentinel, out.join("policy.33")).unwrap();
    let output = build_default(&out, &["--install-root", root.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let expected = format!("{}/etc/selinux: a symlink is in the way", root.display());
    assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(fs::read_to_string(&sentinel).unwrap(), "untouched");
    assert!(fs::symlink_metadata(out.join("policy.33"))
        .unwrap()
        .is_file());
}

#[test]
fn layout_show_prints_the_embedded_layout() {
    let output = run(semanifest().args(["layout", "show"]));
    assert!(output.status.success());
    assert_eq!(
        crate::support::stdout(&output),
        layout::manifest::DEFAULT_LAYOUT
    );
}

#[test]
fn bad_manifest_exits_2_with_position() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("l.yaml");
    fs::write(&layout, "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata: {name: x}\nspec:\n  domains: {}\n  paths:\n    - path: /var/\n      type: var_t\n").unwrap();
    let output = run(semanifest().args(["layout", "validate"]).arg(&layout));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(&format!(
            "{}:7:13: error[path-not-normalised]",
            layout.display()
        )),
        "{}",
        stderr(&output)
    );
    // Unreadable input is also exit 2, naming the path.
    let output = run(semanifest().args(["layout", "validate", "/no/such/layout.yaml"]));
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("/no/such/layout.yaml"));
}

/// `sesearch -T` type transitions of `policy`, one `type_transition …;`
/// line each.
fn type_transitions(policy: &Path, extra: &[&str]) -> Vec<String> {
    let output = run(Command::new(tool("sesearch", "setools"))
        .arg("-T")
        .args(extra)
        .arg(policy));
    assert!(output.status.success(), "sesearch: {}", stderr(&output));
    let mut rules: Vec<String> = crate::support::stdout(&output)
        .lines()
        .filter(|l| l.starts_with("type_transition"))
        .map(str::to_owned)
        .collect();
    rules.sort();
    rules
}

/// Every declared directory whose parent has another type is born with its
/// type when a domain that may write the parent (or a trusted one) creates
/// it: named type transitions, read back from the compiled policy.
#[test]
fn declared_directories_get_named_type_transitions() {
    let out = tempfile::tempdir().unwrap();
    let output = build_default(out.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let policy = out.path().join("policy.33");
    let expected: Vec<String> = [
        // parent type, name, type, domains that write the parent + init_t (trusted)
        (
            "kubelet_var_t",
            "pki",
            "kubelet_pki_t",
            &["init_t", "kubelet_t"][..],
        ),
        (
            "kubelet_var_t",
            "pods",
            "kubelet_pods_t",
            &["init_t", "kubelet_t"],
        ),
        (
            "containerd_var_t",
            "io.containerd.snapshotter.v1.overlayfs",
            "container_file_t",
            &["containerd_t", "init_t"],
        ),
        (
            "containerd_var_t",
            "sandboxes",
            "container_file_t",
            &["containerd_t", "init_t"],
        ),
        (
            "kubelet_var_t",
            "plugins",
            "kubelet_plugins_t",
            &["init_t", "kubelet_t"],
        ),
        (
            "kubelet_var_t",
            "plugins_registry",
            "kubelet_plugins_registry_t",
            &["init_t", "kubelet_t"],
        ),
        (
            "kubelet_var_t",
            "device-plugins",
            "kubelet_device_plugins_t",
            &["init_t", "kubelet_t"],
        ),
        (
            "kubelet_var_t",
            "pod-resources",
            "kubelet_pod_resources_t",
            &["init_t", "kubelet_t"],
        ),
        // The container runtime's directories under /run (a host class's
        // paths the layout does not declare), in the layout's /var/run and
        // in a bare /run (the base policy's).
        (
            "var_run_t",
            "containerd",
            "runtime_run_t",
            &["containerd_t", "init_t", "kubelet_t"],
        ),
        (
            "var_run_t",
            "crio",
            "runtime_run_t",
            &["containerd_t", "init_t", "kubelet_t"],
        ),
        (
            "tmpfs_t",
            "containerd",
            "runtime_run_t",
            &["containerd_t", "kubelet_t"],
        ),
        (
            "tmpfs_t",
            "crio",
            "runtime_run_t",
            &["containerd_t", "kubelet_t"],
        ),
        (
            "var_log_t",
            "audit",
            "audit_log_t",
            &["containerd_t", "init_t", "kubelet_t"],
        ),
        (
            "var_log_t",
            "pods",
            "pods_log_t",
            &["containerd_t", "init_t", "kubelet_t"],
        ),
        ("var_t", "cni", "cni_var_t", &["init_t"]),
        ("var_t", "containerd", "containerd_var_t", &["init_t"]),
        ("var_t", "etcd", "etcd_var_t", &["init_t"]),
        ("var_t", "kubelet", "kubelet_var_t", &["init_t"]),
        ("var_t", "log", "var_log_t", &["init_t"]),
        ("var_t", "mnt", "var_mnt_t", &["init_t"]),
        ("var_t", "overlays", "overlays_var_t", &["init_t"]),
        ("var_t", "run", "var_run_t", &["init_t"]),
    ]
    .iter()
    .flat_map(|(parent, name, type_name, domains)| {
        domains
            .iter()
            .map(move |d| format!("type_transition {d} {parent}:dir {type_name} {name};"))
    })
    .collect::<std::collections::BTreeSet<_>>()
    .into_iter()
    .collect();
    assert_eq!(type_transitions(&policy, &["-c", "dir"]), expected);
    // The example of the contract, queried the way an administrator would.
    assert_eq!(
        type_transitions(
            &policy,
            &["-s", "kubelet_t", "-t", "kubelet_var_t", "-c", "dir"]
        ),
        [
            "type_transition kubelet_t kubelet_var_t:dir kubelet_device_plugins_t device-plugins;",
            "type_transition kubelet_t kubelet_var_t:dir kubelet_pki_t pki;",
            "type_transition kubelet_t kubelet_var_t:dir kubelet_plugins_registry_t plugins_registry;",
            "type_transition kubelet_t kubelet_var_t:dir kubelet_plugins_t plugins;",
            "type_transition kubelet_t kubelet_var_t:dir kubelet_pod_resources_t pod-resources;",
            "type_transition kubelet_t kubelet_var_t:dir kubelet_pods_t pods;"
        ]
    );
    // Control: pods write /var/mnt but nothing is declared below it, and
    // may not write kubelet_var_t: no transition is theirs.
    assert_eq!(
        type_transitions(&policy, &["-s", "container_t"]),
        Vec::<String>::new()
    );
}

/// Builds a small layout named NAME with one domain `app: app_t` and the
/// given `spec.paths` entries (one flow mapping per line); the CIL module
/// and the output directory (`policy.33`). Fails the test if the build does.
fn build_small_layout(dir: &Path, name: &str, paths: &[&str]) -> (String, PathBuf) {
    let layout = dir.join("layout.yaml");
    let mut text = format!(
        "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata: {{ name: {name} }}\n\
         spec:\n  domains:\n    app: {{ type: app_t }}\n  paths:\n"
    );
    for path in paths {
        text.push_str(&format!("    - {path}\n"));
    }
    fs::write(&layout, text).unwrap();
    let out = dir.join("out");
    let output = run(semanifest()
        .args(["build", "--layout"])
        .arg(&layout)
        .arg("--out")
        .arg(&out));
    assert!(output.status.success(), "{}", stderr(&output));
    let cil = fs::read_to_string(out.join(format!("{name}.cil"))).unwrap();
    (cil, out)
}

/// One name in one parent type wanted with two types: no transition can be
/// right for both, so none is emitted (and the CIL says why); secilc would
/// refuse the pair.
#[test]
fn conflicting_named_transitions_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let (cil, out) = build_small_layout(
        dir.path(),
        "clash",
        &[
            "{ path: /srv, type: srv_t, access: { app: write } }",
            "{ path: /srv/a/data, type: a_data_t, access: { app: write } }",
            "{ path: /srv/b/data, type: b_data_t, access: { app: write } }",
            "{ path: /srv/c/cache, type: c_cache_t, access: { app: write } }",
        ],
    );
    assert!(
        cil.contains(
            ";; No transition for data in srv_t: /srv/a/data, /srv/b/data want different types."
        ),
        "{cil}"
    );
    assert_eq!(
        type_transitions(&out.join("policy.33"), &["-t", "srv_t", "-c", "dir"]),
        ["type_transition app_t srv_t:dir c_cache_t cache;"]
    );
}

/// A tmpfs mounted with `context=TYPE` needs `TYPE self:filesystem
/// associate`; two tmpfs paths of one type get the rule once, a type
/// mounted nowhere never.
#[test]
fn a_tmpfs_type_may_associate_with_itself_once() {
    let dir = tempfile::tempdir().unwrap();
    let (cil, _) = build_small_layout(
        dir.path(),
        "scratch",
        &[
            "{ path: /srv, type: srv_t, access: { app: write } }",
            "{ path: /srv/a, type: scratch_t, mount: { tmpfs: true }, lifecycle: ephemeral }",
            "{ path: /srv/b, type: scratch_t, mount: { tmpfs: true }, lifecycle: ephemeral }",
        ],
    );
    assert_eq!(
        cil.matches("(allow scratch_t self (filesystem (associate)))")
            .count(),
        1,
        "{cil}"
    );
    assert!(!cil.contains("(allow srv_t self (filesystem"), "{cil}");
}

/// `--map` takes `DOMAIN=TYPE`: anything else is refused while the
/// arguments are read, naming the value, before any store is opened.
#[test]
fn a_map_that_is_not_domain_equals_type_is_refused() {
    let out = tempfile::tempdir().unwrap();
    let build_module = |map: &str| {
        run(semanifest()
            .args(["build", "--target", "module", "--against", "/nonexistent"])
            .args(["--map", map, "--out"])
            .arg(out.path()))
    };
    for bad in ["kubelet", "=spc_t", "kubelet=", "="] {
        let output = build_module(bad);
        assert_eq!(output.status.code(), Some(2), "{bad}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!(
                "invalid value '{bad}' for '--map <DOMAIN=TYPE>': expected DOMAIN=TYPE"
            )),
            "{bad}: {}",
            stderr(&output)
        );
    }
    // Control: a well-formed map gets past the arguments to the store.
    let output = build_module("kubelet=spc_t");
    assert!(!stderr(&output).contains("expected DOMAIN=TYPE"));
    assert!(
        stderr(&output).contains("/nonexistent"),
        "{}",
        stderr(&output)
    );
}
