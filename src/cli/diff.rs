//! `semanifest diff`: what a layout change means, for review.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args as ClapArgs, ValueEnum};
use layout::manifest;
use semanifest::diff::{self, render, sediff};

const AFTER_HELP: &str = "\
Reported, in the manifest's terms:
  domains      added, removed, type changed, trusted or workload set/unset
  transitions  which domain may start which
  paths        added, removed, type, mode and owner changed
  access       granted, widened, narrowed, revoked or changed, per domain
               and path (write ⊃ read/append ⊃ search; exec)
  traversal    search on ancestors that a grant brings or takes away
  protections, hostPath roots, removable roots, lifecycle, mounts
  labels       which existing paths change type: every path either layout
               names, its ancestors and what lies below it, looked up in
               both layouts' file_contexts by the lookup engine of `relabel`
  workloads    with --k8s: which hostPath volumes change verdict

Security-relevant (marked !): a protection removed; a workload domain
gaining access, traversal or a transition; a protected path gaining a
domain; a new hostPath or removable root; a domain becoming trusted or no
longer a workload; existing data moving out of a protected type or into a
type workloads are granted; a hostPath volume the new layout admits.

With --policy, both layouts are also compiled (secilc) and their allow
rules compared with sediff (setools); a rule that no reported change
explains is an error (exit 2): it would be a bug in semanifest.

Exit codes: 0 nothing security-relevant; 1 something security-relevant
(require a second review); 2 usage errors, bad input or an unexplained
policy difference.

Examples:
  semanifest diff git:main:node/layout.yaml node/layout.yaml
  semanifest diff old.yaml new.yaml --k8s deploy/ --format markdown > comment.md
  semanifest diff git:HEAD~1:layout.yaml layout.yaml --format json --policy";

#[derive(Clone, Copy, ValueEnum)]
pub enum DiffFormat {
    /// Grouped by category, security-relevant lines marked `!`.
    Human,
    /// GitHub-flavoured Markdown, ready to post as a pull-request comment.
    Markdown,
    /// Stable schema for machines (docs/diff-json.md).
    Json,
}

/// Show what a layout change means: access, protections, roots, labels.
#[derive(ClapArgs)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The layout before: a file, or git:REV:PATH (read with `git show`).
    old: String,
    /// The layout after: a file, or git:REV:PATH.
    new: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: DiffFormat,
    /// Kubernetes YAML files or directories whose hostPath volumes to
    /// judge against both layouts (repeatable).
    #[arg(long, value_name = "PATH")]
    k8s: Vec<PathBuf>,
    /// Also compile both layouts and check every allow rule sediff reports
    /// as changed is explained by the diff (needs secilc and sediff).
    #[arg(long)]
    policy: bool,
}

fn load(spec: &str) -> Result<manifest::Parsed> {
    let source = diff::source::read(spec)?;
    super::accept_layout(manifest::parse(source, &policy::base_facts()))
}

pub fn run(args: Args) -> Result<u8> {
    let (old, new) = match (load(&args.old), load(&args.new)) {
        (Ok(old), Ok(new)) => (old, new),
        (old, new) => {
            let errors = old.err().into_iter().chain(new.err()).collect();
            return Err(super::Errors(errors).into());
        }
    };
    let loaded = (!args.k8s.is_empty()).then(|| k8s::load_paths(&args.k8s));
    if let Some(loaded) = &loaded {
        if !loaded.errors.is_empty() {
            return Err(super::Errors::of_messages(&loaded.errors).into());
        }
    }
    let options = diff::DiffOptions {
        k8s: loaded.as_ref().map(|l| &l.manifests),
    };
    let result = diff::diff(&old, &new, &options)?;
    let text = match args.format {
        DiffFormat::Human => render::human(&result),
        DiffFormat::Markdown => render::markdown(&result),
        DiffFormat::Json => render::json(&result),
    };
    super::print_stdout(text.as_bytes())?;
    if args.policy {
        let check = sediff::cross_check(&old, &new, &result)?;
        if !check.unexplained.is_empty() {
            let rules: String = check
                .unexplained
                .iter()
                .map(|rule| format!("\n  {}", rule.line))
                .collect();
            bail!(
                "{} allow rule(s) changed that the diff does not explain (a bug in semanifest diff):{rules}",
                check.unexplained.len()
            );
        }
        eprintln!(
            "semanifest: policy cross-check: all {} allow rule change(s) reported by sediff are explained",
            check.rules.len()
        );
    }
    Ok(if result.security_relevant {
        super::EXIT_FINDINGS
    } else {
        super::EXIT_OK
    })
}
