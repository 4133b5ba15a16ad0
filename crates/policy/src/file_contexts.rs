//! The `file_contexts` text of a policy, written without running secilc.
//!
//! secilc writes `filecon` statements sorted by libsepol's
//! `cil_post_filecon_compare` (regex specs before exact ones, then shorter
//! literal stem, then shorter length, then file type, then byte order), one
//! `PATH<TAB>[TYPE<TAB>]CONTEXT` line each. Reproducing that order here lets
//! `lookup`/`relabel --layout` work from a manifest alone; the tests compare
//! these bytes with secilc's own output.

use std::cmp::Ordering;

use selabel::FileKind;

/// One `filecon`: a regex, the kind of file it is for and a context
/// (`None` is `<<none>>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCon {
    pub regex: String,
    pub file_type: FileKind,
    pub context: Option<String>,
}

/// The file types of a CIL `filecon`, in libsepol's enum order (secilc
/// sorts specs of equal length by it), each with the kind it selects.
const CIL_FILE_TYPES: [(&str, FileKind); 8] = [
    ("file", FileKind::File),
    ("dir", FileKind::Dir),
    ("char", FileKind::CharDev),
    ("block", FileKind::BlockDev),
    ("socket", FileKind::Socket),
    ("pipe", FileKind::Fifo),
    ("symlink", FileKind::Symlink),
    ("any", FileKind::Any),
];

/// Where `kind` stands in libsepol's order of file types.
fn libsepol_rank(kind: FileKind) -> usize {
    CIL_FILE_TYPES
        .iter()
        .position(|&(_, k)| k == kind)
        .unwrap_or(CIL_FILE_TYPES.len())
}

/// The CIL keyword of a file kind (`dir`, `any`, …).
pub fn cil_keyword(kind: FileKind) -> &'static str {
    CIL_FILE_TYPES
        .iter()
        .find(|&&(_, k)| k == kind)
        .map_or("any", |&(word, _)| word)
}

/// The file kind a CIL keyword names.
pub fn from_cil_keyword(word: &str) -> Option<FileKind> {
    CIL_FILE_TYPES
        .iter()
        .find(|&&(w, _)| w == word)
        .map(|&(_, kind)| kind)
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
        .then(libsepol_rank(a.file_type).cmp(&libsepol_rank(b.file_type)))
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
        if let Some(field) = spec.file_type.type_field() {
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
            file_type: FileKind::Any,
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
    fn cil_keywords_cover_every_kind_once() {
        for kind in FileKind::ALL {
            assert_eq!(from_cil_keyword(cil_keyword(kind)), Some(kind));
        }
        assert_eq!(libsepol_rank(FileKind::File), 0);
        assert_eq!(libsepol_rank(FileKind::Any), 7);
        assert_eq!(from_cil_keyword("fifo"), None);
    }

    #[test]
    fn escaped_characters_count_once() {
        let k = sort_key(r"/a\.b(/.*)?");
        assert_eq!((k.meta, k.stem_len, k.str_len), (true, 4, 10));
    }
}
