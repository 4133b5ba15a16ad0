//! `build --target module` and `check --against` on a real Fedora targeted
//! store with container-selinux (what RHEL, CentOS Stream and Fedora
//! CoreOS nodes run), read from `SEMANIFEST_FEDORA_STORE`: the whole flow,
//! checked with the real `semodule`, `sesearch` and libselinux. Each test
//! says on standard error that it was skipped when the variable is unset.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::fc_oracle::{Answer, LibSelinux};
use crate::support::store::{copy_of, digest, fedora_store, semodule_install, store_dir};
use crate::support::{run, run_ok, semanifest, stderr, stdout, tool};
use selabel::FileKind;

const MODULE: &str = "structured_var";
const POLICY: &str = "targeted";
const FC: &str = "etc/selinux/targeted/contexts/files/file_contexts";

/// The default layout built against the store once for this file, then
/// installed with the real semodule into a copy of the store.
struct Built {
    root: PathBuf,
    out: tempfile::TempDir,
    installed: tempfile::TempDir,
}

fn built(test: &str) -> Option<&'static Built> {
    let root = fedora_store(test)?;
    static BUILT: OnceLock<Built> = OnceLock::new();
    Some(BUILT.get_or_init(|| {
        let before = digest(&root);
        let out = tempfile::tempdir().unwrap();
        let output = run(semanifest()
            .args(["build", "--target", "module", "--against"])
            .arg(&root)
            .arg("--out")
            .arg(out.path()));
        assert!(
            output.status.success(),
            "build failed:\n{}{}",
            stdout(&output),
            stderr(&output)
        );
        assert_eq!(digest(&root), before, "the build wrote into the store");
        let installed = copy_of(&root);
        semodule_install(
            installed.path(),
            POLICY,
            &out.path().join(format!("{MODULE}.cil")),
        );
        Built {
            root,
            out,
            installed,
        }
    }))
}

fn report(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(out.join("report.json")).unwrap()).unwrap()
}

fn sesearch(policy: &Path, args: &[&str]) -> Vec<String> {
    run_ok(
        Command::new(tool("sesearch", "setools"))
            .arg("-A")
            .args(args)
            .arg(policy),
    )
    .lines()
    .filter(|l| l.starts_with("allow "))
    .map(str::to_owned)
    .collect()
}

fn same_bytes(a: &Path, b: &Path) -> bool {
    fs::read(a).unwrap_or_else(|e| panic!("{}: {e}", a.display()))
        == fs::read(b).unwrap_or_else(|e| panic!("{}: {e}", b.display()))
}

#[test]
fn the_prediction_is_what_semodule_installs_and_the_proof_honours_expand_check_0() {
    let Some(built) = built("store_fedora::the_prediction_is_what_semodule_installs") else {
        return;
    };
    let installed = store_dir(built.installed.path(), POLICY).join("active");
    assert!(same_bytes(
        &built.out.path().join("policy.33"),
        &installed.join("policy.kern")
    ));
    assert!(same_bytes(
        &built.out.path().join("file_contexts"),
        &built.installed.path().join(FC)
    ));
    // Control: the module changed the binary.
    assert!(!same_bytes(
        &built.out.path().join("policy.33"),
        &store_dir(&built.root, POLICY).join("active/policy.kern")
    ));
    let report = report(built.out.path());
    assert_eq!(report["profile"], "container-selinux");
    assert_eq!(report["verification"]["result"], "identical");
    assert_eq!(report["expand_check"], false);
    assert_eq!(report["proof"]["result"], "proven");
    // container-selinux breaks 13 of the base's neverallows.
    assert_eq!(
        report["proof"]["store_violations"]
            .as_array()
            .unwrap()
            .len(),
        13
    );
    assert_eq!(report["protections"].as_array().unwrap().len(), 5);
}

