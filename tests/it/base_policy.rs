//! The base policy (`policy/*.cil`) checked with the real tools: secilc
//! compiles it, setools reads the binary back, and libsepol (through
//! python3-selinux's audit2why) evaluates the MCS constraint.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};

use crate::support::{run_ok, secilc, tool, CompiledPolicy};
use policy::base::BASE_POLICY;

/// A module shaped like the generated one: a protected file type granted to a
/// generated daemon domain, and a canary protected from every confined domain.
const TEST_MODULE: &str = r#"
(type etcd_t)
(typeattributeset domain (etcd_t))
(typeattributeset semanifest_process (etcd_t))

(type secret_t)
(typeattributeset file_type (secret_t))
(allow etcd_t secret_t (file (open read write getattr)))
(allow etcd_t secret_t (dir (open read search getattr)))
(typeattribute secret_t_denied)
(typeattributeset secret_t_denied (and domain (not (or semanifest_trusted etcd_t))))
(neverallow secret_t_denied secret_t semanifest_file_all)

(type canary_t)
(typeattributeset file_type (canary_t))
(typeattribute canary_t_denied)
(typeattributeset canary_t_denied (and domain (not semanifest_trusted)))
(neverallow canary_t_denied canary_t semanifest_file_all)
"#;

const CONFINED_DOMAINS: [&str; 4] = ["container_t", "containerd_t", "kubelet_t", "etcd_t"];

fn base_and_test_module() -> CompiledPolicy {
    compile_base_with(&[("90-test.cil", TEST_MODULE)])
}

fn sesearch(policy: &CompiledPolicy, args: &[&str]) -> String {
    run_ok(
        Command::new(tool("sesearch", "setools"))
            .args(args)
            .arg(policy.policy()),
    )
}

fn seinfo(policy: &std::path::Path, args: &[&str]) -> String {
    // The policy goes first: options such as --constrain take an optional
    // argument and would swallow a trailing path.
    run_ok(
        Command::new(tool("seinfo", "setools"))
            .arg(policy)
            .args(args),
    )
}

/// The embedded base policy followed by `extra` files.
fn base_with<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    BASE_POLICY
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .collect()
}

/// Compiles the base policy plus `extra`, failing the test on any error.
fn compile_base_with(extra: &[(&str, &str)]) -> CompiledPolicy {
    secilc(&base_with(extra))
        .unwrap_or_else(|errors| panic!("secilc rejected the policy:\n{errors}"))
}

