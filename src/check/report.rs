//! The three renderings of findings (the vocabulary is `diag`'s): human
//! (rustc-style snippets grouped by file), JSON (a versioned schema, see
//! `docs/check-json.md`) and SARIF 2.1.0 (for code-scanning UIs).
//!
//! Invariants:
//! - This module knows nothing of where findings come from; every producer
//!   (layout, policy, Kubernetes YAML, labels) speaks through [`Finding`].
//! - Renderers are pure: same findings in, same bytes out. They keep the
//!   producers' order (the human renderer only groups it by file, keeping
//!   each file's first appearance), so output is deterministic.
//! - Positions are 1-based lines and 1-based columns counted in Unicode
//!   scalar values (SARIF `columnKind: unicodeCodePoints`); `end_column`
//!   is exclusive, as in SARIF.
//! - Text from the checked inputs (paths, names) may hold control
//!   characters; the human renderer escapes them so a hostile manifest
//!   cannot drive the terminal.

use std::fmt;

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use serde::Serialize;

use layout::diag::{Finding, Location, Rule, Severity};

/// Counts by severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SeverityCounts {
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
}

impl SeverityCounts {
    pub fn of<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Self {
        let mut summary = SeverityCounts::default();
        for finding in findings {
            match finding.severity {
                Severity::Error => summary.errors += 1,
                Severity::Warning => summary.warnings += 1,
                Severity::Note => summary.notes += 1,
            }
        }
        summary
    }
}

impl fmt::Display for SeverityCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}, {} {}, {} {}",
            self.errors,
            plural(self.errors, "error", "errors"),
            self.warnings,
            plural(self.warnings, "warning", "warnings"),
            self.notes,
            plural(self.notes, "note", "notes"),
        )
    }
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

// ---------------------------------------------------------------------------
// Human

/// Options for [`render_human`].
#[derive(Clone, Copy, Debug, Default)]
pub struct HumanOptions {
    /// Emit ANSI colours (only when writing to a terminal).
    pub color: bool,
}

/// Renders findings for a terminal: grouped by file (files in order of first
/// appearance, findings without a location last), each finding with its
/// source line, a caret under the offending value, related positions and
/// the rule's "why", then one summary line.
pub fn render_human(findings: &[Finding], options: HumanOptions) -> String {
    let renderer = if options.color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = String::new();
    for (file, group) in group_by_file(findings) {
        let summary = SeverityCounts::of(group.iter().copied());
        match file {
            Some(file) => out.push_str(&format!("{}: {summary}\n", escape_controls(file))),
            None => out.push_str(&format!("(no file): {summary}\n")),
        }
        for finding in group {
            out.push_str(&renderer.render(&[human_group(finding)]));
            out.push_str("\n\n");
        }
    }
    out.push_str(&format!("check: {}\n", SeverityCounts::of(findings)));
    out
}

/// Groups by file, keeping each file's first appearance and each file's
/// internal order; findings without a location come last.
fn group_by_file(findings: &[Finding]) -> Vec<(Option<&str>, Vec<&Finding>)> {
    let mut groups: Vec<(Option<&str>, Vec<&Finding>)> = Vec::new();
    let mut unlocated = Vec::new();
    for finding in findings {
        let Some(location) = &finding.location else {
            unlocated.push(finding);
            continue;
        };
        let file = location.file.as_str();
        match groups.iter_mut().find(|(f, _)| *f == Some(file)) {
            Some((_, group)) => group.push(finding),
            None => groups.push((Some(file), vec![finding])),
        }
    }
    if !unlocated.is_empty() {
        groups.push((None, unlocated));
    }
    groups
}

fn human_group(finding: &Finding) -> Group<'static> {
    let level = match finding.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Note => Level::NOTE,
    };
    let title = level
        .primary_title(escape_controls(&finding.message))
        .id(finding.rule.id);
    let mut group = match (&finding.location, &finding.snippet) {
        (Some(location), Some(line)) => {
            let (source, span) = snippet_with_span(line, location);
            title.element(
                Snippet::source(source)
                    .line_start(location.pos.line as usize)
                    .path(escape_controls(&location.file))
                    .annotation(AnnotationKind::Primary.span(span)),
            )
        }
        (Some(location), None) => title
            .element(Level::NOTE.message(format!("at {}", escape_controls(&location.to_string())))),
        (None, _) => Group::with_title(title),
    };
    for related in &finding.related {
        group = group.element(Level::NOTE.message(format!(
            "{}: {}",
            escape_controls(&related.location.to_string()),
            escape_controls(&related.message)
        )));
    }
    group.element(Level::HELP.with_name("why").message(finding.why()))
}

