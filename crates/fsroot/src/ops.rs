//! Changing a directory's entries: each operation names one entry of an
//! already-open directory, so no path is walked again and nothing is
//! followed. What `apply`, `prune` and `rm` create, move and delete goes
//! through here.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags, CWD};
use rustix::io::{Errno, Result};

use super::entry::{proc_path, Entry};
use super::key::is_name;
use super::RESOLVE;

/// Whether a resolution may enter another mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crossing {
    /// Mount points on the way are entered (a node's `/var` is usually its
    /// own filesystem).
    Mounts,
    /// `RESOLVE_NO_XDEV`: a mount point anywhere on the way, bind mounts
    /// of the same filesystem included, is `EXDEV`.
    NoMounts,
}

impl Crossing {
    fn flags(self) -> ResolveFlags {
        match self {
            Crossing::Mounts => RESOLVE,
            Crossing::NoMounts => RESOLVE.union(ResolveFlags::NO_XDEV),
        }
    }
}

/// The directory at relative `path` beneath `dir` (`.` for `dir` itself),
/// as an `O_PATH | O_DIRECTORY` fd: `openat2` with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` (and `RESOLVE_NO_XDEV` for
/// [`Crossing::NoMounts`]). A symlink on the way, the last component
/// included, is `ELOOP`; anything but a directory `ENOTDIR`.
pub fn open_dir_beneath(dir: impl AsFd, path: &CStr, crossing: Crossing) -> Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    // EAGAIN: a concurrent rename while the kernel checked the walk; it
    // asks for a retry.
    let mut attempts = 0;
    loop {
        match rfs::openat2(dir.as_fd(), path, flags, Mode::empty(), crossing.flags()) {
            Err(Errno::AGAIN) if attempts < 16 => attempts += 1,
            result => return result,
        }
    }
}

/// Directory `name` of `dir` opened for listing (`O_RDONLY |
/// O_DIRECTORY`), resolved like [`open_dir_beneath`]. `O_DIRECTORY` makes
/// the kernel refuse anything but a directory before opening it, so a FIFO
/// or device swapped in is never opened.
pub fn open_listing_beneath(dir: impl AsFd, name: &CStr, crossing: Crossing) -> Result<OwnedFd> {
    check_name(name)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOCTTY | OFlags::CLOEXEC;
    let mut attempts = 0;
    loop {
        match rfs::openat2(dir.as_fd(), name, flags, Mode::empty(), crossing.flags()) {
            Err(Errno::AGAIN) if attempts < 16 => attempts += 1,
            result => return result,
        }
    }
}

/// Reopens the directory an `O_PATH` fd holds for listing and for
/// `fchmod`, `fchown` and `f*xattr`, through `/proc/self/fd/N`: the same
/// inode, no second lookup. `ENOTDIR` for anything else (never opened).
pub fn reopen_dir(dir: BorrowedFd<'_>) -> Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rfs::openat(CWD, proc_path(dir).as_c_str(), flags, Mode::empty())
}

/// Creates directory `name` in `dir` with `mode` (less the umask) and
/// returns it, checked to be the directory just made. `EEXIST` if any
/// object is there: nothing is replaced.
pub fn make_dir(dir: impl AsFd, name: &CStr, mode: u32) -> Result<Entry> {
    check_name(name)?;
    rfs::mkdirat(dir.as_fd(), name, Mode::from_raw_mode(mode))?;
    let entry = Entry::open_at(dir.as_fd(), name)?;
    if entry.kind() != FileType::Directory {
        // Replaced between the mkdir and the open.
        return Err(Errno::NOTDIR);
    }
    Ok(entry)
}

/// Moves `from` in `from_dir` to `to` in `to_dir` in one `renameat2`
/// with `RENAME_NOREPLACE`: `EEXIST` if `to` exists, so nothing is ever
/// overwritten. Both directories must be on the same filesystem (`EXDEV`
/// otherwise) and a mount point cannot be moved (`EBUSY`).
pub fn rename_noreplace(
    from_dir: impl AsFd,
    from: &CStr,
    to_dir: impl AsFd,
    to: &CStr,
) -> Result<()> {
    check_name(from)?;
    check_name(to)?;
    rfs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE)
}

/// Removes the non-directory `name` from `dir` (a symlink is removed, not
/// followed). A mount point is `EBUSY`, from the kernel.
pub fn unlink(dir: impl AsFd, name: &CStr) -> Result<()> {
    check_name(name)?;
    rfs::unlinkat(dir, name, AtFlags::empty())
}

/// Removes the empty directory `name` from `dir`: `ENOTEMPTY` if anything
/// is in it, `ENOTDIR` if it is no longer a directory (a symlink swapped
/// in is never followed), `EBUSY` for a mount point.
pub fn remove_dir(dir: impl AsFd, name: &CStr) -> Result<()> {
    check_name(name)?;
    rfs::unlinkat(dir, name, AtFlags::REMOVEDIR)
}

fn check_name(name: &CStr) -> Result<()> {
    if is_name(name.to_bytes()) {
        Ok(())
    } else {
        Err(Errno::INVAL)
    }
}
