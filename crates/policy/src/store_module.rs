//! The `module` target: the layout as one CIL module for an existing policy
//! store (refpolicy, or targeted + container-selinux), to install with
//! `semodule -X 400 -i`.
//!
//! What the store provides is decided elsewhere (`store`) and handed in as
//! a [`StoreTarget`]: which store type each layout domain becomes, which
//! names live in modules that may be missing, the workload set, the
//! `filecon` lines that win against the store's, and the permissions the
//! store's classes have. This module only turns that and the layout's plan
//! into text, through `templates/store-module.cil.j2`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::access::{ClassPerms, Level, HOST_SETS, LEVELS};
use super::plan::{self, GrantNames, Permissions};
use layout::model::host::{Grant, HostClass, ObjectKind, Scope, StoreGrants, HOST_CLASSES};
use layout::model::Layout;

/// What the store offers the module; every name here is the store's.
/// Nothing here names the store's location: the same store in any form
/// gives the same module.
#[derive(Debug, Clone, Default)]
pub struct StoreTarget {
    pub profile: String,
    /// Layout domain type → store type.
    pub domain_types: BTreeMap<String, String>,
    /// Why each layout domain got its store type, by layout domain key.
    pub domain_origins: BTreeMap<String, String>,
    /// Store types this module declares (layout domains the store lacks).
    pub declared_domains: BTreeSet<String>,
    /// Layout path types the store already has (adopted, not declared).
    pub adopted_types: BTreeSet<String>,
    pub file_type_attributes: Vec<String>,
    pub domain_attribute: String,
    pub domain_role: String,
    /// Name → the module that declares it, for names outside the base
    /// (types, attributes, booleans).
    pub providers: BTreeMap<String, String>,
    pub workload: WorkloadSet,
    /// Per layout path (same order): its `filecon` lines.
    pub filecons: Vec<Vec<FileconLine>>,
    /// Per layout path: a note on the store's label before the module, if any.
    pub store_notes: Vec<Option<String>>,
    /// Class → its permissions in the store.
    pub classes: BTreeMap<String, BTreeSet<String>>,
    /// Store rules on the types a path replaces, copied to its type so no
    /// store domain loses access silently.
    pub copied: Vec<CopiedRule>,
    /// Which of a host class's store grants apply.
    pub host_grants: HostGrants,
    /// The store's attributes of container domains, which the agent
    /// domains the module declares join, so the store's rules and
    /// neverallows on container domains hold for them too.
    pub agent_attributes: Vec<String>,
    /// The store's container runtime domain: it keeps reading (and
    /// running) what the host types the module declares label.
    pub runtime_type: String,
}

/// The distribution policy whose names a host class's grants use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HostGrants {
    #[default]
    Refpolicy,
    ContainerSelinux,
}

impl HostGrants {
    fn of(self, class: &HostClass) -> StoreGrants {
        match self {
            HostGrants::Refpolicy => class.refpolicy,
            HostGrants::ContainerSelinux => class.container_selinux,
        }
    }

    /// What `class` grants on this store: the store's types, or the
    /// standalone types where the module declares them.
    pub fn grants(self, class: &HostClass) -> &'static [Grant] {
        class
            .store_types(self.of(class))
            .unwrap_or(class.standalone)
    }
}

/// The types the module declares for the host classes the layout grants
/// that the store has no type of their own for.
pub fn declared_host_types(layout: &Layout, host_grants: HostGrants) -> BTreeSet<String> {
    let mut types = BTreeSet::new();
    for domain in &layout.domains {
        for grant in &domain.host {
            if host_grants.of(grant.class) != StoreGrants::Declared {
                continue;
            }
            for item in grant.class.standalone {
                if let Grant::Files(t) = item {
                    types.insert((*t).to_owned());
                }
            }
        }
    }
    types
}