/// The escaped source line and the byte range of the annotated columns in it.
fn snippet_with_span(line: &str, location: &Location) -> (String, std::ops::Range<usize>) {
    let line = line.trim_end_matches(['\n', '\r']);
    let start_col = location.pos.column.max(1) as usize - 1;
    let end_col = location
        .pos
        .end_column()
        .map(|c| c as usize - 1)
        .filter(|&end| end > start_col)
        .unwrap_or(start_col + 1);
    let before: String = line.chars().take(start_col).collect();
    let marked: String = line
        .chars()
        .skip(start_col)
        .take(end_col - start_col)
        .collect();
    let after: String = line.chars().skip(end_col).collect();
    let before = escape_controls(&before);
    let marked = escape_controls(&marked);
    let after = escape_controls(&after);
    let start = before.len();
    let end = start + marked.len().max(usize::from(marked.is_empty()));
    let mut source = before;
    source.push_str(&marked);
    source.push_str(&after);
    if end > source.len() {
        // A caret past the end of the line (e.g. an empty value): give it a cell.
        source.push(' ');
    }
    (source, start..end)
}

/// Escapes control characters (and only them) so terminal output stays inert.
fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// JSON

/// Version of the JSON report schema (`docs/check-json.md`). Bumped on any
/// change that is not a pure addition.
pub const JSON_SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct JsonReport<'a> {
    schema: &'static str,
    version: u32,
    tool: JsonTool,
    summary: SeverityCounts,
    findings: Vec<JsonFinding<'a>>,
}

#[derive(Serialize)]
struct JsonTool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    rule: &'static str,
    severity: &'static str,
    message: &'a str,
    why: &'static str,
    location: Option<JsonLocation<'a>>,
    snippet: Option<&'a str>,
    related: Vec<JsonRelated<'a>>,
}

#[derive(Serialize)]
struct JsonLocation<'a> {
    file: &'a str,
    line: u32,
    column: u32,
    end_column: Option<u32>,
}

#[derive(Serialize)]
struct JsonRelated<'a> {
    message: &'a str,
    location: JsonLocation<'a>,
}

impl<'a> From<&'a Location> for JsonLocation<'a> {
    fn from(location: &'a Location) -> Self {
        JsonLocation {
            file: &location.file,
            line: location.pos.line,
            column: location.pos.column,
            end_column: location.pos.end_column(),
        }
    }
}

/// Renders the versioned JSON report (pretty-printed, trailing newline).
pub fn render_json(findings: &[Finding]) -> String {
    let report = JsonReport {
        schema: "semanifest-check",
        version: JSON_SCHEMA_VERSION,
        tool: JsonTool {
            name: env!("CARGO_PKG_NAME"),
            version: env!("CARGO_PKG_VERSION"),
        },
        summary: SeverityCounts::of(findings),
        findings: findings
            .iter()
            .map(|f| JsonFinding {
                rule: f.rule.id,
                severity: f.severity.as_str(),
                message: &f.message,
                why: f.why(),
                location: f.location.as_ref().map(JsonLocation::from),
                snippet: f
                    .snippet
                    .as_deref()
                    .map(|s| s.trim_end_matches(['\n', '\r'])),
                related: f
                    .related
                    .iter()
                    .map(|r| JsonRelated {
                        message: &r.message,
                        location: JsonLocation::from(&r.location),
                    })
                    .collect(),
            })
            .collect(),
    };
    to_pretty_json(&report)
}

