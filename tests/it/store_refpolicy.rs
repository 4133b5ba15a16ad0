//! `build --target module` and `check --against` on Debian's real refpolicy
//! store with its container module (built by `scripts/refpolicy-store`
//! from Debian's own packages, into a copy of the installed store), checked
//! with the real `semodule`, `sesearch` and libselinux.

use crate::support::fc_oracle;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::store::{copy_of, digest, refpolicy_store};
use crate::support::{run, run_ok, semanifest, stderr, stdout, tool};
use fc_oracle::{Answer, LibSelinux};
use selabel::FileKind;
use store::{Baseline, ModuleOptions, Store};

const MODULE: &str = "structured_var";
const INSTALLED_FC: &str = "etc/selinux/default/contexts/files/file_contexts";

/// The store directory inside a root built by [`refpolicy_store`].
fn store_dir(root: &Path) -> PathBuf {
    crate::support::store::store_dir(root, "default")
}

/// The default layout built against the store once for this file, then
/// installed with the real semodule into a copy of the store.
struct Built {
    root: PathBuf,
    out: tempfile::TempDir,
    stock: tempfile::TempDir,
    installed: tempfile::TempDir,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = refpolicy_store();
        let before = digest(&root);
        let (out, stock) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let output = run(semanifest()
            .args(["build", "--target", "module", "--against"])
            .arg(&root)
            .arg("--out")
            .arg(out.path())
            .arg("--stock-out")
            .arg(stock.path()));
        assert!(
            output.status.success(),
            "build failed:\n{}{}",
            stdout(&output),
            stderr(&output)
        );
        assert_eq!(digest(&root), before, "the build wrote into the store");

        let installed = copy_of(&root);
        let semodule = tool("semodule", "policycoreutils");
        run_ok(
            Command::new(semodule)
                .arg("-n")
                .arg("-p")
                .arg(installed.path())
                .args(["-X", "400", "-i"])
                .arg(out.path().join(format!("{MODULE}.cil"))),
        );
        Built {
            root,
            out,
            stock,
            installed,
        }
    })
}

