//! The node runtime: the layout as a node's storage tree, placed onto a
//! real filesystem (`apply`), emptied by lifecycle or by name (`prune`),
//! and removed from below its removable roots (`rm`).
//!
//! Everything is reached through [`fsroot`] from a [`Root`] opened
//! once: no path is resolved twice, no symlink is followed, nothing in the
//! way is replaced.
//!
//! - [`apply()`] makes every declared directory and its ancestors exist with
//!   the declared mode, owner and label. A missing directory is *born
//!   right*: made under a temporary name, given its owner, mode and label,
//!   then renamed into place with `RENAME_NOREPLACE`, so the declared name
//!   never shows another label (see `apply` for why not `fscreate`).
//! - [`prune()`] empties declared directories, keeping each directory itself:
//!   entries first move into a hidden trash directory inside it (one
//!   `renameat2` each, so a crash leaves every entry in place or in the
//!   trash), then the trash is deleted in parallel. The next `prune` or
//!   `apply` empties a trash a crash left behind.
//! - [`remove()`] deletes only strictly below a `removable` root, resolving
//!   every level with `RESOLVE_NO_XDEV` too, and refuses escapes, mounts
//!   and objects labelled with a protected type.
//!
//! - [`quota`] gives each `capacity:` path its project ID, on the
//!   directory with the inherit flag and on everything below, and sets
//!   the project's limits; `apply` runs it after placing the directories,
//!   once every capacity's filesystem was found able to (or changes
//!   nothing).
//!
//! Owners come from the target root's `etc/passwd` (`owners`). The three
//! commands take [`Root::lock`] so they never interleave on one tree.

pub mod apply;
mod delete;
mod mount_rule;
mod owners;
pub mod prune;
pub mod quota;
pub mod remove;
mod trash;

use std::ffi::CString;

use serde::Serialize;

pub use apply::{
    apply, apply_keeping, apply_with, unknown_keep, ApplyMode, ApplyReport, KeptSymlink,
    UnknownKeep,
};
pub use owners::{Accounts, Ids, OwnerError, OwnerProblem};
pub use prune::{prune, PruneOptions, PruneReport, Selection};
pub use quota::CapacityMode;
pub use remove::{remove, RemoveOptions, RemoveReport, Removed};

use fsroot::{EscapedPath, Handle, Root};

/// The name of the trash a prune makes in the directory it empties.
pub const TRASH_NAME: &str = ".semanifest-trash";

/// The xattr that holds an object's SELinux context.
pub(crate) const XATTR_NAME: &str = "security.selinux";

/// Why a command could not start (nothing was changed): exit 2.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Root(#[from] fsroot::Error),
    #[error("cannot read the owners: {0}")]
    Accounts(fsroot::Error),
    #[error("{}", lines(.0))]
    Owners(Vec<OwnerProblem>),
    #[error("{0}")]
    Selection(String),
    /// A capacity's filesystem cannot do what was asked (checked before
    /// anything is changed).
    #[error("{}", .0.join("\n"))]
    Capacity(Vec<String>),
    /// Mounts on the way that the command may not act through (see
    /// `mount_rule`): nothing was changed.
    #[error(
        "{}\nnothing was changed (unmount what is named, or mount what the layout declares, \
         and run again)",
        .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    )]
    Mounts(Vec<PathError>),
    #[error("cannot start worker threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
}

/// One line per problem.
fn lines(problems: &[OwnerProblem]) -> String {
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

/// A failure on one object; the run goes on with the others and exits 1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathError {
    /// The object's path on this machine (with the root), escaped.
    pub path: String,
    pub message: String,
}

