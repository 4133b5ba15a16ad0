//! The compiled lookup structure.
//!
//! Invariants:
//! - Spec `i` beats spec `j` when `i > j` (libselinux scans backwards and
//!   takes the first match): regex specs first in file order, then "exact"
//!   ones, so every exact index is above every regex index.
//! - A spec is a candidate for a key only if its stem filter and type accept
//!   the key; both are checked exactly as libselinux does, per spec.
//! - Matching is never a per-spec scan: specs that are plain literals (`^L$`,
//!   most "exact" specs) sit in a hash table; the others are compiled into
//!   multi-pattern automata grouped by the directory prefix every key they
//!   match must start with, so a key only runs the few automata of its own
//!   ancestors (plus one for specs without such a prefix). This refines
//!   "one set per stem": Debian's `/usr` stem alone has 2,700 specs, too many
//!   for one lazy DFA to stay fast.
//! - No allocation per lookup unless the key needs normalising (`//`,
//!   trailing `/`) or a substitution applies; never panics on any key.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

use regex_automata::meta::Regex;
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::primitives::PatternID;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind, PatternSet};
use sha2::{Digest as _, Sha256};

use super::dialect::Translation;
use super::spec_dfa::SpecDfa;
use super::subs::Substitutions;
use super::FileKind;

/// Context value meaning "do not label" (lookup answers ENOENT).
const NO_LABEL: &str = "<<none>>";

/// One spec in final (priority) order, with what the matcher needs.
pub(crate) struct PreparedSpec {
    pub mode: u32,
    pub context: String,
    pub stem: Option<Vec<u8>>,
    pub translation: Translation,
}

#[derive(Debug)]
struct CompiledSpec {
    mode: u32,
    context: Box<str>,
    /// Index into the stem table; `None` for stem-less specs.
    stem: Option<u32>,
}

/// Specs compiled into one automaton, in increasing priority.
#[derive(Debug)]
pub(super) struct Group {
    /// Built on first use: a walk below `/var` needs a handful of the
    /// hundreds of groups a distribution's file_contexts makes, and building
    /// them all was a fifth of a relabel pass's CPU time. Load has checked
    /// every way building it can fail ([`check_pattern`]).
    automaton: OnceLock<Regex>,
    /// Pattern index → spec index, increasing.
    pub(super) spec_index: Vec<u32>,
    /// The patterns, for the per-spec DFAs of [`super::directory`].
    patterns: Box<[String]>,
    /// Per pattern: the bytes every key it matches has right after the
    /// group's prefix (none in the unprefixed group). A walk steps over
    /// them without the pattern's DFA, so most DFAs are never built.
    heads: Box<[Box<[u8]>]>,
    /// Per pattern: its DFA, built on first use; `None` if too large.
    dfas: Box<[OnceLock<Option<Box<SpecDfa>>>]>,
}

/// A fast hash for the tables below: their keys come from the specs, so a
/// hostile path can only look up, never cause collisions to pile up.
#[derive(Debug, Default, Clone, Copy)]
struct FastHash;

#[derive(Debug, Default)]
struct FastHasher(u64);

impl std::hash::BuildHasher for FastHash {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(0)
    }
}

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(SEED);
        }
        for &byte in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(SEED);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Table<V> = HashMap<Box<[u8]>, V, FastHash>;

/// Regex groups keyed by a directory prefix (ending in `/`) that every key
/// their specs can match starts with.
#[derive(Debug, Default)]
pub(super) struct PrefixGroups {
    /// Patterns here have the prefix removed: they run anchored right after it.
    by_prefix: Table<Group>,
    /// Specs without such a prefix (top-level `|`, leading `.*`, relative...).
    pub(super) unprefixed: Option<Group>,
    longest_prefix: usize,
}

