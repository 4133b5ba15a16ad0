//! Who can still reach a protected type once the module is in.
//!
//! On a distribution, "protected" means no workload domain and nothing a
//! workload can transition to may touch the data (secilc proves that);
//! what a protection leaves them — traversing directories, `map` without
//! any way to read, grants only a boolean that is off gives — is listed
//! rule by rule. Everything else the store lets in (unconfined domains,
//! backup tools, the package manager) is by the store's design, and is
//! shown, never hidden: every domain with any permission on the type,
//! grouped by the attribute of the rule that grants it and by the rule's
//! condition, graded by the permissions it holds. Read from the predicted
//! binary with `sesearch`, independently of our own CIL.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::conditions::Condition;
use super::facts::{Facts, FILE_CLASSES};
use super::grade::{describe_permissions, Grade};
use policy::kernel_policy::{KernelPolicy, RuleFilter};
use policy::setools::AllowLine;
use policy::store_module::protection_exceptions;

/// Everything that reaches one protected type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reach {
    pub type_name: String,
    /// The layout paths labelled with it.
    pub paths: Vec<String>,
    /// Domains the layout grants it, and the store domains that own it
    /// (expected; not listed in groups).
    pub granted: Vec<String>,
    /// What workload-set domains may still do, by what the protection
    /// leaves them.
    pub workload: Vec<WorkloadAccess>,
    /// Every other domain, grouped by what grants it.
    pub groups: Vec<ReachGroup>,
    /// Distinct domains over all groups.
    pub domains: usize,
}

/// What a protection leaves a workload domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Leftover {
    /// `dir { getattr open search }`: walking through, never listing.
    Traversal,
    /// `map` or `execmod` without `read`, `write` or `execute`: nothing
    /// can be mapped.
    Map,
    /// A grant only a boolean gives, off by the store's default (the
    /// layout lets such grants pass: `booleanGrants: byDefault`).
    BooleanOff,
    /// Access the protection forbids: only possible when the proof did
    /// not run.
    Unproven,
}

impl Leftover {
    pub fn describe(self) -> &'static str {
        match self {
            Leftover::Traversal => {
                "may traverse its directories (dir getattr open search), never list or read"
            }
            Leftover::Map => {
                "hold `map` or `execmod` without read, write or execute: nothing can be mapped"
            }
            Leftover::BooleanOff => {
                "are granted more only while a boolean that is off by default is on"
            }
            Leftover::Unproven => "HAVE ACCESS THE PROTECTION FORBIDS (the proof did not run)",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkloadAccess {
    pub leftover: Leftover,
    pub domains: Vec<String>,
    /// The rules, as sesearch prints them.
    pub rules: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReachGroup {
    /// The attribute that grants it: the rule's source attribute, its
    /// target attribute, or both as `SOURCE → TARGET` (for a rule naming
    /// types only, the source type).
    pub via: String,
    /// The strongest of `permissions`.
    pub grade: Grade,
    /// Class → permissions, over the group's rules.
    pub permissions: BTreeMap<String, BTreeSet<String>>,
    /// The condition of the group's rules, if they are conditional.
    pub condition: Option<ConditionReport>,
    pub domains: Vec<String>,
    /// The rules, as sesearch prints them (with the boolean for conditional ones).
    pub rules: Vec<String>,
}

/// A conditional grant: its expression and whether the store's defaults
/// turn it on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConditionReport {
    pub condition: Condition,
    /// Each boolean it names, with its default (`None`: unknown).
    pub defaults: BTreeMap<String, Option<bool>>,
    /// `None` when the expression cannot be read unambiguously.
    pub on_by_default: Option<bool>,
}

impl ConditionReport {
    pub fn new(condition: Condition, states: &BTreeMap<String, bool>) -> ConditionReport {
        ConditionReport {
            defaults: condition
                .booleans()
                .into_iter()
                .map(|b| (b.to_owned(), states.get(b).copied()))
                .collect(),
            on_by_default: condition.active(states),
            condition,
        }
    }

    /// `only while domain_can_mmap_files is on (default off)`.
    pub fn describe(&self) -> String {
        let defaults: Vec<String> = self
            .defaults
            .iter()
            .map(|(name, state)| {
                let state = match state {
                    Some(true) => "on",
                    Some(false) => "off",
                    None => "unknown",
                };
                format!("{name} {state} by default")
            })
            .collect();
        let verdict = match self.on_by_default {
            Some(true) => "on as shipped",
            Some(false) => "off as shipped",
            None => "state as shipped not read",
        };
        format!(
            "only while `{}` holds ({}; {verdict})",
            self.condition.describe(),
            defaults.join(", ")
        )
    }
}

/// What the report needs to know about one protected type.
pub struct Protected<'a> {
    pub type_name: &'a str,
    pub paths: Vec<String>,
    /// Store types the layout grants it, and its store owners.
    pub granted: BTreeSet<String>,
}

/// Every allow rule of `policy` on a file class whose target is one of
/// `types` or an attribute holding one.
pub(crate) fn rules_on(policy: &KernelPolicy, types: &[&str]) -> Vec<AllowLine> {
    policy.allow_lines(&RuleFilter {
        targets: Some(types),
        classes: Some(&FILE_CLASSES),
        ..RuleFilter::default()
    })
}

/// The inputs [`reach`] reads: the predicted policy's rules (from
/// [`rules_on`]) and attributes, the store's boolean defaults, and the
/// workload set.
pub struct ReachInputs<'a> {
    pub rules: &'a [AllowLine],
    pub attributes: &'a Facts,
    pub booleans: &'a BTreeMap<String, bool>,
    pub workload_set: &'a BTreeSet<String>,
    /// Store class → permissions, for the protection's exceptions.
    pub classes: &'a BTreeMap<String, BTreeSet<String>>,
}

