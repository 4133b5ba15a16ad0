//! The validated layout: what every later stage (policy generation, lookups,
//! `check`) works from.
//!
//! Invariants (established by `manifest::validate`, relied on everywhere):
//! - every path is absolute, normalised, ASCII without whitespace or `"`,
//!   and unique; paths are sorted so that a parent comes before its children;
//! - every type and domain name is a valid CIL identifier ending in `_t`;
//! - every domain index in `PathRule::access`, `Domain::transitions` and
//!   `Domain::connect` is in bounds; no workload or agent domain is trusted
//!   or granted a protected path;
//! - only agents hold host classes and capabilities beyond the default,
//!   each admitted by its table (`host`, `capability`);
//! - paths sharing a type agree on access, protection and lifecycle.

pub mod capability;
pub mod host;

use std::collections::BTreeMap;

use crate::diag::Pos;
use capability::Capability;
use host::HostClass;

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
    /// How the layout is built as a module for a distribution's store
    /// (`spec.store`; only `--target module` reads it).
    pub store: StoreOptions,
    /// Workloads accepted as privileged (`spec.privilegedExceptions`), in
    /// layout order, each (namespace, name) once.
    pub privileged_exceptions: Vec<PrivilegedException>,
}

/// A workload the layout accepts as privileged: `check --k8s` notes its
/// privileged containers with the reason instead of failing them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivilegedException {
    /// `metadata.namespace`; a manifest without one is matched as
    /// [`PrivilegedException::DEFAULT_NAMESPACE`].
    pub namespace: String,
    /// `metadata.name` of the workload (the DaemonSet, not its pods).
    pub name: String,
    pub reason: String,
    /// Position of the entry's `name:` value.
    pub pos: Pos,
}

impl PrivilegedException {
    /// Where `kubectl apply` puts an object without a namespace when no
    /// `-n` is given.
    pub const DEFAULT_NAMESPACE: &'static str = "default";
}

/// How a layout is built against a distribution's policy store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreOptions {
    pub boolean_grants: BooleanGrants,
}

/// Whether a grant only a boolean gives counts as access to a protected
/// path. secilc checks neverallows against conditional rules whatever
/// their booleans say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BooleanGrants {
    /// Always: `setsebool` can turn it on, so it is access (the default).
    #[default]
    Always,
    /// Only when the store's defaults turn it on; one that is off by
    /// default is reported, not refused (stores with `expand-check=0`
    /// only: the others refuse the module at install).
    ByDefault,
}

impl BooleanGrants {
    /// The manifest's spellings.
    pub const ALL: [(&'static str, BooleanGrants); 2] = [
        ("always", BooleanGrants::Always),
        ("byDefault", BooleanGrants::ByDefault),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BooleanGrants::Always => "always",
            BooleanGrants::ByDefault => "byDefault",
        }
    }
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
    /// A node agent (CSI, CNI, log reader, monitor, device plugin): a pod
    /// the runtime starts in this domain, confined to its grants, never
    /// trusted, never granted a protected path.
    pub agent: bool,
    /// Its processes are kept apart by MCS categories: every workload, and
    /// agents that ask. An agent without is still held to its own
    /// categories on container content (images, other pods' root
    /// filesystems).
    pub mcs: bool,
    /// May touch everything (relabel, backup): excluded from every neverallow.
    pub trusted: bool,
    /// Already declared by the base policy, so the module must not declare it.
    pub in_base: bool,
    /// Domains this one may start (process transition), by index.
    pub transitions: Vec<usize>,
    /// Domains whose unix stream sockets this one may connect to, by index.
    pub connect: Vec<usize>,
    /// Host classes granted (agents only), in class order.
    pub host: Vec<HostGrant>,
    /// Capabilities beyond the default set (agents only), in the kernel's
    /// order, none refused.
    pub capabilities: Vec<&'static Capability>,
    pub pos: Pos,
}

impl Domain {
    /// A domain the container runtime starts: a workload or an agent.
    pub fn is_container(&self) -> bool {
        self.workload || self.agent
    }

    /// The grant of the host class named `name`, if any.
    pub fn host_grant(&self, name: &str) -> Option<&HostGrant> {
        self.host.iter().find(|grant| grant.class.name == name)
    }
}

/// A host class granted to an agent at a level it admits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostGrant {
    pub class: &'static HostClass,
    pub access: Access,
    /// Position of the class's key in the manifest.
    pub pos: Pos,
}

impl HostGrant {
    /// Whether the grant includes the level of that manifest name.
    pub fn includes(&self, level: &str) -> bool {
        AccessLevel::from_name(level)
            .is_some_and(|wanted| self.access.union(Access::only(wanted)) == self.access)
    }
}

/// One path of the layout and the rule for its subtree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRule {
    pub path: String,
    pub type_name: String,
    /// The type is the base policy's (declared with `baseType: true`, or
    /// a store's type adopted as it is).
    pub type_in_base: bool,
    /// Declared with `baseType: true`: the standalone base's own type on
    /// purpose (container content, as that base labels it).
    pub base_type: bool,
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
    /// A project quota on the subtree (`capacity:`).
    pub capacity: Option<Capacity>,
    /// Position of the `path:` value in the manifest.
    pub pos: Pos,
    /// Position of the `protected: true` value, when set.
    pub protected_pos: Option<Pos>,
    /// Store domains that keep, on this path's type, the access the store
    /// gave them on the path's old type (`storeOwners`; `--target module`
    /// only: the standalone policy has no store domains).
    pub store_owners: Vec<StoreOwner>,
}

