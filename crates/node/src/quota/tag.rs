//! Tagging a subtree with a project ID, in parallel: one rayon task per
//! directory, as `delete` walks. Each object's project ID (and a
//! directory's inherit flag) is read first and written only when it
//! differs, so a tagged tree costs reads only.
//!
//! Per object, nothing is followed and nothing but a directory or a
//! checked regular file is ever opened:
//! - a subdirectory is opened for listing from its parent's fd with
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV)`:
//!   a symlink swapped in is `ELOOP` and a mount point `EXDEV` (not
//!   tagged, counted); its attributes go through that fd;
//! - every other object is first `statx`ed by name without following
//!   (its type, and its mount: a file bind-mounted from elsewhere is left
//!   alone); with `file_setattr(2)` (Linux 6.17) it is then tagged by
//!   name, whatever its type; without it, a regular file is opened
//!   `O_PATH | O_NOFOLLOW`, checked again on that fd, and reopened through
//!   `/proc/self/fd/N` for the ioctls, and symlinks, FIFOs, sockets and
//!   devices are counted as not tagged (only an open fd takes the ioctl,
//!   and they are never opened);
//! - nested capacity paths (`stops`) are left to their own walk.
//!
//! `SEMANIFEST_TAG_BY_FD=1` in the environment makes the walk take the
//! open-file path from the start, as on kernels before 6.17 (to compare
//! the two, or to step around a kernel's `file_setattr`).

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, RawDir, StatxFlags, CWD};
use rustix::io::Errno;

use super::sys::{self, Fsxattr, XFLAG_PROJINHERIT};
use crate::PathError;
use fsroot::{self, Crossing};
use selabel::path_chain::PathChain;

/// Bytes read per `getdents` call.
const DIRENT_BUFFER: usize = 32 * 1024;
/// Error messages kept; the rest are only counted.
const MESSAGE_LIMIT: u64 = 1000;

/// What one walk counted.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Objects examined, the top directory included.
    pub objects: u64,
    /// Objects whose project ID or inherit flag differed (and were set,
    /// when writing).
    pub tagged: u64,
    /// Objects this kernel cannot tag without opening them (symlinks,
    /// FIFOs, sockets, devices before Linux 6.17).
    pub untaggable: u64,
    /// Mount points below, not entered.
    pub mounts: u64,
    pub errors: Vec<PathError>,
    pub errors_total: u64,
}

struct Walk<'a> {
    project: u32,
    write: bool,
    /// `file_setattr(2)` works here (cleared at the first `ENOSYS`).
    by_name: AtomicBool,
    /// Paths (as shown) of nested capacities, not entered.
    stops: &'a [Vec<u8>],
    objects: AtomicU64,
    tagged: AtomicU64,
    untaggable: AtomicU64,
    mounts: AtomicU64,
    errors: Mutex<Vec<PathError>>,
    errors_total: AtomicU64,
}

/// Tags `dir` (opened for listing, shown as `path`) and everything below
/// it on its own mount with `project`; `stops` are shown paths not to
/// enter. Reads only unless `write`.
pub(crate) fn tag_tree(
    pool: &rayon::ThreadPool,
    dir: OwnedFd,
    path: &[u8],
    project: u32,
    write: bool,
    stops: &[Vec<u8>],
) -> Tally {
    let walk = Walk {
        project,
        write,
        by_name: AtomicBool::new(std::env::var_os("SEMANIFEST_TAG_BY_FD").is_none_or(|v| v != "1")),
        stops,
        objects: AtomicU64::new(0),
        tagged: AtomicU64::new(0),
        untaggable: AtomicU64::new(0),
        mounts: AtomicU64::new(0),
        errors: Mutex::new(Vec::new()),
        errors_total: AtomicU64::new(0),
    };
    let mount = match fsroot::Meta::of(dir.as_fd()) {
        Ok(meta) => meta.mount,
        Err(errno) => {
            walk.error(&PathChain::new(path), "stat", errno);
            return walk.finish();
        }
    };
    pool.scope(|scope| walk.directory(scope, dir, PathChain::new(path), mount));
    walk.finish()
}

impl Walk<'_> {
    fn finish(self) -> Tally {
        let mut errors = self
            .errors
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        errors.sort_by(|a, b| a.path.cmp(&b.path));
        Tally {
            objects: self.objects.into_inner(),
            tagged: self.tagged.into_inner(),
            untaggable: self.untaggable.into_inner(),
            mounts: self.mounts.into_inner(),
            errors,
            errors_total: self.errors_total.into_inner(),
        }
    }

    fn error(&self, path: &PathChain, doing: &str, errno: Errno) {
        if self.errors_total.fetch_add(1, Ordering::Relaxed) < MESSAGE_LIMIT {
            self.errors
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(PathError::errno(&path.to_vec(), doing, errno));
        }
    }

    /// The attributes `found` should have: the project, and the inherit
    /// flag on a directory. `None` when they already do.
    fn wanted(&self, found: Fsxattr, directory: bool) -> Option<Fsxattr> {
        let mut wanted = found;
        wanted.projid = self.project;
        if directory {
            wanted.xflags |= XFLAG_PROJINHERIT;
        }
        (wanted != found).then_some(wanted)
    }

    /// Tags one directory through its fd, lists it and tags its entries;
    /// subdirectories become tasks.
    fn directory<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        dir: OwnedFd,
        path: PathChain,
        mount: u64,
    ) {
        self.objects.fetch_add(1, Ordering::Relaxed);
        match sys::get_fsxattr(dir.as_fd()) {
            Ok(found) => {
                if let Some(wanted) = self.wanted(found, true) {
                    self.tagged.fetch_add(1, Ordering::Relaxed);
                    if self.write {
                        if let Err(errno) = sys::set_fsxattr(dir.as_fd(), wanted) {
                            self.error(&path, "set the project ID of", errno);
                        }
                    }
                }
            }
            Err(errno) => self.error(&path, "read the project ID of", errno),
        }
        let mut buffer = Vec::with_capacity(DIRENT_BUFFER);
        let mut entries = RawDir::new(dir.as_fd(), buffer.spare_capacity_mut());
        while let Some(entry) = entries.next() {
            let entry = match entry {
                Ok(entry) => entry,
                Err(errno) => {
                    self.error(&path, "list", errno);
                    break;
                }
            };
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            let child = path.child(name.to_bytes());
            if !self.stops.is_empty() && self.stops.iter().any(|stop| *stop == child.to_vec()) {
                continue;
            }
            if entry.file_type() == FileType::Directory {
                self.subdirectory(scope, dir.as_fd(), name, child, mount);
            } else {
                self.other(dir.as_fd(), name, &child, mount);
            }
        }
    }

    fn subdirectory<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        parent: BorrowedFd<'_>,
        name: &CStr,
        path: PathChain,
        mount: u64,
    ) {
        match fsroot::open_listing_beneath(parent, name, Crossing::NoMounts) {
            Ok(fd) => scope.spawn(move |scope| self.directory(scope, fd, path, mount)),
            Err(Errno::XDEV) => {
                self.objects.fetch_add(1, Ordering::Relaxed);
                self.mounts.fetch_add(1, Ordering::Relaxed);
            }
            // Swapped for a symlink or a file since it was listed: tag
            // what is there now.
            Err(Errno::LOOP | Errno::NOTDIR) => self.other(parent, name, &path, mount),
            Err(Errno::NOENT) => {}
            Err(errno) => {
                self.objects.fetch_add(1, Ordering::Relaxed);
                self.error(&path, "open", errno);
            }
        }
    }

    /// Anything but a directory.
    fn other(&self, dir: BorrowedFd<'_>, name: &CStr, path: &PathChain, mount: u64) {
        if self.by_name.load(Ordering::Relaxed) {
            match self.by_name(dir, name, path, mount) {
                Err(Errno::NOSYS) => self.by_name.store(false, Ordering::Relaxed),
                _ => return,
            }
        }
        match open_regular(dir, name, mount) {
            Ok(Opened::File(file)) => {
                self.objects.fetch_add(1, Ordering::Relaxed);
                match sys::get_fsxattr(file.as_fd()) {
                    Ok(found) => {
                        if let Some(wanted) = self.wanted(found, false) {
                            self.tagged.fetch_add(1, Ordering::Relaxed);
                            if self.write {
                                if let Err(errno) = sys::set_fsxattr(file.as_fd(), wanted) {
                                    self.error(path, "set the project ID of", errno);
                                }
                            }
                        }
                    }
                    Err(errno) => self.error(path, "read the project ID of", errno),
                }
            }
            Ok(Opened::OtherMount) => {
                self.objects.fetch_add(1, Ordering::Relaxed);
                self.mounts.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Opened::NotRegular) => {
                self.objects.fetch_add(1, Ordering::Relaxed);
                self.untaggable.fetch_add(1, Ordering::Relaxed);
            }
            Err(Errno::NOENT) => {}
            Err(errno) => {
                self.objects.fetch_add(1, Ordering::Relaxed);
                self.error(path, "open", errno);
            }
        }
    }

    /// [`Walk::other`] through `file_getattr`/`file_setattr`: a `statx`
    /// by name for the object's mount, then its attributes by name.
    /// `ENOSYS` (counting nothing) where the kernel lacks them.
    fn by_name(
        &self,
        dir: BorrowedFd<'_>,
        name: &CStr,
        path: &PathChain,
        mount: u64,
    ) -> rustix::io::Result<()> {
        let stat = match rfs::statx(
            dir,
            name,
            AtFlags::SYMLINK_NOFOLLOW,
            StatxFlags::TYPE | StatxFlags::MNT_ID,
        ) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => return Ok(()),
            Err(errno) => {
                self.objects.fetch_add(1, Ordering::Relaxed);
                self.error(path, "stat", errno);
                return Ok(());
            }
        };
        if stat.stx_mnt_id != mount {
            self.objects.fetch_add(1, Ordering::Relaxed);
            self.mounts.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let kind = FileType::from_raw_mode(stat.stx_mode.into());
        let found = match sys::get_by_name(dir, name) {
            Ok(found) => found,
            Err(Errno::NOSYS) => return Err(Errno::NOSYS),
            Err(Errno::NOENT) => return Ok(()),
            Err(errno) => {
                self.objects.fetch_add(1, Ordering::Relaxed);
                self.error(path, "read the project ID of", errno);
                return Ok(());
            }
        };
        self.objects.fetch_add(1, Ordering::Relaxed);
        if let Some(wanted) = self.wanted(found, kind == FileType::Directory) {
            self.tagged.fetch_add(1, Ordering::Relaxed);
            if self.write {
                if let Err(errno) = sys::set_by_name(dir, name, wanted) {
                    self.error(path, "set the project ID of", errno);
                }
            }
        }
        Ok(())
    }
}

/// What [`open_regular`] found at a name.
enum Opened {
    /// A regular file on the walk's mount, open for the ioctls.
    File(OwnedFd),
    /// Something bind-mounted there from elsewhere.
    OtherMount,
    /// A symlink, FIFO, socket or device: never opened.
    NotRegular,
}

/// Entry `name` of `dir` opened for the ioctls if it is a regular file on
/// `mount`: `O_PATH | O_NOFOLLOW` (which opens nothing), checked on that
/// fd, then that very inode reopened through `/proc/self/fd/N` (no
/// second lookup, so nothing swapped in is ever opened).
fn open_regular(dir: BorrowedFd<'_>, name: &CStr, mount: u64) -> rustix::io::Result<Opened> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let held = rfs::openat(dir, name, flags, Mode::empty())?;
    let meta = fsroot::Meta::of(held.as_fd())?;
    if meta.mount != mount {
        return Ok(Opened::OtherMount);
    }
    if meta.kind != FileType::RegularFile {
        return Ok(Opened::NotRegular);
    }
    let proc = CString::new(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&held)
    ))
    .map_err(|_| Errno::INVAL)?;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    rfs::openat(CWD, proc.as_c_str(), flags, Mode::empty()).map(Opened::File)
}
