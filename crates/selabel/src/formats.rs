//! Readers for one file_contexts source: the text format (libselinux's
//! `read_spec_entries` + `process_line`) and the compiled `.bin` format
//! (`load_mmap`, versions 1 to 5).
//!
//! Invariant: these functions only turn bytes into [`ParsedSpec`]s in file order,
//! with the exact-versus-regex flag and the stem libselinux would attach. They
//! never touch the filesystem and never compile regexes.

use super::{FileKind, LoadError, SpecLine, SpecProblem};

/// One spec as libselinux stores it before sorting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParsedSpec {
    /// The path-regex field, as written (ASCII).
    pub regex: Vec<u8>,
    /// `S_IFMT` bits from the type field, 0 when absent.
    pub mode: u32,
    pub context: String,
    /// libselinux's `hasMetaChars`: false for "exact" specs, which sort last.
    pub has_meta: bool,
    /// First path component when it has no meta character (the stem filter).
    pub stem: Option<Vec<u8>>,
    pub line: SpecLine,
}

/// libselinux's "meta characters" (`spec_hasMetaChars`, `get_stem_from_spec`).
const META: &[u8] = b".^$?*+|[({";

/// C `isspace` in the C locale.
pub(crate) fn is_c_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

/// `spec_hasMetaChars`: a `\` hides the next character from the scan, so
/// `/a\.b` and even `/a\d` count as exact (but are still matched as regexes).
pub(crate) fn has_meta_chars(regex: &[u8]) -> bool {
    let mut index = 0;
    while let Some(&byte) = regex.get(index) {
        if byte == b'\\' {
            index += 2;
            continue;
        }
        if META.contains(&byte) {
            return true;
        }
        index += 1;
    }
    false
}

/// `get_stem_from_spec`: the text before the second `/` (searched from the
/// second character on) if it has no meta character. `\` is not special here.
pub(crate) fn stem_of_spec(regex: &[u8]) -> Option<Vec<u8>> {
    let slash = regex.get(1..)?.iter().position(|&byte| byte == b'/')? + 1;
    let stem = &regex[..slash];
    (!stem.iter().any(|byte| META.contains(byte))).then(|| stem.to_vec())
}

/// Parses a text file_contexts. `file` names it in errors.
pub(crate) fn parse_text(file: &str, text: &[u8]) -> Result<Vec<ParsedSpec>, LoadError> {
    let mut specs = Vec::new();
    let mut line_number: u32 = 0;
    for raw_line in text.split_inclusive(|&byte| byte == b'\n') {
        line_number = line_number.saturating_add(1);
        // libselinux works on the C string: a NUL ends the line early.
        let line = match raw_line.iter().position(|&byte| byte == 0) {
            Some(nul) => &raw_line[..nul],
            None => raw_line,
        };
        let error = |problem| LoadError::Spec {
            file: file.to_owned(),
            line: SpecLine::Line(line_number),
            problem,
        };
        let start = line.iter().position(|&byte| !is_c_space(byte));
        let Some(start) = start else { continue };
        if line[start] == b'#' {
            continue;
        }
        // Up to three fields; a fourth and anything after it is never read.
        let mut fields: Vec<&[u8]> = Vec::with_capacity(3);
        for field in line[start..]
            .split(|&byte| is_c_space(byte))
            .filter(|field| !field.is_empty())
            .take(3)
        {
            if let Some(&byte) = field.iter().find(|byte| !byte.is_ascii()) {
                return Err(error(SpecProblem::NonAscii(byte)));
            }
            fields.push(field);
        }
        let (regex, type_field, context) = match fields.as_slice() {
            [regex, context] => (*regex, None, *context),
            [regex, type_field, context] => (*regex, Some(*type_field), *context),
            _ => return Err(error(SpecProblem::MissingFields)),
        };
        let mode = match type_field {
            None => 0,
            Some(field) => FileKind::from_type_field(field)
                .map(FileKind::selabel_mode)
                .ok_or_else(|| {
                    error(SpecProblem::InvalidFileType(
                        String::from_utf8_lossy(field).into_owned(),
                    ))
                })?,
        };
        specs.push(ParsedSpec {
            regex: regex.to_vec(),
            mode,
            // ASCII was checked above.
            context: String::from_utf8_lossy(context).into_owned(),
            has_meta: has_meta_chars(regex),
            stem: stem_of_spec(regex),
            line: SpecLine::Line(line_number),
        });
    }
    Ok(specs)
}

