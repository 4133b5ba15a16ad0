//! Path substitutions (`FC.subs`, `FC.subs_dist`) as libselinux 3.4 reads and
//! applies them (`selabel_subs_init`, `selabel_sub`, `selabel_sub_key`).
//!
//! Invariants: a list is kept in libselinux's trial order (last line first);
//! the first alias that matches at a whole-component boundary wins, and a key
//! is rewritten at most once per list, local list first, then distribution.

use std::collections::{HashMap, HashSet};

use super::formats::is_c_space;
use super::LoadError;

/// `alias real`: keys under `alias` are looked up as if under `real`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Substitution {
    pub alias: Vec<u8>,
    pub real: Vec<u8>,
}

/// libselinux reads the file with `fgets(buf, 1023)` into a 1024-byte stack
/// buffer: a line is cut into pieces of at most 1022 bytes.
const FGETS_CHUNK: usize = 1022;
const BUFFER_SIZE: usize = 1024;

/// Parses a substitution file, returning entries in trial order.
///
/// libselinux's parser reads past the end of a line that holds a single
/// field not followed by a newline, into bytes left in its buffer by earlier
/// lines (or never written). We replay that buffer exactly, and refuse the
/// file only when the outcome would depend on never-written memory.
pub(crate) fn parse(file: &str, text: &[u8]) -> Result<Vec<Substitution>, LoadError> {
    let mut buffer = [0u8; BUFFER_SIZE];
    // Bytes at or past this index have never been written.
    let mut written = 0usize;
    let mut entries = Vec::new();
    let mut rest = text;
    let mut line_number: u32 = 1;
    while !rest.is_empty() {
        let chunk_length = match rest.iter().take(FGETS_CHUNK).position(|&b| b == b'\n') {
            Some(newline) => newline + 1,
            None => rest.len().min(FGETS_CHUNK),
        };
        let (chunk, remaining) = rest.split_at(chunk_length);
        rest = remaining;
        buffer[..chunk_length].copy_from_slice(chunk);
        buffer[chunk_length] = 0;
        written = written.max(chunk_length + 1);
        let this_line = line_number;
        if chunk.last() == Some(&b'\n') {
            line_number = line_number.saturating_add(1);
        }

        let uninitialised = || LoadError::Substitution {
            file: file.to_owned(),
            line: this_line,
            problem: "a single field without a trailing newline: libselinux 3.4 reads \
                      uninitialised memory after it; end the line with a newline"
                .to_owned(),
        };
        let read = |index: usize, buffer: &[u8; BUFFER_SIZE]| -> Result<u8, LoadError> {
            if index < written {
                Ok(buffer[index])
            } else {
                Err(uninitialised())
            }
        };

        let mut src = 0;
        while read(src, &buffer)? != 0 && is_c_space(buffer[src]) {
            src += 1;
        }
        if buffer[src] == b'#' {
            continue;
        }
        let mut cursor = src;
        while read(cursor, &buffer)? != 0 && !is_c_space(buffer[cursor]) {
            cursor += 1;
        }
        buffer[cursor] = 0;
        cursor += 1;
        if buffer[src] == 0 {
            continue;
        }
        let mut dst = cursor;
        while read(dst, &buffer)? != 0 && is_c_space(buffer[dst]) {
            dst += 1;
        }
        cursor = dst;
        while read(cursor, &buffer)? != 0 && !is_c_space(buffer[cursor]) {
            cursor += 1;
        }
        buffer[cursor] = 0;
        if buffer[dst] == 0 {
            continue;
        }
        let c_string = |start: usize| {
            let end = buffer[start..]
                .iter()
                .position(|&byte| byte == 0)
                .map_or(BUFFER_SIZE, |offset| start + offset);
            buffer[start..end].to_vec()
        };
        entries.push(Substitution {
            alias: c_string(src),
            real: c_string(dst),
        });
    }
    entries.reverse();
    Ok(entries)
}

