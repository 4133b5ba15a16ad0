//! The admission policy's CEL, run by an independent CEL engine
//! (cel-python, `.ci/admission-cel.py`), and the Gatekeeper template's
//! Rego, run by regorus (`.ci/admission-rego.py`), each refuse exactly the objects
//! `check --k8s` reports hostPath errors for, and admits the rest: over
//! the repository's Kubernetes corpus and over generated pod specs with
//! hostile paths (`..`, `//`, `/./`, trailing `/`, NUL, template braces,
//! names that look like symlinks, non-ASCII). A control shows the
//! comparison can fail: a policy made from a deliberately wrong judgement
//! is caught.

use std::fs;
use std::path::{Path, PathBuf};

use admission::{Action, Format, Judgement};
use k8s::HostPathRules;
use layout::diag::Severity;
use serde_json::{json, Value};

use crate::support::{data, venv_python};

/// The kinds admission judges.
fn judged(kind: &str) -> bool {
    k8s::PodKind::named(kind).is_some()
}

/// Whether `check --k8s` reports a hostPath error for `object`; `None`
/// when it cannot read it as an object at all (then the API server would
/// not either, and admission never sees it).
fn check_denies(object: &Value, rules: &HostPathRules) -> Option<bool> {
    let manifests = k8s::parse_str("object.json", &object.to_string());
    if !manifests.invalid.is_empty() || manifests.workloads.len() != 1 {
        return None;
    }
    Some(k8s::audit(&manifests, rules).iter().any(|finding| {
        finding.severity == Severity::Error && finding.rule.id.starts_with("k8s-hostpath-")
    }))
}

/// An engine that runs an emitted policy over objects.
#[derive(Clone, Copy, Debug)]
enum Engine {
    /// cel-python over the ValidatingAdmissionPolicy's CEL.
    Cel,
    /// regorus over the Gatekeeper template's Rego.
    Rego,
}

impl Engine {
    fn format(self) -> Format {
        match self {
            Engine::Cel => Format::Vap,
            Engine::Rego => Format::Gatekeeper,
        }
    }

    fn policy(self, judgement: &Judgement) -> String {
        admission::stream(&admission::render(judgement, self.format(), Action::Deny).unwrap())
    }
}

/// What the policy says about each object: refused (a violation or an
/// evaluation error, which `failurePolicy: Fail` refuses), with why.
fn verdicts(engine: Engine, policy_yaml: &str, objects: &[Value]) -> Vec<(bool, Vec<String>)> {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    let input = dir.path().join("objects.json");
    fs::write(&policy, policy_yaml).unwrap();
    fs::write(&input, serde_json::to_vec(objects).unwrap()).unwrap();
    let mut command = venv_python();
    match engine {
        Engine::Cel => command.arg(".ci/admission-cel.py").arg("evaluate"),
        Engine::Rego => command.arg(".ci/admission-rego.py"),
    };
    let output = command
        .arg(&policy)
        .arg(&input)
        .output()
        .expect("run .venv/bin/python3");
    assert!(
        output.status.success(),
        "the {engine:?} driver failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(results.len(), objects.len());
    results
        .iter()
        .map(|result| {
            let strings = |key: &str| -> Vec<String> {
                result[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect()
            };
            let violations = strings("violations");
            let errors: Vec<String> = strings("errors")
                .into_iter()
                .map(|e| format!("evaluation error: {e}"))
                .collect();
            (
                !violations.is_empty() || !errors.is_empty(),
                violations.into_iter().chain(errors).collect(),
            )
        })
        .collect()
}

/// The objects where the policy and `check` disagree, described.
fn disagreements(
    engine: Engine,
    policy_yaml: &str,
    rules: &HostPathRules,
    objects: &[Value],
) -> Vec<String> {
    let verdicts = verdicts(engine, policy_yaml, objects);
    let mut out = Vec::new();
    for (object, (cel, why)) in objects.iter().zip(verdicts) {
        let check = check_denies(object, rules).expect("only readable objects are compared");
        if cel != check {
            out.push(format!(
                "check {} but the policy {}: {why:?}\n  {object}",
                if check { "denies" } else { "admits" },
                if cel { "denies" } else { "admits" },
            ));
        }
    }
    out
}

fn default_judgement() -> (Judgement, HostPathRules) {
    let parsed = layout::manifest::default_layout(&policy::base_facts()).unwrap();
    (Judgement::of(&parsed), HostPathRules::of(&parsed))
}

/// Every judged object of every readable YAML file below `dir`, `List`s
/// expanded, in file order.
fn corpus_objects(dir: &Path, out: &mut Vec<(String, Value)>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            corpus_objects(&path, out);
            continue;
        }
        if !path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        // A file check cannot read is no object the API server would see.
        let Ok(documents) = serde_saphyr::from_multiple::<Value>(&text) else {
            continue;
        };
        let mut stack: Vec<Value> = documents.into_iter().rev().collect();
        while let Some(document) = stack.pop() {
            let kind = document["kind"].as_str().unwrap_or_default().to_owned();
            if kind == "List" || (kind.len() > 4 && kind.ends_with("List")) {
                if let Some(items) = document["items"].as_array() {
                    stack.extend(items.iter().rev().cloned());
                }
            } else if judged(&kind) {
                out.push((path.display().to_string(), document));
            }
        }
    }
}

