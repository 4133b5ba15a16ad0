#![doc = include_str!("../README.md")]
//!
//! ## How the engine answers
//!
//! file_contexts engine: loads libselinux-format specs and answers lookups
//! exactly like libselinux 3.4's `selabel_lookup` (file backend), without
//! libselinux.
//!
//! Invariants:
//! - An answer from [`FileContexts::lookup`] is libselinux's answer for the
//!   same files, key and mode. Where exactness cannot be guaranteed (a regex
//!   construct PCRE2 and the `regex` engine read differently, a compiled
//!   `.bin` that disagrees with its text sibling, a substitution file whose
//!   reading depends on uninitialised memory) loading fails with the file and
//!   line instead of risking a different answer.
//! - A [`FileContexts`] is immutable after loading, `Send + Sync`; lookups
//!   never panic, never touch the filesystem, and do not allocate unless the
//!   key needs normalising (`//`, trailing `/`) or a substitution applies.
//!
//! The rules reproduced are described in `docs/file-contexts.md`; in short:
//! keys are normalised then substituted (`.subs` then `.subs_dist`); among
//! the specs whose stem (first path component) fits the key and whose type
//! fits the mode, the last one in libselinux's order wins, that order being
//! all regex specs then all "exact" specs, each in file order (base, then
//! `.homedirs`, then `.local`); a winner with context `<<none>>` means ENOENT.
//!
//! Compiled `.bin` siblings are read, not refused: libselinux prefers `X.bin`
//! over `X` when it is at least as new, and Debian ships them. Its spec text is
//! parsed (the precompiled PCRE2 code is ignored). libselinux silently falls
//! back to `X` when `X.bin` was built by another PCRE2 version, so when both
//! exist and say different things the answer would depend on that version:
//! we refuse to load rather than guess.
//!
//! Deliberate differences, all in the direction of refusing: libselinux
//! compiles regexes lazily, so a regex PCRE2 rejects only makes the lookups
//! that reach it fail, and valid PCRE-only constructs (lookaround,
//! backreferences, possessive quantifiers, POSIX classes, `{` literals, a `$`
//! followed by more pattern) work there; we refuse the file at load time,
//! naming the line and the construct. A text or compiled file that fails to
//! parse is refused even when libselinux would fall back to the sibling
//! (keeping the specs it parsed before the error). A key is a C string for
//! libselinux: bytes after a NUL are ignored here too; the empty key (EINVAL
//! there) has no label here.
//!
//! One difference cannot be refused at load time: PCRE2 backtracks and gives
//! up after 10,000,000 steps (or on its depth or heap limit), and libselinux
//! then ends the lookup with ENOENT, "no label", even where an earlier spec
//! matches. Whether that happens depends on the key as much as on the spec
//! (`/a/(.*)*t` on a 40-byte key; `/a/.*.*t` only from several thousand bytes),
//! so no spec can be singled out. Our automata have no such limit: the
//! answer is the one the specs give, in linear time. The tests confirm each
//! such case with PCRE2 itself (corpus case `pcre2_match_limit`).

mod dialect;
mod directory;
mod formats;
mod kind;
mod matcher;
pub mod path_chain;
mod spec_dfa;
mod subs;

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

pub use directory::{entry_key, Directory, EntryLabel};
use formats::ParsedSpec;
pub use kind::FileKind;
use matcher::{Matcher, PreparedSpec};

/// Where in a source a spec came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecLine {
    /// 1-based line of a text file.
    Line(u32),
    /// 1-based entry of a compiled `.bin` file.
    CompiledEntry(u32),
}

impl std::fmt::Display for SpecLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpecLine::Line(line) => write!(f, "{line}"),
            SpecLine::CompiledEntry(entry) => write!(f, "entry {entry}"),
        }
    }
}

/// What is wrong with one spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecProblem {
    #[error("only one field: a spec is `PATH [TYPE] CONTEXT`")]
    MissingFields,
    #[error("non-ASCII byte 0x{0:02X} (libselinux refuses the whole file)")]
    NonAscii(u8),
    #[error("invalid file type `{0}` (expected one of -- -d -l -b -c -p -s)")]
    InvalidFileType(String),
    #[error("regex `{regex}`: {reason}")]
    Regex { regex: String, reason: String },
}

