//! semanifest: compile a declarative `/var` layout into SELinux policy and
//! labels, relabel a tree fast, and check layouts, policy and workloads in CI.
//!
//! Data flows one way: `layout::manifest` (YAML → validated
//! `layout::model::Layout`) → `policy` (CIL + file_contexts + `secilc`) →
//! files on disk; and `selabel` (file_contexts → matcher) → `relabel`
//! (walker); `units` (the layout → systemd units that boot it). This crate
//! holds what sits above all of them: `diff` and `check`, and the command
//! line. See `ARCHITECTURE.md` for the map and each crate's invariants.

pub mod check;
pub mod diff;