#[test]
fn the_policy_denies_exactly_what_check_denies_on_the_corpus() {
    let (judgement, rules) = default_judgement();
    let mut named = Vec::new();
    corpus_objects(&data("k8s"), &mut named);
    let objects: Vec<Value> = named
        .iter()
        .filter(|(_, object)| check_denies(object, &rules).is_some())
        .map(|(_, object)| object.clone())
        .collect();
    let denied = objects
        .iter()
        .filter(|o| check_denies(o, &rules) == Some(true))
        .count();
    eprintln!(
        "{} corpus objects ({} unreadable skipped): check denies {denied}",
        objects.len(),
        named.len() - objects.len()
    );
    assert!(objects.len() >= 40 && denied >= 20 && objects.len() - denied >= 5);
    for engine in [Engine::Cel, Engine::Rego] {
        let wrong = disagreements(engine, &engine.policy(&judgement), &rules, &objects);
        assert!(wrong.is_empty(), "{engine:?}: {}", wrong.join("\n"));
    }
}

/// A small deterministic generator (xorshift), so a failure names its
/// seed; `types` are the `seLinuxOptions.type` values it writes: every
/// domain of the layout, and types it does not declare.
struct Gen {
    state: u64,
    types: Vec<String>,
}

impl Gen {
    fn new(seed: u64, rules: &HostPathRules) -> Gen {
        let mut types: Vec<String> = rules
            .domains
            .iter()
            .map(|d| d.selinux_type.clone())
            .collect();
        types.extend(["spc_t", "unconfined_t", ""].map(str::to_owned));
        Gen { state: seed, types }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// A hostPath as someone might write it, hostile more often than not.
    fn host_path(&mut self) -> String {
        let base = self.pick(&[
            "/var/mnt",
            "/var/mnt/data",
            "/var/mnt/data",
            // What agents mount: kubelet's plugin directories, host
            // classes (kernel filesystems, devices, sockets, CNI).
            "/var/lib/kubelet/plugins/csi.example.com",
            "/var/lib/kubelet/plugins_registry",
            "/var/lib/kubelet/device-plugins",
            "/var/lib/kubelet/pod-resources",
            "/var/lib/kubelet",
            "/var/lib/cni",
            "/var/log",
            "/sys",
            "/sys/fs/bpf",
            "/sys/fs/cgroup",
            "/sys/class/net",
            "/proc",
            "/proc/sys/net",
            "/dev",
            "/dev/nvme0n1",
            "/dev/sda1",
            "/dev/mapper",
            "/etc/cni/net.d",
            "/opt/cni/bin",
            "/lib/modules",
            "/run/xtables.lock",
            "/var/run/xtables.lock",
            "/var/mntx",
            "/var/lib/etcd",
            "/var/lib",
            "/var/lib/kubelet/pki",
            "/var/lib/kubelet/pods",
            "/var/log/pods",
            "/var/log/audit",
            "/var",
            "/",
            "/etc",
            "/run/containerd/containerd.sock",
            "var/mnt",
            "",
        ]);
        let mut path = String::new();
        for component in base.split('/').filter(|c| !c.is_empty()) {
            path.push_str(self.pick(&["/", "/", "/", "//", "/./"]));
            path.push_str(component);
        }
        if base.starts_with('/') && path.is_empty() {
            path.push('/');
        }
        if !base.starts_with('/') {
            path = base.to_owned();
        }
        for _ in 0..self.below(3) {
            path.push_str(self.pick(&["/", "//", "/./"]));
            path.push_str(self.pick(&[
                "x",
                ".",
                "..",
                "..data",
                ".hidden",
                "ü",
                "é/ø",
                "a b",
                "{{ .Values.dir }}",
                "link -> /etc",
                "current@",
                "\u{0}",
                "mnt",
                "etcd",
            ]));
        }
        if self.chance(20) {
            path.push('/');
        }
        path
    }

    /// `seLinuxOptions` as a pod or a container writes it: a type (of a
    /// domain or not), a level alone, or none.
    fn selinux_options(&mut self) -> Option<Value> {
        match self.below(8) {
            0..=3 => {
                let index = self.below(self.types.len());
                let selinux_type = self.types[index].clone();
                Some(json!({ "type": selinux_type }))
            }
            4 => Some(json!({ "level": "s0:c1,c2" })),
            5 => Some(json!({ "type": self.types[0].clone(), "level": "s0:c3,c4" })),
            _ => None,
        }
    }

    fn container(&mut self, name: String, volumes: &[String]) -> Value {
        let mut mounts = Vec::new();
        for volume in volumes {
            if !self.chance(60) {
                continue;
            }
            let mut mount = json!({ "name": volume, "mountPath": format!("/m/{volume}") });
            if self.chance(40) {
                mount["readOnly"] = json!(self.chance(50));
            }
            if self.chance(25) {
                mount["subPath"] =
                    json!(self.pick(&["", "a", "../x", "/abs", "a/./b", "x/..", "ü/{{x}}"]));
            }
            mounts.push(mount);
        }
        let mut container = json!({ "name": name, "image": "registry.example/app:1" });
        if !mounts.is_empty() {
            container["volumeMounts"] = json!(mounts);
        }
        let mut security = json!({});
        if self.chance(25) {
            security["privileged"] = json!(self.chance(60));
        }
        if let Some(options) = self.selinux_options() {
            security["seLinuxOptions"] = options;
        }
        if security != json!({}) {
            container["securityContext"] = security;
        }
        container
    }

    fn pod_spec(&mut self) -> Value {
        let mut volumes = Vec::new();
        let mut names = Vec::new();
        for i in 0..self.below(4) {
            let name = format!("v{i}");
            if self.chance(80) {
                let mut host_path = json!({ "path": self.host_path() });
                if self.chance(40) {
                    host_path["type"] = json!(self.pick(&[
                        "",
                        "Directory",
                        "DirectoryOrCreate",
                        "Socket",
                        "CharDevice",
                        "Bogus"
                    ]));
                }
                volumes.push(json!({ "name": name, "hostPath": host_path }));
            } else {
                volumes.push(json!({ "name": name, "emptyDir": {} }));
            }
            names.push(name);
        }
        let mut spec = json!({ "volumes": volumes });
        let containers: Vec<Value> = (0..1 + self.below(2))
            .map(|i| self.container(format!("c{i}"), &names))
            .collect();
        spec["containers"] = json!(containers);
        if self.chance(20) {
            spec["initContainers"] = json!([self.container("init".to_owned(), &names)]);
        }
        if let Some(options) = self.selinux_options() {
            spec["securityContext"] = json!({ "seLinuxOptions": options });
        }
        match self.below(8) {
            0 => spec["nodeSelector"] = json!({ "kubernetes.io/os": "windows" }),
            1 => spec["nodeSelector"] = json!({ "kubernetes.io/os": "linux", "disk": "ssd" }),
            2 => spec["nodeSelector"] = json!({ "beta.kubernetes.io/os": "windows" }),
            3 => {
                let requirement = match self.below(3) {
                    0 => {
                        json!({ "key": "kubernetes.io/os", "operator": "In", "values": ["windows"] })
                    }
                    1 => {
                        json!({ "key": "kubernetes.io/os", "operator": "NotIn", "values": ["linux"] })
                    }
                    _ => {
                        json!({ "key": "kubernetes.io/os", "operator": "In", "values": ["linux", "windows"] })
                    }
                };
                spec["affinity"] = json!({ "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{ "matchExpressions": [requirement] }]
                    }
                }});
            }
            _ => {}
        }
        spec
    }

    fn object(&mut self, index: usize) -> Value {
        let kind = self.pick(&[
            "Pod",
            "Pod",
            "Pod",
            "PodTemplate",
            "ReplicationController",
            "Deployment",
            "ReplicaSet",
            "StatefulSet",
            "DaemonSet",
            "Job",
            "CronJob",
            "PersistentVolume",
        ]);
        let metadata = json!({ "name": format!("g{index}"), "namespace": "gen" });
        let template =
            |spec: Value| json!({ "metadata": { "labels": { "app": "g" } }, "spec": spec });
        match kind {
            "Pod" => {
                json!({ "apiVersion": "v1", "kind": kind, "metadata": metadata, "spec": self.pod_spec() })
            }
            "PodTemplate" => {
                json!({ "apiVersion": "v1", "kind": kind, "metadata": metadata, "template": template(self.pod_spec()) })
            }
            "CronJob" => {
                json!({ "apiVersion": "batch/v1", "kind": kind, "metadata": metadata, "spec": {
                "schedule": "* * * * *", "jobTemplate": { "spec": { "template": template(self.pod_spec()) } } } })
            }
            "PersistentVolume" => {
                let mut host_path = json!({ "path": self.host_path() });
                if self.chance(30) {
                    host_path["type"] = json!(self.pick(&["Directory", "Bogus"]));
                }
                json!({ "apiVersion": "v1", "kind": kind, "metadata": { "name": format!("g{index}") },
                        "spec": { "capacity": { "storage": "1Gi" }, "hostPath": host_path } })
            }
            _ => json!({ "apiVersion": "apps/v1", "kind": kind, "metadata": metadata,
                         "spec": { "template": template(self.pod_spec()) } }),
        }
    }
}

