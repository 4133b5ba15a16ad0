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

use super::access::{ClassPerms, Level, LEVELS};
use super::plan;
use layout::model::Layout;

/// What the store offers the module; every name here is the store's.
#[derive(Debug, Clone, Default)]
pub struct StoreTarget {
    /// One line naming the store, for the header.
    pub store: String,
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
    /// Name → the module that declares it, for names outside the base.
    pub providers: BTreeMap<String, String>,
    pub workload: WorkloadSet,
    /// Per layout path (same order): its `filecon` lines.
    pub filecons: Vec<Vec<FileconLine>>,
    /// Per layout path: a note on the store's label before the module, if any.
    pub store_notes: Vec<Option<String>>,
    /// Class → its permissions in the store.
    pub classes: BTreeMap<String, BTreeSet<String>>,
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

#[derive(Debug, Serialize)]
struct Plan {
    module: String,
    layout_name: String,
    source: String,
    description: Option<String>,
    store: String,
    profile: String,
    levels: Vec<Level>,
    protected_permissions: String,
    workload_attribute: String,
    domains: Vec<DomainBlock>,
    workload: Vec<Block>,
    workload_members: Vec<String>,
    paths: Vec<PathBlock>,
    traversals: Vec<Block>,
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
    blocks: Vec<Block>,
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
}

impl Statement {
    fn names(&self) -> Vec<&str> {
        match self {
            Statement::Allow { source, target, .. } | Statement::Transition { source, target } => {
                vec![source, target]
            }
            Statement::Members { types, .. } => types.iter().map(String::as_str).collect(),
            Statement::MembersExcept { of, except, .. } => vec![of, except],
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

fn build_plan(layout: &Layout, source: &str, target: &StoreTarget) -> Plan {
    let module = layout.module.clone();
    let base_plan = plan::plan(layout, source, layout.description.as_deref());
    let store_type = |layout_type: &str| {
        target
            .domain_types
            .get(layout_type)
            .cloned()
            .unwrap_or_else(|| layout_type.to_owned())
    };
    let level_name =
        |permissions: &str| format!("{module}_{}", permissions.trim_start_matches("semanifest_"));
    let mut counter = 0usize;
    let mut blocks = Blocks {
        module: &module,
        providers: &target.providers,
        counter: &mut counter,
    };

    let levels = LEVELS
        .iter()
        .map(|(level, sets)| Level {
            name: format!("{module}_{level}"),
            sets: sets
                .iter()
                .filter_map(|(class, perms)| {
                    let known = target.classes.get(*class)?;
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
        .collect();

    let domains = base_plan
        .domains
        .iter()
        .map(|domain| {
            let type_name = store_type(&domain.type_name);
            let transitions = domain
                .transitions
                .iter()
                .map(|t| Statement::Transition {
                    source: type_name.clone(),
                    target: store_type(t),
                })
                .collect();
            DomainBlock {
                key: domain.key.clone(),
                layout_type: domain.type_name.clone(),
                origin: target
                    .domain_origins
                    .get(&domain.key)
                    .cloned()
                    .unwrap_or_default(),
                declare: target.declared_domains.contains(&type_name),
                role: target.domain_role.clone(),
                domain_attribute: target.domain_attribute.clone(),
                workload: domain.workload,
                trusted: domain.trusted,
                blocks: blocks.group(transitions),
                type_name,
            }
        })
        .collect();

    let workload_attribute = format!("{module}_workload");
    let mut workload_statements = Vec::new();
    if let Some((of, except)) = &target.workload.attribute {
        workload_statements.push(Statement::MembersExcept {
            attribute: workload_attribute.clone(),
            of: of.clone(),
            except: except.clone(),
        });
    }
    // One statement per type, so a missing module drops only its own types.
    for type_name in &target.workload.types {
        workload_statements.push(Statement::Members {
            attribute: workload_attribute.clone(),
            types: vec![type_name.clone()],
        });
    }
    let workload = blocks.group(workload_statements);

    let paths = base_plan
        .paths
        .iter()
        .enumerate()
        .map(|(index, path)| {
            let allows = path
                .allows
                .iter()
                .map(|allow| Statement::Allow {
                    source: store_type(&allow.domain),
                    target: allow.target.clone(),
                    permissions: level_name(&allow.permissions),
                    comment: None,
                })
                .collect();
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
                protected: path.protection.is_some(),
            }
        })
        .collect();

    let traversals = base_plan
        .traversals
        .iter()
        .map(|t| Statement::Allow {
            source: store_type(&t.domain),
            target: t.target.clone(),
            permissions: format!("{module}_search"),
            comment: Some(format!(
                "through {} towards {}",
                t.via.join(", "),
                t.towards.join(", ")
            )),
        })
        .collect();
    let traversals = blocks.group(traversals);

    let mut workload_members: Vec<String> = Vec::new();
    if let Some((of, except)) = &target.workload.attribute {
        workload_members.push(format!("{of} except {except}"));
    }
    workload_members.extend(target.workload.types.iter().cloned());

    Plan {
        levels,
        protected_permissions: format!("{module}_protected"),
        workload_attribute,
        domains,
        workload,
        workload_members,
        paths,
        traversals,
        layout_name: layout.name.clone(),
        source: source.to_owned(),
        description: layout.description.clone(),
        store: target.store.clone(),
        profile: target.profile.clone(),
        module,
    }
}