#[derive(Debug)]
pub(crate) struct Matcher {
    specs: Vec<CompiledSpec>,
    stems: Table<u32>,
    /// `^L$` specs by `L`, indices increasing.
    literals: Table<Vec<u32>>,
    /// The directory part (before the last `/`, `/` itself for `/x`) of every
    /// literal: a directory not in here has no literal among its entries.
    literal_directories: Table<()>,
    /// Keys longer than this name no prefix group and no literal directory
    /// (see [`Matcher::short_key_limit`]).
    short_key_limit: usize,
    /// Automata for "exact" specs that are not plain literals (`/a\d`).
    pub(super) exact_groups: PrefixGroups,
    pub(super) regex_groups: PrefixGroups,
    /// Every index at or above this is an "exact" spec.
    pub(super) first_exact: u32,
    pub(super) local_subs: Substitutions,
    pub(super) dist_subs: Substitutions,
    /// For the digests of live specs, built on first use.
    digest_tables: OnceLock<DigestTables>,
}

/// What [`Matcher::live_digest`] needs: a hash of each spec (everything
/// that decides whether and how it labels a key, but not its index), and
/// the specs that only a key below some directory can reach.
#[derive(Debug)]
struct DigestTables {
    spec: Box<[[u8; 32]]>,
    /// Group prefixes (ending in `/`) and literal keys, sorted, with the
    /// specs each holds: the specs live below directory `D` include those of
    /// every entry starting with `D/`.
    keyed: Vec<(Box<[u8]>, Vec<u32>)>,
}

/// Why an automaton could not be built: a spec too large for the engine
/// (`spec`: its index), or too many specs.
#[derive(Debug)]
pub(crate) struct AutomatonError {
    pub spec: Option<u32>,
    pub problem: String,
}

/// Thompson NFA states one spec may need (counted repeats multiply: a spec
/// over this is a mistake or an attack, real ones need a few dozen).
const MAX_SPEC_STATES: u64 = 1 << 17;

/// States the specs of one group may need together; beyond it the group's
/// automaton would take hundreds of MiB.
const MAX_GROUP_STATES: u64 = 1 << 22;

/// `regex-syntax`'s default nesting limit, which the automata keep.
const NEST_LIMIT: u32 = 250;

fn syntax_config() -> syntax::Config {
    syntax::Config::new()
        .unicode(false)
        .utf8(false)
        .nest_limit(NEST_LIMIT)
}

/// What the group automaton of `pattern` (emitted for `translation`)
/// cannot survive, checked without building it: nesting beyond the
/// parser's limit (the real parser decides when the cheap bound is not
/// enough) and a state count past [`MAX_SPEC_STATES`]. Its syntax is the
/// translator's own and needs no check. Returns the state bound.
fn check_pattern(translation: &Translation, pattern: &str) -> Result<u64, String> {
    if translation.nesting_bound() > u64::from(NEST_LIMIT) {
        syntax::parse_with(pattern, &syntax_config())
            .map_err(|error| format!("nested too deeply for the regex engine: {error}"))?;
    }
    let states = translation.nfa_states_bound();
    if states > MAX_SPEC_STATES {
        return Err(format!(
            "too large: its automaton would need over {MAX_SPEC_STATES} states \
             (counted repeats multiply)"
        ));
    }
    Ok(states)
}

/// The automaton of a group's patterns; [`PrefixGroups::build`] has checked
/// every cause of failure: the syntax is the translator's, the nesting and
/// the size are within the bounds, and the NFA has no size limit of its own
/// (the bounds are the limit).
fn build_automaton(patterns: &[String]) -> Regex {
    // The tests of `what_the_load_checks_pass_builds` try it at the
    // checks' bounds.
    try_build_automaton(patterns).unwrap_or_else(|error| {
        panic!("a file_contexts automaton failed to build after its checks at load: {error}")
    })
}

fn try_build_automaton(
    patterns: &[String],
) -> Result<Regex, Box<regex_automata::meta::BuildError>> {
    Regex::builder()
        .syntax(syntax_config())
        .configure(
            Regex::config()
                .match_kind(MatchKind::All)
                .utf8_empty(false)
                .which_captures(WhichCaptures::None)
                .nfa_size_limit(None)
                .dfa(false),
        )
        .build_many(patterns)
        .map_err(Box::new)
}

fn new_group(patterns: Vec<String>, heads: Vec<Box<[u8]>>, spec_index: Vec<u32>) -> Group {
    Group {
        automaton: OnceLock::new(),
        spec_index,
        dfas: patterns.iter().map(|_| OnceLock::new()).collect(),
        patterns: patterns.into(),
        heads: heads.into(),
    }
}

