//! The hostPath judgement as plain data: what the layout lets each
//! workload and agent domain mount ([`HostPathRules`], computed once from
//! the layout model), and the matching rules written once beside it.
//!
//! `check --k8s` judges every volume with these functions, and the table
//! serialises (serde, camelCase) for whatever must make the same judgement
//! elsewhere, such as an admission policy. Its shape is a contract
//! (`docs/k8s.md`, "The judgement table"): fields are added, never renamed.
//!
//! The rules, in order, for a container mounting host path `P` (normalised,
//! after a literal `subPath`):
//! 1. **Protected**: `P` is a protected path, lies inside one (unless a
//!    deeper declared path that is not protected holds it: kubelet's plugin
//!    directories inside `/var/lib/kubelet`), or contains one. No domain is
//!    ever granted it.
//! 2. **Domain**: the container's `seLinuxOptions.type` (the container's
//!    over the pod's) names a workload or agent domain; none names the pod
//!    domain (the layout's first workload domain). Any other type is an
//!    error and nothing else is judged for it.
//! 3. **Grant**: the host classes that cover `P` most specifically decide
//!    when the domain holds one of them; otherwise the deepest of the
//!    domain's layout paths that contains `P`. A workload domain's layout
//!    paths are the `hostPath: true` roots and what lies below them; an
//!    agent's are the paths it is granted and what lies below them. No
//!    grant, or a grant of `none`, is "not granted".
//! 4. **Read vs write**: a mount without `readOnly: true` needs `write`.
//! 5. **Privileged** containers are errors unless the layout names their
//!    workload (namespace, name) in `privilegedExceptions`; an accepted
//!    one is judged for protected paths only.

use layout::diag::Location;
use layout::manifest::Parsed;
use layout::model::host::{self, ObjectKind, Scope};
use layout::model::{Access, Layout, PrivilegedException};
use serde::{Serialize, Serializer};

use super::path::NormalPath;

/// What the layout says about hostPath volumes, per domain. See the module
/// documentation for how it is read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostPathRules {
    /// Protected paths: no hostPath may be, lie inside or contain one.
    pub protected: Vec<ProtectedPath>,
    /// The type of a container that names none: the first workload domain's.
    pub pod_type: Option<String>,
    /// Every workload and agent domain, in layout order.
    pub domains: Vec<DomainRules>,
    /// Workloads accepted as privileged.
    pub privileged_exceptions: Vec<PrivilegedExceptionRule>,
}

/// A protected layout path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProtectedPath {
    pub path: NormalPath,
    /// Declared paths below it that are not protected (their own types,
    /// e.g. `/var/lib/kubelet/pods` below `/var/lib/kubelet`): a hostPath
    /// inside one of them is not inside this protected path.
    pub carved_out: Vec<NormalPath>,
    #[serde(serialize_with = "location")]
    pub declared_at: Option<Location>,
}

/// Whether a domain runs pods or node agents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DomainKind {
    /// MCS-separated pods: may mount only below `hostPath: true` roots.
    Workload,
    /// A node agent: may mount the layout paths and host classes it holds.
    Agent,
}

/// What one domain may mount.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainRules {
    /// The layout's key (`csi`).
    pub key: String,
    /// The SELinux type a container names to run in it (`csi_node_t`).
    pub selinux_type: String,
    pub kind: DomainKind,
    /// Layout paths; the deepest one containing a hostPath decides.
    pub paths: Vec<PathGrant>,
    /// Host classes it holds (agents only).
    pub host_classes: Vec<HostClassGrant>,
    #[serde(serialize_with = "location")]
    pub declared_at: Option<Location>,
}

/// What a grant lets a hostPath mount do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum MountAccess {
    /// Nothing: a mount here is not granted.
    None,
    /// A `readOnly: true` mount.
    Read,
    /// Any mount.
    Write,
}

impl MountAccess {
    /// What a layout access grant gives a mount: modifying is `write`,
    /// reading is `read`, search or exec alone is nothing to mount.
    pub fn of(access: Access) -> MountAccess {
        if access.modifies() {
            MountAccess::Write
        } else if access.read {
            MountAccess::Read
        } else {
            MountAccess::None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MountAccess::None => "none",
            MountAccess::Read => "read",
            MountAccess::Write => "write",
        }
    }
}

/// A layout path and what one domain's mounts may do there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathGrant {
    pub path: NormalPath,
    pub access: MountAccess,
    /// A `hostPath: true` root.
    pub host_path_root: bool,
    #[serde(serialize_with = "location")]
    pub declared_at: Option<Location>,
}

/// A host class an agent holds, with the host paths it covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostClassGrant {
    /// The class's name (`sysfs`).
    pub class: String,
    pub access: MountAccess,
    pub paths: Vec<ClassPath>,
    #[serde(serialize_with = "location")]
    pub declared_at: Option<Location>,
}

/// A host path of a class (`docs/agents.md`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassPath {
    pub path: String,
    /// `subtree` (the path and below), `exact` (the path only) or
    /// `namePrefix` (names in its directory starting with its last
    /// component).
    pub scope: &'static str,
    /// The hostPath `type` naming it (`Directory`, `Socket`, `CharDevice`…).
    pub kind: &'static str,
}

