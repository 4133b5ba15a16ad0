//! Label findings: walk a tree with the relabeler in check mode (nothing is
//! written) and report every object whose `security.selinux` differs from
//! what the layout's file_contexts says; then run `apply` in check mode and
//! report every declared directory that is missing, blocked, or has
//! another mode or owner than the layout declares (its label drift is
//! already a `labels-drift` finding of the walk).

use std::path::{Path, PathBuf};

use crate::check::rules;
use fsroot::Root;
use layout::diag::{Finding, Rule, Severity};
use layout::model::Layout;
use node::apply::What;
use node::{self, ApplyMode, NodeError};
use relabel::{self, Collector, EscapedPath, RelabelError, RelabelOptions, WriteMode};
use selabel::FileContexts;

/// Why the label phase could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LabelsError {
    #[error(transparent)]
    Relabel(#[from] RelabelError),
    #[error(transparent)]
    Apply(#[from] NodeError),
}

fn finding(rule: &'static Rule, message: String) -> Finding {
    Finding::new(rule, message)
}

/// What the walk found: findings in path order, and the totals.
pub(crate) struct LabelReport {
    pub findings: Vec<Finding>,
    pub summary: relabel::Summary,
}

/// Checks the labels under `root`, an image or node root: `ROOT/var/x` is
/// looked up as `/var/x`, like `setfiles -r ROOT`; then the declared
/// directories' existence, mode and owner, as `apply --check` does,
/// keeping the symlinks at `keep` as `apply --keep-symlink` does (each one
/// kept is a note).
pub(crate) fn check(
    layout: &Layout,
    contexts: &FileContexts,
    root: &Path,
    keep: &[String],
) -> Result<LabelReport, LabelsError> {
    let mut report = walk(contexts, root)?;
    let root = Root::open(root).map_err(NodeError::from)?;
    // Capacities are `apply --check`'s and `df`'s: an image root has no
    // project quotas to judge.
    let applied = node::apply_with(
        layout,
        contexts,
        &root,
        ApplyMode::Check,
        keep,
        node::CapacityMode::Skip,
    )?;
    report.findings.extend(applied.kept.iter().map(|kept| {
        finding(
            &rules::APPLY_KEPT_SYMLINK,
            format!(
                "{}: a symlink to {}, kept as the image holds it (never followed)",
                kept.path, kept.target
            ),
        )
    }));
    for change in &applied.changes {
        let (rule, severity, message) = match &change.what {
            // The walk reported it.
            What::Label { .. } => continue,
            What::Created { .. } => (
                &rules::APPLY_MISSING,
                Severity::Warning,
                format!("{} is missing; `semanifest apply` creates it", change.path),
            ),
            What::Mode { found, wanted } => (
                &rules::APPLY_DRIFT,
                Severity::Error,
                format!("{} has mode {found}, the layout says {wanted}", change.path),
            ),
            What::Owner { found, wanted } => (
                &rules::APPLY_DRIFT,
                Severity::Error,
                format!(
                    "{} is owned by {found}, the layout says {wanted}",
                    change.path
                ),
            ),
            What::MountFlags { missing } => (
                &rules::APPLY_DRIFT,
                Severity::Error,
                format!(
                    "{} is mounted without {}; its mount unit binds it onto itself with them",
                    change.path,
                    missing.join(", ")
                ),
            ),
            What::Project { .. } | What::Limits { .. } => continue,
            What::Trash { entries, .. } => (
                &rules::APPLY_DRIFT,
                Severity::Warning,
                format!(
                    "{} holds a trash ({}), left by an interrupted prune or holding what a \
                     prune could not delete (an immutable file, a mount placed in it){}; \
                     `semanifest prune` or `apply` tries again, and names what stays",
                    change.path,
                    node::TRASH_NAME,
                    match entries {
                        Some(entries) => format!(": {entries} entries"),
                        None => String::new(),
                    }
                ),
            ),
        };
        report.findings.push(Finding {
            severity,
            ..finding(rule, message)
        });
    }
    report.findings.extend(
        applied
            .errors
            .iter()
            .map(|error| finding(&rules::APPLY_BLOCKED, error.to_string())),
    );
    Ok(report)
}

/// The relabeler's walk in dry-run mode.
fn walk(contexts: &FileContexts, root: &Path) -> Result<LabelReport, RelabelError> {
    let root: PathBuf = root.to_path_buf();
    let options = RelabelOptions {
        write: WriteMode::DryRun,
        alternate_root: Some(root.clone()),
        ..RelabelOptions::default()
    };
    let collector = Collector::default();
    let summary = relabel::relabel(contexts, &[root], &options, &collector)?;
    let (drift, errors) = collector.into_parts();
    let mut found: Vec<(Vec<u8>, Finding)> = drift
        .into_iter()
        .map(|d| {
            let label = match &d.found {
                Some(label) => format!(
                    "`{}`",
                    String::from_utf8_lossy(label.strip_suffix(b"\0").unwrap_or(label))
                ),
                None => "no label".to_owned(),
            };
            let message = format!(
                "{} is labelled {label}, expected `{}`",
                EscapedPath(&d.path),
                d.expected
            );
            (d.path, finding(&rules::LABELS_DRIFT, message))
        })
        .chain(errors.into_iter().map(|e| {
            let message = e.to_string();
            (e.path, finding(&rules::LABELS_ERROR, message))
        }))
        .collect();
    // Threads report in any order; paths give a stable one.
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(LabelReport {
        findings: found.into_iter().map(|(_, f)| f).collect(),
        summary,
    })
}
