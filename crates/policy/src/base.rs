//! The hand-written base policy (`policy/*.cil`), embedded in the binary.
//!
//! Invariants:
//! - [`BASE_POLICY`] lists the files in the order secilc must read them
//!   (file-name order); the text is exactly the committed file.
//! - The types (`base_types`) are read from that same text, so
//!   the compiler's idea of "a type the base defines" cannot drift from the
//!   policy. The scan understands CIL's comments, strings and nesting; it
//!   never fails, it only reports the declarations it sees.

use std::collections::BTreeSet;

use super::cil_scan::declarations;

/// The base policy files, `(file name, contents)`, in compilation order.
pub const BASE_POLICY: &[(&str, &str)] = &[
    (
        "00-classes.cil",
        include_str!("../../../policy/00-classes.cil"),
    ),
    ("10-mls.cil", include_str!("../../../policy/10-mls.cil")),
    ("20-core.cil", include_str!("../../../policy/20-core.cil")),
    (
        "30-domains.cil",
        include_str!("../../../policy/30-domains.cil"),
    ),
    (
        "40-oci-runtime.cil",
        include_str!("../../../policy/40-oci-runtime.cil"),
    ),
];

/// Every type the base policy declares with `(type NAME)`.
pub(crate) fn base_types() -> BTreeSet<&'static str> {
    declared_in_base("type")
}

fn declared_in_base(keyword: &str) -> BTreeSet<&'static str> {
    BASE_POLICY
        .iter()
        .flat_map(|(_, text)| declarations(text, keyword))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_policy_is_listed_in_file_name_order() {
        let names: Vec<&str> = BASE_POLICY.iter().map(|(name, _)| *name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn base_defines_the_names_the_generated_module_relies_on() {
        let types = base_types();
        for name in [
            "kernel_t",
            "init_t",
            "containerd_t",
            "kubelet_t",
            "container_t",
            "container_file_t",
            "os_file_t",
            "unlabeled_t",
            "null_device_t",
        ] {
            assert!(types.contains(name), "{name} missing from {types:?}");
        }
        let attributes = declared_in_base("typeattribute");
        for name in [
            "domain",
            "file_type",
            "semanifest_trusted",
            "semanifest_workload",
            "semanifest_process",
        ] {
            assert!(
                attributes.contains(name),
                "{name} missing from {attributes:?}"
            );
        }
        assert!(types.is_disjoint(&attributes));
    }
}
