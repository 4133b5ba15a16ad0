//! The policy-level cross-check: both layouts compiled by secilc (base +
//! module, as `build` does), their allow rules compared by setools'
//! `sediff --allow`, and every added, removed or modified rule matched
//! against the (source type, target type) pairs the manifest-level
//! changes name. A rule no change explains is a bug in the diff.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use super::LayoutDiff;
use layout::manifest::Parsed;
use policy::{build, BuildError, BuildOptions};

/// One allow rule `sediff` reports as added (`+`), removed (`-`) or
/// modified (`*`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RuleChange {
    pub sign: char,
    pub source: String,
    pub target: String,
    /// The whole line as sediff printed it.
    pub line: String,
}

/// What the cross-check found.
#[derive(Debug, Serialize)]
pub struct CrossCheck {
    /// Every allow rule that differs.
    pub rules: Vec<RuleChange>,
    /// The ones no manifest-level change explains (must be empty).
    pub unexplained: Vec<RuleChange>,
}

#[derive(Debug, thiserror::Error)]
pub enum CrossCheckError {
    #[error("compiling {layout}: {error}")]
    Build { layout: String, error: BuildError },
    #[error("sediff not found on PATH (Debian package setools)")]
    SediffMissing,
    #[error("sediff failed: {0}")]
    Sediff(String),
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Finds `sediff` on PATH.
pub(crate) fn sediff() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("sediff"))
        .find(|candidate| candidate.is_file())
}

fn compile(parsed: &Parsed, dir: &Path) -> Result<PathBuf, CrossCheckError> {
    let options = BuildOptions {
        out_dir: dir.to_owned(),
        secilc: None,
        includes: Vec::new(),
        install_root: None,
        policy_name: "semanifest".to_owned(),
        disable_neverallow: false,
    };
    build(parsed, &options)
        .map(|output| output.policy)
        .map_err(|error| CrossCheckError::Build {
            layout: parsed.source.name.clone(),
            error,
        })
}

/// Parses `sediff --allow` output into rule changes.
pub(crate) fn parse_sediff(text: &str) -> Vec<RuleChange> {
    text.lines()
        .filter_map(|line| {
            let trimmed = line.trim_start();
            let sign = trimmed.chars().next()?;
            if !matches!(sign, '+' | '-' | '*') {
                return None;
            }
            let rest = trimmed[1..].trim_start().strip_prefix("allow ")?;
            let mut words = rest.split_whitespace();
            let source = words.next()?.to_owned();
            let target = words.next()?.split(':').next()?.to_owned();
            Some(RuleChange {
                sign,
                source,
                target,
                line: trimmed.to_owned(),
            })
        })
        .collect()
}

/// Whether some change of `diff` names the rule's (source, target).
pub fn explained(diff: &LayoutDiff, rule: &RuleChange) -> bool {
    let matches = |pattern: &str, name: &str| pattern == "*" || pattern == name;
    diff.changes.iter().any(|change| {
        change
            .policy_pairs
            .iter()
            .any(|(s, t)| matches(s, &rule.source) && matches(t, &rule.target))
    })
}

/// Compiles both layouts, runs `sediff --allow` and matches every rule.
pub fn cross_check(
    old: &Parsed,
    new: &Parsed,
    diff: &LayoutDiff,
) -> Result<CrossCheck, CrossCheckError> {
    let sediff = sediff().ok_or(CrossCheckError::SediffMissing)?;
    let work = tempfile::tempdir().map_err(|error| CrossCheckError::Io {
        path: std::env::temp_dir(),
        error,
    })?;
    let old_policy = compile(old, &work.path().join("old"))?;
    let new_policy = compile(new, &work.path().join("new"))?;
    let output = Command::new(&sediff)
        .arg("--allow")
        .arg(&old_policy)
        .arg(&new_policy)
        .output()
        .map_err(|error| CrossCheckError::Io {
            path: sediff.clone(),
            error,
        })?;
    if !output.status.success() {
        return Err(CrossCheckError::Sediff(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ));
    }
    let rules = parse_sediff(&String::from_utf8_lossy(&output.stdout));
    let unexplained = rules
        .iter()
        .filter(|rule| !explained(diff, rule))
        .cloned()
        .collect();
    Ok(CrossCheck { rules, unexplained })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_added_removed_and_modified_rules() {
        let text = "Allow Rules (1 Added, 1 Removed, 1 Modified)\n   Added Allow Rules: 1\n      + allow container_t kubelet_var_t:dir { getattr open search };\n   Removed Allow Rules: 1\n      - allow etcd_t etcd_var_t:file { read };\n   Modified Allow Rules: 1\n      * allow container_t dataset_t:dir { read +write };\n";
        let rules = parse_sediff(text);
        let pairs: Vec<(char, &str, &str)> = rules
            .iter()
            .map(|r| (r.sign, r.source.as_str(), r.target.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ('+', "container_t", "kubelet_var_t"),
                ('-', "etcd_t", "etcd_var_t"),
                ('*', "container_t", "dataset_t")
            ]
        );
    }
}
