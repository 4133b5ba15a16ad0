//! Changing a directory's entries: each operation names one entry of an
//! already-open directory, so no path is walked again and nothing is
//! followed. What `apply`, `prune` and `rm` create, move and delete goes
//! through here.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{
    self as rfs, AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags, StatxFlags, CWD,
};
use rustix::io::{Errno, Result};

use super::entry::{proc_path, Meta};
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
/// opens what was made for listing, `fchmod`, `fchown` and `f*xattr`.
/// `EEXIST` if any object is there: nothing is replaced.
///
/// Between the `mkdirat` and the open, another process may put a mount on
/// the name or swap another directory in: the name is opened with
/// `RESOLVE_NO_XDEV` (a mount there is `EXDEV`), and what is open must be
/// an empty directory owned by the caller, on `dir`'s mount, whose `..`
/// is `dir` (`ESTALE` otherwise, and it is left alone). So nothing but an
/// empty directory of the caller's, in `dir`, is ever handed back.
pub fn make_dir(dir: impl AsFd, name: &CStr, mode: u32) -> Result<OwnedFd> {
    check_name(name)?;
    let dir = dir.as_fd();
    rfs::mkdirat(dir, name, Mode::from_raw_mode(mode))?;
    let made = open_listing_beneath(dir, name, Crossing::NoMounts)?;
    let parent = Meta::of(dir)?;
    let meta = Meta::of(made.as_fd())?;
    let dotdot = rfs::statx(
        &made,
        c"..",
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT,
        StatxFlags::INO | StatxFlags::MNT_ID,
    )?;
    let in_dir = (
        rfs::makedev(dotdot.stx_dev_major, dotdot.stx_dev_minor),
        dotdot.stx_ino,
        dotdot.stx_mnt_id,
    ) == (parent.dev, parent.ino, parent.mount);
    if meta.kind != FileType::Directory
        || meta.other_mount(&parent)
        || !in_dir
        || meta.uid != rustix::process::geteuid().as_raw()
        || !is_empty(made.as_fd())?
    {
        return Err(Errno::STALE);
    }
    Ok(made)
}

/// Whether the directory open for listing holds nothing (it is listed
/// through its own open file description, so `dir`'s offset stays).
pub fn is_empty(dir: BorrowedFd<'_>) -> Result<bool> {
    let own = reopen_dir(dir)?;
    let mut buffer = Vec::with_capacity(1024);
    let mut entries = rfs::RawDir::new(&own, buffer.spare_capacity_mut());
    while let Some(entry) = entries.next() {
        if !matches!(entry?.file_name().to_bytes(), b"." | b"..") {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The parent of the open directory `dir` (its `..`), opened for listing,
/// if it is still `expected` (device, inode and mount): what a deletion
/// that closed the fds of the levels above reopens them with, instead of
/// walking down again. `ESTALE` when `dir` was moved elsewhere meanwhile.
pub fn reopen_parent(dir: BorrowedFd<'_>, expected: &Meta) -> Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let parent = rfs::openat(dir, c"..", flags, Mode::empty())?;
    let meta = Meta::of(parent.as_fd())?;
    if (meta.dev, meta.ino, meta.mount) != (expected.dev, expected.ino, expected.mount) {
        return Err(Errno::STALE);
    }
    Ok(parent)
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
