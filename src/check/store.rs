//! `check --against STORE`: the same build as `build --target module`,
//! reported as findings. Broken protections point at the manifest's
//! `protected: true`; file-context collisions, refinements the store keeps,
//! aliased paths and every domain that can still reach a protected type
//! are reported at the path they concern.

use std::path::PathBuf;

use crate::check::rules;
use layout::diag::{Finding, Location, Pos, Related, Rule};
use layout::manifest::Parsed;
use store::filecons::{Event, FileconError, Unresolvable};
use store::module_report::{describe_event, kept_summary, ModuleReport, Verification};
use store::{self, Baseline, ModuleError};

/// What the store phase found.
#[derive(Debug, Default)]
pub(crate) struct StoreOutcome {
    pub findings: Vec<Finding>,
    pub input_errors: Vec<String>,
    /// The predicted `file_contexts` with the store's siblings beside it,
    /// for the label phase.
    pub file_contexts: Option<PathBuf>,
    pub report: Option<ModuleReport>,
}

fn finding(rule: &'static Rule, parsed: &Parsed, pos: Option<Pos>, message: String) -> Finding {
    Finding::in_source(rule, &parsed.source, pos.unwrap_or_default(), message)
}

fn path_pos(parsed: &Parsed, path: &str) -> Option<Pos> {
    parsed
        .layout
        .paths
        .iter()
        .find(|r| r.path == path)
        .map(|r| r.pos)
}

pub(crate) fn check(
    parsed: &Parsed,
    baseline: &Baseline,
    options: &store::ModuleOptions,
) -> StoreOutcome {
    let mut outcome = StoreOutcome::default();
    if let Verification::Differs { why } = &baseline.verification {
        outcome.findings.push(finding(
            &rules::STORE_PREDICTION,
            parsed,
            None,
            format!(
                "{}: the store compiled here is not what it built itself: {why}",
                baseline.store.origin.display()
            ),
        ));
    }
    let build = match store::build(baseline, parsed, options) {
        Ok(build) => build,
        Err(error) => {
            failure(parsed, error, &mut outcome);
            return outcome;
        }
    };
    let report = &build.report;
    for path in &report.paths {
        let pos = path_pos(parsed, &path.path);
        for event in &path.events {
            let rule = match event {
                Event::Collision { .. } | Event::Shadow { .. } | Event::Overridden { .. } => {
                    &rules::STORE_FILECON_RESOLVED
                }
                Event::Aliased { .. } => &rules::STORE_FILECON_ALIASED,
                Event::Kept { .. } => continue,
            };
            outcome.findings.push(finding(
                rule,
                parsed,
                pos,
                format!("`{}`: {}", path.path, describe_event(event)),
            ));
        }
        if let Some(summary) = kept_summary(&path.events) {
            outcome.findings.push(finding(
                &rules::STORE_FILECON_KEPT,
                parsed,
                pos,
                format!("`{}`: {summary}", path.path),
            ));
        }
    }
    for protection in &report.protections {
        let reach = &protection.reach;
        if reach.domains == 0 {
            continue;
        }
        let rule = parsed
            .layout
            .paths
            .iter()
            .find(|r| r.protected && r.type_name == reach.type_name);
        let pos = rule.map(|r| r.protected_pos.unwrap_or(r.pos));
        let groups: Vec<String> = reach
            .groups
            .iter()
            .map(|g| format!("via {} ({}): {}", g.via, g.access, g.domains.join(" ")))
            .collect();
        outcome.findings.push(finding(
            &rules::STORE_REACH,
            parsed,
            pos,
            format!(
                "protected `{}` ({}) is out of every workload's reach; {} other domains can still reach it by the store's design: {}",
                reach.paths.join("`, `"),
                reach.type_name,
                reach.domains,
                groups.join("; ")
            ),
        ));
    }
    let dir = baseline.work_dir().join("check-labels");
    match std::fs::read_to_string(&build.predicted.file_contexts)
        .map_err(|e| e.to_string())
        .and_then(|text| {
            build
                .siblings
                .write_with(&dir, &text)
                .map_err(|e| e.to_string())
        }) {
        Ok(path) => outcome.file_contexts = Some(path),
        Err(error) => outcome.input_errors.push(error),
    }
    outcome.report = Some(build.report);
    outcome
}

fn failure(parsed: &Parsed, error: ModuleError, outcome: &mut StoreOutcome) {
    match error {
        ModuleError::Store(error) => outcome.input_errors.push(error.to_string()),
        ModuleError::Template(error) => outcome
            .input_errors
            .push(format!("template error (a bug in semanifest): {error}")),
        ModuleError::Filecons(FileconError::Store(error)) => {
            outcome.input_errors.push(error.to_string())
        }
        ModuleError::Filecons(FileconError::Load(error)) => {
            outcome.input_errors.push(error.to_string())
        }
        ModuleError::Mapping(message) => {
            outcome
                .findings
                .push(finding(&rules::STORE_MAPPING, parsed, None, message))
        }
        ModuleError::Filecons(FileconError::Unresolvable(unresolvable)) => {
            let path = match &unresolvable {
                Unresolvable::Local { mismatch, .. } | Unresolvable::NoProgress { mismatch } => {
                    mismatch.probe.path.clone()
                }
                Unresolvable::NoEquivalent { path, .. } => path.clone(),
            };
            let pos = path_pos(parsed, &path);
            outcome.findings.push(finding(
                &rules::STORE_FILECON,
                parsed,
                pos,
                unresolvable.to_string(),
            ));
        }
        ModuleError::NotProven(lines) => {
            for line in lines {
                outcome
                    .findings
                    .push(finding(&rules::STORE_FILECON, parsed, None, line));
            }
        }
        ModuleError::Rejected { violations, output } => {
            if violations.is_empty() {
                outcome.findings.push(finding(
                    &rules::POLICY_SECILC,
                    parsed,
                    None,
                    format!("secilc rejected store + module: {}", output.trim()),
                ));
                return;
            }
            for violation in violations {
                let rule = parsed
                    .layout
                    .paths
                    .iter()
                    .find(|r| r.path == violation.path);
                let pos = rule.map(|r| r.protected_pos.unwrap_or(r.pos));
                let mut item = finding(
                    &rules::POLICY_NEVERALLOW,
                    parsed,
                    pos,
                    format!(
                        "protected path `{}` ({}) is reachable by the workload set on this store{}",
                        violation.path,
                        violation.type_name,
                        violation
                            .offending
                            .iter()
                            .map(|o| format!("; granted by {o}"))
                            .collect::<String>()
                    ),
                );
                item.related = violation
                    .offending
                    .iter()
                    .filter_map(|o| {
                        let (place, rule) = o.split_once(": ")?;
                        let (file, line) = place.rsplit_once(':')?;
                        Some(Related {
                            location: Location {
                                file: file.to_owned(),
                                pos: Pos {
                                    line: line.parse().ok()?,
                                    column: 1,
                                    width: 0,
                                },
                            },
                            message: format!("grants it: {rule}"),
                        })
                    })
                    .collect();
                outcome.findings.push(item);
            }
        }
    }
}