#[test]
fn embedded_files_are_exactly_the_policy_directory_in_name_order() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policy");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("policy/ exists")
        .map(|entry| {
            entry
                .expect("readable entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".cil"))
        .collect();
    on_disk.sort();
    let embedded: Vec<&str> = BASE_POLICY.iter().map(|(name, _)| *name).collect();
    assert_eq!(embedded, on_disk);
}

#[test]
fn base_alone_compiles_and_labels_the_os() {
    let compiled = compile_base_with(&[]);
    let file_contexts =
        std::fs::read_to_string(compiled.file_contexts()).expect("file_contexts written");
    for line in [
        "/.*\tsystem_u:object_r:os_file_t:s0",
        "/dev/null\t-c\tsystem_u:object_r:null_device_t:s0",
        "/proc(/.*)?\t<<none>>",
    ] {
        assert!(
            file_contexts.lines().any(|l| l == line),
            "{line:?} missing in:\n{file_contexts}"
        );
    }
    let stats = seinfo(&compiled.policy(), &[]);
    assert!(stats.contains("(MLS enabled)"), "{stats}");
    assert!(
        stats.contains("Handle unknown classes:     deny"),
        "{stats}"
    );
}

#[test]
fn a_module_can_grant_a_protected_type_to_its_own_domain() {
    let compiled = base_and_test_module();
    let rules = sesearch(
        &compiled,
        &["-A", "-s", "etcd_t", "-t", "secret_t", "-c", "file"],
    );
    assert!(rules.contains("allow etcd_t secret_t:file"), "{rules}");
}

#[test]
fn granting_a_workload_a_protected_type_fails_on_the_neverallow() {
    let leak = "(allow container_t secret_t (file (read)))";
    let errors = secilc(&base_with(&[
        ("90-test.cil", TEST_MODULE),
        ("91-leak.cil", leak),
    ]))
    .err()
    .expect("secilc must reject a workload rule on a protected type");
    assert!(errors.contains("neverallow"), "{errors}");
    assert!(errors.contains("container_t"), "{errors}");
}

#[test]
fn a_file_type_wide_rule_for_a_confined_domain_would_be_caught() {
    // The shape of leak the base must never contain; proves the canary bites.
    let leak = "(allow semanifest_process file_type (file (getattr)))";
    let errors = secilc(&base_with(&[
        ("90-test.cil", TEST_MODULE),
        ("91-leak.cil", leak),
    ]))
    .err()
    .expect("secilc must reject a file_type-wide rule for confined domains");
    assert!(errors.contains("neverallow"), "{errors}");
}

#[test]
fn confined_domains_have_no_rule_on_file_type_or_module_types() {
    let compiled = base_and_test_module();
    for domain in CONFINED_DOMAINS {
        let rules = sesearch(&compiled, &["-A", "-s", domain]);
        assert!(!rules.trim().is_empty(), "{domain} has no rules at all");
        for rule in rules.lines() {
            let target = rule.split_whitespace().nth(2).unwrap_or_default();
            let target_type = target.split(':').next().unwrap_or_default();
            assert!(
                !matches!(
                    target_type,
                    "file_type" | "semanifest_any_type" | "fs_type" | "domain"
                ) || target.ends_with(":filesystem"),
                "{domain} reaches a type-wide target: {rule}"
            );
        }
        // sesearch -t also matches rules whose target is an attribute holding the type.
        let on_canary = sesearch(&compiled, &["-A", "-s", domain, "-t", "canary_t"]);
        let file_rules: Vec<&str> = on_canary
            .lines()
            .filter(|l| !l.contains(":filesystem "))
            .collect();
        assert!(
            file_rules.is_empty(),
            "{domain} reaches a module type: {file_rules:?}"
        );
    }
    // Control: the same query sees the trusted domains' blanket rule.
    let trusted = sesearch(
        &compiled,
        &["-A", "-s", "init_t", "-t", "canary_t", "-c", "file"],
    );
    assert!(trusted.contains("semanifest_any_type:file"), "{trusted}");
}

/// `seinfo -x` listing of classes or commons: name -> (inherited common, own perms).
fn parse_seinfo_classes(
    listing: &str,
    keyword: &str,
) -> BTreeMap<String, (Option<String>, BTreeSet<String>)> {
    let mut entries: BTreeMap<String, (Option<String>, BTreeSet<String>)> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in listing.lines().map(str::trim) {
        if let Some(name) = line
            .strip_prefix(keyword)
            .and_then(|rest| rest.strip_prefix(' '))
        {
            current = Some(name.to_owned());
            entries.insert(name.to_owned(), (None, BTreeSet::new()));
        } else if let (Some(name), Some(common)) = (&current, line.strip_prefix("inherits ")) {
            entries.get_mut(name).expect("current entry").0 = Some(common.to_owned());
        } else if let Some(name) = &current {
            if !line.is_empty() && line != "{" && line != "}" {
                entries
                    .get_mut(name)
                    .expect("current entry")
                    .1
                    .insert(line.to_owned());
            }
        }
    }
    entries
}

/// Class -> full permission set, from `seinfo -x` on a binary policy.
fn classes_in_binary(policy: &std::path::Path) -> BTreeMap<String, BTreeSet<String>> {
    let commons = parse_seinfo_classes(&seinfo(policy, &["--common", "-x"]), "common");
    parse_seinfo_classes(&seinfo(policy, &["-c", "-x"]), "class")
        .into_iter()
        .map(|(class, (common, mut perms))| {
            if let Some(common) = common {
                perms.extend(commons[&common].1.iter().cloned());
            }
            (class, perms)
        })
        .collect()
}

/// Class -> full permission set, read from the CIL text of 00-classes.cil.
fn classes_in_cil() -> BTreeMap<String, BTreeSet<String>> {
    let (_, cil) = BASE_POLICY[0];
    let mut commons = BTreeMap::new();
    let mut classes = BTreeMap::new();
    for line in cil.lines() {
        let words = |rest: &str| -> (String, BTreeSet<String>) {
            let (name, perms) = rest.split_once(' ').expect("name and permissions");
            let perms = perms.trim_start_matches('(').trim_end_matches(')');
            (
                name.to_owned(),
                perms.split_whitespace().map(str::to_owned).collect(),
            )
        };
        if let Some(rest) = line.strip_prefix("(common ") {
            let (name, perms) = words(rest);
            commons.insert(name, perms);
        } else if let Some(rest) = line.strip_prefix("(class ") {
            let (name, perms) = words(rest);
            classes.insert(name, perms);
        } else if let Some(rest) = line.strip_prefix("(classcommon ") {
            let (class, common) = rest
                .trim_end_matches(')')
                .split_once(' ')
                .expect("class and common");
            let inherited = commons[common].clone();
            classes
                .get_mut(class)
                .expect("class declared before classcommon")
                .extend(inherited);
        }
    }
    classes
}

/// Class -> permissions, from the committed policy/classes.txt.
fn classes_in_list() -> BTreeMap<String, BTreeSet<String>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policy/classes.txt");
    std::fs::read_to_string(path)
        .expect("policy/classes.txt is committed")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let mut words = line.split_whitespace().map(str::to_owned);
            let class = words.next().expect("class name");
            (class, words.collect())
        })
        .collect()
}

