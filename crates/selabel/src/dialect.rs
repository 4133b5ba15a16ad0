//! Translation of libselinux's regex dialect (PCRE2 10.42, compiled as
//! `^SPEC$` with `PCRE2_DOTALL` only, 8-bit, no UTF) into `regex` crate syntax.
//!
//! Invariant: a pattern is either translated into a Rust pattern that accepts
//! exactly the same byte strings as PCRE2 would, or rejected with a reason.
//! Nothing is translated "approximately". The translation is therefore done by
//! a small parser of our own that knows the PCRE2 subset we accept and emits
//! every literal as `\xHH` and every class as an explicit byte set, so no Rust
//! syntax rule (nested classes, `&&`/`--`/`~~` set operations, escapes) can
//! change the meaning.
//!
//! Only a match/no-match answer is ever needed, so laziness and capture groups
//! are irrelevant, and since every accepted construct is regular the answer
//! does not depend on backtracking versus automaton matching.
//!
//! PCRE2's `$` (and `\Z`) matches at the end *or before a final newline*.
//! Rust has no such assertion; when nothing but other end anchors can follow
//! it, consuming an optional `\n` and asserting the absolute end (`\n?\z`)
//! accepts exactly the same strings. Anywhere else the pattern is rejected.

use std::fmt::Write as _;

/// Deepest group nesting accepted (PCRE2's own default limit is 250); it also
/// bounds this parser's recursion.
const MAX_NESTING: usize = 200;

/// Largest counted repeat accepted: larger ones blow up automaton sizes and
/// no file_contexts needs them.
const MAX_REPEAT: u32 = 1000;

/// Why a spec's regex cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DialectError {
    pub problem: String,
}

impl DialectError {
    fn new(problem: impl Into<String>) -> Self {
        Self {
            problem: problem.into(),
        }
    }
}

type Result<T> = std::result::Result<T, DialectError>;

/// A set of bytes (a character class over the 256 byte values).
#[derive(Clone, Copy, PartialEq, Eq)]
struct ByteSet([u64; 4]);

impl ByteSet {
    const EMPTY: ByteSet = ByteSet([0; 4]);
    const ALL: ByteSet = ByteSet([u64::MAX; 4]);

    fn insert(&mut self, byte: u8) {
        self.0[usize::from(byte >> 6)] |= 1 << (byte & 63);
    }

    fn insert_range(&mut self, low: u8, high: u8) {
        for byte in low..=high {
            self.insert(byte);
        }
    }

    fn contains(&self, byte: u8) -> bool {
        self.0[usize::from(byte >> 6)] & (1 << (byte & 63)) != 0
    }

    fn union(&mut self, other: &ByteSet) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0.iter()) {
            *mine |= theirs;
        }
    }

    /// The only byte in the set, if it has exactly one.
    fn single(&self) -> Option<u8> {
        let count: u32 = self.0.iter().map(|word| word.count_ones()).sum();
        if count != 1 {
            return None;
        }
        let (word_index, word) = self.0.iter().enumerate().find(|(_, word)| **word != 0)?;
        u8::try_from(word_index * 64 + word.trailing_zeros() as usize).ok()
    }

    fn complement(&self) -> ByteSet {
        ByteSet(self.0.map(|word| !word))
    }

    fn of(bytes: &[u8]) -> ByteSet {
        let mut set = ByteSet::EMPTY;
        for &byte in bytes {
            set.insert(byte);
        }
        set
    }

    fn of_ranges(ranges: &[(u8, u8)]) -> ByteSet {
        let mut set = ByteSet::EMPTY;
        for &(low, high) in ranges {
            set.insert_range(low, high);
        }
        set
    }

    /// Emits the set as a Rust byte class made of `\xHH` ranges only.
    fn emit(&self, out: &mut String) {
        if let Some(byte) = self.single() {
            push_hex(out, byte);
            return;
        }
        if *self == ByteSet::EMPTY {
            // An empty class matches nothing; `regex` accepts this spelling.
            out.push_str(r"[^\x00-\xFF]");
            return;
        }
        out.push('[');
        let mut byte: u16 = 0;
        while byte < 256 {
            let start = byte as u8;
            if !self.contains(start) {
                byte += 1;
                continue;
            }
            let mut end = start;
            while end < 255 && self.contains(end + 1) {
                end += 1;
            }
            if start == end {
                push_hex(out, start);
            } else {
                push_hex(out, start);
                out.push('-');
                push_hex(out, end);
            }
            byte = u16::from(end) + 1;
        }
        out.push(']');
    }
}

