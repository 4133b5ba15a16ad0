//! Lookups for the entries of one directory, sharing the work done on the
//! directory's own key: a walker asks about thousands of siblings whose keys
//! differ only in their last component.
//!
//! A [`Directory`] keeps, for every regex spec that can still match a key
//! below it, the state of that spec's DFA after `DIR/`. Looking up an entry
//! then costs a few DFA steps over its name for the surviving specs, tried
//! from the highest priority down, instead of multi-pattern searches over the
//! whole path. A spec whose DFA died on `DIR/` is dropped; one that already
//! matched (a top-level `|` lets a match end early) matches every entry; one
//! whose state loops on every name byte and accepts at the end (the tail of
//! `(/.*)?`) matches every entry without a step. A subdirectory advances its
//! parent's states by `NAME/`.
//!
//! Exactness: an entry's answer is the one [`Matcher::winner`] gives for its
//! full key, with the same candidates, order and filters; tests compare the
//! two, and libselinux, on generated trees. Where the shortcut would need more
//! reasoning than it is worth, the directory falls back to full lookups: a
//! substitution alias lies below the directory (so entries may be rewritten
//! differently from the directory), the directory's key is or becomes `/`
//! while substitutions exist, or is not a plain absolute key. A spec group
//! with a spec whose DFA would be too large is run whole on each entry's full
//! key by its multi-pattern automaton, as a plain lookup runs it, from the
//! directory where that spec needs its DFA; so are the groups of a
//! directory where more than `MAX_STEPPED` specs are still alive (the states
//! are kept for its subdirectories, where most die).
//!
//! DFAs are built per spec on first use, and not before the key has passed
//! the literal bytes the spec's pattern starts with after its group's prefix
//! (its head, `mysql` in `/var/lib/mysql(/.*)?`): until then a spec only
//! compares bytes, and most die there without a DFA. A spec in its head is
//! alive exactly when its DFA's state would be.

use std::borrow::Cow;
use std::cell::RefCell;

use regex_automata::{Anchored, Input};

use super::matcher::{normalise, Group, Matcher, PrefixGroups};
use super::spec_dfa::{Progress, SpecDfa};
use super::FileKind;
use crate::path_chain::PathChain;

/// Live specs an entry steps through one by one at most; beyond this, the
/// entries of that directory run their groups' multi-pattern automata.
const MAX_STEPPED: usize = 64;

#[derive(Clone, Debug)]
struct Candidate<'m> {
    spec: u32,
    /// The spec's pattern in its group.
    pattern: usize,
    stage: Stage<'m>,
    /// The group the spec belongs to, should it have to be run whole.
    group: WholeGroup<'m>,
}

/// How far a spec has got along a directory's key.
#[derive(Clone, Copy, Debug)]
enum Stage<'m> {
    /// The key after the group's prefix is the first this many bytes of the
    /// pattern's head ([`Group::head`]), which it has not passed: no DFA is
    /// needed yet, and a key that leaves the head kills the spec without
    /// one ever being built (most specs of a group die that way).
    Head(usize),
    Dfa(&'m SpecDfa, Progress),
}

/// A candidate after more bytes of the key.
enum Advanced<'m> {
    Alive(Stage<'m>),
    Dead,
    /// Its DFA is too large: its group must be run whole.
    NoDfa,
}