/// A workload the layout accepts as privileged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrivilegedExceptionRule {
    /// A manifest without `metadata.namespace` is matched as `default`.
    pub namespace: String,
    pub name: String,
    pub reason: String,
    #[serde(serialize_with = "location")]
    pub declared_at: Option<Location>,
}

/// Why a hostPath touches protected data.
#[derive(Debug, PartialEq, Eq)]
pub struct Protection<'a> {
    /// The protected path it is, if any.
    pub equal: Option<&'a ProtectedPath>,
    /// Protected paths it lies inside (not carved out).
    pub inside: Vec<&'a ProtectedPath>,
    /// Protected paths below it.
    pub below: Vec<&'a ProtectedPath>,
}

/// The domain a container's type selects.
#[derive(Debug, PartialEq, Eq)]
pub enum DomainChoice<'a> {
    Domain(&'a DomainRules),
    /// No type, and the layout has no workload domain.
    NoPodDomain,
    /// A type that is no workload or agent domain of the layout.
    Undeclared,
}

/// How a domain's grants meet a hostPath.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// Granted by the deepest layout path containing it.
    Path(&'a PathGrant),
    /// Granted by a host class the domain holds.
    Class(&'a HostClassGrant),
    /// Not granted: nothing covers it, or the deepest path gives `none`.
    NotGranted,
}

impl Verdict<'_> {
    pub fn access(&self) -> MountAccess {
        match self {
            Verdict::Path(grant) => grant.access,
            Verdict::Class(grant) => grant.access,
            Verdict::NotGranted => MountAccess::None,
        }
    }

    /// Whether a mount, read-only or not, may use the path.
    pub fn admits(&self, read_only: bool) -> bool {
        let needed = if read_only {
            MountAccess::Read
        } else {
            MountAccess::Write
        };
        self.access() >= needed
    }
}

/// The protected paths of `layout`, each with the declared paths below it
/// that are not protected.
fn protected_paths(layout: &Layout, file: &str) -> Vec<ProtectedPath> {
    layout
        .protected()
        .filter_map(|rule| {
            let path = NormalPath::parse(&rule.path).ok()?;
            let carved_out = layout
                .paths
                .iter()
                .filter(|below| !below.protected && below.path != rule.path)
                .filter_map(|below| NormalPath::parse(&below.path).ok())
                .filter(|below| path.contains(below))
                .collect();
            Some(ProtectedPath {
                path,
                carved_out,
                declared_at: Location::at(file, rule.protected_pos.unwrap_or(rule.pos)),
            })
        })
        .collect()
}

/// The rules of the container domain `domain` (at `index` in `layout`).
fn domain_rules(
    layout: &Layout,
    index: usize,
    domain: &layout::model::Domain,
    file: &str,
) -> DomainRules {
    let kind = if domain.workload {
        DomainKind::Workload
    } else {
        DomainKind::Agent
    };
    DomainRules {
        key: domain.key.clone(),
        selinux_type: domain.type_name.clone(),
        kind,
        paths: path_grants(layout, index, kind, file),
        host_classes: host_class_grants(domain, file),
        declared_at: Location::at(file, domain.pos),
    }
}

/// The paths the domain at `index` may mount: roots for a workload, its
/// grants for an agent; then every declared path below them.
fn path_grants(layout: &Layout, index: usize, kind: DomainKind, file: &str) -> Vec<PathGrant> {
    let access = |rule: &layout::model::PathRule| {
        if rule.protected {
            return MountAccess::None;
        }
        rule.access
            .get(&index)
            .map_or(MountAccess::None, |a| MountAccess::of(*a))
    };
    let tops: Vec<&str> = layout
        .paths
        .iter()
        .filter(|rule| match kind {
            DomainKind::Workload => rule.host_path,
            DomainKind::Agent => access(rule) != MountAccess::None,
        })
        .map(|rule| rule.path.as_str())
        .collect();
    layout
        .paths
        .iter()
        .filter(|rule| {
            tops.iter()
                .any(|top| layout::model::is_within(&rule.path, top))
        })
        .filter_map(|rule| {
            Some(PathGrant {
                path: NormalPath::parse(&rule.path).ok()?,
                access: access(rule),
                host_path_root: rule.host_path,
                declared_at: Location::at(file, rule.pos),
            })
        })
        .collect()
}

/// The host classes `domain` is granted that cover host paths.
fn host_class_grants(domain: &layout::model::Domain, file: &str) -> Vec<HostClassGrant> {
    domain
        .host
        .iter()
        .filter(|grant| !grant.class.paths.is_empty())
        .map(|grant| HostClassGrant {
            class: grant.class.name.to_owned(),
            // A class's top level (a socket's `write`, a device's) is what
            // a writable mount needs.
            access: MountAccess::of(grant.access).max(MountAccess::Read),
            paths: grant
                .class
                .paths
                .iter()
                .map(|host| ClassPath {
                    path: host.path.to_owned(),
                    scope: match host.scope {
                        Scope::Subtree => "subtree",
                        Scope::Exact => "exact",
                        Scope::NamePrefix => "namePrefix",
                    },
                    kind: host_path_kind(host.kind),
                })
                .collect(),
            declared_at: Location::at(file, grant.pos),
        })
        .collect()
}