fn sesearch(policy: &Path, args: &[&str]) -> Vec<String> {
    let mut command = Command::new(tool("sesearch", "setools"));
    command.arg("-A").args(args).arg(policy);
    run_ok(&mut command)
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
fn predicted_policy_and_file_contexts_are_what_semodule_installs() {
    let built = built();
    let installed = built.installed.path();
    let predicted = built.out.path();
    assert!(same_bytes(
        &predicted.join("policy.33"),
        &store_dir(installed).join("active/policy.kern")
    ));
    assert!(same_bytes(
        &predicted.join("policy.33"),
        &installed.join("etc/selinux/default/policy/policy.33")
    ));
    assert!(same_bytes(
        &predicted.join("file_contexts"),
        &installed.join(INSTALLED_FC)
    ));
    // The control: without the module the prediction is the store as it is,
    // and the module does change the binary.
    let stock = built.stock.path();
    assert!(same_bytes(
        &stock.join("policy.33"),
        &store_dir(&built.root).join("active/policy.kern")
    ));
    assert!(same_bytes(
        &stock.join("file_contexts"),
        &built.root.join(INSTALLED_FC)
    ));
    assert!(!same_bytes(
        &stock.join("policy.33"),
        &predicted.join("policy.33")
    ));
}

#[test]
fn installed_binary_gives_container_t_no_access_to_protected_types() {
    let policy = store_dir(built().installed.path()).join("active/policy.kern");
    // Controls: the same queries find rules where the layout grants some.
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
    assert!(!sesearch(
        &policy,
        &[
            "-s",
            "container_t",
            "-t",
            "var_mnt_t",
            "-c",
            "file",
            "-p",
            "write"
        ]
    )
    .is_empty());
    assert!(!sesearch(
        &policy,
        &[
            "-s",
            "container_t",
            "-t",
            "pods_log_t",
            "-c",
            "file",
            "-p",
            "read"
        ]
    )
    .is_empty());
    for protected in [
        "etcd_var_t",
        "kubelet_pki_t",
        "audit_log_t",
        "overlays_var_t",
    ] {
        let rules = sesearch(
            &policy,
            &["-s", "container_t", "-t", protected, "-c", "dir"],
        );
        // The store lets every container domain traverse every directory of
        // every file type (files_search_all in refpolicy's container
        // module); nothing else may remain.
        for rule in &rules {
            assert!(
                rule.contains(":dir { getattr open search }"),
                "container_t reaches {protected} beyond traversal: {rule}"
            );
        }
        for class in [
            "file",
            "lnk_file",
            "chr_file",
            "blk_file",
            "sock_file",
            "fifo_file",
        ] {
            let rules = sesearch(
                &policy,
                &["-s", "container_t", "-t", protected, "-c", class],
            );
            assert!(
                rules.is_empty(),
                "container_t reaches {protected}:{class}: {rules:#?}"
            );
        }
        let listing = sesearch(
            &policy,
            &[
                "-s",
                "container_t",
                "-t",
                protected,
                "-c",
                "dir",
                "-p",
                "read",
            ],
        );
        assert!(
            listing.is_empty(),
            "container_t may list {protected}: {listing:#?}"
        );
    }
}

#[test]
fn without_the_module_container_t_reads_etcd_data() {
    let built = built();
    let stock_fc = built.root.join(INSTALLED_FC);
    let libselinux = LibSelinux::open(&stock_fc).unwrap();
    let answer = libselinux.lookup(b"/var/lib/etcd/member/snap/db", FileKind::File);
    assert_eq!(
        answer,
        Answer::Label("system_u:object_r:container_file_t:s0".into())
    );
    let policy = store_dir(&built.root).join("active/policy.kern");
    let rules = sesearch(
        &policy,
        &[
            "-s",
            "container_t",
            "-t",
            "container_file_t",
            "-c",
            "file",
            "-p",
            "read",
        ],
    );
    assert!(
        !rules.is_empty(),
        "stock container_t cannot read container_file_t"
    );
    // And with the module, the same file is etcd's.
    let merged = LibSelinux::open(&built.installed.path().join(INSTALLED_FC)).unwrap();
    let answer = merged.lookup(b"/var/lib/etcd/member/snap/db", FileKind::File);
    assert_eq!(
        answer,
        Answer::Label("system_u:object_r:etcd_var_t:s0".into())
    );
}

#[test]
fn merged_lookups_give_the_layout_types_and_libselinux_agrees() {
    let built = built();
    let fc = built.installed.path().join(INSTALLED_FC);
    let libselinux = LibSelinux::open(&fc).unwrap();
    let expected = [
        ("/var", "var_t"),
        ("/var/lib/etcd", "etcd_var_t"),
        ("/var/lib/etcd/member/snap/db", "etcd_var_t"),
        ("/var/lib/kubelet", "kubelet_var_t"),
        ("/var/lib/kubelet/config.yaml", "kubelet_var_t"),
        ("/var/lib/kubelet/pki", "kubelet_pki_t"),
        (
            "/var/lib/kubelet/pki/kubelet-client-current.pem",
            "kubelet_pki_t",
        ),
        ("/var/lib/kubelet/pods", "kubelet_pods_t"),
        ("/var/lib/kubelet/pods/uid/volumes/x", "kubelet_pods_t"),
        ("/var/lib/containerd", "containerd_var_t"),
        (
            "/var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db",
            "containerd_var_t",
        ),
        ("/var/lib/cni", "cni_var_t"),
        ("/var/lib/cni/networks/x", "cni_var_t"),
        ("/var/log", "var_log_t"),
        ("/var/log/pods", "pods_log_t"),
        ("/var/log/pods/ns_pod_uid/c/0.log", "pods_log_t"),
        ("/var/log/audit", "audit_log_t"),
        ("/var/log/audit/audit.log", "audit_log_t"),
        ("/var/log/audit/lost+found", "audit_log_t"),
        ("/var/system/overlays", "overlays_var_t"),
        ("/var/system/overlays/ext", "overlays_var_t"),
        ("/var/mnt", "var_mnt_t"),
        ("/var/mnt/data/file", "var_mnt_t"),
    ];
    for (key, type_name) in expected {
        for kind in [FileKind::Dir, FileKind::File, FileKind::Any] {
            let answer = libselinux.lookup(key.as_bytes(), kind);
            assert_eq!(
                answer,
                Answer::Label(format!("system_u:object_r:{type_name}:s0")),
                "{key} ({kind:?})"
            );
        }
    }
    // Refinements of unprotected paths the layout does not declare stay
    // the store's: a pod's shared memory below containerd's run directory.
    let shm = libselinux.lookup(
        b"/run/containerd/io.containerd.grpc.v1.cri/sandboxes/1/shm",
        FileKind::Dir,
    );
    assert_eq!(
        shm,
        Answer::Label("system_u:object_r:container_engine_tmpfs_t:s0".into())
    );
    // Our engine answers every key of the merged file like libselinux.
    // (The predicted file is byte-identical to this one, see above.)
    fc_oracle::assert_file_agrees_with_libselinux(&fc);
}

/// Keys of containerd's image layers and pod sandboxes, which the default
/// layout gives the base policy's `container_file_t` (`baseType: true`).
pub(crate) const CONTAINERD_CONTENT: [&str; 2] = [
    "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs/x",
    "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/hostname",
];

/// Each of [`CONTAINERD_CONTENT`] gets the store's own type (`types`, in
/// order) from the stock file contexts, and the same from the merged ones.
pub(crate) fn assert_containerd_content_kept(
    stock: &LibSelinux,
    merged: &LibSelinux,
    types: [&str; 2],
) {
    for (key, type_name) in CONTAINERD_CONTENT.into_iter().zip(types) {
        for kind in [FileKind::Dir, FileKind::File] {
            let theirs = stock.lookup(key.as_bytes(), kind);
            assert_eq!(
                theirs,
                Answer::Label(format!("system_u:object_r:{type_name}:s0")),
                "{key} {kind:?}"
            );
            assert_eq!(
                merged.lookup(key.as_bytes(), kind),
                theirs,
                "{key} {kind:?}"
            );
        }
    }
}

#[test]
fn containerd_content_keeps_the_stores_own_types() {
    let built = built();
    let stock = LibSelinux::open(&built.root.join(INSTALLED_FC)).unwrap();
    let merged = LibSelinux::open(&built.installed.path().join(INSTALLED_FC)).unwrap();
    // The container module's own type, not the standalone base's (the
    // control: what the layout would have written).
    assert_containerd_content_kept(
        &stock,
        &merged,
        ["container_ro_file_t", "container_ro_file_t"],
    );
    let cil = fs::read_to_string(built.out.path().join(format!("{MODULE}.cil"))).unwrap();
    assert!(
        !cil.lines()
            .any(|l| l.starts_with("(filecon") && l.contains("container_file_t")),
        "{cil}"
    );
}

#[test]
fn report_names_collisions_the_workload_set_and_who_else_reaches() {
    let built = built();
    let report: serde_json::Value =
        serde_json::from_slice(&fs::read(built.out.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["profile"], "refpolicy");
    assert_eq!(report["verification"]["result"], "identical");
    assert_eq!(report["expand_check"], false);
    assert_eq!(
        report["workload_set"],
        serde_json::json!([
            "cni_agent_t",
            "container_t",
            "csi_node_t",
            "device_plugin_t",
            "log_reader_t",
            "node_monitor_t"
        ])
    );
    let domains = report["domains"].as_array().unwrap();
    let runtime = domains.iter().find(|d| d["key"] == "containerd").unwrap();
    assert_eq!(
        (runtime["store_type"].as_str(), runtime["origin"].as_str()),
        (Some("container_engine_t"), Some("runtime"))
    );
    let etcd = report["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == "/var/lib/etcd")
        .unwrap();
    assert_eq!(etcd["before"], "system_u:object_r:container_file_t:s0");
    let collision = etcd["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "collision")
        .expect("collision");
    assert_eq!(
        collision["spec"]["modules"],
        serde_json::json!(["container"])
    );
    let aliased = report["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == "/var/run")
        .unwrap();
    assert_eq!(aliased["events"][0]["kind"], "aliased");
    let protections = report["protections"].as_array().unwrap();
    assert_eq!(protections.len(), 5);
    let etcd = protections
        .iter()
        .find(|p| p["reach"]["type_name"] == "etcd_var_t")
        .unwrap();
    let workload = etcd["reach"]["workload"].as_array().unwrap();
    assert_eq!(workload.len(), 1, "{workload:#?}");
    assert_eq!(workload[0]["leftover"], "traversal");
    // The default layout's agents join the store's container domains, so
    // the store's traversal reaches them as it reaches the pod domain.
    assert_eq!(
        workload[0]["domains"],
        serde_json::json!([
            "cni_agent_t",
            "container_t",
            "csi_node_t",
            "device_plugin_t",
            "log_reader_t",
            "node_monitor_t"
        ])
    );
    let vias: Vec<&str> = etcd["reach"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["via"].as_str().unwrap())
        .collect();
    assert!(
        vias.contains(&"files_unconfined_type → file_type"),
        "{vias:?}"
    );
    assert!(vias.contains(&"file_type"), "{vias:?}");
    let text = fs::read_to_string(built.out.path().join("report.txt")).unwrap();
    assert!(text.contains("byte-identical"), "{text}");
    assert!(text.contains("still reachable by"), "{text}");
    // The module says where every line comes from and needs no base type
    // of a module that may be missing outside an optional block.
    let cil = fs::read_to_string(built.out.path().join(format!("{MODULE}.cil"))).unwrap();
    assert!(cil.contains("(optional structured_var_opt_"), "{cil}");
    assert!(
        cil.contains("(typeattributeset non_auth_file_type (etcd_var_t))"),
        "{cil}"
    );
    assert!(
        cil.contains("(filecon \"/var/lib/etcd\" any (system_u object_r etcd_var_t ((s0) (s0))))"),
        "{cil}"
    );
}

#[test]
fn leaky_include_fails_the_build_at_the_manifest_line() {
    let root = refpolicy_store();
    let dir = tempfile::tempdir().unwrap();
    let leaky = dir.path().join("leaky.cil");
    fs::write(
        &leaky,
        "(allow container_t etcd_var_t (file (read open getattr)))\n",
    )
    .unwrap();
    let output = run(semanifest()
        .args(["build", "--target", "module", "--against"])
        .arg(&root)
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("--include")
        .arg(&leaky));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "<embedded default layout>:{}:18: error[neverallow]: protected path `/var/lib/etcd`",
            crate::support::etcd_protected_line()
        )),
        "{err}"
    );
    assert!(err.contains("leaky.cil:1"), "{err}");
    assert!(!dir.path().join("out/policy.33").exists());
}

#[test]
fn a_naive_module_loses_its_etcd_line_and_check_names_it() {
    let store = copy_of(&refpolicy_store());
    let dir = tempfile::tempdir().unwrap();
    // What the obvious fix looks like: the identical regex, another type.
    let naive = dir.path().join("etcdguard.cil");
    fs::write(
        &naive,
        "(type etcdguard_var_t)\n(roletype object_r etcdguard_var_t)\n(typeattributeset file_type (etcdguard_var_t))\n\
         (filecon \"/var/lib/etcd(/.*)?\" any (system_u object_r etcdguard_var_t ((s0) (s0))))\n",
    )
    .unwrap();
    let semodule = tool("semodule", "policycoreutils");
    run_ok(
        Command::new(semodule)
            .arg("-n")
            .arg("-p")
            .arg(store.path())
            .args(["-X", "400", "-i"])
            .arg(&naive),
    );
    // It installed without a word, and its line is gone.
    let libselinux = LibSelinux::open(&store.path().join(INSTALLED_FC)).unwrap();
    assert_eq!(
        libselinux.lookup(b"/var/lib/etcd/member", FileKind::Dir),
        Answer::Label("system_u:object_r:container_file_t:s0".into())
    );

    let output = run(semanifest()
        .args(["check", "--format", "json", "--against"])
        .arg(store.path()));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    let collision = findings
        .iter()
        .find(|f| {
            f["rule"] == "store-filecon-resolved"
                && f["message"]
                    .as_str()
                    .unwrap()
                    .contains("/var/lib/etcd(/.*)?")
        })
        .unwrap_or_else(|| panic!("no collision for /var/lib/etcd: {findings:#?}"));
    let message = collision["message"].as_str().unwrap();
    assert!(message.contains("container, etcdguard"), "{message}");
    assert!(message.contains("secilc kept"), "{message}");
    assert!(
        findings.iter().any(|f| f["rule"] == "store-reach"),
        "{findings:#?}"
    );
    assert!(
        findings
            .iter()
            .any(|f| f["rule"] == "store-filecon-aliased"),
        "{findings:#?}"
    );
}

#[test]
fn a_local_file_context_that_beats_every_module_is_an_error() {
    let store = copy_of(&refpolicy_store());
    fs::write(
        store_dir(store.path()).join("active/file_contexts.local"),
        "/var/lib/etcd(/.*)?    system_u:object_r:container_file_t:s0\n",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = run(semanifest()
        .args(["build", "--target", "module", "--against"])
        .arg(store.path())
        .arg("--out")
        .arg(out.path()));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("semanage fcontext -d '/var/lib/etcd(/.*)?'"),
        "{err}"
    );
}

#[test]
fn every_store_form_compiles_to_the_same_policy() {
    let root = refpolicy_store();
    let options = ModuleOptions::default();
    let from_root = Baseline::prepare(&root, &options, None).unwrap();
    assert!(matches!(
        from_root.verification().unwrap(),
        store::Verification::Identical { .. }
    ));
    let from_store_dir = Baseline::prepare(&store_dir(&root), &options, None).unwrap();
    assert!(matches!(
        from_store_dir.verification().unwrap(),
        store::Verification::Identical { .. }
    ));
    // A directory of CIL as `semodule -E --cil` writes it.
    let extracted = tempfile::tempdir().unwrap();
    for module in Store::open(&root).unwrap().modules {
        fs::write(
            extracted.path().join(format!("{}.cil", module.name)),
            &module.cil,
        )
        .unwrap();
    }
    let from_cil = Baseline::prepare(extracted.path(), &options, None).unwrap();
    assert!(matches!(
        from_cil.verification().unwrap(),
        store::Verification::Unavailable { .. }
    ));
    let policy = |b: &Baseline| fs::read(b.stock_policy()).unwrap();
    assert_eq!(policy(&from_root), policy(&from_store_dir));
    assert_eq!(policy(&from_root), policy(&from_cil));
    assert_eq!(from_root.profile.name, store::ProfileName::Refpolicy);
}

/// Agents are in the workload set the store's protections hold against:
/// an included rule that lets one read etcd's data fails the build.
#[test]
fn an_agent_reaching_a_protected_path_fails_the_build() {
    let root = refpolicy_store();
    let dir = tempfile::tempdir().unwrap();
    let leaky = dir.path().join("leaky.cil");
    let build = |rule: &str| {
        fs::write(&leaky, rule).unwrap();
        run(semanifest()
            .args(["build", "--target", "module", "--against"])
            .arg(&root)
            .arg("--out")
            .arg(dir.path().join("out"))
            .arg("--include")
            .arg(&leaky))
    };
    let output = build("(allow log_reader_t etcd_var_t (file (read open getattr)))\n");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("protected path `/var/lib/etcd`"), "{err}");
    assert!(err.contains("(allow log_reader_t etcd_var_t"), "{err}");
    // Control: the same rule on a path nobody protects builds.
    let output = build("(allow log_reader_t var_mnt_t (file (read open getattr)))\n");
    assert!(output.status.success(), "{}", stderr(&output));
}