/// Every type and domain the layout's host grants name on a store, so
/// the caller can tell which modules they need.
pub fn host_grant_names(layout: &Layout, host_grants: HostGrants) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for domain in &layout.domains {
        for grant in &domain.host {
            for item in host_grants.grants(grant.class) {
                match *item {
                    Grant::Files(t)
                    | Grant::Device(t, _)
                    | Grant::Mount(t)
                    | Grant::MountContext(t) => {
                        names.insert(t.to_owned());
                    }
                    Grant::Socket { socket, server } => {
                        names.insert(socket.to_owned());
                        names.insert(server.to_owned());
                    }
                    Grant::System { target, .. } => {
                        names.insert(target.to_owned());
                    }
                    Grant::Processes | Grant::OnSelf { .. } => {}
                }
            }
        }
    }
    names
}

/// A store rule, copied to a layout type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopiedRule {
    pub source: String,
    pub target: String,
    pub class: String,
    pub perms: Vec<String>,
    /// The rule's `booleanif` condition as CIL words (`(and`, `a`, `b)`)
    /// and the branch (`true`/`false`) it sits in.
    pub condition: Option<(Vec<String>, &'static str)>,
}

/// Who a protection holds against.
#[derive(Debug, Clone, Default)]
pub struct WorkloadSet {
    /// `(container_domain, privileged_container_domain)`: every member of
    /// the first that is not a member of the second.
    pub attribute: Option<(String, String)>,
    /// Further types: the layout's workload domains and every domain a
    /// workload can transition to.
    pub types: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileconLine {
    pub regex: String,
    /// CIL file type keyword (`any`, `dir`, …).
    pub file_type: String,
    /// Why the line is there.
    pub comment: String,
}

/// The file classes a protection covers.
pub const PROTECTED_CLASSES: [&str; 7] = [
    "dir",
    "file",
    "lnk_file",
    "chr_file",
    "blk_file",
    "sock_file",
    "fifo_file",
];

/// What a protection is about: data. A protected type is held to every
/// permission on every file class except traversing directories (`dir
/// getattr open search`), which distribution policies grant container
/// domains on every file type by design, and `map` and `execmod`, which
/// map nothing without `read`, `write` or `execute` (Fedora grants every
/// domain `map` on every file type under a boolean,
/// `domain_can_mmap_files`). Per class, the exceptions the store's class
/// has (a permission a class lacks cannot be named).
pub fn protection_exceptions(
    classes: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeMap<String, Vec<String>> {
    PROTECTED_CLASSES
        .iter()
        .map(|&class| {
            let known = classes.get(class);
            let wanted: &[&str] = if class == "dir" {
                &["getattr", "open", "search", "map", "execmod"]
            } else {
                &["map", "execmod"]
            };
            let except = wanted
                .iter()
                .filter(|p| known.is_some_and(|k| k.contains(**p)))
                .map(|p| (*p).to_owned())
                .collect();
            (class.to_owned(), except)
        })
        .collect()
}

#[derive(Debug, Serialize)]
struct Plan {
    module: String,
    layout_name: String,
    source: String,
    description: Option<String>,
    profile: String,
    levels: Vec<Level>,
    protected_permissions: String,
    /// Per file class, the permissions a protection leaves out.
    protected_sets: Vec<ClassPerms>,
    workload_attribute: String,
    domains: Vec<DomainBlock>,
    workload: Vec<Block>,
    workload_members: Vec<String>,
    host_types: Vec<HostTypeBlock>,
    paths: Vec<PathBlock>,
    traversals: Vec<Block>,
}

/// A host class whose paths the store labels with a type it shares with
/// others (`etc_t`): the module declares the standalone type and labels
/// the class's paths with it.
#[derive(Debug, Serialize)]
struct HostTypeBlock {
    class: String,
    type_name: String,
    attributes: Vec<String>,
    filecons: Vec<FileconLine>,
    /// The store's runtime keeps what it did there.
    blocks: Vec<Block>,
}

/// A commented group of a domain's own grants.
#[derive(Debug, Serialize)]
struct GrantBlock {
    comment: String,
    blocks: Vec<Block>,
}

#[derive(Debug, Serialize)]
struct DomainBlock {
    key: String,
    layout_type: String,
    type_name: String,
    origin: String,
    declare: bool,
    role: String,
    domain_attribute: String,
    workload: bool,
    trusted: bool,
    /// A declared agent joining the store's container attributes.
    agent_attributes: Vec<Block>,
    blocks: Vec<Block>,
    grants: Vec<GrantBlock>,
}

#[derive(Debug, Serialize)]
struct PathBlock {
    path: String,
    type_name: String,
    summary: String,
    description: Option<String>,
    store_note: Option<String>,
    declare_type: bool,
    adopted: bool,
    attributes: Vec<String>,
    filecons: Vec<FileconLine>,
    blocks: Vec<Block>,
    /// The store rules copied to the type: how many, and the statements.
    copied: usize,
    copied_blocks: Vec<Block>,
    protected: bool,
}

/// Statements that need the same modules: top level, or one `optional`.
#[derive(Debug, Serialize)]
struct Block {
    optional: Option<String>,
    needs: Vec<String>,
    statements: Vec<Statement>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Statement {
    Allow {
        source: String,
        target: String,
        permissions: String,
        comment: Option<String>,
    },
    Transition {
        source: String,
        target: String,
    },
    Members {
        attribute: String,
        types: Vec<String>,
    },
    MembersExcept {
        attribute: String,
        of: String,
        except: String,
    },
    /// `(allow SOURCE TARGET (CLASS (PERMS)))`.
    AllowPerms {
        source: String,
        target: String,
        class: String,
        perms: Vec<String>,
    },
    /// `(booleanif EXPRESSION (BRANCH STATEMENTS))`; `names` are the
    /// booleans, for the blocks it needs.
    Booleanif {
        expression: Vec<String>,
        branch: &'static str,
        names: Vec<String>,
        statements: Vec<Statement>,
    },
}

impl Statement {
    fn names(&self) -> Vec<&str> {
        match self {
            Statement::Allow { source, target, .. } | Statement::Transition { source, target } => {
                vec![source, target]
            }
            // The attribute counts too: a store module's attribute (the
            // container domains joined by an agent) may be missing.
            Statement::Members { attribute, types } => std::iter::once(attribute.as_str())
                .chain(types.iter().map(String::as_str))
                .collect(),
            Statement::MembersExcept { of, except, .. } => vec![of, except],
            Statement::AllowPerms { source, target, .. } => vec![source, target],
            Statement::Booleanif {
                names, statements, ..
            } => names
                .iter()
                .map(String::as_str)
                .chain(statements.iter().flat_map(Statement::names))
                .collect(),
        }
    }
}

/// Groups statements by the modules they need, in first-seen order;
/// optional blocks are named `<module>_opt_<n>` from a shared counter.
struct Blocks<'a> {
    module: &'a str,
    providers: &'a BTreeMap<String, String>,
    counter: &'a mut usize,
}

impl Blocks<'_> {
    fn group(&mut self, statements: Vec<Statement>) -> Vec<Block> {
        let mut blocks: Vec<Block> = Vec::new();
        for statement in statements {
            let needs: BTreeSet<String> = statement
                .names()
                .iter()
                .filter_map(|name| self.providers.get(*name).cloned())
                .collect();
            let needs: Vec<String> = needs.into_iter().collect();
            match blocks.iter_mut().find(|block| block.needs == needs) {
                Some(block) => block.statements.push(statement),
                None => blocks.push(Block {
                    optional: None,
                    needs,
                    statements: vec![statement],
                }),
            }
        }
        blocks.sort_by_key(|block| !block.needs.is_empty());
        for block in blocks.iter_mut().filter(|block| !block.needs.is_empty()) {
            *self.counter += 1;
            block.optional = Some(format!("{}_opt_{}", self.module, self.counter));
        }
        blocks
    }
}

/// Renders the module for `layout` on `target`.
pub fn render(
    layout: &Layout,
    source: &str,
    target: &StoreTarget,
) -> Result<String, minijinja::Error> {
    let plan = build_plan(layout, source, target);
    super::cil::render_template("store-module.cil", &plan)
}

/// The layout's plan in the store's names, one block kind at a time; the
/// `optional` blocks share one counter, so their names follow the module.
fn build_plan(layout: &Layout, source: &str, target: &StoreTarget) -> Plan {
    let module = layout.module.clone();
    let base_plan = plan::plan(layout, source, layout.description.as_deref());
    let names = Names {
        module: &module,
        target,
    };
    let mut counter = 0usize;
    let mut blocks = Blocks {
        module: &module,
        providers: &target.providers,
        counter: &mut counter,
    };
    let domains = domain_blocks(layout, &base_plan, &names, &mut blocks);
    let workload = blocks.group(workload_statements(&names));
    let host_types = host_type_blocks(layout, &names, &mut blocks);
    let paths = path_blocks(&base_plan, &names, &mut blocks);
    let traversals = blocks.group(traversal_statements(&base_plan, &names));
    Plan {
        levels: store_levels(&module, &target.classes),
        protected_permissions: format!("{module}_protected"),
        protected_sets: protection_exceptions(&target.classes)
            .into_iter()
            .map(|(class, perms)| ClassPerms { class, perms })
            .collect(),
        workload_attribute: names.workload_attribute(),
        domains,
        workload,
        workload_members: workload_members(target),
        host_types,
        paths,
        traversals,
        layout_name: layout.name.clone(),
        source: source.to_owned(),
        description: layout.description.clone(),
        profile: target.profile.clone(),
        module,
    }
}

/// The access levels and the host classes' permission sets as
/// `MODULE_NAME`, without the permissions the store's classes lack (and a
/// class it lacks).
fn store_levels(module: &str, classes: &BTreeMap<String, BTreeSet<String>>) -> Vec<Level> {
    let levels = LEVELS
        .iter()
        .map(|(level, sets)| (level.to_string(), *sets));
    let host_sets = HOST_SETS
        .iter()
        .map(|(name, sets)| ((*name).to_owned(), *sets));
    levels
        .chain(host_sets)
        .map(|(level, sets)| Level {
            name: format!("{module}_{level}"),
            sets: sets
                .iter()
                .filter_map(|(class, perms)| {
                    let known = classes.get(*class)?;
                    let perms: Vec<String> = perms
                        .split_whitespace()
                        .filter(|p| known.contains(*p))
                        .map(str::to_owned)
                        .collect();
                    (!perms.is_empty()).then(|| ClassPerms {
                        class: (*class).to_owned(),
                        perms,
                    })
                })
                .collect(),
        })
        .collect()
}

/// How the layout's names read in the module.
struct Names<'a> {
    module: &'a str,
    target: &'a StoreTarget,
}