impl PrefixGroups {
    fn build(members: Vec<(&Translation, u32)>) -> Result<Self, AutomatonError> {
        // Per directory: patterns, their heads, spec indices, state bound
        // of them all.
        type Members = (Vec<String>, Vec<Box<[u8]>>, Vec<u32>, u64);
        let mut by_prefix: HashMap<&[u8], Members> = HashMap::new();
        for (translation, index) in members {
            // Cut at the last `/`: keys are grouped by whole directories.
            let prefix = &translation.required_prefix;
            let directory = match prefix.iter().rposition(|&byte| byte == b'/') {
                Some(slash) => &prefix[..=slash],
                None => &prefix[..0],
            };
            let pattern = translation.pattern_after_prefix(directory.len());
            let too_large = |problem| AutomatonError {
                spec: Some(index),
                problem,
            };
            let states = check_pattern(translation, &pattern).map_err(too_large)?;
            let (patterns, heads, indices, group_states) = by_prefix.entry(directory).or_default();
            *group_states = group_states.saturating_add(states);
            if *group_states > MAX_GROUP_STATES {
                return Err(too_large(format!(
                    "too large together with the {} specs before it that start with `{}`: \
                     their automaton would need over {MAX_GROUP_STATES} states",
                    patterns.len(),
                    String::from_utf8_lossy(directory),
                )));
            }
            patterns.push(pattern);
            // The unprefixed group runs unanchored: no head to step over.
            let head = if directory.is_empty() {
                &[][..]
            } else {
                &prefix[directory.len()..]
            };
            heads.push(head.into());
            indices.push(index);
        }
        let mut groups = PrefixGroups::default();
        for (directory, (patterns, heads, indices, _)) in by_prefix {
            let group = new_group(patterns, heads, indices);
            if directory.is_empty() {
                groups.unprefixed = Some(group);
            } else {
                groups.longest_prefix = groups.longest_prefix.max(directory.len());
                groups.by_prefix.insert(directory.into(), group);
            }
        }
        Ok(groups)
    }

    /// The group of keys below `directory` (which ends in `/`).
    pub(super) fn at(&self, directory: &[u8]) -> Option<&Group> {
        if directory.len() > self.longest_prefix {
            return None;
        }
        self.by_prefix.get(directory)
    }

    /// Highest-priority spec of these groups that matches `key` and passes
    /// `accept`.
    fn best(&self, key: &[u8], accept: impl Fn(u32) -> bool) -> Option<u32> {
        let mut best = self
            .unprefixed
            .as_ref()
            .and_then(|group| group.best(Input::new(key), &accept));
        for (slash, _) in key
            .iter()
            .take(self.longest_prefix)
            .enumerate()
            .filter(|&(_, &byte)| byte == b'/')
        {
            if let Some(group) = self.by_prefix.get(&key[..=slash]) {
                let rest = Input::new(key).range(slash + 1..).anchored(Anchored::Yes);
                best = best.max(group.best(rest, &accept));
            }
        }
        best
    }
}

impl Group {
    /// The DFA of pattern `pattern`, built on first use; `None` when it
    /// would exceed the size limits.
    pub(super) fn spec_dfa(&self, pattern: usize) -> Option<&SpecDfa> {
        let dfa = self.dfas.get(pattern)?;
        dfa.get_or_init(|| SpecDfa::build(self.patterns.get(pattern)?).map(Box::new))
            .as_deref()
    }

    /// The bytes every key pattern `pattern` matches has right after the
    /// group's prefix (empty in the unprefixed group).
    pub(super) fn head(&self, pattern: usize) -> &[u8] {
        self.heads.get(pattern).map_or(&[], |head| head)
    }

    /// Whether pattern `pattern` alone matches `haystack[at..]`, run as the
    /// group runs it after a prefix: for a spec whose DFA is too large.
    pub(super) fn pattern_matches(&self, pattern: usize, haystack: &[u8], at: usize) -> bool {
        let input = Input::new(haystack).range(at..).anchored(Anchored::Yes);
        let mut matched = PatternSet::new(self.spec_index.len());
        self.automaton()
            .which_overlapping_matches(&input, &mut matched);
        matched.iter().any(|id| id.as_usize() == pattern)
    }

