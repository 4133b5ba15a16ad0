//! Reading a compiled policy back with setools (`seinfo`, `sesearch`):
//! independent of our own CIL generation, so what it reports is what the
//! kernel would load, `--include`d files and a store's modules included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// A setools program could not run, or failed.
#[derive(Debug, thiserror::Error)]
#[error("`{tool}` failed ({detail}); install setools (`apt-get install setools`)")]
pub struct SetoolsError {
    pub tool: &'static str,
    pub detail: String,
}

/// Runs `tool` (`seinfo` or `sesearch`) with `args` on `policy`; its
/// standard output.
pub fn run(tool: &'static str, args: &[&str], policy: &Path) -> Result<String, SetoolsError> {
    let output = Command::new(tool)
        .arg(policy)
        .args(args)
        .output()
        .map_err(|error| SetoolsError {
            tool,
            detail: error.to_string(),
        })?;
    if !output.status.success() {
        return Err(SetoolsError {
            tool,
            detail: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// One `allow` line of `sesearch` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowLine {
    pub source: String,
    pub target: String,
    pub class: String,
    pub perms: BTreeSet<String>,
    /// `Some(boolean expression)` for a conditional rule.
    pub condition: Option<String>,
    /// Whether a conditional rule is in the expression's true branch
    /// (`:True`) or its false one (`:False`); true for the others.
    pub when: bool,
    pub text: String,
}

/// Parses `allow SOURCE TARGET:CLASS PERMS; [ COND ]:BRANCH` lines.
pub fn allow_lines(text: &str) -> Vec<AllowLine> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("allow ")?;
            let (rule, tail) = rest.split_once(';')?;
            let mut fields = rule.splitn(3, ' ');
            let source = fields.next()?.to_owned();
            let (target, class) = fields.next()?.split_once(':')?;
            let perms = fields
                .next()?
                .split_whitespace()
                .filter(|p| !matches!(*p, "{" | "}"))
                .map(str::to_owned)
                .collect();
            let conditional = tail
                .trim()
                .strip_prefix('[')
                .and_then(|c| c.rsplit_once(']'));
            let condition = conditional.map(|(c, _)| c.trim().to_owned());
            let when = conditional.is_none_or(|(_, branch)| branch.trim() != ":False");
            Some(AllowLine {
                source,
                target: target.to_owned(),
                class: class.to_owned(),
                perms,
                condition,
                when,
                text: line.trim().to_owned(),
            })
        })
        .collect()
}

/// `(source, target)` type pairs of `allow` lines, attributes expanded and
/// `self` resolved.
pub fn allow_pairs(
    text: &str,
    attributes: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<(String, String)> {
    let expand = |name: &str| -> Vec<String> {
        match attributes.get(name) {
            Some(members) => members.iter().cloned().collect(),
            None => vec![name.to_owned()],
        }
    };
    let mut pairs = Vec::new();
    for line in allow_lines(text) {
        for source in expand(&line.source) {
            if line.target == "self" {
                pairs.push((source.clone(), source));
                continue;
            }
            for target in expand(&line.target) {
                pairs.push((source.clone(), target));
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_conditional_allow_lines() {
        let lines = allow_lines(
            "allow a_t b_t:process { sigchld transition };\nallow c_t d_t:process transition; [ some_bool ]:True\nallow e_t f_t:file read; [ a && b ]:False\n",
        );
        assert_eq!(lines.len(), 3);
        assert!(lines[0].when && lines[1].when && !lines[2].when);
        assert_eq!(lines[2].condition.as_deref(), Some("a && b"));
        assert_eq!(
            lines[0].perms,
            BTreeSet::from(["sigchld".into(), "transition".into()])
        );
        assert_eq!(lines[1].condition.as_deref(), Some("some_bool"));
        assert_eq!(
            (
                lines[1].source.as_str(),
                lines[1].target.as_str(),
                lines[1].class.as_str()
            ),
            ("c_t", "d_t", "process")
        );
    }
}