/// Why a file_contexts could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {file}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// A bad spec: `FILE:LINE: what is wrong`.
    #[error("{file}:{line}: {problem}")]
    Spec {
        file: String,
        line: SpecLine,
        problem: SpecProblem,
    },
    #[error("{file}:{line}: {problem}")]
    Substitution {
        file: String,
        line: u32,
        problem: String,
    },
    #[error("{file}: {problem}")]
    Compiled { file: String, problem: String },
    /// `X.bin` is at least as new as `X` but says something else.
    #[error(
        "{compiled} is at least as new as {text} but holds different specs: libselinux reads \
         {compiled} when it was built with the same PCRE2 version (it says {regex_version}) and \
         {text} otherwise; rebuild it with `sefcontext_compile {text}` or delete it"
    )]
    StaleCompiled {
        text: String,
        compiled: String,
        regex_version: String,
    },
    /// More specs than the engine can number (a spec too large for it is a
    /// [`LoadError::Spec`]).
    #[error("{origin}: specs too large to compile: {problem}")]
    TooLarge { origin: String, problem: String },
}

/// A loaded file_contexts: answers lookups like libselinux 3.4.
#[derive(Debug)]
pub struct FileContexts {
    matcher: Matcher,
    /// Where each spec came from, in the matcher's order (cold: only
    /// [`FileContexts::winner`] reads it).
    origins: Vec<SpecOrigin>,
}

/// One spec as loaded, for explaining an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecOrigin {
    /// The file it was read from, as named when loading.
    pub file: String,
    pub line: SpecLine,
    /// The path-regex field as written.
    pub regex: String,
    /// `S_IFMT` bits of the type field, 0 when absent.
    pub mode: u32,
    /// The context field as written (`<<none>>` included).
    pub context: String,
}

/// File contexts read and parsed but not compiled: what
/// [`FileContexts`] is built from, and what a relabel's operand seal
/// covers (`relabel --skip-unchanged` checks seals without compiling, the
/// part of loading that costs).
#[derive(Debug)]
pub struct ParsedContexts {
    origin: String,
    specs: TaggedSpecs,
    local_subs: subs::Substitutions,
    dist_subs: subs::Substitutions,
}

impl ParsedContexts {
    /// FC plus FC.homedirs, FC.local, FC.subs, FC.subs_dist, as libselinux 3.4 loads them.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let dist_subs = read_substitutions(&with_suffix(path, ".subs_dist"))?;
        let local_subs = read_substitutions(&with_suffix(path, ".subs"))?;
        let mut specs = read_spec_source(path)?.ok_or_else(|| LoadError::Io {
            file: path.display().to_string(),
            source: std::io::ErrorKind::NotFound.into(),
        })?;
        for suffix in [".homedirs", ".local"] {
            if let Some(more) = read_spec_source(&with_suffix(path, suffix))? {
                specs.extend(more);
            }
        }
        Ok(Self {
            origin: path.display().to_string(),
            specs,
            local_subs,
            dist_subs,
        })
    }

    /// One file_contexts text (no siblings); `origin` names it in errors.
    pub fn from_text(origin: &str, text: &[u8]) -> Result<Self, LoadError> {
        let specs = formats::parse_text(origin, text)?;
        Ok(Self {
            origin: origin.to_owned(),
            specs: tagged(origin, specs),
            local_subs: Default::default(),
            dist_subs: Default::default(),
        })
    }

    /// A digest of everything that decides a lookup: every spec (path
    /// regex, type, context, in file order), the substitutions, and this
    /// build of semanifest (whose regex dialect the answers also depend
    /// on). Where the specs came from (text or `.bin`, file names, line
    /// numbers) is not part of it.
    pub fn digest(&self) -> [u8; 32] {
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(b"semanifest file contexts 1");
        field(env!("CARGO_PKG_VERSION").as_bytes());
        field(&(self.specs.len() as u64).to_le_bytes());
        for (_, spec) in &self.specs {
            field(&spec.regex);
            field(&spec.mode.to_le_bytes());
            field(spec.context.as_bytes());
        }
        for substitutions in [&self.local_subs, &self.dist_subs] {
            field(&(substitutions.entries().len() as u64).to_le_bytes());
            for entry in substitutions.entries() {
                field(&entry.alias);
                field(&entry.real);
            }
        }
        hasher.finalize().into()
    }

    /// Compiles the specs for lookups (the costly part of loading).
    pub fn compile(self) -> Result<FileContexts, LoadError> {
        FileContexts::build(&self.origin, self.specs, self.local_subs, self.dist_subs)
    }
}

