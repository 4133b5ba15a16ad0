//! hostPath findings: every hostPath volume of every workload, judged for
//! the domain each container runs in by the rules of
//! [`judgement`](super::judgement) ([`HostPathRules`]).
//!
//! Every finding points at the volume's `path:` value (the line a reviewer
//! changes); the value that triggered it (a `privileged: true`, an
//! `seLinuxOptions.type`, a `type: Socket`) and the layout declaration it
//! conflicts with are attached as related locations.

use super::judgement::{DomainChoice, DomainKind, DomainRules, HostPathRules, Verdict};
use super::path::NormalPath;
use super::workload::{
    HostPathMount, HostPathVolume, InvalidDocument, Manifests, PatchKind, PathOrigin, Sourced,
    Workload,
};
use layout::diag::{rule, Finding, Location, Pos, Related, Rule, Severity};

rule!(
    RULE_INVALID_PATH,
    "k8s-hostpath-invalid",
    "HostPathInvalid",
    Error,
    "A hostPath volume's path or type is not valid.",
    "The API server rejects `..` in a hostPath and unknown types; a path that cannot be normalised cannot be checked against the layout."
);

rule!(
    RULE_OUTSIDE_ROOT,
    "k8s-hostpath-outside-root",
    "HostPathOutsideRoot",
    Error,
    "A pod's hostPath volume lies outside every `hostPath: true` root of the layout.",
    "Only the layout's hostPath roots are labelled for workloads; elsewhere the pod either fails with denials or shares data the layout never meant to share."
);

rule!(
    RULE_PROTECTED,
    "k8s-hostpath-protected",
    "HostPathProtected",
    Error,
    "A hostPath volume is a protected path, lies inside one, or contains one.",
    "Protected data (etcd, kubelet PKI, audit logs) is guarded by a neverallow alone once a pod mounts it or any directory above it."
);

rule!(
    RULE_PRIVILEGED,
    "k8s-hostpath-privileged",
    "HostPathPrivileged",
    Error,
    "A privileged container mounts a hostPath volume.",
    "A privileged container runs unconfined (spc_t on SELinux hosts), so SELinux will not stop it from reading or writing anything its hostPath reaches."
);

rule!(
    RULE_SELINUX_TYPE,
    "k8s-hostpath-selinux-type",
    "HostPathSelinuxType",
    Error,
    "A container mounting a hostPath volume runs with an SELinux type that is no workload or agent domain of the layout.",
    "The layout confines hostPath pods and node agents through their domain's type; a container that picks another type (e.g. spc_t) leaves those rules, so SELinux will not stop it."
);

rule!(
    RULE_NOT_GRANTED,
    "k8s-hostpath-not-granted",
    "HostPathNotGranted",
    Error,
    "An agent's hostPath volume is neither a layout path nor a host class its domain holds.",
    "An agent domain reaches only the paths and host classes the layout grants it; anywhere else the agent fails with denials, or needs a grant the layout should name and review."
);

rule!(
    RULE_PRIVILEGED_ACCEPTED,
    "k8s-privileged-accepted",
    "PrivilegedAccepted",
    Note,
    "A privileged container mounting hostPath volumes is one the layout accepts (`privilegedExceptions`).",
    "The layout names the workload and why it must run unconfined; its protected paths are still errors."
);

rule!(
    RULE_WRITABLE_READ_ONLY,
    "k8s-hostpath-writable-read-only",
    "HostPathWritableReadOnly",
    Warning,
    "A container mounts, writable, a hostPath that the layout lets workloads only read.",
    "Writes there are denied by the policy at run time; mount it `readOnly: true` so the manifest says what the node enforces."
);

rule!(
    RULE_SOCKET_OR_DEVICE,
    "k8s-hostpath-socket-or-device",
    "HostPathSocketOrDevice",
    Warning,
    "A hostPath volume is a socket or a device node.",
    "A socket hands the pod a host daemon's authority and a device node raw hardware; file labels cannot see what happens past them."
);

rule!(
    RULE_SKIPPED,
    "k8s-skipped-object",
    "KubernetesSkippedObject",
    Note,
    "An object is not a workload kind and was not checked.",
    "Only Pods, objects with pod templates (Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob, PodTemplate) and PersistentVolumes can give a pod a hostPath; a kustomize patch is not an object until kustomize applies it."
);

rule!(
    RULE_SKIPPED_NON_LINUX,
    "k8s-skipped-non-linux",
    "KubernetesSkippedNonLinux",
    Note,
    "A workload pins an operating system other than Linux and was not checked.",
    "A pod whose nodeSelector or required node affinity pins `kubernetes.io/os` to another system (e.g. windows) never runs on a Linux node; its host paths are not this layout's."
);