impl<'m> Candidate<'m> {
    fn advance(&self, bytes: &[u8]) -> Advanced<'m> {
        let (dfa, progress) = match self.stage {
            Stage::Dfa(dfa, progress) => (dfa, progress),
            Stage::Head(consumed) => {
                let head = self.group.group.head(self.pattern);
                let rest = &head[consumed..];
                if bytes.len() < rest.len() {
                    return if rest.starts_with(bytes) {
                        Advanced::Alive(Stage::Head(consumed + bytes.len()))
                    } else {
                        Advanced::Dead
                    };
                }
                if !bytes.starts_with(rest) {
                    return Advanced::Dead;
                }
                let Some((dfa, progress)) = self.past_head() else {
                    return Advanced::NoDfa;
                };
                let Some(progress) = progress else {
                    return Advanced::Dead;
                };
                return match dfa.feed(progress, &bytes[rest.len()..]) {
                    Some(progress) => Advanced::Alive(Stage::Dfa(dfa, progress)),
                    None => Advanced::Dead,
                };
            }
        };
        match dfa.feed(progress, bytes) {
            Some(progress) => Advanced::Alive(Stage::Dfa(dfa, progress)),
            None => Advanced::Dead,
        }
    }

    /// The spec's DFA and its progress over the whole head (`None`: dead),
    /// from the state after the group's prefix, which ends in `/`; `None`
    /// when the DFA is too large.
    fn past_head(&self) -> Option<(&'m SpecDfa, Option<Progress>)> {
        let group = self.group.group;
        let dfa = group.spec_dfa(self.pattern)?;
        let start = dfa.start(b"/", 1, Anchored::Yes)?;
        Some((
            dfa,
            dfa.feed(Progress::Stepping(start), group.head(self.pattern)),
        ))
    }

    /// Whether the entry `name` of the directory matches.
    fn matches_name(&self, name: &[u8]) -> bool {
        let consumed = match self.stage {
            Stage::Dfa(dfa, progress) => return dfa.matches_name(progress, name),
            Stage::Head(consumed) => consumed,
        };
        let group = self.group.group;
        let head = group.head(self.pattern);
        let Some(after_head) = name.strip_prefix(&head[consumed..]) else {
            return false;
        };
        match self.past_head() {
            Some((dfa, Some(progress))) => dfa.matches_name(progress, after_head),
            Some((_, None)) => false,
            None => {
                // The DFA is too large: the group's automaton decides, on
                // the key after the prefix with the prefix's `/` before it.
                let mut haystack = Vec::with_capacity(1 + head.len() + after_head.len());
                haystack.push(b'/');
                haystack.extend_from_slice(head);
                haystack.extend_from_slice(after_head);
                group.pattern_matches(self.pattern, &haystack, 1)
            }
        }
    }
}

/// A group run whole on each entry's key, as [`Matcher::winner`] runs it.
#[derive(Clone, Copy, Debug)]
struct WholeGroup<'m> {
    group: &'m Group,
    /// Where its patterns start (right after their prefix); `None` for the
    /// unprefixed group, which is searched unanchored from the start.
    start: Option<usize>,
}

impl WholeGroup<'_> {
    fn best(&self, key: &[u8], accept: &impl Fn(u32) -> bool) -> Option<u32> {
        let input = match self.start {
            Some(start) => Input::new(key).range(start..).anchored(Anchored::Yes),
            None => Input::new(key),
        };
        self.group.best(input, accept)
    }
}

/// Candidates of one spec class (exact or regex), highest priority first.
#[derive(Clone, Debug, Default)]
struct Class<'m> {
    candidates: Vec<Candidate<'m>>,
    /// Groups without per-spec DFAs.
    whole: Vec<WholeGroup<'m>>,
    /// When more than `MAX_STEPPED` candidates are alive: their groups, which
    /// entries run whole instead of stepping the candidates.
    crowded: Vec<WholeGroup<'m>>,
}

impl<'m> Class<'m> {
    /// Adds the specs of `group`, whose patterns start right after
    /// `haystack[..at]` (`at == 0`: the unprefixed group, unanchored).
    fn add_group(&mut self, group: &'m Group, haystack: &[u8], at: usize) {
        let whole = WholeGroup {
            group,
            start: (at != 0).then_some(at),
        };
        let anchored = if at == 0 { Anchored::No } else { Anchored::Yes };
        let started = group.spec_index.iter().enumerate().map(|(pattern, &spec)| {
            // Heads only exist after a prefix, which ends in `/`.
            let stage = if group.head(pattern).is_empty() {
                let dfa = group.spec_dfa(pattern)?;
                Stage::Dfa(dfa, Progress::Stepping(dfa.start(haystack, at, anchored)?))
            } else {
                Stage::Head(0)
            };
            Some(Candidate {
                spec,
                pattern,
                stage,
                group: whole,
            })
        });
        let started = started.collect::<Option<Vec<_>>>();
        match started {
            Some(candidates) => self.candidates.extend(candidates),
            None => self.whole.push(whole),
        }
    }

    fn advance(&self, bytes: &[u8]) -> Self {
        let mut candidates = Vec::with_capacity(self.candidates.len());
        let mut whole = self.whole.clone();
        for candidate in &self.candidates {
            match candidate.advance(bytes) {
                Advanced::Alive(stage) => candidates.push(Candidate {
                    stage,
                    ..*candidate
                }),
                Advanced::Dead => {}
                Advanced::NoDfa => {
                    let group = candidate.group;
                    if !whole
                        .iter()
                        .any(|seen| std::ptr::eq(seen.group, group.group))
                    {
                        whole.push(group);
                    }
                }
            }
        }
        // A group with a spec past its head but without a DFA is run whole
        // from here on, all its specs with it.
        let new_whole = &whole[self.whole.len()..];
        if !new_whole.is_empty() {
            candidates.retain(|candidate| {
                !new_whole
                    .iter()
                    .any(|seen| std::ptr::eq(seen.group, candidate.group.group))
            });
        }
        Class {
            candidates,
            whole,
            crowded: Vec::new(),
        }
    }

