//! The parallel walk: one rayon task per directory, objects handled through
//! file descriptors relative to their parent directory.

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, RawDir, Stat, XattrFlags, CWD};
use rustix::io::Errno;

use super::hardlinks::{Claim, HardLinks};
use super::label::{decide, stored_context, Decision};
use super::{
    Change, HardLinkConflict, LabelLookup, MountPolicy, ObjectError, Observer, Operation,
    RelabelError, RelabelOptions, Summary, WriteMode, XATTR_NAME,
};
use crate::fcontext::{entry_key, FileKind};

/// Bytes read per `getdents` call.
const DIRENT_BUFFER: usize = 32 * 1024;
/// Most contexts fit; longer ones are read into a heap buffer.
const INLINE_LABEL: usize = 256;

/// Relabels every object at and below `paths` (see the module docs).
///
/// Fails before touching anything if an operand is missing or outside the
/// alternate root; later failures are per object and only counted in the
/// returned [`Summary`] (and reported to `observer`).
pub fn relabel<L: LabelLookup + ?Sized>(
    labels: &L,
    paths: &[PathBuf],
    options: &RelabelOptions,
    observer: &dyn Observer,
) -> Result<Summary, RelabelError> {
    let started = Instant::now();
    if paths.is_empty() {
        return Err(RelabelError::NoPaths);
    }
    if rfs::statat(CWD, "/proc/self/fd", AtFlags::empty()).is_err() {
        return Err(RelabelError::ProcUnavailable);
    }
    let alternate_root = match &options.alternate_root {
        Some(root) => Some(canonical_root(root)?),
        None => None,
    };
    let excludes = options
        .excludes
        .iter()
        .map(|path| canonical_exclude(path))
        .collect::<Result<Vec<_>, _>>()?;
    let operands = paths
        .iter()
        .map(|path| Operand::resolve(path, alternate_root.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;

    let mut pool = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("relabel-{i}"));
    if let Some(jobs) = options.jobs {
        pool = pool.num_threads(jobs.get());
    }
    let pool = pool.build()?;

    let walker = Walker {
        labels,
        options,
        alternate_root: alternate_root.unwrap_or_default(),
        excludes,
        observer,
        hard_links: HardLinks::default(),
        totals: Totals::default(),
    };
    pool.scope(|scope| {
        for operand in operands {
            walker.start(scope, operand);
        }
    });
    let mut summary = walker.totals.snapshot();
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// A validated command-line path: absolute, its parent canonical.
struct Operand {
    path: Vec<u8>,
    stat: Stat,
}

impl Operand {
    /// Canonicalises the parent directory and keeps the last component, so a
    /// symlink operand is labelled itself (like setfiles), while the lookup
    /// sees the real location.
    fn resolve(path: &Path, alternate_root: Option<&[u8]>) -> Result<Self, RelabelError> {
        let operand_error = |error: io::Error| RelabelError::Operand {
            path: path.as_os_str().as_bytes().to_vec(),
            error,
        };
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().map_err(operand_error)?.join(path)
        };
        let canonical = match (absolute.parent(), absolute.file_name()) {
            (Some(parent), Some(name)) => {
                let mut real = parent.canonicalize().map_err(operand_error)?;
                real.push(name);
                real
            }
            // `/`, or a path ending in `.` or `..`.
            _ => absolute.canonicalize().map_err(operand_error)?,
        };
        let path = canonical.into_os_string().into_vec();
        if let Some(root) = alternate_root {
            if !is_at_or_below(&path, root) {
                return Err(RelabelError::OutsideRoot {
                    path,
                    root: root.to_vec(),
                });
            }
        }
        let stat = rfs::statat(CWD, path.as_slice(), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|errno| operand_error(errno.into()))?;
        Ok(Self { path, stat })
    }
}

fn canonical_root(root: &Path) -> Result<Vec<u8>, RelabelError> {
    if !root.is_absolute() {
        return Err(RelabelError::RelativePath {
            path: root.as_os_str().as_bytes().to_vec(),
        });
    }
    let real = root.canonicalize().map_err(|error| RelabelError::Operand {
        path: root.as_os_str().as_bytes().to_vec(),
        error,
    })?;
    if !real.is_dir() {
        return Err(RelabelError::Operand {
            path: root.as_os_str().as_bytes().to_vec(),
            error: io::Error::from(io::ErrorKind::NotADirectory),
        });
    }
    let real = real.into_os_string().into_vec();
    // `/` as the alternate root strips nothing.
    Ok(if real == b"/" { Vec::new() } else { real })
}

/// Excludes need not exist; when they do, symlinks in them are resolved so
/// they compare equal to the walk's canonical paths.
fn canonical_exclude(path: &Path) -> Result<Vec<u8>, RelabelError> {
    if !path.is_absolute() {
        return Err(RelabelError::RelativePath {
            path: path.as_os_str().as_bytes().to_vec(),
        });
    }
    if let Ok(real) = path.canonicalize() {
        return Ok(real.into_os_string().into_vec());
    }
    let mut normal = Vec::new();
    for component in path.as_os_str().as_bytes().split(|&b| b == b'/') {
        if !component.is_empty() {
            normal.push(b'/');
            normal.extend_from_slice(component);
        }
    }
    if normal.is_empty() {
        normal.push(b'/');
    }
    Ok(normal)
}

/// `path` equals `ancestor` or lies below it (`ancestor` has no trailing `/`,
/// except the root itself).
fn is_at_or_below(path: &[u8], ancestor: &[u8]) -> bool {
    if ancestor == b"/" {
        return path.starts_with(b"/");
    }
    path.strip_prefix(ancestor)
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

/// An open directory whose entries are being, or will be, visited.
struct OpenDir<D> {
    fd: OwnedFd,
    path: Box<[u8]>,
    /// The device objects below must be on (unless crossing mounts).
    device: u64,
    /// Some exclude lies strictly below this directory.
    excludes_below: bool,
    /// What the label lookups of its entries share.
    labels: D,
}

/// A subdirectory still to visit. Holding the parent keeps its fd open until
/// every child has been opened.
struct DirJob<D> {
    parent: Arc<OpenDir<D>>,
    name: CString,
}

type Dir<'a, L> = OpenDir<<L as LabelLookup>::Directory<'a>>;

/// The xattr handle of an object.
#[derive(Clone, Copy)]
enum Target<'fd> {
    /// A directory or regular file opened for reading: `f*xattr` calls.
    Fd(BorrowedFd<'fd>),
    /// An `O_PATH` fd: path calls through `/proc/self/fd/N`.
    OPath(BorrowedFd<'fd>),
}

impl Target<'_> {
    fn proc_path(fd: BorrowedFd<'_>) -> CString {
        // The digits of an fd never contain NUL.
        CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default()
    }

    fn read(self, buffer: &mut [u8]) -> rustix::io::Result<usize> {
        match self {
            Target::Fd(fd) => rfs::fgetxattr(fd, XATTR_NAME, buffer),
            Target::OPath(fd) => rfs::getxattr(Self::proc_path(fd).as_c_str(), XATTR_NAME, buffer),
        }
    }

    fn size(self) -> rustix::io::Result<usize> {
        match self {
            Target::Fd(fd) => rfs::fgetxattr_query(fd, XATTR_NAME),
            Target::OPath(fd) => rfs::getxattr_query(Self::proc_path(fd).as_c_str(), XATTR_NAME),
        }
    }

    fn write(self, value: &[u8]) -> rustix::io::Result<()> {
        match self {
            Target::Fd(fd) => rfs::fsetxattr(fd, XATTR_NAME, value, XattrFlags::empty()),
            Target::OPath(fd) => rfs::setxattr(
                Self::proc_path(fd).as_c_str(),
                XATTR_NAME,
                value,
                XattrFlags::empty(),
            ),
        }
    }

    /// The stored value, `None` if there is none. Uses `inline` when it fits.
    fn read_label<'b>(
        self,
        inline: &'b mut [u8; INLINE_LABEL],
        heap: &'b mut Vec<u8>,
    ) -> rustix::io::Result<Option<&'b [u8]>> {
        match self.read(inline) {
            Ok(len) => return Ok(Some(&inline[..len])),
            Err(Errno::NODATA) => return Ok(None),
            Err(Errno::RANGE) => {}
            Err(errno) => return Err(errno),
        }
        // Longer than the inline buffer; it may change between the calls.
        loop {
            let size = match self.size() {
                Ok(size) => size,
                Err(Errno::NODATA) => return Ok(None),
                Err(errno) => return Err(errno),
            };
            heap.resize(size, 0);
            match self.read(heap) {
                Ok(len) => return Ok(Some(&heap[..len])),
                Err(Errno::NODATA) => return Ok(None),
                Err(Errno::RANGE) => continue,
                Err(errno) => return Err(errno),
            }
        }
    }
}