/// `\xHH`, upper case: what `write!(out, r"\x{byte:02X}")` writes, without
/// the formatting machinery (a tenth of loading Debian's file_contexts).
fn push_hex(out: &mut String, byte: u8) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    out.push_str(r"\x");
    out.push(char::from(DIGITS[usize::from(byte >> 4)]));
    out.push(char::from(DIGITS[usize::from(byte & 15)]));
}

/// PCRE2's `\d`, `\s`, `\w` with its default (C locale) character tables.
fn digit_set() -> ByteSet {
    ByteSet::of_ranges(&[(b'0', b'9')])
}
fn space_set() -> ByteSet {
    // PCRE2 (since 10.0) includes VT (0x0B) in \s.
    ByteSet::of(b"\t\n\x0B\x0C\r ")
}
fn word_set() -> ByteSet {
    ByteSet::of_ranges(&[(b'0', b'9'), (b'A', b'Z'), (b'a', b'z'), (b'_', b'_')])
}

#[derive(Debug)]
enum RegexNode {
    Empty,
    Set(Box<ByteSet>),
    /// `^` and `\A`: start of subject (no multiline mode).
    Start,
    /// `$` and `\Z`: end of subject or before a final newline.
    EndOrFinalNewline,
    /// `\z`: end of subject.
    End,
    WordBoundary,
    NotWordBoundary,
    Group(Box<RegexNode>),
    Repeat {
        node: Box<RegexNode>,
        min: u32,
        max: Option<u32>,
    },
    Concat(Vec<RegexNode>),
    Alternation(Vec<RegexNode>),
}

impl std::fmt::Debug for ByteSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = String::new();
        self.emit(&mut text);
        f.write_str(&text)
    }
}

impl RegexNode {
    /// True if the node can only ever be followed safely by a translated `$`:
    /// it is made of `$` anchors (or nothing) alone.
    fn is_end_anchors_only(&self) -> bool {
        match self {
            RegexNode::Empty | RegexNode::EndOrFinalNewline => true,
            RegexNode::Group(inner) => inner.is_end_anchors_only(),
            RegexNode::Concat(items) => items.iter().all(RegexNode::is_end_anchors_only),
            RegexNode::Alternation(branches) => branches.iter().all(RegexNode::is_end_anchors_only),
            _ => false,
        }
    }
}

/// A spec's regex, checked and ready for the matcher.
#[derive(Debug)]
pub(crate) struct Translation {
    tree: RegexNode,
    /// Bytes every matching key starts with (empty when the pattern has a
    /// top-level `|`, or starts with a non-literal).
    pub required_prefix: Vec<u8>,
    /// `Some(L)` when the pattern is exactly `^L$` for a byte string `L`: it
    /// then matches `L` and `L` followed by one newline, nothing else.
    pub literal: Option<Vec<u8>>,
}

impl Translation {
    /// Rust pattern for the spec once its first `skip` bytes (at most
    /// `required_prefix.len()`) have matched, to be run anchored at offset
    /// `skip` of the key (bytes before it stay visible to `\A` and `\b`).
    /// With `skip == 0`: a pattern accepting exactly what PCRE2 accepts for
    /// `^SPEC$`, to be run unanchored.
    pub(crate) fn pattern_after_prefix(&self, skip: usize) -> String {
        let mut out = String::new();
        let result = match &self.tree {
            RegexNode::Concat(items) if skip > 0 && skip <= self.required_prefix.len() => {
                // items[0] is the `^` and items[1..=skip] the skipped bytes.
                emit_sequence(&items[1 + skip..], true, &mut out)
            }
            tree => emit(tree, true, &mut out),
        };
        // `translate` already emitted this tree once without error, and
        // dropping leading bytes changes no tail position.
        debug_assert!(result.is_ok());
        out
    }
}

