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
                agent_changes(key, a, b, o, n, out);
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

/// What changes about a domain as an agent: the flag, MCS, host classes,
/// capabilities and connections. Each may change any rule of the domain's
/// type (the base's rules for agents and for MCS-separated domains too).
fn agent_changes(
    key: &str,
    a: &Domain,
    b: &Domain,
    o: &Side<'_>,
    n: &Side<'_>,
    out: &mut Vec<ManifestChange>,
) {
    let domain = DomainChange { key, a, b };
    agent_flags(&domain, out);
    host_classes(&domain, out);
    capabilities(&domain, out);
    connections(&domain, o, n, out);
}

/// One domain in both layouts.
struct DomainChange<'a> {
    key: &'a str,
    a: &'a Domain,
    b: &'a Domain,
}

impl DomainChange<'_> {
    /// A change of the domain that may touch any rule of either type.
    fn change(&self, kind: Kind, summary: String, before: String, after: String) -> ManifestChange {
        change(Category::Domain, kind, summary)
            .of_domain(self.key)
            .values(Some(before), Some(after))
            .pairs(
                [
                    either_side(&self.a.type_name),
                    either_side(&self.b.type_name),
                ]
                .concat(),
            )
    }
}

/// `agent:` and `mcs:` turned on or off (a workload is MCS-separated
/// whatever `mcs` says).
fn agent_flags(domain: &DomainChange<'_>, out: &mut Vec<ManifestChange>) {
    let DomainChange { key, a, b } = *domain;
    if a.agent != b.agent {
        let kind = if b.agent { Kind::Added } else { Kind::Removed };
        let verb = if b.agent { "becomes" } else { "is no longer" };
        out.push(domain.change(
            kind,
            format!("domain `{key}` {verb} an agent"),
            format!("agent: {}", a.agent),
            format!("agent: {}", b.agent),
        ));
    }
    if a.mcs != b.mcs && !(a.workload && b.workload) {
        let kind = if b.mcs { Kind::Added } else { Kind::Removed };
        out.push(
            domain
                .change(
                    kind,
                    format!(
                        "domain `{key}` {} MCS-separated",
                        if b.mcs { "becomes" } else { "is no longer" }
                    ),
                    format!("mcs: {}", a.mcs),
                    format!("mcs: {}", b.mcs),
                )
                .security((!b.mcs).then(|| format!("`{key}` may now reach every pod's files on its paths, whatever their categories"))),
        );
    }
}

/// `host:` grants, class by class; a new or wider grant of a class that
/// reaches past the labels is security-relevant.
fn host_classes(domain: &DomainChange<'_>, out: &mut Vec<ManifestChange>) {
    let DomainChange { key, a, b } = *domain;
    let host = |d: &Domain| -> BTreeMap<&'static str, Access> {
        d.host.iter().map(|g| (g.class.name, g.access)).collect()
    };
    let (before, after) = (host(a), host(b));
    for class in before.keys().chain(after.keys()).collect::<BTreeSet<_>>() {
        let (was, now) = (before.get(class).copied(), after.get(class).copied());
        if was == now {
            continue;
        }
        let kind = match (was, now) {
            (None, _) => Kind::Added,
            (_, None) => Kind::Removed,
            _ => Kind::Changed,
        };
        let security = b
            .host_grant(class)
            .filter(|g| {
                g.class.beyond_labels.is_some()
                    && now.is_some_and(|now| was.is_none_or(|was| now != was))
            })
            .map(|g| {
                format!(
                    "`{key}` is granted `{}`, which reaches past the file labels (docs/agents.md)",
                    g.class.name
                )
            });
        out.push(
            domain
                .change(
                    kind,
                    format!(
                        "host class `{class}` of `{key}`: {} → {}",
                        levels(was),
                        levels(now)
                    ),
                    levels(was),
                    levels(now),
                )
                .security(security),
        );
    }
}

