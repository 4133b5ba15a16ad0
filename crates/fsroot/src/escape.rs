//! Printable rendering of file names, which may hold any byte but NUL.

use std::fmt::{self, Write as _};

/// Displays a path with control characters, backslashes and invalid UTF-8
/// escaped, so a hostile name cannot rewrite the terminal or forge output
/// lines. Printable UTF-8 (including non-ASCII) is kept as is.
pub struct EscapedPath<'a>(pub &'a [u8]);

impl fmt::Display for EscapedPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\\' => f.write_str("\\\\")?,
                    '\n' => f.write_str("\\n")?,
                    '\t' => f.write_str("\\t")?,
                    '\r' => f.write_str("\\r")?,
                    c if c.is_control() => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                    c => f.write_char(c)?,
                }
            }
            for byte in chunk.invalid() {
                write!(f, "\\x{byte:02x}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::EscapedPath;

    #[test]
    fn hostile_names_are_escaped() {
        let cases: &[(&[u8], &str)] = &[
            (b"/var/log/pods", "/var/log/pods"),
            (b"/a\nb", "/a\\nb"),
            (b"/a\x1b[2Jb", "/a\\u{1b}[2Jb"),
            (b"/caf\xc3\xa9", "/caf\u{e9}"),
            (b"/bad\xff\xfe", "/bad\\xff\\xfe"),
            (b"/back\\slash", "/back\\\\slash"),
            (b"/del\x7f", "/del\\u{7f}"),
            (b"/c1\xc2\x85", "/c1\\u{85}"),
        ];
        for (raw, shown) in cases {
            assert_eq!(EscapedPath(raw).to_string(), *shown);
        }
    }
}
