//! The manifest-level comparison: domains by key, paths by path, access per
//! (domain, path), traversal from the two policy plans, and the flags of
//! each path.

use std::collections::{BTreeMap, BTreeSet};

use super::{Category, Kind, ManifestChange};
use layout::model::{Access, Domain, Layout, PathRule};
use policy::plan;

const ANY: &str = "*";

fn levels(access: Option<Access>) -> String {
    match access {
        Some(access) if access != Access::default() => access.names().join("+"),
        _ => "none".to_owned(),
    }
}

fn pair(source: &str, target: &str) -> (String, String) {
    (source.to_owned(), target.to_owned())
}

/// Every rule that names `type_name` on either side: a type that appears,
/// disappears or joins an attribute (`domain`, `file_type`,
/// `semanifest_trusted`, …) gains or loses the base policy's attribute
/// rules too (sediff compares them expanded).
fn either_side(type_name: &str) -> Vec<(String, String)> {
    vec![pair(type_name, ANY), pair(ANY, type_name)]
}

struct Side<'a> {
    layout: &'a Layout,
    domains: BTreeMap<&'a str, (usize, &'a Domain)>,
    paths: BTreeMap<&'a str, &'a PathRule>,
}

impl<'a> Side<'a> {
    fn new(layout: &'a Layout) -> Self {
        Side {
            layout,
            domains: layout
                .domains
                .iter()
                .enumerate()
                .map(|(i, d)| (d.key.as_str(), (i, d)))
                .collect(),
            paths: layout.paths.iter().map(|r| (r.path.as_str(), r)).collect(),
        }
    }

    fn domain(&self, key: &str) -> Option<&'a Domain> {
        self.domains.get(key).map(|(_, d)| *d)
    }

    /// The rule that governs `path`: its own, or the nearest enclosing one.
    fn effective(&self, path: &str) -> Option<&'a PathRule> {
        self.layout.rule_for(path)
    }

    /// What domain `key` holds at `path`, through the rule governing it.
    fn access(&self, key: &str, path: &str) -> Option<Access> {
        let (index, _) = self.domains.get(key)?;
        self.effective(path)?.access.get(index).copied()
    }

    fn keys_at(&self, path: &str) -> BTreeSet<&'a str> {
        self.effective(path)
            .map(|rule| {
                rule.access
                    .keys()
                    .map(|&i| self.layout.domain(i).key.as_str())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The domain key of a domain type.
    fn key_of_type(&self, type_name: &str) -> Option<&'a str> {
        self.layout
            .domains
            .iter()
            .find(|d| d.type_name == type_name)
            .map(|d| d.key.as_str())
    }

    /// Whether the domain may touch protected data (trusted, or granted a
    /// protected path): what a workload must never reach.
    fn privileged(&self, key: &str) -> bool {
        let Some((index, domain)) = self.domains.get(key) else {
            return false;
        };
        domain.trusted
            || self
                .layout
                .paths
                .iter()
                .any(|r| r.protected && r.access.contains_key(index))
    }
}

fn change(category: Category, kind: Kind, summary: String) -> ManifestChange {
    ManifestChange {
        category,
        kind,
        path: None,
        domain: None,
        old: None,
        new: None,
        summary,
        security: None,
        policy_pairs: Vec::new(),
    }
}

impl ManifestChange {
    fn at_path(mut self, path: &str) -> Self {
        self.path = Some(path.to_owned());
        self
    }
    fn of_domain(mut self, key: &str) -> Self {
        self.domain = Some(key.to_owned());
        self
    }
    fn values(mut self, old: Option<String>, new: Option<String>) -> Self {
        self.old = old;
        self.new = new;
        self
    }
    fn security(mut self, why: Option<String>) -> Self {
        self.security = why;
        self
    }
    fn pairs(mut self, pairs: Vec<(String, String)>) -> Self {
        self.policy_pairs = pairs;
        self
    }
}

/// Every manifest-level change from `old` to `new`.
pub(crate) fn changes(old: &Layout, new: &Layout) -> Vec<ManifestChange> {
    let (o, n) = (Side::new(old), Side::new(new));
    let mut out = Vec::new();
    domains(&o, &n, &mut out);
    transitions(&o, &n, &mut out);
    paths(&o, &n, &mut out);
    access(&o, &n, &mut out);
    traversal(&o, &n, &mut out);
    flags(&o, &n, &mut out);
    node(old, new, &mut out);
    out.sort_by(|a, b| {
        (a.category, &a.path, &a.domain, a.kind).cmp(&(b.category, &b.path, &b.domain, b.kind))
    });
    out
}

