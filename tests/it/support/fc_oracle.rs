//! Differential oracle: the real libselinux 3.4 (`selabel_open` +
//! `selabel_lookup_raw` through the `selinux` crate) against
//! `selabel::FileContexts`, on the same files and keys.
//!
//! Use from any test module:
//!
//! ```ignore
//! use crate::support::fc_oracle;
//! fc_oracle::assert_agrees_with_libselinux(&fc_path, &paths);
//! ```
//!
//! Lookups are spread over all cores, one libselinux handle per thread (a
//! handle is not shareable). libselinux costs ~80 µs per lookup on Debian's
//! policy: budget ~10 minutes of CPU per million paths × 8 modes.

use std::ffi::{c_int, c_void, CString};
use std::path::Path;

use selabel::{entry_key, Directory, FileContexts, FileKind};
use selinux::label::{back_end, Labeler};

/// `SELABEL_OPT_PATH` from `<selinux/label.h>`.
const SELABEL_OPT_PATH: c_int = 3;

/// One libselinux file-contexts handle (not `Send`: open one per thread).
pub struct LibSelinux {
    labeler: Labeler<back_end::File>,
}

/// What libselinux answered for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Label(String),
    /// ENOENT: no spec, or `<<none>>`.
    NoLabel,
    /// Any other failure, with its errno (EINVAL for an empty key, or a
    /// regex that PCRE2 refuses).
    Error(Option<i32>),
}

impl LibSelinux {
    /// `selabel_open(SELABEL_CTX_FILE, {SELABEL_OPT_PATH: fc})`: loads FC and
    /// its siblings exactly as our loader should.
    pub fn open(fc: &Path) -> Result<Self, String> {
        let path = CString::new(fc.as_os_str().as_encoded_bytes())
            .map_err(|_| "path with NUL".to_owned())?;
        let options = [(SELABEL_OPT_PATH, path.as_ptr().cast::<c_void>())];
        Labeler::new(&options, true)
            .map(|labeler| Self { labeler })
            .map_err(|error| {
                format!(
                    "selabel_open({}): {error}: {:?}",
                    fc.display(),
                    error_errno(&error)
                )
            })
    }

    pub fn lookup(&self, key: &[u8], kind: FileKind) -> Answer {
        let Ok(key) = CString::new(key) else {
            return Answer::Error(None);
        };
        // Modes fit in an int (at most 0o170000).
        let mode = kind.selabel_mode() as c_int;
        match self.labeler.look_up(&key, mode) {
            Ok(context) => Answer::Label(String::from_utf8_lossy(context.as_bytes()).into_owned()),
            Err(error) => match error_errno(&error) {
                Some(errno) if errno == ENOENT => Answer::NoLabel,
                errno => Answer::Error(errno),
            },
        }
    }
}

const ENOENT: i32 = 2;
pub const EINVAL: i32 = 22;

fn error_errno(error: &selinux::errors::Error) -> Option<i32> {
    match error {
        selinux::errors::Error::IO { source, .. } => source.raw_os_error(),
        _ => None,
    }
}

/// Our answer in the same shape, for comparison.
pub fn our_answer(contexts: &FileContexts, key: &[u8], kind: FileKind) -> Answer {
    match contexts.lookup(key, kind) {
        Some(context) => Answer::Label(context.to_owned()),
        None => Answer::NoLabel,
    }
}

/// Whether two answers agree. libselinux refuses an empty key with EINVAL;
/// ours answers "no label" for it, which callers treat alike.
pub fn agree(ours: &Answer, theirs: &Answer, key: &[u8]) -> bool {
    ours == theirs
        || (key.is_empty() && *ours == Answer::NoLabel && *theirs == Answer::Error(Some(EINVAL)))
}

/// One disagreement.
#[derive(Debug, Clone)]
pub struct Mismatch {
    pub key: Vec<u8>,
    pub kind: FileKind,
    pub ours: Answer,
    pub libselinux: Answer,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({:?}): ours {:?}, libselinux {:?}",
            escape(&self.key),
            self.kind,
            self.ours,
            self.libselinux
        )
    }
}

