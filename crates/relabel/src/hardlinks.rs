//! The first-visited-wins rule for inodes with several links, settled
//! after the walk.
//!
//! The walk reads most labels before it knows an object's link count (the
//! kind comes from `getdents`, and `statx` is only made for a label that
//! must be written). So a link whose label already matches is only noted
//! by device and inode ([`Links::kept`], from `getdents`' `d_ino`), and a
//! link that must be written is `statx`ed: one with other links is not
//! written during the walk but [`Links::defer`]red. Once every link has
//! been seen, [`Links::settle`] decides each contested inode: if any link
//! kept the stored label, that label stays and every deferred link is a
//! conflict; otherwise the first deferred link is labelled and each later
//! one that wants another label is a conflict.
//!
//! Inodes with one link are never deferred, so the deferred list grows
//! with the hard-linked inodes that need a write; the kept list costs
//! eight bytes per matching object and is dropped unread when nothing was
//! deferred.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use fsroot::Meta;
use selabel::path_chain::PathChain;

/// A link whose label must change, on an inode with other links.
pub(crate) struct Deferred {
    /// What `statx` said when it was seen: it must still be there.
    pub(crate) meta: Meta,
    /// Its directory (or, for an operand, its own path) and its name.
    pub(crate) dir: PathChain,
    pub(crate) name: Option<Box<[u8]>>,
    /// The label its spec gives it.
    pub(crate) wanted: Box<str>,
    /// The stored label when it was read (trailing NUL removed).
    pub(crate) stored: Option<Box<[u8]>>,
}

/// What the walk's threads hand over, merged per directory.
#[derive(Default)]
pub(crate) struct Links {
    /// Inodes (per device) of objects whose label matched.
    kept: Mutex<HashMap<u64, Vec<u64>>>,
    deferred: Mutex<Vec<Deferred>>,
}

/// How one contested inode is settled.
pub(crate) enum Settled<'a> {
    /// A link whose label matched keeps `stored`: every deferred link is a
    /// conflict.
    Kept {
        stored: String,
        links: &'a [Deferred],
    },
    /// The first link still there is labelled; each later one that
    /// wants another label is a conflict, the others already have it.
    First(&'a [Deferred]),
}

impl Links {
    /// Notes the inodes (`device`, inode) of objects whose label matched.
    pub(crate) fn kept(&self, kept: &[(u64, u64)]) {
        if kept.is_empty() {
            return;
        }
        let mut map = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        for &(device, inode) in kept {
            map.entry(device).or_default().push(inode);
        }
    }

    pub(crate) fn defer(&self, deferred: Vec<Deferred>) {
        if deferred.is_empty() {
            return;
        }
        let mut list = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
        list.extend(deferred);
    }

    /// Calls `settle` for each contested inode, in the order its first
    /// deferred link was seen.
    pub(crate) fn settle(self, mut settle: impl FnMut(Settled<'_>)) {
        let mut deferred = self
            .deferred
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if deferred.is_empty() {
            return;
        }
        let kept_map = self
            .kept
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let contested: HashSet<(u64, u64)> = deferred
            .iter()
            .map(|link| (link.meta.dev, link.meta.ino))
            .collect();
        let kept: HashSet<(u64, u64)> = kept_map
            .iter()
            .flat_map(|(&device, inodes)| inodes.iter().map(move |&inode| (device, inode)))
            .filter(|key| contested.contains(key))
            .collect();
        drop(kept_map);
        // Grouped by inode, each group in the order its links were seen.
        let mut groups: Vec<Vec<Deferred>> = Vec::new();
        let mut group_of: HashMap<(u64, u64), usize> = HashMap::new();
        for link in deferred.drain(..) {
            let at = *group_of
                .entry((link.meta.dev, link.meta.ino))
                .or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
            groups[at].push(link);
        }
        for group in &groups {
            let Some(first) = group.first() else {
                continue;
            };
            if kept.contains(&(first.meta.dev, first.meta.ino)) {
                let stored = first.stored.as_deref().unwrap_or_default();
                settle(Settled::Kept {
                    stored: String::from_utf8_lossy(stored).into_owned(),
                    links: group,
                });
            } else {
                settle(Settled::First(group));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::FileType;

    fn link(dev: u64, ino: u64, name: &str, wanted: &str) -> Deferred {
        Deferred {
            meta: Meta {
                kind: FileType::RegularFile,
                mode: 0o100644,
                dev,
                ino,
                nlink: 2,
                uid: 0,
                gid: 0,
                mount: 1,
            },
            dir: PathChain::new(b"/d"),
            name: Some(name.as_bytes().into()),
            wanted: wanted.into(),
            stored: Some(b"old".as_slice().into()),
        }
    }

    fn outcomes(links: Links) -> Vec<String> {
        let mut seen = Vec::new();
        links.settle(|settled| match settled {
            Settled::Kept { stored, links } => {
                let names: Vec<_> = links.iter().map(|l| l.wanted.to_string()).collect();
                seen.push(format!("kept {stored}: {}", names.join(",")));
            }
            Settled::First(links) => {
                let names: Vec<_> = links.iter().map(|l| l.wanted.to_string()).collect();
                seen.push(format!("first: {}", names.join(",")));
            }
        });
        seen
    }

    #[test]
    fn first_deferred_link_wins_per_device_and_inode() {
        let links = Links::default();
        links.defer(vec![link(1, 7, "a", "x"), link(2, 7, "c", "z")]);
        links.defer(vec![link(1, 7, "b", "y")]);
        // Same inode number on another filesystem is another file.
        assert_eq!(outcomes(links), ["first: x,y", "first: z"]);
    }

    #[test]
    fn a_link_that_matched_keeps_the_stored_label() {
        let links = Links::default();
        links.kept(&[(1, 7), (1, 8)]);
        links.defer(vec![link(1, 7, "b", "y")]);
        assert_eq!(outcomes(links), ["kept old: y"]);
    }

    #[test]
    fn nothing_deferred_settles_nothing() {
        let links = Links::default();
        links.kept(&[(1, 7)]);
        assert!(outcomes(links).is_empty());
    }
}