    fn automaton(&self) -> &Regex {
        self.automaton
            .get_or_init(|| build_automaton(&self.patterns))
    }

    pub(super) fn best(&self, input: Input<'_>, accept: &impl Fn(u32) -> bool) -> Option<u32> {
        MATCHED.with(|sets| {
            let mut sets = sets.borrow_mut();
            // A set sized to this group (next power of two) keeps the scan
            // below proportional to the group, not to the largest one.
            let class = self.spec_index.len().next_power_of_two().trailing_zeros() as usize;
            if sets.len() <= class {
                sets.resize_with(class + 1, || PatternSet::new(0));
            }
            let matched = &mut sets[class];
            if matched.capacity() < self.spec_index.len() {
                *matched = PatternSet::new(1 << class);
            }
            matched.clear();
            self.automaton().which_overlapping_matches(&input, matched);
            if matched.is_empty() {
                return None;
            }
            matched
                .iter()
                .rev()
                .map(|pattern| self.spec_index[pattern.as_usize()])
                .find(|&index| accept(index))
        })
    }
}

thread_local! {
    /// Reused across lookups so the hot path does not allocate: one set per
    /// power-of-two size.
    static MATCHED: RefCell<Vec<PatternSet>> = const { RefCell::new(Vec::new()) };
}

impl Matcher {
    /// `specs` in libselinux's final order; `first_exact` is the index of the
    /// first "exact" spec (`specs.len()` if none).
    pub(crate) fn build(
        specs: Vec<PreparedSpec>,
        first_exact: usize,
        local_subs: Substitutions,
        dist_subs: Substitutions,
    ) -> Result<Self, AutomatonError> {
        let too_many = || AutomatonError {
            spec: None,
            problem: "more than 2 billion specs".to_owned(),
        };
        // Every group's pattern IDs must fit, whatever its size.
        if specs.len() > PatternID::LIMIT {
            return Err(too_many());
        }
        let mut stems: Table<u32> = Table::default();
        let mut literals: Table<Vec<u32>> = Table::default();
        let mut exact_members = Vec::new();
        let mut regex_members = Vec::new();
        let mut compiled = Vec::with_capacity(specs.len());
        for (index, spec) in specs.iter().enumerate() {
            let index = u32::try_from(index).map_err(|_| too_many())?;
            let stem = match &spec.stem {
                Some(stem) => {
                    let next = u32::try_from(stems.len()).map_err(|_| too_many())?;
                    Some(*stems.entry(stem.as_slice().into()).or_insert(next))
                }
                None => None,
            };
            let translation = &spec.translation;
            if let Some(literal) = &translation.literal {
                literals
                    .entry(literal.as_slice().into())
                    .or_default()
                    .push(index);
            } else if index as usize >= first_exact {
                exact_members.push((translation, index));
            } else {
                regex_members.push((translation, index));
            }
            compiled.push(CompiledSpec {
                mode: spec.mode,
                context: spec.context.as_str().into(),
                stem,
            });
        }
        let literal_directories: Table<()> = literals
            .keys()
            .filter_map(|literal| {
                let slash = literal.iter().rposition(|&byte| byte == b'/')?;
                Some((literal[..slash.max(1)].into(), ()))
            })
            .collect();
        let exact_groups = PrefixGroups::build(exact_members)?;
        let regex_groups = PrefixGroups::build(regex_members)?;
        let short_key_limit = literal_directories
            .keys()
            .map(|directory| directory.len())
            .chain([exact_groups.longest_prefix, regex_groups.longest_prefix])
            .max()
            .unwrap_or(0);
        Ok(Self {
            specs: compiled,
            stems,
            literal_directories,
            short_key_limit,
            literals,
            exact_groups,
            regex_groups,
            first_exact: u32::try_from(first_exact).map_err(|_| too_many())?,
            local_subs,
            dist_subs,
            digest_tables: OnceLock::new(),
        })
    }