/// `SELINUX_MAGIC_COMPILED_FCONTEXT`, little-endian on disk like the hosts
/// that write it.
pub(crate) const COMPILED_MAGIC: u32 = 0xf97c_ff8a;
const COMPILED_MAX_VERSION: u32 = 5;

pub(crate) fn is_compiled(bytes: &[u8]) -> bool {
    bytes.get(..4) == Some(&COMPILED_MAGIC.to_ne_bytes()[..])
}

/// What a compiled file holds besides its specs.
pub(crate) struct CompiledFile {
    pub specs: Vec<ParsedSpec>,
    /// The PCRE2 version the file was built with: libselinux ignores the file
    /// (and reads the text one) when its own PCRE2 version differs.
    pub regex_version: Option<String>,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, length: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(length)?;
        let slice = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(slice)
    }

    fn u32(&mut self) -> Option<u32> {
        let bytes = self.take(4)?;
        Some(u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// A NUL-terminated string whose stored length includes the NUL; like
    /// libselinux, the value is the C string (up to the first NUL).
    fn c_string(&mut self) -> Option<&'a [u8]> {
        let length = usize::try_from(self.u32()?).ok()?;
        if length == 0 {
            return None;
        }
        let bytes = self.take(length)?;
        if bytes[length - 1] != 0 {
            return None;
        }
        let end = bytes
            .iter()
            .position(|&byte| byte == 0)
            .unwrap_or(length - 1);
        Some(&bytes[..end])
    }
}