/// Whether the walk may go below an object.
#[derive(PartialEq, Eq)]
enum Descend {
    Yes,
    /// The filesystem cannot hold labels: nothing below can be labelled
    /// either (already reported once, here).
    No,
}

/// Per-task counts, merged into [`Totals`] once per directory.
#[derive(Default)]
struct Tally {
    examined: u64,
    relabelled: u64,
    unchanged: u64,
    no_label: u64,
    hard_link_conflicts: u64,
    errors: u64,
    vanished: u64,
    mounts_skipped: u64,
    excluded: u64,
}

#[derive(Default)]
struct Totals {
    examined: AtomicU64,
    relabelled: AtomicU64,
    unchanged: AtomicU64,
    no_label: AtomicU64,
    hard_link_conflicts: AtomicU64,
    errors: AtomicU64,
    vanished: AtomicU64,
    mounts_skipped: AtomicU64,
    excluded: AtomicU64,
}

impl Totals {
    fn add(&self, tally: &Tally) {
        let pairs = [
            (&self.examined, tally.examined),
            (&self.relabelled, tally.relabelled),
            (&self.unchanged, tally.unchanged),
            (&self.no_label, tally.no_label),
            (&self.hard_link_conflicts, tally.hard_link_conflicts),
            (&self.errors, tally.errors),
            (&self.vanished, tally.vanished),
            (&self.mounts_skipped, tally.mounts_skipped),
            (&self.excluded, tally.excluded),
        ];
        for (total, count) in pairs {
            if count != 0 {
                total.fetch_add(count, Ordering::Relaxed);
            }
        }
    }

