//! Agent domains on a distribution's store (`build --target module`):
//! every host class's grants written on the store's own types, agents
//! joined to the store's container domains, proven by secilc, and read
//! back from the predicted binary policy with libsepol (audit2why), on
//! Debian's refpolicy store and on the Fedora targeted store. Each class
//! has its control: an agent without the class is denied what the class
//! grants (beyond what the store gives every container domain).

use std::fs;
use std::path::Path;

use crate::support::fc_oracle::{Answer, LibSelinux};
use crate::support::store::{fedora_store, refpolicy_store};
use crate::support::{libsepol_verdicts, run, semanifest, stderr, stdout};
use layout::model::host::{Grant, HostClass, StoreFamily, StoreGrants, HOST_CLASSES};
use selabel::FileKind;

/// The agent granted no host class: every class's control.
const NONE: &str = "probe_none_t";

fn probe_type(class: &HostClass) -> String {
    format!("probe_{}_t", class.name.replace('-', "_"))
}

/// The strongest level a class admits.
fn level(class: &HostClass) -> &'static str {
    if class.admits("write") {
        "write"
    } else {
        class.levels[class.levels.len() - 1]
    }
}

/// The classes a store of `family` can grant (the others are refused at
/// the manifest: `a_class_the_store_refuses_fails_at_its_grant`).
fn grantable(family: StoreFamily) -> Vec<&'static HostClass> {
    HOST_CLASSES
        .iter()
        .filter(|class| !matches!(class.on_store(family), StoreGrants::Refused(_)))
        .collect()
}

/// The default layout with one more agent per class of `classes`,
/// granted that class alone at its strongest level, and one granted
/// none; containerd starts them all.
fn probe_layout(classes: &[&HostClass]) -> String {
    let mut domains = String::new();
    let mut keys = Vec::new();
    for class in classes {
        let key = format!("probe-{}", class.name);
        domains.push_str(&format!(
            "    {key}:\n      type: {}\n      agent: true\n      host: {{ {}: {} }}\n",
            probe_type(class),
            class.name,
            level(class)
        ));
        keys.push(key);
    }
    domains.push_str(&format!(
        "    probe-none:\n      type: {NONE}\n      agent: true\n"
    ));
    keys.push("probe-none".to_owned());
    let default = layout::manifest::DEFAULT_LAYOUT;
    let starts = "transitions: [pods, csi, cni, log-reader, monitor, device-plugin";
    assert_eq!(default.matches("\n  paths:\n").count(), 1);
    assert_eq!(default.matches(starts).count(), 1);
    default
        .replace("\n  paths:\n", &format!("\n{domains}  paths:\n"))
        .replace(starts, &format!("{starts}, {}", keys.join(", ")))
}

/// `build --target module` of the probe layout against `store`, a store
/// of `family`.
fn build_against(store: &Path, family: StoreFamily) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("layout.yaml");
    fs::write(&layout, probe_layout(&grantable(family))).unwrap();
    let output = run(semanifest()
        .args(["build", "--target", "module", "--layout"])
        .arg(&layout)
        .arg("--against")
        .arg(store)
        .arg("--out")
        .arg(dir.path().join("out")));
    assert!(
        output.status.success(),
        "build failed:\n{}{}",
        stdout(&output),
        stderr(&output)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.path().join("out/report.json")).unwrap()).unwrap();
    assert_eq!(report["proof"]["result"], "proven", "{report:#}");
    dir
}

fn process(t: &str) -> String {
    format!("system_u:system_r:{t}:s0")
}

fn object(t: &str) -> String {
    // An attribute of file types is asked about through one member.
    let t = match t {
        "sysctl_type" => "sysctl_kernel_t",
        other => other,
    };
    format!("system_u:object_r:{t}:s0")
}