/// A store domain named in `storeOwners`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOwner {
    pub type_name: String,
    pub pos: Pos,
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
    /// Per-mount flags (`options:`), in [`MountFlag::ALL`] order, once
    /// each: the path is bound onto itself with them (a tmpfs gets them
    /// directly).
    pub options: Vec<MountFlag>,
}

impl Mount {
    /// The path needs a mount of its own (a tmpfs, or itself bound onto
    /// itself).
    pub fn any(&self) -> bool {
        self.tmpfs || self.propagation.is_some() || !self.options.is_empty()
    }
}

/// A per-mount flag a layout may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MountFlag {
    /// Device files on the mount cannot be opened.
    Nodev,
    /// Set-user-ID, set-group-ID and file capabilities are ignored.
    Nosuid,
    /// Nothing on the mount can be executed.
    Noexec,
}

impl MountFlag {
    pub const ALL: [(&'static str, MountFlag); 3] = [
        ("nodev", MountFlag::Nodev),
        ("nosuid", MountFlag::Nosuid),
        ("noexec", MountFlag::Noexec),
    ];

    pub fn as_str(&self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| f == self)
            .map(|(n, _)| *n)
            .unwrap_or("nodev")
    }
}

/// A project quota on a path's subtree: every object below carries the
/// path's project ID (directories with the inherit flag, so new objects
/// do too), and the filesystem holds the project to the limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// The hard limit on the bytes the subtree's blocks take, as written
    /// (`20Gi`) and in bytes; `None`: not limited, only counted.
    pub limit: Option<Size>,
    /// The hard limit on the objects in the subtree; `None`: not limited.
    pub inodes: Option<u64>,
    /// The filesystem project ID: `project:` as written, or
    /// [`Capacity::derived_project`] of the path.
    pub project: u32,
    /// `project:` was written (not derived).
    pub project_pinned: bool,
    /// Position of the `capacity:` key's value.
    pub pos: Pos,
}

/// A byte count as the manifest wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Size {
    /// `20Gi`, `512Mi`, `1048576`.
    pub text: String,
    pub bytes: u64,
}

impl Size {
    /// The hard limit as quotas hold it: 1 KiB blocks, rounded up.
    pub fn kib(&self) -> u64 {
        self.bytes.div_ceil(1024)
    }
}

impl Capacity {
    /// The lowest project ID a path derives; derived IDs lie in
    /// `[2^30, 2^31)`, above the IDs tools hand out counting up from 1
    /// (container storage drivers) or from 2^20 + 1 (kubelet).
    pub const DERIVED_BASE: u32 = 1 << 30;

    /// The project ID of a path without `project:`: FNV-1a (32 bits) of
    /// the path's text, its low 30 bits added to [`Self::DERIVED_BASE`].
    /// A function of the path alone, so no other edit of the layout, no
    /// boot and no other node moves it.
    pub fn derived_project(path: &str) -> u32 {
        let mut hash: u32 = 0x811c_9dc5;
        for byte in path.bytes() {
            hash ^= u32::from(byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
        Self::DERIVED_BASE | (hash & (Self::DERIVED_BASE - 1))
    }
}

/// Formats bytes with the largest binary unit that divides them
/// (`20 GiB`), or with one decimal (`1.5 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0;
    let mut value = bytes as f64;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
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

    /// The paths with a `capacity:`, in layout order.
    pub fn capacities(&self) -> impl Iterator<Item = (&PathRule, &Capacity)> {
        self.paths
            .iter()
            .filter_map(|rule| rule.capacity.as_ref().map(|c| (rule, c)))
    }

    pub fn workload_domains(&self) -> impl Iterator<Item = (usize, &Domain)> {
        self.domains.iter().enumerate().filter(|(_, d)| d.workload)
    }

    pub fn agent_domains(&self) -> impl Iterator<Item = (usize, &Domain)> {
        self.domains.iter().enumerate().filter(|(_, d)| d.agent)
    }

    /// The domain whose process type is `type_name` (what a container's
    /// `seLinuxOptions.type` names), with its index.
    pub fn domain_of_type(&self, type_name: &str) -> Option<(usize, &Domain)> {
        self.domains
            .iter()
            .enumerate()
            .find(|(_, d)| d.type_name == type_name)
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
    fn derived_projects_are_fixed() {
        // The documented values: a change here moves every node's quotas.
        assert_eq!(Capacity::derived_project("/var/mnt"), 1_164_479_881);
        assert_eq!(Capacity::derived_project("/var/lib/etcd"), 1_088_431_818);
        for path in ["/a", "/var", "/var/lib/containerd"] {
            let id = Capacity::derived_project(path);
            assert!((Capacity::DERIVED_BASE..1 << 31).contains(&id));
        }
    }

    #[test]
    fn bytes_read_for_people() {
        assert_eq!(human_bytes(20 << 30), "20 GiB");
        assert_eq!(human_bytes(1536 << 20), "1.5 GiB");
        assert_eq!(human_bytes(1000), "1000 B");
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
