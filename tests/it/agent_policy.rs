//! Agent domains in the standalone policy, read back from what `semanifest
//! build` compiles with the real secilc: setools for the rules, libsepol
//! (audit2why) for verdicts, libselinux for the labels the base gives the
//! host classes' paths. Each denial has its control.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::fc_oracle::{Answer, LibSelinux};
use crate::support::{libsepol_verdict, run, run_ok, semanifest, stderr, tool};
use layout::model::capability::CAPABILITIES;
use layout::model::host::{DeviceClass, Grant, ObjectKind, Scope, HOST_CLASSES};
use selabel::FileKind;

const AGENTS: [&str; 5] = [
    "csi_node_t",
    "cni_agent_t",
    "log_reader_t",
    "node_monitor_t",
    "device_plugin_t",
];

/// `semanifest build` of a layout (the default one without) into a
/// temporary directory, with extra arguments.
fn build(layout: Option<&str>, extra: &[&str]) -> (tempfile::TempDir, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = semanifest();
    command
        .arg("build")
        .arg("--out")
        .arg(dir.path().join("out"));
    if let Some(text) = layout {
        let path = dir.path().join("layout.yaml");
        fs::write(&path, text).unwrap();
        command.arg("--layout").arg(path);
    }
    command.args(extra);
    let output = run(&mut command);
    (dir, output)
}

fn built(layout: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let (dir, output) = build(layout, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let policy = dir.path().join("out/policy.33");
    (dir, policy)
}

fn sesearch(policy: &Path, args: &[&str]) -> String {
    run_ok(
        Command::new(tool("sesearch", "setools"))
            .args(args)
            .arg(policy),
    )
}

fn seinfo(policy: &Path, args: &[&str]) -> String {
    run_ok(
        Command::new(tool("seinfo", "setools"))
            .arg(policy)
            .args(args),
    )
}

/// The allow rules whose source is `domain` itself (not an attribute it
/// holds: those are the base policy's), from one `sesearch -A -s`.
fn own_rules(policy: &Path, domain: &str) -> Vec<String> {
    sesearch(policy, &["-A", "-s", domain])
        .lines()
        .filter(|line| line.split_whitespace().nth(1) == Some(domain))
        .map(str::to_owned)
        .collect()
}

/// Those of `rules` whose target is `target` as written.
fn on_target<'a>(rules: &'a [String], target: &str) -> Vec<&'a String> {
    rules
        .iter()
        .filter(|line| {
            line.split_whitespace()
                .nth(2)
                .is_some_and(|field| field.starts_with(&format!("{target}:")))
        })
        .collect()
}

fn default_layout_with(edit: impl Fn(String) -> String) -> String {
    edit(layout::manifest::DEFAULT_LAYOUT.to_owned())
}

#[test]
fn agents_are_confined_domains_the_runtime_starts_and_mcs_leaves_alone() {
    let (_dir, policy) = built(None);
    let members = |attribute: &str| -> BTreeSet<String> {
        seinfo(&policy, &["-a", attribute, "-x"])
            .lines()
            .map(|l| l.trim().to_owned())
            .filter(|l| {
                !l.is_empty() && !l.starts_with("attribute ") && !l.starts_with("Type Attributes")
            })
            .collect()
    };
    let agents: BTreeSet<String> = AGENTS.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(members("semanifest_agent"), agents);
    assert!(members("semanifest_process").is_superset(&agents));
    assert!(members("semanifest_trusted").is_disjoint(&agents));
    assert_eq!(
        members("semanifest_mcs"),
        BTreeSet::from(["container_t".to_owned()])
    );
    for agent in AGENTS {
        let rules = sesearch(
            &policy,
            &[
                "-A",
                "-s",
                "containerd_t",
                "-t",
                agent,
                "-c",
                "process",
                "-p",
                "transition",
            ],
        );
        assert!(
            !rules.trim().is_empty(),
            "containerd_t cannot start {agent}"
        );
    }
    // Control: the same query for a domain the runtime does not start.
    let rules = sesearch(
        &policy,
        &[
            "-A",
            "-s",
            "containerd_t",
            "-t",
            "etcd_t",
            "-c",
            "process",
            "-p",
            "transition",
        ],
    );
    assert!(rules.trim().is_empty(), "{rules}");
}

