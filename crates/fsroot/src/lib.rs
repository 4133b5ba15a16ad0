//! Resolving paths under an opened root: the one audited way semanifest
//! reaches an object it labels, creates or deletes.
//!
//! A [`Root`] is opened once, from a path the administrator gave (followed
//! like any command-line path). Everything else is reached from its fd:
//!
//! - [`Root::resolve`] turns an operand into an [`Entry`]: its parent
//!   directory with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS)` from the root's fd, then the last component
//!   with `O_PATH | O_NOFOLLOW`. A symlink anywhere before the last
//!   component is an error that names it; a last component that is a symlink
//!   is the link itself.
//! - [`Entry::open_at`] opens one name inside an already-open directory the
//!   same way, for walkers: nothing is followed, nothing is opened for I/O.
//!   [`Entry::open_dir`] reopens only directories (for `getdents`), through
//!   `/proc/self/fd/N`, so no second lookup can be raced; FIFOs and devices
//!   are never opened, their xattrs go through [`Handle::Path`].
//!   [`open_listing_beneath`] opens one listed name for listing in one
//!   step, refusing symlinks and (on request) mount points before anything
//!   is opened.
//! - [`Meta`] comes from one `statx` of an fd ([`Entry::meta`]) or of one
//!   name in an open directory ([`Meta::at`], nothing opened), with the
//!   mount id, so callers tell bind mounts apart even on the same device.
//! - [`working_dir`] gives each worker thread its own working directory,
//!   so an entry's xattrs are reached by its bare name
//!   ([`Handle::InWorkingDir`]) rather than through `/proc`.
//! - [`Root::create_dir`] makes a directory beneath the root the same way;
//!   [`make_dir`], [`rename_noreplace`], [`unlink`] and [`remove_dir`]
//!   change one entry of an open directory, and [`open_dir_beneath`]
//!   resolves below any open directory, optionally with
//!   `RESOLVE_NO_XDEV` ([`Crossing::NoMounts`]).
//! - [`Root::write_file`] and [`Root::write_symlink`] are the one way
//!   semanifest writes: the directories on the way made where missing,
//!   the object made under a temporary name and renamed over its name
//!   ([`replace_file`], [`replace_symlink`] in an open directory).
//! - [`Root::read_file`] reads a regular file (never a FIFO or device),
//!   [`Root::mounts_below`] lists the mount points under a key (from
//!   the mount table, [`MountTable`], which also tells a filesystem
//!   mounted at its own root from a bind mount of one of its
//!   directories), [`Root::reach_dir`] names the mount points on the way
//!   to a directory, and [`Root::lock`] serialises the commands that
//!   change a tree.
//!
//! Requirements, checked by [`Root::open`] with a clear error: Linux 5.6
//! (`openat2`) and 5.8 (`statx` mount ids), and `/proc` mounted.
//!
//! Operand paths are made absolute and normalised lexically (`.` and `..`
//! removed, like `realpath -s`) before the root is stripped: with symlinks
//! refused, that is the physical meaning too.

mod entry;
mod escape;
mod key;
mod mounts;
mod ops;
pub mod working_dir;
mod write;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{self as rfs, FileType, Mode, OFlags, ResolveFlags, StatxFlags, CWD};
use rustix::io::Errno;

pub use entry::{Entry, Handle, Meta};
pub use escape::EscapedPath;
pub use key::components;
pub use mounts::{MountInfo, MountShape, MountTable};
pub use ops::{
    is_empty, make_dir, open_dir_beneath, open_listing_beneath, remove_dir, rename_noreplace,
    reopen_dir, reopen_parent, unlink, Crossing,
};
pub use write::{replace_file, replace_symlink};

