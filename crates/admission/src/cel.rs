//! The judgement as CEL: the variables and validations shared by the
//! ValidatingAdmissionPolicy and Kyverno's CEL rule.
//!
//! Only CEL's standard library is used (`has`, macros, `matches`,
//! `startsWith`, `contains`, `size`, `string`): every expression compiles
//! in any conformant implementation, and the API server's extension
//! libraries are not needed. Each rule is a variable holding what breaks
//! it (hostPath volumes or containers), so a validation is `size(…) == 0`
//! and its message names the first offender.

use serde::Serialize;

use crate::decision::{
    Judgement, PodSpecAt, HOST_PATH_TYPES, OS_LABELS, PERSISTENT_VOLUME, POD_KINDS,
};
use crate::pattern::BACKSTEP;

/// `variables[]`: a name and its expression, evaluated in order.
#[derive(Clone, Debug, Serialize)]
pub struct Variable {
    pub name: &'static str,
    pub expression: String,
}

/// `validations[]`: passes when `expression` is true.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Validation {
    pub expression: String,
    pub message: String,
    pub message_expression: String,
    pub reason: &'static str,
}

/// The CEL form of a [`Judgement`].
#[derive(Clone, Debug)]
pub struct CelRules {
    pub variables: Vec<Variable>,
    pub validations: Vec<Validation>,
}

/// `s` as a CEL string literal.
pub fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn list(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let items: Vec<String> = items.into_iter().map(|s| literal(s.as_ref())).collect();
    format!("[{}]", items.join(", "))
}

/// `object.a.b` when every field on the way is set, else `{}`.
fn guarded(fields: &[&str]) -> String {
    let mut guards = Vec::new();
    let mut path = "object".to_owned();
    for field in fields {
        path = format!("{path}.{field}");
        guards.push(format!("has({path})"));
    }
    format!("({} ? {path} : {{}})", guards.join(" && "))
}

/// Whether a written path is one `k8s::NormalPath` accepts: not empty,
/// absolute, no `..` component, no template braces, no NUL.
fn valid_path(path: &str) -> String {
    format!(
        "({path}.startsWith('/') && !{path}.contains('{{{{') && !{path}.contains('\\u0000') \
         && !{path}.matches({}))",
        literal(BACKSTEP)
    )
}

/// Whether a `subPath` joins a path as `NormalPath::join` accepts it.
fn valid_sub_path(sub_path: &str) -> String {
    format!(
        "(!{sub_path}.startsWith('/') && !{sub_path}.contains('{{{{') && !{sub_path}.contains('\\u0000') \
         && !{sub_path}.matches({}))",
        literal(BACKSTEP)
    )
}

fn matches(value: &str, pattern: &Option<String>) -> String {
    match pattern {
        Some(pattern) => format!("{value}.matches({})", literal(pattern)),
        None => "false".to_owned(),
    }
}

/// The effective `seLinuxOptions.type` of container `c` as a list of at
/// most one: the container's `seLinuxOptions` replaces the pod's whole.
const EFFECTIVE_TYPE: &str = "(has(c.securityContext) && has(c.securityContext.seLinuxOptions) \
    ? (has(c.securityContext.seLinuxOptions.type) ? [c.securityContext.seLinuxOptions.type] : []) \
    : variables.podSelinuxType)";

/// Containers mounting a hostPath that are privileged.
const PRIVILEGED: &str = "variables.mountingContainers.filter(c, has(c.securityContext) \
    && has(c.securityContext.privileged) && c.securityContext.privileged == true)";

/// Appended to a hostPath volume filter: not when the object is an accepted
/// privileged exception and only privileged containers mount volume `v`
/// (those judge protected paths only, as in `check`).
const ONLY_ACCEPTED_MOUNT: &str = " && !(variables.exempt \
    && variables.mountingContainers.exists(c, c.volumeMounts.exists(m, m.name == v.name)) \
    && variables.mountingContainers.all(c, !c.volumeMounts.exists(m, m.name == v.name) \
       || (has(c.securityContext) && has(c.securityContext.privileged) \
           && c.securityContext.privileged == true)))";