impl Translation {
    /// An upper bound on the nesting depth `regex-syntax` sees in any
    /// pattern [`Self::pattern_after_prefix`] emits: each node of the tree
    /// adds at most three levels (a group, a repetition and the sequence
    /// inside), a leaf at most three (`(?:\x0A?\z)`).
    pub(crate) fn nesting_bound(&self) -> u64 {
        fn depth(node: &RegexNode) -> u64 {
            let children = match node {
                RegexNode::Group(inner) => depth(inner),
                RegexNode::Repeat { node, .. } => depth(node),
                RegexNode::Concat(items) | RegexNode::Alternation(items) => {
                    items.iter().map(depth).max().unwrap_or(0)
                }
                _ => 0,
            };
            children.saturating_add(3)
        }
        depth(&self.tree)
    }

    /// An upper bound on the states of the Thompson NFA of any pattern
    /// [`Self::pattern_after_prefix`] emits (counted repeats expanded, as
    /// the compiler does), saturating.
    pub(crate) fn nfa_states_bound(&self) -> u64 {
        fn states(node: &RegexNode) -> u64 {
            match node {
                RegexNode::Empty => 1,
                // One byte or one sparse state.
                RegexNode::Set(_) => 2,
                RegexNode::Start
                | RegexNode::End
                | RegexNode::WordBoundary
                | RegexNode::NotWordBoundary => 2,
                RegexNode::EndOrFinalNewline => 6,
                RegexNode::Group(inner) => states(inner).saturating_add(2),
                RegexNode::Repeat { node, min, max } => {
                    // Every mandatory copy, then every optional one (or one
                    // looping copy), each with its split state.
                    let copies = u64::from(max.unwrap_or(*min).max(*min)) + 1;
                    copies
                        .saturating_mul(states(node).saturating_add(2))
                        .saturating_add(2)
                }
                RegexNode::Concat(items) | RegexNode::Alternation(items) => items
                    .iter()
                    .map(states)
                    .fold(2u64, |sum, item| sum.saturating_add(item).saturating_add(1)),
            }
        }
        states(&self.tree)
    }
}

/// Translates one file_contexts spec (the path-regex field, as written) into a
/// Rust pattern equivalent to libselinux's `^SPEC$` under PCRE2.
pub(crate) fn translate(spec: &[u8]) -> Result<Translation> {
    let mut anchored = Vec::with_capacity(spec.len() + 2);
    anchored.push(b'^');
    anchored.extend_from_slice(spec);
    anchored.push(b'$');
    let mut parser = Parser {
        pattern: &anchored,
        pos: 0,
    };
    let tree = parser.parse_alternation(0)?;
    if parser.pos != anchored.len() {
        // Only an unmatched `)` stops the top level early.
        return Err(DialectError::new(
            "unmatched `)` (PCRE2 refuses this regex)",
        ));
    }
    // Emitting once here is what rejects untranslatable `$` placements.
    emit(&tree, true, &mut String::with_capacity(anchored.len() * 4))?;
    let (required_prefix, literal) = literal_parts(&tree);
    Ok(Translation {
        tree,
        required_prefix,
        literal,
    })
}

/// The single byte a node stands for, if it is one unrepeated byte.
fn single_byte(node: &RegexNode) -> Option<u8> {
    let RegexNode::Set(set) = node else {
        return None;
    };
    set.single()
}

/// Required prefix and whole-literal form of a parsed `^SPEC$`.
fn literal_parts(tree: &RegexNode) -> (Vec<u8>, Option<Vec<u8>>) {
    // A top-level alternation (or anything but a sequence starting with the
    // `^` we added) constrains no prefix.
    let RegexNode::Concat(items) = tree else {
        return (Vec::new(), None);
    };
    let Some((RegexNode::Start, rest)) = items.split_first() else {
        return (Vec::new(), None);
    };
    let prefix: Vec<u8> = rest.iter().map_while(single_byte).collect();
    let tail = &rest[prefix.len()..];
    let literal = matches!(tail, [RegexNode::EndOrFinalNewline]).then(|| prefix.clone());
    (prefix, literal)
}

