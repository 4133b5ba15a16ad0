//! The validated layout: what every later stage (policy generation, lookups,
//! `check`) works from.
//!
//! Invariants (established by `manifest::validate`, relied on everywhere):
//! - every path is absolute, normalised, ASCII without whitespace or `"`,
//!   and unique; paths are sorted so that a parent comes before its children;
//! - every type and domain name is a valid CIL identifier ending in `_t`;
//! - every domain index in `PathRule::access` and `Domain::transitions` is in
//!   bounds; no workload domain is trusted or granted a protected path;
//! - paths sharing a type agree on access, protection and lifecycle.

use std::collections::BTreeMap;

use crate::diag::Pos;

/// The SELinux user, role and level every generated file context carries.
pub(crate) const FILE_CONTEXT_PREFIX: &str = "system_u:object_r:";
pub(crate) const FILE_LEVEL: &str = "s0";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `metadata.name` as written, e.g. `structured-var`.
    pub name: String,
    /// The CIL module name derived from it, e.g. `structured_var`.
    pub module: String,
    /// `metadata.description`, carried into the module's header comment.
    pub description: Option<String>,
    pub domains: Vec<Domain>,
    pub paths: Vec<PathRule>,
    /// How a node boots the layout (`spec.node`).
    pub node: NodeBoot,
}

/// How a node's systemd boots the layout: the units `semanifest units`
/// generates from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeBoot {
    /// Start the runtime units inside one mount namespace of their own
    /// (kubens), so the mounts they make stay out of the host's table.
    pub kubens: bool,
    /// The container runtime and kubelet units: they start only once the
    /// layout is placed and labelled. In layout order, unique.
    pub runtime: Vec<RuntimeUnit>,
}

/// A unit that must not start before `/var` is placed and labelled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeUnit {
    /// `containerd.service`.
    pub unit: String,
    /// The command the unit runs (its `ExecStart=` line); kubens starts it
    /// through `kubensenter`. Always set when `NodeBoot::kubens` is.
    pub exec: Option<String>,
}

impl NodeBoot {
    /// The services semanifest generates itself; a runtime unit cannot be
    /// one of them.
    pub const GENERATED_SERVICES: [&'static str; 3] = [
        "semanifest-apply.service",
        "semanifest-relabel.service",
        "kubens.service",
    ];

    /// The runtime units a layout gets without `spec.node.runtime`: the
    /// unit names and commands of the containerd, CRI-O and kubeadm
    /// packages.
    pub(crate) const DEFAULT_RUNTIME: [(&'static str, &'static str); 3] = [
        ("containerd.service", "/usr/bin/containerd"),
        (
            "crio.service",
            "/usr/bin/crio $CRIO_CONFIG_OPTIONS $CRIO_RUNTIME_OPTIONS $CRIO_STORAGE_OPTIONS \
             $CRIO_NETWORK_OPTIONS $CRIO_METRICS_OPTIONS",
        ),
        (
            "kubelet.service",
            "/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS \
             $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS",
        ),
    ];

    pub(crate) fn default_runtime() -> Vec<RuntimeUnit> {
        Self::DEFAULT_RUNTIME
            .iter()
            .map(|(unit, exec)| RuntimeUnit {
                unit: (*unit).to_owned(),
                exec: Some((*exec).to_owned()),
            })
            .collect()
    }
}

impl Default for NodeBoot {
    fn default() -> Self {
        NodeBoot {
            kubens: false,
            runtime: NodeBoot::default_runtime(),
        }
    }
}

/// A process domain the layout speaks of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Domain {
    /// The manifest's key for it (`etcd`, `pods`).
    pub key: String,
    /// The SELinux type (`etcd_t`).
    pub type_name: String,
    /// MCS-separated hostPath pods: never trusted, never granted protected paths.
    pub workload: bool,
    /// May touch everything (relabel, backup): excluded from every neverallow.
    pub trusted: bool,
    /// Already declared by the base policy, so the module must not declare it.
    pub in_base: bool,
    /// Domains this one may start (process transition), by index.
    pub transitions: Vec<usize>,
    pub pos: Pos,
}

/// One path of the layout and the rule for its subtree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRule {
    pub path: String,
    pub type_name: String,
    /// The type is the base policy's (declared with `baseType: true`).
    pub type_in_base: bool,
    pub description: Option<String>,
    pub mode: Option<u32>,
    pub owner: Option<Owner>,
    /// Domain index → what it may do here.
    pub access: BTreeMap<usize, Access>,
    pub protected: bool,
    pub host_path: bool,
    pub removable: bool,
    pub lifecycle: Lifecycle,
    pub mount: Mount,
    /// Position of the `path:` value in the manifest.
    pub pos: Pos,
    /// Position of the `protected: true` value, when set.
    pub protected_pos: Option<Pos>,
}

