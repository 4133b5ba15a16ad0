//! One object reached without following anything: an `O_PATH` fd and what
//! `statx` said about it, and the handles its xattrs are read and written
//! through.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, StatxFlags, XattrFlags, CWD};
use rustix::io::{Errno, Result};

use super::key::is_name;

/// What the walk needs to know about an object, from one `statx` on its fd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub kind: FileType,
    /// Permission bits and file type, as `st_mode`.
    pub mode: u32,
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    /// The mount the object was reached through (`statx` `stx_mnt_id`): two
    /// objects on one filesystem but under different mounts (a bind mount)
    /// differ here even when `dev` is the same.
    pub mount: u64,
}

impl Meta {
    /// `statx` of the object `fd` refers to.
    pub fn of(fd: BorrowedFd<'_>) -> Result<Self> {
        let mask = StatxFlags::TYPE
            | StatxFlags::MODE
            | StatxFlags::NLINK
            | StatxFlags::INO
            | StatxFlags::UID
            | StatxFlags::GID
            | StatxFlags::MNT_ID;
        let stx = rfs::statx(fd, c"", AtFlags::EMPTY_PATH, mask)?;
        Ok(Meta {
            kind: FileType::from_raw_mode(stx.stx_mode.into()),
            mode: stx.stx_mode.into(),
            dev: rfs::makedev(stx.stx_dev_major, stx.stx_dev_minor),
            ino: stx.stx_ino,
            nlink: stx.stx_nlink.into(),
            uid: stx.stx_uid,
            gid: stx.stx_gid,
            mount: stx.stx_mnt_id,
        })
    }

    /// The permission bits (`0o7777`), without the file type.
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }

    /// Whether the object is on another mount or device than `other`.
    pub fn other_mount(&self, other: &Meta) -> bool {
        self.mount != other.mount || self.dev != other.dev
    }
}

/// An object opened `O_PATH | O_NOFOLLOW`: nothing was read, no device or
/// FIFO was opened, a symlink is the link itself, and the object cannot be
/// swapped for another while the fd is held.
#[derive(Debug)]
pub struct Entry {
    fd: OwnedFd,
    meta: Meta,
}

impl Entry {
    /// Entry `name` (one component: no `/`, not `.` or `..`) of the
    /// directory `dir`, without following it if it is a symlink. A mount
    /// point is entered (the fd is the mounted root), which the caller sees
    /// in [`Meta::mount`].
    pub fn open_at(dir: impl AsFd, name: &CStr) -> Result<Self> {
        if !is_name(name.to_bytes()) {
            return Err(Errno::INVAL);
        }
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rfs::openat(dir, name, flags, Mode::empty())?;
        Self::from_fd(fd)
    }

    /// An `O_PATH` fd obtained by other audited means (the root, `openat2`).
    pub(crate) fn from_fd(fd: OwnedFd) -> Result<Self> {
        let meta = Meta::of(fd.as_fd())?;
        Ok(Self { fd, meta })
    }

    pub(crate) fn into_fd(self) -> OwnedFd {
        self.fd
    }

    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    pub fn kind(&self) -> FileType {
        self.meta.kind
    }

    /// The `O_PATH` fd.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Reopens a directory for listing (`getdents`) and `f*xattr` calls,
    /// through `/proc/self/fd/N`: the very inode this entry holds, with no
    /// second path walk. `ENOTDIR` for anything else, which is never
    /// opened.
    pub fn open_dir(&self) -> Result<OwnedFd> {
        if self.meta.kind != FileType::Directory {
            return Err(Errno::NOTDIR);
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        rfs::openat(CWD, proc_path(self.fd()).as_c_str(), flags, Mode::empty())
    }

    /// The handle for this object's xattrs when no directory fd is open.
    pub fn handle(&self) -> Handle<'_> {
        Handle::Path(self.fd())
    }
}

/// `/proc/self/fd/N`: a magic link to the object `fd` holds itself.
pub(crate) fn proc_path(fd: BorrowedFd<'_>) -> CString {
    // The digits of an fd never contain NUL.
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default()
}

/// `/proc/self/fd/DIR/NAME` for one entry name of an open directory.
fn named_path(dir: BorrowedFd<'_>, name: &CStr) -> Result<CString> {
    if !is_name(name.to_bytes()) {
        return Err(Errno::INVAL);
    }
    let mut path = proc_path(dir).into_bytes();
    path.push(b'/');
    path.extend_from_slice(name.to_bytes());
    CString::new(path).map_err(|_| Errno::INVAL)
}