rule!(
    RULE_INVALID_YAML,
    "k8s-invalid-yaml",
    "KubernetesInvalidYaml",
    Error,
    "A Kubernetes input document is not YAML.",
    "A document that cannot be parsed cannot be checked, and kubectl would refuse it; the other documents of the file are still checked."
);

rule!(
    RULE_INVALID_OBJECT,
    "k8s-invalid-object",
    "KubernetesInvalidObject",
    Error,
    "A YAML document is not a valid Kubernetes object.",
    "A value of the wrong shape, a duplicate key or a boolean spelled yes/no/on/off is read differently by different tools or refused by the API server; the document is not checked, the others are."
);

rule!(
    RULE_SKIPPED_FILE,
    "k8s-skipped-file",
    "KubernetesSkippedFile",
    Note,
    "An entry of a --k8s directory was not read.",
    "Directories are read like `kubectl apply -R -f DIR`: files ending in .yaml, .yml or .json; a manifest under another name is not checked (and not applied by kubectl either)."
);

/// Every rule this module can report, for documentation and SARIF.
pub static RULES: [&Rule; 14] = [
    &RULE_INVALID_PATH,
    &RULE_OUTSIDE_ROOT,
    &RULE_NOT_GRANTED,
    &RULE_PROTECTED,
    &RULE_PRIVILEGED,
    &RULE_PRIVILEGED_ACCEPTED,
    &RULE_SELINUX_TYPE,
    &RULE_WRITABLE_READ_ONLY,
    &RULE_SOCKET_OR_DEVICE,
    &RULE_SKIPPED,
    &RULE_SKIPPED_NON_LINUX,
    &RULE_INVALID_YAML,
    &RULE_INVALID_OBJECT,
    &RULE_SKIPPED_FILE,
];

/// hostPath types the API server accepts (`""` is "no check").
pub const VALID_HOST_PATH_TYPES: [&str; 8] = [
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
];

/// Checks every hostPath volume of `manifests` against `rules`; reports
/// every document that could not be read, and notes every object, workload
/// and directory entry that was not checked. Findings come in input order
/// within each of those groups: file by file, object by object, volume by
/// volume.
pub fn audit(manifests: &Manifests, rules: &HostPathRules) -> Vec<Finding> {
    let mut findings: Vec<Finding> = manifests
        .workloads
        .iter()
        .flat_map(|workload| audit_workload(workload, rules))
        .collect();
    for skipped in &manifests.skipped {
        let (message, position) = match (&skipped.patch, &skipped.kind) {
            (Some(PatchKind::JsonPatch), _) => (
                "skipped a kustomize patch file (a sequence of JSON patch operations): \
                 check the output of `kubectl kustomize` instead"
                    .to_owned(),
                skipped.position,
            ),
            (Some(PatchKind::StrategicMerge), _) => (
                "skipped a kustomize strategic merge patch (`$patch`): check the output of \
                 `kubectl kustomize` instead"
                    .to_owned(),
                skipped.position,
            ),
            (None, Some(kind)) => (
                format!("skipped kind `{}`: not a workload kind", kind.value),
                kind.position,
            ),
            (None, None) => (
                "skipped a document without `kind`: not a Kubernetes object".to_owned(),
                skipped.position,
            ),
        };
        findings.push(Finding {
            rule: &RULE_SKIPPED,
            severity: Severity::Note,
            message,
            location: Some(skipped.source.location(position)),
            snippet: skipped.source.line(position.line).map(str::to_owned),
            related: Vec::new(),
        });
    }
    findings.extend(manifests.invalid.iter().map(invalid_document));
    findings.extend(manifests.skipped_files.iter().map(|file| Finding {
        rule: &RULE_SKIPPED_FILE,
        severity: Severity::Note,
        message: format!("skipped {}: {}", file.path, file.reason.describe()),
        location: None,
        snippet: None,
        related: Vec::new(),
    }));
    findings
}

/// One workload's findings, as [`audit`] reports them.
pub fn audit_workload(workload: &Workload, rules: &HostPathRules) -> Vec<Finding> {
    let mut findings = Vec::new();
    if let Some(os) = &workload.pinned_os {
        findings.push(non_linux(workload, os));
        return findings;
    }
    for volume in &workload.host_path_volumes {
        audit_volume(workload, volume, rules, &mut findings);
    }
    audit_containers(workload, rules, &mut findings);
    findings
}

/// A document that could not be read, at the parser's position, with its
/// source line.
pub fn invalid_document(document: &InvalidDocument) -> Finding {
    let rule = if document.is_yaml() {
        &RULE_INVALID_OBJECT
    } else {
        &RULE_INVALID_YAML
    };
    let location = document.location();
    Finding {
        rule,
        severity: rule.default_severity,
        message: document.description(),
        snippet: document.source.line(location.pos.line).map(str::to_owned),
        location: Some(location),
        related: Vec::new(),
    }
}

