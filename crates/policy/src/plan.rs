//! What the generated module says, decided in Rust: which types to declare,
//! which allow rules each path needs, which traversal rules the ancestors
//! need, and which neverallows prove the protections. The template only
//! prints this plan, so every decision here is unit-testable without CIL.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use layout::model::host::{Grant, HostClass, ObjectKind, Scope};
use layout::model::{ancestors, Access, Domain, Layout, PathRule};

/// The whole module, ready for the template.
#[derive(Debug, Serialize)]
pub struct ModulePlan {
    pub module: String,
    pub layout_name: String,
    pub source: String,
    pub description: Option<String>,
    pub domains: Vec<DomainPlan>,
    pub paths: Vec<PathPlan>,
    pub traversals: Vec<Traversal>,
    pub name_transitions: Vec<NameTransition>,
    /// Names whose transitions would disagree (one name, one parent type,
    /// two declared types): none is emitted for them.
    pub name_conflicts: Vec<NameConflict>,
}

#[derive(Debug, Serialize)]
pub struct DomainPlan {
    pub key: String,
    pub type_name: String,
    /// Declared by this module (false: the base policy has it).
    pub declare: bool,
    pub workload: bool,
    pub agent: bool,
    /// An agent the layout asks to keep apart by MCS categories (workloads
    /// are, by the base policy).
    pub mcs_agent: bool,
    pub trusted: bool,
    /// Types of the domains this one may start.
    pub transitions: Vec<String>,
    /// What the domain holds beyond the layout's paths: capabilities, host
    /// classes, connections; one commented group each.
    pub grants: Vec<GrantGroup>,
}

/// Rules that say one thing about a domain, under one comment.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct GrantGroup {
    pub comment: String,
    pub allows: Vec<DomainAllow>,
}

/// An allow rule of a domain's own grants.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct DomainAllow {
    pub source: String,
    pub target: String,
    pub permissions: Permissions,
}

/// The permissions of a [`DomainAllow`]: a named classpermission of the
/// module, or one class and its permissions.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Permissions {
    Named { name: String },
    Class { class: String, perms: Vec<String> },
}

impl Permissions {
    fn class(class: &str, perms: &str) -> Permissions {
        Permissions::Class {
            class: class.to_owned(),
            perms: perms.split_whitespace().map(str::to_owned).collect(),
        }
    }
}

/// How a target names things for [`domain_grants`]: which grants a host
/// class makes there, and what the module calls a permission set.
pub struct GrantNames<'a> {
    /// The grants of a class on this target.
    pub grants: &'a dyn Fn(&HostClass) -> &'static [Grant],
    /// The module's classpermission of a set (`read` → `semanifest_read`).
    pub set: &'a dyn Fn(&str) -> String,
    /// A type of the layout or the base, as the target calls it.
    pub domain_type: &'a dyn Fn(&str) -> String,
    /// The target's attribute of every process type (`/proc/PID` entries).
    pub every_domain: &'a str,
}

#[derive(Debug, Serialize)]
pub struct PathPlan {
    pub path: String,
    pub type_name: String,
    /// First path labelled with this type and not a base type: declare it.
    pub declare_type: bool,
    pub summary: String,
    pub description: Option<String>,
    /// The `filecon` regex: the path escaped, plus `(/.*)?` for its subtree.
    pub filecon: String,
    pub allows: Vec<Allow>,
    /// Present when the path is protected and this is the first path of
    /// its type (the neverallow is per type).
    pub protection: Option<Protection>,
    /// A tmpfs is mounted here with `context=` this type (and this is the
    /// first such path of the type): the filesystem itself carries the
    /// type, and every file made on it is checked for `associate` against
    /// it.
    pub tmpfs_context: bool,
}

#[derive(Debug, Serialize, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Allow {
    pub domain: String,
    pub target: String,
    /// Name of the classpermission of the access level (`semanifest_write`).
    pub permissions: String,
}