fn generated(seed: u64, count: usize, rules: &HostPathRules) -> Vec<Value> {
    let mut generator = Gen::new(seed, rules);
    let objects: Vec<Value> = (0..count).map(|i| generator.object(i)).collect();
    let readable: Vec<Value> = objects
        .into_iter()
        .filter(|o| check_denies(o, rules).is_some())
        .collect();
    assert!(
        readable.len() * 10 >= count * 9,
        "check reads most generated objects ({} of {count})",
        readable.len()
    );
    readable
}

#[test]
fn the_policy_denies_exactly_what_check_denies_on_generated_pods() {
    let (judgement, rules) = default_judgement();
    let seed = 0x5e3a_41f0_2026_0001;
    let objects = generated(seed, 1200, &rules);
    let denied = objects
        .iter()
        .filter(|o| check_denies(o, &rules) == Some(true))
        .count();
    eprintln!(
        "{} generated objects (seed {seed:#x}): check denies {denied}",
        objects.len()
    );
    assert!(denied * 5 >= objects.len() && (objects.len() - denied) * 10 >= objects.len());
    for engine in [Engine::Cel, Engine::Rego] {
        let wrong = disagreements(engine, &engine.policy(&judgement), &rules, &objects);
        assert!(
            wrong.is_empty(),
            "{engine:?}, seed {seed:#x}:\n{}",
            wrong.join("\n")
        );
    }
}