fn domains(o: &Side<'_>, n: &Side<'_>, out: &mut Vec<ManifestChange>) {
    let keys: BTreeSet<&str> = o.domains.keys().chain(n.domains.keys()).copied().collect();
    for key in keys {
        match (o.domain(key), n.domain(key)) {
            (None, Some(d)) => out.push(
                change(
                    Category::Domain,
                    Kind::Added,
                    format!("domain `{key}` ({}) added", d.type_name),
                )
                .of_domain(key)
                .values(None, Some(d.type_name.clone()))
                .security(d.trusted.then(|| {
                    format!("new domain `{key}` is trusted: it may touch every path, protected ones included")
                }))
                .pairs(either_side(&d.type_name)),
            ),
            (Some(d), None) => out.push(
                change(
                    Category::Domain,
                    Kind::Removed,
                    format!("domain `{key}` ({}) removed", d.type_name),
                )
                .of_domain(key)
                .values(Some(d.type_name.clone()), None)
                .pairs(either_side(&d.type_name)),
            ),
            (Some(a), Some(b)) => {
                if a.type_name != b.type_name {
                    out.push(
                        change(
                            Category::Domain,
                            Kind::Changed,
                            format!("domain `{key}` runs as {} instead of {}", b.type_name, a.type_name),
                        )
                        .of_domain(key)
                        .values(Some(a.type_name.clone()), Some(b.type_name.clone()))
                        .security(Some(format!(
                            "every grant of `{key}` now goes to processes of {}",
                            b.type_name
                        )))
                        .pairs([either_side(&a.type_name), either_side(&b.type_name)].concat()),
                    );
                }
                if a.trusted != b.trusted {
                    let kind = if b.trusted { Kind::Added } else { Kind::Removed };
                    out.push(
                        change(
                            Category::Domain,
                            kind,
                            format!(
                                "domain `{key}` {} trusted",
                                if b.trusted { "becomes" } else { "is no longer" }
                            ),
                        )
                        .of_domain(key)
                        .values(Some(format!("trusted: {}", a.trusted)), Some(format!("trusted: {}", b.trusted)))
                        .security(b.trusted.then(|| {
                            format!("`{key}` may now touch every path, protected ones included")
                        }))
                        .pairs(either_side(&b.type_name)),
                    );
                }
                if a.workload != b.workload {
                    let kind = if b.workload { Kind::Added } else { Kind::Removed };
                    out.push(
                        change(
                            Category::Domain,
                            kind,
                            format!(
                                "domain `{key}` {} a workload",
                                if b.workload { "becomes" } else { "is no longer" }
                            ),
                        )
                        .of_domain(key)
                        .values(Some(format!("workload: {}", a.workload)), Some(format!("workload: {}", b.workload)))
                        .security((!b.workload).then(|| {
                            format!("`{key}` loses the workload guarantees: it may be granted protected paths and trusted")
                        }))
                        .pairs(either_side(&b.type_name)),
                    );
                }
            }
            (None, None) => {}
        }
    }
}

fn transitions(o: &Side<'_>, n: &Side<'_>, out: &mut Vec<ManifestChange>) {
    let edges = |side: &Side<'_>| -> BTreeSet<(String, String)> {
        side.layout
            .domains
            .iter()
            .flat_map(|d| {
                d.transitions
                    .iter()
                    .map(|&t| (d.key.clone(), side.layout.domain(t).key.clone()))
            })
            .collect()
    };
    let (before, after) = (edges(o), edges(n));
    let type_of = |side: &Side<'_>, key: &str| side.domain(key).map(|d| d.type_name.clone());
    for (from, to) in after.difference(&before) {
        let workload = n.domain(from).is_some_and(|d| d.workload);
        let security = (workload || n.privileged(to)).then(|| {
            if workload {
                format!("workload domain `{from}` may now start processes in `{to}`")
            } else {
                format!(
                    "`{from}` may now start processes in `{to}`, which may touch protected data"
                )
            }
        });
        out.push(
            change(
                Category::Transition,
                Kind::Added,
                format!("`{from}` may start `{to}`"),
            )
            .of_domain(from)
            .values(None, Some(to.clone()))
            .security(security)
            .pairs(vec![(
                type_of(n, from).unwrap_or_default(),
                type_of(n, to).unwrap_or_default(),
            )]),
        );
    }
    for (from, to) in before.difference(&after) {
        out.push(
            change(
                Category::Transition,
                Kind::Removed,
                format!("`{from}` may no longer start `{to}`"),
            )
            .of_domain(from)
            .values(Some(to.clone()), None)
            .pairs(vec![(
                type_of(o, from).unwrap_or_default(),
                type_of(o, to).unwrap_or_default(),
            )]),
        );
    }
}