/// One substitution file, ready to apply.
#[derive(Debug, Default)]
pub(crate) struct Substitutions {
    /// In trial order (last line first).
    entries: Vec<Substitution>,
    /// Alias → position of its first trial.
    first_trial: HashMap<Box<[u8]>, usize>,
    longest_alias: usize,
    /// Every proper prefix of every alias.
    alias_prefixes: HashSet<Box<[u8]>>,
}

impl Substitutions {
    /// The entries, in trial order.
    pub(crate) fn entries(&self) -> &[Substitution] {
        &self.entries
    }

    pub(crate) fn new(entries: Vec<Substitution>) -> Self {
        let mut first_trial = HashMap::new();
        for (position, entry) in entries.iter().enumerate() {
            first_trial
                .entry(entry.alias.as_slice().into())
                .or_insert(position);
        }
        let longest_alias = entries
            .iter()
            .map(|entry| entry.alias.len())
            .max()
            .unwrap_or(0);
        let alias_prefixes = entries
            .iter()
            .flat_map(|entry| (1..entry.alias.len()).map(|end| entry.alias[..end].into()))
            .collect();
        Self {
            entries,
            first_trial,
            longest_alias,
            alias_prefixes,
        }
    }

    /// Whether some alias starts with `key` and is longer: only then can
    /// `key/NAME` be rewritten other than as `key` is.
    pub(crate) fn has_alias_below(&self, key: &[u8]) -> bool {
        self.alias_prefixes.contains(key)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `selabel_sub`: the first entry (in trial order) whose alias is `key`
    /// or a whole-component prefix of it rewrites the key. The aliases that
    /// can match are exactly the key's prefixes ending before a `/` or at its
    /// end, so those are looked up instead of trying every entry.
    pub(crate) fn apply(&self, key: &[u8]) -> Option<Vec<u8>> {
        let position = (1..=key.len().min(self.longest_alias))
            .filter(|&end| end == key.len() || key[end] == b'/')
            .filter_map(|end| self.first_trial.get(&key[..end]).copied())
            .min()?;
        let entry = &self.entries[position];
        let after = &key[entry.alias.len()..];
        // `/x /` maps `/x/a` to `/a`, not `//a`.
        let tail = if after.first() == Some(&b'/') && entry.real == b"/" {
            &after[1..]
        } else {
            after
        };
        let mut rewritten = Vec::with_capacity(entry.real.len() + tail.len());
        rewritten.extend_from_slice(&entry.real);
        rewritten.extend_from_slice(tail);
        Some(rewritten)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subs(text: &[u8]) -> Vec<Substitution> {
        parse("s", text).expect("parses")
    }

    fn apply(entries: &[Substitution], key: &[u8]) -> Option<Vec<u8>> {
        Substitutions::new(entries.to_vec()).apply(key)
    }

    #[test]
    fn last_line_is_tried_first_and_only_whole_components_match() {
        let entries = subs(b"/web /var/www\n/web /srv/www\n");
        assert_eq!(apply(&entries, b"/web/x"), Some(b"/srv/www/x".to_vec()));
        assert_eq!(apply(&entries, b"/web"), Some(b"/srv/www".to_vec()));
        assert_eq!(apply(&entries, b"/webfoo"), None);
        let root = subs(b"/x /\n");
        assert_eq!(apply(&root, b"/x/a"), Some(b"/a".to_vec()));
        assert_eq!(apply(&root, b"/x"), Some(b"/".to_vec()));
    }

    #[test]
    fn comments_blank_and_single_field_lines_are_skipped() {
        assert!(subs(b"# c\n\n/only\n   \n").is_empty());
        assert_eq!(subs(b"  /a   /b  extra\n").len(), 1);
    }

    #[test]
    fn stale_buffer_is_replayed_and_uninitialised_memory_refused() {
        // "/x" without newline reads the rest of the previous line's buffer.
        let entries = subs(b"/aaaa /bbbb\n/x");
        assert_eq!(
            entries[0],
            Substitution {
                alias: b"/x".to_vec(),
                real: b"aa".to_vec()
            }
        );
        assert!(parse("s", b"/x").is_err());
    }
}