    fn digest_tables(&self) -> &DigestTables {
        self.digest_tables.get_or_init(|| {
            let mut stems = vec![&[][..]; self.stems.len()];
            for (stem, &id) in &self.stems {
                stems[id as usize] = stem;
            }
            let mut spec = vec![[0u8; 32]; self.specs.len()].into_boxed_slice();
            let mut keyed: Vec<(Box<[u8]>, Vec<u32>)> = Vec::new();
            let mut hash = |index: u32, kind: &[u8], prefix: &[u8], pattern: &[u8]| {
                let compiled = &self.specs[index as usize];
                let mut hasher = Sha256::new();
                let class: &[u8] = if index >= self.first_exact {
                    b"exact"
                } else {
                    b"regex"
                };
                let stem = compiled.stem.map_or(&[][..], |id| stems[id as usize]);
                let fields = [
                    class,
                    kind,
                    prefix,
                    pattern,
                    &compiled.mode.to_le_bytes(),
                    stem,
                    compiled.context.as_bytes(),
                ];
                for field in fields {
                    hasher.update((field.len() as u64).to_le_bytes());
                    hasher.update(field);
                }
                spec[index as usize] = hasher.finalize().into();
            };
            for (literal, indices) in &self.literals {
                for &index in indices {
                    hash(index, b"literal", b"", literal);
                }
                keyed.push((literal.clone(), indices.clone()));
            }
            for groups in [&self.exact_groups, &self.regex_groups] {
                let prefixed = groups.by_prefix.iter().map(|(p, g)| (&p[..], g));
                for (prefix, group) in
                    prefixed.chain(groups.unprefixed.iter().map(|g| (&[][..], g)))
                {
                    for (pattern, &index) in group.patterns.iter().zip(&group.spec_index) {
                        hash(index, b"pattern", prefix, pattern.as_bytes());
                    }
                    if !prefix.is_empty() {
                        keyed.push((prefix.into(), group.spec_index.clone()));
                    }
                }
            }
            keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            DigestTables { spec, keyed }
        })
    }

    /// A digest of the specs `live` (indices, any order, repeats allowed)
    /// plus those of every literal or prefix group at or below `below`
    /// (a prefix ending in `/`), in priority order, with `keys` (the
    /// directory's keys). Spec indices are not hashed, only their order, so
    /// adding a spec elsewhere changes no digest.
    pub(super) fn live_digest(
        &self,
        keys: &[&[u8]],
        live: &mut Vec<u32>,
        below: Option<&[u8]>,
    ) -> [u8; 32] {
        let tables = self.digest_tables();
        if let Some(below) = below {
            let start = tables.keyed.partition_point(|(key, _)| &key[..] < below);
            let reached = tables.keyed[start..]
                .iter()
                .take_while(|(key, _)| key.starts_with(below));
            for (_, indices) in reached {
                live.extend_from_slice(indices);
            }
        }
        live.sort_unstable();
        live.dedup();
        let mut hasher = Sha256::new();
        hasher.update(b"semanifest live specs 1\0");
        for key in keys {
            hasher.update((key.len() as u64).to_le_bytes());
            hasher.update(key);
        }
        hasher.update((live.len() as u64).to_le_bytes());
        for &index in live.iter() {
            hasher.update(tables.spec[index as usize]);
        }
        hasher.finalize().into()
    }

    pub(crate) fn len(&self) -> usize {
        self.specs.len()
    }

    /// The longest directory key that a prefix group (with its `/`) or a
    /// literal's directory can be: a tree walk below it needs no key bytes
    /// for either, only the automaton states.
    pub(super) fn short_key_limit(&self) -> usize {
        self.short_key_limit
    }

    /// Whether spec `index` applies to a key of stem `key_stem` looked up
    /// with `mode` (libselinux's per-spec stem and type filters).
    pub(super) fn accepts(&self, index: u32, mode: u32, key_stem: Option<u32>) -> bool {
        let spec = &self.specs[index as usize];
        (mode == 0 || spec.mode == 0 || spec.mode == mode)
            && (spec.stem.is_none() || spec.stem == key_stem)
    }

    /// Whether spec `index` applies to objects of every kind (it has no
    /// file-type field).
    pub(super) fn accepts_every_kind(&self, index: u32) -> bool {
        self.specs[index as usize].mode == 0
    }

    /// Whether spec `index` has a stem filter that rejects `key_stem`.
    pub(super) fn stem_rejects(&self, index: u32, key_stem: Option<u32>) -> bool {
        let stem = self.specs[index as usize].stem;
        stem.is_some() && stem != key_stem
    }

