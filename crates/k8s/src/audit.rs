//! hostPath findings: every hostPath volume of every workload, checked
//! against the layout's roots, protected paths, read-only paths and
//! workload domains ([`HostPathRules`]).
//!
//! Every finding points at the volume's `path:` value (the line a reviewer
//! changes); the value that triggered it (a `privileged: true`, an
//! `seLinuxOptions.type`, a `type: Socket`) and the layout declaration it
//! conflicts with are attached as related locations.

use super::path::NormalPath;
use super::workload::{
    HostPathMount, HostPathVolume, InvalidDocument, Manifests, PatchKind, PathOrigin, Sourced,
    Workload,
};
use layout::diag::{rule, Finding, Location, Pos, Related, Rule, Severity};

/// A directory the layout marks `hostPath: true`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RootRule {
    pub path: NormalPath,
    /// Whether the workload domain may write below it.
    pub workload_writable: bool,
    /// Where the layout declares it.
    pub declared_at: Option<Location>,
}

/// A layout path with where it is declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutPathRule {
    pub path: NormalPath,
    pub declared_at: Option<Location>,
}

/// What the layout says about hostPath use. Filled from the layout model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPathRules {
    /// `hostPath: true` roots; a hostPath must lie at or below one.
    pub roots: Vec<RootRule>,
    /// `protected` paths; a hostPath must be neither at, below nor above one.
    pub protected: Vec<LayoutPathRule>,
    /// SELinux types of the layout's workload domains (e.g. `container_t`).
    pub workload_types: Vec<String>,
    /// Paths the workload may read but not write (e.g. `/var/log/pods`).
    pub read_only: Vec<LayoutPathRule>,
}

impl HostPathRules {
    /// What a layout says about hostPath volumes.
    pub fn of(parsed: &layout::manifest::Parsed) -> HostPathRules {
        let layout = &parsed.layout;
        let declared = |pos| Location::at(&parsed.source.name, pos);
        let normal = |path: &str| NormalPath::parse(path).ok();
        let workloads: Vec<usize> = layout.workload_domains().map(|(i, _)| i).collect();
        let workload_access = |rule: &layout::model::PathRule| {
            workloads
                .iter()
                .filter_map(|i| rule.access.get(i))
                .fold(layout::model::Access::default(), |a, b| a.union(*b))
        };
        HostPathRules {
            roots: layout
                .host_path_roots()
                .filter_map(|rule| {
                    Some(RootRule {
                        path: normal(&rule.path)?,
                        workload_writable: workload_access(rule).modifies(),
                        declared_at: declared(rule.pos),
                    })
                })
                .collect(),
            protected: layout
                .protected()
                .filter_map(|rule| {
                    Some(LayoutPathRule {
                        path: normal(&rule.path)?,
                        declared_at: declared(rule.protected_pos.unwrap_or(rule.pos)),
                    })
                })
                .collect(),
            workload_types: layout
                .workload_domains()
                .map(|(_, d)| d.type_name.clone())
                .collect(),
            read_only: layout
                .paths
                .iter()
                .filter(|rule| {
                    let access = workload_access(rule);
                    access.read && !access.modifies()
                })
                .filter_map(|rule| {
                    Some(LayoutPathRule {
                        path: normal(&rule.path)?,
                        declared_at: declared(rule.pos),
                    })
                })
                .collect(),
        }
    }
}

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
    "A hostPath volume lies outside every `hostPath: true` root of the layout.",
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
    "A container mounting a hostPath volume runs with an SELinux type that is not a workload domain of the layout.",
    "The layout confines hostPath pods through their workload type; a pod that picks another type (e.g. spc_t) leaves those rules, so SELinux will not stop it."
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
pub static RULES: [&Rule; 12] = [
    &RULE_INVALID_PATH,
    &RULE_OUTSIDE_ROOT,
    &RULE_PROTECTED,
    &RULE_PRIVILEGED,
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
const VALID_HOST_PATH_TYPES: [&str; 8] = [
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
    let mut findings = Vec::new();
    for workload in &manifests.workloads {
        if let Some(os) = &workload.pinned_os {
            findings.push(non_linux(workload, os));
            continue;
        }
        for volume in &workload.host_path_volumes {
            audit_volume(workload, volume, rules, &mut findings);
        }
        audit_containers(workload, rules, &mut findings);
    }
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
fn special_file(volume: &HostPathVolume) -> Option<&'static str> {
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
    } else {
        None
    }
}