/// How every multi-component path is resolved below a root.
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// Why a root could not be opened or a path not resolved below it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{what} is not available on this kernel (ENOSYS); semanifest needs Linux {version} \
         or later to resolve paths without following symlinks"
    )]
    Unsupported {
        what: &'static str,
        version: &'static str,
    },
    #[error("/proc is not mounted; it is needed to reach objects through their file descriptors")]
    ProcUnavailable,
    #[error("{} is not inside the root {}", EscapedPath(.path), EscapedPath(.root))]
    OutsideRoot { path: Vec<u8>, root: Vec<u8> },
    /// A component before the last is a symlink (named when it could be
    /// found again: the tree may be changing under an attacker).
    #[error(
        "{}: {}; paths are resolved below the root without following symlinks",
        EscapedPath(.path),
        match .symlink {
            Some(symlink) => format!("{} is a symlink", EscapedPath(symlink)),
            None => "a directory on the way is a symlink".to_owned(),
        }
    )]
    Symlink {
        path: Vec<u8>,
        symlink: Option<Vec<u8>>,
    },
    /// What a write found where it needed a directory, or where its file
    /// goes.
    #[error(
        "{}: a {what} is in the way; beneath the root semanifest follows nothing and \
         replaces only its own files and links",
        EscapedPath(.path)
    )]
    InTheWay { path: Vec<u8>, what: Obstacle },
    /// The I/O error is part of the message, not a `source()`, so a
    /// chain-printing caller does not say it twice.
    #[error("{}: {error}", EscapedPath(.path))]
    Io { path: Vec<u8>, error: io::Error },
}

/// What stands where a write needs something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Obstacle {
    /// A symlink on the way or at the name: never followed.
    Symlink,
    /// Anything but a directory on the way.
    NonDirectory,
    /// A directory where a file or link goes: never replaced.
    Directory,
}

impl std::fmt::Display for Obstacle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Obstacle::Symlink => "symlink",
            Obstacle::NonDirectory => "non-directory",
            Obstacle::Directory => "directory",
        })
    }
}

impl Error {
    fn io(path: &[u8], errno: Errno) -> Self {
        Error::Io {
            path: path.to_vec(),
            error: errno.into(),
        }
    }
}

/// A directory reached with [`Root::reach_dir`].
#[derive(Debug)]
pub struct Reached {
    /// `O_PATH | O_DIRECTORY`.
    pub fd: OwnedFd,
    pub meta: Meta,
    /// The mount points entered on the way (the directory itself
    /// included), outermost first.
    pub mounts: Vec<MountAt>,
}

/// A mount point entered at `key`: the mount is `id` (`stx_mnt_id`, the
/// first field of its mountinfo line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountAt {
    pub key: Vec<u8>,
    pub id: u64,
}

/// A directory every resolution starts from and never leaves.
#[derive(Debug)]
pub struct Root {
    /// `O_PATH | O_DIRECTORY`.
    fd: OwnedFd,
    /// Where the root really is (the kernel's name for the fd), normalised.
    path: Vec<u8>,
    /// The path as given, absolute and normalised: operands may be written
    /// below either.
    given: Vec<u8>,
}

