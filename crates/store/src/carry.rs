//! Store access on re-typed paths. A layout path given a new type takes
//! its files from the store's old types (`/var/log/audit` was
//! `auditd_log_t`), and every store rule on an old type stops applying.
//! So nothing is lost silently:
//!
//! - below an unprotected path, every store domain keeps what it had: the
//!   module copies each store rule on an old type to the new type (with
//!   its condition), unless the new type gets it anyway through the file
//!   type attributes it holds;
//! - below a protected path, only the path's store owners (`storeOwners`)
//!   keep theirs; every other domain that loses access is named, read
//!   back from the predicted binary (never from our own CIL).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::conditions::Condition;
use super::facts::Facts;
use super::grade::Grade;
use layout::model::Layout;
use policy::setools::AllowLine;
use selabel::{FileContexts, FileKind};

use super::filecons::Probe;

/// One new type of the layout and what it replaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Retyped {
    pub type_name: String,
    pub paths: Vec<String>,
    /// The types the store gave the paths' keys before.
    pub old_types: BTreeSet<String>,
    pub protected: bool,
    /// Store domains that keep their access on a protected type.
    pub owners: Vec<String>,
}

/// The new types of `layout` (not `adopted`) and the store types their
/// probe keys had in the stock file contexts: the path as a directory,
/// and every kind of file below it.
pub fn retyped(
    layout: &Layout,
    adopted: &BTreeSet<String>,
    probes: &[Probe],
    stock: &FileContexts,
) -> Vec<Retyped> {
    let mut by_type: BTreeMap<&str, Retyped> = BTreeMap::new();
    for rule in layout
        .paths
        .iter()
        .filter(|r| !adopted.contains(&r.type_name))
    {
        let entry = by_type.entry(&rule.type_name).or_insert_with(|| Retyped {
            type_name: rule.type_name.clone(),
            paths: Vec::new(),
            old_types: BTreeSet::new(),
            protected: rule.protected,
            owners: rule
                .store_owners
                .iter()
                .map(|o| o.type_name.clone())
                .collect(),
        });
        entry.paths.push(rule.path.clone());
        for probe in probes.iter().filter(|p| p.path == rule.path) {
            // A declared path is a directory; below it, anything.
            let kinds: &[FileKind] = if probe.key == rule.path {
                &[FileKind::Dir]
            } else {
                &probe.kinds
            };
            for &kind in kinds {
                let Some(context) = stock.lookup(probe.key.as_bytes(), kind) else {
                    continue;
                };
                if let Some(old) = context.split(':').nth(2) {
                    if old != rule.type_name {
                        entry.old_types.insert(old.to_owned());
                    }
                }
            }
        }
    }
    by_type.into_values().collect()
}

/// A store rule copied to a new type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CarriedRule {
    /// The store rule's source (a type or an attribute), or the owner.
    pub source: String,
    pub target: String,
    pub class: String,
    pub perms: BTreeSet<String>,
    pub condition: Option<Condition>,
}

/// A store rule that cannot be copied (its condition is not one setools
/// prints unambiguously).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Uncarried {
    pub type_name: String,
    pub rule: String,
    pub why: String,
}

/// What the module copies.
#[derive(Debug, Clone, Default)]
pub struct Carried {
    pub rules: Vec<CarriedRule>,
    pub uncarried: Vec<Uncarried>,
}

/// The store rules (from [`super::reach::rules_on`] on the stock policy) that
/// apply to `old` and not to a type holding `new_attributes`.
fn lost_rules<'a>(
    rules: &'a [AllowLine],
    facts: &'a Facts,
    old: &'a BTreeSet<String>,
    new_attributes: &'a [&str],
) -> impl Iterator<Item = &'a AllowLine> + 'a {
    rules.iter().filter(move |rule| {
        let covers_old = old.contains(&rule.target)
            || facts
                .attributes
                .get(&rule.target)
                .is_some_and(|members| members.iter().any(|m| old.contains(m)));
        covers_old && !new_attributes.contains(&rule.target.as_str())
    })
}

fn condition_of(rule: &AllowLine) -> Option<Condition> {
    rule.condition
        .as_deref()
        .map(|expression| Condition::new(expression, rule.when))
}