/// Shows any key readably (non-printable bytes as `\xHH`), truncated.
pub fn escape(key: &[u8]) -> String {
    let mut shown: String = key
        .iter()
        .take(200)
        .flat_map(|&byte| std::ascii::escape_default(byte))
        .map(char::from)
        .collect();
    if key.len() > 200 {
        shown.push_str(&format!("...({} bytes)", key.len()));
    }
    shown
}

/// Compares ours and libselinux on every key for every kind in `kinds`, in
/// parallel; returns the number of comparisons and up to `keep` mismatches
/// (plus the total count of mismatches).
pub fn compare(
    fc: &Path,
    contexts: &FileContexts,
    keys: &[Vec<u8>],
    kinds: &[FileKind],
    keep: usize,
) -> (usize, usize, Vec<Mismatch>) {
    compare_with(fc, contexts, keys, &|_| kinds, keep)
}

/// Like [`compare`], but each key is looked up in one mode only: key `i` of
/// `keys` in `FileKind::ALL[(first + i) % 8]`, so every mode gets an equal
/// share of the keys at an eighth of the cost.
pub fn compare_rotating(
    fc: &Path,
    contexts: &FileContexts,
    keys: &[Vec<u8>],
    first: usize,
    keep: usize,
) -> (usize, usize, Vec<Mismatch>) {
    let modes = &FileKind::ALL;
    compare_with(
        fc,
        contexts,
        keys,
        &|i| std::slice::from_ref(&modes[(first + i) % modes.len()]),
        keep,
    )
}