#[test]
fn binary_policy_has_exactly_the_kernel_and_systemd_classes_and_permissions() {
    let compiled = compile_base_with(&[]);
    let binary = classes_in_binary(&compiled.policy());
    let from_cil = classes_in_cil();
    let listed = classes_in_list();
    assert_eq!(
        listed.len(),
        98,
        "Linux 6.1 defines 97 classes, systemd checks one more (service)"
    );
    assert_eq!(binary, from_cil);
    assert_eq!(binary, listed);
    // What systemd asks for a unit and for the manager: without them every
    // systemctl call is refused under handleunknown deny.
    for perm in ["start", "stop", "status", "reload", "enable", "disable"] {
        assert!(binary["service"].contains(perm), "service {perm}");
        assert!(binary["system"].contains(perm), "system {perm}");
    }
    assert!(binary["system"].contains("reboot") && binary["system"].contains("halt"));
}

#[test]
fn initial_sids_in_use_have_contexts_and_keep_their_slots() {
    let (_, cil) = BASE_POLICY[0];
    let declared: Vec<&str> = cil
        .lines()
        .filter_map(|line| line.strip_prefix("(sid "))
        .map(|rest| rest.split(')').next().unwrap_or_default())
        .collect();
    assert_eq!(declared.len(), 27, "Linux 6.1 numbers 27 initial SID slots");
    assert_eq!(declared.first(), Some(&"kernel"));
    assert_eq!(declared.last(), Some(&"devnull"));
    let in_use: BTreeSet<&str> = cil
        .lines()
        .filter(|line| line.starts_with("(sid ") && !line.contains("unused"))
        .map(|line| line["(sid ".len()..].split(')').next().unwrap_or_default())
        .collect();

    let compiled = compile_base_with(&[]);
    let listing = seinfo(&compiled.policy(), &["--initialsid", "-x"]);
    let contexts: BTreeMap<&str, &str> = listing
        .lines()
        .filter_map(|line| line.trim().strip_prefix("sid "))
        .filter_map(|rest| rest.split_once(' '))
        .collect();
    assert_eq!(contexts.keys().copied().collect::<BTreeSet<_>>(), in_use);
    assert_eq!(
        contexts["kernel"],
        "system_u:system_r:kernel_t:s0 - s0:c0.c1023"
    );
    assert_eq!(contexts["devnull"], "system_u:object_r:null_device_t:s0");
    assert_eq!(contexts["file"], "system_u:object_r:file_t:s0");
    assert_eq!(contexts["security"], "system_u:object_r:security_t:s0");
}

