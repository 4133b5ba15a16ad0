//! Label impact: which existing paths change type. Both layouts are
//! compiled to their file_contexts (base policy + module, in secilc's
//! order, `policy::file_contexts_text`) and loaded into the lookup engine
//! that `relabel` uses; every path either layout names, every ancestor of
//! one, and an entry below each (standing for everything in the subtree
//! that no deeper path names) is looked up in both.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::Serialize;

use layout::model::{ancestors, Layout};
use policy::file_contexts_text;
use selabel::{FileContexts, FileKind, LoadError};

/// The entry name looked up below each path; reported as `PATH/*`.
const BELOW: &str = ".semanifest-any-entry";

/// One path (or subtree) whose label changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LabelChange {
    /// The path looked up.
    pub path: String,
    pub scope: Scope,
    /// The type before (`<<none>>` when nothing matched).
    pub old: String,
    /// The type after.
    pub new: String,
    /// Present when the change is security-relevant, saying why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<String>,
}

/// What the entry covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// The path and every entry below it that no deeper path names.
    Subtree,
    /// The path itself only.
    Path,
    /// The entries below the path that no deeper path names, not the path.
    Below,
}

fn type_of(context: Option<&str>) -> String {
    context
        .and_then(|c| c.split(':').nth(2))
        .unwrap_or("<<none>>")
        .to_owned()
}

fn compile(layout: &Layout) -> Result<FileContexts, LoadError> {
    let text = file_contexts_text(layout);
    FileContexts::from_text(&format!("{} (file_contexts)", layout.name), text.as_bytes())
}

/// Types no domain but the granted ones may touch.
fn protected_types(layout: &Layout) -> BTreeSet<&str> {
    layout.protected().map(|r| r.type_name.as_str()).collect()
}

/// Types some workload domain is granted.
fn workload_types(layout: &Layout) -> BTreeSet<&str> {
    let workloads: BTreeSet<usize> = layout.workload_domains().map(|(i, _)| i).collect();
    layout
        .paths
        .iter()
        .filter(|r| r.access.keys().any(|i| workloads.contains(i)))
        .map(|r| r.type_name.as_str())
        .collect()
}

pub(crate) fn changes(old: &Layout, new: &Layout) -> Result<Vec<LabelChange>, LoadError> {
    let (before, after) = (compile(old)?, compile(new)?);
    let mut probes: BTreeSet<String> = BTreeSet::new();
    for rule in old.paths.iter().chain(&new.paths) {
        probes.insert(rule.path.clone());
        probes.extend(ancestors(&rule.path).map(str::to_owned));
    }
    let (old_protected, new_protected) = (protected_types(old), protected_types(new));
    let (old_workload, new_workload) = (workload_types(old), workload_types(new));
    let security = |was: &str, is: &str, path: &str| -> Option<String> {
        if old_protected.contains(was) && !new_protected.contains(is) {
            Some(format!(
                "`{path}` moves from protected {was} to unprotected {is}"
            ))
        } else if new_workload.contains(is) && !old_workload.contains(was) {
            Some(format!(
                "`{path}` moves to {is}, which workloads are granted"
            ))
        } else {
            None
        }
    };
    let look = |fc: &FileContexts, key: &str, kind| type_of(fc.lookup(key.as_bytes(), kind));
    let mut out = Vec::new();
    for path in &probes {
        let below = format!("{path}/{BELOW}");
        let itself = (
            look(&before, path, FileKind::Dir),
            look(&after, path, FileKind::Dir),
        );
        let entries = (
            look(&before, &below, FileKind::File),
            look(&after, &below, FileKind::File),
        );
        let entry = |path: String, scope, (was, is): (String, String)| LabelChange {
            security: security(&was, &is, &path),
            path,
            scope,
            old: was,
            new: is,
        };
        if itself.0 != itself.1 && itself == entries {
            out.push(entry(path.clone(), Scope::Subtree, itself));
            continue;
        }
        if itself.0 != itself.1 {
            out.push(entry(path.clone(), Scope::Path, itself));
        }
        if entries.0 != entries.1 {
            out.push(entry(format!("{path}/*"), Scope::Below, entries));
        }
    }
    Ok(out)
}