fn non_linux(workload: &Workload, os: &Sourced<String>) -> Finding {
    let volumes = workload.host_path_volumes.len();
    Finding {
        rule: &RULE_SKIPPED_NON_LINUX,
        severity: Severity::Note,
        message: format!(
            "skipped {}: its pod spec pins kubernetes.io/os to {}, so it never runs on a Linux node; \
             {volumes} hostPath volume{} not checked",
            workload.display_name(),
            os.value,
            if volumes == 1 { "" } else { "s" }
        ),
        location: Some(workload.source.location(os.position)),
        snippet: workload.source.line(os.position.line).map(str::to_owned),
        related: Vec::new(),
    }
}

/// Builds findings about one volume: at its `path:` value, or at a value
/// of one of its mounts.
struct VolumeReporter<'a> {
    workload: &'a Workload,
    volume: &'a HostPathVolume,
}

impl VolumeReporter<'_> {
    /// A finding at the volume's `path:` value.
    fn finding(&self, rule: &'static Rule, message: String, mut related: Vec<Related>) -> Finding {
        match self.volume.path_origin {
            Some(PathOrigin::Anchor(anchor)) => related.push(Related {
                location: self.workload.source.location(anchor),
                message: "the path is an alias; its value is written here".to_owned(),
            }),
            Some(PathOrigin::Merged(site)) => related.push(Related {
                location: self.workload.source.location(site),
                message: "the volume takes this path through a merge key or an alias here"
                    .to_owned(),
            }),
            None => {}
        }
        self.finding_at(rule, self.volume.path.position, message, related)
    }

    /// A finding at `position` of the workload's file.
    fn finding_at(
        &self,
        rule: &'static Rule,
        position: Pos,
        message: String,
        related: Vec<Related>,
    ) -> Finding {
        workload_finding(
            self.workload,
            rule,
            position,
            format!("hostPath volume `{}`: {message}", self.volume.name),
            related,
        )
    }

    fn related<T>(&self, value: &Sourced<T>, message: String) -> Related {
        Related {
            location: self.workload.source.location(value.position),
            message,
        }
    }
}

/// A finding about `workload` at `position`, its message prefixed with
/// the workload's name.
fn workload_finding(
    workload: &Workload,
    rule: &'static Rule,
    position: Pos,
    message: String,
    related: Vec<Related>,
) -> Finding {
    Finding {
        rule,
        severity: rule.default_severity,
        message: format!("{}: {message}", workload.display_name()),
        location: Some(workload.source.location(position)),
        snippet: workload.source.line(position.line).map(str::to_owned),
        related,
    }
}

fn declared(location: &Option<Location>, message: String) -> Option<Related> {
    location.as_ref().map(|location| Related {
        location: location.clone(),
        message,
    })
}

/// What a hostPath volume of `type: Socket`, `CharDevice` or `BlockDevice`
/// is, for messages.
pub(crate) fn special_file(volume: &HostPathVolume) -> Option<&'static str> {
    match volume.path_type.as_ref()?.value.as_str() {
        "Socket" => Some("a socket"),
        "CharDevice" => Some("a character device"),
        "BlockDevice" => Some("a block device"),
        _ => None,
    }
}

/// Host paths no layout root can hold, by what they are: the advice for
/// them is an agent domain, not another root.
fn host_path_advice(path: &NormalPath) -> Option<&'static str> {
    let under = |prefix: &str| {
        NormalPath::parse(prefix)
            .map(|prefix| prefix.contains(path))
            .unwrap_or(false)
    };
    let runtime = [
        "/run/containerd",
        "/var/run/containerd",
        "/run/crio",
        "/var/run/crio",
        "/run/docker.sock",
        "/var/run/docker.sock",
        "/run/cri-dockerd.sock",
        "/var/run/cri-dockerd.sock",
    ];
    let kubelet_plugins = [
        "/var/lib/kubelet/plugins",
        "/var/lib/kubelet/plugins_registry",
        "/var/lib/kubelet/device-plugins",
        "/var/lib/kubelet/pods",
        "/var/lib/kubelet/pod-resources",
    ];
    if ["/proc", "/sys", "/dev"].into_iter().any(under) {
        Some(
            "a kernel filesystem or device is no pod's to mount; a node agent needs an agent \
             domain holding the host class that covers it (`semanifest suggest` writes one)",
        )
    } else if runtime.into_iter().any(under) {
        Some(
            "the container runtime's socket holds the runtime's authority; only an agent \
             domain holding the container-runtime host class may reach it (`semanifest suggest` writes one)",
        )
    } else if kubelet_plugins.into_iter().any(under) {
        Some(
            "a kubelet plugin directory belongs to CSI node plugins and device plugins; give the \
             workload an agent domain granted it (`semanifest suggest` writes one)",
        )
    } else if ["/etc/cni", "/opt/cni", "/lib/modules", "/usr/lib/modules"]
        .into_iter()
        .any(under)
    {
        Some(
            "CNI files and kernel modules are host classes of agent domains; give the workload \
             one (`semanifest suggest` writes one)",
        )
    } else if under("/etc/machine-id") {
        Some(
            "the machine ID is the machine-id host class (read-only) of agent domains; give the \
             workload one holding it (`semanifest suggest` writes one)",
        )
    } else {
        None
    }
}