impl PathError {
    pub(crate) fn new(path: &[u8], message: impl Into<String>) -> Self {
        Self {
            path: EscapedPath(path).to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn errno(path: &[u8], doing: &str, errno: rustix::io::Errno) -> Self {
        Self::new(path, format!("cannot {doing}: {}", describe(errno)))
    }
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// An errno as a sentence, with the cases the node commands meet named.
pub(crate) fn describe(errno: rustix::io::Errno) -> String {
    use rustix::io::Errno;
    match errno {
        Errno::ROFS => "read-only filesystem".to_owned(),
        Errno::OPNOTSUPP => "the filesystem does not support security.selinux xattrs".to_owned(),
        Errno::LOOP => "a symlink is in the way (never followed)".to_owned(),
        Errno::XDEV => "another mount is in the way (never crossed)".to_owned(),
        Errno::STALE => {
            "replaced by another object before it could be opened (left alone)".to_owned()
        }
        Errno::MFILE => {
            let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
            format!(
                "too many open files (the open-file limit, RLIMIT_NOFILE, is {})",
                limit.map_or("unlimited".to_owned(), |limit| limit.to_string())
            )
        }
        Errno::NOSPC => "no space left on device".to_owned(),
        other => std::io::Error::from(other).to_string(),
    }
}

/// The stored `security.selinux` value without its trailing NUL; `None`
/// when there is none (or it is empty).
pub(crate) fn read_label(handle: Handle<'_>) -> rustix::io::Result<Option<Vec<u8>>> {
    use rustix::io::Errno;
    let mut buffer = vec![0u8; 256];
    loop {
        match handle.get(XATTR_NAME, &mut buffer) {
            Ok(len) => {
                buffer.truncate(len);
                if buffer.last() == Some(&0) {
                    buffer.pop();
                }
                return Ok((!buffer.is_empty()).then_some(buffer));
            }
            Err(Errno::NODATA) => return Ok(None),
            Err(Errno::RANGE) => {
                let size = match handle.size(XATTR_NAME) {
                    Ok(size) => size,
                    Err(Errno::NODATA) => return Ok(None),
                    Err(errno) => return Err(errno),
                };
                buffer.resize(size.max(buffer.len() * 2), 0);
            }
            Err(errno) => return Err(errno),
        }
    }
}

/// Writes a context the way libselinux does: with a trailing NUL.
pub(crate) fn write_label(handle: Handle<'_>, context: &str) -> rustix::io::Result<()> {
    let mut raw = Vec::with_capacity(context.len() + 1);
    raw.extend_from_slice(context.as_bytes());
    raw.push(0);
    handle.set(XATTR_NAME, &raw)
}

/// The type field of a context (`user:role:type[:range]`).
pub(crate) fn context_type(context: &[u8]) -> Option<&[u8]> {
    context
        .split(|&b| b == b':')
        .nth(2)
        .filter(|t| !t.is_empty())
}

/// A key's last component as a C string (keys come from a validated
/// layout or were checked lexically, so they hold no NUL).
pub(crate) fn c_name(name: &[u8]) -> CString {
    CString::new(name).unwrap_or_default()
}

/// The last component of a key and its parent key (`/` for a top-level
/// name); `None` for `/`.
pub(crate) fn split_key(key: &str) -> Option<(&str, &str)> {
    let slash = key.rfind('/')?;
    let name = &key[slash + 1..];
    if name.is_empty() {
        return None;
    }
    Some((if slash == 0 { "/" } else { &key[..slash] }, name))
}

/// The path of `key` below `root`, for messages.
pub(crate) fn shown(root: &Root, key: &str) -> Vec<u8> {
    root.display(key.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_types() {
        assert_eq!(
            context_type(b"system_u:object_r:etcd_var_t:s0"),
            Some(&b"etcd_var_t"[..])
        );
        assert_eq!(
            context_type(b"u:r:t:s0:c1,c2"),
            Some(&b"t"[..]),
            "ranges may hold colons"
        );
        assert_eq!(context_type(b"garbage"), None);
        assert_eq!(context_type(b"u:r::s0"), None);
    }

    #[test]
    fn keys_split() {
        assert_eq!(split_key("/var"), Some(("/", "var")));
        assert_eq!(split_key("/var/lib/etcd"), Some(("/var/lib", "etcd")));
        assert_eq!(split_key("/"), None);
    }
}