impl FileContexts {
    /// FC plus FC.homedirs, FC.local, FC.subs, FC.subs_dist, as libselinux 3.4 loads them.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        ParsedContexts::load(path)?.compile()
    }

    /// One file_contexts text (no siblings); `origin` names it in errors.
    pub fn from_text(origin: &str, text: &[u8]) -> Result<Self, LoadError> {
        ParsedContexts::from_text(origin, text)?.compile()
    }

    /// libselinux's answer; None = ENOENT (no match, or `<<none>>`).
    ///
    /// `path` is the key as given to `selabel_lookup`: any bytes (up to a
    /// NUL), normalised as libselinux does (`//` runs, one trailing `/`),
    /// never resolved (`.`/`..` stay), relative keys allowed.
    pub fn lookup(&self, path: &[u8], kind: FileKind) -> Option<&str> {
        self.matcher.lookup(path, kind)
    }

    /// The key libselinux matches for `path` once the substitution files
    /// (`.subs`, then `.subs_dist`) have rewritten it (`/var/run/x` →
    /// `/run/x`); `None` when no substitution applies.
    pub fn substituted(&self, path: &[u8]) -> Option<Vec<u8>> {
        self.matcher.substituted(path)
    }

    /// The spec that decides [`Self::lookup`]'s answer (also when it is
    /// `<<none>>`); `None` when no spec matches.
    pub fn winner(&self, path: &[u8], kind: FileKind) -> Option<&SpecOrigin> {
        let index = self.matcher.winner(path, kind)?;
        self.origins.get(index as usize)
    }

    /// Lookups for the entries of the directory `key` (a key as for
    /// [`Self::lookup`]), sharing the work on the directory's key: the way a
    /// tree walk should look up. `directory(d).lookup(name, kind)` always
    /// equals `lookup(d/name, kind)`.
    pub fn directory(&self, key: &[u8]) -> Directory<'_> {
        Directory::new(&self.matcher, key)
    }

    /// Number of specs loaded (all files together).
    pub fn len(&self) -> usize {
        self.matcher.len()
    }

    pub fn is_empty(&self) -> bool {
        self.matcher.len() == 0
    }

    fn build(
        origin: &str,
        specs: Vec<(String, ParsedSpec)>,
        local_subs: subs::Substitutions,
        dist_subs: subs::Substitutions,
    ) -> Result<Self, LoadError> {
        // libselinux's sort_specs: regex specs keep their order, exact ones
        // move behind them, also in order. Later means higher priority.
        let (regex_specs, exact_specs): (Vec<_>, Vec<_>) =
            specs.into_iter().partition(|(_, spec)| spec.has_meta);
        let first_exact = regex_specs.len();
        let mut prepared = Vec::with_capacity(first_exact + exact_specs.len());
        let mut origins = Vec::with_capacity(first_exact + exact_specs.len());
        for (file, spec) in regex_specs.into_iter().chain(exact_specs) {
            origins.push(SpecOrigin {
                file: file.clone(),
                line: spec.line,
                regex: String::from_utf8_lossy(&spec.regex).into_owned(),
                mode: spec.mode,
                context: spec.context.clone(),
            });
            let translation = dialect::translate(&spec.regex).map_err(|error| LoadError::Spec {
                file,
                line: spec.line,
                problem: SpecProblem::Regex {
                    regex: String::from_utf8_lossy(&spec.regex).into_owned(),
                    reason: error.problem,
                },
            })?;
            prepared.push(PreparedSpec {
                mode: spec.mode,
                context: spec.context,
                stem: spec.stem,
                translation,
            });
        }
        let matcher =
            Matcher::build(prepared, first_exact, local_subs, dist_subs).map_err(|error| {
                match error.spec.and_then(|index| origins.get(index as usize)) {
                    Some(spec) => LoadError::Spec {
                        file: spec.file.clone(),
                        line: spec.line,
                        problem: SpecProblem::Regex {
                            regex: spec.regex.clone(),
                            reason: error.problem,
                        },
                    },
                    None => LoadError::TooLarge {
                        origin: origin.to_owned(),
                        problem: error.problem,
                    },
                }
            })?;
        Ok(Self { matcher, origins })
    }
}