/// Emits `node`; `at_tail` says that only end anchors can follow it.
fn emit(node: &RegexNode, at_tail: bool, out: &mut String) -> Result<()> {
    match node {
        RegexNode::Empty => {}
        RegexNode::Set(set) => set.emit(out),
        RegexNode::Start => out.push_str(r"\A"),
        RegexNode::End => out.push_str(r"\z"),
        RegexNode::EndOrFinalNewline => {
            if !at_tail {
                return Err(DialectError::new(
                    "`$` (or `\\Z`) followed by more pattern: PCRE2 lets it match before a \
                     final newline, which cannot be reproduced exactly here",
                ));
            }
            out.push_str(r"(?:\x0A?\z)");
        }
        RegexNode::WordBoundary => out.push_str(r"(?-u:\b)"),
        RegexNode::NotWordBoundary => out.push_str(r"(?-u:\B)"),
        RegexNode::Group(inner) => {
            out.push_str("(?:");
            emit(inner, at_tail, out)?;
            out.push(')');
        }
        RegexNode::Repeat { node, min, max } => {
            // A repeated group is followed by itself: it is at the tail only if
            // it cannot repeat or is itself made of end anchors.
            let inner_tail = at_tail && (matches!(max, Some(0 | 1)) || node.is_end_anchors_only());
            out.push_str("(?:");
            emit(node, inner_tail, out)?;
            out.push(')');
            match max {
                Some(max) if max == min => {
                    let _ = write!(out, "{{{min}}}");
                }
                Some(max) => {
                    let _ = write!(out, "{{{min},{max}}}");
                }
                None => {
                    let _ = write!(out, "{{{min},}}");
                }
            }
        }
        RegexNode::Concat(items) => emit_sequence(items, at_tail, out)?,
        RegexNode::Alternation(branches) => {
            out.push_str("(?:");
            for (index, branch) in branches.iter().enumerate() {
                if index > 0 {
                    out.push('|');
                }
                emit(branch, at_tail, out)?;
            }
            out.push(')');
        }
    }
    Ok(())
}

fn emit_sequence(items: &[RegexNode], at_tail: bool, out: &mut String) -> Result<()> {
    // Item `i` is at the tail when the sequence is and items after it are
    // all end anchors: the first index from which that holds.
    let anchors_from = items
        .iter()
        .rposition(|item| !item.is_end_anchors_only())
        .map_or(0, |last| last + 1);
    for (index, item) in items.iter().enumerate() {
        emit(item, at_tail && index + 1 >= anchors_from, out)?;
    }
    Ok(())
}

struct Parser<'a> {
    pattern: &'a [u8],
    pos: usize,
}

/// One element of a class, before ranges are resolved.
enum ClassItem {
    Byte(u8),
    /// A class escape such as `\d`: cannot be a range endpoint.
    Set(ByteSet),
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.pattern.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<u8> {
        self.pattern.get(self.pos + offset).copied()
    }

    fn parse_alternation(&mut self, depth: usize) -> Result<RegexNode> {
        if depth > MAX_NESTING {
            return Err(DialectError::new(format!(
                "groups nested deeper than {MAX_NESTING}"
            )));
        }
        let mut branches = vec![self.parse_concat(depth)?];
        while self.peek() == Some(b'|') {
            self.pos += 1;
            branches.push(self.parse_concat(depth)?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(RegexNode::Empty)
        } else {
            RegexNode::Alternation(branches)
        })
    }

