//! Kubernetes workload YAML, read for the hostPath volumes it mounts and
//! checked against the node's layout.
//!
//! Flow: [`load_paths`] (filesystem: `--k8s` files and directories) →
//! [`parse_str`] (text only: multi-document YAML, `List`s, workload kinds)
//! → [`Manifests`] (plain facts with positions) → [`audit`] with
//! [`HostPathRules`] → [`Finding`](crate::check::report::Finding)s.
//!
//! Invariants:
//! - The parser never touches the filesystem; only [`load_paths`] does.
//! - Every fact a finding points at carries the line and column it was
//!   written at, and positions name files as the user gave them.
//! - Bad input never panics: malformed YAML is a [`LoadError`] with its
//!   position; unknown kinds are skipped and noted, never rejected.
//! - Paths are compared per component after normalising them the way the
//!   API server and the kernel do ([`NormalPath`]); nothing here resolves
//!   symlinks on the node: that is what the SELinux labels are for.

mod api;
mod audit;
mod load;
mod model;
mod path;

pub use audit::{
    audit, HostPathRules, LayoutPathRule, RootRule, RULES, RULE_INVALID_PATH, RULE_OUTSIDE_ROOT,
    RULE_PRIVILEGED, RULE_PROTECTED, RULE_SELINUX_TYPE, RULE_SKIPPED, RULE_SOCKET_OR_DEVICE,
    RULE_WRITABLE_READ_ONLY,
};
pub use load::{load_paths, parse_source, parse_str, LoadError, LoadErrors, RULE_YAML};
pub use model::{
    ContainerKind, HostPathMount, HostPathVolume, Manifests, Position, SkippedObject, SourceFile,
    Sourced, Workload,
};
pub use path::{NormalPath, PathError};
