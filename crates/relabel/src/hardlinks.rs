//! The first-visited-wins rule for inodes with several links.
//!
//! Only multiply-linked inodes are recorded, so the registry grows with the
//! number of hard-linked inodes, not with the tree.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Outcome of presenting one link of an inode.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// First link seen, or a later one whose spec agrees: label it.
    Label,
    /// An earlier link asked for this other label, which is kept.
    Conflict(Arc<str>),
}

#[derive(Default)]
pub(crate) struct HardLinks {
    first_label: Mutex<HashMap<(u64, u64), Arc<str>>>,
}

impl HardLinks {
    pub(crate) fn claim(&self, device: u64, inode: u64, label: &str) -> Claim {
        // A panic elsewhere cannot leave the map half-updated: inserts are
        // single calls, so a poisoned lock is still consistent.
        let mut map = self
            .first_label
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match map.get(&(device, inode)) {
            None => {
                map.insert((device, inode), Arc::from(label));
                Claim::Label
            }
            Some(first) if **first == *label => Claim::Label,
            Some(first) => Claim::Conflict(Arc::clone(first)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_link_wins_per_device_and_inode() {
        let links = HardLinks::default();
        assert_eq!(links.claim(1, 7, "a"), Claim::Label);
        assert_eq!(links.claim(1, 7, "a"), Claim::Label);
        assert_eq!(links.claim(1, 7, "b"), Claim::Conflict(Arc::from("a")));
        // Same inode number on another filesystem is another file.
        assert_eq!(links.claim(2, 7, "b"), Claim::Label);
    }
}