    fn parse_concat(&mut self, depth: usize) -> Result<RegexNode> {
        let mut items = Vec::new();
        while let Some(byte) = self.peek() {
            let (atom, repeatable) = match byte {
                b'|' | b')' => break,
                b'(' => (self.parse_group(depth)?, true),
                b'[' => (RegexNode::Set(Box::new(self.parse_class()?)), true),
                b'\\' => self.parse_escape()?,
                b'.' => {
                    self.pos += 1;
                    (RegexNode::Set(Box::new(ByteSet::ALL)), true)
                }
                b'^' => {
                    self.pos += 1;
                    (RegexNode::Start, false)
                }
                b'$' => {
                    self.pos += 1;
                    (RegexNode::EndOrFinalNewline, false)
                }
                b'*' | b'+' | b'?' => {
                    return Err(DialectError::new(format!(
                        "`{}` does not follow a repeatable item (PCRE2 refuses this regex)",
                        char::from(byte)
                    )))
                }
                b'{' => {
                    return Err(if self.counted_repeat_at(self.pos).is_some() {
                        DialectError::new(
                            "counted repeat `{...}` does not follow a repeatable item",
                        )
                    } else {
                        literal_brace_error()
                    })
                }
                other => {
                    self.pos += 1;
                    (RegexNode::Set(Box::new(ByteSet::of(&[other]))), true)
                }
            };
            let atom = self.parse_quantifier(atom, repeatable)?;
            items.push(atom);
        }
        Ok(match items.len() {
            0 => RegexNode::Empty,
            1 => items.pop().unwrap_or(RegexNode::Empty),
            _ => RegexNode::Concat(items),
        })
    }

    fn parse_group(&mut self, depth: usize) -> Result<RegexNode> {
        self.pos += 1; // `(`
        match self.peek() {
            Some(b'?') => {
                if self.peek_at(1) == Some(b':') {
                    self.pos += 2;
                } else {
                    return Err(DialectError::new(
                        "`(?` group (lookaround, options, named or atomic group): \
                         PCRE-only semantics are not supported",
                    ));
                }
            }
            Some(b'*') => {
                return Err(DialectError::new(
                    "`(*` (a PCRE2 verb or a quantifier with nothing to repeat) is not supported",
                ))
            }
            _ => {}
        }
        let inner = self.parse_alternation(depth + 1)?;
        if self.peek() != Some(b')') {
            return Err(DialectError::new("missing `)` (PCRE2 refuses this regex)"));
        }
        self.pos += 1;
        Ok(RegexNode::Group(Box::new(inner)))
    }

    /// If a PCRE2 10.42 counted repeat (`{n}`, `{n,}`, `{n,m}`, digits only)
    /// starts at `at`, returns (min, max, length). Anything else starting with
    /// `{` is a literal in 10.42 (10.43 changed that), hence the caller's care.
    fn counted_repeat_at(&self, at: usize) -> Option<(u64, Option<u64>, usize)> {
        let rest = self.pattern.get(at..)?;
        if rest.first() != Some(&b'{') {
            return None;
        }
        let mut index = 1;
        let digits = |index: &mut usize| -> Option<u64> {
            let start = *index;
            let mut value: u64 = 0;
            while let Some(digit @ b'0'..=b'9') = rest.get(*index).copied() {
                value = value
                    .saturating_mul(10)
                    .saturating_add(u64::from(digit - b'0'));
                *index += 1;
            }
            (*index > start).then_some(value)
        };
        let min = digits(&mut index)?;
        let max = match rest.get(index) {
            Some(b'}') => Some(min),
            Some(b',') => {
                index += 1;
                digits(&mut index)
            }
            _ => return None,
        };
        if rest.get(index) != Some(&b'}') {
            return None;
        }
        Some((min, max, index + 1))
    }

    fn parse_quantifier(&mut self, atom: RegexNode, repeatable: bool) -> Result<RegexNode> {
        let (min, max) = match self.peek() {
            Some(b'*') => {
                self.pos += 1;
                (0, None)
            }
            Some(b'+') => {
                self.pos += 1;
                (1, None)
            }
            Some(b'?') => {
                self.pos += 1;
                (0, Some(1))
            }
            Some(b'{') => match self.counted_repeat_at(self.pos) {
                Some((min, max, length)) => {
                    self.pos += length;
                    if max.is_some_and(|max| max < min) {
                        return Err(DialectError::new(
                            "numbers out of order in `{n,m}` (PCRE2 refuses this regex)",
                        ));
                    }
                    if min > u64::from(MAX_REPEAT)
                        || max.is_some_and(|max| max > u64::from(MAX_REPEAT))
                    {
                        return Err(DialectError::new(format!(
                            "counted repeat above {MAX_REPEAT} is not supported"
                        )));
                    }
                    // Both fit in u32 after the check above.
                    (min as u32, max.map(|max| max as u32))
                }
                None => return Err(literal_brace_error()),
            },
            _ => return Ok(atom),
        };
        if !repeatable {
            return Err(DialectError::new(
                "quantifier after an assertion (`^`, `$`, `\\b`...) is not supported",
            ));
        }
        match self.peek() {
            // Lazy: same set of matching strings.
            Some(b'?') => self.pos += 1,
            Some(b'+') => {
                return Err(DialectError::new(
                    "possessive quantifier (PCRE-only semantics) is not supported",
                ))
            }
            _ => {}
        }
        if matches!(self.peek(), Some(b'*' | b'+' | b'?'))
            || self.counted_repeat_at(self.pos).is_some()
        {
            return Err(DialectError::new(
                "quantifier following a quantifier is not supported",
            ));
        }
        Ok(RegexNode::Repeat {
            node: Box::new(atom),
            min,
            max,
        })
    }

