//! What the generated module says, decided in Rust: which types to declare,
//! which allow rules each path needs, which traversal rules the ancestors
//! need, and which neverallows prove the protections. The template only
//! prints this plan, so every decision here is unit-testable without CIL.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use layout::model::{ancestors, Access, Layout, PathRule};

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
    pub trusted: bool,
    /// Types of the domains this one may start.
    pub transitions: Vec<String>,
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
    let domains = layout
        .domains
        .iter()
        .map(|d| DomainPlan {
            key: d.key.clone(),
            type_name: d.type_name.clone(),
            declare: !d.in_base,
            workload: d.workload,
            trusted: d.trusted,
            transitions: d
                .transitions
                .iter()
                .map(|&i| layout.domain(i).type_name.clone())
                .collect(),
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
                    domain: domain.type_name.clone(),
                    type_name: type_name.to_owned(),
                    paths: paths.iter().map(|p| (*p).to_owned()).collect(),
                });
            }
        }
    }
    transitions.sort();
    transitions.dedup();
    (transitions, conflicts)
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
