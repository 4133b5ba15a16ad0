//! The judgement every renderer prints: what `check --k8s` decides about
//! a hostPath volume, as data taken from `k8s`'s own rules. A renderer
//! never reads the layout; a rule changes in `k8s` and here, once.

use k8s::{HostPathRules, NormalPath};
use layout::diag::Location;

/// A layout path and where the layout declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    pub path: NormalPath,
    pub at: Option<Location>,
}

impl Declared {
    /// `PATH (line N)`, for messages that name the layout file once.
    pub fn describe(&self) -> String {
        match &self.at {
            Some(at) => format!("{} (line {})", self.path, at.pos.line),
            None => self.path.to_string(),
        }
    }
}

/// What admission decides, from one layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// The layout's `metadata.name`.
    pub layout: String,
    /// The layout file as given (or the embedded default's name).
    pub source: String,
    /// Directories a hostPath may lie at or below.
    pub roots: Vec<Declared>,
    /// Paths no hostPath may be, lie in or contain.
    pub protected: Vec<Declared>,
    /// `seLinuxOptions.type` values a container mounting a hostPath may
    /// run as (a container that sets none runs in the pod domain).
    pub workload_types: Vec<String>,
    /// Objects whose privileged containers the layout accepts, as
    /// `namespace/name` (a name holds no `/`, so the pair is unambiguous).
    /// An accepted container is judged for protected paths only.
    pub privileged_exceptions: Vec<String>,
}

/// hostPath `type` values the API server accepts, as `check` judges them.
pub use k8s::VALID_HOST_PATH_TYPES as HOST_PATH_TYPES;

/// Node labels that pin a pod's operating system, in the order `check`
/// reads them.
pub const OS_LABELS: [&str; 2] = ["kubernetes.io/os", "beta.kubernetes.io/os"];

/// The kinds whose objects carry a pod spec, by API group, with their
/// resource names, and where the pod spec lives.
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
pub const PERSISTENT_VOLUME: PodKind =
    PodKind::new("", "PersistentVolume", "persistentvolumes", PodSpecAt::None);

/// A kind admission judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodKind {
    pub group: &'static str,
    pub kind: &'static str,
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
}

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
    /// No pod spec (PersistentVolume).
    None,
}

impl PodSpecAt {
    /// The field path below the object.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            PodSpecAt::Spec => &["spec"],
            PodSpecAt::Template => &["template", "spec"],
            PodSpecAt::SpecTemplate => &["spec", "template", "spec"],
            PodSpecAt::JobTemplate => &["spec", "jobTemplate", "spec", "template", "spec"],
            PodSpecAt::None => &[],
        }
    }
}

impl Judgement {
    /// The judgement `check --k8s` makes with `parsed`'s layout.
    pub fn of(parsed: &layout::manifest::Parsed) -> Judgement {
        Judgement::from_rules(
            &HostPathRules::of(parsed),
            &parsed.layout.name,
            &parsed.source.name,
        )
    }

    /// The judgement of `rules`, which `layout` (read from `source`) gave.
    pub fn from_rules(rules: &HostPathRules, layout: &str, source: &str) -> Judgement {
        Judgement {
            layout: layout.to_owned(),
            source: source.to_owned(),
            roots: rules
                .domains
                .iter()
                .filter(|d| d.kind == k8s::DomainKind::Workload)
                .flat_map(|d| d.roots())
                .map(|root| Declared {
                    path: root.path.clone(),
                    at: root.declared_at.clone(),
                })
                .collect(),
            protected: rules
                .protected
                .iter()
                .map(|rule| Declared {
                    path: rule.path.clone(),
                    at: rule.declared_at.clone(),
                })
                .collect(),
            workload_types: rules
                .domains
                .iter()
                .filter(|d| d.kind == k8s::DomainKind::Workload)
                .map(|d| d.selinux_type.clone())
                .collect(),
            privileged_exceptions: rules
                .privileged_exceptions
                .iter()
                .map(|e| format!("{}/{}", e.namespace, e.name))
                .collect(),
        }
    }

    /// Regex of the paths a hostPath may lie in.
    pub fn roots_pattern(&self) -> Option<String> {
        crate::pattern::within_any(self.roots.iter().map(|r| &r.path))
    }

    /// Regex of the paths a hostPath may not touch.
    pub fn protected_pattern(&self) -> Option<String> {
        crate::pattern::overlapping_any(self.protected.iter().map(|r| &r.path))
    }

    /// `layout `NAME` (FILE)`, for messages.
    pub fn describe_layout(&self) -> String {
        if self.source == layout::manifest::DEFAULT_LAYOUT_NAME {
            format!(
                "the default layout `{}` (semanifest layout show)",
                self.layout
            )
        } else {
            format!("layout `{}` ({})", self.layout, self.source)
        }
    }

    /// `PATH (line N), …` of `declared`, or `none`.
    pub fn list(declared: &[Declared]) -> String {
        if declared.is_empty() {
            return "none".to_owned();
        }
        declared
            .iter()
            .map(Declared::describe)
            .collect::<Vec<_>>()
            .join(", ")
    }
}