    /// `crowd`: whether entries may run whole groups on their full key when
    /// too many specs are alive (only while keys are short: deeper, an
    /// entry steps every live spec, which costs its name, not its depth).
    fn finish(
        &mut self,
        matcher: &Matcher,
        child_stem: Option<u32>,
        prune_stems: bool,
        crowd: bool,
    ) {
        if prune_stems {
            self.candidates
                .retain(|candidate| !matcher.stem_rejects(candidate.spec, child_stem));
        }
        // Too many live specs for an entry to try one by one: entries run
        // their groups' multi-pattern automata instead. The states are kept:
        // a subdirectory usually leaves only a few alive.
        self.crowded.clear();
        if crowd && self.candidates.len() > MAX_STEPPED {
            for candidate in &self.candidates {
                let group = candidate.group;
                if !self
                    .crowded
                    .iter()
                    .any(|seen| std::ptr::eq(seen.group, group.group))
                {
                    self.crowded.push(group);
                }
            }
        }
        self.candidates
            .sort_unstable_by_key(|candidate| std::cmp::Reverse(candidate.spec));
    }

    /// Whether [`Class::best`] needs the entry's full key.
    fn needs_key(&self) -> bool {
        !self.whole.is_empty() || !self.crowded.is_empty()
    }

    fn best(&self, key: &[u8], name: &[u8], accept: &impl Fn(u32) -> bool) -> Option<u32> {
        let whole = self.whole.iter().chain(&self.crowded);
        let whole = whole.filter_map(|group| group.best(key, accept)).max();
        if !self.crowded.is_empty() {
            return whole;
        }
        let stepped = self
            .candidates
            .iter()
            .find(|candidate| accept(candidate.spec) && candidate.matches_name(name));
        stepped.map(|candidate| candidate.spec).max(whole)
    }
}

/// The matcher's state after a directory's (substituted) key.
#[derive(Clone, Debug)]
struct Tracked<'m> {
    /// Substituted key of the directory; entries are `key/NAME`. Only put
    /// together for whole groups (rare: a spec whose DFA is too large).
    key: PathChain,
    /// The same bytes while a prefix group or a literal's directory can
    /// still name this directory (`Matcher::short_key_limit`); `None`
    /// below, so a deep directory costs its name, not its depth.
    short: Option<Box<[u8]>>,
    /// Stem id of every entry's key.
    child_stem: Option<u32>,
    /// Some `^L$` spec may name an entry.
    literal_entries: bool,
    exact: Class<'m>,
    regex: Class<'m>,
}

/// Past this key length, entries no longer run crowded groups on their
/// full key (see [`Class::finish`]).
const CROWD_KEY_LIMIT: usize = 4096;

impl<'m> Tracked<'m> {
    /// State for the entries of `/`.
    fn root(matcher: &'m Matcher) -> Self {
        let mut tracked = Tracked {
            key: PathChain::new(b"/"),
            short: Some(Box::from(&b"/"[..])),
            child_stem: None,
            literal_entries: matcher.has_literal_entries(b"/"),
            exact: Class::default(),
            regex: Class::default(),
        };
        for (groups, class) in [
            (&matcher.exact_groups, &mut tracked.exact),
            (&matcher.regex_groups, &mut tracked.regex),
        ] {
            if let Some(group) = &groups.unprefixed {
                class.add_group(group, b"", 0);
            }
            *class = class.advance(b"/");
            if let Some(group) = groups.at(b"/") {
                class.add_group(group, b"/", 1);
            }
            class.finish(matcher, None, false, true);
        }
        tracked
    }

