//! `semanifest build --format json`: what a build wrote, or why it failed,
//! for machines (docs/build-json.md). Each error has a `kind`; a broken
//! protection is one `neverallow` error naming the protected path, its
//! type, where the layout declared it and the rules that grant it, so a
//! caller never reads the human text to learn which protection broke.

use std::path::PathBuf;

use serde::Serialize;

use super::{BuildError, Violation};
use layout::diag::{Location, Report};

/// Bumped only when a field is removed, renamed or changes its meaning.
pub(crate) const JSON_SCHEMA_VERSION: u32 = 1;

/// One reason a build failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildErrorReport {
    pub kind: BuildErrorKind,
    pub message: String,
    /// `layout`: the manifest rule's diagnostic code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// `neverallow`: the protected path of the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `neverallow`: its type, the neverallow's target.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    /// Where to fix it: the `protected: true` of a broken protection, the
    /// manifest position of a layout error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<JsonLocation>,
    /// `neverallow`: the rules that break it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub granted_by: Vec<GrantedBy>,
    /// `secilc`: what secilc printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JsonLocation {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub end_column: Option<u32>,
}

impl From<&Location> for JsonLocation {
    fn from(location: &Location) -> Self {
        JsonLocation {
            file: location.file.clone(),
            line: location.pos.line,
            column: location.pos.column,
            end_column: location.pos.end_column(),
        }
    }
}

/// An offending rule as secilc reports it: `FILE:LINE` and the rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantedBy {
    pub file: String,
    pub line: Option<u32>,
    pub rule: String,
}

impl GrantedBy {
    /// From secilc's `FILE:LINE: (allow …)`; a form it does not know keeps
    /// the whole text as the rule.
    fn parse(text: &str) -> Self {
        let parsed = text.split_once(": ").and_then(|(place, rule)| {
            let (file, line) = place.rsplit_once(':')?;
            Some(GrantedBy {
                file: file.to_owned(),
                line: Some(line.parse().ok()?),
                rule: rule.to_owned(),
            })
        });
        parsed.unwrap_or_else(|| GrantedBy {
            file: String::new(),
            line: None,
            rule: text.to_owned(),
        })
    }
}

/// What failed (docs/build-json.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BuildErrorKind {
    /// A protected path is reachable by a domain the layout did not grant.
    Neverallow,
    /// secilc refused the policy for another reason.
    Secilc,
    /// The layout manifest is invalid.
    Layout,
    /// Anything else, known by its message.
    Error,
}

impl BuildErrorReport {
    fn new(kind: BuildErrorKind, message: String) -> Self {
        BuildErrorReport {
            kind,
            message,
            code: None,
            path: None,
            type_name: None,
            location: None,
            granted_by: Vec::new(),
            output: None,
        }
    }

    /// Any other error, known by its message.
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(BuildErrorKind::Error, message.into())
    }

    fn neverallow(violation: &Violation) -> Self {
        BuildErrorReport {
            path: Some(violation.path.clone()),
            type_name: Some(violation.type_name.clone()),
            location: violation.location.as_ref().map(JsonLocation::from),
            granted_by: violation
                .offending
                .iter()
                .map(|o| GrantedBy::parse(o))
                .collect(),
            ..Self::new(
                BuildErrorKind::Neverallow,
                format!(
                    "protected path `{}` ({}) is reachable by a domain the layout did not grant",
                    violation.path, violation.type_name
                ),
            )
        }
    }

    /// A build error: one `neverallow` entry per broken protection, else
    /// one `secilc` or `error` entry.
    pub fn of_build_error(error: &BuildError) -> Vec<Self> {
        match error {
            BuildError::Rejected { violations, .. } if !violations.is_empty() => {
                violations.iter().map(Self::neverallow).collect()
            }
            BuildError::Rejected { output, .. } => vec![BuildErrorReport {
                output: Some(output.clone()),
                ..Self::new(
                    BuildErrorKind::Secilc,
                    "secilc rejected the policy".to_owned(),
                )
            }],
            other => vec![Self::other(other.to_string())],
        }
    }

    /// A layout that breaks the manifest rules: one `layout` entry per
    /// error (warnings do not fail a build).
    pub fn of_layout(report: &Report) -> Vec<Self> {
        report
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| BuildErrorReport {
                code: Some(d.code.id),
                location: Location::at(&report.source.name, d.pos)
                    .as_ref()
                    .map(JsonLocation::from),
                ..Self::new(BuildErrorKind::Layout, d.message.clone())
            })
            .collect()
    }
}

#[derive(Serialize)]
struct JsonBuild<'a> {
    schema: &'static str,
    version: u32,
    tool: JsonTool,
    ok: bool,
    written: Vec<String>,
    errors: &'a [BuildErrorReport],
}

#[derive(Serialize)]
struct JsonTool {
    name: &'static str,
    version: &'static str,
}

/// The report (pretty-printed, trailing newline): `ok` when `errors` is
/// empty.
pub fn render(written: &[PathBuf], errors: &[BuildErrorReport]) -> String {
    let report = JsonBuild {
        schema: "semanifest-build",
        version: JSON_SCHEMA_VERSION,
        tool: JsonTool {
            name: "semanifest",
            version: env!("CARGO_PKG_VERSION"),
        },
        ok: errors.is_empty(),
        written: written.iter().map(|p| p.display().to_string()).collect(),
        errors,
    };
    // Plain structs of strings and integers always serialise.
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granted_by_splits_secilcs_place_from_the_rule() {
        assert_eq!(
            GrantedBy::parse("/x/leaky.cil:7: (allow a b (file (read)))"),
            GrantedBy {
                file: "/x/leaky.cil".into(),
                line: Some(7),
                rule: "(allow a b (file (read)))".into()
            }
        );
        assert_eq!(GrantedBy::parse("(allow a b c)").line, None);
    }

    #[test]
    fn a_rejection_without_a_broken_protection_is_a_secilc_error() {
        let errors = BuildErrorReport::of_build_error(&BuildError::Rejected {
            violations: Vec::new(),
            output: "syntax error".into(),
        });
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].kind, BuildErrorKind::Secilc);
        assert_eq!(errors[0].output.as_deref(), Some("syntax error"));
        let json: serde_json::Value =
            serde_json::from_str(&render(&[], &errors)).expect("valid JSON");
        assert_eq!(json["ok"], false);
        assert_eq!(json["schema"], "semanifest-build");
    }
}