fn paths(o: &Side<'_>, n: &Side<'_>, out: &mut Vec<ManifestChange>) {
    let all: BTreeSet<&str> = o.paths.keys().chain(n.paths.keys()).copied().collect();
    for path in all {
        match (o.paths.get(path), n.paths.get(path)) {
            (None, Some(rule)) => out.push(
                change(
                    Category::Path,
                    Kind::Added,
                    format!("`{path}` added as {}", rule.type_name),
                )
                .at_path(path)
                .values(None, Some(rule.type_name.clone()))
                .pairs(either_side(&rule.type_name)),
            ),
            (Some(rule), None) => out.push(
                change(
                    Category::Path,
                    Kind::Removed,
                    format!(
                        "`{path}` ({}) removed; its subtree falls to the rule above it",
                        rule.type_name
                    ),
                )
                .at_path(path)
                .values(Some(rule.type_name.clone()), None)
                .pairs(either_side(&rule.type_name)),
            ),
            (Some(a), Some(b)) => {
                if a.type_name != b.type_name {
                    out.push(
                        change(
                            Category::Path,
                            Kind::Changed,
                            format!(
                                "`{path}` is labelled {} instead of {}",
                                b.type_name, a.type_name
                            ),
                        )
                        .at_path(path)
                        .values(Some(a.type_name.clone()), Some(b.type_name.clone()))
                        .pairs([either_side(&a.type_name), either_side(&b.type_name)].concat()),
                    );
                }
                let mode = |m: Option<u32>| m.map(|m| format!("{m:04o}"));
                if a.mode != b.mode {
                    out.push(
                        change(
                            Category::Path,
                            Kind::Changed,
                            format!(
                                "`{path}` mode {} → {}",
                                mode(a.mode).unwrap_or("unset".into()),
                                mode(b.mode).unwrap_or("unset".into())
                            ),
                        )
                        .at_path(path)
                        .values(mode(a.mode), mode(b.mode)),
                    );
                }
                if a.owner != b.owner {
                    let owner = |o: &Option<layout::model::Owner>| {
                        o.as_ref().map(|o| match o {
                            layout::model::Owner::Name(n) => n.clone(),
                            layout::model::Owner::Ids { uid, gid } => format!("{uid}:{gid}"),
                        })
                    };
                    out.push(
                        change(
                            Category::Path,
                            Kind::Changed,
                            format!(
                                "`{path}` owner {} → {}",
                                owner(&a.owner).unwrap_or("unset".into()),
                                owner(&b.owner).unwrap_or("unset".into())
                            ),
                        )
                        .at_path(path)
                        .values(owner(&a.owner), owner(&b.owner)),
                    );
                }
            }
            (None, None) => {}
        }
    }
}

/// Access per (domain, path) through the rule that governs the path on
/// each side: a new path is compared with the rule that covered it before,
/// a removed one with the rule its subtree falls to.
fn access(o: &Side<'_>, n: &Side<'_>, out: &mut Vec<ManifestChange>) {
    let all: BTreeSet<&str> = o.paths.keys().chain(n.paths.keys()).copied().collect();
    for path in all {
        let keys: BTreeSet<&str> = o.keys_at(path).into_iter().chain(n.keys_at(path)).collect();
        for key in keys {
            let (before, after) = (o.access(key, path), n.access(key, path));
            let (b, a) = (before.unwrap_or_default(), after.unwrap_or_default());
            if b == a {
                continue;
            }
            let gains = a.union(b) != b;
            let kind = match (before.is_some(), after.is_some()) {
                (false, _) => Kind::Granted,
                (_, false) => Kind::Revoked,
                _ if a.union(b) == a => Kind::Widened,
                _ if a.union(b) == b => Kind::Narrowed,
                _ => Kind::Changed,
            };
            let workload = n.domain(key).is_some_and(|d| d.workload);
            let protected = n.effective(path).is_some_and(|r| r.protected);
            let security = if gains && workload {
                Some(format!(
                    "workload domain `{key}` gains {} on `{path}`",
                    levels(Some(a))
                ))
            } else if gains && protected {
                Some(format!(
                    "`{key}` gains {} on protected `{path}`",
                    levels(Some(a))
                ))
            } else {
                None
            };
            let verb = match kind {
                Kind::Granted => "granted",
                Kind::Revoked => "revoked",
                Kind::Widened => "widened",
                Kind::Narrowed => "narrowed",
                _ => "changed",
            };
            let mut pairs = Vec::new();
            for side in [o, n] {
                if let (Some(d), Some(r)) = (side.domain(key), side.effective(path)) {
                    pairs.push(pair(&d.type_name, &r.type_name));
                }
            }
            out.push(
                change(
                    Category::Access,
                    kind,
                    format!(
                        "`{key}` on `{path}`: {verb}, {} → {}",
                        levels(before),
                        levels(after)
                    ),
                )
                .at_path(path)
                .of_domain(key)
                .values(Some(levels(before)), Some(levels(after)))
                .security(security)
                .pairs(pairs),
            );
        }
    }
}