/// Sorts the rules out per protected type.
pub fn reach(inputs: &ReachInputs<'_>, protected: &[Protected<'_>]) -> Vec<Reach> {
    protected
        .iter()
        .map(|item| reach_one(inputs, item))
        .collect()
}

#[derive(Default)]
struct Group {
    domains: BTreeSet<String>,
    rules: BTreeSet<String>,
    permissions: BTreeMap<String, BTreeSet<String>>,
}

fn reach_one(inputs: &ReachInputs<'_>, item: &Protected<'_>) -> Reach {
    let attributes = inputs.attributes;
    let exceptions = protection_exceptions(inputs.classes);
    let covers = |target: &str| {
        target == item.type_name
            || attributes
                .attributes
                .get(target)
                .is_some_and(|members| members.contains(item.type_name))
    };
    let mut groups: BTreeMap<(String, Option<Condition>), Group> = BTreeMap::new();
    let mut leftovers: BTreeMap<Leftover, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    for line in inputs.rules.iter().filter(|line| covers(&line.target)) {
        let condition = line
            .condition
            .as_deref()
            .map(|expression| Condition::new(expression, line.when));
        let via = match (
            attributes.has_attribute(&line.source),
            attributes.has_attribute(&line.target),
        ) {
            (true, true) => format!("{} → {}", line.source, line.target),
            (false, true) => line.target.clone(),
            _ => line.source.clone(),
        };
        let workload_kinds = leftover_kinds(line, &exceptions, condition.as_ref(), inputs.booleans);
        for domain in attributes.expand(&line.source) {
            if item.granted.contains(&domain) {
                continue;
            }
            if inputs.workload_set.contains(&domain) {
                for &kind in &workload_kinds {
                    let entry = leftovers.entry(kind).or_default();
                    entry.0.insert(domain.clone());
                    entry.1.insert(line.text.clone());
                }
                continue;
            }
            let group = groups.entry((via.clone(), condition.clone())).or_default();
            group.domains.insert(domain);
            group.rules.insert(line.text.clone());
            group
                .permissions
                .entry(line.class.clone())
                .or_default()
                .extend(line.perms.iter().cloned());
        }
    }
    let everyone: BTreeSet<&String> = groups.values().flat_map(|g| &g.domains).collect();
    let domains = everyone.len();
    let mut groups: Vec<ReachGroup> = groups
        .into_iter()
        .map(|((via, condition), group)| ReachGroup {
            via,
            grade: Grade::of(group.permissions.values().flatten()),
            permissions: group.permissions,
            condition: condition.map(|c| ConditionReport::new(c, inputs.booleans)),
            domains: group.domains.into_iter().collect(),
            rules: group.rules.into_iter().collect(),
        })
        .collect();
    // Widest first, then strongest, unconditional first, then by name.
    groups.sort_by(|a, b| {
        b.domains
            .len()
            .cmp(&a.domains.len())
            .then(b.grade.cmp(&a.grade))
            .then(a.condition.is_some().cmp(&b.condition.is_some()))
            .then(a.via.cmp(&b.via))
    });
    Reach {
        type_name: item.type_name.to_owned(),
        paths: item.paths.clone(),
        granted: item.granted.iter().cloned().collect(),
        workload: leftovers
            .into_iter()
            .map(|(leftover, (domains, rules))| WorkloadAccess {
                leftover,
                domains: domains.into_iter().collect(),
                rules: rules.into_iter().collect(),
            })
            .collect(),
        domains,
        groups,
    }
}

