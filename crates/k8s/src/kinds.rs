//! The kinds that can give a pod a hostPath, and where each keeps its pod
//! spec: the one table the parser reads objects by and that admission
//! policies match requests with (API group, resource name).

/// Where an object keeps its pod spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodSpecAt {
    /// `spec` (Pod).
    Spec,
    /// `template.spec` (PodTemplate).
    Template,
    /// `spec.template.spec` (controllers, Job).
    SpecTemplate,
    /// `spec.jobTemplate.spec.template.spec` (CronJob).
    JobTemplate,
    /// No pod spec: `spec.hostPath` is the volume (PersistentVolume).
    Absent,
}

impl PodSpecAt {
    /// The field path below the object.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            PodSpecAt::Spec => &["spec"],
            PodSpecAt::Template => &["template", "spec"],
            PodSpecAt::SpecTemplate => &["spec", "template", "spec"],
            PodSpecAt::JobTemplate => &["spec", "jobTemplate", "spec", "template", "spec"],
            PodSpecAt::Absent => &[],
        }
    }
}

/// A kind whose objects can give a pod a hostPath.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodKind {
    /// The API group (`""` for the core group).
    pub group: &'static str,
    pub kind: &'static str,
    /// The resource name requests use (`deployments`).
    pub resource: &'static str,
    pub spec_at: PodSpecAt,
}

impl PodKind {
    const fn new(
        group: &'static str,
        kind: &'static str,
        resource: &'static str,
        spec_at: PodSpecAt,
    ) -> Self {
        PodKind {
            group,
            kind,
            resource,
            spec_at,
        }
    }

    /// The kind named `kind` (a pod kind or PersistentVolume), if any.
    pub fn named(kind: &str) -> Option<&'static PodKind> {
        POD_KINDS
            .iter()
            .chain([&PERSISTENT_VOLUME])
            .find(|k| k.kind == kind)
    }
}

/// The kinds whose objects carry a pod spec, by API group.
pub const POD_KINDS: [PodKind; 9] = [
    PodKind::new("", "Pod", "pods", PodSpecAt::Spec),
    PodKind::new("", "PodTemplate", "podtemplates", PodSpecAt::Template),
    PodKind::new(
        "",
        "ReplicationController",
        "replicationcontrollers",
        PodSpecAt::SpecTemplate,
    ),
    PodKind::new("apps", "Deployment", "deployments", PodSpecAt::SpecTemplate),
    PodKind::new("apps", "ReplicaSet", "replicasets", PodSpecAt::SpecTemplate),
    PodKind::new(
        "apps",
        "StatefulSet",
        "statefulsets",
        PodSpecAt::SpecTemplate,
    ),
    PodKind::new("apps", "DaemonSet", "daemonsets", PodSpecAt::SpecTemplate),
    PodKind::new("batch", "Job", "jobs", PodSpecAt::SpecTemplate),
    PodKind::new("batch", "CronJob", "cronjobs", PodSpecAt::JobTemplate),
];

/// The PersistentVolume kind: its `spec.hostPath` is handed to every pod
/// that claims it.
pub const PERSISTENT_VOLUME: PodKind = PodKind::new(
    "",
    "PersistentVolume",
    "persistentvolumes",
    PodSpecAt::Absent,
);

/// Node labels that name the operating system, in the order they are read
/// (`beta.` is the deprecated spelling older manifests still carry).
pub const OS_LABELS: [&str; 2] = ["kubernetes.io/os", "beta.kubernetes.io/os"];
