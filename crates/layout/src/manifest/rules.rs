//! The rules of a layout manifest: every [`Diagnostic`](crate::diag::Diagnostic)
//! of the manifest compiler has a code ([`codes`](super::codes)) that
//! belongs to one of these. Their ids are part of `check`'s JSON and SARIF
//! contract.

use crate::diag::{rule, Rule};

rule!(LAYOUT_YAML, "layout-yaml", "LayoutYaml", Error,
    "The layout is not YAML of the documented shape.",
    "Nothing else can be checked until the manifest parses: unknown fields, duplicate keys and wrong types are refused, never guessed.");
rule!(
    LAYOUT_HEADER,
    "layout-header",
    "LayoutHeader",
    Error,
    "apiVersion, kind or metadata.name is wrong.",
    "The header says which schema the manifest follows and names the CIL module."
);
rule!(LAYOUT_PATH, "layout-path", "LayoutPath", Error,
    "A layout path is relative, not normalised, duplicated or has characters file_contexts cannot carry.",
    "Labels are matched by exact path text: a path that is not absolute, normalised and plain ASCII labels something else than intended, or breaks file_contexts for libselinux.");
rule!(LAYOUT_TYPE, "layout-type", "LayoutType", Error,
    "A type name is invalid, collides with a base or domain type, or is shared by paths that disagree.",
    "Once two paths share a type SELinux cannot tell them apart; reusing a base type silently changes what the base grants.");
rule!(LAYOUT_VALUE, "layout-value", "LayoutValue", Error,
    "A field has a value outside its allowed set (access level, domain, mode, owner, lifecycle, propagation).",
    "A value the compiler does not understand would otherwise be dropped and grant less, or more, than written.");
rule!(LAYOUT_PROTECTION, "layout-protection", "LayoutProtection", Error,
    "A protected path is granted to a workload, is a hostPath root, is removable, or lies below a hostPath root.",
    "Protected data must be unreachable by hostPath pods and never deleted by `rm`; anything else defeats the neverallow.");
rule!(
    LAYOUT_WORKLOAD,
    "layout-workload",
    "LayoutWorkload",
    Error,
    "A workload domain is trusted or can reach a privileged domain through transitions.",
    "A pod that can become trusted, or enter a domain with protected access, is not confined."
);
rule!(
    LAYOUT_UNUSED,
    "layout-unused-domain",
    "LayoutUnusedDomain",
    Warning,
    "A domain is declared but granted nothing.",
    "An unused domain is usually a typo in an `access` key."
);
rule!(LAYOUT_TMPFS, "layout-tmpfs-lifecycle", "LayoutTmpfsLifecycle", Warning,
    "A tmpfs mount is declared persistent.",
    "A tmpfs is empty at every boot; say `lifecycle: ephemeral` so tooling does not promise to keep it.");
rule!(LAYOUT_NODE, "layout-node", "LayoutNode", Error,
    "A runtime unit under spec.node is misnamed, listed twice, one semanifest generates, or has no command kubens can start.",
    "The generated units order the runtime after the labels by these names, and kubens restarts each one through kubensenter with its command: a wrong name or command leaves the runtime unordered, or failing to start.");
rule!(LAYOUT_CAPACITY, "layout-capacity", "LayoutCapacity", Error,
    "Two capacities share a project ID, or a tmpfs has a capacity.",
    "A project ID is what the filesystem counts objects by: two paths under one ID share one limit, and a tmpfs holds no project quotas semanifest sets.");

/// Every rule of a layout manifest, for documentation and SARIF.
pub static RULES: [&Rule; 11] = [
    &LAYOUT_YAML,
    &LAYOUT_HEADER,
    &LAYOUT_PATH,
    &LAYOUT_TYPE,
    &LAYOUT_VALUE,
    &LAYOUT_PROTECTION,
    &LAYOUT_WORKLOAD,
    &LAYOUT_UNUSED,
    &LAYOUT_TMPFS,
    &LAYOUT_NODE,
    &LAYOUT_CAPACITY,
];