    fn snapshot(&self) -> Summary {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Summary {
            examined: get(&self.examined),
            relabelled: get(&self.relabelled),
            unchanged: get(&self.unchanged),
            no_label: get(&self.no_label),
            hard_link_conflicts: get(&self.hard_link_conflicts),
            errors: get(&self.errors),
            vanished: get(&self.vanished),
            mounts_skipped: get(&self.mounts_skipped),
            excluded: get(&self.excluded),
            seconds: 0.0,
        }
    }
}

struct Walker<'a, L: ?Sized> {
    labels: &'a L,
    options: &'a RelabelOptions,
    /// Canonical, no trailing `/`; empty when there is none.
    alternate_root: Vec<u8>,
    excludes: Vec<Vec<u8>>,
    observer: &'a dyn Observer,
    hard_links: HardLinks,
    totals: Totals,
}

impl<'a, L: LabelLookup + ?Sized> Walker<'a, L> {
    fn start<'s>(&'s self, scope: &rayon::Scope<'s>, operand: Operand) {
        let mut tally = Tally::default();
        let Operand { path, stat } = operand;
        if self.excludes.iter().any(|e| is_at_or_below(&path, e)) {
            tally.excluded += 1;
        } else if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match rfs::openat(CWD, path.as_slice(), flags, Mode::empty()) {
                Ok(fd) => {
                    let key = self.lookup_path(&path);
                    let expected = self.labels.expected_label(key, FileKind::Dir);
                    let labels = self.labels.directory(key);
                    let entered = Entered {
                        fd,
                        path,
                        device: None,
                        expected,
                        labels,
                    };
                    self.enter_dir(scope, entered, &mut tally);
                }
                Err(errno) => self.fail(&path, Operation::Open, errno, &mut tally),
            }
        } else {
            self.start_non_directory(scope, path, stat, &mut tally);
        }
        self.finish(tally);
    }

    /// A file operand is visited as an entry of its (canonical) parent.
    fn start_non_directory<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        path: Vec<u8>,
        stat: Stat,
        tally: &mut Tally,
    ) {
        let split = path.iter().rposition(|&b| b == b'/').unwrap_or(0);
        let parent_path: &[u8] = if split == 0 { b"/" } else { &path[..split] };
        let Ok(name) = CString::new(&path[split + 1..]) else {
            return;
        };
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let parent_fd = match rfs::openat(CWD, parent_path, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(errno) => return self.fail(parent_path, Operation::Open, errno, tally),
        };
        let parent = Arc::new(OpenDir {
            fd: parent_fd,
            path: parent_path.into(),
            device: stat.st_dev,
            excludes_below: false,
            // The operand is strictly below the alternate root (which is a
            // directory), so its parent is at or below it.
            labels: self.labels.directory(self.lookup_path(parent_path)),
        });
        if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile {
            self.visit_file(scope, &parent, &name, &path, tally);
        } else {
            self.visit_other(scope, &parent, &name, &path, tally);
        }
    }

    fn visit_dir<'s>(&'s self, scope: &rayon::Scope<'s>, job: DirJob<L::Directory<'a>>) {
        let mut tally = Tally::default();
        let DirJob { parent, name } = job;
        let path = entry_key(&parent.path, name.as_bytes());
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rfs::openat(&parent.fd, name.as_c_str(), flags, Mode::empty()) {
            Ok(fd) => {
                let name = name.as_bytes();
                let entered = Entered {
                    fd,
                    path,
                    device: Some(parent.device),
                    expected: self.labels.entry_label(&parent.labels, name, FileKind::Dir),
                    labels: self.labels.subdirectory(&parent.labels, name),
                };
                drop(parent);
                self.enter_dir(scope, entered, &mut tally);
            }
            Err(Errno::NOENT) => tally.vanished += 1,
            // Replaced by a non-directory since it was listed.
            Err(Errno::NOTDIR | Errno::LOOP) => {
                self.visit_other(scope, &parent, &name, &path, &mut tally)
            }
            // Still label it, through an O_PATH fd, then say why its
            // contents were not visited.
            Err(errno @ (Errno::ACCESS | Errno::PERM)) => {
                self.label_unlistable_dir(&parent, &name, &path, &mut tally);
                self.fail(&path, Operation::ReadDirectory, errno, &mut tally);
            }
            Err(errno) => self.fail(&path, Operation::Open, errno, &mut tally),
        }
        self.finish(tally);
    }

    /// Labels an opened directory and lists it.
    fn enter_dir<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        entered: Entered<'a, L>,
        tally: &mut Tally,
    ) {
        let Entered {
            fd,
            path,
            device,
            expected,
            labels,
        } = entered;
        let stat = match rfs::fstat(&fd) {
            Ok(stat) => stat,
            Err(errno) => return self.fail(&path, Operation::Stat, errno, tally),
        };
        if self.leaves_filesystem(device, &stat) {
            tally.mounts_skipped += 1;
            return;
        }
        let target = Target::Fd(fd.as_fd());
        if self.label(target, &path, &stat, |_| expected, tally) == Descend::No {
            return;
        }
        let excludes_below = self
            .excludes
            .iter()
            .any(|e| e.len() > path.len() && is_at_or_below(e, &path));
        let dir = Arc::new(OpenDir {
            fd,
            path: path.into_boxed_slice(),
            device: stat.st_dev,
            excludes_below,
            labels,
        });
        self.list(scope, &dir, tally);
    }

    fn list<'s>(&'s self, scope: &rayon::Scope<'s>, dir: &Arc<Dir<'a, L>>, tally: &mut Tally) {
        let mut buffer = Vec::with_capacity(DIRENT_BUFFER);
        let mut entries = RawDir::new(dir.fd.as_fd(), buffer.spare_capacity_mut());
        let mut child = dir.path.to_vec();
        let base = child.len();
        while let Some(entry) = entries.next() {
            let entry = match entry {
                Ok(entry) => entry,
                Err(errno) => return self.fail(&dir.path, Operation::ReadDirectory, errno, tally),
            };
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            child.truncate(base);
            if base != 1 {
                child.push(b'/');
            }
            child.extend_from_slice(name.to_bytes());
            if dir.excludes_below && self.excludes.contains(&child) {
                tally.excluded += 1;
                continue;
            }
            match entry.file_type() {
                FileType::Directory => self.spawn_dir(scope, dir, name),
                FileType::RegularFile => self.visit_file(scope, dir, name, &child, tally),
                _ => self.visit_other(scope, dir, name, &child, tally),
            }
        }
    }

    fn spawn_dir<'s>(&'s self, scope: &rayon::Scope<'s>, parent: &Arc<Dir<'a, L>>, name: &CStr) {
        let job = DirJob {
            parent: Arc::clone(parent),
            name: name.to_owned(),
        };
        scope.spawn(move |scope| self.visit_dir(scope, job));
    }

    /// A regular file (per `d_type`): opened for reading so the stat and the
    /// xattr calls need no path lookup.
    fn visit_file<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        dir: &Arc<Dir<'a, L>>,
        name: &CStr,
        path: &[u8],
        tally: &mut Tally,
    ) {
        // NONBLOCK and NOCTTY: harmless if the name was swapped for a FIFO or
        // a terminal since it was listed.
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = match rfs::openat(&dir.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return tally.vanished += 1,
            // Now a symlink, unreadable, leased...: label it without opening.
            Err(_) => return self.visit_other(scope, dir, name, path, tally),
        };
        let stat = match rfs::fstat(&fd) {
            Ok(stat) => stat,
            Err(errno) => return self.fail(path, Operation::Stat, errno, tally),
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => self.spawn_dir(scope, dir, name),
            _ => self.label_entry(dir, name, Target::Fd(fd.as_fd()), path, &stat, tally),
        }
    }

    /// Anything that must not be opened for I/O: symlinks, devices, FIFOs,
    /// sockets, unknown `d_type`s, and fallbacks.
    fn visit_other<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        dir: &Arc<Dir<'a, L>>,
        name: &CStr,
        path: &[u8],
        tally: &mut Tally,
    ) {
        let Some((fd, stat)) = self.open_path(dir, name, path, tally) else {
            return;
        };
        match FileType::from_raw_mode(stat.st_mode) {
            // Listed with an unknown type, or replaced since.
            FileType::Directory => self.spawn_dir(scope, dir, name),
            _ => self.label_entry(dir, name, Target::OPath(fd.as_fd()), path, &stat, tally),
        }
    }

    /// Labels a directory that cannot be opened for reading, without
    /// visiting its contents.
    fn label_unlistable_dir(&self, dir: &Dir<'a, L>, name: &CStr, path: &[u8], tally: &mut Tally) {
        let Some((fd, stat)) = self.open_path(dir, name, path, tally) else {
            return;
        };
        self.label_entry(dir, name, Target::OPath(fd.as_fd()), path, &stat, tally);
    }

    /// Labels entry `name` of `dir` (already opened and stat'ed, not to be
    /// descended into) unless it is on another filesystem.
    fn label_entry(
        &self,
        dir: &Dir<'a, L>,
        name: &CStr,
        target: Target<'_>,
        path: &[u8],
        stat: &Stat,
        tally: &mut Tally,
    ) {
        if self.leaves_filesystem(Some(dir.device), stat) {
            tally.mounts_skipped += 1;
        } else {
            let expected = |kind| self.labels.entry_label(&dir.labels, name.to_bytes(), kind);
            self.label(target, path, stat, expected, tally);
        }
    }

    fn open_path(
        &self,
        dir: &Dir<'a, L>,
        name: &CStr,
        path: &[u8],
        tally: &mut Tally,
    ) -> Option<(OwnedFd, Stat)> {
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rfs::openat(&dir.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(errno) => {
                self.fail(path, Operation::Open, errno, tally);
                return None;
            }
        };
        match rfs::fstat(&fd) {
            Ok(stat) => Some((fd, stat)),
            Err(errno) => {
                self.fail(path, Operation::Stat, errno, tally);
                None
            }
        }
    }

    fn leaves_filesystem(&self, device: Option<u64>, stat: &Stat) -> bool {
        self.options.mounts == MountPolicy::SameFilesystem
            && device.is_some_and(|device| device != stat.st_dev)
    }

    /// The path the specs are matched against.
    fn lookup_path<'p>(&self, path: &'p [u8]) -> &'p [u8] {
        match path.get(self.alternate_root.len()..) {
            Some([]) => b"/",
            Some(rest) => rest,
            None => path,
        }
    }

    /// Looks up (with `expected`, given the object's kind), compares and
    /// (maybe) writes the label of one object.
    fn label(
        &self,
        target: Target<'_>,
        path: &[u8],
        stat: &Stat,
        expected: impl FnOnce(FileKind) -> Option<&'a str>,
        tally: &mut Tally,
    ) -> Descend {
        tally.examined += 1;
        let kind = file_kind(FileType::from_raw_mode(stat.st_mode));
        let Some(expected) = expected(kind) else {
            tally.no_label += 1;
            return Descend::Yes;
        };
        if kind != FileKind::Dir && stat.st_nlink > 1 {
            if let Claim::Conflict(kept) = self.hard_links.claim(stat.st_dev, stat.st_ino, expected)
            {
                tally.hard_link_conflicts += 1;
                self.observer.hard_link_conflict(&HardLinkConflict {
                    path,
                    wanted: expected,
                    kept: &kept,
                });
                return Descend::Yes;
            }
        }
        let mut inline = [0u8; INLINE_LABEL];
        let mut heap = Vec::new();
        let stored = match target.read_label(&mut inline, &mut heap) {
            Ok(raw) => raw.and_then(stored_context),
            Err(errno) => {
                self.fail(path, Operation::ReadLabel, errno, tally);
                return if errno == Errno::OPNOTSUPP {
                    Descend::No
                } else {
                    Descend::Yes
                };
            }
        };
        let value: Cow<'_, str> = match decide(stored, expected, self.options.scope) {
            Decision::Keep => {
                tally.unchanged += 1;
                return Descend::Yes;
            }
            Decision::Write(value) => value,
        };
        let written = self.options.write == WriteMode::Write;
        if written {
            let mut raw = Vec::with_capacity(value.len() + 1);
            raw.extend_from_slice(value.as_bytes());
            raw.push(0);
            if let Err(errno) = target.write(&raw) {
                self.fail(path, Operation::WriteLabel, errno, tally);
                return Descend::Yes;
            }
        }
        tally.relabelled += 1;
        self.observer.changed(&Change {
            path,
            kind,
            found: stored,
            expected: &value,
            written,
        });
        Descend::Yes
    }

    fn fail(&self, path: &[u8], operation: Operation, errno: Errno, tally: &mut Tally) {
        if errno == Errno::NOENT && operation != Operation::ReadDirectory {
            tally.vanished += 1;
            return;
        }
        tally.errors += 1;
        self.observer.failed(&ObjectError {
            path: path.to_vec(),
            operation,
            source: errno.into(),
        });
    }

    fn finish(&self, tally: Tally) {
        self.totals.add(&tally);
        if tally.examined != 0 {
            self.observer.progress(tally.examined);
        }
    }
}

