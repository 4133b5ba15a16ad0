//! The `file_contexts` text of a policy, written without running secilc.
//!
//! secilc writes `filecon` statements sorted by libsepol's
//! `cil_post_filecon_compare` (regex specs before exact ones, then shorter
//! literal stem, then shorter length, then file type, then byte order), one
//! `PATH<TAB>[TYPE<TAB>]CONTEXT` line each. Reproducing that order here lets
//! `lookup`/`relabel --layout` work from a manifest alone; the tests compare
//! these bytes with secilc's own output.

use std::cmp::Ordering;

/// One `filecon`: a regex, an optional file type and a context (`None` is
/// `<<none>>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCon {
    pub regex: String,
    pub file_type: FileConType,
    pub context: Option<String>,
}

/// CIL file types, in libsepol's enum order (which the sort uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileConType {
    File,
    Dir,
    Char,
    Block,
    Socket,
    Pipe,
    Symlink,
    Any,
}

impl FileConType {
    /// The type field secilc writes (`any` writes none).
    fn field(self) -> Option<&'static str> {
        match self {
            FileConType::File => Some("--"),
            FileConType::Dir => Some("-d"),
            FileConType::Char => Some("-c"),
            FileConType::Block => Some("-b"),
            FileConType::Socket => Some("-s"),
            FileConType::Pipe => Some("-p"),
            FileConType::Symlink => Some("-l"),
            FileConType::Any => None,
        }
    }
}

struct SortKey {
    meta: bool,
    stem_len: usize,
    str_len: usize,
}

fn sort_key(regex: &str) -> SortKey {
    let bytes = regex.as_bytes();
    let mut key = SortKey {
        meta: false,
        stem_len: 0,
        str_len: 0,
    };
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'.' | b'^' | b'$' | b'?' | b'*' | b'+' | b'|' | b'[' | b'(' | b'{' => key.meta = true,
            b'\\' => {
                // An escaped character counts once, as part of the stem.
                i += 1;
                if !key.meta {
                    key.stem_len += 1;
                }
            }
            _ => {
                if !key.meta {
                    key.stem_len += 1;
                }
            }
        }
        key.str_len += 1;
        i += 1;
    }
    key
}

/// secilc's order (`cil_post_filecon_compare`): `Greater` means `a` is
/// written after `b`, so libselinux prefers `a` where both match.
pub fn compare(a: &FileCon, b: &FileCon) -> Ordering {
    let (ka, kb) = (sort_key(&a.regex), sort_key(&b.regex));
    // Regex specs (meta) sort before exact ones.
    kb.meta
        .cmp(&ka.meta)
        .then(ka.stem_len.cmp(&kb.stem_len))
        .then(ka.str_len.cmp(&kb.str_len))
        .then(a.file_type.cmp(&b.file_type))
        .then(a.regex.as_bytes().cmp(b.regex.as_bytes()))
}

/// True when secilc's sort can only tell `a` and `b` apart by `strcmp`:
/// same kind of spec, stem length, length and file type.
pub fn ordered_by_strcmp_only(a: &FileCon, b: &FileCon) -> bool {
    let (ka, kb) = (sort_key(&a.regex), sort_key(&b.regex));
    a.regex != b.regex
        && ka.meta == kb.meta
        && ka.stem_len == kb.stem_len
        && ka.str_len == kb.str_len
        && a.file_type == b.file_type
}

/// Whether secilc counts `regex` as a regex (it has an unescaped
/// metacharacter) rather than an exact path.
pub fn has_meta(regex: &str) -> bool {
    sort_key(regex).meta
}

/// The literal text before the first regex metacharacter, unescaped:
/// `/var/lib\.d(/.*)?` → `/var/lib.d`.
pub fn literal_stem(regex: &str) -> String {
    let mut stem = String::new();
    let mut chars = regex.chars();
    while let Some(c) = chars.next() {
        match c {
            '.' | '^' | '$' | '?' | '*' | '+' | '|' | '[' | '(' | '{' => break,
            '\\' => match chars.next() {
                Some(escaped) => stem.push(escaped),
                None => break,
            },
            c => stem.push(c),
        }
    }
    stem
}

/// Sorts like secilc and renders the file.
pub fn render(mut specs: Vec<FileCon>) -> String {
    specs.sort_by(compare);
    let mut out = String::new();
    for spec in &specs {
        out.push_str(&spec.regex);
        out.push('\t');
        if let Some(field) = spec.file_type.field() {
            out.push_str(field);
            out.push('\t');
        }
        out.push_str(spec.context.as_deref().unwrap_or("<<none>>"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(regex: &str) -> FileCon {
        FileCon {
            regex: regex.into(),
            file_type: FileConType::Any,
            context: Some("c".into()),
        }
    }

    #[test]
    fn deeper_paths_sort_later_so_they_win() {
        let text = render(vec![
            spec("/var/lib/etcd(/.*)?"),
            spec("/var(/.*)?"),
            spec("/var/log(/.*)?"),
        ]);
        assert_eq!(
            text,
            "/var(/.*)?\tc\n/var/log(/.*)?\tc\n/var/lib/etcd(/.*)?\tc\n"
        );
    }

    #[test]
    fn literal_stems_and_ties() {
        assert_eq!(literal_stem(r"/var/lib\.d(/.*)?"), "/var/lib.d");
        assert_eq!(literal_stem("/.*"), "/");
        assert!(ordered_by_strcmp_only(&spec("/a(/.*)?"), &spec("/b(/.*)?")));
        assert!(!ordered_by_strcmp_only(
            &spec("/a(/.*)?"),
            &spec("/ab(/.*)?")
        ));
    }

    #[test]
    fn escaped_characters_count_once() {
        let k = sort_key(r"/a\.b(/.*)?");
        assert_eq!((k.meta, k.stem_len, k.str_len), (true, 4, 10));
    }
}