/// Where a volume lies with respect to the layout: the one error its path
/// gets, if any. Protected wins over outside-root: it is the problem that
/// no layout change can fix.
fn placement_finding(
    report: &VolumeReporter<'_>,
    path: &NormalPath,
    rules: &HostPathRules,
) -> Option<Finding> {
    let advice = host_path_advice(path);
    let special = match (special_file(report.volume), &report.volume.path_type) {
        (Some(what), Some(path_type)) => format!(" ({what}, type: {})", path_type.value),
        _ => String::new(),
    };
    let exposed: Vec<&LayoutPathRule> = rules
        .protected
        .iter()
        .filter(|p| p.path.contains(path) || path.contains(&p.path))
        .collect();
    if !exposed.is_empty() {
        let list = |relation: fn(&NormalPath, &NormalPath) -> bool| {
            exposed
                .iter()
                .filter(|p| relation(&p.path, path))
                .map(|p| p.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let equal = list(|protected, path| protected == path);
        let ancestors = list(|protected, path| protected != path && protected.contains(path));
        let below = list(|protected, path| protected != path && path.contains(protected));
        let mut parts = Vec::new();
        if !equal.is_empty() {
            parts.push(format!("is protected path {equal}"));
        }
        if !ancestors.is_empty() {
            parts.push(format!("lies inside protected path(s) {ancestors}"));
        }
        if !below.is_empty() {
            parts.push(format!("exposes protected path(s) below it: {below}"));
        }
        let related = exposed
            .iter()
            .filter_map(|p| {
                declared(
                    &p.declared_at,
                    format!("protected path {} declared here", p.path),
                )
            })
            .collect();
        let remedy = match advice {
            Some(advice) if ancestors.is_empty() && equal.is_empty() => {
                format!("; mount the directory it needs, not an ancestor: {advice}")
            }
            Some(advice) => format!("; {advice}"),
            None if !below.is_empty() && ancestors.is_empty() && equal.is_empty() => {
                "; mount the directory it needs, not an ancestor".to_owned()
            }
            None => "; no domain is ever granted it".to_owned(),
        };
        return Some(report.finding(
            &RULE_PROTECTED,
            format!("`{path}`{special} {}{remedy}", parts.join("; ")),
            related,
        ));
    }
    if rules.roots.iter().any(|root| root.path.contains(path)) {
        return None;
    }
    let roots: Vec<&str> = rules.roots.iter().map(|r| r.path.as_str()).collect();
    let related = rules
        .roots
        .iter()
        .filter_map(|r| {
            declared(
                &r.declared_at,
                format!("hostPath root {} declared here", r.path),
            )
        })
        .collect();
    let remedy = advice.map_or_else(
        || "move it below a root, or declare the path in the layout".to_owned(),
        str::to_owned,
    );
    Some(report.finding(
        &RULE_OUTSIDE_ROOT,
        format!(
            "`{path}`{special} is outside every hostPath root ({}); {remedy}",
            if roots.is_empty() {
                "the layout declares none".to_owned()
            } else {
                roots.join(", ")
            }
        ),
        related,
    ))
}

/// One volume's findings: at most one at its `path:` value (its type,
/// path, placement, or else what kind of file it is), and one per mount
/// that writes where workloads may only read.
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

    let placement = placement_finding(&report, &path, rules);
    let misplaced = placement.is_some();
    findings.extend(placement);
    if !misplaced {
        if let (Some(what), Some(path_type)) = (special_file(volume), &volume.path_type) {
            findings.push(report.finding(
                &RULE_SOCKET_OR_DEVICE,
                format!("`{path}` is {what} (type: {})", path_type.value),
                vec![report.related(path_type, "the type".to_owned())],
            ));
        }
    }
    for mount in &volume.mounts {
        audit_mount_writable(&report, &path, mount, rules, !misplaced, findings);
    }
}

fn container_label(mount: &HostPathMount) -> String {
    format!("{} `{}`", mount.container_kind.as_str(), mount.container)
}

/// The container-wide findings of a workload: a privileged container once,
/// at its `privileged:` value, and a type that is no workload domain once
/// per place it is written (a pod-level type is shared by the containers
/// that inherit it). Only containers that mount a hostPath are judged.
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
    let mut seen_privileged: Vec<Pos> = Vec::new();
    for (mount, mounts) in &containers {
        let Some(privileged) = mount.privileged.as_ref().filter(|p| p.value) else {
            continue;
        };
        if seen_privileged.contains(&privileged.position) {
            continue;
        }
        seen_privileged.push(privileged.position);
        findings.push(workload_finding(
            workload,
            &RULE_PRIVILEGED,
            privileged.position,
            format!(
                "{} is privileged and mounts hostPath volume{} {}",
                container_label(mount),
                if mounts.len() == 1 { "" } else { "s" },
                mounts.join(", ")
            ),
            Vec::new(),
        ));
    }
    // Each written type, with the containers that run as it.
    let mut types: Vec<(&Sourced<String>, Vec<&HostPathMount>)> = Vec::new();
    for (mount, _) in &containers {
        let Some(selinux_type) = &mount.selinux_type else {
            continue;
        };
        if rules.workload_types.contains(&selinux_type.value) {
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
    for (selinux_type, mounts) in types {
        let who: Vec<String> = mounts.iter().map(|m| container_label(m)).collect();
        findings.push(workload_finding(
            workload,
            &RULE_SELINUX_TYPE,
            selinux_type.position,
            format!(
                "{} run{} as SELinux type `{}`, not a workload domain of the layout ({}), and mount{} hostPath volumes",
                who.join(", "),
                if who.len() == 1 { "s" } else { "" },
                selinux_type.value,
                rules.workload_types.join(", "),
                if who.len() == 1 { "s" } else { "" },
            ),
            Vec::new(),
        ));
    }
}

/// The layout path that governs `path`: the deepest root, read-only or
/// protected path containing it.
enum Governing<'a> {
    Root(&'a RootRule),
    ReadOnly(&'a LayoutPathRule),
    Protected,
}

fn governing<'a>(rules: &'a HostPathRules, path: &NormalPath) -> Option<Governing<'a>> {
    let roots = rules
        .roots
        .iter()
        .filter(|r| r.path.contains(path))
        .map(|r| (r.path.depth(), Governing::Root(r)));
    let read_only = rules
        .read_only
        .iter()
        .filter(|r| r.path.contains(path))
        .map(|r| (r.path.depth(), Governing::ReadOnly(r)));
    let protected = rules
        .protected
        .iter()
        .filter(|r| r.path.contains(path))
        .map(|r| (r.path.depth(), Governing::Protected));
    // On equal depth the stricter declaration wins (protected, then read-only).
    roots
        .chain(read_only)
        .chain(protected)
        .enumerate()
        .max_by_key(|(order, (depth, _))| (*depth, *order))
        .map(|(_, (_, governing))| governing)
}

/// A mount's own findings: a subPath that cannot be joined (at the
/// subPath), and, when `judge_writes`, a writable mount where workloads
/// may only read (at `readOnly: false`, or else at the mount path).
fn audit_mount_writable(
    report: &VolumeReporter<'_>,
    path: &NormalPath,
    mount: &HostPathMount,
    rules: &HostPathRules,
    judge_writes: bool,
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
    if !judge_writes || mount.is_read_only() {
        return;
    }
    let (read_only_path, declared_at) = match governing(rules, &effective) {
        Some(Governing::ReadOnly(rule)) => (&rule.path, &rule.declared_at),
        Some(Governing::Root(root)) if !root.workload_writable => (&root.path, &root.declared_at),
        _ => return,
    };
    let related = declared(
        declared_at,
        format!("{read_only_path} declared read-only for workloads here"),
    )
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
            "{} mounts `{effective}` writable at `{}`, but workloads may only read \
             {read_only_path}; mount it `readOnly: true`",
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

    fn rule(path: &str) -> LayoutPathRule {
        LayoutPathRule {
            path: NormalPath::parse(path).unwrap(),
            declared_at: None,
        }
    }

    fn root(path: &str, workload_writable: bool) -> RootRule {
        RootRule {
            path: NormalPath::parse(path).unwrap(),
            workload_writable,
            declared_at: None,
        }
    }

    fn pod(host_path: &str, read_only: bool, sub_path: Option<&str>) -> String {
        let sub_path = sub_path.map_or(String::new(), |s| format!(", subPath: {s}"));
        format!(
            "kind: Pod\nspec:\n  containers:\n    - name: c\n      volumeMounts: \
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
        let rules = HostPathRules {
            roots: vec![
                root("/var/mnt", true),
                root("/var/log/export", true),
                root("/srv", false),
            ],
            protected: vec![],
            workload_types: vec!["container_t".to_owned()],
            read_only: vec![rule("/var/log"), rule("/var/mnt/shared")],
        };
        let writable = "k8s-hostpath-writable-read-only";
        let cases: [(&str, bool, Option<&str>, &[&str]); 8] = [
            ("/var/mnt/data", false, None, &[]),
            // A read-only path below a writable root.
            ("/var/mnt/shared/x", false, None, &[writable]),
            ("/var/mnt/shared/x", true, None, &[]),
            // A writable root below a read-only path.
            ("/var/log/export/a", false, None, &[]),
            // A root the workload may not write.
            ("/srv/www", false, None, &[writable]),
            // subPath narrows the mount into the read-only part...
            ("/var/mnt", false, Some("shared"), &[writable]),
            // ...or out of it.
            ("/var/log/export", false, Some("a/b"), &[]),
            ("/var/mnt", false, Some("../etc"), &["k8s-hostpath-invalid"]),
        ];
        for (host_path, read_only, sub_path, expected) in cases {
            let mut ids = rule_ids(&pod(host_path, read_only, sub_path), &rules);
            ids.retain(|id| *id != "k8s-hostpath-outside-root");
            assert_eq!(
                ids, expected,
                "{host_path} readOnly={read_only} subPath={sub_path:?}"
            );
        }
    }

    #[test]
    fn protected_messages_name_the_relation() {
        let rules = HostPathRules {
            roots: vec![root("/var/mnt", true)],
            protected: vec![rule("/var/lib/kubelet"), rule("/var/lib/kubelet/pki")],
            workload_types: vec![],
            read_only: vec![],
        };
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
            let manifests = parse_str("t.yaml", &pod(host_path, true, None));
            let findings = audit(&manifests, &rules);
            let protected = findings
                .iter()
                .find(|f| f.rule.id == "k8s-hostpath-protected")
                .unwrap_or_else(|| panic!("{host_path}: {findings:#?}"));
            assert!(protected.message.contains(message), "{}", protected.message);
        }
    }

    #[test]
    fn no_roots_means_every_hostpath_is_outside() {
        let manifests = parse_str("t.yaml", &pod("/var/mnt/x", true, None));
        let findings = audit(&manifests, &HostPathRules::default());
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0].message.contains("(the layout declares none)"),
            "{}",
            findings[0].message
        );
    }
}