impl PathRule {
    /// The full file context of the subtree, e.g. `system_u:object_r:etcd_var_t:s0`.
    pub fn context(&self) -> String {
        format!("{FILE_CONTEXT_PREFIX}{}:{FILE_LEVEL}", self.type_name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    Name(String),
    Ids { uid: u32, gid: u32 },
}

/// One access level a manifest may grant, by the name it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AccessLevel {
    Search,
    Read,
    Append,
    Write,
    Exec,
}

impl AccessLevel {
    /// Every level, weakest first.
    pub const ALL: [AccessLevel; 5] = [
        AccessLevel::Search,
        AccessLevel::Read,
        AccessLevel::Append,
        AccessLevel::Write,
        AccessLevel::Exec,
    ];

    /// The name a manifest writes (`write`).
    pub fn name(self) -> &'static str {
        match self {
            AccessLevel::Search => "search",
            AccessLevel::Read => "read",
            AccessLevel::Append => "append",
            AccessLevel::Write => "write",
            AccessLevel::Exec => "exec",
        }
    }

    pub fn from_name(name: &str) -> Option<AccessLevel> {
        Self::ALL.into_iter().find(|level| level.name() == name)
    }
}

impl std::fmt::Display for AccessLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An access grant. Levels nest: `write` ⊃ `read` ⊃ `search` and
/// `write` ⊃ `append` ⊃ `search`; `exec` combines with any of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Access {
    pub search: bool,
    pub read: bool,
    pub append: bool,
    pub write: bool,
    pub exec: bool,
}

impl Access {
    /// Just `level`, not yet closed under the implications.
    pub(crate) fn only(level: AccessLevel) -> Access {
        let mut access = Access::default();
        match level {
            AccessLevel::Search => access.search = true,
            AccessLevel::Read => access.read = true,
            AccessLevel::Append => access.append = true,
            AccessLevel::Write => access.write = true,
            AccessLevel::Exec => access.exec = true,
        }
        access
    }

    /// Closes the set under the implications between levels.
    pub fn normalised(mut self) -> Self {
        if self.write {
            self.read = true;
            self.append = true;
        }
        if self.read || self.append || self.exec {
            self.search = true;
        }
        self
    }

    pub fn union(self, other: Access) -> Access {
        Access {
            search: self.search || other.search,
            read: self.read || other.read,
            append: self.append || other.append,
            write: self.write || other.write,
            exec: self.exec || other.exec,
        }
        .normalised()
    }

    /// True when the workload could modify files with this grant.
    pub fn modifies(&self) -> bool {
        self.write || self.append
    }

    /// The levels that say this grant, strongest first (what a level
    /// implies is left out): what the policy allows and reports name.
    pub fn levels(&self) -> Vec<AccessLevel> {
        let mut levels = Vec::new();
        if self.write {
            levels.push(AccessLevel::Write);
        } else {
            if self.read {
                levels.push(AccessLevel::Read);
            }
            if self.append {
                levels.push(AccessLevel::Append);
            }
            if !self.read && !self.append && self.search {
                levels.push(AccessLevel::Search);
            }
        }
        if self.exec {
            levels.push(AccessLevel::Exec);
        }
        levels
    }

    /// The names of [`Self::levels`], for comments and reports.
    pub fn names(&self) -> Vec<&'static str> {
        self.levels().into_iter().map(AccessLevel::name).collect()
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lifecycle {
    #[default]
    Persistent,
    Ephemeral,
    Cache,
}

impl Lifecycle {
    /// Every lifecycle by its manifest name; the default first.
    pub(crate) const ALL: [(&'static str, Lifecycle); 3] = [
        ("persistent", Lifecycle::Persistent),
        ("ephemeral", Lifecycle::Ephemeral),
        ("cache", Lifecycle::Cache),
    ];

    pub fn as_str(&self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, l)| l == self)
            .map(|(n, _)| *n)
            .unwrap_or("persistent")
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mount {
    pub tmpfs: bool,
    pub propagation: Option<Propagation>,
    /// The tmpfs's `size=` (`64m`, `20%`); only with `tmpfs`.
    pub size: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    Private,
    Rprivate,
    Shared,
    Rshared,
    Slave,
    Rslave,
}

impl Propagation {
    pub(crate) const ALL: [(&'static str, Propagation); 6] = [
        ("private", Propagation::Private),
        ("rprivate", Propagation::Rprivate),
        ("shared", Propagation::Shared),
        ("rshared", Propagation::Rshared),
        ("slave", Propagation::Slave),
        ("rslave", Propagation::Rslave),
    ];

    pub fn as_str(&self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, p)| p == self)
            .map(|(n, _)| *n)
            .unwrap_or("private")
    }
}

impl Layout {
    pub fn domain(&self, index: usize) -> &Domain {
        &self.domains[index]
    }

