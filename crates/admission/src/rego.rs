//! The judgement as Rego, for Gatekeeper's ConstraintTemplate: the same
//! rules as `cel`, the same regular expressions (Rego's `regex.match` is
//! RE2 too), written as `violation` rules.

use crate::decision::{
    Judgement, PodSpecAt, HOST_PATH_TYPES, OS_LABELS, PERSISTENT_VOLUME, POD_KINDS,
};
use crate::pattern::{overlapping_any, BACKSTEP};

/// The Rego package (Gatekeeper requires it to be unique per template).
pub const PACKAGE: &str = "semanifesthostpath";

fn string(s: &str) -> String {
    // A JSON string is a Rego string.
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn set(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let items: Vec<String> = items.into_iter().map(|s| string(s.as_ref())).collect();
    format!("{{{}}}", items.join(", "))
}

/// A regular expression as a raw string (none of ours holds a backquote).
fn raw(pattern: &str) -> String {
    format!("`{pattern}`")
}

pub fn policy(judgement: &Judgement) -> String {
    let layout = judgement.describe_layout();
    let mut rego = format!(
        "package {PACKAGE}\n\n\
         # Written by semanifest admission from {layout}: the same hostPath\n\
         # judgement as `semanifest check --k8s`. Regenerate it, do not edit it.\n\n\
         import future.keywords.contains\n\
         import future.keywords.every\n\
         import future.keywords.if\n\
         import future.keywords.in\n\n\
         obj := input.review.object\n\n"
    );
    for at in [
        PodSpecAt::Spec,
        PodSpecAt::Template,
        PodSpecAt::SpecTemplate,
        PodSpecAt::JobTemplate,
    ] {
        let kinds: Vec<&str> = POD_KINDS
            .iter()
            .filter(|k| k.spec_at == at)
            .map(|k| k.kind)
            .collect();
        rego.push_str(&format!(
            "pod_spec := obj.{} if obj.kind in {}\n",
            at.fields().join("."),
            set(&kinds)
        ));
    }
    rego.push_str(&format!(
        r#"
os_labels := {os_labels}

# The OS the nodeSelector pins, in the order check reads the labels.
selector_os := os if {{
	os := pod_spec.nodeSelector["{os}"]
}} else := os if {{
	os := pod_spec.nodeSelector["{beta}"]
}}

term_pins(term) if {{
	some r in term.matchExpressions
	r.key in os_labels
	r.operator == "In"
	count(r.values) > 0
	not "linux" in r.values
}}

term_pins(term) if {{
	some r in term.matchExpressions
	r.key in os_labels
	r.operator == "NotIn"
	"linux" in r.values
}}

pinned_elsewhere if {{
	selector_os != "linux"
}}

pinned_elsewhere if {{
	not selector_os
	terms := pod_spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms
	count(terms) > 0
	every term in terms {{
		term_pins(term)
	}}
}}

volumes contains {{"name": object.get(obj.metadata, "name", ""), "path": object.get(obj.spec.hostPath, "path", ""), "type": object.get(obj.spec.hostPath, "type", "")}} if {{
	obj.kind == "{pv}"
	obj.spec.hostPath
}}

volumes contains {{"name": v.name, "path": object.get(v.hostPath, "path", ""), "type": object.get(v.hostPath, "type", "")}} if {{
	not pinned_elsewhere
	some v in pod_spec.volumes
	v.hostPath
}}

containers contains c if {{
	some list in ["initContainers", "containers", "ephemeralContainers"]
	some c in pod_spec[list]
}}

mounting contains c if {{
	some c in containers
	some m in c.volumeMounts
	some v in volumes
	v.name == m.name
}}

# The container's seLinuxOptions replaces the pod's as a whole.
effective_type(c) := t if {{
	c.securityContext.seLinuxOptions
	t := c.securityContext.seLinuxOptions.type
}}

effective_type(c) := t if {{
	not c.securityContext.seLinuxOptions
	t := pod_spec.securityContext.seLinuxOptions.type
}}

valid_path(p) if {{
	startswith(p, "/")
	not contains(p, "{{{{")
	not contains(p, "\u0000")
	not regex.match({backstep}, p)
}}

valid_sub_path(p) if {{
	not startswith(p, "/")
	not contains(p, "{{{{")
	not contains(p, "\u0000")
	not regex.match({backstep}, p)
}}

protected(p) if regex.match({protected}, p)

within_root(p) if regex.match({roots}, p)

namespace := object.get(obj.metadata, "namespace", "")

namespace_prefix := "" if namespace == ""

namespace_prefix := sprintf("%s/", [namespace]) if namespace != ""

# A manifest without a namespace is matched as `{default_namespace}`, as `check` does.
namespace_or_default := namespace if namespace != ""

namespace_or_default := "{default_namespace}" if namespace == ""

exempt if concat("/", [namespace_or_default, object.get(obj.metadata, "name", "")]) in {exceptions}

# An accepted privileged object whose volume `v` only privileged containers
# mount: judged for protected paths only.
only_accepted_mounts(v) if {{
	exempt
	some c in mounting
	some m in c.volumeMounts
	m.name == v.name
	not unaccepted_mount(v)
}}

unaccepted_mount(v) if {{
	some c in mounting
	some m in c.volumeMounts
	m.name == v.name
	not object.get(object.get(c, "securityContext", {{}}), "privileged", false) == true
}}

subject := concat("", [obj.kind, " ", namespace_prefix, object.get(obj.metadata, "name", "(unnamed)")])

violation contains {{"msg": msg}} if {{
	some v in volumes
	not valid_path(v.path)
	msg := sprintf("%s: hostPath volume `%s` path `%s` is not a path the node can judge (empty, relative, a `..` component, template braces); {layout_text}", [subject, v.name, v.path])
}}

violation contains {{"msg": msg}} if {{
	some v in volumes
	not v.type in {types}
	msg := sprintf("%s: hostPath volume `%s` has unknown type `%s`", [subject, v.name, v.type])
}}

violation contains {{"msg": msg}} if {{
	some v in volumes
	valid_path(v.path)
	some p in protected_paths
	regex.match(p.pattern, v.path)
	msg := sprintf("%s: hostPath volume `%s` path `%s` is, lies inside or contains protected path %s; no pod may mount it", [subject, v.name, v.path, p.described])
}}

violation contains {{"msg": msg}} if {{
	some v in volumes
	valid_path(v.path)
	not protected(v.path)
	not within_root(v.path)
	not only_accepted_mounts(v)
	msg := sprintf("%s: hostPath volume `%s` path `%s` is outside every hostPath root of {layout_text}: {roots_text}; move it below a root", [subject, v.name, v.path])
}}

violation contains {{"msg": msg}} if {{
	some c in mounting
	some m in c.volumeMounts
	object.get(m, "subPath", "") != ""
	some v in volumes
	v.name == m.name
	valid_path(v.path)
	not valid_sub_path(m.subPath)
	msg := sprintf("%s: container `%s` mounts a hostPath volume with subPath `%s`, which is absolute or holds a `..` component", [subject, c.name, m.subPath])
}}

violation contains {{"msg": msg}} if {{
	some c in mounting
	c.securityContext.privileged == true
	not exempt
	msg := sprintf("%s: container `%s` is privileged and mounts a hostPath volume: a privileged container runs unconfined, so the labels of {layout_text} do not hold it", [subject, c.name])
}}

violation contains {{"msg": msg}} if {{
	some c in mounting
	t := effective_type(c)
	not t in {workload_types}
	msg := sprintf("%s: container `%s` mounts a hostPath volume and runs as SELinux type `%s`, not a workload domain of {layout_text} ({types_text})", [subject, c.name, t])
}}
"#,
        os_labels = set(OS_LABELS),
        os = OS_LABELS[0],
        beta = OS_LABELS[1],
        pv = PERSISTENT_VOLUME.kind,
        backstep = raw(BACKSTEP),
        protected = judgement.protected_pattern().map_or_else(|| raw("$^"), |p| raw(&p)),
        roots = judgement.roots_pattern().map_or_else(|| raw("$^"), |p| raw(&p)),
        types = set(HOST_PATH_TYPES),
        workload_types = set(&judgement.workload_types),
        layout_text = sprintf_safe(&layout),
        roots_text = sprintf_safe(&Judgement::list(&judgement.roots)),
        types_text = sprintf_safe(&judgement.workload_types.join(", ")),
        default_namespace = layout::model::PrivilegedException::DEFAULT_NAMESPACE,
        exceptions = if judgement.privileged_exceptions.is_empty() {
            "set()".to_owned()
        } else {
            set(&judgement.privileged_exceptions)
        },
    ));
    rego.push_str("\nprotected_paths := [\n");
    for protected in &judgement.protected {
        let pattern = overlapping_any([&protected.path]).unwrap_or_default();
        rego.push_str(&format!(
            "\t{{\"pattern\": {}, \"described\": {}}},\n",
            raw(&pattern),
            string(&format!("{} of {layout}", protected.describe()))
        ));
    }
    rego.push_str("]\n");
    rego
}

/// Text placed inside a Rego string that `sprintf` formats: `%` doubled,
/// quotes and backslashes escaped.
fn sprintf_safe(text: &str) -> String {
    let quoted = string(&text.replace('%', "%%"));
    quoted[1..quoted.len() - 1].to_owned()
}