    /// The stem id of `key` (`None` when it has no stem or no spec uses it).
    pub(super) fn key_stem(&self, key: &[u8]) -> Option<u32> {
        stem_of_key(key).and_then(|stem| self.stems.get(stem).copied())
    }

    /// Best `^L$` spec for `key` (or `key` without one final newline).
    pub(super) fn literal_best(&self, key: &[u8], accept: impl Fn(u32) -> bool) -> Option<u32> {
        let without_newline = key.strip_suffix(b"\n");
        [Some(key), without_newline]
            .into_iter()
            .flatten()
            .filter_map(|literal| self.literals.get(literal))
            .filter_map(|indices| indices.iter().rev().copied().find(|&index| accept(index)))
            .max()
    }

    /// Whether some `^L$` spec could match an entry of directory `key` (an
    /// absolute key without a trailing `/`, or `/`).
    pub(super) fn has_literal_entries(&self, key: &[u8]) -> bool {
        self.literal_directories.contains_key(key)
    }

    /// The context of a winning spec; `None` for `<<none>>`.
    pub(super) fn context_of(&self, index: u32) -> Option<&str> {
        let spec = &self.specs[index as usize];
        (&*spec.context != NO_LABEL).then_some(&*spec.context)
    }

    /// Index of the winning spec, before `<<none>>` is interpreted.
    pub(super) fn winner(&self, path: &[u8], kind: FileKind) -> Option<u32> {
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
        let key_stem = self.key_stem(key);
        let accept = |index: u32| self.accepts(index, mode, key_stem);

        // `^L$` also matches `L` followed by one final newline.
        let literal_best = self.literal_best(key, accept);

        let exact_best = literal_best.max(self.exact_groups.best(key, accept));
        if exact_best.is_some_and(|index| index >= self.first_exact) {
            // Every exact spec beats every regex spec.
            return exact_best;
        }
        exact_best.max(self.regex_groups.best(key, accept))
    }

    pub(crate) fn lookup(&self, path: &[u8], kind: FileKind) -> Option<&str> {
        self.context_of(self.winner(path, kind)?)
    }

    /// The key `path` is matched as after the substitution files rewrote
    /// it; `None` when no substitution applies.
    pub(crate) fn substituted(&self, path: &[u8]) -> Option<Vec<u8>> {
        let path = match path.iter().position(|&byte| byte == 0) {
            Some(nul) => &path[..nul],
            None => path,
        };
        self.substitute(&normalise(path))
    }

    /// `selabel_sub_key`: at most one local substitution, then at most one
    /// distribution substitution of the result.
    fn substitute(&self, key: &[u8]) -> Option<Vec<u8>> {
        if self.local_subs.is_empty() && self.dist_subs.is_empty() {
            return None;
        }
        match self.local_subs.apply(key) {
            Some(local) => Some(self.dist_subs.apply(&local).unwrap_or(local)),
            None => self.dist_subs.apply(key),
        }
    }
}

