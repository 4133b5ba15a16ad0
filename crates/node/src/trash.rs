//! The hidden trash directory a prune moves entries into before deleting
//! them: `.semanifest-trash` inside the pruned directory itself, so it is
//! always on the same filesystem as what moves in (even when the pruned
//! directory is a mount point), and a move is one `renameat2`.
//!
//! A trash is recognised by the `trusted.semanifest` xattr its creator
//! sets, which only a process with `CAP_SYS_ADMIN` can write: a directory
//! of that name made by anyone else (a pod writing into a hostPath root)
//! is never emptied by `apply`.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::FileType;
use rustix::io::{Errno, Result};

use fsroot::{self, Crossing, Entry};

/// The trash's name inside the directory it belongs to
/// ([`super::TRASH_NAME`]).
pub(crate) const NAME: &CStr = c".semanifest-trash";
const MARK: &str = "trusted.semanifest";
const MARK_VALUE: &[u8] = b"trash";

/// What is at the trash's name in a directory.
#[derive(Debug)]
pub(crate) enum Found {
    Nothing,
    /// A trash made by semanifest (by its mark), with its listing fd.
    Ours(OwnedFd),
    /// Something else has the name: never emptied.
    Foreign,
}

/// Looks for the trash in `dir`.
pub(crate) fn find(dir: BorrowedFd<'_>) -> Result<Found> {
    let entry = match Entry::open_at(dir, NAME) {
        Ok(entry) => entry,
        Err(Errno::NOENT) => return Ok(Found::Nothing),
        Err(errno) => return Err(errno),
    };
    if entry.kind() != FileType::Directory {
        return Ok(Found::Foreign);
    }
    let listing = fsroot::open_listing_beneath(dir, NAME, Crossing::NoMounts)?;
    let mut mark = [0u8; 16];
    match rustix::fs::fgetxattr(&listing, MARK, &mut mark) {
        Ok(len) if &mark[..len] == MARK_VALUE => Ok(Found::Ours(listing)),
        Ok(_) | Err(Errno::NODATA | Errno::RANGE) => Ok(Found::Foreign),
        Err(errno) => Err(errno),
    }
}

/// Makes the trash in `dir` (mode 0700) and marks it; its listing fd.
/// [`fsroot::make_dir`] opens it without crossing a mount and checks it
/// is the empty directory just made in `dir`, so the mark never lands on
/// anything else (a bind mount placed on the name, another directory
/// swapped in). The mark is set through the new directory's own fd; if it
/// cannot be set, the directory goes again. A crash in between leaves an
/// empty unmarked directory, which [`find`] calls foreign and a prune
/// removes only because it is empty.
pub(crate) fn create(dir: BorrowedFd<'_>) -> Result<OwnedFd> {
    let made = fsroot::make_dir(dir, NAME, 0o700)?;
    let marked = rustix::fs::fsetxattr(&made, MARK, MARK_VALUE, rustix::fs::XattrFlags::CREATE);
    if let Err(errno) = marked {
        let _ = fsroot::remove_dir(dir, NAME);
        return Err(errno);
    }
    Ok(made)
}

/// Removes the (emptied) trash from `dir`.
pub fn remove(dir: impl AsFd) -> Result<()> {
    fsroot::remove_dir(dir, NAME)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_public_name_is_the_trash_name() {
        assert_eq!(super::NAME.to_bytes(), super::super::TRASH_NAME.as_bytes());
    }
}