impl Names<'_> {
    fn store_type(&self, layout_type: &str) -> String {
        self.target
            .domain_types
            .get(layout_type)
            .cloned()
            .unwrap_or_else(|| layout_type.to_owned())
    }

    /// `semanifest_write` → `MODULE_write`.
    fn level(&self, permissions: &str) -> String {
        format!(
            "{}_{}",
            self.module,
            permissions.trim_start_matches("semanifest_")
        )
    }

    fn workload_attribute(&self) -> String {
        format!("{}_workload", self.module)
    }
}

fn domain_blocks(
    layout: &Layout,
    base_plan: &plan::ModulePlan,
    names: &Names<'_>,
    blocks: &mut Blocks<'_>,
) -> Vec<DomainBlock> {
    let target = names.target;
    let set = |name: &str| format!("{}_{name}", names.module);
    let domain_type = |name: &str| names.store_type(name);
    let grant_names = GrantNames {
        grants: &|class| target.host_grants.grants(class),
        set: &set,
        domain_type: &domain_type,
        every_domain: &target.domain_attribute,
    };
    base_plan
        .domains
        .iter()
        .enumerate()
        .map(|(index, domain)| {
            let type_name = names.store_type(&domain.type_name);
            let transitions: Vec<Statement> = domain
                .transitions
                .iter()
                .map(|t| Statement::Transition {
                    source: type_name.clone(),
                    target: names.store_type(t),
                })
                .collect();
            let declare = target.declared_domains.contains(&type_name);
            let joins: Vec<Statement> = if declare && domain.agent {
                target
                    .agent_attributes
                    .iter()
                    .map(|attribute| Statement::Members {
                        attribute: attribute.clone(),
                        types: vec![type_name.clone()],
                    })
                    .collect()
            } else {
                Vec::new()
            };
            // Grouped in the order the template prints them, so the
            // optional blocks are numbered down the file.
            let agent_attributes = blocks.group(joins);
            let transitions = blocks.group(transitions);
            let grants = if domain.trusted {
                Vec::new()
            } else {
                plan::domain_grants(layout, index, &grant_names)
                    .into_iter()
                    .map(|group| GrantBlock {
                        comment: group.comment,
                        blocks: blocks.group(
                            group
                                .allows
                                .into_iter()
                                .filter_map(|allow| grant_statement(allow, &target.classes))
                                .collect(),
                        ),
                    })
                    .collect()
            };
            DomainBlock {
                key: domain.key.clone(),
                layout_type: domain.type_name.clone(),
                origin: target
                    .domain_origins
                    .get(&domain.key)
                    .cloned()
                    .unwrap_or_default(),
                declare,
                role: target.domain_role.clone(),
                domain_attribute: target.domain_attribute.clone(),
                workload: domain.workload,
                trusted: domain.trusted,
                agent_attributes,
                blocks: transitions,
                grants,
                type_name,
            }
        })
        .collect()
}