/// The domains that judge a volume: the domain of each container that
/// mounts it (once per domain, in order of appearance, with its mounts),
/// or the pod domain for a volume no container mounts (a
/// PersistentVolume's). `None` stands for "no pod domain": nothing is
/// granted. Containers with a type that is no domain of the layout, and
/// privileged containers the layout accepts, judge nothing here.
type Judges<'a, 'w> = Vec<(Option<&'a DomainRules>, Vec<&'w HostPathMount>)>;

fn judges<'a, 'w>(
    workload: &Workload,
    volume: &'w HostPathVolume,
    rules: &'a HostPathRules,
) -> Judges<'a, 'w> {
    let mut judges: Judges<'a, 'w> = Vec::new();
    if volume.mounts.is_empty() {
        if let Some(judge) = judge_of(rules.domain_for(None)) {
            judges.push((judge, Vec::new()));
        }
        return judges;
    }
    for mount in &volume.mounts {
        if accepted_privileged(workload, mount, rules) {
            continue;
        }
        let selinux_type = mount.selinux_type.as_ref().map(|t| t.value.as_str());
        let Some(judge) = judge_of(rules.domain_for(selinux_type)) else {
            continue;
        };
        match judges.iter_mut().find(|(d, _)| *d == judge) {
            Some((_, mounts)) => mounts.push(mount),
            None => judges.push((judge, vec![mount])),
        }
    }
    judges
}

/// `Some(None)`: judged by nobody's grants (no pod domain); `None`: not
/// judged here (an undeclared type, reported on its own).
fn judge_of(choice: DomainChoice<'_>) -> Option<Option<&DomainRules>> {
    match choice {
        DomainChoice::Domain(domain) => Some(Some(domain)),
        DomainChoice::NoPodDomain => Some(None),
        DomainChoice::Undeclared => None,
    }
}

fn accepted_privileged(workload: &Workload, mount: &HostPathMount, rules: &HostPathRules) -> bool {
    mount.privileged.as_ref().is_some_and(|p| p.value)
        && rules
            .privileged_exception(workload.namespace.as_deref(), workload.name.as_deref())
            .is_some()
}