#[test]
fn mcs_constraint_covers_every_file_class_for_workloads() {
    let compiled = compile_base_with(&[]);
    let constraints = seinfo(&compiled.policy(), &["--constrain"]);
    for class in [
        "dir",
        "file",
        "lnk_file",
        "chr_file",
        "blk_file",
        "sock_file",
        "fifo_file",
    ] {
        let found = constraints.lines().any(|line| {
            line.trim_start()
                .starts_with(&format!("mlsconstrain {class} {{"))
                && line.contains("read")
                && line.contains("write")
                && line.contains("(t1 != semanifest_workload or ( h1 dom h2 ))")
        });
        assert!(
            found,
            "no workload MCS constraint on {class}:\n{constraints}"
        );
    }
}

/// Asks libsepol (python3-selinux's audit2why) whether `source` may use
/// `perm` on `target`; returns its verdict name.
fn libsepol_verdict(
    compiled: &CompiledPolicy,
    source: &str,
    target: &str,
    class: &str,
    perm: &str,
) -> String {
    // Debian's python3-selinux installs for the system interpreter only.
    let python = std::path::Path::new("/usr/bin/python3");
    assert!(
        python.is_file(),
        "/usr/bin/python3 missing: apt-get install python3-selinux"
    );
    let script = r#"
import sys
try:
    import selinux.audit2why as a
except ImportError:
    sys.exit("python3-selinux is missing: apt-get install python3-selinux")
policy, source, target, tclass, perm = sys.argv[1:]
a.init(policy)
rc, _ = a.analyze(source, target, tclass, [perm])
names = {a.ALLOW: "allow", a.CONSTRAINT: "constraint", a.TERULE: "terule", a.BOOLEAN: "boolean", a.BADTCON: "badtcon", a.BADSCON: "badscon"}
print(names.get(rc, rc))
"#;
    let policy = compiled.policy();
    let mut command = Command::new(python);
    command
        .args(["-c", script])
        .arg(&policy)
        .args([source, target, class, perm])
        .stdin(Stdio::null());
    run_ok(&mut command).trim().to_owned()
}

