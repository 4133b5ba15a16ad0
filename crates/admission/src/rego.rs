//! The judgement as Rego, for Gatekeeper's ConstraintTemplate: the same
//! rules as `cel`, the same regular expressions (Rego's `regex.match` is
//! RE2 too), written as `violation` rules.

use k8s::{PodSpecAt, OS_LABELS, PERSISTENT_VOLUME, POD_KINDS};

use crate::decision::{at_line, Judgement, HOST_PATH_TYPES};
use crate::pattern::{PathTest, BACKSTEP};

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

# The type the container writes: its seLinuxOptions replaces the pod's as
# a whole.
effective_type(c) := t if {{
	c.securityContext.seLinuxOptions
	t := c.securityContext.seLinuxOptions.type
}}

effective_type(c) := t if {{
	not c.securityContext.seLinuxOptions
	t := pod_spec.securityContext.seLinuxOptions.type
}}

# The domain it runs in: that type, or else the pod domain's.
domain_type(c) := t if {{
	c.securityContext.seLinuxOptions
	t := object.get(c.securityContext.seLinuxOptions, "type", {pod})
}}

domain_type(c) := t if {{
	not c.securityContext.seLinuxOptions
	t := object.get(object.get(object.get(pod_spec, "securityContext", {{}}), "seLinuxOptions", {{}}), "type", {pod})
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

namespace := object.get(obj.metadata, "namespace", "")

namespace_prefix := "" if namespace == ""

namespace_prefix := sprintf("%s/", [namespace]) if namespace != ""

# A manifest without a namespace is matched as `{default_namespace}`, as `check` does.
namespace_or_default := namespace if namespace != ""

namespace_or_default := "{default_namespace}" if namespace == ""

exempt if concat("/", [namespace_or_default, object.get(obj.metadata, "name", "")]) in {exceptions}

# An accepted privileged container is judged for protected paths only.
accepted(c) if {{
	exempt
	c.securityContext.privileged == true
}}

judging contains c if {{
	some c in mounting
	not accepted(c)
}}

mounted(v) if {{
	some c in mounting
	some m in c.volumeMounts
	m.name == v.name
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
	regex.match(p.include, v.path)
	not excluded(p, v.path)
	msg := sprintf("%s: hostPath volume `%s` path `%s` is, lies inside or contains protected path %s; no pod may mount it", [subject, v.name, v.path, p.described])
}}

excluded(p, path) if regex.match(p.exclude, path)

# Each volume is judged by the domain of every container that mounts it;
# one no container mounts (a PersistentVolume's) by the pod domain.
violation contains {{"msg": msg}} if {{
	some v in volumes
	valid_path(v.path)
	not protected(v.path)
	not mounted(v)
	not granted({pod}, v.path)
	msg := sprintf("%s: hostPath volume `%s` path `%s` is judged for the pod domain `%s` and %s", [subject, v.name, v.path, {pod}, grant_reasons[{pod}]])
}}

violation contains {{"msg": msg}} if {{
	some v in volumes
	valid_path(v.path)
	not protected(v.path)
	some c in judging
	some m in c.volumeMounts
	m.name == v.name
	t := domain_type(c)
	not granted(t, v.path)
	msg := sprintf("%s: hostPath volume `%s` path `%s` is mounted by container `%s`, which runs as `%s`, and %s", [subject, v.name, v.path, c.name, t, grant_reasons[t]])
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
	not t in domain_types
	msg := sprintf("%s: container `%s` mounts a hostPath volume and runs as SELinux type `%s`, no workload or agent domain of {layout_text} ({types_text})", [subject, c.name, t])
}}
"#,
        os_labels = set(OS_LABELS),
        os = OS_LABELS[0],
        beta = OS_LABELS[1],
        pv = PERSISTENT_VOLUME.kind,
        backstep = raw(BACKSTEP),
        pod = string(judgement.rules.pod_type.as_deref().unwrap_or("")),
        types = set(HOST_PATH_TYPES),
        layout_text = sprintf_safe(&layout),
        types_text = sprintf_safe(&judgement.domain_types().join(", ")),
        default_namespace = layout::model::PrivilegedException::DEFAULT_NAMESPACE,
        exceptions = if judgement.rules.privileged_exceptions.is_empty() {
            "set()".to_owned()
        } else {
            set(judgement.privileged_exceptions())
        },
    ));
    rego.push_str("\nprotected_paths := [\n");
    for protected in &judgement.rules.protected {
        let described = string(&format!(
            "{} of {layout}",
            at_line(protected.path.as_str(), &protected.declared_at)
        ));
        for term in Judgement::protects(protected).terms {
            let exclude = term
                .exclude
                .map_or_else(String::new, |e| format!(", \"exclude\": {}", raw(&e)));
            rego.push_str(&format!(
                "\t{{\"include\": {}{exclude}, \"described\": {described}}},\n",
                raw(&term.include),
            ));
        }
    }
    rego.push_str("]\n\n");
    rego.push_str(&format!(
        "domain_types := {}\n\n",
        if judgement.rules.domains.is_empty() {
            "set()".to_owned()
        } else {
            set(judgement.domain_types())
        }
    ));
    rego.push_str(&test_rules("protected(p)", "", &judgement.protected_test()));
    // What each domain may mount; a type that is no domain is judged by
    // nothing here (the foreign-type rule refuses it).
    rego.push_str("\n# A type that is no domain is refused on its own (domain_types).\n");
    if judgement.pod_domain().is_none() {
        rego.push_str("granted(t, _) if {\n\tnot t in domain_types\n\tt != \"\"\n}\n");
    } else {
        rego.push_str("granted(t, _) if not t in domain_types\n");
    }
    for domain in &judgement.rules.domains {
        rego.push_str(&format!("\n# {}\n", domain.key));
        rego.push_str(&test_rules(
            "granted(t, p)",
            &format!("t == {}", string(&domain.selinux_type)),
            &Judgement::grant_test(domain),
        ));
    }
    let mut reasons: Vec<String> = judgement
        .rules
        .domains
        .iter()
        .map(|d| {
            format!(
                "\t{}: {},\n",
                string(&d.selinux_type),
                string(&judgement.describe_grants(d))
            )
        })
        .collect();
    if judgement.pod_domain().is_none() {
        reasons.push(format!(
            "\t\"\": {},\n",
            string(&format!(
                "is outside every hostPath root: {} declares no workload domain",
                judgement.describe_layout()
            ))
        ));
    }
    rego.push_str(&format!("\ngrant_reasons := {{\n{}}}\n", reasons.concat()));
    rego
}

/// The rules that make `head` (`name(p)`) true for the paths `p` in
/// `test`, each body starting with `guard` when there is one; a rule that
/// is never true when `test` is empty.
fn test_rules(head: &str, guard: &str, test: &PathTest) -> String {
    let guard = if guard.is_empty() {
        String::new()
    } else {
        format!("\t{guard}\n")
    };
    if test.is_empty() {
        let head = head.replace("(p)", "(_)").replace(", p)", ", _)");
        return format!("{head} if {{\n{guard}\tfalse\n}}\n");
    }
    test.terms
        .iter()
        .map(|term| {
            let exclude = term.exclude.as_ref().map_or_else(String::new, |e| {
                format!("\tnot regex.match({}, p)\n", raw(e))
            });
            format!(
                "{head} if {{\n{guard}\tregex.match({}, p)\n{exclude}}}\n",
                raw(&term.include)
            )
        })
        .collect()
}

/// Text placed inside a Rego string that `sprintf` formats: `%` doubled,
/// quotes and backslashes escaped.
fn sprintf_safe(text: &str) -> String {
    let quoted = string(&text.replace('%', "%%"));
    quoted[1..quoted.len() - 1].to_owned()
}