/// The rules the module copies for every re-typed path: all of them below
/// an unprotected path, the owners' below a protected one.
/// `new_attributes`: the attributes every new type holds.
pub fn carry(
    retyped: &[Retyped],
    stock_rules: &[AllowLine],
    facts: &Facts,
    new_attributes: &[&str],
) -> Carried {
    let mut merged: BTreeMap<(String, String, String, Option<Condition>), BTreeSet<String>> =
        BTreeMap::new();
    let mut uncarried = Vec::new();
    for item in retyped {
        for rule in lost_rules(stock_rules, facts, &item.old_types, new_attributes) {
            let condition = condition_of(rule);
            if condition.as_ref().is_some_and(|c| c.cil().is_none()) {
                uncarried.push(Uncarried {
                    type_name: item.type_name.clone(),
                    rule: rule.text.clone(),
                    why: "its condition mixes operators that setools prints without the parentheses they need"
                        .to_owned(),
                });
                continue;
            }
            let sources: Vec<String> = if item.protected {
                let covered = facts.expand(&rule.source);
                item.owners
                    .iter()
                    .filter(|owner| covered.contains(*owner))
                    .cloned()
                    .collect()
            } else {
                vec![rule.source.clone()]
            };
            for source in sources {
                merged
                    .entry((
                        source,
                        item.type_name.clone(),
                        rule.class.clone(),
                        condition.clone(),
                    ))
                    .or_default()
                    .extend(rule.perms.iter().cloned());
            }
        }
    }
    Carried {
        rules: merged
            .into_iter()
            .map(|((source, target, class, condition), perms)| CarriedRule {
                source,
                target,
                class,
                perms,
                condition,
            })
            .collect(),
        uncarried,
    }
}

/// Store domains that lost access on one re-typed type, by the store rule
/// that gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Losses {
    pub type_name: String,
    pub paths: Vec<String>,
    pub old_types: Vec<String>,
    pub protected: bool,
    /// The store owners that keep their access.
    pub owners: Vec<String>,
    /// Store rules copied to the type (count).
    pub carried_rules: usize,
    pub groups: Vec<LossGroup>,
    /// Distinct domains over all groups.
    pub domains: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LossGroup {
    /// The store rule's source: the attribute or type that granted it.
    pub via: String,
    /// The old type or attribute the rule targeted.
    pub on: String,
    pub condition: Option<Condition>,
    pub grade: Grade,
    /// Class → the permissions lost.
    pub permissions: BTreeMap<String, BTreeSet<String>>,
    pub domains: Vec<String>,
    /// How many of `domains` are in the workload set.
    pub workloads: usize,
    /// Why it was not carried, when it could not be.
    pub uncarried: Option<String>,
}

/// What the predicted binary gives each domain on one type: (domain,
/// class) → permissions, by condition (`None`: unconditional).
type Held = BTreeMap<(String, String), BTreeMap<Option<String>, BTreeSet<String>>>;

fn held_on(type_name: &str, rules: &[AllowLine], facts: &Facts) -> Held {
    let mut held: Held = BTreeMap::new();
    for rule in rules {
        let covers = rule.target == type_name
            || facts
                .attributes
                .get(&rule.target)
                .is_some_and(|m| m.contains(type_name));
        if !covers {
            continue;
        }
        let key = condition_of(rule).map(|c| c.canonical());
        for domain in facts.expand(&rule.source) {
            held.entry((domain, rule.class.clone()))
                .or_default()
                .entry(key.clone())
                .or_default()
                .extend(rule.perms.iter().cloned());
        }
    }
    held
}

/// For every re-typed type, the store domains whose access on an old type
/// the new type does not give, read from the stock and predicted rules.
pub struct LossInputs<'a> {
    pub stock_rules: &'a [AllowLine],
    pub stock_facts: &'a Facts,
    pub predicted_rules: &'a [AllowLine],
    pub predicted_facts: &'a Facts,
    pub new_attributes: &'a [&'a str],
    pub workload_set: &'a BTreeSet<String>,
    pub carried: &'a Carried,
}

pub fn losses(inputs: &LossInputs<'_>, retyped: &[Retyped]) -> Vec<Losses> {
    retyped.iter().map(|item| losses_of(inputs, item)).collect()
}