    /// State for the entries of `self.key/name`: costs the length of `name`
    /// (and of the key while it is short), not the depth.
    fn advance(&self, matcher: &'m Matcher, name: &[u8]) -> Self {
        let key = self.key.child(name);
        let short: Option<Box<[u8]>> = match &self.short {
            Some(parent) if key.len() <= matcher.short_key_limit() => {
                Some(entry_key(parent, name).into())
            }
            _ => None,
        };
        // `key/`, while a group prefix can be that long.
        let prefix = short.as_deref().map(|short| {
            let mut prefix = short.to_vec();
            prefix.push(b'/');
            prefix
        });
        let mut step = Vec::with_capacity(name.len() + 1);
        step.extend_from_slice(name);
        step.push(b'/');
        // The stem is the key's first component: set one level below `/`.
        let child_stem = if self.key.is_root() {
            let mut first = Vec::with_capacity(name.len() + 2);
            first.push(b'/');
            first.extend_from_slice(&step);
            matcher.key_stem(&first)
        } else {
            self.child_stem
        };
        let crowd = key.len() <= CROWD_KEY_LIMIT;
        let advance_class = |class: &Class<'m>, groups: &'m PrefixGroups| {
            let mut next = class.advance(&step);
            if let Some(prefix) = &prefix {
                if let Some(group) = groups.at(prefix) {
                    next.add_group(group, prefix, prefix.len());
                }
            }
            next.finish(matcher, child_stem, true, crowd);
            next
        };
        Tracked {
            exact: advance_class(&self.exact, &matcher.exact_groups),
            regex: advance_class(&self.regex, &matcher.regex_groups),
            literal_entries: short
                .as_deref()
                .is_some_and(|short| matcher.has_literal_entries(short)),
            key,
            short,
            child_stem,
        }
    }

    fn winner(&self, matcher: &Matcher, name: &[u8], kind: FileKind) -> Option<u32> {
        ENTRY_KEY.with(|buffer| {
            let mut key = buffer.borrow_mut();
            key.clear();
            // The full key only where a table or a whole group needs it.
            if self.literal_entries || self.exact.needs_key() || self.regex.needs_key() {
                self.key.write_to(&mut key);
                if !self.key.is_root() {
                    key.push(b'/');
                }
                key.extend_from_slice(name);
            }
            let (mode, stem) = (kind.selabel_mode(), self.child_stem);
            let accept = |index: u32| matcher.accepts(index, mode, stem);
            let literal_best = if self.literal_entries {
                matcher.literal_best(&key, accept)
            } else {
                None
            };
            let exact_best = literal_best.max(self.exact.best(&key, name, &accept));
            if exact_best.is_some_and(|index| index >= matcher.first_exact) {
                return exact_best;
            }
            exact_best.max(self.regex.best(&key, name, &accept))
        })
    }
}

thread_local! {
    /// An entry's full key, for the literal table and whole groups.
    static ENTRY_KEY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Lookups for the entries of one directory; see the module documentation.
/// Made by [`super::FileContexts::directory`].
#[derive(Clone, Debug)]
pub struct Directory<'m> {
    matcher: &'m Matcher,
    /// The directory's key as given, normalised; shared with its parent's,
    /// put together only for fallbacks.
    key: PathChain,
    /// `None`: entries get full lookups.
    tracked: Option<Tracked<'m>>,
}

impl<'m> Directory<'m> {
    pub(super) fn new(matcher: &'m Matcher, key: &[u8]) -> Self {
        let key = match key.iter().position(|&byte| byte == 0) {
            Some(nul) => &key[..nul],
            None => key,
        };
        let key = normalise(key);
        let tracked = Self::substituted_key(matcher, &key).map(|substituted| {
            let components = substituted
                .split(|&byte| byte == b'/')
                .filter(|c| !c.is_empty());
            components.fold(Tracked::root(matcher), |tracked, name| {
                tracked.advance(matcher, name)
            })
        });
        Directory {
            matcher,
            key: PathChain::new(&key),
            tracked,
        }
    }

