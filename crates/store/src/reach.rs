//! Who can still reach a protected type once the module is in.
//!
//! On a distribution, "protected" means no workload domain and nothing a
//! workload can transition to (secilc proves that). Everything else the
//! store lets in — unconfined domains, backup tools, the package manager —
//! is by the store's design, and is shown, never hidden: every domain with
//! any permission on the type, grouped by the attribute of the rule that
//! grants it (`files_unconfined_type`, `file_type`, …). Read from the
//! predicted binary with `sesearch`, independently of our own CIL.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::facts::{Facts, FILE_CLASSES};
use super::StoreError;
use policy::setools::{self, allow_lines};

/// Everything that reaches one protected type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reach {
    pub type_name: String,
    /// The layout paths labelled with it.
    pub paths: Vec<String>,
    /// Domains the layout grants it (expected; not listed in groups).
    pub granted: Vec<String>,
    /// Workload-set domains that may traverse its directories (`dir
    /// getattr open search`, all a protection leaves them), with the rule.
    pub workload_traversal: Vec<String>,
    pub workload_traversal_rules: Vec<String>,
    /// Every other domain, grouped by what grants it.
    pub groups: Vec<ReachGroup>,
    /// Distinct domains over all groups.
    pub domains: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReachGroup {
    /// The attribute that grants it: the rule's source attribute, its
    /// target attribute, or both as `SOURCE → TARGET` (for a rule naming
    /// types only, the source type).
    pub via: String,
    pub access: ReachAccess,
    pub domains: Vec<String>,
    /// The rules, as sesearch prints them (with the boolean for conditional ones).
    pub rules: Vec<String>,
}

const MODIFY: &[&str] = &[
    "write",
    "append",
    "create",
    "unlink",
    "link",
    "rename",
    "setattr",
    "add_name",
    "remove_name",
    "rmdir",
    "reparent",
    "relabelfrom",
    "relabelto",
    "mounton",
    "execmod",
];
const READ: &[&str] = &["read", "execute", "map", "execute_no_trans", "entrypoint"];

/// What a group's rules let it do to the type, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReachAccess {
    /// Attributes only (`getattr`, `search`, …).
    Metadata,
    /// May read content.
    Read,
    /// May modify.
    Write,
}

impl std::fmt::Display for ReachAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReachAccess::Metadata => "metadata",
            ReachAccess::Read => "read",
            ReachAccess::Write => "write",
        })
    }
}

fn strength(perms: &BTreeSet<String>) -> ReachAccess {
    if perms.iter().any(|p| MODIFY.contains(&p.as_str())) {
        ReachAccess::Write
    } else if perms.iter().any(|p| READ.contains(&p.as_str())) {
        ReachAccess::Read
    } else {
        ReachAccess::Metadata
    }
}

/// What the report needs to know about one protected type.
pub(crate) struct Protected<'a> {
    pub type_name: &'a str,
    pub paths: Vec<String>,
    /// Store types the layout grants it.
    pub granted: BTreeSet<String>,
}

/// The `sesearch` query for every allow rule on a file class whose target
/// is one of `types` or an attribute holding one (a single run for all).
pub(crate) fn query(policy: &Path, types: &[&str]) -> Result<String, StoreError> {
    let classes = FILE_CLASSES.join(",");
    let names: Vec<String> = types.iter().map(|t| regex_syntax::escape(t)).collect();
    let pattern = format!("^({})$", names.join("|"));
    Ok(setools::run(
        "sesearch",
        &["-A", "-rt", "-t", &pattern, "-c", &classes],
        policy,
    )?)
}

/// Sorts the rules of [`query`]'s output out per protected type.
/// `attributes` are the predicted policy's.
pub(crate) fn reach(
    rules_text: &str,
    attributes: &Facts,
    workload_set: &BTreeSet<String>,
    protected: &[Protected<'_>],
) -> Vec<Reach> {
    let rules = allow_lines(rules_text);
    let mut reaches = Vec::new();
    for item in protected {
        let mut groups: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>, ReachAccess)> =
            BTreeMap::new();
        let mut traversal: BTreeSet<String> = BTreeSet::new();
        let mut traversal_rules: BTreeSet<String> = BTreeSet::new();
        let mut everyone: BTreeSet<String> = BTreeSet::new();
        let covers = |target: &str| {
            target == item.type_name
                || attributes
                    .attributes
                    .get(target)
                    .is_some_and(|members| members.contains(item.type_name))
        };
        for line in rules.iter().filter(|line| covers(&line.target)) {
            let sources = attributes.expand(&line.source);
            let via = match (
                attributes.has_attribute(&line.source),
                attributes.has_attribute(&line.target),
            ) {
                (true, true) => format!("{} → {}", line.source, line.target),
                (true, false) => line.source.clone(),
                (false, true) => line.target.clone(),
                (false, false) => line.source.clone(),
            };
            let access = strength(&line.perms);
            for domain in sources {
                if item.granted.contains(&domain) {
                    continue;
                }
                if workload_set.contains(&domain) {
                    traversal.insert(domain);
                    traversal_rules.insert(line.text.clone());
                    continue;
                }
                everyone.insert(domain.clone());
                let entry = groups
                    .entry(via.clone())
                    .or_insert_with(|| (BTreeSet::new(), BTreeSet::new(), ReachAccess::Metadata));
                entry.0.insert(domain);
                entry.1.insert(line.text.clone());
                entry.2 = entry.2.max(access);
            }
        }
        let mut groups: Vec<ReachGroup> = groups
            .into_iter()
            .map(|(via, (domains, rules, access))| ReachGroup {
                via,
                access,
                domains: domains.into_iter().collect(),
                rules: rules.into_iter().collect(),
            })
            .collect();
        // Widest first, then strongest, then by name.
        groups.sort_by(|a, b| {
            b.domains
                .len()
                .cmp(&a.domains.len())
                .then(b.access.cmp(&a.access))
                .then(a.via.cmp(&b.via))
        });
        reaches.push(Reach {
            type_name: item.type_name.to_owned(),
            paths: item.paths.clone(),
            granted: item.granted.iter().cloned().collect(),
            workload_traversal: traversal.into_iter().collect(),
            workload_traversal_rules: traversal_rules.into_iter().collect(),
            domains: everyone.len(),
            groups,
        });
    }
    reaches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_strength() {
        let set = |perms: &[&str]| {
            perms
                .iter()
                .map(|p| (*p).to_owned())
                .collect::<BTreeSet<_>>()
        };
        assert_eq!(
            strength(&set(&["getattr", "open", "search"])),
            ReachAccess::Metadata
        );
        assert_eq!(strength(&set(&["getattr", "read"])), ReachAccess::Read);
        assert_eq!(strength(&set(&["read", "relabelto"])), ReachAccess::Write);
    }
}