/// libselinux's key clean-up: runs of `/` collapse to one, then one trailing
/// `/` is dropped (not from `/` itself). No `.`/`..` resolution.
pub(super) fn normalise(path: &[u8]) -> Cow<'_, [u8]> {
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
        assert!(matches!(normalise(b"/usr/bin/ls"), Cow::Borrowed(_)));
    }

    /// The cheap nesting bound never lets through a pattern the real parser
    /// refuses (the lazily built automata rely on it); shapes that add the
    /// most levels per group, up to past the limit.
    const NEST_SHAPES: [(&str, &str); 4] = [
        ("(b", ")*"),
        ("(b|[c-e]", ")+"),
        ("(x\\b(y|z)?", "){2,3}"),
        ("(a|(b", "))"),
    ];

    fn translate(spec: &str) -> Translation {
        super::super::dialect::translate(spec.as_bytes()).expect("translates")
    }

    #[test]
    fn nesting_bound_covers_what_the_parser_counts() {
        for (open, close) in NEST_SHAPES {
            let mut refused = false;
            for depth in 1..=120 {
                let spec = format!("/a/{}{}", open.repeat(depth), close.repeat(depth));
                let Ok(translation) = super::super::dialect::translate(spec.as_bytes()) else {
                    continue;
                };
                let pattern = translation.pattern_after_prefix(3);
                let parsed = syntax::parse_with(&pattern, &syntax_config());
                if translation.nesting_bound() <= u64::from(NEST_LIMIT) {
                    assert!(parsed.is_ok(), "{spec}: {parsed:?}");
                }
                refused |= parsed.is_err();
            }
            // Control: the shapes do reach the parser's limit.
            assert!(refused, "{open}...{close} never nested past the limit");
        }
    }

    /// The automata are built on first lookup, where failing is not an
    /// option: whatever the load checks let through builds, tried at the
    /// checks' bounds (each shape as deep or as large as they allow, and a
    /// group as large as they allow), with controls one step past them.
    #[test]
    fn what_the_load_checks_pass_builds() {
        // Nesting: every depth of each shape the checks pass, including
        // those only the real parser lets through.
        let mut parsed_to_pass = 0;
        for (open, close) in NEST_SHAPES {
            for depth in 1..=120 {
                let spec = format!("/a/{}{}", open.repeat(depth), close.repeat(depth));
                let Ok(translation) = super::super::dialect::translate(spec.as_bytes()) else {
                    continue;
                };
                let pattern = translation.pattern_after_prefix(3);
                if check_pattern(&translation, &pattern).is_ok() {
                    try_build_automaton(&[pattern]).expect(&spec);
                    if translation.nesting_bound() > u64::from(NEST_LIMIT) {
                        parsed_to_pass += 1;
                    }
                }
            }
        }
        assert!(parsed_to_pass > 0, "no spec took the real parser's path");

        // Size: the largest count of each shape that passes, and the next.
        let shapes = [
            "/s/(a{1000}){N}",
            "/s/([a-z0-9_]{1000}){N}",
            "/s/((a|bc|[d-f]){100}){N}",
            "/s/(((a|b)?x){10}){N}",
            "/s/(y{1000}|z){N}",
        ];
        let check = |shape: &str, count: u32| {
            let translation = translate(&shape.replace('N', &count.to_string()));
            let pattern = translation.pattern_after_prefix(3);
            check_pattern(&translation, &pattern).map(|states| (pattern, states))
        };
        let mut largest = Vec::new();
        for shape in shapes {
            let count = (1..=1000)
                .take_while(|&count| check(shape, count).is_ok())
                .last()
                .expect("passes with a count of 1");
            assert!(count < 1000, "{shape}: never reaches the bound");
            let (pattern, states) = check(shape, count).expect("passes");
            assert!(states > MAX_SPEC_STATES / 2, "{shape}: {states}");
            try_build_automaton(std::slice::from_ref(&pattern)).expect(shape);
            largest.push(shape.replace('N', &count.to_string()));
        }

        // A group: specs as large as the checks allow under one prefix,
        // as many as the group's bound allows.
        let specs: Vec<Translation> = (0..64)
            .map(|index| {
                translate(&largest[index % largest.len()].replace("/s/", &format!("/g/{index}")))
            })
            .collect();
        let mut fitting = 0;
        while PrefixGroups::build(specs[..=fitting].iter().zip(0..).collect()).is_ok() {
            fitting += 1;
        }
        assert!(fitting > 16 && fitting < specs.len(), "{fitting}");
        let groups = PrefixGroups::build(specs[..fitting].iter().zip(0..).collect()).expect("fits");
        let group = groups.at(b"/g/").expect("one group");
        let automaton = try_build_automaton(&group.patterns).expect("the group builds");
        // It answers, too: the first spec matches its own count of `a`s.
        let answers = (1..=1000).any(|count| {
            let key = format!("/g/0{}", "a".repeat(1000 * count));
            let input = Input::new(key.as_bytes())
                .range(3..)
                .anchored(Anchored::Yes);
            automaton.is_match(input)
        });
        assert!(answers, "the group's first spec matches none of its keys");
    }

    #[test]
    fn key_stems() {
        assert_eq!(stem_of_key(b"/usr/bin"), Some(&b"/usr"[..]));
        assert_eq!(stem_of_key(b"/usr"), None);
        assert_eq!(stem_of_key(b"//x"), Some(&b"/"[..]));
        assert_eq!(stem_of_key(b"rel/x"), Some(&b"rel"[..]));
    }
}