#[test]
fn protections_hold_and_say_exactly_what_workloads_keep() {
    let Some(built) = built("store_fedora::protections_hold_and_say_exactly_what_workloads_keep")
    else {
        return;
    };
    let policy = store_dir(built.installed.path(), POLICY).join("active/policy.kern");
    for protected in [
        "etcd_var_t",
        "kubelet_var_t",
        "kubelet_pki_t",
        "audit_log_t",
        "overlays_var_t",
    ] {
        let classes = "dir,file,lnk_file,chr_file,blk_file,sock_file,fifo_file";
        for rule in sesearch(
            &policy,
            &["-s", "container_t", "-t", protected, "-c", classes],
        ) {
            let traversal = rule.contains(":dir { getattr open search }");
            let map = rule.contains(" map; [ domain_can_mmap_files ]:True");
            assert!(traversal || map, "container_t reaches {protected}: {rule}");
        }
    }
    // Control: the layout's grant is there.
    assert!(!sesearch(
        &policy,
        &[
            "-s",
            "etcd_t",
            "-t",
            "etcd_var_t",
            "-c",
            "file",
            "-p",
            "write"
        ]
    )
    .is_empty());
    let report = report(built.out.path());
    let etcd = report["protections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["reach"]["type_name"] == "etcd_var_t")
        .unwrap();
    let leftovers: Vec<&str> = etcd["reach"]["workload"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["leftover"].as_str().unwrap())
        .collect();
    assert_eq!(leftovers, ["traversal", "map"]);
    let mapping = etcd["reach"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["via"] == "domain → file_type")
        .unwrap();
    assert_eq!(mapping["grade"], "map-only");
    assert_eq!(
        mapping["condition"]["defaults"]["domain_can_mmap_files"],
        false
    );
    let text = fs::read_to_string(built.out.path().join("report.txt")).unwrap();
    assert!(text.contains("via domain → file_type (map only:"), "{text}");
}

#[test]
fn var_mnt_is_labelled_through_the_alias_of_mnt() {
    let Some(built) = built("store_fedora::var_mnt_is_labelled_through_the_alias_of_mnt") else {
        return;
    };
    let stock = LibSelinux::open(&built.root.join(FC)).unwrap();
    let merged = LibSelinux::open(&built.installed.path().join(FC)).unwrap();
    let var_mnt = Answer::Label("system_u:object_r:var_mnt_t:s0".into());
    for key in ["/var/mnt", "/var/mnt/x", "/var/mnt/x/y"] {
        for kind in [FileKind::Dir, FileKind::File] {
            assert_eq!(
                merged.lookup(key.as_bytes(), kind),
                var_mnt,
                "{key} {kind:?}"
            );
            assert_ne!(
                stock.lookup(key.as_bytes(), kind),
                var_mnt,
                "{key} {kind:?}"
            );
        }
    }
    // /var/run is the store's /run, var_run_t already: no line.
    let report = report(built.out.path());
    let run_path = report["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == "/var/run")
        .unwrap();
    assert_eq!(run_path["events"][0]["label"], "by-store");
    assert_eq!(run_path["lines"], serde_json::json!([]));
}

#[test]
fn containerd_content_keeps_the_stores_own_types() {
    let Some(built) = built("store_fedora::containerd_content_keeps_the_stores_own_types") else {
        return;
    };
    let stock = LibSelinux::open(&built.root.join(FC)).unwrap();
    let merged = LibSelinux::open(&built.installed.path().join(FC)).unwrap();
    // container-selinux: image layers container_file_t, sandboxes
    // container_ro_file_t (the control: not the layout's container_file_t).
    crate::store_refpolicy::assert_containerd_content_kept(
        &stock,
        &merged,
        ["container_file_t", "container_ro_file_t"],
    );
    let report = report(built.out.path());
    for path in report["paths"].as_array().unwrap() {
        if path["path"]
            .as_str()
            .unwrap()
            .starts_with("/var/lib/containerd/")
        {
            assert_eq!(path["lines"], serde_json::json!([]), "{path}");
            assert_eq!(path["events"][0]["kind"], "left-to-store", "{path}");
        }
    }
}

#[test]
fn store_services_keep_their_access_or_are_named() {
    let Some(built) = built("store_fedora::store_services_keep_their_access_or_are_named") else {
        return;
    };
    let stock = store_dir(&built.root, POLICY).join("active/policy.kern");
    let policy = store_dir(built.installed.path(), POLICY).join("active/policy.kern");
    assert!(!sesearch(
        &policy,
        &[
            "-s",
            "auditd_t",
            "-t",
            "audit_log_t",
            "-c",
            "file",
            "-p",
            "append"
        ]
    )
    .is_empty());
    // The pods' logs: every reader of the runtime's logs reads them.
    let readers = sesearch(
        &stock,
        &["-t", "container_log_t", "-c", "file", "-p", "read"],
    );
    assert!(!readers.is_empty());
    for rule in &readers {
        let source = rule.split_whitespace().nth(1).unwrap();
        assert!(
            !sesearch(
                &policy,
                &["-s", source, "-t", "pods_log_t", "-c", "file", "-p", "read"]
            )
            .is_empty(),
            "{source} lost /var/log/pods"
        );
    }
    // /var/lib/etcd was var_lib_t: who read it is named.
    let report = report(built.out.path());
    let etcd = report["retyped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type_name"] == "etcd_var_t")
        .unwrap();
    assert_eq!(etcd["old_types"], serde_json::json!(["var_lib_t"]));
    let readers: Vec<&str> = etcd["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["grade"] == "read" || g["grade"] == "write")
        .flat_map(|g| g["domains"].as_array().unwrap())
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(readers.contains(&"syslogd_t"), "{readers:?}");
    for unprotected in ["pods_log_t", "cni_var_t", "containerd_var_t", "var_mnt_t"] {
        let item = report["retyped"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["type_name"] == unprotected)
            .unwrap();
        assert_eq!(item["groups"], serde_json::json!([]), "{unprotected}");
    }
}

#[test]
fn check_against_the_store_reports_what_the_build_decided() {
    let Some(root) =
        fedora_store("store_fedora::check_against_the_store_reports_what_the_build_decided")
    else {
        return;
    };
    let output = run(semanifest()
        .args(["check", "--format", "json", "--against"])
        .arg(&root));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let check: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rules: Vec<&str> = check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    for rule in [
        "store-neverallows",
        "store-access-lost",
        "store-reach",
        "store-filecon-aliased",
    ] {
        assert!(rules.contains(&rule), "{rule} missing: {rules:?}");
    }
    assert!(!rules.contains(&"store-proof"), "{rules:?}");
}

#[test]
fn the_extracted_store_gives_the_same_module_and_policy() {
    let Some(root) =
        fedora_store("store_fedora::the_extracted_store_gives_the_same_module_and_policy")
    else {
        return;
    };
    let Some(from_root) =
        built("store_fedora::the_extracted_store_gives_the_same_module_and_policy")
    else {
        return;
    };
    let cil = tempfile::tempdir().unwrap();
    for module in store::Store::open(&root).unwrap().modules {
        fs::write(cil.path().join(format!("{}.cil", module.name)), &module.cil).unwrap();
    }
    fs::copy(
        root.join("etc/selinux/semanage.conf"),
        cil.path().join("semanage.conf"),
    )
    .unwrap();
    fs::copy(
        root.join(format!("{FC}.subs_dist")),
        cil.path().join("file_contexts.subs_dist"),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = run(semanifest()
        .args(["build", "--target", "module", "--against"])
        .arg(cil.path())
        .arg("--out")
        .arg(out.path()));
    assert!(output.status.success(), "{}", stderr(&output));
    for file in [
        format!("{MODULE}.cil"),
        "policy.33".into(),
        "file_contexts".into(),
    ] {
        assert!(
            same_bytes(&from_root.out.path().join(&file), &out.path().join(&file)),
            "{file} differs between the store and its extracted CIL"
        );
    }
    // Controls. Without the aliases, the module writes `/var/mnt` lines no
    // lookup reaches, and stderr says why it cannot tell.
    fs::remove_file(cil.path().join("file_contexts.subs_dist")).unwrap();
    let bare = tempfile::tempdir().unwrap();
    let output = run(semanifest()
        .args(["build", "--target", "module", "--against"])
        .arg(cil.path())
        .arg("--out")
        .arg(bare.path()));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!same_bytes(
        &from_root.out.path().join(format!("{MODULE}.cil")),
        &bare.path().join(format!("{MODULE}.cil"))
    ));
    assert!(
        stderr(&output).contains("no file_contexts.subs_dist beside the modules"),
        "{}",
        stderr(&output)
    );
    // Without semanage.conf, libsemanage's default expand-check=1 refuses
    // the store's own modules, and the error says what is missing.
    fs::remove_file(cil.path().join("semanage.conf")).unwrap();
    let output = run(semanifest()
        .args(["build", "--target", "module", "--against"])
        .arg(cil.path())
        .arg("--out")
        .arg(bare.path().join("again")));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no semanage.conf beside the modules"),
        "{}",
        stderr(&output)
    );
}
