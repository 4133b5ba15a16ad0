//! Kubernetes workload YAML, read for the hostPath volumes it mounts and
//! checked against the node's layout.
//!
//! Flow: [`load_paths`] (filesystem: `--k8s` files and directories, read
//! like `kubectl apply -R -f`) → [`parse_str`] (text only: the stream split
//! into documents, each parsed on its own; `List`s, workload kinds) →
//! [`Manifests`] (plain facts with positions, and the documents that could
//! not be read) → [`audit`] with [`HostPathRules`] (the judgement per
//! domain, computed from the layout model) →
//! [`Finding`](layout::diag::Finding)s.
//!
//! Invariants:
//! - The parser never touches the filesystem; only [`load_paths`] does.
//! - Every fact a finding points at carries the line and column it was
//!   written at, and positions name files as the user gave them.
//! - Bad input never panics. A document that cannot be read is an
//!   [`InvalidDocument`] with its position and never hides the other
//!   documents of its file; unknown kinds, workloads pinned to another OS
//!   and directory entries that are not manifests are skipped and noted,
//!   never rejected. Only a file that cannot be read at all is a
//!   [`FileReadError`].
//! - Paths are compared per component after normalising them the way the
//!   API server and the kernel do ([`NormalPath`]); nothing here resolves
//!   symlinks on the node: that is what the SELinux labels are for.

mod api;
mod audit;
mod files;
mod judgement;
mod kinds;
mod load;
mod path;
mod stream;
mod suggest;
mod workload;

pub use audit::{
    audit, audit_workload, invalid_document, RULES, RULE_INVALID_OBJECT, RULE_INVALID_PATH,
    RULE_INVALID_YAML, RULE_NOT_GRANTED, RULE_OUTSIDE_ROOT, RULE_PRIVILEGED,
    RULE_PRIVILEGED_ACCEPTED, RULE_PROTECTED, RULE_SELINUX_TYPE, RULE_SKIPPED, RULE_SKIPPED_FILE,
    RULE_SKIPPED_NON_LINUX, RULE_SOCKET_OR_DEVICE, RULE_WRITABLE_READ_ONLY, VALID_HOST_PATH_TYPES,
};
pub use files::{load_paths, FileReadError, Loaded};
pub use judgement::{
    ClassPath, DomainChoice, DomainKind, DomainRules, HostClassGrant, HostPathRules, MountAccess,
    PathGrant, PrivilegedExceptionRule, ProtectedPath, Protection, Verdict,
};
pub use kinds::{PodKind, PodSpecAt, OS_LABELS, PERSISTENT_VOLUME, POD_KINDS};
pub use load::{parse_source, parse_str};
pub use path::{HostPathError, NormalPath};
pub use suggest::{
    suggest, ChosenDomain, GrantMade, LayoutTextError, Status, SuggestError, SuggestedFile,
    Suggestion, WorkloadSuggestion,
};
pub use workload::{
    ContainerKind, ContainerSpot, HostPathMount, HostPathVolume, InvalidDocument, Invalidity,
    Manifests, PatchKind, PathOrigin, SelinuxSpots, SkipReason, SkippedFile, SkippedObject,
    SourceFile, Sourced, TypeSpot, Workload,
};
