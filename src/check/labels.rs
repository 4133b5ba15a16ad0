//! Label findings: walk a tree with the relabeler in check mode (nothing is
//! written) and report every object whose `security.selinux` differs from
//! what the layout's file_contexts says.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::check::report::Finding;
use crate::check::rules;
use crate::fcontext::FileContexts;
use crate::relabel::{self, Change, EscapedPath, ObjectError, Observer, RelabelError, RelabelOptions, WriteMode};

/// Collects drift and errors from the walker's threads.
#[derive(Default)]
struct Collector {
    findings: Mutex<Vec<(Vec<u8>, Finding)>>,
}

impl Collector {
    fn push(&self, path: &[u8], finding: Finding) {
        self.findings.lock().unwrap_or_else(|e| e.into_inner()).push((path.to_vec(), finding));
    }
}

impl Observer for Collector {
    fn changed(&self, change: &Change<'_>) {
        let found = match change.found {
            Some(label) => format!("`{}`", String::from_utf8_lossy(label.strip_suffix(b"\0").unwrap_or(label))),
            None => "no label".to_owned(),
        };
        let message = format!(
            "{} is labelled {found}, expected `{}`",
            EscapedPath(change.path),
            change.expected
        );
        self.push(change.path, drift(&rules::LABELS_DRIFT, message));
    }

    fn failed(&self, error: &ObjectError) {
        self.push(&error.path, drift(&rules::LABELS_ERROR, error.to_string()));
    }
}

fn drift(rule: &'static crate::check::report::Rule, message: String) -> Finding {
    Finding { rule, severity: rule.default_severity, message, location: None, snippet: None, related: Vec::new() }
}

/// What the walk found: findings in path order, and the totals.
pub struct LabelReport {
    pub findings: Vec<Finding>,
    pub summary: relabel::Summary,
}

/// Checks the labels under `root`, an image or node root: `ROOT/var/x` is
/// looked up as `/var/x`, like `setfiles -r ROOT`.
pub fn check(contexts: &FileContexts, root: &Path) -> Result<LabelReport, RelabelError> {
    let root: PathBuf = std::path::absolute(root).map_err(|source| RelabelError::Operand {
        path: root.as_os_str().as_encoded_bytes().to_vec(),
        source,
    })?;
    let options = RelabelOptions {
        write: WriteMode::DryRun,
        alternate_root: Some(root.clone()),
        ..RelabelOptions::default()
    };
    let collector = Collector::default();
    let summary = relabel::relabel(contexts, &[root], &options, &collector)?;
    let mut found = collector.findings.into_inner().unwrap_or_else(|e| e.into_inner());
    // Threads report in any order; paths give a stable one.
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(LabelReport { findings: found.into_iter().map(|(_, f)| f).collect(), summary })
}