fn to_pretty_json<T: Serialize>(value: &T) -> String {
    // Serialising plain structs of strings and integers cannot fail.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

// ---------------------------------------------------------------------------
// SARIF 2.1.0

/// The `$schema` written into SARIF logs: the OASIS 2.1.0 errata 01 schema,
/// the one the tests validate against.
pub(crate) const SARIF_SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

#[derive(Serialize)]
struct SarifLog<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [SarifRun<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRun<'a> {
    tool: SarifTool,
    column_kind: &'static str,
    results: Vec<SarifResult<'a>>,
}

#[derive(Serialize)]
struct SarifTool {
    driver: SarifDriver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifDriver {
    name: &'static str,
    version: &'static str,
    semantic_version: &'static str,
    rules: Vec<SarifRule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRule {
    id: &'static str,
    name: &'static str,
    short_description: SarifText,
    full_description: SarifText,
    help: SarifText,
    default_configuration: SarifConfiguration,
}

#[derive(Serialize)]
struct SarifConfiguration {
    level: &'static str,
}

#[derive(Serialize)]
struct SarifText {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'static str,
    rule_index: usize,
    level: &'static str,
    message: SarifText,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<SarifLocation<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<SarifLocation<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifLocation<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    physical_location: SarifPhysicalLocation<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<SarifText>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifPhysicalLocation<'a> {
    artifact_location: SarifArtifactLocation,
    region: SarifRegion<'a>,
}

/// A file by its URI, or the embedded default layout, which has none: it
/// is described instead, so that no viewer looks for a file of that name.
#[derive(Serialize)]
struct SarifArtifactLocation {
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<SarifText>,
}

impl SarifArtifactLocation {
    fn of(file: &str) -> Self {
        if file == layout::manifest::DEFAULT_LAYOUT_NAME {
            SarifArtifactLocation {
                uri: None,
                description: Some(SarifText {
                    text: format!(
                        "the default layout embedded in {} {} (`semanifest layout` prints it)",
                        env!("CARGO_PKG_NAME"),
                        env!("CARGO_PKG_VERSION")
                    ),
                }),
            }
        } else {
            SarifArtifactLocation {
                uri: Some(path_to_uri_reference(file)),
                description: None,
            }
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRegion<'a> {
    start_line: u32,
    start_column: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snippet: Option<SarifSnippet<'a>>,
}

#[derive(Serialize)]
struct SarifSnippet<'a> {
    text: &'a str,
}

fn sarif_location<'a>(
    location: &Location,
    snippet: Option<&'a str>,
    id: Option<usize>,
    message: Option<String>,
) -> SarifLocation<'a> {
    SarifLocation {
        id,
        physical_location: SarifPhysicalLocation {
            artifact_location: SarifArtifactLocation::of(&location.file),
            region: SarifRegion {
                start_line: location.pos.line.max(1),
                start_column: location.pos.column.max(1),
                end_column: location
                    .pos
                    .end_column()
                    .filter(|&end| end > location.pos.column),
                snippet: snippet.map(|text| SarifSnippet { text }),
            },
        },
        message: message.map(|text| SarifText { text }),
    }
}

/// Renders a SARIF 2.1.0 log with one run. `tool.driver.rules` lists each
/// rule that has findings, in order of first appearance; results refer to
/// them by index. Artifact URIs are the file names as given, percent-encoded
/// into URI references (relative names stay relative).
pub fn render_sarif(findings: &[Finding]) -> String {
    let mut rules: Vec<&'static Rule> = Vec::new();
    let mut results = Vec::with_capacity(findings.len());
    for finding in findings {
        let rule_index = match rules.iter().position(|r| r.id == finding.rule.id) {
            Some(index) => index,
            None => {
                rules.push(finding.rule);
                rules.len() - 1
            }
        };
        results.push(sarif_result(finding, rule_index));
    }
    let log = SarifLog {
        schema: SARIF_SCHEMA_URI,
        version: "2.1.0",
        runs: [SarifRun {
            tool: SarifTool {
                driver: SarifDriver {
                    name: env!("CARGO_PKG_NAME"),
                    version: env!("CARGO_PKG_VERSION"),
                    semantic_version: env!("CARGO_PKG_VERSION"),
                    rules: rules.iter().copied().map(sarif_rule).collect(),
                },
            },
            column_kind: "unicodeCodePoints",
            results,
        }],
    };
    to_pretty_json(&log)
}

/// One finding as a SARIF result of the rule at `rule_index`.
fn sarif_result(finding: &Finding, rule_index: usize) -> SarifResult<'_> {
    let locations = finding
        .location
        .iter()
        .map(|l| {
            sarif_location(
                l,
                finding
                    .snippet
                    .as_deref()
                    .map(|s| s.trim_end_matches(['\n', '\r'])),
                None,
                None,
            )
        })
        .collect();
    let related_locations = finding
        .related
        .iter()
        .enumerate()
        .map(|(i, r)| sarif_location(&r.location, None, Some(i + 1), Some(r.message.clone())))
        .collect();
    SarifResult {
        rule_id: finding.rule.id,
        rule_index,
        level: finding.severity.as_str(),
        message: SarifText {
            text: finding.message.clone(),
        },
        locations,
        related_locations,
    }
}

/// A rule as the driver lists it: its summary, and why it exists as help.
fn sarif_rule(rule: &Rule) -> SarifRule {
    SarifRule {
        id: rule.id,
        name: rule.name,
        short_description: SarifText {
            text: rule.summary.to_owned(),
        },
        full_description: SarifText {
            text: format!("{} {}", rule.summary, rule.why),
        },
        help: SarifText {
            text: rule.why.to_owned(),
        },
        default_configuration: SarifConfiguration {
            level: rule.default_severity.as_str(),
        },
    }
}

/// Turns a file name as given on the command line into an RFC 3986 URI
/// reference: unreserved characters and `/` stay, everything else
/// (including `:`, which would otherwise read as a scheme, `%`, spaces and
/// non-ASCII bytes) is percent-encoded.
pub(crate) fn path_to_uri_reference(path: &str) -> String {
    let mut uri = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(char::from(byte))
            }
            _ => uri.push_str(&format!("%{byte:02X}")),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    layout::diag::rule!(
        RULE,
        "test-rule",
        "TestRule",
        Error,
        "A rule for tests.",
        "Because tests need one."
    );

    fn finding(file: &str, line: u32, column: u32, severity: Severity) -> Finding {
        Finding {
            rule: &RULE,
            severity,
            message: format!("finding at {line}:{column}"),
            location: Some(Location {
                file: file.to_owned(),
                pos: layout::diag::Pos {
                    line,
                    column,
                    width: 3,
                },
            }),
            snippet: Some("    path: /var\n".to_owned()),
            related: vec![],
        }
    }

    #[test]
    fn uri_references_keep_relative_names_and_encode_the_rest() {
        let cases = [
            ("manifests/pod.yaml", "manifests/pod.yaml"),
            ("./a b/c.yaml", "./a%20b/c.yaml"),
            ("/abs/x#1.yaml", "/abs/x%231.yaml"),
            ("c:odd.yaml", "c%3Aodd.yaml"),
            ("100%.yaml", "100%25.yaml"),
            ("é.yaml", "%C3%A9.yaml"),
        ];
        for (path, uri) in cases {
            assert_eq!(path_to_uri_reference(path), uri, "{path}");
        }
    }

    #[test]
    fn summary_counts_each_severity() {
        let findings = [
            finding("a", 1, 1, Severity::Error),
            finding("a", 2, 1, Severity::Warning),
            finding("b", 1, 1, Severity::Warning),
            finding("b", 3, 1, Severity::Note),
        ];
        let summary = SeverityCounts::of(&findings);
        assert_eq!((summary.errors, summary.warnings, summary.notes), (1, 2, 1));
        assert_eq!(summary.to_string(), "1 error, 2 warnings, 1 note");
    }

    #[test]
    fn human_groups_by_first_appearance_of_file() {
        let findings = [
            finding("b.yaml", 5, 11, Severity::Error),
            finding("a.yaml", 1, 11, Severity::Warning),
            finding("b.yaml", 2, 11, Severity::Warning),
        ];
        let text = render_human(&findings, HumanOptions::default());
        let b = text
            .find("b.yaml: 1 error, 1 warning, 0 notes")
            .expect("b header");
        let a = text
            .find("a.yaml: 0 errors, 1 warning, 0 notes")
            .expect("a header");
        assert!(b < a, "{text}");
        // Both b.yaml findings come before the a.yaml header.
        let second_b = text.find("b.yaml:2:11").expect("second b finding");
        assert!(second_b < a, "{text}");
        assert!(text.contains("Because tests need one."), "{text}");
        assert!(
            text.ends_with("check: 1 error, 2 warnings, 0 notes\n"),
            "{text}"
        );
    }

    #[test]
    fn human_puts_caret_under_the_value() {
        let text = render_human(
            &[finding("a.yaml", 7, 11, Severity::Error)],
            HumanOptions::default(),
        );
        let lines: Vec<&str> = text.lines().collect();
        let source = lines
            .iter()
            .position(|l| l.ends_with("path: /var"))
            .expect("source line");
        let caret_line = lines[source + 1];
        let source_col = lines[source].find("/var").unwrap();
        assert_eq!(caret_line.find('^'), Some(source_col), "{text}");
        assert_eq!(caret_line.matches('^').count(), 3, "{text}");
    }

    #[test]
    fn human_escapes_control_characters() {
        let mut f = finding("a.yaml", 1, 1, Severity::Error);
        f.message = "path /var/\u{1b}[31mred".to_owned();
        f.snippet = Some("path: \"/var/\u{1b}[31m\"".to_owned());
        let text = render_human(&[f], HumanOptions::default());
        assert!(!text.contains('\u{1b}'), "{text:?}");
        assert!(text.contains("\\u{1b}[31mred"), "{text}");
    }

    #[test]
    fn json_has_version_and_summary() {
        let text = render_json(&[finding("a.yaml", 1, 2, Severity::Warning)]);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["version"], JSON_SCHEMA_VERSION);
        assert_eq!(value["summary"]["warnings"], 1);
        assert_eq!(value["findings"][0]["location"]["column"], 2);
        assert_eq!(value["findings"][0]["snippet"], "    path: /var");
    }

    #[test]
    fn sarif_indexes_rules_once() {
        let text = render_sarif(&[
            finding("a.yaml", 1, 2, Severity::Error),
            finding("a.yaml", 3, 4, Severity::Error),
        ]);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let run = &value["runs"][0];
        assert_eq!(run["tool"]["driver"]["rules"].as_array().unwrap().len(), 1);
        assert_eq!(run["results"][1]["ruleIndex"], 0);
        let region = &run["results"][1]["locations"][0]["physicalLocation"]["region"];
        assert_eq!(
            (region["startLine"].clone(), region["startColumn"].clone()),
            (3.into(), 4.into())
        );
    }
}
