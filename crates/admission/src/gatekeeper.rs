//! Gatekeeper: a `ConstraintTemplate` (templates.gatekeeper.sh/v1) whose
//! Rego is [`crate::rego`], and the constraint that applies it.

use serde::Serialize;

use crate::vap::{kinds_by_group, Object};
use crate::{Action, Metadata};

/// The constraint's kind, which the template defines as a CRD.
pub const CONSTRAINT_KIND: &str = "SemanifestHostPath";

#[derive(Serialize)]
pub(crate) struct TemplateSpec {
    crd: Crd,
    targets: Vec<Target>,
}

#[derive(Serialize)]
struct Crd {
    spec: CrdSpec,
}

#[derive(Serialize)]
struct CrdSpec {
    names: Names,
}

#[derive(Serialize)]
struct Names {
    kind: &'static str,
}

#[derive(Serialize)]
struct Target {
    target: &'static str,
    rego: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConstraintSpec {
    enforcement_action: &'static str,
    #[serde(rename = "match")]
    matching: ConstraintMatch,
}

#[derive(Serialize)]
struct ConstraintMatch {
    kinds: Vec<KindGroup>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KindGroup {
    api_groups: Vec<&'static str>,
    kinds: Vec<&'static str>,
}

/// Gatekeeper names a template after its constraint kind, lower-cased.
fn template_name() -> String {
    CONSTRAINT_KIND.to_lowercase()
}

pub(crate) fn template(rego: String, metadata: Metadata) -> Object<TemplateSpec> {
    Object {
        api_version: "templates.gatekeeper.sh/v1",
        kind: "ConstraintTemplate",
        metadata: metadata.named(template_name()),
        spec: TemplateSpec {
            crd: Crd {
                spec: CrdSpec {
                    names: Names {
                        kind: CONSTRAINT_KIND,
                    },
                },
            },
            targets: vec![Target {
                target: "admission.k8s.gatekeeper.sh",
                rego,
            }],
        },
    }
}

pub(crate) fn constraint(action: Action, metadata: Metadata) -> Object<ConstraintSpec> {
    Object {
        api_version: "constraints.gatekeeper.sh/v1beta1",
        kind: CONSTRAINT_KIND,
        metadata,
        spec: ConstraintSpec {
            enforcement_action: match action {
                Action::Deny => "deny",
                Action::Warn => "warn",
                Action::Audit => "dryrun",
            },
            matching: ConstraintMatch {
                kinds: kinds_by_group()
                    .into_iter()
                    .map(|(group, kinds)| KindGroup {
                        api_groups: vec![group],
                        kinds: kinds.iter().map(|k| k.kind).collect(),
                    })
                    .collect(),
            },
        },
    }
}
