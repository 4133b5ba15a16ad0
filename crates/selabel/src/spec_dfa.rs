//! One file_contexts spec as a DFA stepped a byte at a time: what lets a
//! directory keep each spec's state for its own key and step only over its
//! entries' names (`directory`), built lazily per spec by the `matcher`.

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::util::primitives::StateID;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};

/// Size limits for one spec's DFA. Specs are path patterns: real ones need a
/// few KiB. A spec over the limit makes its group run whole instead.
const DFA_SIZE_LIMIT: usize = 1 << 20;

/// One spec's pattern as a DFA that can be stepped byte by byte.
#[derive(Debug)]
pub(super) struct SpecDfa(dense::DFA<Vec<u32>>);

impl SpecDfa {
    /// Same syntax and semantics as the group automata of the matcher.
    pub(super) fn build(pattern: &str) -> Option<Self> {
        dense::Builder::new()
            .syntax(syntax::Config::new().unicode(false).utf8(false))
            .thompson(
                thompson::Config::new()
                    .utf8(false)
                    .which_captures(WhichCaptures::None),
            )
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::All)
                    .start_kind(StartKind::Both)
                    .dfa_size_limit(Some(DFA_SIZE_LIMIT))
                    .determinize_size_limit(Some(DFA_SIZE_LIMIT)),
            )
            .build(pattern)
            .ok()
            .map(SpecDfa)
    }

    /// State before the first byte of `haystack[at..]`, with `haystack[..at]`
    /// visible to look-behind assertions, as the matcher runs its groups.
    pub(super) fn start(&self, haystack: &[u8], at: usize, anchored: Anchored) -> Option<StateID> {
        let input = Input::new(haystack).range(at..).anchored(anchored);
        self.0.start_state_forward(&input).ok()
    }

    /// Steps over `bytes`.
    pub(super) fn feed(&self, progress: Progress, bytes: &[u8]) -> Option<Progress> {
        let Progress::Stepping(mut state) = progress else {
            // A match already seen stays seen; a universal state has to be
            // stepped (the bytes may include `/`).
            return match progress {
                Progress::Universal(state) => self.feed(Progress::Stepping(state), bytes),
                matched => Some(matched),
            };
        };
        for &byte in bytes {
            state = self.0.next_state(state, byte);
            // Matches are reported one byte late: this one ended before `byte`.
            if self.0.is_match_state(state) {
                return Some(Progress::Matched);
            }
            if self.0.is_dead_state(state) {
                return None;
            }
        }
        Some(self.classify(state))
    }

    /// Whether a name (no `/`, no NUL) fed from `state` ends in a match.
    pub(super) fn matches_name(&self, progress: Progress, name: &[u8]) -> bool {
        let mut state = match progress {
            Progress::Matched | Progress::Universal(_) => return true,
            Progress::Stepping(state) => state,
        };
        for &byte in name {
            state = self.0.next_state(state, byte);
            if self.0.is_match_state(state) {
                return true;
            }
            if self.0.is_dead_state(state) {
                return false;
            }
        }
        self.0.is_match_state(self.0.next_eoi_state(state))
    }

    /// `Universal` when every name byte loops on `state` and the end of the
    /// key accepts: every entry matches.
    fn classify(&self, state: StateID) -> Progress {
        let accepts_at_end = self.0.is_match_state(self.0.next_eoi_state(state));
        let loops = || {
            (1..=u8::MAX)
                .filter(|&byte| byte != b'/')
                .all(|byte| self.0.next_state(state, byte) == state)
        };
        if accepts_at_end && loops() {
            Progress::Universal(state)
        } else {
            Progress::Stepping(state)
        }
    }
}

/// Where a spec's DFA stands after the directory's key and `/`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Progress {
    Stepping(StateID),
    /// Every name fed from here matches.
    Universal(StateID),
    /// A match has ended already: every longer key matches too.
    Matched,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the walk's fallback for a spec without a DFA is tested with
    /// (`spec_without_a_dfa_among_stepped_ones_agrees_with_libselinux`).
    #[test]
    fn a_blown_up_pattern_has_no_dfa() {
        assert!(SpecDfa::build("(?:a|b)*a(?:a|b){20}").is_none());
        assert!(SpecDfa::build("(?:a|b)*a(?:a|b){3}").is_some());
    }
}
