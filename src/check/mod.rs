//! `semanifest check`: one CI gate over a layout, the policy it compiles to,
//! Kubernetes workload YAML and on-disk labels. Each phase produces
//! [`Finding`]s; the caller renders them ([`report`]) and picks the exit
//! code.
//!
//! Invariants: nothing here writes outside a temporary directory (labels are
//! checked with the relabeler in dry-run mode); a phase that cannot run
//! (unreadable input, missing tool) is an `InputError`, never a finding, so
//! "no findings" always means "checked and clean".

mod compiled_policy;
mod labels;
mod layout;
pub mod report;
pub mod rules;
mod store;

use std::path::PathBuf;

use ::layout::diag::Finding;
use ::layout::manifest::Parsed;
use k8s::{self, HostPathRules};

/// What to check. The layout is already parsed (its rule violations are
/// findings of their own, see [`Diagnostic::to_finding`](::layout::diag::Diagnostic::to_finding)).
#[derive(Debug, Default)]
pub struct CheckOptions {
    pub includes: Vec<PathBuf>,
    pub k8s: Vec<PathBuf>,
    pub labels: Option<PathBuf>,
    /// With `labels`: layout paths the image holds as symlinks out of the
    /// layout, kept as `apply --keep-symlink` keeps them.
    pub keep_symlinks: Vec<String>,
    pub secilc: Option<PathBuf>,
    /// Compile and check the policy even when only Kubernetes YAML is
    /// checked (see [`CheckOptions::runs_policy`]).
    pub policy: bool,
}

impl CheckOptions {
    /// Whether the policy phase (secilc, setools) runs. Judging workload
    /// YAML needs only the validated layout model, so `--k8s` alone skips
    /// it; `--policy`, `--include`, `--labels` or no `--k8s` run it.
    pub fn runs_policy(&self) -> bool {
        self.policy || !self.includes.is_empty() || self.labels.is_some() || self.k8s.is_empty()
    }
}

/// A phase could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InputError {
    #[error(transparent)]
    Policy(#[from] compiled_policy::PolicyCheckError),
    #[error(transparent)]
    Relabel(#[from] relabel::RelabelError),
    #[error(transparent)]
    FileContexts(#[from] selabel::LoadError),
    #[error("no predicted file_contexts: the store phase failed")]
    NoPrediction,
}

/// Findings of every phase, in phase order, plus the input errors met.
#[derive(Debug, Default)]
pub struct CheckOutcome {
    pub findings: Vec<Finding>,
    pub input_errors: Vec<String>,
    /// Objects examined by the label phase, when it ran.
    pub labels_examined: Option<u64>,
    /// Kubernetes documents that are not YAML at all. Each is also a
    /// finding; like an input error, it makes the run exit 2.
    pub not_yaml: usize,
}

/// Runs the policy, Kubernetes and label phases for a valid layout.
pub fn run(parsed: &Parsed, options: &CheckOptions) -> CheckOutcome {
    let mut outcome = CheckOutcome::default();
    outcome
        .findings
        .extend(parsed.warnings.iter().map(|d| d.to_finding(&parsed.source)));
    outcome.findings.extend(layout::hazards(parsed));

    if options.runs_policy() {
        let inputs = compiled_policy::PolicyInputs {
            includes: &options.includes,
            secilc: options.secilc.as_deref(),
        };
        match compiled_policy::check(parsed, &inputs) {
            Ok(findings) => outcome.findings.extend(findings),
            Err(error) => outcome.input_errors.push(error.to_string()),
        }
    }

    let contexts = || {
        let text = policy::file_contexts_text(&parsed.layout);
        Ok(selabel::FileContexts::from_text(
            &parsed.source.name,
            text.as_bytes(),
        )?)
    };
    workload_and_label_phases(parsed, options, contexts, &mut outcome);
    outcome
}

/// Like [`run`], with the policy phase against a distribution's store
/// instead of the standalone base: the module is built, compiled with the
/// store and proven (`store::check`), and labels are checked against the
/// predicted file contexts.
pub fn run_against(
    parsed: &Parsed,
    options: &CheckOptions,
    baseline: &::store::Baseline,
    store_options: &::store::ModuleOptions,
) -> CheckOutcome {
    let mut outcome = CheckOutcome::default();
    outcome
        .findings
        .extend(parsed.warnings.iter().map(|d| d.to_finding(&parsed.source)));
    outcome
        .findings
        .extend(layout::below_protected_notes(parsed));
    let result = store::check(parsed, baseline, store_options);
    outcome.findings.extend(result.findings);
    outcome.input_errors.extend(result.input_errors);
    let predicted = result.file_contexts;
    let contexts = || match predicted {
        Some(path) => Ok(selabel::FileContexts::load(&path)?),
        None => Err(InputError::NoPrediction),
    };
    workload_and_label_phases(parsed, options, contexts, &mut outcome);
    outcome
}

/// The Kubernetes and label phases, shared by both policy targets.
fn workload_and_label_phases(
    parsed: &Parsed,
    options: &CheckOptions,
    contexts: impl FnOnce() -> Result<selabel::FileContexts, InputError>,
    outcome: &mut CheckOutcome,
) {
    if !options.k8s.is_empty() {
        // A file that cannot be read at all is an input error; a document
        // that is not YAML is a finding at its position (so code review
        // shows it) that also makes the run exit 2.
        let loaded = k8s::load_paths(&options.k8s);
        outcome
            .input_errors
            .extend(loaded.errors.iter().map(ToString::to_string));
        outcome.not_yaml += loaded
            .manifests
            .invalid
            .iter()
            .filter(|d| !d.is_yaml())
            .count();
        outcome
            .findings
            .extend(k8s::audit(&loaded.manifests, &host_path_rules(parsed)));
    }

    if let Some(root) = &options.labels {
        match contexts() {
            Err(error) => outcome.input_errors.push(error.to_string()),
            Ok(contexts) => {
                match labels::check(&parsed.layout, &contexts, root, &options.keep_symlinks) {
                    Ok(report) => {
                        outcome.labels_examined = Some(report.summary.examined);
                        outcome.findings.extend(report.findings);
                    }
                    Err(error) => outcome
                        .input_errors
                        .push(format!("--labels {}: {error}", root.display())),
                }
            }
        }
    }
}

/// What the layout says about hostPath volumes, for the Kubernetes audit.
pub(crate) fn host_path_rules(parsed: &Parsed) -> HostPathRules {
    HostPathRules::of(parsed)
}