#[derive(Debug, Serialize)]
pub struct Protection {
    /// Attribute of the domains allowed in: trusted ones and the granted ones.
    pub granted_attribute: String,
    pub granted: Vec<String>,
    /// Attribute of every other domain; the neverallow's subject.
    pub denied_attribute: String,
}

/// `search` on an unprotected ancestor's type, so a denial of a granted
/// domain can only ever land on the path itself.
#[derive(Debug, Serialize)]
pub struct Traversal {
    pub domain: String,
    pub target: String,
    /// The ancestor directories this rule opens, for the comment.
    pub via: Vec<String>,
    /// The paths it leads to.
    pub towards: Vec<String>,
}

/// A named type transition: `domain` creating the directory `name` in a
/// directory of `parent_type` gets `type_name`, so a service that
/// (re)creates a declared directory gets its declared type without a
/// relabel.
#[derive(Debug, Serialize, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NameTransition {
    pub parent_type: String,
    pub name: String,
    /// The object class: `dir` for declared paths, `file` for a host
    /// class's lock file.
    pub class: String,
    pub domain: String,
    pub type_name: String,
    /// The declared paths it serves, for the comment.
    pub paths: Vec<String>,
}

/// One `(parent type, name)` that declared paths of different types share:
/// a transition could only be right for one of them.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct NameConflict {
    pub parent_type: String,
    pub name: String,
    pub paths: Vec<String>,
}

/// Classpermission names for each access level, `semanifest_<level>`, as
/// the module defines them.
fn level_permissions(access: Access) -> Vec<String> {
    access
        .levels()
        .into_iter()
        .map(crate::access::standalone_name)
        .collect()
}