#[test]
fn no_agent_has_a_rule_on_a_protected_type() {
    let (_dir, policy) = built(None);
    let protected = [
        "etcd_var_t",
        "kubelet_var_t",
        "kubelet_pki_t",
        "audit_log_t",
        "overlays_var_t",
    ];
    for agent in AGENTS {
        for target in protected {
            let rules = sesearch(&policy, &["-A", "-s", agent, "-t", target]);
            let file_rules: Vec<&str> = rules
                .lines()
                .filter(|l| !l.contains(":filesystem "))
                .collect();
            assert!(
                file_rules.is_empty(),
                "{agent} reaches {target}: {file_rules:?}"
            );
        }
    }
    // Control: the same query finds the trusted domain's blanket rule.
    let rules = sesearch(
        &policy,
        &["-A", "-s", "init_t", "-t", "etcd_var_t", "-c", "file"],
    );
    assert!(!rules.trim().is_empty());
}

/// The runtime's permissions on `target` by class (its own rules and its
/// attributes', on the type or an attribute holding it), the `filesystem`
/// class aside.
fn runtime_permissions(policy: &Path, target: &str) -> BTreeSet<String> {
    let mut perms = BTreeSet::new();
    for line in sesearch(policy, &["-A", "-s", "containerd_t", "-t", target]).lines() {
        let Some((_, tail)) = line.split_once(':') else {
            continue;
        };
        let Some(class) = tail.split_whitespace().next() else {
            continue;
        };
        if class == "filesystem" {
            continue;
        }
        let list = tail[class.len()..].trim().trim_end_matches(';');
        for perm in list
            .trim_matches(|c| c == '{' || c == '}')
            .split_whitespace()
        {
            perms.insert(format!("{class}:{perm}"));
        }
    }
    perms
}