impl Root {
    /// Opens `path` (a directory; symlinks in it are followed, as for any
    /// path the administrator types) and checks that the kernel can do the
    /// rest.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let raw = path.as_os_str().as_bytes();
        let absolute = std::path::absolute(path).map_err(|error| Error::Io {
            path: raw.to_vec(),
            error,
        })?;
        let given = key::normalise(absolute.as_os_str().as_bytes());
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rfs::openat(CWD, given.as_slice(), flags, Mode::empty())
            .map_err(|errno| Error::io(raw, errno))?;
        if rfs::statat(CWD, "/proc/self/fd", rfs::AtFlags::empty()).is_err() {
            return Err(Error::ProcUnavailable);
        }
        // The kernel features everything below depends on.
        match rfs::openat2(&fd, ".", flags, Mode::empty(), RESOLVE) {
            Ok(_) => {}
            Err(Errno::NOSYS) => {
                return Err(Error::Unsupported {
                    what: "openat2",
                    version: "5.6",
                })
            }
            Err(errno) => return Err(Error::io(raw, errno)),
        }
        match rfs::statx(&fd, c"", rfs::AtFlags::EMPTY_PATH, StatxFlags::MNT_ID) {
            Ok(stx) if stx.stx_mask & StatxFlags::MNT_ID.bits() != 0 => {}
            Ok(_) | Err(Errno::NOSYS) => {
                return Err(Error::Unsupported {
                    what: "statx with STATX_MNT_ID",
                    version: "5.8",
                })
            }
            Err(errno) => return Err(Error::io(raw, errno)),
        }
        let real = rfs::readlinkat(CWD, entry::proc_path(fd.as_fd()).as_c_str(), Vec::new())
            .map_err(|errno| Error::io(raw, errno))?;
        let real = real.as_bytes();
        // A removed root reads "/x (deleted)"; keep the given path then.
        let path = if real.starts_with(b"/")
            && rfs::statat(CWD, real, rfs::AtFlags::SYMLINK_NOFOLLOW).is_ok()
        {
            key::normalise(real)
        } else {
            given.clone()
        };
        Ok(Self { fd, path, given })
    }

    /// The root's real location (`/` for the host).
    pub fn path(&self) -> &[u8] {
        &self.path
    }

    /// The key of `path` below the root: `/` for the root, `/var/lib` for
    /// `ROOT/var/lib`. `path` may be relative (to the working directory) and
    /// may start with the root as given or as it really is. Lexical only.
    pub fn key(&self, path: &Path) -> Result<Vec<u8>, Error> {
        let raw = path.as_os_str().as_bytes();
        let absolute = std::path::absolute(path).map_err(|error| Error::Io {
            path: raw.to_vec(),
            error,
        })?;
        let normal = key::normalise(absolute.as_os_str().as_bytes());
        key::below(&normal, &self.given)
            .or_else(|| key::below(&normal, &self.path))
            .ok_or_else(|| Error::OutsideRoot {
                path: raw.to_vec(),
                root: self.path.clone(),
            })
    }

    /// The path of `key` on this machine, for messages: the root's real
    /// location joined with the key.
    pub fn display(&self, key: &[u8]) -> Vec<u8> {
        if self.path == b"/" {
            return key.to_vec();
        }
        let mut path = self.path.clone();
        if key != b"/" {
            path.extend_from_slice(key);
        }
        path
    }

    /// The directory at `key` (which must not cross a symlink, including at
    /// its last component), as an `O_PATH | O_DIRECTORY` fd.
    pub fn open_dir_beneath(&self, key: &[u8]) -> Result<OwnedFd, Error> {
        self.beneath(key)
            .map_err(|errno| self.error(key, key, errno))
    }

    /// The object at `key`: its parent resolved beneath the root without
    /// following any symlink, then the last component opened `O_PATH |
    /// O_NOFOLLOW` (a symlink there is the object).
    pub fn resolve(&self, key: &[u8]) -> Result<Entry, Error> {
        let Some((parent, name)) = split(key) else {
            // The root itself.
            let flags = OFlags::PATH | OFlags::CLOEXEC;
            return rfs::openat(&self.fd, c".", flags, Mode::empty())
                .and_then(Entry::from_fd)
                .map_err(|errno| self.error(key, key, errno));
        };
        let parent_fd = self
            .beneath(parent)
            .map_err(|errno| self.error(key, parent, errno))?;
        let name = CString::new(name).map_err(|_| self.error(key, key, Errno::INVAL))?;
        Entry::open_at(&parent_fd, &name).map_err(|errno| self.error(key, key, errno))
    }

    /// Creates the directory `key` (its parent must exist and be reached
    /// without symlinks) with `mode` (less the umask) and returns it. An
    /// existing object of any kind at `key` is an `EEXIST` error naming it:
    /// nothing in the way is ever replaced or followed.
    pub fn create_dir(&self, key: &[u8], mode: u32) -> Result<Entry, Error> {
        let display = || self.display(key);
        let Some((parent, name)) = split(key) else {
            return Err(Error::io(&display(), Errno::EXIST));
        };
        let parent = self
            .beneath(parent)
            .map_err(|errno| self.error(key, parent, errno))?;
        let name = CString::new(name).map_err(|_| Error::io(&display(), Errno::INVAL))?;
        rfs::mkdirat(&parent, name.as_c_str(), Mode::from_raw_mode(mode))
            .map_err(|errno| Error::io(&display(), errno))?;
        let entry = Entry::open_at(&parent, &name).map_err(|errno| Error::io(&display(), errno))?;
        if entry.kind() != FileType::Directory {
            // Replaced between the mkdir and the open.
            return Err(Error::io(&display(), Errno::NOTDIR));
        }
        Ok(entry)
    }

    /// Writes `bytes` as the file `key` with `mode` through
    /// [`replace_file`], making the missing directories on the way (0755).
    /// A symlink or non-directory on the way, or a directory at `key`, is
    /// [`Error::InTheWay`].
    pub fn write_file(&self, key: &[u8], bytes: &[u8], mode: u32) -> Result<(), Error> {
        let (dir, name) = self.parent_made(key)?;
        replace_file(&dir, &name, bytes, mode).map_err(|error| self.write_error(key, error))
    }

    /// Makes `key` a symlink to `target` through [`replace_symlink`], as
    /// [`Root::write_file`] writes a file.
    pub fn write_symlink(&self, key: &[u8], target: &[u8]) -> Result<(), Error> {
        let (dir, name) = self.parent_made(key)?;
        let target =
            CString::new(target).map_err(|_| Error::io(&self.display(key), Errno::INVAL))?;
        replace_symlink(&dir, &name, &target).map_err(|error| self.write_error(key, error))
    }

    fn write_error(&self, key: &[u8], error: io::Error) -> Error {
        if error.raw_os_error() == Some(Errno::ISDIR.raw_os_error()) {
            return Error::InTheWay {
                path: self.display(key),
                what: Obstacle::Directory,
            };
        }
        Error::Io {
            path: self.display(key),
            error,
        }
    }

    /// `key`'s parent directory, made (0755) where missing, and `key`'s
    /// last name.
    fn parent_made(&self, key: &[u8]) -> Result<(OwnedFd, CString), Error> {
        let Some((parent, name)) = split(key) else {
            return Err(Error::io(&self.display(key), Errno::ISDIR));
        };
        let mut walked = Vec::new();
        for component in components(parent) {
            walked.push(b'/');
            walked.extend_from_slice(component);
            let in_the_way = |what| Error::InTheWay {
                path: self.display(&walked),
                what,
            };
            match self.resolve(&walked) {
                Ok(entry) => match entry.kind() {
                    FileType::Directory => {}
                    FileType::Symlink => return Err(in_the_way(Obstacle::Symlink)),
                    _ => return Err(in_the_way(Obstacle::NonDirectory)),
                },
                Err(Error::Io { error, .. }) if error.kind() == io::ErrorKind::NotFound => {
                    self.create_dir(&walked, 0o755)?;
                }
                Err(error) => return Err(error),
            }
        }
        let dir = self.open_dir_beneath(parent)?;
        let name = CString::new(name).map_err(|_| Error::io(&self.display(key), Errno::INVAL))?;
        Ok((dir, name))
    }

    /// The regular file at `key`, read whole (at most `limit` bytes, else
    /// `EFBIG`). Resolved like [`Root::resolve`]; the object is checked to
    /// be a regular file on its `O_PATH` fd before that very inode is
    /// opened for reading, so a FIFO or device put there is never opened.
    pub fn read_file(&self, key: &[u8], limit: u64) -> Result<Vec<u8>, Error> {
        use std::io::Read;
        let display = || self.display(key);
        let entry = self.resolve(key)?;
        if entry.kind() != FileType::RegularFile {
            let errno = match entry.kind() {
                FileType::Directory => Errno::ISDIR,
                FileType::Symlink => Errno::LOOP,
                _ => Errno::INVAL,
            };
            return Err(Error::io(&display(), errno));
        }
        let flags = OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rfs::openat(
            CWD,
            entry::proc_path(entry.fd()).as_c_str(),
            flags,
            Mode::empty(),
        )
        .map_err(|errno| Error::io(&display(), errno))?;
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|error| Error::Io {
                path: display(),
                error,
            })?;
        if bytes.len() as u64 > limit {
            return Err(Error::io(&display(), Errno::FBIG));
        }
        Ok(bytes)
    }

    /// The keys of the mount points strictly below `key` (bind mounts of
    /// the same filesystem included), from the mount table: what a
    /// command that must not cross a mount refuses before it starts. The
    /// walks check mount ids as well, for mounts made meanwhile.
    pub fn mounts_below(&self, key: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
        let table = MountTable::read()?;
        let at = self.display(key);
        let mut below: Vec<Vec<u8>> = table
            .iter()
            .map(|mount| &mount.point)
            .filter(|point| point.as_slice() != at.as_slice() && key::is_at_or_below(point, &at))
            .filter_map(|point| key::below(point, &self.path))
            .collect();
        below.sort();
        below.dedup();
        Ok(below)
    }

    /// The directory at `key` (no symlink on the way, the last component
    /// included), reached one component at a time from the root, with
    /// every mount point entered on the way: what a command checks before
    /// it acts on a directory another mount may have been placed on. The
    /// mounts are those the opened fds are on, so a mount placed or
    /// removed meanwhile cannot be told apart from the one entered.
    pub fn reach_dir(&self, key: &[u8]) -> Result<Reached, Error> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut fd = rfs::openat(&self.fd, c".", flags, Mode::empty())
            .map_err(|errno| self.error(key, b"/", errno))?;
        let mut meta = Meta::of(fd.as_fd()).map_err(|errno| self.error(key, b"/", errno))?;
        let mut mounts = Vec::new();
        let mut walked = Vec::new();
        for component in components(key) {
            walked.push(b'/');
            walked.extend_from_slice(component);
            let name =
                CString::new(component).map_err(|_| self.error(key, &walked, Errno::INVAL))?;
            let next = open_dir_beneath(&fd, &name, Crossing::Mounts)
                .map_err(|errno| self.error(key, &walked, errno))?;
            let next_meta =
                Meta::of(next.as_fd()).map_err(|errno| self.error(key, &walked, errno))?;
            if next_meta.mount != meta.mount {
                mounts.push(MountAt {
                    key: walked.clone(),
                    id: next_meta.mount,
                });
            }
            fd = next;
            meta = next_meta;
        }
        Ok(Reached { fd, meta, mounts })
    }

    /// Holds an exclusive `flock` on the root directory until the returned
    /// fd is dropped, so two runs of the commands that change a tree
    /// (`apply`, `prune`, `rm`) never interleave. Waits for the other run.
    pub fn lock(&self) -> Result<OwnedFd, Error> {
        let fd = reopen_dir(self.fd.as_fd()).map_err(|errno| Error::io(&self.path, errno))?;
        rfs::flock(&fd, rfs::FlockOperation::LockExclusive)
            .map_err(|errno| Error::io(&self.path, errno))?;
        Ok(fd)
    }

    /// `openat2` of the directory `key` below the root.
    fn beneath(&self, key: &[u8]) -> rustix::io::Result<OwnedFd> {
        let path = CString::new(relative(key)).map_err(|_| Errno::INVAL)?;
        open_dir_beneath(&self.fd, &path, Crossing::Mounts)
    }

    /// The error for `key` when resolving `walked` (`key` or a directory
    /// on its way) failed with `errno`.
    fn error(&self, key: &[u8], walked: &[u8], errno: Errno) -> Error {
        if errno != Errno::LOOP {
            return Error::io(&self.display(key), errno);
        }
        Error::Symlink {
            path: self.display(key),
            symlink: self.first_symlink(walked).map(|at| self.display(&at)),
        }
    }

    /// The first symlink on the way to `key` (included), for an `ELOOP`
    /// from `openat2`. A diagnostic only: it walks again, so under a
    /// concurrent change it may find none.
    fn first_symlink(&self, key: &[u8]) -> Option<Vec<u8>> {
        let flags = OFlags::PATH | OFlags::CLOEXEC;
        let mut dir = rfs::openat(&self.fd, c".", flags, Mode::empty()).ok()?;
        let mut walked = Vec::new();
        for component in components(key) {
            walked.push(b'/');
            walked.extend_from_slice(component);
            let entry = Entry::open_at(&dir, &CString::new(component).ok()?).ok()?;
            match entry.kind() {
                FileType::Symlink => return Some(walked),
                FileType::Directory => dir = entry.into_fd(),
                _ => return None,
            }
        }
        None
    }
}

