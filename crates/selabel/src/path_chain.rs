//! A path built one name at a time that shares its parent's: what a tree
//! walk keeps per directory instead of a copy of the whole path, so a
//! directory costs the length of its own name however deep it is. The
//! bytes are put together only when someone asks (a message, a fallback).

use std::fmt;
use std::sync::Arc;

/// `start`, or `parent` joined with a name by one `/` (none after `/`
/// itself), as [`crate::entry_key`] joins them.
#[derive(Clone)]
pub struct PathChain(Arc<ChainLink>);

struct ChainLink {
    parent: Option<PathChain>,
    /// The whole path for a start, a name otherwise.
    bytes: Box<[u8]>,
    /// Length of the joined path.
    len: usize,
}

impl PathChain {
    pub fn new(start: &[u8]) -> Self {
        PathChain(Arc::new(ChainLink {
            parent: None,
            bytes: start.into(),
            len: start.len(),
        }))
    }

    /// The entry `name` of this path.
    pub fn child(&self, name: &[u8]) -> Self {
        PathChain(Arc::new(ChainLink {
            parent: Some(self.clone()),
            bytes: name.into(),
            len: self.len() + usize::from(!self.is_root()) + name.len(),
        }))
    }

    /// Length of the joined path in bytes.
    pub(crate) fn len(&self) -> usize {
        self.0.len
    }

    /// Whether the path is `/`.
    pub fn is_root(&self) -> bool {
        self.0.parent.is_none() && &*self.0.bytes == b"/"
    }

    /// The joined path.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        self.write_to(&mut out);
        out
    }

    /// Appends the joined path to `out`.
    pub(crate) fn write_to(&self, out: &mut Vec<u8>) {
        let mut links = Vec::new();
        let mut link = Some(self);
        while let Some(chain) = link {
            links.push(chain);
            link = chain.0.parent.as_ref();
        }
        for chain in links.into_iter().rev() {
            if let Some(parent) = &chain.0.parent {
                if !parent.is_root() {
                    out.push(b'/');
                }
            }
            out.extend_from_slice(&chain.0.bytes);
        }
    }
}

/// Unlinks iteratively: dropping the last handle on a chain thousands of
/// levels deep must not recurse once per level.
impl Drop for ChainLink {
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(chain) = next {
            match Arc::try_unwrap(chain.0) {
                Ok(mut link) => next = link.parent.take(),
                Err(_) => break,
            }
        }
    }
}

impl fmt::Debug for PathChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_like_entry_key() {
        let root = PathChain::new(b"/");
        assert_eq!(root.child(b"var").to_vec(), b"/var");
        let lib = root.child(b"var").child(b"lib");
        assert_eq!(lib.to_vec(), b"/var/lib");
        assert_eq!(lib.len(), b"/var/lib".len());
        let image = PathChain::new(b"/mnt/image").child(b"var");
        assert_eq!(image.to_vec(), b"/mnt/image/var");
        assert_eq!(PathChain::new(b"rel").child(b"x").to_vec(), b"rel/x");
        assert!(root.is_root() && !lib.is_root());
    }

    #[test]
    fn a_million_levels_drop_without_recursion() {
        let mut chain = PathChain::new(b"/");
        for _ in 0..1_000_000 {
            chain = chain.child(b"d");
        }
        assert_eq!(chain.len(), 2_000_000);
        drop(chain);
    }
}
