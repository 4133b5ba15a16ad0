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
use store::Proof;
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
    let build = match store::build(baseline, parsed, options) {
        Ok(build) => build,
        Err(error) => {
            failure(parsed, error, &mut outcome);
            return outcome;
        }
    };
    let report = &build.report;
    let origin = baseline.store.origin.display();
    match &report.verification {
        Verification::Identical { .. } => {}
        Verification::Differs { why } => outcome.findings.push(finding(
            &rules::STORE_PREDICTION,
            parsed,
            None,
            format!("{origin}: the store compiled here is not what it built itself: {why}"),
        )),
        Verification::Unavailable { why } => outcome.findings.push(finding(
            &rules::STORE_PREDICTION,
            parsed,
            None,
            format!("{origin}: the prediction cannot be verified: {why}"),
        )),
    }
    proof_findings(parsed, report, &mut outcome);
    losses_findings(parsed, report, &mut outcome);
    for path in &report.paths {
        let pos = path_pos(parsed, &path.path);
        for event in &path.events {
            let rule = match event {
                Event::Collision { .. } | Event::Shadow { .. } | Event::Overridden { .. } => {
                    &rules::STORE_FILECON_RESOLVED
                }
                Event::Aliased { .. } => &rules::STORE_FILECON_ALIASED,
                Event::Kept { .. } => continue,
                Event::LeftToStore { .. } => &rules::STORE_FILECON_KEPT,
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
            .map(|g| {
                format!(
                    "via {} ({}): {}",
                    g.via,
                    g.describe_access(),
                    g.domains.join(" ")
                )
            })
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

/// Whether the protections were proven, and the store's own neverallows
/// that its modules break.
fn proof_findings(parsed: &Parsed, report: &ModuleReport, outcome: &mut StoreOutcome) {
    match &report.proof {
        Proof::NotRun { why } => outcome.findings.push(finding(
            &rules::STORE_PROOF,
            parsed,
            None,
            format!("the protections are not proven: {why}"),
        )),
        Proof::Proven {
            store_violations, ..
        } if !store_violations.is_empty() => {
            let examples: Vec<String> = store_violations
                .iter()
                .take(3)
                .map(|v| format!("{} at {}", v.neverallow, v.at))
                .collect();
            outcome.findings.push(finding(
                &rules::STORE_NEVERALLOWS,
                parsed,
                None,
                format!(
                    "the store's own modules break {} of its neverallows ({}{}); {}",
                    store_violations.len(),
                    examples.join("; "),
                    if store_violations.len() > 3 {
                        "; …"
                    } else {
                        ""
                    },
                    if report.expand_check {
                        "reported only"
                    } else {
                        "honoured as the store honours them: expand-check=0, semodule checks none"
                    }
                ),
            ))
        }
        Proof::Proven { .. } => {}
    }
}

/// Every store domain that loses access to a re-typed path.
fn losses_findings(parsed: &Parsed, report: &ModuleReport, outcome: &mut StoreOutcome) {
    for item in report.retyped.iter().filter(|i| !i.groups.is_empty()) {
        let pos = item.paths.first().and_then(|p| path_pos(parsed, p));
        let groups: Vec<String> = item
            .groups
            .iter()
            .map(|g| {
                format!(
                    "via {} on {} ({}: {}): {}",
                    g.via,
                    g.on,
                    g.grade.as_str(),
                    store::describe_permissions(&g.permissions),
                    g.domains.join(" ")
                )
            })
            .collect();
        outcome.findings.push(finding(
            &rules::STORE_ACCESS_LOST,
            parsed,
            pos,
            format!(
                "{} store domain{} lose access to `{}` ({}, was {}){}: {}",
                item.domains,
                if item.domains == 1 { "" } else { "s" },
                item.paths.join("`, `"),
                item.type_name,
                item.old_types.join(", "),
                if item.protected {
                    "; the layout protects it from them (name a service in `storeOwners` to keep it)"
                } else {
                    ""
                },
                groups.join("; ")
            ),
        ));
    }
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
                Unresolvable::NoEquivalent { path, .. } | Unresolvable::Alias { path, .. } => {
                    path.clone()
                }
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
        ModuleError::Rejected {
            violations,
            hint,
            output,
        } => {
            let hint = hint.map(|h| format!("; {h}")).unwrap_or_default();
            if violations.is_empty() {
                outcome.findings.push(finding(
                    &rules::POLICY_SECILC,
                    parsed,
                    None,
                    format!(
                        "the CIL compiler rejected store + module: {}",
                        output.trim()
                    ),
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
                        "protected path `{}` ({}) is reachable by the workload set on this store{}{hint}",
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
