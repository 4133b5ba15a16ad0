//! Unit-file text. Every value goes through [`UnitText::set`], which writes
//! `%` as `%%` (systemd expands specifiers in nearly every setting, and the
//! layout means its `%` literally) and refuses line breaks and control
//! characters, so no value can start a setting of its own.

use std::fmt::Write as _;

/// A value that cannot be written into a unit file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}={value:?} cannot be written into a unit file: it contains a control character")]
pub struct TextError {
    pub key: String,
    pub value: String,
}

/// One unit or drop-in file, built a setting at a time.
pub(crate) struct UnitText {
    text: String,
    error: Option<TextError>,
}

impl UnitText {
    /// Starts a file with comment lines (`# ` is added).
    pub(crate) fn new(comment: &[&str]) -> Self {
        let mut text = String::new();
        for line in comment {
            let line = line.replace(['\n', '\r'], " ");
            let _ = writeln!(text, "# {line}");
        }
        UnitText { text, error: None }
    }

    pub(crate) fn section(&mut self, name: &str) -> &mut Self {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        let _ = writeln!(self.text, "[{name}]");
        self
    }

    /// A comment line inside a section.
    pub(crate) fn comment(&mut self, line: &str) -> &mut Self {
        let _ = writeln!(self.text, "# {}", line.replace(['\n', '\r'], " "));
        self
    }

    pub(crate) fn set(&mut self, key: &str, value: &str) -> &mut Self {
        if value.chars().any(char::is_control) && self.error.is_none() {
            self.error = Some(TextError {
                key: key.to_owned(),
                value: value.to_owned(),
            });
        }
        let _ = writeln!(self.text, "{key}={}", value.replace('%', "%%"));
        self
    }

    /// `KEY=` alone: resets a list setting (`ExecStart=`) in a drop-in.
    pub(crate) fn reset(&mut self, key: &str) -> &mut Self {
        let _ = writeln!(self.text, "{key}=");
        self
    }

    pub(crate) fn finish(self) -> Result<String, TextError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_is_literal_and_line_breaks_are_refused() {
        let mut unit = UnitText::new(&["one"]);
        unit.section("Mount").set("Options", "size=20%");
        assert_eq!(
            unit.finish().unwrap(),
            "# one\n\n[Mount]\nOptions=size=20%%\n"
        );
        let mut unit = UnitText::new(&[]);
        unit.section("Unit")
            .set("Description", "a\nExecStart=/bin/sh");
        assert!(unit.finish().is_err());
    }
}
