//! `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy and its
//! binding.

use serde::Serialize;

use crate::cel::{CelRules, Validation, Variable};
use crate::{Action, Metadata, POLICY_NAME};
use k8s::{PodKind, PERSISTENT_VOLUME, POD_KINDS};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Object<S> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: Metadata,
    pub spec: S,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PolicySpec {
    failure_policy: &'static str,
    match_constraints: MatchConstraints,
    variables: Vec<Variable>,
    validations: Vec<Validation>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MatchConstraints {
    resource_rules: Vec<ResourceRule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceRule {
    api_groups: Vec<&'static str>,
    api_versions: Vec<&'static str>,
    operations: Vec<&'static str>,
    resources: Vec<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BindingSpec {
    policy_name: &'static str,
    validation_actions: Vec<&'static str>,
}

/// Every kind admission judges, grouped by API group in first-seen order.
pub(crate) fn kinds_by_group() -> Vec<(&'static str, Vec<PodKind>)> {
    let mut groups: Vec<(&'static str, Vec<PodKind>)> = Vec::new();
    for kind in POD_KINDS.iter().chain([&PERSISTENT_VOLUME]) {
        match groups.iter_mut().find(|(g, _)| *g == kind.group) {
            Some((_, kinds)) => kinds.push(*kind),
            None => groups.push((kind.group, vec![*kind])),
        }
    }
    groups
}

pub(crate) fn policy(rules: &CelRules, metadata: Metadata) -> Object<PolicySpec> {
    let resource_rules = kinds_by_group()
        .into_iter()
        .map(|(group, kinds)| {
            let mut resources: Vec<&'static str> = kinds.iter().map(|k| k.resource).collect();
            if group.is_empty() {
                // `kubectl debug` adds containers through this subresource.
                resources.insert(1, "pods/ephemeralcontainers");
            }
            ResourceRule {
                api_groups: vec![group],
                api_versions: vec!["v1"],
                operations: vec!["CREATE", "UPDATE"],
                resources,
            }
        })
        .collect();
    Object {
        api_version: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicy",
        metadata,
        spec: PolicySpec {
            failure_policy: "Fail",
            match_constraints: MatchConstraints { resource_rules },
            variables: rules.variables.clone(),
            validations: rules.validations.clone(),
        },
    }
}

pub(crate) fn binding(action: Action, metadata: Metadata) -> Object<BindingSpec> {
    let validation_actions = match action {
        Action::Deny => vec!["Deny"],
        Action::Warn => vec!["Warn"],
        Action::Audit => vec!["Audit"],
    };
    Object {
        api_version: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicyBinding",
        metadata,
        spec: BindingSpec {
            policy_name: POLICY_NAME,
            validation_actions,
        },
    }
}