/// What one rule leaves a workload domain: the protection's exceptions it
/// uses, and what it grants beyond them.
fn leftover_kinds(
    line: &AllowLine,
    exceptions: &BTreeMap<String, Vec<String>>,
    condition: Option<&Condition>,
    booleans: &BTreeMap<String, bool>,
) -> BTreeSet<Leftover> {
    let excepted = exceptions.get(&line.class);
    let mut kinds = BTreeSet::new();
    let mut beyond = false;
    for permission in &line.perms {
        let is_excepted = excepted.is_some_and(|e| e.contains(permission));
        if !is_excepted {
            beyond = true;
        } else if permission == "map" || permission == "execmod" {
            kinds.insert(Leftover::Map);
        } else {
            kinds.insert(Leftover::Traversal);
        }
    }
    if beyond {
        let off = condition.is_some_and(|c| c.active(booleans) == Some(false));
        kinds.insert(if off {
            Leftover::BooleanOff
        } else {
            Leftover::Unproven
        });
    }
    kinds
}

impl ReachGroup {
    /// `read: file { getattr open read }` and the condition, for text.
    pub fn describe_access(&self) -> String {
        let mut text = format!(
            "{}: {}",
            self.grade.as_str(),
            describe_permissions(&self.permissions)
        );
        if let Some(condition) = &self.condition {
            text.push_str("; ");
            text.push_str(&condition.describe());
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy::setools::allow_lines;

    fn facts() -> Facts {
        Facts::with_attributes(&[
            ("domain", &["container_t", "syslogd_t"]),
            ("file_type", &["etcd_var_t"]),
            ("container_domain", &["container_t"]),
        ])
    }

    fn classes() -> BTreeMap<String, BTreeSet<String>> {
        let perms = |p: &str| p.split(' ').map(str::to_owned).collect::<BTreeSet<_>>();
        BTreeMap::from([
            ("dir".to_owned(), perms("getattr open search read map")),
            ("file".to_owned(), perms("getattr open read map execmod")),
        ])
    }

    #[test]
    fn workload_leftovers_and_groups_say_exactly_what_is_granted() {
        let text = "allow container_domain file_type:dir { getattr open search };\n\
                    allow domain file_type:file map; [ domain_can_mmap_files ]:True\n\
                    allow syslogd_t etcd_var_t:file { getattr open read };\n\
                    allow container_domain file_type:file read; [ risky ]:True\n";
        let rules = allow_lines(text);
        let attributes = facts();
        let booleans = BTreeMap::from([
            ("domain_can_mmap_files".to_owned(), false),
            ("risky".to_owned(), false),
        ]);
        let workload_set = BTreeSet::from(["container_t".to_owned()]);
        let classes = classes();
        let inputs = ReachInputs {
            rules: &rules,
            attributes: &attributes,
            booleans: &booleans,
            workload_set: &workload_set,
            classes: &classes,
        };
        let reach = reach_one(
            &inputs,
            &Protected {
                type_name: "etcd_var_t",
                paths: vec!["/var/lib/etcd".into()],
                granted: BTreeSet::new(),
            },
        );
        let leftovers: Vec<Leftover> = reach.workload.iter().map(|w| w.leftover).collect();
        assert_eq!(
            leftovers,
            [Leftover::Traversal, Leftover::Map, Leftover::BooleanOff]
        );
        // syslogd_t reads; `domain` maps only while a boolean is on.
        let syslog = reach.groups.iter().find(|g| g.via == "syslogd_t").unwrap();
        assert_eq!(syslog.grade, Grade::Read);
        let mapping = reach
            .groups
            .iter()
            .find(|g| g.via == "domain → file_type")
            .unwrap();
        assert_eq!(mapping.grade, Grade::MapOnly);
        let condition = mapping.condition.as_ref().unwrap();
        assert_eq!(condition.on_by_default, Some(false));
        assert!(mapping
            .describe_access()
            .contains("domain_can_mmap_files off by default"));
    }
}