/// What an agent granted `class` at `level` may do, on a store that names
/// the class's things `grants`: (target context, class, permission).
fn questions(grants: &[Grant], level: &str, agent: &str) -> Vec<(String, &'static str, String)> {
    let includes = |from: &str| from == level || (level == "write" && from == "read");
    let mut out = Vec::new();
    for grant in grants {
        match *grant {
            Grant::Files(t) => {
                out.push((object(t), "file", "read".to_owned()));
                if level == "write" {
                    out.push((object(t), "file", "write".to_owned()));
                }
                if level == "exec" {
                    out.push((object(t), "file", "execute".to_owned()));
                }
            }
            Grant::Device(t, class) => {
                out.push((object(t), class.class(), "read".to_owned()));
                if level == "write" {
                    out.push((object(t), class.class(), "write".to_owned()));
                }
            }
            Grant::Socket { socket, server } => {
                out.push((object(socket), "sock_file", "write".to_owned()));
                out.push((
                    process(server),
                    "unix_stream_socket",
                    "connectto".to_owned(),
                ));
            }
            Grant::Processes => out.push((process("init_t"), "file", "read".to_owned())),
            Grant::OnSelf { class, perms, from } => {
                if includes(from) {
                    let perm = perms.split_whitespace().next().unwrap();
                    out.push((process(agent), class, perm.to_owned()));
                }
            }
            Grant::Mount(t) => out.push((object(t), "filesystem", "mount".to_owned())),
            Grant::MountContext(t) => {
                out.push((object(t), "filesystem", "relabelto".to_owned()));
            }
            Grant::System { target, perms } => {
                let perm = perms.split_whitespace().next().unwrap();
                out.push((process(target), "system", perm.to_owned()));
            }
        }
    }
    out
}

/// Per class: its questions, the verdicts for its agent, and for the
/// agent without it.
struct ClassVerdicts {
    class: &'static str,
    asked: Vec<String>,
    granted: Vec<String>,
    without: Vec<String>,
}

fn verdicts(policy: &Path, family: StoreFamily) -> Vec<ClassVerdicts> {
    let mut queries: Vec<[String; 4]> = Vec::new();
    let mut spans = Vec::new();
    for class in grantable(family) {
        let grants = class
            .store_types(class.on_store(family))
            .unwrap_or(class.standalone);
        let agent = probe_type(class);
        let start = queries.len();
        for (target, tclass, perm) in questions(grants, level(class), &agent) {
            for source in [agent.as_str(), NONE] {
                // The control asks about itself where the class grants on
                // the agent's own domain.
                let target = target.replace(&format!(":{agent}:"), &format!(":{source}:"));
                queries.push([process(source), target, tclass.to_owned(), perm.clone()]);
            }
        }
        spans.push((class.name, start, queries.len()));
    }
    let answers = libsepol_verdicts(policy, &queries);
    spans
        .into_iter()
        .map(|(class, start, end)| {
            let pairs = (start..end).step_by(2);
            ClassVerdicts {
                class,
                asked: pairs
                    .clone()
                    .map(|i| format!("{} {} {}", queries[i][1], queries[i][2], queries[i][3]))
                    .collect(),
                granted: pairs.clone().map(|i| answers[i].clone()).collect(),
                without: pairs.map(|i| answers[i + 1].clone()).collect(),
            }
        })
        .collect()
}

