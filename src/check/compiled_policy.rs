//! Policy findings: compile base + layout + `--include` files with the real
//! secilc (neverallow failures point at the manifest's `protected: true`), then
//! read the binary policy back with setools to confirm that no chain of
//! process transitions takes a workload or agent domain into a domain that
//! may touch a protected type. setools is independent of our own CIL generation, so it
//! also sees what `--include` files add.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::check::rules;
use layout::diag::{Finding, Location, Pos, Related};
use layout::manifest::Parsed;
use policy::setools::{self, allow_lines, allow_pairs, SetoolsError};
use policy::{self, BuildError, BuildOptions};

/// What the policy phase needs.
pub(crate) struct PolicyInputs<'a> {
    pub includes: &'a [PathBuf],
    pub secilc: Option<&'a Path>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum PolicyCheckError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("cannot create a temporary directory: {0}")]
    TempDir(std::io::Error),
    #[error("{0} to check transitions")]
    Setools(#[from] SetoolsError),
}

fn manifest_location(parsed: &Parsed, pos: Pos) -> Option<Location> {
    Location::at(&parsed.source.name, pos)
}

/// `FILE:LINE: rule` (as secilc reports an offending rule) → a location.
fn offending_location(text: &str) -> Option<(Location, String)> {
    let (place, rule) = text.split_once(": ")?;
    let (file, line) = place.rsplit_once(':')?;
    let line = line.parse().ok()?;
    Some((
        Location {
            file: file.to_owned(),
            pos: Pos {
                line,
                column: 1,
                width: 0,
            },
        },
        rule.to_owned(),
    ))
}

pub(crate) fn check(
    parsed: &Parsed,
    inputs: &PolicyInputs<'_>,
) -> Result<Vec<Finding>, PolicyCheckError> {
    let dir = tempfile::tempdir().map_err(PolicyCheckError::TempDir)?;
    let options = BuildOptions {
        out_dir: dir.path().to_owned(),
        secilc: inputs.secilc.map(Path::to_owned),
        includes: inputs.includes.to_vec(),
        install_root: None,
        policy_name: "semanifest".to_owned(),
        disable_neverallow: false,
    };
    let output = match policy::build(parsed, &options) {
        Ok(output) => output,
        Err(BuildError::Rejected { violations, output }) => {
            if violations.is_empty() {
                return Ok(vec![Finding {
                    rule: &rules::POLICY_SECILC,
                    severity: rules::POLICY_SECILC.default_severity,
                    message: format!("secilc rejected the policy: {}", output.trim()),
                    location: None,
                    snippet: None,
                    related: Vec::new(),
                }]);
            }
            return Ok(violations
                .into_iter()
                .map(|violation| {
                    let rule = parsed.layout.paths.iter().find(|r| r.path == violation.path);
                    let pos = rule.map(|r| r.protected_pos.unwrap_or(r.pos)).unwrap_or_default();
                    let location = manifest_location(parsed, pos);
                    let related = violation
                        .offending
                        .iter()
                        .filter_map(|o| offending_location(o))
                        .map(|(location, rule)| Related { location, message: format!("grants it: {rule}") })
                        .collect();
                    Finding {
                        rule: &rules::POLICY_NEVERALLOW,
                        severity: rules::POLICY_NEVERALLOW.default_severity,
                        message: format!(
                            "protected path `{}` ({}) is reachable by a domain the layout did not grant{}",
                            violation.path,
                            violation.type_name,
                            violation.offending.iter().map(|o| format!("; granted by {o}")).collect::<String>()
                        ),
                        snippet: location.as_ref().and_then(|l| parsed.source.line(l.pos.line)).map(str::to_owned),
                        location,
                        related,
                    }
                })
                .collect());
        }
        Err(other) => return Err(other.into()),
    };
    transitions(parsed, &output.policy)
}