/// A domain's grant as a statement, without the permissions the store's
/// class lacks (none when it lacks the class: a trimmed store may have no
/// `cap_userns`).
fn grant_statement(
    allow: plan::DomainAllow,
    classes: &BTreeMap<String, BTreeSet<String>>,
) -> Option<Statement> {
    Some(match allow.permissions {
        Permissions::Named { name } => Statement::Allow {
            source: allow.source,
            target: allow.target,
            permissions: name,
            comment: None,
        },
        Permissions::Class { class, perms } => {
            let known = classes.get(&class)?;
            let perms: Vec<String> = perms.into_iter().filter(|p| known.contains(p)).collect();
            if perms.is_empty() {
                return None;
            }
            Statement::AllowPerms {
                source: allow.source,
                target: allow.target,
                class,
                perms,
            }
        }
    })
}

/// The types the module declares for the host classes the store has no
/// type of their own for, when the layout grants such a class: each
/// labels the class's paths, and the store's runtime keeps reading them
/// (and running what is there, for a class that holds programs).
fn host_type_blocks(
    layout: &Layout,
    names: &Names<'_>,
    blocks: &mut Blocks<'_>,
) -> Vec<HostTypeBlock> {
    let target = names.target;
    let granted: BTreeSet<&str> = layout
        .domains
        .iter()
        .flat_map(|d| d.host.iter().map(|g| g.class.name))
        .collect();
    let mut out = Vec::new();
    for class in HOST_CLASSES.iter().filter(|c| granted.contains(c.name)) {
        if target.host_grants.of(class) != StoreGrants::Declared {
            continue;
        }
        for grant in class.standalone {
            let Grant::Files(type_name) = *grant else {
                continue;
            };
            // The path exactly and `PATH/.*`: an exact spec beats every
            // regex, and the longer stem sorts after the store's own
            // `PATH(/.*)?` (refpolicy has one for /etc/cni), which an
            // identical line would merely duplicate.
            let mut filecons = Vec::new();
            for host in class.paths {
                let line = |regex: String, file_type: &str| FileconLine {
                    regex,
                    file_type: file_type.to_owned(),
                    comment: format!("host class {}: {}", class.name, host.path),
                };
                match (host.scope, host.kind) {
                    (Scope::Subtree, _) => {
                        filecons.push(line(plan::escape_regex(host.path), "any"));
                        filecons.push(line(format!("{}/.*", plan::escape_regex(host.path)), "any"));
                    }
                    (Scope::Exact, ObjectKind::File) => {
                        filecons.push(line(plan::escape_regex(host.path), "file"));
                    }
                    _ => {}
                }
            }
            let mut levels = vec!["read"];
            if class.admits("exec") {
                levels.push("exec");
            }
            let statements = levels
                .into_iter()
                .map(|level| Statement::Allow {
                    source: target.runtime_type.clone(),
                    target: type_name.to_owned(),
                    permissions: format!("{}_{level}", names.module),
                    comment: None,
                })
                .collect();
            out.push(HostTypeBlock {
                class: class.name.to_owned(),
                type_name: type_name.to_owned(),
                attributes: target.file_type_attributes.clone(),
                filecons,
                blocks: blocks.group(statements),
            });
        }
    }
    out
}

