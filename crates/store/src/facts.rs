//! What a compiled store policy says, read by [`KernelPolicy`] (an
//! independent reader of the binary, held to setools' answers by its
//! tests), plus which module declares each name, from a scan of the
//! modules' CIL.

use std::collections::{BTreeMap, BTreeSet};

use super::open::Store;
use policy::cil_scan;
use policy::kernel_policy::{KernelPolicy, RuleFilter};
use policy::setools::allow_pairs;

/// The module libsemanage treats as the base: names it declares are always
/// there, so references to them need no `optional` block.
pub(crate) const BASE_MODULE: &str = "base";

/// The file classes a protection and the reach report speak of.
pub(crate) const FILE_CLASSES: [&str; 7] = policy::store_module::PROTECTED_CLASSES;

#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Type → the attributes it holds.
    pub types: BTreeMap<String, BTreeSet<String>>,
    /// Alias → the type it names.
    pub aliases: BTreeMap<String, String>,
    /// Attribute → its member types.
    pub attributes: BTreeMap<String, BTreeSet<String>>,
    /// Class → every permission it has (its common's included).
    pub classes: BTreeMap<String, BTreeSet<String>>,
    /// Process transitions (`transition` or `dyntransition`, conditional
    /// ones included): source type → target types, attributes expanded,
    /// self-transitions left out.
    pub transitions: BTreeMap<String, BTreeSet<String>>,
    /// Type or attribute → the module that declares it.
    pub providers: BTreeMap<String, String>,
    /// Regex of a store `filecon` → the modules that wrote it.
    pub filecon_modules: BTreeMap<String, BTreeSet<String>>,
    /// Boolean → its default state in the compiled policy.
    pub booleans: BTreeMap<String, bool>,
}

impl Facts {
    /// What the store's compiled policy says, and which module declares
    /// each name (from a scan of the store's modules).
    pub(crate) fn read(store: &Store, policy: &KernelPolicy) -> Facts {
        let mut facts = Facts::of_policy(policy);
        for module in &store.modules {
            let cil = String::from_utf8_lossy(&module.cil);
            let scanned = cil_scan::scan(&cil);
            for name in scanned.types.into_iter().chain(scanned.attributes) {
                facts
                    .providers
                    .entry(name.to_owned())
                    .or_insert_with(|| module.name.clone());
            }
            for regex in scanned.filecons {
                facts
                    .filecon_modules
                    .entry(regex.to_owned())
                    .or_default()
                    .insert(module.name.clone());
            }
        }
        facts
    }

    /// Types, aliases, attributes, classes, booleans and process
    /// transitions of a compiled policy.
    pub(crate) fn of_policy(policy: &KernelPolicy) -> Facts {
        let mut facts = Facts::attributes_of(policy);
        for (name, held) in policy.types() {
            facts.types.insert(
                name.to_owned(),
                held.into_iter().map(str::to_owned).collect(),
            );
        }
        for (alias, name) in policy.aliases() {
            facts.aliases.insert(alias.to_owned(), name.to_owned());
        }
        for (class, perms) in policy.classes() {
            facts.classes.insert(
                class.to_owned(),
                perms.into_iter().map(str::to_owned).collect(),
            );
        }
        for (boolean, state) in policy.booleans() {
            facts.booleans.insert(boolean.to_owned(), state);
        }
        let transitions = policy.allow_lines(&RuleFilter {
            classes: Some(&["process"]),
            perms: Some(&["transition", "dyntransition"]),
            ..RuleFilter::default()
        });
        for (source, target) in allow_pairs(&transitions, &facts.attributes) {
            if source != target {
                facts.transitions.entry(source).or_default().insert(target);
            }
        }
        facts
    }

    /// Only the attributes of a compiled policy, with their members.
    pub(crate) fn attributes_of(policy: &KernelPolicy) -> Facts {
        let attributes = policy
            .attributes()
            .into_iter()
            .map(|(name, members)| {
                let members = members.into_iter().map(str::to_owned).collect();
                (name.to_owned(), members)
            })
            .collect();
        Facts {
            attributes,
            ..Facts::default()
        }
    }