fn compare_with<'k>(
    fc: &Path,
    contexts: &FileContexts,
    keys: &[Vec<u8>],
    kinds_of: &(dyn Fn(usize) -> &'k [FileKind] + Sync),
    keep: usize,
) -> (usize, usize, Vec<Mismatch>) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = keys.len().div_ceil(threads).max(1);
    let results: Vec<(usize, usize, Vec<Mismatch>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = keys
            .chunks(chunk)
            .enumerate()
            .map(|(part_index, part)| {
                scope.spawn(move || {
                    let oracle = LibSelinux::open(fc).expect("libselinux loads the file");
                    let mut compared = 0;
                    let mut mismatched = 0;
                    let mut kept = Vec::new();
                    for (offset, key) in part.iter().enumerate() {
                        for &kind in kinds_of(part_index * chunk + offset) {
                            let theirs = oracle.lookup(key, kind);
                            let ours = our_answer(contexts, key, kind);
                            compared += 1;
                            if !agree(&ours, &theirs, key) {
                                mismatched += 1;
                                if kept.len() < keep {
                                    kept.push(Mismatch {
                                        key: key.clone(),
                                        kind,
                                        ours,
                                        libselinux: theirs,
                                    });
                                }
                            }
                        }
                    }
                    (compared, mismatched, kept)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("oracle thread"))
            .collect()
    });
    let mut compared = 0;
    let mut mismatched = 0;
    let mut kept = Vec::new();
    for (count, bad, mut list) in results {
        compared += count;
        mismatched += bad;
        kept.append(&mut list);
    }
    kept.truncate(keep);
    (compared, mismatched, kept)
}

/// Loads `fc` with both engines and asserts they answer every key alike for
/// every file kind (mode 0 and the seven types). Panics with the first
/// mismatches otherwise. Meant for every file_contexts the compiler emits.
pub fn assert_agrees_with_libselinux(fc: &Path, keys: &[Vec<u8>]) {
    let contexts = FileContexts::load(fc)
        .unwrap_or_else(|error| panic!("semanifest cannot load {}: {error}", fc.display()));
    // Fail early and clearly if libselinux itself refuses the file.
    LibSelinux::open(fc).unwrap_or_else(|error| panic!("{error}"));
    let (compared, mismatched, examples) = compare(fc, &contexts, keys, &FileKind::ALL, 20);
    assert!(compared > 0, "nothing compared");
    assert_directory_lookups_agree(&contexts, keys, &fc.display().to_string());
    if mismatched > 0 {
        let listing: Vec<String> = examples.iter().map(ToString::to_string).collect();
        panic!(
            "{mismatched} of {compared} lookups differ from libselinux on {}:\n{}",
            fc.display(),
            listing.join("\n")
        );
    }
}

/// The hook for every file_contexts the compiler emits: keys derived from
/// the file's own specs (and its `.homedirs`/`.local` siblings) plus generic
/// hostile ones, all compared with libselinux for every file kind.
///
/// ```ignore
/// fc_oracle::assert_file_agrees_with_libselinux(&out_dir.join("file_contexts"));
/// ```
pub fn assert_file_agrees_with_libselinux(fc: &Path) {
    let mut text = String::new();
    for suffix in ["", ".homedirs", ".local"] {
        let mut name = fc.as_os_str().to_owned();
        name.push(suffix);
        if let Ok(part) = std::fs::read(&name) {
            text.push_str(&String::from_utf8_lossy(&part));
            text.push('\n');
        }
    }
    let mut keys = keys_for(&text);
    for generic in [
        &b"/"[..],
        b"//",
        b"/var",
        b"/var/",
        b"/var/lib/x",
        b"relative",
        b"/\xff/\n",
        b"/var/log/\n",
        b"/var/./log",
        b"/var/../etc",
        b"/tmp/x y",
    ] {
        keys.push(generic.to_vec());
    }
    assert_agrees_with_libselinux(fc, &keys);
}

/// Keys worth trying on any file_contexts: each spec's literal prefix, a
/// child under it, and the hostile variants of those (`//`, trailing `/`,
/// trailing newline, `.`/`..`). Cheap way for a golden test to cover every
/// spec of a generated file.
pub fn keys_for(fc_text: &str) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for line in fc_text.lines() {
        let Some(spec) = line.split_whitespace().next() else {
            continue;
        };
        if spec.starts_with('#') {
            continue;
        }
        let prefix: String = spec
            .chars()
            .take_while(|c| !".^$?*+|[({\\".contains(*c))
            .collect();
        let prefix = prefix.trim_end_matches('/').to_owned();
        let base = if prefix.is_empty() {
            "/".to_owned()
        } else {
            prefix
        };
        for variant in [
            base.clone(),
            format!("{base}/"),
            format!("{base}//x"),
            format!("{base}/x"),
            format!("{base}/x/y.z"),
            format!("{base}\n"),
            format!("{base}/./x"),
            format!("{base}/../x"),
            format!("{base}x"),
        ] {
            keys.push(variant.into_bytes());
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

/// Checks [`FileContexts::directory`] against plain lookups the way a tree
/// walk uses it: the keys' components form a tree, each directory is reached
/// from `/` by `subdirectory` (and also built directly from its key), and
/// every entry is looked up in every mode both ways. Returns the number of
/// comparisons and up to `keep` mismatches, described.
pub fn directory_mismatches(
    contexts: &FileContexts,
    keys: &[Vec<u8>],
    keep: usize,
) -> (usize, usize, Vec<String>) {
    directory_mismatches_against(contexts, contexts, keys, keep)
}

/// [`directory_mismatches`] with the plain lookups asked of `reference`
/// (the same file but for the control that shows the check can fail).
pub fn directory_mismatches_against(
    contexts: &FileContexts,
    reference: &FileContexts,
    keys: &[Vec<u8>],
    keep: usize,
) -> (usize, usize, Vec<String>) {
    let (mut compared, mut mismatched, mut kept) = (0, 0, Vec::new());
    // `directory(key)` built directly, for the entries of one directory.
    let mut scratch: Option<(Vec<u8>, Directory<'_>)> = None;
    KeyTree::of(keys).walk(&contexts.directory(b"/"), b"/", &mut |directory, key, name, full| {
        if scratch.as_ref().is_none_or(|(seen, _)| seen != key) {
            scratch = Some((key.to_vec(), contexts.directory(key)));
        }
        let direct = scratch.as_ref().map(|(_, direct)| direct).expect("set above");
        for kind in FileKind::ALL {
            let expected = reference.lookup(full, kind);
            for (how, got) in [
                ("subdirectory chain", directory.lookup(name, kind)),
                ("directory(key)", direct.lookup(name, kind)),
            ] {
                compared += 1;
                if got != expected {
                    mismatched += 1;
                    if kept.len() < keep {
                        kept.push(format!(
                            "{} {kind:?} via {how}: directory says {got:?}, lookup says {expected:?}",
                            escape(full)
                        ));
                    }
                }
            }
        }
    });
    (compared, mismatched, kept)
}

/// Absolute keys as a tree of components, walked the way the relabeler
/// walks a filesystem: from `/`, one `subdirectory` per level.
#[derive(Default)]
pub struct KeyTree {
    children: std::collections::BTreeMap<Vec<u8>, KeyTree>,
}

impl KeyTree {
    /// The tree of every absolute key in `keys` (relative ones are left out).
    pub fn of(keys: &[Vec<u8>]) -> KeyTree {
        let mut root = KeyTree::default();
        for key in keys.iter().filter(|key| key.starts_with(b"/")) {
            let mut node = &mut root;
            for name in key
                .split(|&byte| byte == b'/')
                .filter(|name| !name.is_empty())
            {
                node = node.children.entry(name.to_vec()).or_default();
            }
        }
        root
    }

    /// Calls `visit(directory, directory key, entry name, entry key)` for
    /// every entry below `key`; a directory's entries come before its
    /// subdirectories' ones.
    pub fn walk<'c>(
        &self,
        directory: &Directory<'c>,
        key: &[u8],
        visit: &mut impl FnMut(&Directory<'c>, &[u8], &[u8], &[u8]),
    ) {
        for name in self.children.keys() {
            visit(directory, key, name, &entry_key(key, name));
        }
        for (name, child) in self
            .children
            .iter()
            .filter(|(_, child)| !child.children.is_empty())
        {
            child.walk(&directory.subdirectory(name), &entry_key(key, name), visit);
        }
    }
}

/// Panics unless [`directory_mismatches`] finds none.
pub fn assert_directory_lookups_agree(contexts: &FileContexts, keys: &[Vec<u8>], origin: &str) {
    let (compared, mismatched, examples) = directory_mismatches(contexts, keys, 20);
    assert!(
        compared > 0 || keys.iter().all(|key| !key.starts_with(b"/")),
        "nothing compared"
    );
    if mismatched > 0 {
        panic!(
            "{mismatched} of {compared} directory lookups differ from plain lookups on {origin}:\n{}",
            examples.join("\n")
        );
    }
}

/// PCRE2 itself, each spec compiled the way libselinux 3.4 compiles it
/// (`^SPEC$`, `PCRE2_DOTALL` only, no JIT, default match context), to tell
/// one known divergence from the rest.
///
/// PCRE2 backtracks, and gives up after 10,000,000 steps
/// (`PCRE2_ERROR_MATCHLIMIT`) or on its depth or heap limit. libselinux
/// then stops the lookup and answers ENOENT, "no label", whatever the specs
/// say; semanifest's automata have no such limit and answer what the regex
/// means. A spec such as `/a/(.*)*t`, or `/a/.*.*t` on a key of several
/// thousand bytes, is enough (corpus case `pcre2_match_limit`).
pub struct Pcre2Specs {
    /// Each spec's type bits (0 = any) and its regex; `None` when PCRE2
    /// refuses it (libselinux would fail the lookups that reach it; our
    /// loader refuses the file, so such files are never compared).
    specs: Vec<(u32, Option<pcre2::bytes::Regex>)>,
}

impl Pcre2Specs {
    /// The specs of `fc` and its `.homedirs` and `.local` siblings (text
    /// files; order does not matter here).
    pub fn read(fc: &Path) -> Self {
        let mut specs = Vec::new();
        for suffix in ["", ".homedirs", ".local"] {
            let mut name = fc.as_os_str().to_owned();
            name.push(suffix);
            if let Ok(text) = std::fs::read(&name) {
                specs.extend(Self::parse(&text));
            }
        }
        Self { specs }
    }

    fn parse(text: &[u8]) -> Vec<(u32, Option<pcre2::bytes::Regex>)> {
        let mut specs = Vec::new();
        for line in text.split(|&byte| byte == b'\n') {
            let fields: Vec<&[u8]> = line
                .split(|byte| byte.is_ascii_whitespace())
                .filter(|field| !field.is_empty())
                .collect();
            let (regex, mode) = match fields.as_slice() {
                [] | [_] => continue,
                [first, ..] if first.starts_with(b"#") => continue,
                [regex, _context] => (regex, 0),
                [regex, kind, ..] => (regex, type_bits(kind)),
            };
            // libselinux refuses non-ASCII specs, so a spec is valid UTF-8.
            let Ok(regex) = std::str::from_utf8(regex) else {
                continue;
            };
            let compiled = pcre2::bytes::RegexBuilder::new()
                .dotall(true)
                .build(&format!("^{regex}$"))
                .ok();
            specs.push((mode, compiled));
        }
        specs
    }

    /// The PCRE2 error (its negative code) of the first spec whose type
    /// fits `kind` and on which PCRE2 gives up for `key`, as given or as
    /// libselinux normalises it (`//` runs collapsed, one trailing `/`
    /// removed). Substitutions are not applied.
    pub fn gives_up(&self, key: &[u8], kind: FileKind) -> Option<i32> {
        let normalised = normalise(key);
        let mode = kind.selabel_mode();
        self.specs
            .iter()
            .filter(|(spec_mode, _)| mode == 0 || *spec_mode == 0 || *spec_mode == mode)
            .filter_map(|(_, regex)| regex.as_ref())
            .find_map(|regex| {
                [key, normalised.as_slice()]
                    .into_iter()
                    .find_map(|key| regex.is_match(key).err().map(|error| error.code()))
            })
    }

    /// Whether `ours` and `theirs` agree, or differ only because PCRE2 gave
    /// up: libselinux answered "no label" and PCRE2 fails on `key`.
    pub fn agree(&self, ours: &Answer, theirs: &Answer, key: &[u8], kind: FileKind) -> bool {
        agree(ours, theirs, key)
            || (*theirs == Answer::NoLabel && self.gives_up(key, kind).is_some())
    }
}

/// `PCRE2_ERROR_MATCHLIMIT`: what PCRE2 says when it gives up backtracking.
pub const PCRE2_ERROR_MATCHLIMIT: i32 = -47;

/// The `S_IFMT` bits of a type field (`--`, `-d`, ...); 0 for anything
/// else (libselinux refuses such files, and so do we).
fn type_bits(field: &[u8]) -> u32 {
    match field {
        b"--" => 0o100000,
        b"-d" => 0o040000,
        b"-c" => 0o020000,
        b"-b" => 0o060000,
        b"-s" => 0o140000,
        b"-l" => 0o120000,
        b"-p" => 0o010000,
        _ => 0,
    }
}

/// libselinux's key normalisation: runs of `/` collapsed, then one trailing
/// `/` removed (not from `/` itself).
fn normalise(key: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(key.len());
    for &byte in key {
        if byte == b'/' && out.last() == Some(&b'/') {
            continue;
        }
        out.push(byte);
    }
    if out.len() > 1 && out.last() == Some(&b'/') {
        out.pop();
    }
    out
}