/// The workload attribute's members: one statement per type, so a missing
/// module drops only its own types.
fn workload_statements(names: &Names<'_>) -> Vec<Statement> {
    let workload = &names.target.workload;
    let attribute = names.workload_attribute();
    let mut statements = Vec::new();
    if let Some((of, except)) = &workload.attribute {
        statements.push(Statement::MembersExcept {
            attribute: attribute.clone(),
            of: of.clone(),
            except: except.clone(),
        });
    }
    for type_name in &workload.types {
        statements.push(Statement::Members {
            attribute: attribute.clone(),
            types: vec![type_name.clone()],
        });
    }
    statements
}

fn workload_members(target: &StoreTarget) -> Vec<String> {
    let mut members: Vec<String> = Vec::new();
    if let Some((of, except)) = &target.workload.attribute {
        members.push(format!("{of} except {except}"));
    }
    members.extend(target.workload.types.iter().cloned());
    members
}

fn path_blocks(
    base_plan: &plan::ModulePlan,
    names: &Names<'_>,
    blocks: &mut Blocks<'_>,
) -> Vec<PathBlock> {
    let target = names.target;
    base_plan
        .paths
        .iter()
        .enumerate()
        .map(|(index, path)| {
            let allows = path
                .allows
                .iter()
                .map(|allow| Statement::Allow {
                    source: names.store_type(&allow.domain),
                    target: allow.target.clone(),
                    permissions: names.level(&allow.permissions),
                    comment: None,
                })
                .collect();
            // Copies go with the type's first path, as its allows do.
            let copied = if path.declare_type {
                copied_statements(target, &path.type_name)
            } else {
                Vec::new()
            };
            let adopted = target.adopted_types.contains(&path.type_name);
            PathBlock {
                path: path.path.clone(),
                type_name: path.type_name.clone(),
                summary: path.summary.clone(),
                description: path.description.clone(),
                store_note: target.store_notes.get(index).cloned().flatten(),
                declare_type: path.declare_type && !adopted,
                adopted,
                attributes: target.file_type_attributes.clone(),
                filecons: target.filecons.get(index).cloned().unwrap_or_default(),
                blocks: blocks.group(allows),
                copied: target
                    .copied
                    .iter()
                    .filter(|r| path.declare_type && r.target == path.type_name)
                    .count(),
                copied_blocks: blocks.group(copied),
                protected: path.protection.is_some(),
            }
        })
        .collect()
}