    /// The type `name` denotes (itself, or the type an alias names).
    pub(crate) fn resolve<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if self.types.contains_key(name) {
            return Some(name);
        }
        self.aliases.get(name).map(String::as_str)
    }

    pub(crate) fn has_attribute(&self, name: &str) -> bool {
        self.attributes.contains_key(name)
    }

    /// Whether the store declares attribute `name`: secilc drops an
    /// attribute no rule uses from the binary, so the modules' CIL counts too.
    pub(crate) fn declares_attribute(&self, name: &str) -> bool {
        self.attributes.contains_key(name)
            || (self.providers.contains_key(name) && !self.types.contains_key(name))
    }

    /// Whether `name` is a type holding `attribute`; when the binary lost
    /// the attribute (no rule uses it), any type of that name counts.
    pub(crate) fn is_member(&self, name: &str, attribute: &str) -> bool {
        let Some(name) = self.resolve(name) else {
            return false;
        };
        self.holds(name, attribute) || !self.attributes.contains_key(attribute)
    }

    /// Whether type `name` holds `attribute`.
    pub(crate) fn holds(&self, name: &str, attribute: &str) -> bool {
        self.types
            .get(name)
            .is_some_and(|held| held.contains(attribute))
    }

    /// The members of an attribute, or the type itself.
    pub(crate) fn expand(&self, name: &str) -> BTreeSet<String> {
        match self.attributes.get(name) {
            Some(members) => members.clone(),
            None => BTreeSet::from([self.resolve(name).unwrap_or(name).to_owned()]),
        }
    }

    /// The module declaring `name`, unless it is the base (always present).
    pub(crate) fn optional_provider(&self, name: &str) -> Option<&str> {
        let name = self.resolve(name).unwrap_or(name);
        self.providers
            .get(name)
            .map(String::as_str)
            .filter(|module| *module != BASE_MODULE)
    }

    /// Every type reachable from `starts` by process transitions, the
    /// starts included.
    pub(crate) fn transition_closure(
        &self,
        starts: impl IntoIterator<Item = String>,
    ) -> BTreeSet<String> {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut stack: Vec<String> = starts.into_iter().collect();
        while let Some(current) = stack.pop() {
            if !seen.insert(current.clone()) {
                continue;
            }
            for next in self.transitions.get(&current).into_iter().flatten() {
                if !seen.contains(next) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    }
}

#[cfg(test)]
impl Facts {
    /// Facts with only these attributes (attribute, members).
    pub(crate) fn with_attributes(attributes: &[(&str, &[&str])]) -> Facts {
        Facts {
            attributes: attributes
                .iter()
                .map(|(name, members)| {
                    let members = members.iter().map(|m| (*m).to_owned()).collect();
                    ((*name).to_owned(), members)
                })
                .collect(),
            ..Facts::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy::setools::{self, allow_lines};

    /// Debian's policy (package selinux-policy-default, in `.ci/packages`).
    const DEBIAN_POLICY: &str = "/etc/selinux/default/policy/policy.33";

    /// The process transitions of a policy, attributes expanded, are what
    /// `sesearch` lists; its attributes and aliases resolve as `seinfo`'s.
    #[test]
    fn transitions_are_sesearchs() {
        let path = std::path::Path::new(DEBIAN_POLICY);
        let facts = Facts::of_policy(&KernelPolicy::read(path).unwrap());
        let text = setools::run(
            "sesearch",
            &["-A", "-c", "process", "-p", "transition,dyntransition"],
            path,
        )
        .unwrap();
        let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (source, target) in allow_pairs(&allow_lines(&text), &facts.attributes) {
            if source != target {
                expected.entry(source).or_default().insert(target);
            }
        }
        assert!(expected.len() > 50);
        assert_eq!(facts.transitions, expected);
        assert!(facts.transition_closure(["init_t".to_owned()]).len() > 50);
        assert!(facts.holds("shadow_t", "file_type"));
        assert!(facts.expand("domain").contains("init_t"));
    }
}