/// The workloads the layout lets run privileged.
fn privileged_exceptions(layout: &Layout, file: &str) -> Vec<PrivilegedExceptionRule> {
    layout
        .privileged_exceptions
        .iter()
        .map(|e: &PrivilegedException| PrivilegedExceptionRule {
            namespace: e.namespace.clone(),
            name: e.name.clone(),
            reason: e.reason.clone(),
            declared_at: Location::at(file, e.pos),
        })
        .collect()
}

impl HostPathRules {
    /// The judgement a validated layout makes.
    pub fn of(parsed: &Parsed) -> HostPathRules {
        Self::of_layout(&parsed.layout, &parsed.source.name)
    }

    /// The judgement of `layout`, with declarations located in `file`.
    pub fn of_layout(layout: &Layout, file: &str) -> HostPathRules {
        let domains = layout
            .domains
            .iter()
            .enumerate()
            .filter(|(_, d)| d.is_container())
            .map(|(index, domain)| domain_rules(layout, index, domain, file))
            .collect::<Vec<_>>();
        HostPathRules {
            protected: protected_paths(layout, file),
            pod_type: domains
                .iter()
                .find(|d| d.kind == DomainKind::Workload)
                .map(|d| d.selinux_type.clone()),
            domains,
            privileged_exceptions: privileged_exceptions(layout, file),
        }
    }

    /// How `path` touches protected data, if it does.
    pub fn protection(&self, path: &NormalPath) -> Option<Protection<'_>> {
        let mut protection = Protection {
            equal: None,
            inside: Vec::new(),
            below: Vec::new(),
        };
        for protected in &self.protected {
            if protected.path == *path {
                protection.equal = Some(protected);
            } else if path.contains(&protected.path) {
                protection.below.push(protected);
            } else if protected.path.contains(path)
                && !protected.carved_out.iter().any(|c| c.contains(path))
            {
                protection.inside.push(protected);
            }
        }
        let touches = protection.equal.is_some()
            || !protection.inside.is_empty()
            || !protection.below.is_empty();
        touches.then_some(protection)
    }

    /// The domain a container runs in, from its effective
    /// `seLinuxOptions.type`.
    pub fn domain_for(&self, selinux_type: Option<&str>) -> DomainChoice<'_> {
        let wanted = match selinux_type {
            Some(wanted) => wanted,
            None => match &self.pod_type {
                Some(pod) => pod,
                None => return DomainChoice::NoPodDomain,
            },
        };
        self.domains
            .iter()
            .find(|d| d.selinux_type == wanted)
            .map_or(DomainChoice::Undeclared, DomainChoice::Domain)
    }

    /// The exception accepting a privileged workload, if the layout names it.
    pub fn privileged_exception(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Option<&PrivilegedExceptionRule> {
        let namespace = namespace.unwrap_or(PrivilegedException::DEFAULT_NAMESPACE);
        let name = name?;
        self.privileged_exceptions
            .iter()
            .find(|e| e.namespace == namespace && e.name == name)
    }

    /// The domains that grant `path` to a mount (read-only or not), for
    /// advice.
    pub fn domains_granting(&self, path: &NormalPath, read_only: bool) -> Vec<&DomainRules> {
        self.domains
            .iter()
            .filter(|d| d.judge(path).admits(read_only))
            .collect()
    }
}

impl DomainRules {
    /// What this domain's grants say about a mount of `path`.
    pub fn judge(&self, path: &NormalPath) -> Verdict<'_> {
        let classes = host::classes_for(path.as_str());
        if let Some(grant) = self
            .host_classes
            .iter()
            .filter(|grant| classes.iter().any(|(class, _)| class.name == grant.class))
            .max_by_key(|grant| grant.access)
        {
            return Verdict::Class(grant);
        }
        match self
            .paths
            .iter()
            .filter(|grant| grant.path.contains(path))
            .max_by_key(|grant| grant.path.depth())
        {
            Some(grant) if grant.access != MountAccess::None => Verdict::Path(grant),
            _ => Verdict::NotGranted,
        }
    }

    /// The `hostPath: true` roots among its paths.
    pub fn roots(&self) -> impl Iterator<Item = &PathGrant> {
        self.paths.iter().filter(|p| p.host_path_root)
    }
}

fn host_path_kind(kind: ObjectKind) -> &'static str {
    kind.host_path_type()
}

/// A location as `{file, line, column}`, or `null`.
fn location<S: Serializer>(location: &Option<Location>, serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct At<'a> {
        file: &'a str,
        line: u32,
        column: u32,
    }
    location
        .as_ref()
        .map(|l| At {
            file: &l.file,
            line: l.pos.line,
            column: l.pos.column,
        })
        .serialize(serializer)
}
