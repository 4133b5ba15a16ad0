//! The diagnostics vocabulary every producer speaks (`manifest`, `k8s`,
//! `check`, `diff`): where ([`Pos`], [`Location`]), how grave
//! ([`Severity`]), which rule ([`Rule`], declared with [`rule!`]) and what
//! ([`Finding`]). The renderers (human, JSON, SARIF) live in
//! `check::report`; the one rendering here is the manifest compiler's
//! `FILE:LINE:COL: error[code]: …` with the offending line underneath
//! ([`Diagnostic::render`]), so every message can be pasted into an
//! editor's "go to" box.
//!
//! Positions are 1-based lines and 1-based columns counted in Unicode
//! scalar values, with a width in the same unit; line 0 means unknown.

use std::fmt;

/// A 1-based position in a source text, plus the width of the offending token
/// (0 when unknown) for the underline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
    pub width: u32,
}

impl Pos {
    pub(crate) fn new(line: u64, column: u64, width: usize) -> Self {
        Pos {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
            width: u32::try_from(width).unwrap_or(u32::MAX),
        }
    }

    /// Position of a YAML node, underlined over `width` characters.
    pub fn of(location: &serde_saphyr::Location, width: usize) -> Self {
        Pos::new(location.line(), location.column(), width)
    }

    pub(crate) fn is_known(&self) -> bool {
        self.line > 0
    }

    /// The exclusive end column on the same line, when the width is known.
    pub fn end_column(&self) -> Option<u32> {
        (self.width > 0).then(|| self.column.saturating_add(self.width))
    }
}

/// A position in a named file: the file as the user gave it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    pub file: String,
    pub pos: Pos,
}

impl Location {
    /// `pos` in `file`, when the position is known.
    pub fn at(file: &str, pos: Pos) -> Option<Location> {
        pos.is_known().then(|| Location {
            file: file.to_owned(),
            pos,
        })
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.pos.line, self.pos.column)
    }
}

/// How grave a finding is. Ordered from least to most grave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    /// The lowercase name every renderer uses (`note`, `warning`,
    /// `error`); it is also SARIF's `level` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A check that can produce findings. Declared with [`rule!`] as a
/// `static`, so that ids, names and explanations are stable across runs
/// and a finding names its rule by reference, never by a string.
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable identifier, kebab-case, prefixed by the producer
    /// (e.g. `k8s-hostpath-protected`). Part of the JSON and SARIF contract.
    pub id: &'static str,
    /// PascalCase name (SARIF `reportingDescriptor.name`).
    pub name: &'static str,
    /// One sentence: what the rule reports.
    pub summary: &'static str,
    /// One line: why it matters. Printed under every finding.
    pub why: &'static str,
    /// The severity the rule's findings usually carry.
    pub default_severity: Severity,
}

/// Declares `pub static NAME: Rule`:
/// `rule!(NAME, "id", "PascalName", Severity, "summary", "why");`.
#[macro_export]
macro_rules! rule {
    ($name:ident, $id:literal, $pascal:literal, $severity:ident, $summary:literal, $why:literal) => {
        pub static $name: $crate::diag::Rule = $crate::diag::Rule {
            id: $id,
            name: $pascal,
            summary: $summary,
            why: $why,
            default_severity: $crate::diag::Severity::$severity,
        };
    };
}
pub use crate::rule;

/// A finer code under a rule, shown in the manifest compiler's
/// `error[code]` (e.g. `path-not-normalised` under `layout-path`); a
/// finding made of it carries its rule.
#[derive(Debug, PartialEq, Eq)]
pub struct Code {
    pub id: &'static str,
    pub rule: &'static Rule,
}

/// Declares `pub static NAME: Code`: `code!(NAME, "id", RULE);`.
macro_rules! code {
    ($name:ident, $id:literal, $rule:ident) => {
        pub static $name: $crate::diag::Code = $crate::diag::Code {
            id: $id,
            rule: &$rule,
        };
    };
}
pub(crate) use code;

/// A secondary position that explains a finding (e.g. where the layout
/// declared the protected path a workload exposes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Related {
    pub location: Location,
    pub message: String,
}

/// One reported problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static Rule,
    pub severity: Severity,
    pub message: String,
    pub location: Option<Location>,
    /// The full source line at `location`, for the human renderer and SARIF
    /// `region.snippet`.
    pub snippet: Option<String>,
    pub related: Vec<Related>,
}

impl Finding {
    /// A finding of `rule` at its default severity, about no one place.
    pub fn new(rule: &'static Rule, message: impl Into<String>) -> Finding {
        Finding {
            rule,
            severity: rule.default_severity,
            message: message.into(),
            location: None,
            snippet: None,
            related: Vec::new(),
        }
    }

    /// A finding of `rule` at its default severity, at `pos` in `source`
    /// (no location when the position is unknown), with its line.
    pub fn in_source(
        rule: &'static Rule,
        source: &Source,
        pos: Pos,
        message: impl Into<String>,
    ) -> Finding {
        Finding::new(rule, message).at(Location::at(&source.name, pos), |line| source.line(line))
    }

    /// This finding at `location`, with the source line `line` gives.
    pub(crate) fn at<'s>(
        mut self,
        location: Option<Location>,
        line: impl FnOnce(u32) -> Option<&'s str>,
    ) -> Finding {
        self.snippet = location
            .as_ref()
            .and_then(|l| line(l.pos.line))
            .map(str::to_owned);
        self.location = location;
        self
    }

    /// The rule's one-line explanation.
    pub fn why(&self) -> &'static str {
        self.rule.why
    }
}

