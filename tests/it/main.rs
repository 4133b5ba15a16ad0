//! The integration tests, one binary: each module is what was once a test
//! binary of its own (`cargo test --test it relabel_setfiles::` runs one),
//! and `support` holds what several of them share. Linking one binary
//! instead of one per file saves most of the suite's link time.
//!
//! Every module shares the process with the others, so none changes
//! process-wide state (environment, resource limits, umask, working
//! directory, signal dispositions) in place: such work runs in a child
//! process (`sh -c 'ulimit …' semanifest …`, `.env(…)` on a `Command`) or on
//! the test's own thread (the node tests' private mount namespace).

// Tests report what they compare on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod admission;
mod admission_differential;
mod agent_policy;
mod agent_store;
mod base_policy;
mod build;
mod check;
mod ci_packages;
mod cli_broken_pipe;
mod compile_cil;
mod diff_golden;
mod docs_standalone;
mod fcontext_cli;
mod fcontext_compiled;
mod fcontext_corpus;
mod fcontext_debian;
mod fcontext_deep;
mod fcontext_load_errors;
mod fcontext_random;
mod fsroot;
mod golden;
mod host_classes;
mod k8s_cli;
mod k8s_corpus;
mod k8s_fuzz;
mod kernel_policy;
mod kubens;
mod layering;
mod layout_schema;
mod man_completions;
mod manifest_fuzz;
mod manifest_rules;
mod node;
mod one_binary;
mod proptest_layouts;
mod relabel_attacks;
mod relabel_bad_input;
mod relabel_digests;
mod relabel_modes;
mod relabel_setfiles;
mod sarif_schema;
mod store_container_selinux;
mod store_fedora;
mod store_quirks;
mod store_refpolicy;
mod suggest;
mod support;
mod system_pcre2;
mod units;
