//! Diagnostics with source positions, shared by the manifest compiler and
//! `check`.
//!
//! A [`Diagnostic`] knows *what* is wrong and *where* (a 1-based line and
//! column); a [`Source`] knows the file's name as the user gave it and its
//! text. Rendering joins the two into the `FILE:LINE:COL: error: …` form
//! with the offending line underneath, so every message can be pasted into an
//! editor's "go to" box.

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
    pub fn new(line: u64, column: u64, width: usize) -> Self {
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

    pub fn is_known(&self) -> bool {
        self.line > 0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        })
    }
}

/// One finding about one source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable identifier of the rule that fired, e.g. `path-not-normalised`.
    pub code: &'static str,
    pub message: String,
    pub pos: Pos,
    /// What to do about it, when there is one obvious fix.
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, pos: Pos, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            pos,
            help: None,
        }
    }

    pub fn warning(code: &'static str, pos: Pos, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            code,
            message: message.into(),
            pos,
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `FILE:LINE:COL: error[code]: message`, the offending line with a caret
    /// underline, and the help line if any.
    pub fn render(&self, source: &Source) -> String {
        let mut out = String::new();
        if self.pos.is_known() {
            out.push_str(&format!(
                "{}:{}:{}: {}[{}]: {}\n",
                source.name, self.pos.line, self.pos.column, self.severity, self.code, self.message
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
                source.name, self.severity, self.code, self.message
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
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    pub fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
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

    #[test]
    fn renders_position_snippet_and_help() {
        let source = Source::new("layout.yaml", "a: 1\n  path: /var//lib\n");
        let d = Diagnostic::error("path-not-normalised", Pos::new(2, 9, 10), "bad path")
            .with_help("write `/var/lib`");
        assert_eq!(
            d.render(&source),
            "layout.yaml:2:9: error[path-not-normalised]: bad path\n  |\n2 |   path: /var//lib\n  |         ^^^^^^^^^^\n  = help: write `/var/lib`\n"
        );
    }

    #[test]
    fn unknown_position_renders_file_only() {
        let source = Source::new("x.yaml", "");
        let d = Diagnostic::warning("w", Pos::default(), "m");
        assert_eq!(d.render(&source), "x.yaml: warning[w]: m\n");
    }
}