/// Parses a compiled (`.bin`) file_contexts as libselinux 3.4's `load_mmap`
/// does, keeping each spec's regex text (the precompiled PCRE2 code is
/// skipped: we compile the text ourselves).
pub(crate) fn parse_compiled(file: &str, bytes: &[u8]) -> Result<CompiledFile, LoadError> {
    let truncated = |what: &str| LoadError::Compiled {
        file: file.to_owned(),
        problem: format!("truncated or malformed compiled file ({what})"),
    };
    let mut cursor = Cursor { bytes, pos: 0 };
    if cursor.u32() != Some(COMPILED_MAGIC) {
        return Err(truncated("magic"));
    }
    let version = cursor.u32().ok_or_else(|| truncated("version"))?;
    if version > COMPILED_MAX_VERSION || version == 0 {
        return Err(LoadError::Compiled {
            file: file.to_owned(),
            problem: format!("compiled format version {version} is not one libselinux 3.4 reads"),
        });
    }
    let mut regex_version = None;
    if version >= 2 {
        let length = cursor.u32().ok_or_else(|| truncated("regex version"))?;
        let text = cursor
            .take(usize::try_from(length).map_err(|_| truncated("regex version"))?)
            .ok_or_else(|| truncated("regex version"))?;
        regex_version = Some(String::from_utf8_lossy(text).into_owned());
        if version >= 5 {
            let length = cursor.u32().ok_or_else(|| truncated("regex arch"))?;
            cursor
                .take(usize::try_from(length).map_err(|_| truncated("regex arch"))?)
                .ok_or_else(|| truncated("regex arch"))?;
        }
    }
    let stem_count = cursor.u32().ok_or_else(|| truncated("stem count"))?;
    let mut stems: Vec<Vec<u8>> = Vec::new();
    for _ in 0..stem_count {
        let length = cursor.u32().ok_or_else(|| truncated("stem"))?;
        if length == 0 || length == u32::MAX {
            return Err(truncated("stem"));
        }
        let length = usize::try_from(length).map_err(|_| truncated("stem"))?;
        let stem = cursor.take(length + 1).ok_or_else(|| truncated("stem"))?;
        if stem[length] != 0 {
            return Err(truncated("stem"));
        }
        stems.push(stem[..length].to_vec());
    }
    let spec_count = cursor.u32().ok_or_else(|| truncated("spec count"))?;
    if spec_count == 0 {
        // libselinux refuses an empty compiled file.
        return Err(truncated("no specs"));
    }
    let mut specs = Vec::new();
    for entry in 1..=spec_count {
        let context = cursor.c_string().ok_or_else(|| truncated("context"))?;
        let regex = cursor.c_string().ok_or_else(|| truncated("regex"))?;
        let mode = cursor.u32().ok_or_else(|| truncated("mode"))?;
        let stem_id = cursor.u32().ok_or_else(|| truncated("stem id"))? as i32;
        // Stored as an int, kept by libselinux in a `char`.
        let has_meta = cursor.u32().ok_or_else(|| truncated("meta flag"))? & 0xFF != 0;
        if version >= 4 {
            cursor.u32().ok_or_else(|| truncated("prefix length"))?;
        }
        let compiled_length = cursor.u32().ok_or_else(|| truncated("regex code"))?;
        cursor
            .take(usize::try_from(compiled_length).map_err(|_| truncated("regex code"))?)
            .ok_or_else(|| truncated("regex code"))?;
        let line = SpecLine::CompiledEntry(entry);
        let non_ascii = |bytes: &[u8]| bytes.iter().find(|byte| !byte.is_ascii()).copied();
        if let Some(byte) = non_ascii(context).or_else(|| non_ascii(regex)) {
            return Err(LoadError::Spec {
                file: file.to_owned(),
                line,
                problem: SpecProblem::NonAscii(byte),
            });
        }
        let stem = usize::try_from(stem_id)
            .ok()
            .and_then(|index| stems.get(index))
            .cloned();
        specs.push(ParsedSpec {
            regex: regex.to_vec(),
            mode,
            context: String::from_utf8_lossy(context).into_owned(),
            has_meta,
            stem,
            line,
        });
    }
    Ok(CompiledFile {
        specs,
        regex_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_scan_skips_escaped_characters() {
        assert!(!has_meta_chars(br"/a\.b"));
        assert!(!has_meta_chars(br"/a\d"));
        assert!(!has_meta_chars(br"/foo\"));
        assert!(has_meta_chars(br"/a.b"));
        assert!(has_meta_chars(br"/a\\.b"));
    }

    #[test]
    fn stems() {
        assert_eq!(stem_of_spec(b"/usr/bin"), Some(b"/usr".to_vec()));
        assert_eq!(stem_of_spec(b"/usr"), None);
        assert_eq!(stem_of_spec(b"/usr(/.*)?"), None);
        assert_eq!(stem_of_spec(br"/a\d/b"), Some(br"/a\d".to_vec()));
        assert_eq!(stem_of_spec(b"abc/d"), Some(b"abc".to_vec()));
        assert_eq!(stem_of_spec(b"/"), None);
    }

    #[test]
    fn text_lines() {
        let specs = parse_text(
            "t",
            b"# c\n\n  /a -d x_u:r:t:s0 ignored #\r\n/b\tctx\0junk\n",
        )
        .unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].mode, 0o040000);
        assert_eq!(specs[0].context, "x_u:r:t:s0");
        assert_eq!(specs[1].context, "ctx");
        assert_eq!(specs[1].line, SpecLine::Line(4));
        let error = parse_text("t", b"/a\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "t:1: only one field: a spec is `PATH [TYPE] CONTEXT`"
        );
    }
}