    /// The rule that labels `path`: the deepest layout path that is `path`
    /// itself or a component-wise ancestor of it.
    pub fn rule_for(&self, path: &str) -> Option<&PathRule> {
        self.paths
            .iter()
            .filter(|rule| is_within(path, &rule.path))
            .max_by_key(|rule| rule.path.len())
    }

    /// The protected rules, in layout order.
    pub fn protected(&self) -> impl Iterator<Item = &PathRule> {
        self.paths.iter().filter(|rule| rule.protected)
    }

    /// The `hostPath: true` roots, in layout order.
    pub fn host_path_roots(&self) -> impl Iterator<Item = &PathRule> {
        self.paths.iter().filter(|rule| rule.host_path)
    }

    /// The first declared path that `path` lies within or contains: a
    /// symlink pointing there would label one directory as two paths.
    pub fn overlapping(&self, path: &str) -> Option<&PathRule> {
        self.paths
            .iter()
            .find(|rule| is_within(path, &rule.path) || is_within(&rule.path, path))
    }

    pub fn workload_domains(&self) -> impl Iterator<Item = (usize, &Domain)> {
        self.domains.iter().enumerate().filter(|(_, d)| d.workload)
    }
}

/// Component-wise "is `path` equal to or below `root`": `/var/mntx` is not
/// within `/var/mnt`. Both must be normalised absolute paths.
pub fn is_within(path: &str, root: &str) -> bool {
    if root == "/" {
        return path.starts_with('/');
    }
    match path.strip_prefix(root) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// Where a symlink at `link` points, as an absolute normalised path:
/// a relative target is read from the link's directory, `..` is resolved
/// lexically (as the kernel would with no other symlink on the way) and
/// stays at `/`. `None` when the result is `/` itself or has bytes a
/// layout path, file_contexts or a unit cannot carry (anything but
/// printable ASCII, or whitespace, quotes, `\` or `$`).
pub fn link_target(link: &str, target: &[u8]) -> Option<String> {
    let target = std::str::from_utf8(target).ok()?;
    let mut parts: Vec<&str> = Vec::new();
    if !target.starts_with('/') {
        parts.extend(link.split('/').filter(|c| !c.is_empty()));
        parts.pop();
    }
    for component in target.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            name => parts.push(name),
        }
    }
    let path = format!("/{}", parts.join("/"));
    let nameable = path != "/"
        && path
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\' | b'\'' | b'$'));
    nameable.then_some(path)
}

/// The proper ancestors of a normalised absolute path, nearest first,
/// excluding `/` itself: `/var/lib/etcd` → `/var/lib`, `/var`.
pub fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut current = path;
    std::iter::from_fn(move || {
        let cut = current.rfind('/')?;
        if cut == 0 {
            return None;
        }
        current = &current[..cut];
        Some(current)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_is_component_wise() {
        assert!(is_within("/var/mnt", "/var/mnt"));
        assert!(is_within("/var/mnt/a", "/var/mnt"));
        assert!(!is_within("/var/mntx", "/var/mnt"));
        assert!(is_within("/var", "/"));
        assert!(!is_within("/var", "/var/lib"));
    }

    #[test]
    fn link_targets_are_made_absolute_lexically() {
        assert_eq!(link_target("/var/run", b"/run").as_deref(), Some("/run"));
        assert_eq!(link_target("/var/run", b"../run").as_deref(), Some("/run"));
        assert_eq!(
            link_target("/var/run", b"../../../run/").as_deref(),
            Some("/run")
        );
        assert_eq!(link_target("/var/run", b"x").as_deref(), Some("/var/x"));
        assert_eq!(link_target("/var/run", b".."), None);
        assert_eq!(link_target("/var/run", b"/a b"), None);
        assert_eq!(link_target("/var/run", b"/a$b"), None);
        assert_eq!(link_target("/var/run", b"/a\xff"), None);
    }

    #[test]
    fn ancestors_nearest_first() {
        assert_eq!(
            ancestors("/var/lib/etcd").collect::<Vec<_>>(),
            ["/var/lib", "/var"]
        );
        assert_eq!(ancestors("/var").count(), 0);
    }

    #[test]
    fn access_levels_nest() {
        let write = Access {
            write: true,
            ..Access::default()
        }
        .normalised();
        assert!(write.read && write.append && write.search);
        let read_exec = Access {
            read: true,
            exec: true,
            ..Access::default()
        }
        .normalised();
        assert_eq!(read_exec.names(), ["read", "exec"]);
        assert!(!read_exec.modifies());
    }
}
