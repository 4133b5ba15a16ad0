//! The layout's hostPath judgement as cluster admission policy, so that
//! the API server refuses what `semanifest check --k8s` reports and the
//! nodes would deny: a ValidatingAdmissionPolicy and its binding (CEL,
//! run by the API server itself), a Kyverno `ClusterPolicy` (the same
//! CEL) or a Gatekeeper `ConstraintTemplate` (Rego) and its constraint.
//!
//! Flow: layout → `k8s::HostPathRules` → [`Judgement`] (the rules as
//! data) → [`CelRules`] or Rego → [`render`] → YAML documents. One
//! judgement, several renderers: no renderer reads the layout.
//!
//! What admission cannot see stays the node's: where a symlink on the
//! host leads, what a `subPathExpr` expands to, paths made at run time.

mod cel;
mod decision;
mod gatekeeper;
mod kyverno;
mod pattern;
mod rego;
mod vap;

use std::collections::BTreeMap;

use serde::Serialize;

pub use cel::{literal as cel_literal, CelRules, Validation, Variable};
pub use decision::{at_line, Judgement};
pub use gatekeeper::CONSTRAINT_KIND;
pub use rego::PACKAGE as REGO_PACKAGE;

/// The name of every object emitted.
pub const POLICY_NAME: &str = "semanifest-hostpath";

/// Which admission controller the output is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// ValidatingAdmissionPolicy + binding (Kubernetes ≥ 1.30).
    Vap,
    /// Kyverno `ClusterPolicy` with CEL validation.
    Kyverno,
    /// Gatekeeper `ConstraintTemplate` (Rego) + constraint.
    Gatekeeper,
}

/// What the cluster does with an object the judgement refuses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Action {
    /// Refuse it.
    #[default]
    Deny,
    /// Admit it with a warning to the client.
    Warn,
    /// Admit it and record the violation in the audit log (or report).
    Audit,
}

/// One emitted object: its YAML and the file name `--out` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    pub file_name: &'static str,
    pub yaml: String,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct Metadata {
    name: String,
    labels: BTreeMap<&'static str, &'static str>,
    annotations: BTreeMap<&'static str, String>,
}

impl Metadata {
    fn of(judgement: &Judgement) -> Metadata {
        Metadata {
            name: POLICY_NAME.to_owned(),
            labels: BTreeMap::from([("app.kubernetes.io/managed-by", "semanifest")]),
            annotations: BTreeMap::from([(
                "semanifest.io/layout",
                format!("{} ({})", judgement.layout, judgement.source),
            )]),
        }
    }

    pub(crate) fn named(mut self, name: String) -> Metadata {
        self.name = name;
        self
    }

    pub(crate) fn annotate(mut self, key: &'static str, value: impl Into<String>) -> Metadata {
        self.annotations.insert(key, value.into());
        self
    }
}

/// Why an object could not be written as YAML (a bug, never bad input).
#[derive(Debug, thiserror::Error)]
#[error("writing {file_name}: {message}")]
pub struct RenderError {
    file_name: &'static str,
    message: String,
}

fn yaml<T: Serialize>(file_name: &'static str, object: &T) -> Result<Document, RenderError> {
    let yaml = serde_saphyr::to_string(object).map_err(|error| RenderError {
        file_name,
        message: error.to_string(),
    })?;
    Ok(Document { file_name, yaml })
}

/// The objects that enforce `judgement` in `format`, with `action`.
pub fn render(
    judgement: &Judgement,
    format: Format,
    action: Action,
) -> Result<Vec<Document>, RenderError> {
    let metadata = Metadata::of(judgement);
    match format {
        Format::Vap => {
            let rules = CelRules::of(judgement);
            Ok(vec![
                yaml(
                    "validatingadmissionpolicy.yaml",
                    &vap::policy(&rules, metadata.clone()),
                )?,
                yaml(
                    "validatingadmissionpolicybinding.yaml",
                    &vap::binding(action, metadata),
                )?,
            ])
        }
        Format::Kyverno => Ok(vec![yaml(
            "clusterpolicy.yaml",
            &kyverno::cluster_policy(&CelRules::of(judgement), action, metadata),
        )?]),
        Format::Gatekeeper => Ok(vec![
            yaml(
                "constrainttemplate.yaml",
                &gatekeeper::template(rego::policy(judgement), metadata.clone()),
            )?,
            yaml("constraint.yaml", &gatekeeper::constraint(action, metadata))?,
        ]),
    }
}

/// The documents as one YAML stream.
pub fn stream(documents: &[Document]) -> String {
    documents
        .iter()
        .map(|d| d.yaml.as_str())
        .collect::<Vec<_>>()
        .join("---\n")
}