/// Raises the soft limit on open files to the hard limit. Walks hold an fd
/// per directory on their frontier (and per level of a deep tree), which
/// the default soft limit of 1024 does not cover. Best effort: a walk
/// reports `EMFILE` per object if this fails.
pub fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// A key without its leading `/` (`.` for the root), as `openat2` wants it
/// relative to the root's fd.
fn relative(key: &[u8]) -> &[u8] {
    let rest = key.strip_prefix(b"/").unwrap_or(key);
    if rest.is_empty() {
        b"."
    } else {
        rest
    }
}

/// `(parent key, last component)`; `None` for the root.
fn split(key: &[u8]) -> Option<(&[u8], &[u8])> {
    let slash = key.iter().rposition(|&byte| byte == b'/')?;
    let name = &key[slash + 1..];
    if name.is_empty() {
        return None;
    }
    Some((if slash == 0 { b"/" } else { &key[..slash] }, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_into_parent_and_name() {
        assert_eq!(split(b"/"), None);
        assert_eq!(split(b"/var"), Some((&b"/"[..], &b"var"[..])));
        assert_eq!(split(b"/var/lib"), Some((&b"/var"[..], &b"lib"[..])));
        assert_eq!(relative(b"/"), b".");
        assert_eq!(relative(b"/var/lib"), b"var/lib");
    }
}