impl CelRules {
    pub fn of(judgement: &Judgement) -> CelRules {
        let spec_branches: Vec<String> = [
            PodSpecAt::Spec,
            PodSpecAt::Template,
            PodSpecAt::SpecTemplate,
            PodSpecAt::JobTemplate,
        ]
        .into_iter()
        .map(|at| {
            let kinds: Vec<&str> = POD_KINDS
                .iter()
                .filter(|k| k.spec_at == at)
                .map(|k| k.kind)
                .collect();
            format!("object.kind in {} ? {}", list(&kinds), guarded(at.fields()))
        })
        .collect();
        let pod_spec = format!("{} : {{}}", spec_branches.join(" : "));

        let [os, beta_os] = OS_LABELS.map(literal);
        let selector = "variables.podSpec.nodeSelector";
        let terms = "variables.podSpec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
        let os_labels = list(OS_LABELS);
        let linux = format!(
            "has({selector}) && {os} in {selector} ? {selector}[{os}] == 'linux' \
             : has({selector}) && {beta_os} in {selector} ? {selector}[{beta_os}] == 'linux' \
             : !(has(variables.podSpec.affinity) && has(variables.podSpec.affinity.nodeAffinity) \
                 && has({terms}) && has({terms}.nodeSelectorTerms) \
                 && size({terms}.nodeSelectorTerms) > 0 \
                 && {terms}.nodeSelectorTerms.all(t, has(t.matchExpressions) && t.matchExpressions.exists(r, \
                      has(r.key) && r.key in {os_labels} && has(r.operator) && has(r.values) \
                      && ((r.operator == 'In' && size(r.values) > 0 && !('linux' in r.values)) \
                          || (r.operator == 'NotIn' && 'linux' in r.values)))))"
        );

        let volume = "{'name': v.name, 'path': has(v.hostPath.path) ? v.hostPath.path : '', \
                      'type': has(v.hostPath.type) ? v.hostPath.type : ''}";
        let host_path_volumes = format!(
            "object.kind == {pv} \
             ? (has(object.spec) && has(object.spec.hostPath) \
                ? [{{'name': has(object.metadata.name) ? object.metadata.name : '', \
                     'path': has(object.spec.hostPath.path) ? object.spec.hostPath.path : '', \
                     'type': has(object.spec.hostPath.type) ? object.spec.hostPath.type : ''}}] : []) \
             : !variables.linux ? [] \
             : has(variables.podSpec.volumes) \
                ? variables.podSpec.volumes.filter(v, has(v.hostPath)).map(v, {volume}) : []",
            pv = literal(PERSISTENT_VOLUME.kind),
        );
        let containers = ["initContainers", "containers", "ephemeralContainers"]
            .map(|list| format!("(has(variables.podSpec.{list}) ? variables.podSpec.{list} : [])"))
            .join(" + ");

        // Of an object's metadata, CEL sees only `name` and `generateName`;
        // the namespace is the request's.
        let subject = "object.kind + ' ' \
            + (request.namespace != '' ? request.namespace + '/' : '') \
            + (has(object.metadata.name) ? object.metadata.name \
               : has(object.metadata.generateName) ? object.metadata.generateName + '*' : '(unnamed)')";

        let mut variables = vec![
            Variable { name: "podSpec", expression: pod_spec },
            Variable { name: "linux", expression: linux },
            Variable { name: "hostPathVolumes", expression: host_path_volumes },
            Variable { name: "containers", expression: containers },
            Variable {
                name: "mountingContainers",
                expression: "variables.containers.filter(c, has(c.volumeMounts) && c.volumeMounts.exists(m, \
                             variables.hostPathVolumes.exists(v, v.name == m.name)))"
                    .to_owned(),
            },
            Variable {
                name: "podSelinuxType",
                expression: "has(variables.podSpec.securityContext) \
                    && has(variables.podSpec.securityContext.seLinuxOptions) \
                    && has(variables.podSpec.securityContext.seLinuxOptions.type) \
                    ? [variables.podSpec.securityContext.seLinuxOptions.type] : []"
                    .to_owned(),
            },
            Variable { name: "subject", expression: subject.to_owned() },
        ];
        if !judgement.privileged_exceptions.is_empty() {
            // A manifest without a namespace is matched as `default`, as
            // `check` does; the API server always sets the request's.
            variables.push(Variable {
                name: "exempt",
                expression: format!(
                    "(request.namespace != '' ? request.namespace : {}) + '/' \
                     + (has(object.metadata.name) ? object.metadata.name : '') in {}",
                    literal(layout::model::PrivilegedException::DEFAULT_NAMESPACE),
                    list(&judgement.privileged_exceptions)
                ),
            });
        }
        variables.extend([
            Variable {
                name: "invalidPaths",
                expression: format!(
                    "variables.hostPathVolumes.filter(v, !{} || !(v.type in {}))",
                    valid_path("v.path"),
                    list(HOST_PATH_TYPES)
                ),
            },
            Variable {
                name: "protectedPaths",
                expression: format!(
                    "variables.hostPathVolumes.filter(v, {} && {})",
                    valid_path("v.path"),
                    matches("v.path", &judgement.protected_pattern())
                ),
            },
            Variable {
                name: "outsideRoots",
                expression: format!(
                    "variables.hostPathVolumes.filter(v, {} && !{} && !{}{})",
                    valid_path("v.path"),
                    matches("v.path", &judgement.protected_pattern()),
                    matches("v.path", &judgement.roots_pattern()),
                    if judgement.privileged_exceptions.is_empty() {
                        ""
                    } else {
                        ONLY_ACCEPTED_MOUNT
                    }
                ),
            },
            Variable {
                name: "invalidSubPaths",
                expression: format!(
                    "variables.mountingContainers.filter(c, c.volumeMounts.exists(m, \
                     has(m.subPath) && m.subPath != '' \
                     && variables.hostPathVolumes.exists(v, v.name == m.name && {}) \
                     && !{}))",
                    valid_path("v.path"),
                    valid_sub_path("m.subPath")
                ),
            },
            Variable {
                name: "privileged",
                expression: if judgement.privileged_exceptions.is_empty() {
                    PRIVILEGED.to_owned()
                } else {
                    format!("variables.exempt ? [] : {PRIVILEGED}")
                },
            },
            Variable {
                name: "foreignTypes",
                expression: format!(
                    "variables.mountingContainers.filter(c, {EFFECTIVE_TYPE}.exists(t, !(t in {})))",
                    list(&judgement.workload_types)
                ),
            },
        ]);

        let more = |var: &str| {
            format!(
                "(size(variables.{var}) > 1 ? ' (and ' + string(size(variables.{var}) - 1) + ' more)' : '')"
            )
        };
        let layout = judgement.describe_layout();
        let volume_message = |var: &str, why: &str| {
            let why = if var == "protectedPaths" {
                protected_reason(judgement, &layout)
            } else {
                literal(why)
            };
            format!(
                "variables.subject + ': hostPath volume `' + variables.{var}[0].name + '` path `' \
                 + variables.{var}[0].path + '` ' + {why} + {}",
                more(var)
            )
        };
        let container_message = |var: &str, why: &str| {
            format!(
                "variables.subject + ': container `' + variables.{var}[0].name + '` ' + {} + {}",
                literal(why),
                more(var)
            )
        };
        let roots = Judgement::list(&judgement.roots);
        let protected = Judgement::list(&judgement.protected);
        let types = judgement.workload_types.join(", ");
        let rules: [(&str, String, bool, &str); 6] = [
            (
                "invalidPaths",
                format!(
                    "is not a path the node can judge (empty, relative, a `..` component, template braces) \
                     or its type is unknown; {layout}"
                ),
                true,
                "Invalid",
            ),
            (
                "protectedPaths",
                format!(
                    "is, lies inside or contains a protected path of {layout}: {protected}; no pod may mount it"
                ),
                true,
                "Forbidden",
            ),
            (
                "outsideRoots",
                format!(
                    "is outside every hostPath root of {layout}: {roots}; move it below a root"
                ),
                true,
                "Forbidden",
            ),
            (
                "invalidSubPaths",
                "mounts a hostPath volume with a subPath that is absolute or holds a `..` component"
                    .to_owned(),
                false,
                "Invalid",
            ),
            (
                "privileged",
                format!(
                    "is privileged and mounts a hostPath volume: a privileged container runs unconfined, \
                     so the labels of {layout} do not hold it"
                ),
                false,
                "Forbidden",
            ),
            (
                "foreignTypes",
                format!(
                    "mounts a hostPath volume and runs as an SELinux type that is not a workload domain \
                     of {layout} ({types})"
                ),
                false,
                "Forbidden",
            ),
        ];
        let validations = rules
            .into_iter()
            .map(|(var, why, about_volume, reason)| {
                let message_expression = if about_volume {
                    volume_message(var, &why)
                } else {
                    container_message(var, &why)
                };
                let subject = if about_volume {
                    "a hostPath volume"
                } else {
                    "a container"
                };
                Validation {
                    expression: format!("size(variables.{var}) == 0"),
                    message: format!("{subject} {why}"),
                    message_expression,
                    reason,
                }
            })
            .collect();
        CelRules {
            variables,
            validations,
        }
    }
}

/// A CEL expression naming the first protected path, with its layout
/// line, that the first offending volume (`variables.protectedPaths[0]`)
/// touches.
fn protected_reason(judgement: &Judgement, layout: &str) -> String {
    let mut reason = literal(&format!(
        "touches a protected path of {layout}; no pod may mount it"
    ));
    for protected in judgement.protected.iter().rev() {
        let pattern = crate::pattern::overlapping_any([&protected.path]);
        reason = format!(
            "({} ? {} : {reason})",
            matches("variables.protectedPaths[0].path", &pattern),
            literal(&format!(
                "is, lies inside or contains protected path {} of {layout}; no pod may mount it",
                protected.describe()
            ))
        );
    }
    reason
}