/// containerd bind-mounts an agent's or a pod's volume and sets the
/// volume's propagation on the new mount, whose root is the host
/// directory: it needs `mounton` on the type of every path those domains
/// may be given as a volume. On a protected type it gains nothing else:
/// kubelet's directory, which it looks up, keeps exactly the layout's
/// `search` plus `mounton`; the protected types it does not hold get
/// nothing.
#[test]
fn the_runtime_mounts_on_every_volume_type_and_reads_no_protected_data() {
    let (_dir, policy) = built(None);
    let volumes = [
        ("kubelet_pods_t", "dir"),
        ("kubelet_plugins_t", "dir"),
        ("kubelet_plugins_registry_t", "dir"),
        ("kubelet_plugins_registry_t", "sock_file"),
        ("kubelet_device_plugins_t", "dir"),
        ("kubelet_pod_resources_t", "dir"),
        ("pods_log_t", "dir"),
        ("var_log_t", "dir"),
        ("var_mnt_t", "dir"),
        ("cni_var_t", "dir"),
        ("var_t", "dir"),
        ("kubelet_var_t", "dir"),
        ("cni_conf_t", "dir"),
        ("modules_object_t", "dir"),
        ("sysfs_t", "dir"),
        ("xtables_lock_t", "file"),
    ];
    for (target, class) in volumes {
        assert!(
            runtime_permissions(&policy, target).contains(&format!("{class}:mounton")),
            "containerd_t cannot mount on {target} ({class})"
        );
    }
    let search_and_mount: BTreeSet<String> = [
        "dir:getattr",
        "dir:open",
        "dir:search",
        "lnk_file:getattr",
        "lnk_file:read",
        "dir:mounton",
        "file:mounton",
        "sock_file:mounton",
        "chr_file:mounton",
        "blk_file:mounton",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    assert_eq!(
        runtime_permissions(&policy, "kubelet_var_t"),
        search_and_mount
    );
    for target in [
        "etcd_var_t",
        "kubelet_pki_t",
        "audit_log_t",
        "overlays_var_t",
    ] {
        let held = runtime_permissions(&policy, target);
        assert!(held.is_empty(), "containerd_t on {target}: {held:?}");
    }
    // Control: a runtime that starts nothing gets no mount point beyond
    // the base policy's, so the queries above see the layout's grant.
    let layout = default_layout_with(|text| {
        text.replace(
            "      transitions: [pods, csi, cni, log-reader, monitor, device-plugin]\n",
            "",
        )
    });
    let (_control, policy) = built(Some(&layout));
    for target in ["kubelet_plugins_registry_t", "kubelet_var_t", "var_t"] {
        let held = runtime_permissions(&policy, target);
        assert!(
            !held.contains("dir:mounton"),
            "containerd_t on {target} without transitions: {held:?}"
        );
    }
}

#[test]
fn secilc_rejects_an_included_rule_that_lets_an_agent_reach_a_protected_path() {
    let dir = tempfile::tempdir().unwrap();
    let leaky = dir.path().join("leaky.cil");
    fs::write(
        &leaky,
        "(allow log_reader_t audit_log_t (file (read open)))\n",
    )
    .unwrap();
    let (_out, output) = build(None, &["--include", leaky.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("protected path `/var/log/audit` (audit_log_t) is reachable"),
        "{text}"
    );
    assert!(text.contains("log_reader_t"), "{text}");
    // Control: the same rule on a type nobody protects builds.
    fs::write(
        &leaky,
        "(allow log_reader_t var_mnt_t (file (read open)))\n",
    )
    .unwrap();
    let (_out, output) = build(None, &["--include", leaky.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
}

/// Every host class: an agent granted it has the module's rules on the
/// class's standalone types, one that is not has none.
#[test]
fn an_agent_gets_rules_on_exactly_the_host_classes_it_is_granted() {
    let grants: Vec<String> = HOST_CLASSES
        .iter()
        .map(|class| format!("{}: {}", class.name, class.levels.last().unwrap()))
        .collect();
    let layout = default_layout_with(|text| {
        text.replace(
            "    log-reader:         # log shippers (Fluent Bit, Vector, Promtail)\n      type: log_reader_t\n      agent: true\n",
            &format!(
                "    log-reader:         # log shippers (Fluent Bit, Vector, Promtail)\n      type: log_reader_t\n      agent: true\n    everything:\n      type: everything_t\n      agent: true\n      host: {{ {} }}\n",
                grants.join(", ")
            ),
        )
    });
    let (_dir, policy) = built(Some(&layout));
    let everything = own_rules(&policy, "everything_t");
    let reader = own_rules(&policy, "log_reader_t");
    for class in HOST_CLASSES {
        for grant in class.standalone {
            let target = match grant {
                Grant::Files(t)
                | Grant::Device(t, _)
                | Grant::Mount(t)
                | Grant::MountContext(t) => *t,
                Grant::Socket { socket, .. } => socket,
                Grant::Processes => "domain",
                Grant::System { target, .. } => target,
                Grant::OnSelf { .. } => continue,
            };
            assert!(
                !on_target(&everything, target).is_empty(),
                "`{}` grants nothing on {target}",
                class.name
            );
            assert!(
                on_target(&reader, target).is_empty(),
                "log_reader_t, granted no host class, has a rule on {target}"
            );
        }
    }
}

/// What agents may do, as libsepol decides it on the compiled default
/// layout: a non-MCS agent reads across pods on its paths, but not other
/// pods' container content; an agent reaches its own paths only.
#[test]
fn verdicts_on_agents_paths_and_categories() {
    let (_dir, policy) = built(None);
    let process = |t: &str, level: &str| format!("system_u:system_r:{t}:{level}");
    let file = |t: &str, level: &str| format!("system_u:object_r:{t}:{level}");
    let cases = [
        // The log reader reads every pod's logs, whatever their categories.
        (
            process("log_reader_t", "s0"),
            file("pods_log_t", "s0:c1,c2"),
            "file",
            "read",
            "allow",
        ),
        (
            process("log_reader_t", "s0"),
            file("pods_log_t", "s0:c1,c2"),
            "file",
            "write",
            "terule",
        ),
        (
            process("log_reader_t", "s0"),
            file("audit_log_t", "s0"),
            "file",
            "read",
            "terule",
        ),
        (
            process("log_reader_t", "s0"),
            file("audit_log_t", "s0"),
            "dir",
            "search",
            "terule",
        ),
        // ... but not another pod's image or root filesystem.
        (
            process("log_reader_t", "s0:c5,c6"),
            file("container_file_t", "s0:c1,c2"),
            "file",
            "read",
            "constraint",
        ),
        (
            process("log_reader_t", "s0:c5,c6"),
            file("container_file_t", "s0:c5,c6"),
            "file",
            "read",
            "allow",
        ),
        // The CSI plugin publishes into pod volumes and registers.
        (
            process("csi_node_t", "s0"),
            file("kubelet_pods_t", "s0:c1,c2"),
            "dir",
            "mounton",
            "allow",
        ),
        (
            process("csi_node_t", "s0"),
            file("kubelet_plugins_registry_t", "s0"),
            "sock_file",
            "create",
            "allow",
        ),
        (
            process("csi_node_t", "s0"),
            file("kubelet_pki_t", "s0"),
            "file",
            "read",
            "terule",
        ),
        (
            process("csi_node_t", "s0"),
            file("etcd_var_t", "s0"),
            "file",
            "read",
            "terule",
        ),
        (
            process("csi_node_t", "s0"),
            file("kubelet_var_t", "s0"),
            "dir",
            "search",
            "terule",
        ),
        // kubelet talks to it; a pod cannot use the agents' paths.
        (
            process("kubelet_t", "s0"),
            process("csi_node_t", "s0"),
            "unix_stream_socket",
            "connectto",
            "allow",
        ),
        (
            process("container_t", "s0:c1,c2"),
            file("kubelet_plugins_registry_t", "s0"),
            "dir",
            "search",
            "terule",
        ),
        (
            process("container_t", "s0:c1,c2"),
            file("fixed_disk_device_t", "s0"),
            "blk_file",
            "read",
            "terule",
        ),
        // The monitor reads other processes' /proc/PID; no agent traces them.
        (
            process("node_monitor_t", "s0"),
            process("etcd_t", "s0"),
            "file",
            "read",
            "allow",
        ),
        (
            process("node_monitor_t", "s0"),
            process("etcd_t", "s0"),
            "process",
            "ptrace",
            "terule",
        ),
        (
            process("log_reader_t", "s0"),
            process("etcd_t", "s0"),
            "file",
            "read",
            "terule",
        ),
        // The CNI agent sets network sysctls, not the kernel's others.
        (
            process("cni_agent_t", "s0"),
            file("sysctl_net_t", "s0"),
            "file",
            "write",
            "allow",
        ),
        (
            process("cni_agent_t", "s0"),
            file("sysctl_t", "s0"),
            "file",
            "write",
            "terule",
        ),
        (
            process("cni_agent_t", "s0"),
            file("cni_conf_t", "s0"),
            "file",
            "create",
            "allow",
        ),
        (
            process("cni_agent_t", "s0"),
            file("cni_bin_t", "s0"),
            "file",
            "write",
            "terule",
        ),
        // Capabilities: the CSI plugin's sys_admin, nobody's sys_module.
        (
            process("csi_node_t", "s0"),
            process("csi_node_t", "s0"),
            "capability",
            "sys_admin",
            "allow",
        ),
        (
            process("log_reader_t", "s0"),
            process("log_reader_t", "s0"),
            "capability",
            "sys_admin",
            "terule",
        ),
        (
            process("cni_agent_t", "s0"),
            process("cni_agent_t", "s0"),
            "capability",
            "sys_module",
            "terule",
        ),
    ];
    let mut wrong = Vec::new();
    for (source, target, class, perm, expected) in &cases {
        let verdict = libsepol_verdict(&policy, source, target, class, perm);
        if verdict != *expected {
            wrong.push(format!(
                "{source} -> {target} {class} {perm}: {verdict}, expected {expected}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// An agent the layout asks to separate is held to its categories on its
/// paths too, like a pod.
#[test]
fn an_mcs_agent_is_separated_like_a_pod() {
    let layout = default_layout_with(|text| {
        text.replace(
            "      type: log_reader_t\n      agent: true\n",
            "      type: log_reader_t\n      agent: true\n      mcs: true\n",
        )
    });
    let (_dir, policy) = built(Some(&layout));
    let reader = "system_u:system_r:log_reader_t:s0:c5,c6";
    let other = "system_u:object_r:pods_log_t:s0:c1,c2";
    let own = "system_u:object_r:pods_log_t:s0:c5,c6";
    assert_eq!(
        libsepol_verdict(&policy, reader, other, "file", "read"),
        "constraint"
    );
    assert_eq!(
        libsepol_verdict(&policy, reader, own, "file", "read"),
        "allow"
    );
}

/// The label the base gives a class's host paths: its first file, device
/// or socket type.
fn label_type(grants: &[Grant]) -> Option<&'static str> {
    grants.iter().find_map(|grant| match grant {
        Grant::Files(t) | Grant::Device(t, _) => Some(*t),
        Grant::Socket { socket, .. } => Some(*socket),
        _ => None,
    })
}

/// libselinux, on the file_contexts `build` writes for the default
/// layout, gives every host path of a class the class's type; the kernel
/// filesystems are labelled by genfscon.
#[test]
fn the_base_labels_every_host_path_of_the_vocabulary() {
    let (dir, policy) = built(None);
    let contexts = LibSelinux::open(&dir.path().join("out/file_contexts")).unwrap();
    let kernel: BTreeSet<&str> = ["bpf", "cgroup", "net-sysctl", "proc", "sysfs"].into();
    let genfscon = seinfo(&policy, &["--genfscon"]);
    let mut checked = 0;
    for class in HOST_CLASSES.iter().filter(|c| !c.paths.is_empty()) {
        let expected = label_type(class.standalone).expect("a labelled class");
        if kernel.contains(class.name) {
            assert!(
                genfscon.contains(&format!(":{expected}:")),
                "no genfscon gives {expected} ({}):\n{genfscon}",
                class.name
            );
            continue;
        }
        for host in class.paths.iter().filter(|h| h.path != "/dev") {
            // Device directories hold their class's nodes.
            let device = class.standalone.iter().find_map(|grant| match grant {
                Grant::Device(_, DeviceClass::Char) => Some(FileKind::CharDev),
                Grant::Device(_, DeviceClass::Block) => Some(FileKind::BlockDev),
                _ => None,
            });
            let (key, kind) = match (host.scope, host.kind) {
                (Scope::Subtree, _) => {
                    (format!("{}/x", host.path), device.unwrap_or(FileKind::File))
                }
                (Scope::Exact, kind) | (Scope::NamePrefix, kind) => {
                    let key = if host.scope == Scope::NamePrefix {
                        format!("{}0", host.path)
                    } else {
                        host.path.to_owned()
                    };
                    let kind = match kind {
                        ObjectKind::Directory => FileKind::Dir,
                        ObjectKind::File => FileKind::File,
                        ObjectKind::Socket => FileKind::Socket,
                        ObjectKind::CharDevice => FileKind::CharDev,
                        ObjectKind::BlockDevice => FileKind::BlockDev,
                    };
                    (key, kind)
                }
            };
            // A block device is labelled by its kind wherever it is.
            let kind = if class.name == "block-devices" {
                FileKind::BlockDev
            } else {
                kind
            };
            let answer = contexts.lookup(key.as_bytes(), kind);
            assert_eq!(
                answer,
                Answer::Label(format!("system_u:object_r:{expected}:s0")),
                "{} ({key})",
                class.name
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked}");
    // Controls: a character device where disks are, and the rest of /dev,
    // /etc and /run keep their types.
    for (key, kind, expected) in [
        ("/dev/sda", FileKind::CharDev, "device_t"),
        ("/dev/mem", FileKind::CharDev, "device_t"),
        ("/etc/passwd", FileKind::File, "os_file_t"),
        ("/var/run/other", FileKind::File, "var_run_t"),
    ] {
        assert_eq!(
            contexts.lookup(key.as_bytes(), kind),
            Answer::Label(format!("system_u:object_r:{expected}:s0")),
            "{key}"
        );
    }
}

/// `/run` is a tmpfs nobody relabels once the runtime runs: the runtime's
/// directories get their type from the name they are created under.
#[test]
fn the_runtime_directories_get_their_type_when_created() {
    let (_dir, policy) = built(None);
    let rules = sesearch(&policy, &["-T", "-s", "containerd_t", "-t", "var_run_t"]);
    for expected in [
        "type_transition containerd_t var_run_t:dir runtime_run_t containerd;",
        "type_transition containerd_t var_run_t:dir runtime_run_t crio;",
        "type_transition containerd_t var_run_t:file xtables_lock_t xtables.lock;",
    ] {
        assert!(
            rules.lines().any(|l| l.trim() == expected),
            "{expected}\n{rules}"
        );
    }
    let bare = sesearch(&policy, &["-T", "-s", "containerd_t", "-t", "tmpfs_t"]);
    assert!(bare.contains("runtime_run_t containerd;"), "{bare}");
}

/// The capabilities every confined process holds are the table's default
/// set, and an agent granted none holds no other.
#[test]
fn the_default_capabilities_are_the_base_policys() {
    let (_dir, policy) = built(None);
    let rules = sesearch(
        &policy,
        &[
            "-A",
            "-s",
            "log_reader_t",
            "-t",
            "log_reader_t",
            "-c",
            "capability",
        ],
    );
    let held: BTreeSet<&str> = rules
        .lines()
        .flat_map(|line| {
            let perms = line.split_once('{').map_or("", |(_, rest)| rest);
            perms.trim_end_matches(['}', ';', ' ']).split_whitespace()
        })
        .collect();
    let defaults: BTreeSet<&str> = CAPABILITIES
        .iter()
        .filter(|c| c.default)
        .map(|c| c.name)
        .collect();
    assert_eq!(held, defaults, "{rules}");
}

/// Every standalone type the vocabulary names is the base policy's.
#[test]
fn every_standalone_type_of_the_vocabulary_is_the_base_policys() {
    let base = policy::base_facts().types;
    for class in HOST_CLASSES {
        for grant in class.standalone {
            let names: Vec<&str> = match grant {
                Grant::Files(t)
                | Grant::Device(t, _)
                | Grant::Mount(t)
                | Grant::MountContext(t) => vec![t],
                Grant::Socket { socket, server } => vec![socket, server],
                Grant::System { target, .. } => vec![target],
                Grant::Processes | Grant::OnSelf { .. } => vec![],
            };
            for name in names {
                assert!(
                    base.contains(name),
                    "`{}`: {name} is not a base type",
                    class.name
                );
            }
        }
    }
}

/// The default layout with two more agents the runtime starts: `id-reader`
/// granted `machine-id: read`, `id-none` granted no host class.
fn machine_id_layout() -> String {
    let agents = "    id-reader:\n      type: id_reader_t\n      agent: true\n      host: { machine-id: read }\n    id-none:\n      type: id_none_t\n      agent: true\n";
    let starts = "transitions: [pods, csi, cni, log-reader, monitor, device-plugin";
    default_layout_with(|text| {
        assert_eq!(text.matches("\n  paths:\n").count(), 1);
        assert_eq!(text.matches(starts).count(), 1);
        text.replace("\n  paths:\n", &format!("\n{agents}  paths:\n"))
            .replace(starts, &format!("{starts}, id-reader, id-none"))
    })
}

/// `machine-id: read` lets an agent read the machine ID and nothing else
/// of /etc: libselinux gives /etc/machine-id alone its type; libsepol
/// allows the agent holding the class to read it and denies the agent
/// without it (and pods); every other type that labels /etc gets the same
/// verdicts for both agents; the only rules the class adds are on the
/// machine ID's type. The node's daemons keep reading it.
#[test]
fn machine_id_reads_the_machine_id_and_nothing_else_of_etc() {
    let (dir, policy) = built(Some(&machine_id_layout()));
    let contexts = LibSelinux::open(&dir.path().join("out/file_contexts")).unwrap();
    let type_of = |path: &str| match contexts.lookup(path.as_bytes(), FileKind::File) {
        Answer::Label(label) => label.split(':').nth(2).unwrap().to_owned(),
        other => panic!("{path}: {other:?}"),
    };
    assert_eq!(type_of("/etc/machine-id"), "machineid_t");
    let etc = [
        "/etc/hostname",
        "/etc/passwd",
        "/etc/machine-idx",
        "/etc/kubernetes/admin.conf",
        "/etc/kubernetes/pki/ca.key",
        "/etc/cni/net.d/10-bridge.conflist",
    ];
    let other_types: BTreeSet<String> = etc.iter().map(|p| type_of(p)).collect();
    assert!(!other_types.contains("machineid_t"), "{other_types:?}");

    let process = |t: &str| format!("system_u:system_r:{t}:s0");
    let object = |t: &str| format!("system_u:object_r:{t}:s0");
    let read = |source: &str, target: &str| {
        libsepol_verdict(&policy, &process(source), &object(target), "file", "read")
    };
    assert_eq!(read("id_reader_t", "machineid_t"), "allow");
    // Controls: the agent without the class, a pod; the daemons keep it.
    assert_ne!(read("id_none_t", "machineid_t"), "allow");
    assert_ne!(read("container_t", "machineid_t"), "allow");
    assert_eq!(read("kubelet_t", "machineid_t"), "allow");
    // Read-only: no write through the class.
    assert_ne!(
        libsepol_verdict(
            &policy,
            &process("id_reader_t"),
            &object("machineid_t"),
            "file",
            "write"
        ),
        "allow"
    );
    for other in &other_types {
        assert_eq!(
            read("id_reader_t", other),
            read("id_none_t", other),
            "machine-id changes what its agent may read of {other}"
        );
    }
    // The rules the class adds: the agent's own rules beyond the control's
    // are all on machineid_t.
    let without: BTreeSet<String> = own_rules(&policy, "id_none_t")
        .iter()
        .map(|rule| rule.replace("id_none_t", "id_reader_t"))
        .collect();
    let added: Vec<String> = own_rules(&policy, "id_reader_t")
        .into_iter()
        .filter(|rule| !without.contains(rule))
        .collect();
    assert!(!added.is_empty());
    for rule in &added {
        assert!(
            rule.split_whitespace()
                .nth(2)
                .is_some_and(|t| t.starts_with("machineid_t:")),
            "{rule}"
        );
    }
    // The runtime may mount the volume (mounton only), which it may not
    // when no agent holds the class.
    let mounton = |policy: &Path| {
        libsepol_verdict(
            policy,
            &process("containerd_t"),
            &object("machineid_t"),
            "file",
            "mounton",
        )
    };
    assert_eq!(mounton(&policy), "allow");
    let (_default, default_policy) = built(None);
    assert_ne!(mounton(&default_policy), "allow");
}