fn losses_of(inputs: &LossInputs<'_>, item: &Retyped) -> Losses {
    let held = held_on(
        &item.type_name,
        inputs.predicted_rules,
        inputs.predicted_facts,
    );
    let mut groups: BTreeMap<(String, String, Option<Condition>), LossGroup> = BTreeMap::new();
    for rule in lost_rules(
        inputs.stock_rules,
        inputs.stock_facts,
        &item.old_types,
        inputs.new_attributes,
    ) {
        let condition = condition_of(rule);
        let key = condition.as_ref().map(Condition::canonical);
        for domain in inputs.stock_facts.expand(&rule.source) {
            let has = held.get(&(domain.clone(), rule.class.clone()));
            let granted = |perm: &String| {
                has.is_some_and(|by| {
                    by.get(&None).is_some_and(|p| p.contains(perm))
                        || (key.is_some() && by.get(&key).is_some_and(|p| p.contains(perm)))
                })
            };
            let lost: BTreeSet<String> =
                rule.perms.iter().filter(|p| !granted(p)).cloned().collect();
            if lost.is_empty() {
                continue;
            }
            let group = groups
                .entry((rule.source.clone(), rule.target.clone(), condition.clone()))
                .or_insert_with(|| LossGroup {
                    via: rule.source.clone(),
                    on: rule.target.clone(),
                    condition: condition.clone(),
                    grade: Grade::MapOnly,
                    permissions: BTreeMap::new(),
                    domains: Vec::new(),
                    workloads: 0,
                    uncarried: inputs
                        .carried
                        .uncarried
                        .iter()
                        .find(|u| u.type_name == item.type_name && u.rule == rule.text)
                        .map(|u| u.why.clone()),
                });
            group
                .permissions
                .entry(rule.class.clone())
                .or_default()
                .extend(lost);
            if !group.domains.contains(&domain) {
                if inputs.workload_set.contains(&domain) {
                    group.workloads += 1;
                }
                group.domains.push(domain);
            }
        }
    }
    let mut groups: Vec<LossGroup> = groups
        .into_values()
        .map(|mut group| {
            group.grade = Grade::of(group.permissions.values().flatten());
            group.domains.sort();
            group
        })
        .collect();
    // Strongest first, then widest.
    groups.sort_by(|a, b| {
        b.grade
            .cmp(&a.grade)
            .then(b.domains.len().cmp(&a.domains.len()))
            .then(a.via.cmp(&b.via))
    });
    let domains: BTreeSet<&String> = groups.iter().flat_map(|g| &g.domains).collect();
    Losses {
        type_name: item.type_name.clone(),
        paths: item.paths.clone(),
        old_types: item.old_types.iter().cloned().collect(),
        protected: item.protected,
        owners: item.owners.clone(),
        carried_rules: inputs
            .carried
            .rules
            .iter()
            .filter(|r| r.target == item.type_name)
            .count(),
        domains: domains.len(),
        groups,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy::setools::allow_lines;

    fn facts() -> Facts {
        Facts::with_attributes(&[
            ("logreaders", &["syslogd_t", "logwatch_t"]),
            ("file_type", &["auditd_log_t", "audit_log_t"]),
        ])
    }

    fn retyped(protected: bool) -> Vec<Retyped> {
        vec![Retyped {
            type_name: "audit_log_t".into(),
            paths: vec!["/var/log/audit".into()],
            old_types: BTreeSet::from(["auditd_log_t".into()]),
            protected,
            owners: vec!["auditd_t".into()],
        }]
    }

    const STOCK: &str = "allow auditd_t auditd_log_t:file { append create getattr open };\n\
        allow logreaders auditd_log_t:file { getattr open read };\n\
        allow backup_t file_type:file { getattr read };\n\
        allow x_t auditd_log_t:file read; [ x_reads ]:True\n";

    #[test]
    fn unprotected_paths_keep_every_store_rule() {
        let stock = allow_lines(STOCK);
        let carried = carry(&retyped(false), &stock, &facts(), &["file_type"]);
        let sources: Vec<&str> = carried.rules.iter().map(|r| r.source.as_str()).collect();
        // Rules on file_type apply to the new type anyway.
        assert_eq!(sources, ["auditd_t", "logreaders", "x_t"]);
        assert_eq!(
            carried.rules[2].condition,
            Some(Condition::new("x_reads", true))
        );
    }

    #[test]
    fn protected_paths_keep_their_owners_and_name_the_others() {
        let stock = allow_lines(STOCK);
        let facts = facts();
        let carried = carry(&retyped(true), &stock, &facts, &["file_type"]);
        assert_eq!(carried.rules.len(), 1);
        assert_eq!(carried.rules[0].source, "auditd_t");
        // The predicted binary holds the owner's copy and the file_type rule.
        let predicted = allow_lines(
            "allow auditd_t audit_log_t:file { append create getattr open };\n\
             allow backup_t file_type:file { getattr read };\n",
        );
        let workload_set = BTreeSet::new();
        let losses = losses(
            &LossInputs {
                stock_rules: &stock,
                stock_facts: &facts,
                predicted_rules: &predicted,
                predicted_facts: &facts,
                new_attributes: &["file_type"],
                workload_set: &workload_set,
                carried: &carried,
            },
            &retyped(true),
        );
        let groups: Vec<(&str, &[String])> = losses[0]
            .groups
            .iter()
            .map(|g| (g.via.as_str(), g.domains.as_slice()))
            .collect();
        assert_eq!(
            groups,
            [
                (
                    "logreaders",
                    &["logwatch_t".to_owned(), "syslogd_t".to_owned()][..]
                ),
                ("x_t", &["x_t".to_owned()][..]),
            ]
        );
        assert_eq!(losses[0].domains, 3);
        assert_eq!(losses[0].groups[0].grade, Grade::Read);
    }
}