#[test]
fn mcs_keeps_pods_apart_and_leaves_the_system_alone() {
    let compiled = compile_base_with(&[]);
    let pod = "system_u:system_r:container_t:s0:c1,c2";
    let own = "system_u:object_r:container_file_t:s0:c1,c2";
    let other = "system_u:object_r:container_file_t:s0:c3,c4";
    let shared = "system_u:object_r:container_file_t:s0";
    let cases = [
        (pod, own, "file", "read", "allow"),
        (pod, own, "file", "write", "allow"),
        (pod, shared, "file", "read", "allow"),
        (pod, other, "file", "read", "constraint"),
        (pod, other, "file", "write", "constraint"),
        (pod, other, "dir", "search", "constraint"),
        (pod, other, "file", "getattr", "constraint"),
        // Type enforcement still applies below the constraint: the control
        // that shows the oracle can deny for another reason.
        (
            pod,
            "system_u:object_r:os_file_t:s0",
            "file",
            "write",
            "terule",
        ),
        // Processes: another pod's, same type.
        (
            pod,
            "system_u:system_r:container_t:s0:c3,c4",
            "process",
            "signal",
            "constraint",
        ),
        (pod, pod, "process", "signal", "allow"),
        // Non-workload domains are not constrained.
        (
            "system_u:system_r:containerd_t:s0",
            other,
            "file",
            "read",
            "allow",
        ),
        (
            "system_u:system_r:init_t:s0",
            other,
            "file",
            "write",
            "allow",
        ),
    ];
    let mut wrong = Vec::new();
    for (source, target, class, perm, expected) in cases {
        let verdict = libsepol_verdict(&compiled, source, target, class, perm);
        if verdict != expected {
            wrong.push(format!(
                "{source} -> {target} {class} {perm}: {verdict}, expected {expected}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// systemd loads the policy as kernel_t, asks which label its executable
/// gives a process and switches to it: the answer must be init_t. And
/// systemd's own checks (class service for a unit, system for the
/// manager) must find their permissions: the trusted init_t holds them,
/// confined domains do not.
#[test]
fn systemd_becomes_init_t_and_its_unit_checks_are_decided_by_the_policy() {
    let compiled = compile_base_with(&[]);
    assert_eq!(
        sesearch(
            &compiled,
            &["-T", "-s", "kernel_t", "-t", "init_exec_t", "-c", "process"]
        )
        .trim(),
        "type_transition kernel_t init_exec_t:process init_t;"
    );
    let file_contexts =
        std::fs::read_to_string(compiled.file_contexts()).expect("file_contexts written");
    for line in [
        "/usr/lib/systemd/systemd\t--\tsystem_u:object_r:init_exec_t:s0",
        "/lib/systemd/systemd\t--\tsystem_u:object_r:init_exec_t:s0",
    ] {
        assert!(file_contexts.lines().any(|l| l == line), "{line:?} missing");
    }
    for (source, target, class, perm, verdict) in [
        ("kernel_t", "init_t", "process", "transition", "allow"),
        ("init_t", "init_exec_t", "file", "entrypoint", "allow"),
        ("init_t", "os_file_t", "service", "start", "allow"),
        ("init_t", "init_t", "system", "reload", "allow"),
        ("init_t", "init_t", "system", "status", "allow"),
        // Controls: a confined domain neither runs the init program nor
        // manages units.
        ("kubelet_t", "init_exec_t", "file", "execute", "terule"),
        ("kubelet_t", "os_file_t", "service", "stop", "terule"),
        ("container_t", "init_t", "system", "reboot", "terule"),
    ] {
        // Processes are system_r, files object_r.
        let role = if class == "process" || class == "system" {
            "system_r"
        } else {
            "object_r"
        };
        assert_eq!(
            libsepol_verdict(
                &compiled,
                &format!("system_u:system_r:{source}:s0"),
                &format!("system_u:{role}:{target}:s0"),
                class,
                perm
            ),
            verdict,
            "{source} {target}:{class} {perm}"
        );
    }
}

/// A tmpfs mounted with `context=TYPE` labels the filesystem itself TYPE,
/// and the kernel checks every file made on it with `associate` from TYPE
/// to TYPE: the module allows exactly that for the layout's tmpfs types.
#[test]
fn a_tmpfs_mount_type_may_associate_with_itself_and_no_other_type_gains_it() {
    let module = include_str!("../data/golden/structured-var/structured_var.cil");
    let compiled = compile_base_with(&[("90-structured_var.cil", module)]);
    let var_run = "system_u:object_r:var_run_t:s0";
    let var_log = "system_u:object_r:var_log_t:s0";
    assert_eq!(
        libsepol_verdict(&compiled, var_run, var_run, "filesystem", "associate"),
        "allow"
    );
    // Control: a type that is not mounted as a tmpfs is no filesystem type.
    assert_eq!(
        libsepol_verdict(&compiled, var_log, var_log, "filesystem", "associate"),
        "terule"
    );
    assert_eq!(
        sesearch(
            &compiled,
            &[
                "-A",
                "-c",
                "filesystem",
                "-p",
                "associate",
                "-t",
                "var_run_t",
                "-dt"
            ]
        )
        .trim(),
        "allow var_run_t var_run_t:filesystem associate;"
    );
}