/// The default layout accepting a third of the generated objects as
/// privileged in namespace `gen` and another third in `default` (where an
/// object without a namespace is matched).
fn judgement_with_exceptions(count: usize) -> (Judgement, HostPathRules) {
    let mut parsed = layout::manifest::default_layout(&policy::base_facts()).unwrap();
    for index in 0..count {
        let namespace = match index % 3 {
            0 => "gen",
            1 => "default",
            _ => continue,
        };
        parsed
            .layout
            .privileged_exceptions
            .push(layout::model::PrivilegedException {
                namespace: namespace.to_owned(),
                name: format!("g{index}"),
                reason: "a generated exception".to_owned(),
                pos: Default::default(),
            });
    }
    (Judgement::of(&parsed), HostPathRules::of(&parsed))
}

#[test]
fn privileged_exceptions_admit_exactly_what_check_accepts() {
    let count = 600;
    let (judgement, rules) = judgement_with_exceptions(count);
    let mut objects = generated(0x5e3a_41f0_2026_0003, count, &rules);
    // Every fifth object has no namespace: matched as `default`.
    for object in objects.iter_mut().step_by(5) {
        if let Some(metadata) = object["metadata"].as_object_mut() {
            metadata.remove("namespace");
        }
    }
    let (_, without) = default_judgement();
    let accepted = objects
        .iter()
        .filter(|o| {
            check_denies(o, &without) == Some(true) && check_denies(o, &rules) == Some(false)
        })
        .count();
    eprintln!(
        "{} generated objects: the exceptions turn {accepted} refusals into admissions",
        objects.len()
    );
    assert!(accepted > 0, "the exceptions must change some verdicts");
    for engine in [Engine::Cel, Engine::Rego] {
        let wrong = disagreements(engine, &engine.policy(&judgement), &rules, &objects);
        assert!(wrong.is_empty(), "{engine:?}:\n{}", wrong.join("\n"));
        // Control: the policy without the exceptions disagrees on those.
        let (strict, _) = default_judgement();
        let caught = disagreements(engine, &engine.policy(&strict), &rules, &objects);
        assert_eq!(caught.len(), accepted, "{engine:?}: {}", caught.join("\n"));
    }
}