    /// Escape outside a class; returns the node and whether it can be repeated.
    fn parse_escape(&mut self) -> Result<(RegexNode, bool)> {
        self.pos += 1; // `\`
        let Some(byte) = self.peek() else {
            // Cannot happen: the pattern always ends with the appended `$`.
            return Err(DialectError::new("`\\` at the end of the pattern"));
        };
        self.pos += 1;
        let set = |set: ByteSet| Ok((RegexNode::Set(Box::new(set)), true));
        match byte {
            b'd' => set(digit_set()),
            b'D' => set(digit_set().complement()),
            b's' => set(space_set()),
            b'S' => set(space_set().complement()),
            b'w' => set(word_set()),
            b'W' => set(word_set().complement()),
            b'b' => Ok((RegexNode::WordBoundary, false)),
            b'B' => Ok((RegexNode::NotWordBoundary, false)),
            b'A' => Ok((RegexNode::Start, false)),
            b'z' => Ok((RegexNode::End, false)),
            b'Z' => Ok((RegexNode::EndOrFinalNewline, false)),
            _ => match self.escaped_byte(byte, false)? {
                Some(literal) => set(ByteSet::of(&[literal])),
                None => Err(unsupported_escape(byte)),
            },
        }
    }

    /// The byte an escape stands for, if it is a plain-byte escape: any
    /// non-alphanumeric character, `\t \n \r \f \e \a`, `\xHH` (two hex
    /// digits), and in a class `\b` (backspace).
    fn escaped_byte(&mut self, byte: u8, in_class: bool) -> Result<Option<u8>> {
        Ok(Some(match byte {
            b't' => b'\t',
            b'n' => b'\n',
            b'r' => b'\r',
            b'f' => 0x0C,
            b'e' => 0x1B,
            b'a' => 0x07,
            b'b' if in_class => 0x08,
            b'x' => {
                let high = self.peek().and_then(hex_value);
                let low = self.peek_at(1).and_then(hex_value);
                match (high, low) {
                    (Some(high), Some(low)) => {
                        self.pos += 2;
                        (high << 4) | low
                    }
                    _ => {
                        return Err(DialectError::new(
                            "`\\x` escape: only the two-hex-digit form `\\xHH` is supported",
                        ))
                    }
                }
            }
            other if !other.is_ascii_alphanumeric() => other,
            _ => return Ok(None),
        }))
    }