/// Escapes a normalised path so that libselinux's regex matches exactly it:
/// every PCRE metacharacter gets a backslash. Non-meta punctuation is left
/// alone because `\<`-style escapes mean different things to different
/// regex engines.
pub fn escape_regex(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 8);
    for c in path.chars() {
        if matches!(
            c,
            '.' | '^' | '$' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '\\'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The `filecon` regex covering a path and its whole subtree.
pub fn subtree_regex(path: &str) -> String {
    format!("{}(/.*)?", escape_regex(path))
}

pub fn plan(layout: &Layout, source: &str, description: Option<&str>) -> ModulePlan {
    let standalone = GrantNames {
        grants: &|class| class.standalone,
        set: &|name| format!("semanifest_{name}"),
        domain_type: &str::to_owned,
        every_domain: "domain",
    };
    let domains = layout
        .domains
        .iter()
        .enumerate()
        .map(|(index, d)| DomainPlan {
            key: d.key.clone(),
            type_name: d.type_name.clone(),
            declare: !d.in_base,
            workload: d.workload,
            agent: d.agent,
            mcs_agent: d.agent && d.mcs,
            trusted: d.trusted,
            transitions: d
                .transitions
                .iter()
                .map(|&i| layout.domain(i).type_name.clone())
                .collect(),
            grants: domain_grants(layout, index, &standalone),
        })
        .collect();

    // What every domain holds directly, per target type: traversal rules
    // below skip what a direct grant already covers.
    let mut direct: BTreeMap<(usize, &str), Access> = BTreeMap::new();
    for rule in &layout.paths {
        for (&domain, &access) in &rule.access {
            let entry = direct.entry((domain, rule.type_name.as_str())).or_default();
            *entry = entry.union(access);
        }
    }

    let mut seen_types: BTreeSet<&str> = BTreeSet::new();
    let mut protected_types: BTreeSet<&str> = BTreeSet::new();
    let mut tmpfs_types: BTreeSet<&str> = BTreeSet::new();
    let paths = layout
        .paths
        .iter()
        .map(|rule| {
            let first_of_type = seen_types.insert(&rule.type_name);
            let declare_type = first_of_type && !rule.type_in_base;
            let mut allows: Vec<Allow> = rule
                .access
                .iter()
                .flat_map(|(&domain, &access)| {
                    let domain = &layout.domain(domain).type_name;
                    level_permissions(access)
                        .into_iter()
                        .map(move |permissions| Allow {
                            domain: domain.clone(),
                            target: rule.type_name.clone(),
                            permissions,
                        })
                })
                .collect();
            // A type shared by several paths gets its rules once.
            if !first_of_type {
                allows.clear();
            }
            let protection =
                (rule.protected && protected_types.insert(&rule.type_name)).then(|| {
                    let mut granted: Vec<String> = vec!["semanifest_trusted".to_owned()];
                    granted.extend(
                        rule.access
                            .keys()
                            .map(|&d| layout.domain(d).type_name.clone()),
                    );
                    Protection {
                        granted_attribute: format!("{}_granted", rule.type_name),
                        granted,
                        denied_attribute: format!("{}_denied", rule.type_name),
                    }
                });
            PathPlan {
                path: rule.path.clone(),
                type_name: rule.type_name.clone(),
                declare_type,
                summary: summary(rule, layout),
                description: rule.description.clone(),
                filecon: subtree_regex(&rule.path),
                allows,
                protection,
                // Once per type, as the allows.
                tmpfs_context: rule.mount.tmpfs && tmpfs_types.insert(&rule.type_name),
            }
        })
        .collect();

    let (name_transitions, name_conflicts) = name_transitions(layout, &direct);
    ModulePlan {
        module: layout.module.clone(),
        layout_name: layout.name.clone(),
        source: source.to_owned(),
        description: description.map(str::to_owned),
        domains,
        paths,
        traversals: traversals(layout, &direct),
        name_transitions,
        name_conflicts,
    }
}

/// For every declared path whose parent directory has another type, a
/// named transition for each domain that may create entries in the parent
/// (`write` on its type) and each trusted domain. A domain without access
/// to the path's own type gets it too: its `mkdir` is then denied instead
/// of making the directory with the parent's type (a `/var/log/audit`
/// labelled `var_log_t` would be unprotected until the next relabel).
/// Paths whose parent the layout does not label (`/var` in `/`) get none.
fn name_transitions(
    layout: &Layout,
    direct: &BTreeMap<(usize, &str), Access>,
) -> (Vec<NameTransition>, Vec<NameConflict>) {
    // (parent type, name) → (type → paths)
    let mut wanted: BTreeMap<(&str, &str), BTreeMap<&str, Vec<&str>>> = BTreeMap::new();
    for rule in &layout.paths {
        let Some((parent, name)) = rule.path.rsplit_once('/') else {
            continue;
        };
        let Some(parent_rule) = layout.rule_for(if parent.is_empty() { "/" } else { parent })
        else {
            continue;
        };
        if parent_rule.type_name == rule.type_name {
            continue;
        }
        wanted
            .entry((parent_rule.type_name.as_str(), name))
            .or_default()
            .entry(rule.type_name.as_str())
            .or_default()
            .push(rule.path.as_str());
    }
    let mut transitions = Vec::new();
    let mut conflicts = Vec::new();
    for ((parent_type, name), types) in wanted {
        if types.len() > 1 {
            conflicts.push(NameConflict {
                parent_type: parent_type.to_owned(),
                name: name.to_owned(),
                paths: types.values().flatten().map(|p| (*p).to_owned()).collect(),
            });
            continue;
        }
        let Some((type_name, paths)) = types.into_iter().next() else {
            continue;
        };
        for (index, domain) in layout.domains.iter().enumerate() {
            let writes = direct
                .get(&(index, parent_type))
                .is_some_and(|access| access.write);
            if writes || domain.trusted {
                transitions.push(NameTransition {
                    parent_type: parent_type.to_owned(),
                    name: name.to_owned(),
                    class: "dir".to_owned(),
                    domain: domain.type_name.clone(),
                    type_name: type_name.to_owned(),
                    paths: paths.iter().map(|p| (*p).to_owned()).collect(),
                });
            }
        }
    }
    transitions.extend(host_name_transitions(layout, direct));
    transitions.sort();
    transitions.dedup();
    (transitions, conflicts)
}

/// The host classes' paths that lie directly in a declared path (the
/// runtime's directories and the iptables lock in `/var/run`) get their
/// base type from the name they are created under, by the domains that
/// may create entries there: `/run` is a tmpfs nobody relabels once the
/// runtime has started. A host path the layout declares itself is the
/// layout's.
fn host_name_transitions(
    layout: &Layout,
    direct: &BTreeMap<(usize, &str), Access>,
) -> Vec<NameTransition> {
    let mut transitions = Vec::new();
    for class in layout::model::host::HOST_CLASSES {
        let label = class.standalone.iter().find_map(|grant| match grant {
            Grant::Files(t) => Some(*t),
            Grant::Socket { socket, .. } => Some(*socket),
            _ => None,
        });
        let Some(label) = label else { continue };
        for host in class.paths {
            let object = match (host.scope, host.kind) {
                (Scope::Subtree, _) => "dir",
                (Scope::Exact, ObjectKind::File) => "file",
                _ => continue,
            };
            let Some((parent, name)) = host.path.rsplit_once('/') else {
                continue;
            };
            let Some(parent_rule) = layout.paths.iter().find(|rule| rule.path == parent) else {
                continue;
            };
            if layout.paths.iter().any(|rule| rule.path == host.path) {
                continue;
            }
            for (index, domain) in layout.domains.iter().enumerate() {
                let writes = direct
                    .get(&(index, parent_rule.type_name.as_str()))
                    .is_some_and(|access| access.write);
                if writes || domain.trusted {
                    transitions.push(NameTransition {
                        parent_type: parent_rule.type_name.clone(),
                        name: name.to_owned(),
                        class: object.to_owned(),
                        domain: domain.type_name.clone(),
                        type_name: label.to_owned(),
                        paths: vec![host.path.to_owned()],
                    });
                }
            }
        }
    }
    transitions
}

/// For every grant, `search` on the type of each unprotected ancestor
/// directory that the layout labels. A protected ancestor is skipped: its
/// neverallow wins, and the path is reached through a bind mount instead.
fn traversals(layout: &Layout, direct: &BTreeMap<(usize, &str), Access>) -> Vec<Traversal> {
    let mut needed: BTreeMap<(usize, String), (BTreeSet<String>, BTreeSet<String>)> =
        BTreeMap::new();
    for rule in &layout.paths {
        for &domain in rule.access.keys() {
            for ancestor in ancestors(&rule.path) {
                let Some(owner) = layout.rule_for(ancestor) else {
                    continue;
                };
                if owner.protected {
                    // Never opened by traversal; and nothing above it either,
                    // so the walk stops here.
                    break;
                }
                let held = direct
                    .get(&(domain, owner.type_name.as_str()))
                    .copied()
                    .unwrap_or_default();
                if held.search {
                    continue;
                }
                let entry = needed.entry((domain, owner.type_name.clone())).or_default();
                entry.0.insert(ancestor.to_owned());
                entry.1.insert(rule.path.clone());
            }
        }
    }
    needed
        .into_iter()
        .map(|((domain, target), (via, towards))| Traversal {
            domain: layout.domain(domain).type_name.clone(),
            target,
            via: via.into_iter().collect(),
            towards: towards.into_iter().collect(),
        })
        .collect()
}

/// What a domain holds beyond the layout's paths, in a target's names: its
/// capabilities, each host class it is granted (per the class's grants on
/// the target, at the granted level), and the sockets it connects to.
pub fn domain_grants(layout: &Layout, index: usize, names: &GrantNames<'_>) -> Vec<GrantGroup> {
    let domain = layout.domain(index);
    let me = (names.domain_type)(&domain.type_name);
    let allow = |target: &str, permissions: Permissions| DomainAllow {
        source: me.clone(),
        target: target.to_owned(),
        permissions,
    };
    let named = |set: &str| Permissions::Named {
        name: (names.set)(set),
    };
    let mut groups = Vec::new();
    if !domain.capabilities.is_empty() {
        groups.push(capability_group(domain, &me));
    }
    for grant in &domain.host {
        let class = grant.class;
        let mut allows = Vec::new();
        for item in (names.grants)(class) {
            match *item {
                Grant::Files(target) => {
                    for level in grant.access.names() {
                        allows.push(allow(target, named(level)));
                    }
                }
                Grant::Device(target, _) => {
                    let set = if grant.includes("write") {
                        "device_write"
                    } else {
                        "device_read"
                    };
                    allows.push(allow(target, named(set)));
                }
                Grant::Socket { socket, server } => {
                    allows.push(allow(socket, named("search")));
                    allows.push(allow(socket, named("connect")));
                    allows.push(allow(
                        server,
                        Permissions::class("unix_stream_socket", "connectto"),
                    ));
                }
                Grant::Processes => allows.push(allow(names.every_domain, named("processes"))),
                Grant::OnSelf { class, perms, from } => {
                    if grant.includes(from) {
                        allows.push(allow("self", Permissions::class(class, perms)));
                    }
                }
                Grant::Mount(target) => allows.push(allow(
                    target,
                    Permissions::class("filesystem", "mount remount unmount getattr relabelfrom"),
                )),
                Grant::MountContext(target) => allows.push(allow(
                    target,
                    Permissions::class("filesystem", "relabelto unmount getattr"),
                )),
                Grant::System { target, perms } => {
                    allows.push(allow(target, Permissions::class("system", perms)));
                }
            }
        }
        groups.push(GrantGroup {
            comment: format!(
                "host class {} ({}): {}",
                class.name,
                grant.access.names().join("+"),
                class.summary
            ),
            allows,
        });
    }
    if !domain.connect.is_empty() {
        groups.push(connect_group(layout, index, &me, names));
    }
    if let Some(group) = mount_point_group(layout, index, &me, names) {
        groups.push(group);
    }
    groups
}

/// The runtime's mount points: a domain that starts pods or agents may
/// mount on the types of every path those domains may be given as a
/// volume (the paths they hold, the unprotected directories they traverse
/// to them, their host classes' files, sockets and devices) and of the
/// paths it holds itself. A volume's own type is the mount point runc sets
/// the volume's propagation on. `mounton` opens, reads and writes nothing,
/// so a protected type the runtime holds (its lookup of kubelet's
/// directory) gains no access to its data; one it does not hold gets
/// nothing.
fn mount_point_group(
    layout: &Layout,
    index: usize,
    me: &str,
    names: &GrantNames<'_>,
) -> Option<GrantGroup> {
    let domain = layout.domain(index);
    let started: Vec<usize> = domain
        .transitions
        .iter()
        .copied()
        .filter(|&i| {
            let d = layout.domain(i);
            d.workload || d.agent
        })
        .collect();
    if started.is_empty() {
        return None;
    }
    let mut targets: BTreeSet<String> = BTreeSet::new();
    for rule in &layout.paths {
        if rule.access.contains_key(&index) {
            targets.insert(rule.type_name.clone());
        }
        if rule.protected || !started.iter().any(|d| rule.access.contains_key(d)) {
            continue;
        }
        targets.insert(rule.type_name.clone());
        for ancestor in ancestors(&rule.path) {
            let Some(owner) = layout.rule_for(ancestor) else {
                continue;
            };
            if owner.protected {
                break;
            }
            targets.insert(owner.type_name.clone());
        }
    }
    for &agent in &started {
        for grant in &layout.domain(agent).host {
            for item in (names.grants)(grant.class) {
                match *item {
                    Grant::Files(t) | Grant::Device(t, _) | Grant::Socket { socket: t, .. } => {
                        targets.insert(t.to_owned());
                    }
                    _ => {}
                }
            }
        }
    }
    let keys: Vec<&str> = started
        .iter()
        .map(|&i| layout.domain(i).key.as_str())
        .collect();
    Some(GrantGroup {
        comment: format!(
            "mount points for the volumes of {} (mounton: no data access)",
            keys.join(", ")
        ),
        allows: targets
            .into_iter()
            .map(|target| DomainAllow {
                source: me.to_owned(),
                target,
                permissions: Permissions::Named {
                    name: (names.set)("mountpoint"),
                },
            })
            .collect(),
    })
}

fn capability_group(domain: &Domain, me: &str) -> GrantGroup {
    let mut allows = Vec::new();
    let mut by_class: BTreeMap<_, Vec<&str>> = BTreeMap::new();
    for capability in &domain.capabilities {
        by_class
            .entry(capability.class)
            .or_default()
            .push(capability.name);
    }
    for (class, capabilities) in &by_class {
        for class_name in [class.class(), class.userns_class()] {
            allows.push(DomainAllow {
                source: me.to_owned(),
                target: "self".to_owned(),
                permissions: Permissions::class(class_name, &capabilities.join(" ")),
            });
        }
    }
    let names: Vec<&str> = domain.capabilities.iter().map(|c| c.name).collect();
    GrantGroup {
        comment: format!(
            "capabilities beyond a container's default set: {}",
            names.join(", ")
        ),
        allows,
    }
}

/// `connectto` on each server domain, and `connect` (write on socket
/// files) on the types of the paths where a server may make its sockets
/// (it writes there) and the client may only read: a socket is reached
/// through the paths granted.
fn connect_group(layout: &Layout, index: usize, me: &str, names: &GrantNames<'_>) -> GrantGroup {
    let domain = layout.domain(index);
    let mut allows: Vec<DomainAllow> = domain
        .connect
        .iter()
        .map(|&server| DomainAllow {
            source: me.to_owned(),
            target: (names.domain_type)(&layout.domain(server).type_name),
            permissions: Permissions::class("unix_stream_socket", "connectto"),
        })
        .collect();
    let mut socket_types: BTreeSet<&str> = BTreeSet::new();
    for rule in &layout.paths {
        let reads = rule
            .access
            .get(&index)
            .is_some_and(|access| access.read && !access.write);
        let served = domain
            .connect
            .iter()
            .any(|server| rule.access.get(server).is_some_and(|access| access.write));
        if reads && served {
            socket_types.insert(&rule.type_name);
        }
    }
    allows.extend(socket_types.into_iter().map(|target| DomainAllow {
        source: me.to_owned(),
        target: target.to_owned(),
        permissions: Permissions::Named {
            name: (names.set)("connect"),
        },
    }));
    let servers: Vec<&str> = domain
        .connect
        .iter()
        .map(|&i| layout.domain(i).key.as_str())
        .collect();
    GrantGroup {
        comment: format!(
            "connects to the unix sockets {} serves on the paths both may use",
            servers.join(", ")
        ),
        allows,
    }
}

/// One line that says what a path is: type, grants and flags.
fn summary(rule: &PathRule, layout: &Layout) -> String {
    let mut parts = Vec::new();
    for (&domain, access) in &rule.access {
        parts.push(format!(
            "{} {}",
            layout.domain(domain).key,
            access.names().join("+")
        ));
    }
    let mut flags = Vec::new();
    if rule.protected {
        flags.push("protected".to_owned());
    }
    if rule.host_path {
        flags.push("hostPath root".to_owned());
    }
    if rule.removable {
        flags.push("removable".to_owned());
    }
    if rule.mount.tmpfs {
        flags.push("tmpfs".to_owned());
    }
    if let Some(p) = rule.mount.propagation {
        flags.push(format!("propagation {}", p.as_str()));
    }
    for option in &rule.mount.options {
        flags.push(option.as_str().to_owned());
    }
    flags.push(rule.lifecycle.as_str().to_owned());
    let access = if parts.is_empty() {
        "no direct grants".to_owned()
    } else {
        parts.join(", ")
    };
    format!("{}; {}", access, flags.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_metacharacter() {
        assert_eq!(escape_regex("/var/lib/a.b+c"), r"/var/lib/a\.b\+c");
        assert_eq!(
            escape_regex("/x/(y)|[z]{1}$^*?\\"),
            r"/x/\(y\)\|\[z\]\{1\}\$\^\*\?\\"
        );
        assert_eq!(subtree_regex("/var/mnt"), "/var/mnt(/.*)?");
    }
}
