//! The codes of the manifest compiler's diagnostics (`error[CODE]`), each
//! declared with the rule it belongs to: a diagnostic names its code by
//! reference, and its rule follows from the declaration, never from a
//! lookup. `docs/manifest.md` lists them by rule.

use super::rules::*;
use crate::diag::code;

code!(YAML, "yaml", LAYOUT_YAML);
code!(TOO_LARGE, "too-large", LAYOUT_YAML);

code!(API_VERSION, "api-version", LAYOUT_HEADER);
code!(KIND, "kind", LAYOUT_HEADER);
code!(METADATA_NAME, "metadata-name", LAYOUT_HEADER);

code!(PATH_RELATIVE, "path-relative", LAYOUT_PATH);
code!(PATH_ROOT, "path-root", LAYOUT_PATH);
code!(PATH_CHARACTER, "path-character", LAYOUT_PATH);
code!(PATH_NOT_NORMALISED, "path-not-normalised", LAYOUT_PATH);
code!(PATH_DUPLICATE, "path-duplicate", LAYOUT_PATH);

code!(TYPE_NAME, "type-name", LAYOUT_TYPE);
code!(BASE_TYPE, "base-type", LAYOUT_TYPE);
code!(TYPE_IS_DOMAIN, "type-is-domain", LAYOUT_TYPE);
code!(TYPE_SHARED, "type-shared", LAYOUT_TYPE);
code!(DOMAIN_TYPE_DUPLICATE, "domain-type-duplicate", LAYOUT_TYPE);

code!(ACCESS_LEVEL, "access-level", LAYOUT_VALUE);
code!(DOMAIN_KEY, "domain-key", LAYOUT_VALUE);
code!(LIFECYCLE, "lifecycle", LAYOUT_VALUE);
code!(MODE, "mode", LAYOUT_VALUE);
code!(OWNER, "owner", LAYOUT_VALUE);
code!(PROPAGATION, "propagation", LAYOUT_VALUE);
code!(UNKNOWN_DOMAIN, "unknown-domain", LAYOUT_VALUE);
code!(TMPFS_SIZE, "tmpfs-size", LAYOUT_VALUE);
code!(STORE_OWNER, "store-owner", LAYOUT_VALUE);
code!(BOOLEAN_GRANTS, "boolean-grants", LAYOUT_VALUE);
code!(CAPACITY_LIMIT, "capacity-limit", LAYOUT_VALUE);
code!(CAPACITY_INODES, "capacity-inodes", LAYOUT_VALUE);
code!(MOUNT_OPTION, "mount-option", LAYOUT_VALUE);
code!(PRIVILEGED_EXCEPTION, "privileged-exception", LAYOUT_VALUE);

code!(CAPACITY_PROJECT, "capacity-project", LAYOUT_CAPACITY);
code!(CAPACITY_TMPFS, "capacity-tmpfs", LAYOUT_CAPACITY);

code!(PROTECTED_WORKLOAD, "protected-workload", LAYOUT_PROTECTION);
code!(PROTECTED_HOSTPATH, "protected-hostpath", LAYOUT_PROTECTION);
code!(
    PROTECTED_REMOVABLE,
    "protected-removable",
    LAYOUT_PROTECTION
);
code!(
    PROTECTED_UNDER_HOSTPATH,
    "protected-under-hostpath",
    LAYOUT_PROTECTION
);

code!(PROTECTED_AGENT, "protected-agent", LAYOUT_PROTECTION);

code!(WORKLOAD_TRUSTED, "workload-trusted", LAYOUT_WORKLOAD);
code!(WORKLOAD_TRANSITION, "workload-transition", LAYOUT_WORKLOAD);

