//! Label findings: walk a tree with the relabeler in check mode (nothing is
//! written) and report every object whose `security.selinux` differs from
//! what the layout's file_contexts says.

use std::path::{Path, PathBuf};

use crate::check::report::{Finding, Rule};
use crate::check::rules;
use crate::fcontext::FileContexts;
use crate::relabel::{self, Collector, EscapedPath, RelabelError, RelabelOptions, WriteMode};

fn finding(rule: &'static Rule, message: String) -> Finding {
    Finding {
        rule,
        severity: rule.default_severity,
        message,
        location: None,
        snippet: None,
        related: Vec::new(),
    }
}

/// What the walk found: findings in path order, and the totals.
pub struct LabelReport {
    pub findings: Vec<Finding>,
    pub summary: relabel::Summary,
}

/// Checks the labels under `root`, an image or node root: `ROOT/var/x` is
/// looked up as `/var/x`, like `setfiles -r ROOT`.
pub fn check(contexts: &FileContexts, root: &Path) -> Result<LabelReport, RelabelError> {
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