    fn parse_class(&mut self) -> Result<ByteSet> {
        self.pos += 1; // `[`
        let negated = self.peek() == Some(b'^');
        if negated {
            self.pos += 1;
        }
        let mut items: Vec<ClassItem> = Vec::new();
        let mut first = true;
        loop {
            let Some(byte) = self.peek() else {
                return Err(DialectError::new(
                    "missing `]` at the end of a class (PCRE2 refuses this regex)",
                ));
            };
            if byte == b']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            let item = self.parse_class_item()?;
            // A `-` between two single bytes makes a range; at the start or
            // just before `]` it is a literal. Other placements are errors or
            // Perl-compatibility corners in PCRE2: refuse them.
            if self.peek() == Some(b'-')
                && self.peek_at(1) != Some(b']')
                && self.peek_at(1).is_some()
            {
                let ClassItem::Byte(low) = item else {
                    return Err(DialectError::new(
                        "`-` after a class escape such as `\\d` inside `[...]` is not supported",
                    ));
                };
                self.pos += 1; // `-`
                let ClassItem::Byte(high) = self.parse_class_item()? else {
                    return Err(DialectError::new(
                        "class escape as a range end inside `[...]` (PCRE2 refuses this regex)",
                    ));
                };
                if high < low {
                    return Err(DialectError::new(
                        "range out of order in a class (PCRE2 refuses this regex)",
                    ));
                }
                if self.peek() == Some(b'-') && self.peek_at(1) != Some(b']') {
                    return Err(DialectError::new(
                        "`-` right after a range inside `[...]` is ambiguous and not supported",
                    ));
                }
                items.push(ClassItem::Set(ByteSet::of_ranges(&[(low, high)])));
            } else {
                items.push(item);
            }
        }
        let mut set = ByteSet::EMPTY;
        for item in items {
            match item {
                ClassItem::Byte(byte) => set.insert(byte),
                ClassItem::Set(other) => set.union(&other),
            }
        }
        Ok(if negated { set.complement() } else { set })
    }

    fn parse_class_item(&mut self) -> Result<ClassItem> {
        let Some(byte) = self.peek() else {
            return Err(DialectError::new("missing `]` at the end of a class"));
        };
        self.pos += 1;
        match byte {
            b'[' if matches!(self.peek(), Some(b':' | b'.' | b'=')) => Err(DialectError::new(
                "POSIX class or collating element (`[:...:]`) inside `[...]` is not supported",
            )),
            b'\\' => {
                let Some(escaped) = self.peek() else {
                    return Err(DialectError::new("missing `]` at the end of a class"));
                };
                self.pos += 1;
                match escaped {
                    b'd' => Ok(ClassItem::Set(digit_set())),
                    b'D' => Ok(ClassItem::Set(digit_set().complement())),
                    b's' => Ok(ClassItem::Set(space_set())),
                    b'S' => Ok(ClassItem::Set(space_set().complement())),
                    b'w' => Ok(ClassItem::Set(word_set())),
                    b'W' => Ok(ClassItem::Set(word_set().complement())),
                    _ => match self.escaped_byte(escaped, true)? {
                        Some(literal) => Ok(ClassItem::Byte(literal)),
                        None => Err(unsupported_escape(escaped)),
                    },
                }
            }
            other => Ok(ClassItem::Byte(other)),
        }
    }
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

fn literal_brace_error() -> DialectError {
    DialectError::new(
        "`{` that does not start a counted repeat `{n}`, `{n,}` or `{n,m}`: PCRE2 10.42 reads \
         it as a literal, later versions differ; write `\\{`",
    )
}

fn unsupported_escape(byte: u8) -> DialectError {
    let shown = if byte.is_ascii_graphic() {
        format!("\\{}", char::from(byte))
    } else {
        format!("\\ followed by byte 0x{byte:02X}")
    };
    DialectError::new(format!(
        "escape `{shown}` is not supported (backreference, octal, Unicode property, \
         `\\Q...\\E` or another PCRE-only construct)"
    ))
}

#[cfg(test)]
mod tests {
    use super::{push_hex, translate, ByteSet};

    fn matches(spec: &str, key: &[u8]) -> bool {
        let pattern = translate(spec.as_bytes())
            .expect("translates")
            .pattern_after_prefix(0);
        regex::bytes::RegexBuilder::new(&pattern)
            .unicode(false)
            .build()
            .expect("compiles")
            .is_match(key)
    }

    #[test]
    fn bytes_are_spelled_as_formatting_spells_them() {
        for byte in 0..=u8::MAX {
            let mut out = String::new();
            push_hex(&mut out, byte);
            assert_eq!(out, format!(r"\x{byte:02X}"));
        }
        let mut out = String::new();
        ByteSet::of_ranges(&[(b'0', b'9'), (b'_', b'_'), (0xF0, 0xFF)]).emit(&mut out);
        assert_eq!(out, r"[\x30-\x39\x5F\xF0-\xFF]");
    }