/// Attribute → member types, from `seinfo -a -x`.
fn attributes(policy: &Path) -> Result<BTreeMap<String, BTreeSet<String>>, PolicyCheckError> {
    let text = setools::run("seinfo", &["-a", "-x"], policy)?;
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(name) = trimmed.strip_prefix("attribute ") {
            let name = name.trim_end_matches(';').to_owned();
            map.entry(name.clone()).or_default();
            current = Some(name);
        } else if let (Some(name), false) = (&current, trimmed.is_empty()) {
            if line.starts_with("      ") || line.starts_with('\t') {
                map.get_mut(name)
                    .expect("inserted above")
                    .insert(trimmed.to_owned());
            }
        }
    }
    Ok(map)
}

fn transitions(parsed: &Parsed, policy: &Path) -> Result<Vec<Finding>, PolicyCheckError> {
    let layout = &parsed.layout;
    let attributes = attributes(policy)?;
    let text = setools::run(
        "sesearch",
        &["-A", "-c", "process", "-p", "transition,dyntransition"],
        policy,
    )?;
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (source, target) in allow_pairs(&allow_lines(&text), &attributes) {
        if source != target {
            edges.entry(source).or_default().insert(target);
        }
    }
    // Which domains may touch each protected type (trusted ones included:
    // a workload must not become them either). One query for every allow
    // rule: attributes are expanded here, as `sesearch -t` would match them.
    let mut protected: BTreeMap<&str, Vec<&layout::model::PathRule>> = BTreeMap::new();
    for rule in layout.protected() {
        protected
            .entry(rule.type_name.as_str())
            .or_default()
            .push(rule);
    }
    let mut touching: BTreeMap<String, Vec<&layout::model::PathRule>> = BTreeMap::new();
    let text = setools::run("sesearch", &["-A"], policy)?;
    for (source, target) in allow_pairs(&allow_lines(&text), &attributes) {
        if let Some(rules) = protected.get(target.as_str()) {
            touching.entry(source).or_default().extend(rules);
        }
    }
    let mut findings = Vec::new();
    for domain in layout.domains.iter().filter(|d| d.is_container()) {
        let kind = if domain.workload { "workload" } else { "agent" };
        let mut seen = BTreeSet::from([domain.type_name.clone()]);
        let mut queue =
            VecDeque::from([(domain.type_name.clone(), vec![domain.type_name.clone()])]);
        while let Some((current, chain)) = queue.pop_front() {
            for next in edges.get(&current).into_iter().flatten() {
                if !seen.insert(next.clone()) {
                    continue;
                }
                let mut chain = chain.clone();
                chain.push(next.clone());
                if let Some(rules_touched) = touching.get(next) {
                    let paths: BTreeSet<&str> =
                        rules_touched.iter().map(|r| r.path.as_str()).collect();
                    let location = manifest_location(parsed, domain.pos);
                    findings.push(Finding {
                        rule: &rules::POLICY_TRANSITION,
                        severity: rules::POLICY_TRANSITION.default_severity,
                        message: format!(
                            "{kind} domain `{}` can transition ({}) into `{next}`, which may access protected {}",
                            domain.type_name,
                            chain.join(" → "),
                            paths.into_iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
                        ),
                        snippet: location.as_ref().and_then(|l| parsed.source.line(l.pos.line)).map(str::to_owned),
                        location,
                        related: Vec::new(),
                    });
                }
                queue.push_back((next.clone(), chain));
            }
        }
    }
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_attributes_and_self() {
        let attributes = BTreeMap::from([(
            "dom".to_owned(),
            BTreeSet::from(["a_t".to_owned(), "b_t".to_owned()]),
        )]);
        let text =
            "allow dom c_t:process transition;\nallow c_t self:process { fork transition };\n";
        assert_eq!(
            allow_pairs(&allow_lines(text), &attributes),
            [
                ("a_t".to_owned(), "c_t".to_owned()),
                ("b_t".to_owned(), "c_t".to_owned()),
                ("c_t".to_owned(), "c_t".to_owned())
            ]
        );
    }

    #[test]
    fn reads_offending_rule_locations() {
        let (location, rule) =
            offending_location("extra.cil:3: (allow a b (file (read)))").unwrap();
        assert_eq!(
            (location.file.as_str(), location.pos.line),
            ("extra.cil", 3)
        );
        assert_eq!(rule, "(allow a b (file (read)))");
    }
}