fn tagged(file: &str, specs: Vec<ParsedSpec>) -> TaggedSpecs {
    specs
        .into_iter()
        .map(|spec| (file.to_owned(), spec))
        .collect()
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

fn io_error(path: &Path, source: std::io::Error) -> LoadError {
    LoadError::Io {
        file: path.display().to_string(),
        source,
    }
}

/// `selabel_subs_init`: a missing file means no substitutions.
fn read_substitutions(path: &Path) -> Result<subs::Substitutions, LoadError> {
    match std::fs::read(path) {
        Ok(text) => Ok(subs::Substitutions::new(subs::parse(
            &path.display().to_string(),
            &text,
        )?)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Default::default()),
        // fopen() succeeds on a directory and fgets() then reads nothing.
        Err(error) if error.kind() == std::io::ErrorKind::IsADirectory => Ok(Default::default()),
        Err(error) => Err(io_error(path, error)),
    }
}

/// Modification time in whole seconds, as libselinux's `st_mtime` compare.
fn mtime_seconds(path: &Path) -> Result<Option<i64>, LoadError> {
    match std::fs::metadata(path) {
        Ok(metadata) => Ok(Some(metadata.mtime())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_error(path, error)),
    }
}

/// Reads one spec file (`X` or `X.bin`, as libselinux's `open_file` picks)
/// by content: a file starting with the compiled magic is compiled, whatever
/// its name. `None` when neither exists.
fn read_spec_source(text_path: &Path) -> Result<Option<TaggedSpecs>, LoadError> {
    let compiled_path = with_suffix(text_path, ".bin");
    let text_time = mtime_seconds(text_path)?;
    let compiled_time = mtime_seconds(&compiled_path)?;
    let preferred = match (text_time, compiled_time) {
        (None, None) => return Ok(None),
        (Some(_), None) => text_path,
        (None, Some(_)) => &compiled_path,
        // Ties go to the `.bin`.
        (Some(text), Some(compiled)) if compiled >= text => &compiled_path,
        (Some(_), Some(_)) => text_path,
    };
    let (specs, regex_version) = read_any(preferred)?;
    if preferred == compiled_path && text_time.is_some() {
        // libselinux may read either one (see the module documentation).
        let (text_specs, _) = read_any(text_path)?;
        if !same_specs(&specs, &text_specs) {
            return Err(LoadError::StaleCompiled {
                text: text_path.display().to_string(),
                compiled: compiled_path.display().to_string(),
                regex_version: regex_version.unwrap_or_else(|| "nothing".to_owned()),
            });
        }
    }
    Ok(Some(specs))
}

/// Specs of one source, each tagged with the file it came from.
type TaggedSpecs = Vec<(String, ParsedSpec)>;

/// Reads one file by content; also returns the PCRE2 version a compiled file
/// names.
fn read_any(path: &Path) -> Result<(TaggedSpecs, Option<String>), LoadError> {
    let bytes = std::fs::read(path).map_err(|error| io_error(path, error))?;
    let name = path.display().to_string();
    if formats::is_compiled(&bytes) {
        let compiled = formats::parse_compiled(&name, &bytes)?;
        Ok((tagged(&name, compiled.specs), compiled.regex_version))
    } else {
        Ok((tagged(&name, formats::parse_text(&name, &bytes)?), None))
    }
}

/// Whether two readings of one source behave identically once sorted.
fn same_specs(left: &[(String, ParsedSpec)], right: &[(String, ParsedSpec)]) -> bool {
    type Behaviour<'a> = (&'a [u8], u32, &'a str, bool, Option<&'a [u8]>);
    fn key(spec: &ParsedSpec) -> Behaviour<'_> {
        (
            spec.regex.as_slice(),
            spec.mode,
            spec.context.as_str(),
            spec.has_meta,
            spec.stem.as_deref(),
        )
    }
    fn sorted(specs: &[(String, ParsedSpec)]) -> Vec<Behaviour<'_>> {
        let regex = specs
            .iter()
            .filter(|(_, spec)| spec.has_meta)
            .map(|(_, spec)| key(spec));
        let exact = specs
            .iter()
            .filter(|(_, spec)| !spec.has_meta)
            .map(|(_, spec)| key(spec));
        regex.chain(exact).collect()
    }
    sorted(left) == sorted(right)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fc(text: &str) -> FileContexts {
        FileContexts::from_text("test", text.as_bytes()).expect("loads")
    }

    #[test]
    fn exact_beats_regex_and_last_match_wins() {
        let contexts = fc("/a a_exact\n/a(/.*)? a_regex\n/a(/.*)? a_regex_later\n");
        assert_eq!(contexts.lookup(b"/a", FileKind::Any), Some("a_exact"));
        assert_eq!(
            contexts.lookup(b"/a/b", FileKind::Any),
            Some("a_regex_later")
        );
    }

    #[test]
    fn typed_specs_and_none() {
        let contexts = fc("/a(/.*)? all\n/a/d -d dir\n/a/n <<none>>\n");
        assert_eq!(contexts.lookup(b"/a/d", FileKind::Dir), Some("dir"));
        assert_eq!(contexts.lookup(b"/a/d", FileKind::File), Some("all"));
        assert_eq!(contexts.lookup(b"/a/d", FileKind::Any), Some("dir"));
        assert_eq!(contexts.lookup(b"/a/n", FileKind::Any), None);
        assert_eq!(contexts.lookup(b"", FileKind::Any), None);
    }

    #[test]
    fn a_label_is_the_same_for_every_kind_only_when_no_typed_spec_wins() {
        let contexts = fc(
            "/a(/.*)? all\n/a/d -d dir\n/a/f -- file\n/a/n <<none>>\n/a/u.* -l link\n/a/u/x low\n",
        );
        let a = contexts.directory(b"/a");
        let every = |context| EntryLabel {
            context,
            every_kind: true,
        };
        assert_eq!(
            a.lookup_with_scope(b"plain", FileKind::File),
            every(Some("all"))
        );
        assert_eq!(a.lookup_with_scope(b"n", FileKind::Fifo), every(None));
        // A typed spec that matches decides by kind, whichever kind asks.
        for (name, kind, context) in [
            (&b"d"[..], FileKind::Dir, "dir"),
            (b"d", FileKind::File, "all"),
            (b"f", FileKind::Symlink, "all"),
            (b"u", FileKind::Symlink, "link"),
        ] {
            let label = a.lookup_with_scope(name, kind);
            assert_eq!(label.context, Some(context), "{name:?} {kind:?}");
            assert!(!label.every_kind, "{name:?}");
        }
        // An untyped spec of higher priority than the typed one wins for all.
        let u = contexts.directory(b"/a/u");
        assert_eq!(
            u.lookup_with_scope(b"x", FileKind::File),
            every(Some("low"))
        );
        assert_eq!(
            contexts
                .directory(b"/b")
                .lookup_with_scope(b"x", FileKind::Dir),
            every(None)
        );
    }

    #[test]
    fn stem_filter_is_semantic() {
        let contexts = fc("/var/a|/opt/x t\n");
        assert_eq!(contexts.lookup(b"/var/a/z", FileKind::Any), Some("t"));
        assert_eq!(contexts.lookup(b"/opt/x", FileKind::Any), None);
    }

    #[test]
    fn is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<FileContexts>();
    }
}