/// The copied store rules on `type_name`: unconditional ones as they are,
/// conditional ones in a `booleanif` per condition.
fn copied_statements(target: &StoreTarget, type_name: &str) -> Vec<Statement> {
    let mut plain = Vec::new();
    let mut conditional: Vec<Statement> = Vec::new();
    for rule in target.copied.iter().filter(|r| r.target == type_name) {
        let allow = Statement::AllowPerms {
            source: rule.source.clone(),
            target: rule.target.clone(),
            class: rule.class.clone(),
            perms: rule.perms.clone(),
        };
        let Some((expression, branch)) = &rule.condition else {
            plain.push(allow);
            continue;
        };
        let same = conditional.iter_mut().find(|s| {
            matches!(s, Statement::Booleanif { expression: e, branch: b, .. } if e == expression && b == branch)
        });
        match same {
            Some(Statement::Booleanif { statements, .. }) => statements.push(allow),
            _ => conditional.push(Statement::Booleanif {
                names: expression
                    .iter()
                    .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_owned())
                    .filter(|w| !matches!(w.as_str(), "and" | "or" | "xor" | "not" | "eq" | "neq"))
                    .collect(),
                expression: expression.clone(),
                branch,
                statements: vec![allow],
            }),
        }
    }
    plain.extend(conditional);
    plain
}

fn traversal_statements(base_plan: &plan::ModulePlan, names: &Names<'_>) -> Vec<Statement> {
    base_plan
        .traversals
        .iter()
        .map(|t| Statement::Allow {
            source: names.store_type(&t.domain),
            target: t.target.clone(),
            permissions: format!("{}_search", names.module),
            comment: Some(format!(
                "through {} towards {}",
                t.via.join(", "),
                t.towards.join(", ")
            )),
        })
        .collect()
}