    /// The key the entries' keys extend, if tracking is exact for `key`:
    /// `substitute(key/NAME)` is then `substitute(key)/NAME` (or `/NAME`).
    fn substituted_key<'k>(matcher: &Matcher, key: &'k [u8]) -> Option<Cow<'k, [u8]>> {
        if !key.starts_with(b"/") {
            return None;
        }
        let (local, dist) = (&matcher.local_subs, &matcher.dist_subs);
        if local.is_empty() && dist.is_empty() {
            return Some(Cow::Borrowed(key));
        }
        if key == b"/" || local.has_alias_below(key) {
            return None;
        }
        // `Matcher::substitute`, one list at a time to check each.
        let after_local = local.apply(key).map_or(Cow::Borrowed(key), Cow::Owned);
        if dist.has_alias_below(&after_local) {
            return None;
        }
        let substituted = dist.apply(&after_local).map_or(after_local, Cow::Owned);
        let plain = substituted.starts_with(b"/")
            && *substituted != *b"/"
            && !substituted.ends_with(b"/")
            && !substituted.windows(2).any(|pair| pair == b"//");
        plain.then_some(substituted)
    }

    /// The directory's entry `name`, which will have entries of its own.
    /// For a tracked directory and a plain name this costs the name's
    /// length, not the depth: no alias lies below a tracked directory's
    /// key, so none lies below its entries' and they are tracked too.
    pub fn subdirectory(&self, name: &[u8]) -> Directory<'m> {
        match &self.tracked {
            Some(tracked) if is_name(name) => Directory {
                matcher: self.matcher,
                key: self.key.child(name),
                tracked: Some(tracked.advance(self.matcher, name)),
            },
            _ => Directory::new(self.matcher, &entry_key(&self.key.to_vec(), name)),
        }
    }

    /// A digest of everything that decides the labels of the objects
    /// strictly below this directory: its key (as given and substituted)
    /// and the specs still live there, in priority order — those whose
    /// automaton state is not dead, every spec of a group run whole, and
    /// every literal or prefix group that only keys below it can reach.
    /// `None` for a directory that is not tracked (a substitution alias
    /// lies below it): it has no digest and is never skipped.
    pub fn live_specs_digest(&self) -> Option<[u8; 32]> {
        let tracked = self.tracked.as_ref()?;
        let mut live = Vec::new();
        for class in [&tracked.exact, &tracked.regex] {
            live.extend(class.candidates.iter().map(|candidate| candidate.spec));
            for whole in &class.whole {
                live.extend_from_slice(&whole.group.spec_index);
            }
        }
        let below = tracked.short.as_deref().map(|short| {
            let mut below = short.to_vec();
            if below != b"/" {
                below.push(b'/');
            }
            below
        });
        let key = self.key.to_vec();
        let substituted = tracked.key.to_vec();
        Some(
            self.matcher
                .live_digest(&[&key, &substituted], &mut live, below.as_deref()),
        )
    }

    /// The context of the entry `name` (a single path component) looked up
    /// with `kind`: what [`super::FileContexts::lookup`] says for `DIR/name`.
    pub fn lookup(&self, name: &[u8], kind: FileKind) -> Option<&'m str> {
        self.matcher.context_of(self.winner(name, kind)?)
    }

    /// [`Directory::lookup`], and whether an object of any other kind
    /// named `name` here would get the same answer.
    ///
    /// The winner for a kind is the highest-priority spec that matches and
    /// accepts that kind, so when the highest-priority spec that matches at
    /// all (a lookup with [`FileKind::Any`]) accepts every kind, it wins for
    /// each; when none matches, none matches for any kind. Otherwise the
    /// kind decides and `kind` is looked up as well.
    pub fn lookup_with_scope(&self, name: &[u8], kind: FileKind) -> EntryLabel<'m> {
        let any = self.winner(name, FileKind::Any);
        if any.is_none_or(|index| self.matcher.accepts_every_kind(index)) {
            return EntryLabel {
                context: any.and_then(|index| self.matcher.context_of(index)),
                every_kind: true,
            };
        }
        EntryLabel {
            context: self.lookup(name, kind),
            every_kind: false,
        }
    }

    fn winner(&self, name: &[u8], kind: FileKind) -> Option<u32> {
        match &self.tracked {
            Some(tracked) if is_name(name) => tracked.winner(self.matcher, name, kind),
            _ => self
                .matcher
                .winner(&entry_key(&self.key.to_vec(), name), kind),
        }
    }
}

/// An entry's context (`None`: no label) from
/// [`Directory::lookup_with_scope`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryLabel<'m> {
    pub context: Option<&'m str>,
    /// Every kind of object with this name in this directory gets the same
    /// context.
    pub every_kind: bool,
}

/// A directory entry's name as `getdents` returns them.
fn is_name(name: &[u8]) -> bool {
    !name.is_empty() && !name.contains(&b'/') && !name.contains(&0)
}

/// The key of entry `name` of `directory`: one `/` between them, none added
/// after `/` itself.
pub fn entry_key(directory: &[u8], name: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(directory.len() + 1 + name.len());
    key.extend_from_slice(directory);
    if directory != b"/" {
        key.push(b'/');
    }
    key.extend_from_slice(name);
    key
}