/// `name` if it is one entry name (resolved in the working directory).
fn one_name(name: &CStr) -> Result<&CStr> {
    if is_name(name.to_bytes()) {
        Ok(name)
    } else {
        Err(Errno::INVAL)
    }
}

/// Where an object's xattrs are read and written: never a name that is
/// looked up again.
#[derive(Clone, Copy, Debug)]
pub enum Handle<'fd> {
    /// A directory opened for reading: `f*xattr`.
    Fd(BorrowedFd<'fd>),
    /// An `O_PATH` fd, which `f*xattr` refuses (`EBADF`, still on 6.18):
    /// path calls on its `/proc/self/fd/N`, which resolves to the object
    /// itself (for a symlink, the link, not its target).
    Path(BorrowedFd<'fd>),
    /// Entry `name` of the open directory `dir`, through
    /// `/proc/self/fd/DIR/NAME` and the `l*xattr` calls: one name looked
    /// up in that directory, never followed if it is a symlink, no fd
    /// opened. For reads during a deletion, which then removes the entry
    /// by the same name anyway.
    Named(BorrowedFd<'fd>, &'fd CStr),
    /// Entry `name` of the calling thread's working directory, through the
    /// `l*xattr` calls: the same single lookup as [`Handle::Named`]
    /// without the walk through `/proc`. Only for a thread that owns its
    /// working directory (`unshare(CLONE_FS)`) and has just set it with
    /// `fchdir` to the directory it means.
    InWorkingDir(&'fd CStr),
}

impl Handle<'_> {
    /// Reads xattr `name` into `buffer`; its length.
    pub fn get(self, name: &str, buffer: &mut [u8]) -> Result<usize> {
        match self {
            Handle::Fd(fd) => rfs::fgetxattr(fd, name, buffer),
            Handle::Path(fd) => rfs::getxattr(proc_path(fd).as_c_str(), name, buffer),
            Handle::Named(dir, entry) => {
                rfs::lgetxattr(named_path(dir, entry)?.as_c_str(), name, buffer)
            }
            Handle::InWorkingDir(entry) => rfs::lgetxattr(one_name(entry)?, name, buffer),
        }
    }

    /// The length of xattr `name`.
    pub fn size(self, name: &str) -> Result<usize> {
        match self {
            Handle::Fd(fd) => rfs::fgetxattr_query(fd, name),
            Handle::Path(fd) => rfs::getxattr_query(proc_path(fd).as_c_str(), name),
            Handle::Named(dir, entry) => {
                rfs::lgetxattr_query(named_path(dir, entry)?.as_c_str(), name)
            }
            Handle::InWorkingDir(entry) => rfs::lgetxattr_query(one_name(entry)?, name),
        }
    }

    /// The names of the object's xattrs (NUL-separated) into `buffer`;
    /// their length.
    pub fn list(self, buffer: &mut [u8]) -> Result<usize> {
        match self {
            Handle::Fd(fd) => rfs::flistxattr(fd, buffer),
            Handle::Path(fd) => rfs::listxattr(proc_path(fd).as_c_str(), buffer),
            Handle::Named(dir, entry) => {
                rfs::llistxattr(named_path(dir, entry)?.as_c_str(), buffer)
            }
            Handle::InWorkingDir(entry) => rfs::llistxattr(one_name(entry)?, buffer),
        }
    }

    /// Removes xattr `name`.
    pub fn remove(self, name: &str) -> Result<()> {
        match self {
            Handle::Fd(fd) => rfs::fremovexattr(fd, name),
            Handle::Path(fd) => rfs::removexattr(proc_path(fd).as_c_str(), name),
            Handle::Named(dir, entry) => {
                rfs::lremovexattr(named_path(dir, entry)?.as_c_str(), name)
            }
            Handle::InWorkingDir(entry) => rfs::lremovexattr(one_name(entry)?, name),
        }
    }

    pub fn set(self, name: &str, value: &[u8]) -> Result<()> {
        match self {
            Handle::Fd(fd) => rfs::fsetxattr(fd, name, value, XattrFlags::empty()),
            Handle::Path(fd) => {
                rfs::setxattr(proc_path(fd).as_c_str(), name, value, XattrFlags::empty())
            }
            Handle::Named(dir, entry) => rfs::lsetxattr(
                named_path(dir, entry)?.as_c_str(),
                name,
                value,
                XattrFlags::empty(),
            ),
            Handle::InWorkingDir(entry) => {
                rfs::lsetxattr(one_name(entry)?, name, value, XattrFlags::empty())
            }
        }
    }
}