/// The protected finding of a path, if it touches protected data: the one
/// error no grant can fix.
fn protected_finding(
    report: &VolumeReporter<'_>,
    path: &NormalPath,
    special: &str,
    rules: &HostPathRules,
) -> Option<Finding> {
    let protection = rules.protection(path)?;
    let advice = host_path_advice(path);
    let list = |paths: &[&super::judgement::ProtectedPath]| {
        paths
            .iter()
            .map(|p| p.path.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if let Some(equal) = protection.equal {
        parts.push(format!("is protected path {}", equal.path));
    }
    if !protection.inside.is_empty() {
        parts.push(format!(
            "lies inside protected path(s) {}",
            list(&protection.inside)
        ));
    }
    if !protection.below.is_empty() {
        parts.push(format!(
            "exposes protected path(s) below it: {}",
            list(&protection.below)
        ));
    }
    // In layout order.
    let related = rules
        .protected
        .iter()
        .filter(|p| {
            protection.equal == Some(*p)
                || protection.inside.contains(p)
                || protection.below.contains(p)
        })
        .filter_map(|p| {
            declared(
                &p.declared_at,
                format!("protected path {} declared here", p.path),
            )
        })
        .collect();
    let only_above = protection.equal.is_none() && protection.inside.is_empty();
    let remedy = match advice {
        Some(advice) if only_above => {
            format!("; mount the directory it needs, not an ancestor: {advice}")
        }
        Some(advice) => format!("; {advice}"),
        None if only_above => "; mount the directory it needs, not an ancestor".to_owned(),
        None => "; no domain is ever granted it".to_owned(),
    };
    Some(report.finding(
        &RULE_PROTECTED,
        format!("`{path}`{special} {}{remedy}", parts.join("; ")),
        related,
    ))
}

/// The one finding at a volume's path when some domain judging it does not
/// grant it: the first such domain's rule, every such domain named.
fn grant_finding(
    report: &VolumeReporter<'_>,
    path: &NormalPath,
    special: &str,
    rules: &HostPathRules,
    judges: &Judges<'_, '_>,
) -> Option<Finding> {
    let failing: Vec<&(Option<&DomainRules>, Vec<&HostPathMount>)> = judges
        .iter()
        .filter(|(domain, _)| domain.is_none_or(|d| d.judge(path) == Verdict::NotGranted))
        .collect();
    let (first, _) = failing.first()?;
    let read_only = failing
        .iter()
        .all(|(_, mounts)| mounts.iter().all(|m| m.is_read_only()));
    let granting: Vec<&str> = rules
        .domains_granting(path, read_only)
        .iter()
        .map(|d| d.selinux_type.as_str())
        .collect();
    let mut related = Vec::new();
    let parts: Vec<String> = failing
        .iter()
        .map(|(domain, mounts)| {
            let several = failing.len() > 1;
            not_granted(path, special, *domain, mounts, several, rules, &mut related)
        })
        .collect();
    let remedy = grant_remedy(path, *first, &granting);
    let rule = match first {
        Some(domain) if domain.kind == DomainKind::Agent => &RULE_NOT_GRANTED,
        _ => &RULE_OUTSIDE_ROOT,
    };
    Some(report.finding(rule, format!("{}; {remedy}", parts.join("; ")), related))
}

/// Why `domain` (none: no root is declared) does not grant `path` to
/// `mounts`, with where what it does grant is declared added to `related`.
fn not_granted(
    path: &NormalPath,
    special: &str,
    domain: Option<&DomainRules>,
    mounts: &[&HostPathMount],
    several: bool,
    rules: &HostPathRules,
    related: &mut Vec<Related>,
) -> String {
    let who: Vec<String> = mounts.iter().map(|m| container_label(m)).collect();
    let who = if who.is_empty() {
        String::new()
    } else {
        format!(" ({})", who.join(", "))
    };
    let Some(domain) = domain else {
        return format!(
            "`{path}`{special} is outside every hostPath root (the layout declares none)"
        );
    };
    match domain.kind {
        DomainKind::Workload => {
            let roots: Vec<&str> = domain.roots().map(|r| r.path.as_str()).collect();
            related.extend(domain.roots().filter_map(|r| {
                declared(
                    &r.declared_at,
                    format!("hostPath root {} declared here", r.path),
                )
            }));
            let whose =
                if several || domain.selinux_type != *rules.pod_type.as_deref().unwrap_or("") {
                    format!(" of workload domain `{}`{who}", domain.selinux_type)
                } else {
                    String::new()
                };
            format!(
                "`{path}`{special} is outside every hostPath root{whose} ({})",
                if roots.is_empty() {
                    "the layout declares none".to_owned()
                } else {
                    roots.join(", ")
                }
            )
        }
        DomainKind::Agent => {
            related.extend(declared(
                &domain.declared_at,
                format!("agent domain `{}` declared here", domain.key),
            ));
            format!(
                "`{path}`{special} is not granted to agent domain `{}`{who}: it is neither \
                 a layout path `{}` may use nor in a host class it holds",
                domain.selinux_type, domain.key
            )
        }
    }
}

/// What to do about `path` not being granted: run as a domain that grants
/// it (`granting`), or grant it to the first failing domain `first`, or
/// else move or declare it.
fn grant_remedy(path: &NormalPath, first: Option<&DomainRules>, granting: &[&str]) -> String {
    if let [only] = granting {
        return format!(
            "agent domain `{only}` grants it: run the container with `seLinuxOptions.type: {only}`"
        );
    }
    if !granting.is_empty() {
        return format!(
            "{} grant it: run the container with the `seLinuxOptions.type` of the one that fits",
            granting
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    let classes: Vec<&str> = layout::model::host::classes_for(path.as_str())
        .iter()
        .map(|(class, _)| class.name)
        .collect();
    match (first, classes.is_empty()) {
        (Some(domain), false) if domain.kind == DomainKind::Agent => format!(
            "host class{} {} cover{} it: grant one to `{}` under `host:` in the layout \
             (`semanifest suggest` writes a domain holding it)",
            if classes.len() == 1 { "" } else { "es" },
            classes
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if classes.len() == 1 { "s" } else { "" },
            domain.key
        ),
        (Some(domain), true) if domain.kind == DomainKind::Agent => format!(
            "declare the path in the layout and grant it to `{}` in its `access:` \
             (`semanifest suggest` writes a domain holding it when a declared path holds it)",
            domain.key
        ),
        _ => host_path_advice(path).map_or_else(
            || "move it below a root, or declare the path in the layout".to_owned(),
            str::to_owned,
        ),
    }
}

/// One volume's findings: at most one at its `path:` value (its type,
/// path, placement, or else what kind of file it is), and one per mount
/// that writes where its domain may only read.
fn audit_volume(
    workload: &Workload,
    volume: &HostPathVolume,
    rules: &HostPathRules,
    findings: &mut Vec<Finding>,
) {
    let report = VolumeReporter { workload, volume };
    let raw = &volume.path.value;

    if let Some(path_type) = &volume.path_type {
        if !VALID_HOST_PATH_TYPES.contains(&path_type.value.as_str()) {
            findings.push(report.finding_at(
                &RULE_INVALID_PATH,
                path_type.position,
                format!("unknown hostPath type `{}`", path_type.value),
                Vec::new(),
            ));
        }
    }
    let path = match NormalPath::parse(raw) {
        Ok(path) => path,
        Err(error) => {
            findings.push(report.finding(
                &RULE_INVALID_PATH,
                format!("path `{raw}`: {error}"),
                Vec::new(),
            ));
            return;
        }
    };

    let special = match (special_file(volume), &volume.path_type) {
        (Some(what), Some(path_type)) => format!(" ({what}, type: {})", path_type.value),
        _ => String::new(),
    };
    let judges = judges(workload, volume, rules);
    let placement = protected_finding(&report, &path, &special, rules)
        .or_else(|| grant_finding(&report, &path, &special, rules, &judges));
    let misplaced = placement.is_some();
    findings.extend(placement);
    let judged_as_pod = judges
        .iter()
        .any(|(d, _)| d.is_none_or(|d| d.kind == DomainKind::Workload));
    if !misplaced && judged_as_pod {
        if let (Some(what), Some(path_type)) = (special_file(volume), &volume.path_type) {
            findings.push(report.finding(
                &RULE_SOCKET_OR_DEVICE,
                format!("`{path}` is {what} (type: {})", path_type.value),
                vec![report.related(path_type, "the type".to_owned())],
            ));
        }
    }
    for mount in &volume.mounts {
        let domain = if misplaced || accepted_privileged(workload, mount, rules) {
            None
        } else {
            match rules.domain_for(mount.selinux_type.as_ref().map(|t| t.value.as_str())) {
                DomainChoice::Domain(domain) => Some(domain),
                _ => None,
            }
        };
        audit_mount_writable(&report, &path, mount, domain, findings);
    }
}

fn container_label(mount: &HostPathMount) -> String {
    format!("{} `{}`", mount.container_kind.as_str(), mount.container)
}

/// The container-wide findings of a workload: a privileged container once,
/// at its `privileged:` value (a note when the layout accepts the
/// workload), and a type that is no workload or agent domain once per
/// place it is written (a pod-level type is shared by the containers that
/// inherit it). Only containers that mount a hostPath are judged.
fn audit_containers(workload: &Workload, rules: &HostPathRules, findings: &mut Vec<Finding>) {
    // (container, its mounts as `volume` at `path`), in order of appearance.
    let mut containers: Vec<(&HostPathMount, Vec<String>)> = Vec::new();
    for volume in &workload.host_path_volumes {
        for mount in &volume.mounts {
            let mounted = format!("`{}` at `{}`", volume.name, mount.mount_path.value);
            match containers.iter_mut().find(|(m, _)| {
                m.container == mount.container && m.container_kind == mount.container_kind
            }) {
                Some((_, mounts)) => mounts.push(mounted),
                None => containers.push((mount, vec![mounted])),
            }
        }
    }
    let exception =
        rules.privileged_exception(workload.namespace.as_deref(), workload.name.as_deref());
    let mut seen_privileged: Vec<Pos> = Vec::new();
    for (mount, mounts) in &containers {
        let Some(privileged) = mount.privileged.as_ref().filter(|p| p.value) else {
            continue;
        };
        if seen_privileged.contains(&privileged.position) {
            continue;
        }
        seen_privileged.push(privileged.position);
        let what = format!(
            "{} is privileged and mounts hostPath volume{} {}",
            container_label(mount),
            if mounts.len() == 1 { "" } else { "s" },
            mounts.join(", ")
        );
        findings.push(match exception {
            Some(exception) => workload_finding(
                workload,
                &RULE_PRIVILEGED_ACCEPTED,
                privileged.position,
                format!(
                    "{what}; accepted by the layout's privileged exception: {}",
                    exception.reason
                ),
                declared(
                    &exception.declared_at,
                    format!(
                        "privileged exception {}/{} declared here",
                        exception.namespace, exception.name
                    ),
                )
                .into_iter()
                .collect(),
            ),
            None => workload_finding(
                workload,
                &RULE_PRIVILEGED,
                privileged.position,
                format!(
                    "{what}; run it unprivileged in a workload or agent domain \
                     (`semanifest suggest` writes one), or name it in the layout's \
                     `privilegedExceptions` with the reason"
                ),
                Vec::new(),
            ),
        });
    }
    // Each written type, with the containers that run as it.
    let mut types: Vec<(&Sourced<String>, Vec<&HostPathMount>)> = Vec::new();
    for (mount, _) in &containers {
        let Some(selinux_type) = &mount.selinux_type else {
            continue;
        };
        if rules.domain_for(Some(&selinux_type.value)) != DomainChoice::Undeclared {
            continue;
        }
        match types
            .iter_mut()
            .find(|(t, _)| t.position == selinux_type.position)
        {
            Some((_, mounts)) => mounts.push(mount),
            None => types.push((selinux_type, vec![mount])),
        }
    }
    let known: Vec<&str> = rules
        .domains
        .iter()
        .map(|d| d.selinux_type.as_str())
        .collect();
    for (selinux_type, mounts) in types {
        let who: Vec<String> = mounts.iter().map(|m| container_label(m)).collect();
        findings.push(workload_finding(
            workload,
            &RULE_SELINUX_TYPE,
            selinux_type.position,
            format!(
                "{} run{} as SELinux type `{}`, not a workload or agent domain of the layout ({}), and mount{} hostPath volumes",
                who.join(", "),
                if who.len() == 1 { "s" } else { "" },
                selinux_type.value,
                if known.is_empty() { "it declares none".to_owned() } else { known.join(", ") },
                if who.len() == 1 { "s" } else { "" },
            ),
            Vec::new(),
        ));
    }
}

/// A mount's own findings: a subPath that cannot be joined (at the
/// subPath), and, when its domain is given, a writable mount where that
/// domain may only read (at `readOnly: false`, or else at the mount path).
fn audit_mount_writable(
    report: &VolumeReporter<'_>,
    path: &NormalPath,
    mount: &HostPathMount,
    domain: Option<&DomainRules>,
    findings: &mut Vec<Finding>,
) {
    // With a literal subPath the container sees only that subtree.
    let effective = match &mount.sub_path {
        Some(sub_path) if !sub_path.value.is_empty() => match path.join(&sub_path.value) {
            Ok(effective) => effective,
            Err(error) => {
                findings.push(report.finding_at(
                    &RULE_INVALID_PATH,
                    sub_path.position,
                    format!(
                        "{} mounts it with subPath `{}`: {error}",
                        container_label(mount),
                        sub_path.value
                    ),
                    Vec::new(),
                ));
                return;
            }
        },
        _ => path.clone(),
    };
    let Some(domain) = domain else {
        return;
    };
    if mount.is_read_only() {
        return;
    }
    let verdict = domain.judge(&effective);
    if verdict == Verdict::NotGranted || verdict.admits(false) {
        return;
    }
    let (granted, declared_at) = match verdict {
        Verdict::Path(grant) => (grant.path.to_string(), &grant.declared_at),
        Verdict::Class(grant) => (format!("host class `{}`", grant.class), &grant.declared_at),
        Verdict::NotGranted => return,
    };
    let who = match domain.kind {
        DomainKind::Workload => "workloads".to_owned(),
        DomainKind::Agent => format!("agent domain `{}`", domain.selinux_type),
    };
    let related = declared(declared_at, format!("{granted} granted read-only here"))
        .into_iter()
        .collect();
    let at = mount
        .read_only
        .as_ref()
        .map_or(mount.mount_path.position, |r| r.position);
    findings.push(report.finding_at(
        &RULE_WRITABLE_READ_ONLY,
        at,
        format!(
            "{} mounts `{effective}` writable at `{}`, but {who} may only read \
             {granted}; mount it `readOnly: true`",
            container_label(mount),
            mount.mount_path.value
        ),
        related,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_str;

    /// A layout with a writable root holding a read-only part, a read-only
    /// root, a protected path with a carved-out directory, and an agent.
    const LAYOUT: &str = "\
apiVersion: semanifest.io/v1
kind: Layout
metadata: { name: t }
spec:
  domains:
    pods: { type: container_t, workload: true }
    kubelet: { type: kubelet_t }
    csi: { type: csi_node_t, agent: true, host: { sysfs: read } }
  paths:
    - { path: /var/mnt, type: var_mnt_t, access: { pods: write }, hostPath: true }
    - { path: /var/mnt/shared, type: mnt_shared_t, access: { pods: read }, hostPath: true }
    - { path: /srv, type: srv_root_t, access: { pods: read }, hostPath: true }
    - { path: /var/lib/kubelet, type: kubelet_var_t, access: { kubelet: write }, protected: true }
    - { path: /var/lib/kubelet/pki, type: kubelet_pki_t, access: { kubelet: write }, protected: true }
    - { path: /var/lib/kubelet/pods, type: kubelet_pods_t, access: { kubelet: write, csi: write } }
";

    fn rules() -> HostPathRules {
        let source = layout::diag::Source::new("layout.yaml", LAYOUT);
        let parsed = layout::manifest::parse(source, &layout::manifest::BaseFacts::default())
            .unwrap_or_else(|report| panic!("{report:?}"));
        HostPathRules::of(&parsed)
    }

    fn pod(host_path: &str, read_only: bool, sub_path: Option<&str>, selinux: &str) -> String {
        let sub_path = sub_path.map_or(String::new(), |s| format!(", subPath: {s}"));
        format!(
            "kind: Pod\nspec:\n  containers:\n    - name: c\n      {selinux}volumeMounts: \
             [{{name: v, mountPath: /m, readOnly: {read_only}{sub_path}}}]\n  volumes:\n    \
             - name: v\n      hostPath: {{path: {host_path}}}\n"
        )
    }

    fn rule_ids(yaml: &str, rules: &HostPathRules) -> Vec<&'static str> {
        let manifests = parse_str("t.yaml", yaml);
        audit(&manifests, rules).iter().map(|f| f.rule.id).collect()
    }

    #[test]
    fn the_deepest_layout_path_decides_writability() {
        let rules = rules();
        let writable = "k8s-hostpath-writable-read-only";
        let cases: [(&str, bool, Option<&str>, &[&str]); 7] = [
            ("/var/mnt/data", false, None, &[]),
            // A read-only path below a writable root.
            ("/var/mnt/shared/x", false, None, &[writable]),
            ("/var/mnt/shared/x", true, None, &[]),
            // A root the workload may not write.
            ("/srv/www", false, None, &[writable]),
            // subPath narrows the mount into the read-only part...
            ("/var/mnt", false, Some("shared"), &[writable]),
            ("/var/mnt", false, Some("../etc"), &["k8s-hostpath-invalid"]),
            (
                "/var/lib/kubelet/pods",
                true,
                None,
                &["k8s-hostpath-outside-root"],
            ),
        ];
        for (host_path, read_only, sub_path, expected) in cases {
            let ids = rule_ids(&pod(host_path, read_only, sub_path, ""), &rules);
            assert_eq!(
                ids, expected,
                "{host_path} readOnly={read_only} subPath={sub_path:?}"
            );
        }
    }

    #[test]
    fn an_agent_is_judged_by_its_own_grants() {
        let rules = rules();
        let csi = "securityContext: {seLinuxOptions: {type: csi_node_t}}\n      ";
        let cases: [(&str, bool, &[&str]); 6] = [
            // A carved-out directory of a protected path, granted to it.
            ("/var/lib/kubelet/pods", false, &[]),
            // Its host class, read-only; writable is a warning.
            ("/sys/class/net", true, &[]),
            ("/sys", false, &["k8s-hostpath-writable-read-only"]),
            // Not its grant, though the pods' root.
            ("/var/mnt/x", true, &["k8s-hostpath-not-granted"]),
            // A class it does not hold.
            ("/proc", true, &["k8s-hostpath-not-granted"]),
            // Protected for everyone.
            ("/var/lib/kubelet/pki", true, &["k8s-hostpath-protected"]),
        ];
        for (host_path, read_only, expected) in cases {
            let ids = rule_ids(&pod(host_path, read_only, None, csi), &rules);
            assert_eq!(ids, expected, "{host_path} readOnly={read_only}");
        }
        // Control: the same volumes as a pod.
        let ids = rule_ids(&pod("/var/lib/kubelet/pods", false, None, ""), &rules);
        assert_eq!(ids, ["k8s-hostpath-outside-root"]);
        let ids = rule_ids(&pod("/sys/class/net", true, None, ""), &rules);
        assert_eq!(ids, ["k8s-hostpath-outside-root"]);
    }

    #[test]
    fn protected_messages_name_the_relation() {
        let rules = rules();
        let cases = [
            ("/var/lib", "`/var/lib` exposes protected path(s) below it: /var/lib/kubelet, /var/lib/kubelet/pki"),
            (
                "/var/lib/kubelet",
                "`/var/lib/kubelet` is protected path /var/lib/kubelet; exposes protected path(s) below it: /var/lib/kubelet/pki",
            ),
            (
                "/var/lib/kubelet/pki/x",
                "`/var/lib/kubelet/pki/x` lies inside protected path(s) /var/lib/kubelet, /var/lib/kubelet/pki",
            ),
        ];
        for (host_path, message) in cases {
            let manifests = parse_str("t.yaml", &pod(host_path, true, None, ""));
            let findings = audit(&manifests, &rules);
            assert_eq!(findings.len(), 1, "{findings:#?}");
            let protected = &findings[0];
            assert_eq!(protected.rule.id, "k8s-hostpath-protected");
            assert!(protected.message.contains(message), "{}", protected.message);
        }
    }

    #[test]
    fn no_roots_means_every_hostpath_is_outside() {
        let manifests = parse_str("t.yaml", &pod("/var/mnt/x", true, None, ""));
        let findings = audit(&manifests, &HostPathRules::default());
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0].message.contains("(the layout declares none)"),
            "{}",
            findings[0].message
        );
    }
}
