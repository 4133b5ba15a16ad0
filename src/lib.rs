//! semanifest: compile a declarative `/var` layout into SELinux policy and
//! labels, relabel a tree fast, and check layouts, policy and workloads in CI.
//!
//! Data flows one way: `manifest` (YAML → validated [`model::Layout`]) →
//! `policy` (CIL + file_contexts + `secilc`) → files on disk; and
//! `fcontext` (file_contexts → matcher) → `relabel` (walker); `units`
//! (the layout → systemd units that boot it).
//! See `ARCHITECTURE.md` for the map and each module's invariants.

pub mod check;
pub mod diag;
pub mod diff;
pub mod fcontext;
pub mod fsroot;
pub mod k8s;
pub mod manifest;
pub mod model;
pub mod node;
pub mod path_chain;
pub mod policy;
pub mod relabel;
pub mod store;
pub mod units;