    #[test]
    fn anchors_and_final_newline() {
        assert!(matches("/a", b"/a"));
        assert!(matches("/a", b"/a\n"));
        assert!(!matches("/a", b"/a\n\n"));
        assert!(!matches("/a", b"/ab"));
        assert!(!matches("/a", b"x/a"));
    }

    #[test]
    fn top_level_alternation_binds_anchors_to_the_outer_branches() {
        assert!(matches("/var/a|/opt/x", b"/var/a-anything"));
        assert!(matches("/var/a|/opt/x", b"anything/opt/x"));
        assert!(!matches("/var/a|/opt/x", b"/opt/x/more"));
    }

    #[test]
    fn escaped_final_dollar_leaves_the_end_unanchored() {
        assert!(matches(r"/foo\", b"/foo$tail"));
        assert!(!matches(r"/foo\", b"/foo"));
    }

    #[test]
    fn rejections() {
        for spec in [
            r"/a(?=b)",
            r"/a(b)\1",
            r"/ax{",
            r"/a{,3}",
            r"/a$/b",
            r"/a*+",
            r"/[[:alpha:]]",
            r"/a(",
            r"/a)",
            r"/[a",
            r"/a**",
            r"/\Qx\E",
            r"/\p{L}",
            r"/[z-a]",
            r"*a",
        ] {
            assert!(
                translate(spec.as_bytes()).is_err(),
                "{spec} should be rejected"
            );
        }
    }

    #[test]
    fn literal_parts() {
        let plain = translate(br"/usr/lib/a\.b").expect("translates");
        assert_eq!(plain.literal.as_deref(), Some(&b"/usr/lib/a.b"[..]));
        let tree = translate(br"/usr/libx?/y(/.*)?").expect("translates");
        assert_eq!(tree.required_prefix, b"/usr/lib");
        assert_eq!(tree.literal, None);
        let alternation = translate(b"/a|/b").expect("translates");
        assert_eq!(alternation.required_prefix, b"");
        let escaped_end = translate(br"/foo\").expect("translates");
        assert_eq!(escaped_end.required_prefix, b"/foo$");
        assert_eq!(escaped_end.literal, None);
        assert_eq!(translate(b"/a$").expect("translates").literal, None);
    }

    #[test]
    fn pattern_after_prefix_runs_anchored_after_the_prefix() {
        let translation = translate(br"/usr/lib/\bx[0-9]+(/.*)?").expect("translates");
        assert_eq!(translation.required_prefix, b"/usr/lib/");
        let rest = translation.pattern_after_prefix(9);
        let automaton = regex_automata::meta::Regex::builder()
            .syntax(
                regex_automata::util::syntax::Config::new()
                    .unicode(false)
                    .utf8(false),
            )
            .build(&rest)
            .expect("compiles");
        let run = |key: &[u8]| {
            let input = regex_automata::Input::new(key)
                .range(9..)
                .anchored(regex_automata::Anchored::Yes);
            automaton.is_match(input)
        };
        assert!(run(b"/usr/lib/x12/a\n"));
        assert!(run(b"/usr/lib/x1\n"));
        assert!(!run(b"/usr/lib/x/a"));
        assert!(!run(b"/usr/lib/x1\n\n"));
    }

    #[test]
    fn long_specs_translate_in_linear_time() {
        assert!(translate(&vec![b'a'; 200_000]).is_ok());
        assert!(translate("$".repeat(200_000).as_bytes()).is_ok());
        let nested = "(".repeat(10_000) + &")".repeat(10_000);
        assert!(translate(nested.as_bytes()).is_err(), "nesting is bounded");
    }

    #[test]
    fn classes_are_byte_sets() {
        assert!(matches(r"/[^/]+", b"/\xff\n"));
        assert!(matches(r"/[]a]", b"/]"));
        assert!(matches(r"/[a-]", b"/-"));
        assert!(matches(r"/[\d-]", b"/-"));
        assert!(matches(r"/[&&]", b"/&"));
        assert!(matches(r"/[a[b]", b"/["));
        assert!(!matches(r"/[^\d\D]", b"/x"));
    }
}