#[test]
fn control_a_policy_with_a_wrong_rule_is_caught() {
    let (judgement, rules) = default_judgement();
    let objects = generated(0x5e3a_41f0_2026_0002, 300, &rules);
    // Forget a protected path: /var/lib/kubelet/pki is then an ordinary
    // path outside the roots... and /var/lib/etcd/x too; the policy would
    // still deny those as outside-root, so widen the roots as well, the way
    // a naive string-prefix rule would (`/var/mnt` admitting `/var/mntx`).
    let mut wrong = judgement.clone();
    wrong
        .rules
        .protected
        .retain(|p| p.path.to_string() != "/var/lib/etcd");
    let pod_type = wrong.rules.pod_type.clone();
    let pod = wrong
        .rules
        .domains
        .iter_mut()
        .find(|d| Some(&d.selinux_type) == pod_type.as_ref())
        .unwrap();
    pod.paths.push(k8s::PathGrant {
        path: k8s::NormalPath::parse("/var/lib").unwrap(),
        access: k8s::MountAccess::Write,
        host_path_root: true,
        declared_at: None,
    });
    // And the per-domain judgement: one that grants every agent what
    // the first grants (a policy that ignores the agent's own type).
    let mut one_agent = judgement.clone();
    let agents: Vec<usize> = (0..one_agent.rules.domains.len())
        .filter(|&i| one_agent.rules.domains[i].kind == k8s::DomainKind::Agent)
        .collect();
    assert!(agents.len() >= 2, "the default layout declares agents");
    let first = one_agent.rules.domains[agents[0]].clone();
    for &i in &agents[1..] {
        let domain = &mut one_agent.rules.domains[i];
        domain.paths.clone_from(&first.paths);
        domain.host_classes.clone_from(&first.host_classes);
    }
    for engine in [Engine::Cel, Engine::Rego] {
        for (what, policy) in [
            ("admits /var/lib/etcd and /var/lib/*", &wrong),
            ("grants every agent the first agent's paths", &one_agent),
        ] {
            let caught = disagreements(engine, &engine.policy(policy), &rules, &objects);
            assert!(
                !caught.is_empty(),
                "{engine:?}: a policy that {what} must disagree with check"
            );
            eprintln!(
                "{engine:?}: the policy that {what} disagrees on {} objects, e.g.\n{}",
                caught.len(),
                caught[0]
            );
        }
    }
}
