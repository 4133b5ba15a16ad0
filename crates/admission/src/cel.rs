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

use k8s::{PodSpecAt, OS_LABELS, PERSISTENT_VOLUME, POD_KINDS};

use crate::decision::{Judgement, HOST_PATH_TYPES};
use crate::pattern::{PathTest, BACKSTEP};

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

/// Whether the string `value` is in `test`.
fn in_test(value: &str, test: &PathTest) -> String {
    if test.is_empty() {
        return "false".to_owned();
    }
    let terms: Vec<String> = test
        .terms
        .iter()
        .map(|term| match &term.exclude {
            None => format!("{value}.matches({})", literal(&term.include)),
            Some(exclude) => format!(
                "({value}.matches({}) && !{value}.matches({}))",
                literal(&term.include),
                literal(exclude)
            ),
        })
        .collect();
    format!("({})", terms.join(" || "))
}

/// Whether a container of domain type `t` may mount `path`: the chain of
/// each domain's [`Judgement::grant_test`]. A type that is no domain is
/// judged by nothing here (`foreignTypes` refuses it); `''` stands for
/// "no pod domain" when the layout has none, and is granted nothing.
fn granted(judgement: &Judgement, t: &str, path: &str) -> String {
    let mut chain = String::new();
    if judgement.pod_domain().is_none() {
        chain.push_str(&format!("{t} == '' ? false : "));
    }
    for domain in &judgement.rules.domains {
        chain.push_str(&format!(
            "{t} == {} ? {} : ",
            literal(&domain.selinux_type),
            in_test(path, &Judgement::grant_test(domain))
        ));
    }
    chain.push_str("true");
    format!("({chain})")
}

/// The type of the domain container `c` runs in: its effective
/// `seLinuxOptions.type`, or the pod domain's (`''` without one).
fn domain_type(judgement: &Judgement) -> String {
    let pod = literal(judgement.rules.pod_type.as_deref().unwrap_or(""));
    format!(
        "(has(c.securityContext) && has(c.securityContext.seLinuxOptions) \
         ? (has(c.securityContext.seLinuxOptions.type) ? c.securityContext.seLinuxOptions.type : {pod}) \
         : (size(variables.podSelinuxType) > 0 ? variables.podSelinuxType[0] : {pod}))"
    )
}

/// The effective `seLinuxOptions.type` of container `c` as a list of at
/// most one: the container's `seLinuxOptions` replaces the pod's whole.
const EFFECTIVE_TYPE: &str = "(has(c.securityContext) && has(c.securityContext.seLinuxOptions) \
    ? (has(c.securityContext.seLinuxOptions.type) ? [c.securityContext.seLinuxOptions.type] : []) \
    : variables.podSelinuxType)";

/// Whether container `c` is privileged.
const PRIVILEGED_CONTAINER: &str = "has(c.securityContext) && has(c.securityContext.privileged) \
    && c.securityContext.privileged == true";

