//! What a layout change means: two validated layouts → the changes a
//! reviewer must see, in the manifest's terms, each marked when it is
//! security-relevant.
//!
//! Flow: `source` (a file or `git:REV:PATH`) → two [`Parsed`] layouts →
//! `manifest_changes` (domains, paths, access, traversal, protections,
//! roots, lifecycle, mount and `spec.node`) + `label_changes` (which paths change type,
//! from the two file_contexts through the lookup engine) +
//! `volume_changes` (which hostPath volumes change verdict) →
//! [`LayoutDiff`] → `render` (human, markdown, JSON). `sediff`
//! cross-checks a diff against `sediff` of the two compiled policies:
//! every allow rule that changed must be explained by a change.
//!
//! Invariants: the diff is computed from the models alone (no I/O but in
//! `source`, `sediff` and the k8s loader); every [`ManifestChange`] names
//! the (domain type, file type) pairs of allow rules it may alter, so the
//! policy cross-check needs no second opinion.

mod label_changes;
mod manifest_changes;
pub mod render;
pub mod sediff;
pub mod source;
mod volume_changes;

use schemars::JsonSchema;
use serde::Serialize;

use layout::manifest::Parsed;

use label_changes::LabelChange;
use volume_changes::VolumeChange;

/// The version of `diff --format json` (docs/diff-json.md): it changes
/// when a field is removed or changes meaning.
pub const JSON_VERSION: u32 = 1;

/// The whole comparison of two layouts.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LayoutDiff {
    /// The version of this format: 1.
    pub version: u32,
    /// The old layout, as named on the command line.
    pub old: String,
    /// The new layout, as named on the command line.
    pub new: String,
    /// Manifest-level changes, in category order, then by path and domain.
    pub changes: Vec<ManifestChange>,
    /// Existing paths whose label changes (label impact).
    pub labels: Vec<LabelChange>,
    /// hostPath volumes whose verdict changes (only with `--k8s`).
    pub workloads: Vec<VolumeChange>,
    /// True when any change, label change or volume change is
    /// security-relevant: the exit code is then 1.
    pub security_relevant: bool,
}

/// One manifest-level change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
// Published as `Change` in docs/diff.schema.json and docs/diff-json.md.
#[schemars(rename = "Change")]
pub struct ManifestChange {
    pub category: Category,
    pub kind: Kind,
    /// The layout path concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The domain key concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The value before (absent when the thing is new).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The value after (absent when the thing is gone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// One sentence saying what changed.
    pub summary: String,
    /// Why a reviewer must look twice; present exactly when the change is
    /// security-relevant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<String>,
    /// Allow-rule (source type, target type) pairs this change may alter;
    /// `*` stands for any type. Used by the policy cross-check.
    #[serde(skip)]
    #[schemars(skip)]
    pub policy_pairs: Vec<(String, String)>,
}

impl ManifestChange {
    pub(crate) fn is_security_relevant(&self) -> bool {
        self.security.is_some()
    }
}

/// What part of the layout a change is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// A domain: added, removed, its type, `workload`, `trusted`.
    Domain,
    /// A process transition between domains.
    Transition,
    /// A path: added, removed, its type, mode or owner.
    Path,
    /// What a domain may do at a path.
    Access,
    /// `search` a domain gets or loses on an ancestor's type so that it can
    /// reach a path it is granted.
    Traversal,
    /// `protected: true`.
    Protection,
    /// `hostPath: true` roots.
    HostPathRoot,
    /// `removable: true` roots.
    RemovableRoot,
    /// `lifecycle`.
    Lifecycle,
    /// `mount` (tmpfs, propagation, size).
    Mount,
    /// `spec.node`: kubens and the runtime units.
    Node,
}

/// How it changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The thing exists (or the flag is set) only in the new layout.
    Added,
    /// The thing exists (or the flag is set) only in the old layout.
    Removed,
    /// A value differs (or access both gains and loses levels).
    Changed,
    /// Access where there was none.
    Granted,
    /// More access than before, nothing lost.
    Widened,
    /// Less access than before, nothing gained.
    Narrowed,
    /// Access gone.
    Revoked,
}

/// Options for [`diff`].
#[derive(Default)]
pub struct DiffOptions<'a> {
    /// Kubernetes manifests whose hostPath verdicts to compare.
    pub k8s: Option<&'a k8s::Manifests>,
}

/// Compares two layouts.
pub fn diff(
    old: &Parsed,
    new: &Parsed,
    options: &DiffOptions<'_>,
) -> Result<LayoutDiff, DiffError> {
    let changes = manifest_changes::changes(&old.layout, &new.layout);
    let labels = label_changes::changes(&old.layout, &new.layout)?;
    let workloads = match options.k8s {
        Some(manifests) => volume_changes::changes(old, new, manifests),
        None => Vec::new(),
    };
    let security_relevant = changes.iter().any(ManifestChange::is_security_relevant)
        || labels.iter().any(|l| l.security.is_some())
        || workloads.iter().any(|w| w.security.is_some());
    Ok(LayoutDiff {
        version: JSON_VERSION,
        old: old.source.name.clone(),
        new: new.source.name.clone(),
        changes,
        labels,
        workloads,
        security_relevant,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("{0}")]
    FileContexts(#[from] selabel::LoadError),
}

/// The JSON Schema (draft 2020-12) of `semanifest diff --format json`.
pub fn json_schema() -> serde_json::Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<LayoutDiff>();
    schema.insert("title".to_owned(), "semanifest diff".into());
    schema.to_value()
}