/// Every class's agent is allowed all its class grants; the agent without
/// it is denied at least one of them, except for the classes `store_owns`
/// names, whose every grant the store already gives its container domains.
fn assert_classes(results: &[ClassVerdicts], store_owns: &[&str]) {
    let mut wrong = Vec::new();
    for result in results {
        assert!(!result.asked.is_empty(), "{}: nothing asked", result.class);
        for (question, verdict) in result.asked.iter().zip(&result.granted) {
            if verdict != "allow" {
                wrong.push(format!("{}: granted, {question}: {verdict}", result.class));
            }
        }
        let denied: Vec<&String> = result
            .asked
            .iter()
            .zip(&result.without)
            .filter(|(_, verdict)| *verdict != "allow")
            .map(|(question, _)| question)
            .collect();
        let owned = store_owns.contains(&result.class);
        if denied.is_empty() != owned {
            wrong.push(format!(
                "{}: without the class, denied {denied:?} (the store's own: {owned})",
                result.class
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

fn label(fc: &Path, key: &str, kind: FileKind) -> String {
    match LibSelinux::open(fc).unwrap().lookup(key.as_bytes(), kind) {
        Answer::Label(label) => label,
        other => format!("{other:?}"),
    }
}

/// The CNI classes' paths get the types the module declares for them,
/// in libselinux's lookup of the installed file contexts.
fn assert_cni_labels(out: &Path, stock_fc: &Path) {
    let fc = out.join("file_contexts");
    for (key, kind, want) in [
        ("/etc/cni", FileKind::Dir, "cni_conf_t"),
        ("/etc/cni/net.d", FileKind::Dir, "cni_conf_t"),
        (
            "/etc/cni/net.d/10-flannel.conflist",
            FileKind::File,
            "cni_conf_t",
        ),
        ("/opt/cni/bin", FileKind::Dir, "cni_bin_t"),
        ("/opt/cni/bin/bridge", FileKind::File, "cni_bin_t"),
    ] {
        let got = label(&fc, key, kind);
        assert_eq!(got, format!("system_u:object_r:{want}:s0"), "{key}");
        // Control: the store alone labels it otherwise.
        assert_ne!(label(stock_fc, key, kind), got, "{key}");
    }
}

#[test]
fn every_host_class_is_granted_on_debians_store_and_denied_without_it() {
    let root = refpolicy_store();
    let dir = build_against(&root, StoreFamily::Refpolicy);
    let out = dir.path().join("out");
    let results = verdicts(&out.join("policy.33"), StoreFamily::Refpolicy);
    // refpolicy's container module lets container domains set the
    // network sysctls.
    assert_classes(&results, &["net-sysctl"]);
    assert_cni_labels(
        &out,
        &root.join("etc/selinux/default/contexts/files/file_contexts"),
    );
    agents_join_the_container_domains(&out.join("structured_var.cil"), StoreFamily::Refpolicy);
    the_runtime_mounts_on_the_volumes(&out.join("policy.33"), "container_engine_t");
}

#[test]
fn every_host_class_is_granted_on_fedoras_store_and_denied_without_it() {
    let Some(root) = fedora_store(
        "agent_store::every_host_class_is_granted_on_fedoras_store_and_denied_without_it",
    ) else {
        return;
    };
    let dir = build_against(&root, StoreFamily::ContainerSelinux);
    let out = dir.path().join("out");
    let results = verdicts(&out.join("policy.33"), StoreFamily::ContainerSelinux);
    // container-selinux gives every container domain these already (and
    // every domain the machine ID).
    assert_classes(
        &results,
        &["cgroup", "fuse", "kvm", "machine-id", "net-sysctl", "sysfs"],
    );
    assert_cni_labels(
        &out,
        &root.join("etc/selinux/targeted/contexts/files/file_contexts"),
    );
    agents_join_the_container_domains(
        &out.join("structured_var.cil"),
        StoreFamily::ContainerSelinux,
    );
    the_runtime_mounts_on_the_volumes(&out.join("policy.33"), "container_runtime_t");
}

/// The store's runtime may mount on the agents' volumes (the kubelet
/// plugin directories, /var/lib/kubelet itself, the pod volumes) in the
/// predicted policy. On refpolicy it may not on the protected types it
/// does not hold (container-selinux's runtime is unconfined: it may).
fn the_runtime_mounts_on_the_volumes(policy: &Path, runtime: &str) {
    let ask = |target: &str| {
        [
            process(runtime),
            object(target),
            "dir".to_owned(),
            "mounton".to_owned(),
        ]
    };
    let volumes = [
        "kubelet_plugins_registry_t",
        "kubelet_plugins_t",
        "kubelet_pods_t",
        "kubelet_var_t",
    ];
    let verdicts = libsepol_verdicts(policy, &volumes.map(ask));
    for (target, verdict) in volumes.iter().zip(&verdicts) {
        assert_eq!(verdict, "allow", "{runtime} mounton {target}");
    }
    if runtime == "container_engine_t" {
        let protected = ["etcd_var_t", "kubelet_pki_t"];
        let verdicts = libsepol_verdicts(policy, &protected.map(ask));
        for (target, verdict) in protected.iter().zip(&verdicts) {
            assert_ne!(verdict, "allow", "{runtime} mounton {target}");
        }
    }
}

/// The module declares each agent and puts it in the store's container
/// domain attribute (in an optional block: the container module may go).
fn agents_join_the_container_domains(module: &Path, family: StoreFamily) {
    let text = fs::read_to_string(module).unwrap();
    for agent in grantable(family)
        .into_iter()
        .map(probe_type)
        .chain([NONE.to_owned(), "csi_node_t".to_owned()])
    {
        assert!(text.contains(&format!("(type {agent})")), "{agent}");
        assert!(
            text.contains(&format!(
                "    (typeattributeset container_domain ({agent}))"
            )),
            "{agent}"
        );
    }
    // Control: a domain that is no agent does not join.
    assert!(!text.contains("(typeattributeset container_domain (kubelet_t))"));
}

/// A class refpolicy refuses (`machine-id`: its type there is `etc_t`,
/// most of /etc) fails `build --target module` on Debian's store at the
/// grant, saying why; the same layout builds as the standalone policy.
#[test]
fn a_class_the_store_refuses_fails_at_its_grant() {
    let refused: Vec<&HostClass> = HOST_CLASSES
        .iter()
        .filter(|class| matches!(class.refpolicy, StoreGrants::Refused(_)))
        .collect();
    assert_eq!(
        refused.iter().map(|c| c.name).collect::<Vec<_>>(),
        ["machine-id"]
    );
    let text = probe_layout(&refused);
    let (line, column) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("machine-id: read").map(|c| (i + 1, c + 1)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("layout.yaml");
    fs::write(&layout, &text).unwrap();
    let output = run(semanifest()
        .args(["build", "--target", "module", "--layout"])
        .arg(&layout)
        .arg("--against")
        .arg(refpolicy_store())
        .arg("--out")
        .arg(dir.path().join("out")));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "layout.yaml:{line}:{column}: error[host-class-store]: host class `machine-id` of \
             `probe-machine-id` cannot be granted on a refpolicy store"
        )),
        "{err}"
    );
    assert!(
        err.contains("`etc_t`") && err.contains("/etc/kubernetes"),
        "{err}"
    );
    assert!(!dir.path().join("out/structured_var.cil").exists());
    // `check --against` reports it as a finding of the agent rule.
    let output = run(semanifest()
        .args(["check", "--layout"])
        .arg(&layout)
        .arg("--against")
        .arg(refpolicy_store()));
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}{}", stderr(&output));
    assert!(
        out.contains("error[layout-agent]: host class `machine-id` of `probe-machine-id`")
            && out.contains(&format!("layout.yaml:{line}:{column}")),
        "{out}"
    );
    // The library refuses it too when the caller skipped
    // `manifest::for_store`: an error, not a module without the grant.
    let options = store::ModuleOptions::default();
    let baseline = store::Baseline::prepare(&refpolicy_store(), &options, None).unwrap();
    let parsed = layout::manifest::parse(
        layout::diag::Source::new("layout.yaml", text.clone()),
        &baseline.base_facts(),
    )
    .unwrap();
    match store::build(&baseline, &parsed, &options) {
        Err(store::ModuleError::Mapping(message)) => assert!(
            message.contains(
                "host class `machine-id` of `probe-machine-id` cannot be granted on a refpolicy store"
            ),
            "{message}"
        ),
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("the library built a module without the refused grant"),
    }
    // Control: the standalone policy grants it.
    let output = run(semanifest()
        .args(["build", "--layout"])
        .arg(&layout)
        .arg("--out")
        .arg(dir.path().join("standalone")));
    assert!(output.status.success(), "{}", stderr(&output));
}