/// A directory opened for the walk, before its own label is checked.
struct Entered<'a, L: LabelLookup + ?Sized + 'a> {
    fd: OwnedFd,
    path: Vec<u8>,
    /// The filesystem the walk is on (`None` for an operand, which defines it).
    device: Option<u64>,
    expected: Option<&'a str>,
    labels: L::Directory<'a>,
}

fn file_kind(file_type: FileType) -> FileKind {
    match file_type {
        FileType::Directory => FileKind::Dir,
        FileType::RegularFile => FileKind::File,
        FileType::Symlink => FileKind::Symlink,
        FileType::CharacterDevice => FileKind::CharDev,
        FileType::BlockDevice => FileKind::BlockDev,
        FileType::Fifo => FileKind::Fifo,
        FileType::Socket => FileKind::Socket,
        // fstat always reports a type; `Any` matches every spec.
        FileType::Unknown => FileKind::Any,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestry_respects_component_boundaries() {
        assert!(is_at_or_below(b"/var/lib", b"/var"));
        assert!(is_at_or_below(b"/var", b"/var"));
        assert!(!is_at_or_below(b"/variable", b"/var"));
        assert!(is_at_or_below(b"/anything", b"/"));
    }

    #[test]
    fn children_of_root_have_one_slash() {
        assert_eq!(entry_key(b"/", b"var"), b"/var");
        assert_eq!(entry_key(b"/var", b"log"), b"/var/log");
    }

    #[test]
    fn excludes_are_normalised_lexically_when_missing() {
        let got = canonical_exclude(Path::new("/nonexistent-semanifest//a/b/")).unwrap();
        assert_eq!(got, b"/nonexistent-semanifest/a/b");
    }
}
