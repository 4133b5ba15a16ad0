//! The compiled lookup structure: specs in libselinux's final order, one
//! multi-pattern automaton per stem plus one for stem-less specs.
//!
//! Invariants:
//! - `specs[i]` beats `specs[j]` when `i > j` (libselinux scans backwards and
//!   takes the first match): regex specs first in file order, then exact ones.
//! - A key is only run against its own stem's automaton and the stem-less
//!   one, and never allocates unless it needs normalising or substituting.
//! - Never panics on any key.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use regex_automata::meta::Regex;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet};

use super::subs::{self, Substitution};
use super::FileKind;

/// Context value meaning "do not label" (lookup answers ENOENT).
const NO_LABEL: &str = "<<none>>";

#[derive(Debug)]
pub(crate) struct CompiledSpec {
    pub mode: u32,
    pub context: Box<str>,
}

/// Specs sharing a stem (or having none), in increasing priority.
#[derive(Debug)]
pub(crate) struct Group {
    automaton: Regex,
    /// Pattern index → index into `Matcher::specs`, increasing.
    spec_index: Vec<u32>,
}

#[derive(Debug)]
pub(crate) struct Matcher {
    pub specs: Vec<CompiledSpec>,
    stems: HashMap<Vec<u8>, Group>,
    stemless: Option<Group>,
    local_subs: Vec<Substitution>,
    dist_subs: Vec<Substitution>,
    largest_group: usize,
}

/// Why the automaton could not be built (only size limits in practice: every
/// pattern was produced by our own translator).
#[derive(Debug)]
pub(crate) struct BuildError(pub String);

pub(crate) fn build_group(patterns: &[String], spec_index: Vec<u32>) -> Result<Group, BuildError> {
    let automaton = Regex::builder()
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .configure(
            Regex::config()
                .match_kind(MatchKind::All)
                .utf8_empty(false)
                .which_captures(regex_automata::nfa::thompson::WhichCaptures::None)
                .nfa_size_limit(Some(256 << 20)),
        )
        .build_many(patterns)
        .map_err(|error| BuildError(error.to_string()))?;
    Ok(Group {
        automaton,
        spec_index,
    })
}

thread_local! {
    /// Reused across lookups so the hot path does not allocate.
    static MATCHED: RefCell<PatternSet> = RefCell::new(PatternSet::new(0));
}

impl Matcher {
    pub(crate) fn new(
        specs: Vec<CompiledSpec>,
        stems: HashMap<Vec<u8>, Group>,
        stemless: Option<Group>,
        local_subs: Vec<Substitution>,
        dist_subs: Vec<Substitution>,
    ) -> Self {
        let largest_group = stems
            .values()
            .chain(stemless.iter())
            .map(|group| group.spec_index.len())
            .max()
            .unwrap_or(0);
        Self {
            specs,
            stems,
            stemless,
            local_subs,
            dist_subs,
            largest_group,
        }
    }

    /// Index of the winning spec, before `<<none>>` is interpreted.
    pub(crate) fn winner(&self, path: &[u8], kind: FileKind) -> Option<usize> {
        // The key is a C string for libselinux.
        let path = match path.iter().position(|&byte| byte == 0) {
            Some(nul) => &path[..nul],
            None => path,
        };
        if path.is_empty() || self.specs.is_empty() {
            return None;
        }
        let key = normalise(path);
        let substituted = self.substitute(&key);
        let key: &[u8] = substituted.as_deref().unwrap_or(&key);
        let mode = kind.selabel_mode();

        let stem_group = stem_of_key(key).and_then(|stem| self.stems.get(stem));
        MATCHED.with(|cell| {
            let mut matched = cell.borrow_mut();
            if matched.capacity() < self.largest_group {
                *matched = PatternSet::new(self.largest_group);
            }
            let mut best: Option<u32> = None;
            for group in stem_group.into_iter().chain(self.stemless.iter()) {
                matched.clear();
                group
                    .automaton
                    .which_overlapping_matches(&Input::new(key), &mut matched);
                let found = matched
                    .iter()
                    .rev()
                    .map(|pattern| group.spec_index[pattern.as_usize()])
                    .find(|&index| {
                        let spec_mode = self.specs[index as usize].mode;
                        mode == 0 || spec_mode == 0 || spec_mode == mode
                    });
                best = best.max(found);
            }
            best.map(|index| index as usize)
        })
    }

    pub(crate) fn lookup(&self, path: &[u8], kind: FileKind) -> Option<&str> {
        let spec = &self.specs[self.winner(path, kind)?];
        (&*spec.context != NO_LABEL).then_some(&*spec.context)
    }

    /// `selabel_sub_key`: at most one local substitution, then at most one
    /// distribution substitution of the result.
    fn substitute(&self, key: &[u8]) -> Option<Vec<u8>> {
        if self.local_subs.is_empty() && self.dist_subs.is_empty() {
            return None;
        }
        match subs::apply(&self.local_subs, key) {
            Some(local) => Some(subs::apply(&self.dist_subs, &local).unwrap_or(local)),
            None => subs::apply(&self.dist_subs, key),
        }
    }
}

/// libselinux's key clean-up: runs of `/` collapse to one, then one trailing
/// `/` is dropped (not from `/` itself). No `.`/`..` resolution.
fn normalise(path: &[u8]) -> Cow<'_, [u8]> {
    let has_double_slash = path.windows(2).any(|pair| pair == b"//");
    let has_trailing_slash = path.len() > 1 && path.last() == Some(&b'/');
    if !has_double_slash && !has_trailing_slash {
        return Cow::Borrowed(path);
    }
    let mut clean = Vec::with_capacity(path.len());
    for &byte in path {
        if byte == b'/' && clean.last() == Some(&b'/') {
            continue;
        }
        clean.push(byte);
    }
    if clean.len() > 1 && clean.last() == Some(&b'/') {
        clean.pop();
    }
    Cow::Owned(clean)
}

/// `get_stem_from_file_name`: the text before the second `/` (searched from
/// the second byte on), if there is one.
fn stem_of_key(key: &[u8]) -> Option<&[u8]> {
    let slash = key.get(1..)?.iter().position(|&byte| byte == b'/')? + 1;
    Some(&key[..slash])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation() {
        assert_eq!(&*normalise(b"/a//b///c/"), b"/a/b/c");
        assert_eq!(&*normalise(b"//"), b"/");
        assert_eq!(&*normalise(b"/"), b"/");
        assert_eq!(&*normalise(b"a/"), b"a");
        assert_eq!(&*normalise(b"/a/./../b"), b"/a/./../b");
    }

    #[test]
    fn key_stems() {
        assert_eq!(stem_of_key(b"/usr/bin"), Some(&b"/usr"[..]));
        assert_eq!(stem_of_key(b"/usr"), None);
        assert_eq!(stem_of_key(b"//x"), Some(&b"/"[..]));
        assert_eq!(stem_of_key(b"rel/x"), Some(&b"rel"[..]));
    }
}
