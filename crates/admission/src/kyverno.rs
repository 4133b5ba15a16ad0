//! Kyverno `ClusterPolicy` (kyverno.io/v1, Kyverno 1.13 or later): one
//! rule whose CEL is the ValidatingAdmissionPolicy's, word for word.

use serde::Serialize;

use crate::cel::{CelRules, Validation, Variable};
use crate::vap::Object;
use crate::{Action, Metadata};
use k8s::{PERSISTENT_VOLUME, POD_KINDS};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PolicySpec {
    background: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    emit_warning: bool,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
struct Rule {
    name: &'static str,
    #[serde(rename = "match")]
    matching: Match,
    validate: Validate,
}

#[derive(Serialize)]
struct Match {
    any: Vec<ResourceFilter>,
}

#[derive(Serialize)]
struct ResourceFilter {
    resources: Resources,
}

#[derive(Serialize)]
struct Resources {
    kinds: Vec<&'static str>,
    operations: Vec<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Validate {
    failure_action: &'static str,
    cel: Cel,
}

#[derive(Serialize)]
struct Cel {
    variables: Vec<Variable>,
    expressions: Vec<Validation>,
}

pub(crate) fn cluster_policy(
    rules: &CelRules,
    action: Action,
    metadata: Metadata,
) -> Object<PolicySpec> {
    let mut kinds: Vec<&'static str> = POD_KINDS.iter().map(|k| k.kind).collect();
    // `kubectl debug` adds containers through this subresource.
    kinds.insert(1, "Pod/ephemeralcontainers");
    kinds.push(PERSISTENT_VOLUME.kind);
    let metadata = metadata
        // The rule names every kind itself; Kyverno must not add rules of
        // its own for the controllers of pods.
        .annotate("pod-policies.kyverno.io/autogen-controllers", "none")
        .annotate(
            "policies.kyverno.io/title",
            "hostPath volumes the node layout allows",
        )
        .annotate(
            "policies.kyverno.io/description",
            "Written by semanifest admission from the node layout: the same hostPath judgement \
             as semanifest check --k8s and the ValidatingAdmissionPolicy.",
        );
    Object {
        api_version: "kyverno.io/v1",
        kind: "ClusterPolicy",
        metadata,
        spec: PolicySpec {
            background: true,
            emit_warning: action == Action::Warn,
            rules: vec![Rule {
                name: "hostpath",
                matching: Match {
                    any: vec![ResourceFilter {
                        resources: Resources {
                            kinds,
                            operations: vec!["CREATE", "UPDATE"],
                        },
                    }],
                },
                validate: Validate {
                    failure_action: match action {
                        Action::Deny => "Enforce",
                        Action::Warn | Action::Audit => "Audit",
                    },
                    cel: Cel {
                        variables: rules.variables.clone(),
                        expressions: rules.validations.clone(),
                    },
                },
            }],
        },
    }
}