code!(AGENT_TRUSTED, "agent-trusted", LAYOUT_AGENT);
code!(AGENT_WORKLOAD, "agent-workload", LAYOUT_AGENT);
code!(AGENT_FIELD, "agent-field", LAYOUT_AGENT);
code!(AGENT_TRANSITION, "agent-transition", LAYOUT_AGENT);
code!(HOST_CLASS, "host-class", LAYOUT_AGENT);
code!(HOST_LEVEL, "host-level", LAYOUT_AGENT);
code!(HOST_CLASS_STORE, "host-class-store", LAYOUT_AGENT);
code!(CAPABILITY, "capability", LAYOUT_AGENT);
code!(AGENT_BPF_SYS_ADMIN, "agent-bpf-sys-admin", LAYOUT_AGENT);

code!(AGENT_RAW_DISK, "agent-raw-disk", LAYOUT_AGENT_BEYOND_LABELS);
code!(AGENT_RUNTIME, "agent-runtime", LAYOUT_AGENT_BEYOND_LABELS);

code!(DOMAIN_UNUSED, "domain-unused", LAYOUT_UNUSED);

code!(TMPFS_PERSISTENT, "tmpfs-persistent", LAYOUT_TMPFS);

code!(NODE_UNIT, "node-unit", LAYOUT_NODE);
code!(NODE_UNIT_DUPLICATE, "node-unit-duplicate", LAYOUT_NODE);
code!(NODE_EXEC, "node-exec", LAYOUT_NODE);
code!(KUBENS_EXEC, "kubens-exec", LAYOUT_NODE);

/// Every code, for documentation and tests.
pub static CODES: [&crate::diag::Code; 52] = [
    &YAML,
    &TOO_LARGE,
    &API_VERSION,
    &KIND,
    &METADATA_NAME,
    &PATH_RELATIVE,
    &PATH_ROOT,
    &PATH_CHARACTER,
    &PATH_NOT_NORMALISED,
    &PATH_DUPLICATE,
    &TYPE_NAME,
    &BASE_TYPE,
    &TYPE_IS_DOMAIN,
    &TYPE_SHARED,
    &DOMAIN_TYPE_DUPLICATE,
    &ACCESS_LEVEL,
    &DOMAIN_KEY,
    &LIFECYCLE,
    &MODE,
    &OWNER,
    &PROPAGATION,
    &UNKNOWN_DOMAIN,
    &TMPFS_SIZE,
    &CAPACITY_LIMIT,
    &CAPACITY_INODES,
    &MOUNT_OPTION,
    &CAPACITY_PROJECT,
    &CAPACITY_TMPFS,
    &PROTECTED_WORKLOAD,
    &PROTECTED_HOSTPATH,
    &PROTECTED_REMOVABLE,
    &PROTECTED_UNDER_HOSTPATH,
    &PROTECTED_AGENT,
    &WORKLOAD_TRUSTED,
    &WORKLOAD_TRANSITION,
    &AGENT_TRUSTED,
    &AGENT_WORKLOAD,
    &AGENT_FIELD,
    &AGENT_TRANSITION,
    &HOST_CLASS,
    &HOST_LEVEL,
    &HOST_CLASS_STORE,
    &CAPABILITY,
    &AGENT_BPF_SYS_ADMIN,
    &AGENT_RAW_DISK,
    &AGENT_RUNTIME,
    &DOMAIN_UNUSED,
    &TMPFS_PERSISTENT,
    &NODE_UNIT,
    &NODE_UNIT_DUPLICATE,
    &NODE_EXEC,
    &KUBENS_EXEC,
];

#[cfg(test)]
mod tests {
    /// A code names one check. Control: the list twice is caught.
    #[test]
    fn ids_are_unique() {
        let unique = |codes: &[&crate::diag::Code]| {
            let ids: std::collections::BTreeSet<&str> = codes.iter().map(|c| c.id).collect();
            ids.len() == codes.len()
        };
        assert!(unique(&super::CODES));
        let twice: Vec<_> = super::CODES.iter().chain(&super::CODES).copied().collect();
        assert!(!unique(&twice));
    }
}