/// Containers mounting a hostPath that are privileged.
const PRIVILEGED: &str = "variables.mountingContainers.filter(c, has(c.securityContext) \
    && has(c.securityContext.privileged) && c.securityContext.privileged == true)";

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
        let exceptions = judgement.privileged_exceptions();
        if !exceptions.is_empty() {
            // A manifest without a namespace is matched as `default`, as
            // `check` does; the API server always sets the request's.
            variables.push(Variable {
                name: "exempt",
                expression: format!(
                    "(request.namespace != '' ? request.namespace : {}) + '/' \
                     + (has(object.metadata.name) ? object.metadata.name : '') in {}",
                    literal(layout::model::PrivilegedException::DEFAULT_NAMESPACE),
                    list(&exceptions)
                ),
            });
            // An accepted privileged container is judged for protected
            // paths only.
            variables.push(Variable {
                name: "judgingContainers",
                expression: format!(
                    "variables.exempt ? variables.mountingContainers.filter(c, !({PRIVILEGED_CONTAINER})) \
                     : variables.mountingContainers"
                ),
            });
        }
        let judging = if exceptions.is_empty() {
            "variables.mountingContainers"
        } else {
            "variables.judgingContainers"
        };
        let protected = in_test("v.path", &judgement.protected_test());
        let domain_type = domain_type(judgement);
        let pod_granted = match judgement.pod_domain() {
            Some(pod) => in_test("v.path", &Judgement::grant_test(pod)),
            None => "false".to_owned(),
        };
        let mounts_v = "c.volumeMounts.exists(m, m.name == v.name)";
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
                    "variables.hostPathVolumes.filter(v, {} && {protected})",
                    valid_path("v.path"),
                ),
            },
            // Each volume is judged by the domain of every container that
            // mounts it; one no container mounts (a PersistentVolume's) by
            // the pod domain.
            Variable {
                name: "notGranted",
                expression: format!(
                    "variables.hostPathVolumes.filter(v, {} && !{protected} \
                     && (variables.mountingContainers.exists(c, {mounts_v}) \
                         ? {judging}.exists(c, {mounts_v} \
                             && [{domain_type}].exists(t, !{})) \
                         : !{pod_granted}))",
                    valid_path("v.path"),
                    granted(judgement, "t", "v.path"),
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
                expression: if exceptions.is_empty() {
                    PRIVILEGED.to_owned()
                } else {
                    format!("variables.exempt ? [] : {PRIVILEGED}")
                },
            },
            Variable {
                name: "foreignTypes",
                expression: format!(
                    "variables.mountingContainers.filter(c, {EFFECTIVE_TYPE}.exists(t, !(t in {})))",
                    list(judgement.domain_types())
                ),
            },
        ]);

        let more = |var: &str| {
            format!(
                "(size(variables.{var}) > 1 ? ' (and ' + string(size(variables.{var}) - 1) + ' more)' : '')"
            )
        };
        let layout = judgement.describe_layout();
        let volume_message = |var: &str, why: String| {
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
        let types = judgement.domain_types().join(", ");
        let not_granted_why = format!(
            "is not granted to the domain of a container that mounts it (roots for workload domains, \
             layout paths and host classes for agents) by {layout}"
        );
        let rules: [(&str, String, Option<String>, &str); 6] = [
            (
                "invalidPaths",
                format!(
                    "is not a path the node can judge (empty, relative, a `..` component, template braces) \
                     or its type is unknown; {layout}"
                ),
                None,
                "Invalid",
            ),
            (
                "protectedPaths",
                format!(
                    "is, lies inside or contains a protected path of {layout}: {}; no pod may mount it",
                    judgement.list_protected()
                ),
                Some(protected_reason(judgement, &layout)),
                "Forbidden",
            ),
            (
                "notGranted",
                not_granted_why,
                Some(not_granted_reason(judgement, judging, &domain_type)),
                "Forbidden",
            ),
            (
                "invalidSubPaths",
                "mounts a hostPath volume with a subPath that is absolute or holds a `..` component"
                    .to_owned(),
                None,
                "Invalid",
            ),
            (
                "privileged",
                format!(
                    "is privileged and mounts a hostPath volume: a privileged container runs unconfined, \
                     so the labels of {layout} do not hold it"
                ),
                None,
                "Forbidden",
            ),
            (
                "foreignTypes",
                format!(
                    "mounts a hostPath volume and runs as an SELinux type that is no workload or agent \
                     domain of {layout} ({types})"
                ),
                None,
                "Forbidden",
            ),
        ];
        let about_volume = ["invalidPaths", "protectedPaths", "notGranted"];
        let validations = rules
            .into_iter()
            .map(|(var, why, reason, kind)| {
                let is_volume = about_volume.contains(&var);
                let message_expression = if is_volume {
                    volume_message(var, reason.unwrap_or_else(|| literal(&why)))
                } else {
                    container_message(var, &why)
                };
                let subject = if is_volume {
                    "a hostPath volume"
                } else {
                    "a container"
                };
                Validation {
                    expression: format!("size(variables.{var}) == 0"),
                    message: format!("{subject} {why}"),
                    message_expression,
                    reason: kind,
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
    for protected in judgement.rules.protected.iter().rev() {
        reason = format!(
            "({} ? {} : {reason})",
            in_test(
                "variables.protectedPaths[0].path",
                &Judgement::protects(protected)
            ),
            literal(&format!(
                "is, lies inside or contains protected path {} of {layout}; no pod may mount it",
                crate::decision::at_line(protected.path.as_str(), &protected.declared_at)
            ))
        );
    }
    reason
}

/// A CEL expression naming the first container that may not mount the
/// first volume of `variables.notGranted`, its domain, and what that
/// domain may mount (with layout lines); for a volume no container mounts,
/// the pod domain's.
fn not_granted_reason(judgement: &Judgement, judging: &str, domain_type: &str) -> String {
    let mut reasons: Vec<(String, String)> = judgement
        .rules
        .domains
        .iter()
        .map(|d| (d.selinux_type.clone(), judgement.describe_grants(d)))
        .collect();
    if judgement.pod_domain().is_none() {
        reasons.push((
            String::new(),
            format!(
                "is outside every hostPath root: {} declares no workload domain",
                judgement.describe_layout()
            ),
        ));
    }
    let reasons = format!(
        "{{{}}}",
        reasons
            .iter()
            .map(|(t, why)| format!("{}: {}", literal(t), literal(why)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let pod = literal(judgement.rules.pod_type.as_deref().unwrap_or(""));
    let v = "variables.notGranted[0]";
    let mounts_v = format!("c.volumeMounts.exists(m, m.name == {v}.name)");
    format!(
        "(variables.mountingContainers.exists(c, {mounts_v}) \
          ? {judging}.filter(c, {mounts_v} && [{domain_type}].exists(t, !{})) \
              .map(c, 'is mounted by container `' + c.name + '`, which runs as `' + {domain_type} \
                   + '`, and ' + {reasons}[{domain_type}])[0] \
          : 'is judged for the pod domain `' + {pod} + '` and ' + {reasons}[{pod}])",
        granted(judgement, "t", &format!("{v}.path")),
    )
}