/// `search` on ancestors' types: the same rules `policy::plan` generates,
/// compared as (domain type, ancestor type) and reported in manifest terms.
fn traversal(o: &Side<'_>, n: &Side<'_>, out: &mut Vec<ManifestChange>) {
    type Traversals = BTreeMap<(String, String), (Vec<String>, Vec<String>)>;
    let rules = |side: &Side<'_>| -> Traversals {
        plan::plan(side.layout, "", None)
            .traversals
            .into_iter()
            .map(|t| ((t.domain, t.target), (t.via, t.towards)))
            .collect()
    };
    let (before, after) = (rules(o), rules(n));
    for ((domain, target), (via, towards)) in &after {
        if before.contains_key(&(domain.clone(), target.clone())) {
            continue;
        }
        let key = n.key_of_type(domain).unwrap_or(domain);
        let workload = n.domain(key).is_some_and(|d| d.workload);
        out.push(
            change(
                Category::Traversal,
                Kind::Granted,
                format!(
                    "`{key}` may now search {} ({target}) on its way to {}",
                    via.join(", "),
                    towards.join(", ")
                ),
            )
            .at_path(&via[0])
            .of_domain(key)
            .values(Some("none".into()), Some("search".into()))
            .security(workload.then(|| {
                format!(
                    "workload domain `{key}` may now look up names in {}",
                    via.join(", ")
                )
            }))
            .pairs(vec![pair(domain, target)]),
        );
    }
    for ((domain, target), (via, _)) in &before {
        if after.contains_key(&(domain.clone(), target.clone())) {
            continue;
        }
        let key = o.key_of_type(domain).unwrap_or(domain);
        out.push(
            change(
                Category::Traversal,
                Kind::Revoked,
                format!("`{key}` no longer searches {} ({target})", via.join(", ")),
            )
            .at_path(&via[0])
            .of_domain(key)
            .values(Some("search".into()), Some("none".into()))
            .pairs(vec![pair(domain, target)]),
        );
    }
}