/// One finding of the manifest compiler about one source file: its code
/// (which names its rule), what and where, and the fix when there is one
/// obvious fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static Code,
    pub message: String,
    pub pos: Pos,
    /// What to do about it, when there is one obvious fix.
    pub help: Option<String>,
}

impl Diagnostic {
    pub(crate) fn error(code: &'static Code, pos: Pos, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            pos,
            help: None,
        }
    }

    pub(crate) fn warning(code: &'static Code, pos: Pos, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            code,
            message: message.into(),
            pos,
            help: None,
        }
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The diagnostic as a finding of its code's rule, in `source`; the
    /// help, if any, ends the message.
    pub fn to_finding(&self, source: &Source) -> Finding {
        let mut message = self.message.clone();
        if let Some(help) = &self.help {
            message.push_str(&format!(" (help: {help})"));
        }
        Finding {
            severity: self.severity,
            ..Finding::in_source(self.code.rule, source, self.pos, message)
        }
    }

    /// `FILE:LINE:COL: error[code]: message`, the offending line with a caret
    /// underline, and the help line if any.
    pub fn render(&self, source: &Source) -> String {
        let code = self.code.id;
        let mut out = String::new();
        if self.pos.is_known() {
            out.push_str(&format!(
                "{}:{}:{}: {}[{}]: {}\n",
                source.name, self.pos.line, self.pos.column, self.severity, code, self.message
            ));
            if let Some(line) = source.line(self.pos.line) {
                let gutter = self.pos.line.to_string();
                let pad = " ".repeat(gutter.len());
                let caret_offset = self.pos.column.saturating_sub(1) as usize;
                // Indent the caret by the same characters as the source line so
                // tabs line up.
                let lead: String = line
                    .chars()
                    .take(caret_offset)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                let carets = "^".repeat(self.pos.width.max(1) as usize);
                out.push_str(&format!(
                    "{pad} |\n{gutter} | {line}\n{pad} | {lead}{carets}\n"
                ));
            }
        } else {
            out.push_str(&format!(
                "{}: {}[{}]: {}\n",
                source.name, self.severity, code, self.message
            ));
        }
        if let Some(help) = &self.help {
            out.push_str(&format!("  = help: {help}\n"));
        }
        out
    }
}

/// A source file as the user named it, with its text.
#[derive(Clone, Debug)]
pub struct Source {
    /// The name printed in diagnostics: the path exactly as given on the
    /// command line, or `<embedded default layout>`.
    pub name: String,
    pub text: String,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Source {
            name: name.into(),
            text: text.into(),
        }
    }

    pub fn line(&self, line: u32) -> Option<&str> {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        self.text
            .lines()
            .nth(index)
            .map(|l| l.trim_end_matches('\r'))
    }
}

/// Every diagnostic of one phase, in source order, with the source they are
/// about. The error type of the manifest compiler.
#[derive(Clone, Debug)]
pub struct Report {
    pub source: Source,
    pub diagnostics: Vec<Diagnostic>,
}

impl Report {
    pub(crate) fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for diagnostic in &self.diagnostics {
            f.write_str(&diagnostic.render(&self.source))?;
        }
        let errors = self.error_count();
        if errors > 0 {
            write!(
                f,
                "{}: {} error{} found",
                self.source.name,
                errors,
                if errors == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Report {}

#[cfg(test)]
mod tests {
    use super::*;

    rule!(
        TEST_RULE,
        "test-rule",
        "TestRule",
        Error,
        "A rule for tests.",
        "Because."
    );
    code!(PATH_NOT_NORMALISED, "path-not-normalised", TEST_RULE);
    code!(W, "w", TEST_RULE);

    #[test]
    fn renders_position_snippet_and_help() {
        let source = Source::new("layout.yaml", "a: 1\n  path: /var//lib\n");
        let d = Diagnostic::error(&PATH_NOT_NORMALISED, Pos::new(2, 9, 10), "bad path")
            .with_help("write `/var/lib`");
        assert_eq!(
            d.render(&source),
            "layout.yaml:2:9: error[path-not-normalised]: bad path\n  |\n2 |   path: /var//lib\n  |         ^^^^^^^^^^\n  = help: write `/var/lib`\n"
        );
    }

    #[test]
    fn unknown_position_renders_file_only() {
        let source = Source::new("x.yaml", "");
        let d = Diagnostic::warning(&W, Pos::default(), "m");
        assert_eq!(d.render(&source), "x.yaml: warning[w]: m\n");
    }

    #[test]
    fn a_diagnostic_is_a_finding_of_its_codes_rule() {
        let source = Source::new("layout.yaml", "a: 1\n  path: /var//lib\n");
        let d = Diagnostic::warning(&PATH_NOT_NORMALISED, Pos::new(2, 9, 10), "bad path")
            .with_help("write `/var/lib`");
        let finding = d.to_finding(&source);
        assert!(std::ptr::eq(finding.rule, &TEST_RULE));
        assert_eq!(finding.severity, Severity::Warning);
        assert_eq!(finding.message, "bad path (help: write `/var/lib`)");
        assert_eq!(
            finding.location.as_ref().unwrap().to_string(),
            "layout.yaml:2:9"
        );
        assert_eq!(finding.location.unwrap().pos.end_column(), Some(19));
        assert_eq!(finding.snippet.as_deref(), Some("  path: /var//lib"));
        // Unknown position: no location, no snippet.
        let finding = Diagnostic::error(&W, Pos::default(), "m").to_finding(&source);
        assert_eq!((finding.location, finding.snippet), (None, None));
    }

    #[test]
    fn severities_order_from_least_to_most_grave() {
        assert!(Severity::Note < Severity::Warning && Severity::Warning < Severity::Error);
    }
}
