//! What a compiled store policy says, read back with setools (`seinfo`,
//! `sesearch`) — the same independent reader `check` uses — plus which
//! module declares each name, from a scan of the modules' CIL.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::cache::{self, Cache};
use super::open::Store;
use super::StoreError;
use policy::cil_scan;
use policy::setools::{allow_pairs, SetoolsError};

/// The module libsemanage treats as the base: names it declares are always
/// there, so references to them need no `optional` block.
pub(crate) const BASE_MODULE: &str = "base";

/// The file classes a protection and the reach report speak of.
pub(crate) const FILE_CLASSES: [&str; 7] = [
    "dir",
    "file",
    "lnk_file",
    "chr_file",
    "blk_file",
    "sock_file",
    "fifo_file",
];

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
    /// Reads `policy` (the store compiled without our module) and scans the
    /// store's modules.
    pub(crate) fn read(store: &Store, policy: &Path, cache: &Cache) -> Result<Facts, StoreError> {
        let mut facts = Facts::default();
        // Two independent readers of the same file: run them side by side.
        let (names, transitions) = std::thread::scope(|scope| {
            let names = scope.spawn(|| {
                cache::setools(
                    cache,
                    "seinfo",
                    &["-x", "-t", "-a", "-c", "--common", "-b"],
                    policy,
                )
            });
            let transitions = scope.spawn(|| {
                cache::setools(
                    cache,
                    "sesearch",
                    &["-A", "-c", "process", "-p", "transition,dyntransition"],
                    policy,
                )
            });
            (names.join(), transitions.join())
        });
        let panicked = |tool| SetoolsError {
            tool,
            detail: "the reader thread panicked".to_owned(),
        };
        facts.parse_seinfo(&names.map_err(|_| panicked("seinfo"))??);
        let text = transitions.map_err(|_| panicked("sesearch"))??;
        for (source, target) in allow_pairs(&text, &facts.attributes) {
            if source != target {
                facts.transitions.entry(source).or_default().insert(target);
            }
        }
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
        Ok(facts)
    }

    /// Reads `seinfo -x` output (types, attributes, classes, commons).
    pub(crate) fn parse_attributes(&mut self, text: &str) {
        self.parse_seinfo(text);
    }

    fn parse_seinfo(&mut self, text: &str) {
        #[derive(PartialEq)]
        enum Section {
            None,
            Types,
            Attributes,
            Classes,
            Commons,
            Booleans,
        }
        let mut section = Section::None;
        let mut current: Option<String> = None;
        let mut inherits: BTreeMap<String, String> = BTreeMap::new();
        let mut commons: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if !line.starts_with(char::is_whitespace) && trimmed.contains(':') {
                section = match trimmed.split(':').next().unwrap_or_default() {
                    "Types" => Section::Types,
                    "Type Attributes" => Section::Attributes,
                    "Classes" => Section::Classes,
                    "Commons" => Section::Commons,
                    "Booleans" => Section::Booleans,
                    _ => Section::None,
                };
                current = None;
                continue;
            }
            match section {
                Section::Types => {
                    if let Some(rest) = trimmed.strip_prefix("type ") {
                        self.parse_type_line(rest.trim_end_matches(';'));
                    }
                }
                Section::Attributes => {
                    if let Some(name) = trimmed.strip_prefix("attribute ") {
                        let name = name.trim_end_matches(';').to_owned();
                        self.attributes.entry(name.clone()).or_default();
                        current = Some(name);
                    } else if let (Some(name), false) = (&current, trimmed.is_empty()) {
                        if line.starts_with('\t') || line.starts_with("      ") {
                            self.attributes
                                .entry(name.clone())
                                .or_default()
                                .insert(trimmed.to_owned());
                        }
                    }
                }
                Section::Classes | Section::Commons => {
                    let keyword = if section == Section::Classes {
                        "class "
                    } else {
                        "common "
                    };
                    if let Some(name) = trimmed.strip_prefix(keyword) {
                        current = Some(name.to_owned());
                        if section == Section::Classes {
                            self.classes.entry(name.to_owned()).or_default();
                        } else {
                            commons.entry(name.to_owned()).or_default();
                        }
                    } else if let Some(common) = trimmed.strip_prefix("inherits ") {
                        if let Some(name) = &current {
                            inherits.insert(name.clone(), common.to_owned());
                        }
                    } else if !trimmed.is_empty() && trimmed != "{" && trimmed != "}" {
                        if let Some(name) = &current {
                            let target = if section == Section::Classes {
                                self.classes.entry(name.clone()).or_default()
                            } else {
                                commons.entry(name.clone()).or_default()
                            };
                            target.insert(trimmed.to_owned());
                        }
                    }
                }
                Section::Booleans => {
                    // `bool NAME true;`
                    let mut words = trimmed.trim_end_matches(';').split_whitespace();
                    if let (Some("bool"), Some(name), Some(state)) =
                        (words.next(), words.next(), words.next())
                    {
                        self.booleans.insert(name.to_owned(), state == "true");
                    }
                }
                Section::None => {}
            }
        }
        for (class, common) in inherits {
            if let Some(perms) = commons.get(&common) {
                self.classes
                    .entry(class)
                    .or_default()
                    .extend(perms.iter().cloned());
            }
        }
    }

    /// `NAME [alias A | alias { A B }], attr, attr`
    fn parse_type_line(&mut self, rest: &str) {
        let (head, attributes) = match rest.split_once(',') {
            Some((head, attributes)) => (head, attributes),
            None => (rest, ""),
        };
        let mut words = head.split_whitespace();
        let Some(name) = words.next() else { return };
        if words.next() == Some("alias") {
            for alias in words.filter(|w| !matches!(*w, "{" | "}")) {
                self.aliases.insert(alias.to_owned(), name.to_owned());
            }
        }
        let held = attributes
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect();
        self.types.insert(name.to_owned(), held);
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
mod tests {
    use super::*;

    #[test]
    fn reads_seinfo_sections() {
        let text = "\nClasses: 1\n   class file\ninherits file\n{\n\tentrypoint\n}\n\nCommons: 1\n   common file\n{\n\tread\n\twrite\n}\n\nBooleans: 1\n   bool b_x true;\n\nTypes: 2\n   type bin_t alias { ls_exec_t sbin_t }, exec_type, file_type;\n   type container_t alias svirt_lxc_net_t, domain;\n\nType Attributes: 1\n   attribute domain;\n\tcontainer_t\n";
        let mut facts = Facts::default();
        facts.parse_seinfo(text);
        assert_eq!(
            facts.classes["file"],
            BTreeSet::from(["entrypoint".into(), "read".into(), "write".into()])
        );
        assert_eq!(facts.resolve("sbin_t"), Some("bin_t"));
        assert!(facts.booleans["b_x"]);
        assert_eq!(facts.resolve("svirt_lxc_net_t"), Some("container_t"));
        assert!(facts.holds("bin_t", "file_type"));
        assert_eq!(
            facts.attributes["domain"],
            BTreeSet::from(["container_t".into()])
        );
    }
}