/// `capabilities:` as one set; gaining any is security-relevant.
fn capabilities(domain: &DomainChange<'_>, out: &mut Vec<ManifestChange>) {
    let DomainChange { key, a, b } = *domain;
    let names =
        |d: &Domain| -> BTreeSet<&'static str> { d.capabilities.iter().map(|c| c.name).collect() };
    let (before, after) = (names(a), names(b));
    if before == after {
        return;
    }
    let list = |set: &BTreeSet<&str>| {
        if set.is_empty() {
            "none".to_owned()
        } else {
            set.iter().copied().collect::<Vec<_>>().join(", ")
        }
    };
    let added: Vec<&str> = after.difference(&before).copied().collect();
    out.push(
        domain
            .change(
                Kind::Changed,
                format!(
                    "capabilities of `{key}`: {} → {}",
                    list(&before),
                    list(&after)
                ),
                list(&before),
                list(&after),
            )
            .security((!added.is_empty()).then(|| format!("`{key}` gains {}", added.join(", ")))),
    );
}

/// `connect:`: the domains whose sockets the domain may connect to.
fn connections(
    domain: &DomainChange<'_>,
    o: &Side<'_>,
    n: &Side<'_>,
    out: &mut Vec<ManifestChange>,
) {
    let DomainChange { key, a, b } = *domain;
    let servers = |side: &Side<'_>, d: &Domain| -> BTreeSet<String> {
        d.connect
            .iter()
            .map(|&i| side.layout.domain(i).key.clone())
            .collect()
    };
    let (before, after) = (servers(o, a), servers(n, b));
    for server in after.difference(&before) {
        out.push(
            change(
                Category::Domain,
                Kind::Added,
                format!("`{key}` may connect to `{server}`'s sockets"),
            )
            .of_domain(key)
            .values(None, Some(server.clone()))
            .pairs(
                [
                    either_side(&b.type_name),
                    n.domain(server)
                        .map(|d| either_side(&d.type_name))
                        .unwrap_or_default(),
                ]
                .concat(),
            ),
        );
    }
    for server in before.difference(&after) {
        out.push(
            change(
                Category::Domain,
                Kind::Removed,
                format!("`{key}` may no longer connect to `{server}`'s sockets"),
            )
            .of_domain(key)
            .values(Some(server.clone()), None)
            .pairs(
                [
                    either_side(&a.type_name),
                    o.domain(server)
                        .map(|d| either_side(&d.type_name))
                        .unwrap_or_default(),
                ]
                .concat(),
            ),
        );
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
        let container = n.domain(from).filter(|d| d.is_container());
        let security = (container.is_some() || n.privileged(to)).then(|| {
            if let Some(d) = container {
                let kind = if d.workload { "workload" } else { "agent" };
                format!("{kind} domain `{from}` may now start processes in `{to}`")
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
        let (a, b) = (o.paths.get(path).copied(), n.paths.get(path).copied());
        toggles(path, a, b, out);
        let (Some(a), Some(b)) = (a, b) else { continue };
        lifecycle(path, a, b, out);
        mount(path, a, b, out);
        capacity(path, a.capacity.as_ref(), b.capacity.as_ref(), out);
    }
}

/// Protection, hostPath root and removable root of one path, turned on or
/// off (a path that appears or disappears turns its own).
fn toggles(path: &str, a: Option<&PathRule>, b: Option<&PathRule>, out: &mut Vec<ManifestChange>) {
    let flag = |rule: Option<&PathRule>, f: fn(&PathRule) -> bool| rule.is_some_and(f);
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
}

/// `lifecycle:` of a path in both layouts.
fn lifecycle(path: &str, a: &PathRule, b: &PathRule, out: &mut Vec<ManifestChange>) {
    if a.lifecycle == b.lifecycle {
        return;
    }
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

/// `mount:` of a path in both layouts: tmpfs, propagation, size, options.
fn mount(path: &str, a: &PathRule, b: &PathRule, out: &mut Vec<ManifestChange>) {
    let (was, is) = (&a.mount, &b.mount);
    if was.tmpfs != is.tmpfs {
        out.push(
            change(
                Category::Mount,
                if is.tmpfs { Kind::Added } else { Kind::Removed },
                format!(
                    "`{path}` {} a tmpfs",
                    if is.tmpfs { "is now" } else { "is no longer" }
                ),
            )
            .at_path(path)
            .values(
                Some(format!("tmpfs: {}", was.tmpfs)),
                Some(format!("tmpfs: {}", is.tmpfs)),
            )
            // The mount's type may associate with itself (templates/module.cil.j2).
            .pairs({
                let mounted = if is.tmpfs { b } else { a };
                vec![pair(&mounted.type_name, &mounted.type_name)]
            }),
        );
    }
    if was.propagation != is.propagation {
        let p =
            |p: Option<layout::model::Propagation>| p.map_or("unset", |p| p.as_str()).to_owned();
        out.push(
            change(
                Category::Mount,
                Kind::Changed,
                format!(
                    "`{path}` mount propagation {} → {}",
                    p(was.propagation),
                    p(is.propagation)
                ),
            )
            .at_path(path)
            .values(Some(p(was.propagation)), Some(p(is.propagation))),
        );
    }
    if was.size != is.size {
        let size = |s: &Option<String>| s.clone().unwrap_or_else(|| "unset".to_owned());
        out.push(
            change(
                Category::Mount,
                Kind::Changed,
                format!(
                    "`{path}` tmpfs size {} → {}",
                    size(&was.size),
                    size(&is.size)
                ),
            )
            .at_path(path)
            .values(Some(size(&was.size)), Some(size(&is.size))),
        );
    }
    if was.options != is.options {
        let options = |m: &layout::model::Mount| {
            let names: Vec<&str> = m.options.iter().map(|f| f.as_str()).collect();
            format!("[{}]", names.join(", "))
        };
        out.push(
            change(
                Category::Mount,
                Kind::Changed,
                format!("`{path}` mount options {} → {}", options(was), options(is)),
            )
            .at_path(path)
            .values(Some(options(was)), Some(options(is))),
        );
    }
}

/// `capacity:` of one path: added, removed, its limits or its project
/// ID. Quotas bound space, not access: never security-relevant.
fn capacity(
    path: &str,
    a: Option<&layout::model::Capacity>,
    b: Option<&layout::model::Capacity>,
    out: &mut Vec<ManifestChange>,
) {
    use layout::model::Capacity;
    let limit = |c: &Capacity| {
        c.limit
            .as_ref()
            .map_or("unlimited".to_owned(), |l| l.text.clone())
    };
    let inodes = |c: &Capacity| c.inodes.map_or("unlimited".to_owned(), |n| n.to_string());
    let whole = |c: &Capacity| {
        format!(
            "limit {}, inodes {}, project {}",
            limit(c),
            inodes(c),
            c.project
        )
    };
    match (a, b) {
        (None, None) => {}
        (None, Some(b)) => out.push(
            change(
                Category::Capacity,
                Kind::Added,
                format!("`{path}` now has a capacity ({})", whole(b)),
            )
            .at_path(path)
            .values(None, Some(whole(b))),
        ),
        (Some(a), None) => out.push(
            change(
                Category::Capacity,
                Kind::Removed,
                format!(
                    "`{path}` no longer has a capacity (was {}); apply leaves its project ID and limits as they are",
                    whole(a)
                ),
            )
            .at_path(path)
            .values(Some(whole(a)), None),
        ),
        (Some(a), Some(b)) => {
            let bytes = |c: &Capacity| c.limit.as_ref().map(|l| l.kib());
            if bytes(a) != bytes(b) {
                out.push(
                    change(
                        Category::Capacity,
                        Kind::Changed,
                        format!(
                            "`{path}` capacity limit {} → {} (at the next apply)",
                            limit(a),
                            limit(b)
                        ),
                    )
                    .at_path(path)
                    .values(Some(limit(a)), Some(limit(b))),
                );
            }
            if a.inodes != b.inodes {
                out.push(
                    change(
                        Category::Capacity,
                        Kind::Changed,
                        format!(
                            "`{path}` capacity inode limit {} → {} (at the next apply)",
                            inodes(a),
                            inodes(b)
                        ),
                    )
                    .at_path(path)
                    .values(Some(inodes(a)), Some(inodes(b))),
                );
            }
            if a.project != b.project {
                out.push(
                    change(
                        Category::Capacity,
                        Kind::Changed,
                        format!(
                            "`{path}` project ID {} → {}: apply tags the whole subtree again",
                            a.project, b.project
                        ),
                    )
                    .at_path(path)
                    .values(Some(a.project.to_string()), Some(b.project.to_string())),
                );
            }
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
