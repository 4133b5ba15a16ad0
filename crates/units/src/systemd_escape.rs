//! Layout paths as systemd reads them: unit names derived from paths
//! (`systemd-escape --path`), and the characters a path may carry into a
//! unit setting.

use std::fmt::Write as _;

/// The longest unit name systemd accepts.
pub const UNIT_NAME_MAX: usize = 255;

/// Characters a path cannot carry into a unit file: `ExecStart=` and
/// `RequiresMountsFor=` split words and read `\`, quotes and (ExecStart)
/// `$` themselves. Whitespace and `"` never reach here (layout paths have
/// none); `%` is written as `%%` by [`super::text`].
const UNWRITABLE: [char; 4] = ['\\', '\'', '"', '$'];

/// Why a path cannot name or appear in a unit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitPathError {
    #[error(
        "`{path}` contains `{character}`, which systemd reads as quoting or expansion in a unit \
         setting; semanifest writes no unit for it (rename the directory)"
    )]
    Unwritable { path: String, character: char },
    #[error(
        "the unit name for `{path}` would be {length} characters, more than systemd's \
         {UNIT_NAME_MAX}; shorten the path"
    )]
    TooLong { path: String, length: usize },
}

/// Refuses a path that a unit setting would not read back as written.
pub fn check_writable(path: &str) -> Result<(), UnitPathError> {
    match path
        .chars()
        .find(|c| UNWRITABLE.contains(c) || c.is_control())
    {
        Some(character) => Err(UnitPathError::Unwritable {
            path: path.to_owned(),
            character,
        }),
        None => Ok(()),
    }
}

/// `systemd-escape --path --suffix=SUFFIX PATH` for a normalised absolute
/// path: `/` between names becomes `-`; ASCII letters, digits, `:`, `_`
/// and `.` stay (but a `.` that would start the name is escaped); every
/// other byte, `-` and `\` included, becomes `\xNN`. `/` itself is `-`.
pub fn unit_name(path: &str, suffix: &str) -> Result<String, UnitPathError> {
    let trimmed = path.trim_matches('/');
    let mut name = String::with_capacity(trimmed.len() + suffix.len() + 1);
    if trimmed.is_empty() {
        name.push('-');
    }
    for (index, byte) in trimmed.bytes().enumerate() {
        match byte {
            b'/' => name.push('-'),
            b'.' if index == 0 => push_escaped(&mut name, byte),
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b':' | b'_' | b'.' => name.push(byte as char),
            _ => push_escaped(&mut name, byte),
        }
    }
    name.push('.');
    name.push_str(suffix);
    if name.len() > UNIT_NAME_MAX {
        return Err(UnitPathError::TooLong {
            path: path.to_owned(),
            length: name.len(),
        });
    }
    Ok(name)
}

fn push_escaped(name: &mut String, byte: u8) {
    let _ = write!(name, "\\x{byte:02x}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_systemd_escape_writes_them() {
        // Checked against the real systemd-escape in tests/it/units.rs; these
        // keep the rules readable here.
        assert_eq!(unit_name("/var/run", "mount").unwrap(), "var-run.mount");
        assert_eq!(
            unit_name("/var/lib/a-b", "mount").unwrap(),
            "var-lib-a\\x2db.mount"
        );
        assert_eq!(
            unit_name("/.hid/x.y", "mount").unwrap(),
            "\\x2ehid-x.y.mount"
        );
        assert_eq!(unit_name("/", "mount").unwrap(), "-.mount");
    }

    #[test]
    fn too_long_and_unwritable_are_errors() {
        let long = format!("/{}", "a".repeat(250));
        assert!(matches!(
            unit_name(&long, "mount"),
            Err(UnitPathError::TooLong { length: 256, .. })
        ));
        assert!(unit_name(&long[..250], "mount").is_ok());
        assert!(check_writable("/var/a$b").is_err());
        assert!(check_writable("/var/a%b:c").is_ok());
    }
}