/// A flag of a path: its category, how to read it, how to name it.
type Toggle = (Category, fn(&PathRule) -> bool, &'static str);

/// Protection, hostPath and removable roots, lifecycle and mount; a path
/// that appears or disappears counts with its flags.
fn flags(o: &Side<'_>, n: &Side<'_>, out: &mut Vec<ManifestChange>) {
    let all: BTreeSet<&str> = o.paths.keys().chain(n.paths.keys()).copied().collect();
    for path in all {
        let (a, b) = (o.paths.get(path), n.paths.get(path));
        let flag = |rule: Option<&&PathRule>, f: fn(&PathRule) -> bool| rule.is_some_and(|r| f(r));
        let toggles: [Toggle; 3] = [
            (Category::Protection, |r| r.protected, "protected"),
            (Category::HostPathRoot, |r| r.host_path, "a hostPath root"),
            (Category::RemovableRoot, |r| r.removable, "a removable root"),
        ];
        for (category, get, what) in toggles {
            let (was, is) = (flag(a, get), flag(b, get));
            if was == is {
                continue;
            }
            let kind = if is { Kind::Added } else { Kind::Removed };
            let security = match (category, is) {
                (Category::Protection, false) => Some(format!(
                    "`{path}` loses its protection: nothing proves any more that only its granted domains reach it"
                )),
                (Category::HostPathRoot, true) => Some(format!("pods may now mount `{path}` and below as hostPath volumes")),
                (Category::RemovableRoot, true) => Some(format!("node cleanup may now delete everything below `{path}`")),
                _ => None,
            };
            out.push(
                change(
                    category,
                    kind,
                    format!(
                        "`{path}` {} {what}",
                        if is { "is now" } else { "is no longer" }
                    ),
                )
                .at_path(path)
                .values(Some(was.to_string()), Some(is.to_string()))
                .security(security),
            );
        }
        let (Some(a), Some(b)) = (a, b) else { continue };
        if a.lifecycle != b.lifecycle {
            out.push(
                change(
                    Category::Lifecycle,
                    Kind::Changed,
                    format!(
                        "`{path}` lifecycle {} → {}",
                        a.lifecycle.as_str(),
                        b.lifecycle.as_str()
                    ),
                )
                .at_path(path)
                .values(
                    Some(a.lifecycle.as_str().into()),
                    Some(b.lifecycle.as_str().into()),
                ),
            );
        }
        if a.mount.tmpfs != b.mount.tmpfs {
            out.push(
                change(
                    Category::Mount,
                    if b.mount.tmpfs {
                        Kind::Added
                    } else {
                        Kind::Removed
                    },
                    format!(
                        "`{path}` {} a tmpfs",
                        if b.mount.tmpfs {
                            "is now"
                        } else {
                            "is no longer"
                        }
                    ),
                )
                .at_path(path)
                .values(
                    Some(format!("tmpfs: {}", a.mount.tmpfs)),
                    Some(format!("tmpfs: {}", b.mount.tmpfs)),
                )
                // The mount's type may associate with itself (templates/module.cil.j2).
                .pairs({
                    let mounted = if b.mount.tmpfs { b } else { a };
                    vec![pair(&mounted.type_name, &mounted.type_name)]
                }),
            );
        }
        if a.mount.propagation != b.mount.propagation {
            let p = |p: Option<layout::model::Propagation>| {
                p.map_or("unset", |p| p.as_str()).to_owned()
            };
            out.push(
                change(
                    Category::Mount,
                    Kind::Changed,
                    format!(
                        "`{path}` mount propagation {} → {}",
                        p(a.mount.propagation),
                        p(b.mount.propagation)
                    ),
                )
                .at_path(path)
                .values(Some(p(a.mount.propagation)), Some(p(b.mount.propagation))),
            );
        }
        if a.mount.size != b.mount.size {
            let size = |s: &Option<String>| s.clone().unwrap_or_else(|| "unset".to_owned());
            out.push(
                change(
                    Category::Mount,
                    Kind::Changed,
                    format!(
                        "`{path}` tmpfs size {} → {}",
                        size(&a.mount.size),
                        size(&b.mount.size)
                    ),
                )
                .at_path(path)
                .values(Some(size(&a.mount.size)), Some(size(&b.mount.size))),
            );
        }
    }
}

/// `spec.node`: kubens and the runtime units the boot units order after
/// the layout. How a node boots, not who may touch what: never
/// security-relevant.
fn node(o: &Layout, n: &Layout, out: &mut Vec<ManifestChange>) {
    let (a, b) = (&o.node, &n.node);
    if a.kubens != b.kubens {
        out.push(
            change(
                Category::Node,
                if b.kubens { Kind::Added } else { Kind::Removed },
                format!(
                    "the runtime units {} in their own mount namespace (kubens)",
                    if b.kubens {
                        "now start"
                    } else {
                        "no longer start"
                    }
                ),
            )
            .values(
                Some(format!("kubens: {}", a.kubens)),
                Some(format!("kubens: {}", b.kubens)),
            ),
        );
    }
    for unit in &a.runtime {
        match b.runtime.iter().find(|u| u.unit == unit.unit) {
            None => out.push(
                change(
                    Category::Node,
                    Kind::Removed,
                    format!("`{}` is no longer a runtime unit", unit.unit),
                )
                .values(Some(unit.unit.clone()), None),
            ),
            Some(new) if new.exec != unit.exec => out.push(
                change(
                    Category::Node,
                    Kind::Changed,
                    format!("`{}` runs another command", unit.unit),
                )
                .values(unit.exec.clone(), new.exec.clone()),
            ),
            Some(_) => {}
        }
    }
    for unit in &b.runtime {
        if !a.runtime.iter().any(|u| u.unit == unit.unit) {
            out.push(
                change(
                    Category::Node,
                    Kind::Added,
                    format!("`{}` is now a runtime unit", unit.unit),
                )
                .values(None, Some(unit.unit.clone())),
            );
        }
    }
}
