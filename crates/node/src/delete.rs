//! Deleting everything inside an open directory, in parallel: what empties
//! a prune's trash, what `rm -r` runs, and what a prune on a full
//! filesystem deletes in place.
//!
//! One rayon task per directory. A task lists its directory (`getdents`),
//! unlinks the non-directories by name, and spawns a task per
//! subdirectory; a directory is removed (`unlinkat(AT_REMOVEDIR)` by name
//! in its parent) when its last child task finishes, and that in turn may
//! finish its parent. So no stack grows with the depth of the tree.
//!
//! **Descriptors are bounded, whatever the depth.** A directory whose
//! subtree is under way holds its fd until it is removed, so the tasks
//! take their fds from a budget set from `RLIMIT_NOFILE`. When it is
//! spent, a task deletes its subdirectory alone, depth first, keeping
//! open only the fds of the deepest [`WINDOW`] levels of its walk: a
//! level is listed whole when it is entered (the subdirectories still to
//! do are kept by name), so once its fd is closed it is needed again only
//! to open the next of them and to remove the child just finished, and
//! it is reopened then as that child's `..`, checked to be the same
//! directory (device, inode, mount). Any chain the filesystem holds goes
//! with a few fds per thread, in time linear in objects.
//!
//! Safety, per object:
//! - a subdirectory is opened with `openat2(RESOLVE_BENEATH |
//!   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)` from
//!   its parent's fd: a symlink swapped in is `ELOOP` (then the link
//!   itself is unlinked), a mount point `EXDEV` (refused, kept);
//! - everything else is removed by name in its already-open parent with
//!   `unlinkat`, which removes a symlink itself and refuses a mount point
//!   (`EBUSY`, refused, kept);
//! - with a [`Guard`], every object's label is read first (directories
//!   through their fd before they are listed, others by name) and an
//!   object with a protected type is kept;
//! - a directory that keeps anything is not removed, nor its ancestors;
//! - a level reopened as `..` that is not the directory it was (the
//!   subtree was moved meanwhile) stops that walk: what is left is kept;
//! - on a read-only filesystem the run stops at the first `EROFS`.
//!
//! Labels of non-directories are read by name in their open directory,
//! from the worker thread's own working directory
//! ([`fsroot::working_dir`]): one lookup of one name, never followed, and
//! no walk through `/proc`, which would cost more than the unlink itself.
//! A thread climbs out of a directory before removing it, and leaves for
//! `/` when a task is done, so no removed chain stays pinned by it.

use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rustix::fs::{self as rfs, AtFlags, FileType, RawDir, StatxFlags};
use rustix::io::Errno;

use super::{context_type, describe, read_label, PathError};
use fsroot::working_dir::{self, DirId};
use fsroot::{self, Crossing, Handle, Meta};
use selabel::path_chain::PathChain;

/// Bytes read per `getdents` call.
const DIRENT_BUFFER: usize = 32 * 1024;
/// Times an entry that keeps changing between directory and not is tried.
const MAX_ATTEMPTS: u32 = 8;
/// Messages kept per kind; the rest are only counted.
const MESSAGE_LIMIT: usize = 1000;
/// Levels whose fds a walk alone keeps open (the deepest ones).
const WINDOW: usize = 8;
/// Fds a thread may hold at once beyond the budget: its window, the
/// subdirectory being opened, a `..` being reopened, and slack.
const PER_THREAD: u64 = WINDOW as u64 + 4;
/// Fds left to the rest of the process (the root, the lock, the pruned
/// directory and its trash, standard streams, the thread pool's own).
const RESERVE: u64 = 64;

/// Types whose objects must never be deleted (the layout's protected
/// types), checked on every object's label.
#[derive(Debug, Default)]
pub(crate) struct Guard {
    pub protected: BTreeSet<String>,
}

impl Guard {
    /// Why the object with this stored label must be kept, if it must.
    pub(crate) fn refusal(&self, label: Option<&[u8]>) -> Option<String> {
        let label = label?;
        let type_name = std::str::from_utf8(context_type(label)?).ok()?;
        self.protected.contains(type_name).then(|| {
            format!(
                "labelled `{}`, a protected type: never removed",
                String::from_utf8_lossy(label)
            )
        })
    }

    /// The same guard without `type_name`: what a prune of a path of that
    /// type may remove (a protected path's own objects, when it is named).
    pub(crate) fn allowing(&self, type_name: &str) -> Guard {
        let mut protected = self.protected.clone();
        protected.remove(type_name);
        Guard { protected }
    }
}

/// How to delete.
pub(crate) struct DeleteOptions<'a> {
    /// Count what would go; change nothing.
    pub dry_run: bool,
    /// Add up the bytes freed (one `statx` per object).
    pub count_bytes: bool,
    pub guard: Option<&'a Guard>,
}

/// What a deletion did.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Objects removed (or that would be), directories included.
    pub objects: u64,
    /// Blocks freed, in bytes: objects whose last link went.
    pub bytes: u64,
    pub errors: Vec<PathError>,
    pub errors_total: u64,
    /// Objects kept on purpose: protected labels, mount points.
    pub refused: Vec<PathError>,
    pub refused_total: u64,
    /// Everything inside the directory is gone (for [`delete_entry`]:
    /// the entry is).
    pub complete: bool,
}

impl Outcome {
    /// Moves the errors and refusals into `errors`, with one line for
    /// those not kept (`dir` names where they were).
    pub(crate) fn errors_into(&mut self, dir: &[u8], errors: &mut Vec<PathError>) {
        let kept = (self.errors.len() + self.refused.len()) as u64;
        let total = self.left();
        errors.append(&mut self.errors);
        errors.append(&mut self.refused);
        if total > kept {
            errors.push(PathError::new(
                dir,
                format!("{} more objects could not be removed", total - kept),
            ));
        }
    }

    /// Objects that could not be removed or were kept on purpose.
    pub(crate) fn left(&self) -> u64 {
        self.errors_total + self.refused_total
    }
}

/// The fds directories under way may hold beyond each thread's own.
struct Budget(AtomicI64);

/// One fd of the [`Budget`], given back when dropped.
struct Token(Arc<Budget>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0 .0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Budget {
    /// What is left of the soft open-file limit once the fds already
    /// open, `threads` walks alone and the reserve are set aside.
    fn for_threads(threads: usize) -> Arc<Budget> {
        let limit = fd_limit();
        let open = std::fs::read_dir("/proc/self/fd").map_or(RESERVE, |dir| dir.count() as u64);
        let left = limit
            .saturating_sub(open)
            .saturating_sub(threads as u64 * PER_THREAD)
            .saturating_sub(RESERVE);
        Arc::new(Budget(AtomicI64::new(
            i64::try_from(left).unwrap_or(i64::MAX),
        )))
    }

    fn take(self: &Arc<Self>) -> Option<Token> {
        if self.0.fetch_sub(1, Ordering::Relaxed) > 0 {
            Some(Token(Arc::clone(self)))
        } else {
            self.0.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// The soft limit on open files (`RLIMIT_NOFILE`).
fn fd_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// An open directory, as the deletion steps see it.
#[derive(Clone, Copy)]
struct Dir<'a> {
    /// `O_RDONLY | O_DIRECTORY`: listed, and the dirfd of its entries.
    fd: BorrowedFd<'a>,
    /// For reading its entries' labels by name.
    id: DirId,
    path: &'a PathChain,
    /// Something inside was kept: the directory cannot go.
    kept: &'a AtomicBool,
}

impl<'a> Dir<'a> {
    /// Where the label of entry `name` is read.
    fn entry_handle(self, name: &'a CStr) -> Handle<'a> {
        working_dir::entry(self.fd, self.id, name)
    }

    fn keep(self) {
        self.kept.store(true, Ordering::Relaxed);
    }
}

/// A directory of the parallel part, whose deletion is under way.
struct Node {
    fd: OwnedFd,
    path: PathChain,
    /// The parent and this directory's name in it; `None` for the
    /// directory whose contents are being deleted.
    parent: Option<(Arc<Node>, CString)>,
    /// Its own listing plus its subdirectories still being deleted.
    pending: AtomicUsize,
    kept: AtomicBool,
    /// Its own blocks, counted when it is removed.
    bytes: u64,
    id: DirId,
    /// Its fd, from the budget (none for the top directory, the caller's).
    _fd_token: Option<Token>,
}

impl Node {
    fn dir(&self) -> Dir<'_> {
        Dir {
            fd: self.fd.as_fd(),
            id: self.id,
            path: &self.path,
            kept: &self.kept,
        }
    }
}

/// One level of a walk alone (see the module docs).
struct Level {
    /// Open while the level is among the deepest [`WINDOW`].
    fd: Option<OwnedFd>,
    /// What the fd was, to check the `..` that reopens it.
    meta: Meta,
    /// Its name in the level above.
    name: CString,
    path: PathChain,
    /// Subdirectories listed and not yet deleted, the next one last.
    pending: Vec<CString>,
    kept: AtomicBool,
    bytes: u64,
    id: DirId,
}

impl Level {
    fn dir(&self) -> Option<Dir<'_>> {
        Some(Dir {
            fd: self.fd.as_ref()?.as_fd(),
            id: self.id,
            path: &self.path,
            kept: &self.kept,
        })
    }
}

/// A subdirectory opened for deletion, or what became of it instead.
enum Opened {
    Dir {
        fd: OwnedFd,
        bytes: u64,
    },
    /// Removed as what it is now, vanished, kept or failed (the parent
    /// knows).
    Done,
}

struct Deleter<'a> {
    options: &'a DeleteOptions<'a>,
    budget: Arc<Budget>,
    objects: AtomicU64,
    bytes: AtomicU64,
    stop: AtomicBool,
    errors: Messages,
    refused: Messages,
    root_kept: AtomicBool,
}

#[derive(Default)]
struct Messages {
    list: Mutex<Vec<PathError>>,
    total: AtomicU64,
}

impl Messages {
    fn push(&self, error: PathError) {
        if self.total.fetch_add(1, Ordering::Relaxed) < MESSAGE_LIMIT as u64 {
            self.list
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(error);
        }
    }

    fn take(self) -> (Vec<PathError>, u64) {
        let mut list = self
            .list
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        list.sort_by(|a, b| a.path.cmp(&b.path));
        (list, self.total.into_inner())
    }
}

/// Deletes everything inside the directory `dir` (opened for listing,
/// shown as `path`), not `dir` itself, on `pool`.
pub(crate) fn delete_contents(
    pool: &rayon::ThreadPool,
    dir: OwnedFd,
    path: PathChain,
    options: &DeleteOptions<'_>,
) -> Outcome {
    run(pool, dir, path, options, |deleter, scope, top| {
        deleter.visit(scope, top);
    })
}

/// Deletes the entry `name` of the directory `dir` (shown as `path`),
/// whatever it is, a whole tree included: what a prune does in place when
/// the filesystem has no room for its trash.
pub(crate) fn delete_entry(
    pool: &rayon::ThreadPool,
    dir: BorrowedFd<'_>,
    name: &CStr,
    path: PathChain,
    options: &DeleteOptions<'_>,
) -> Outcome {
    let own = match rustix::io::fcntl_dupfd_cloexec(dir, 0) {
        Ok(fd) => fd,
        Err(errno) => {
            let error = PathError::new(&entry_path(&path, Some(name)), describe(errno));
            return Outcome {
                errors: vec![error],
                errors_total: 1,
                ..Outcome::default()
            };
        }
    };
    run(pool, own, path, options, |deleter, scope, top| {
        let kind = match rfs::statat(&top.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Some(FileType::from_raw_mode(stat.st_mode)),
            Err(Errno::NOENT) => None,
            Err(errno) => {
                deleter.error(top.dir(), Some(name), "stat", errno);
                top.dir().keep();
                None
            }
        };
        if let Some(kind) = kind {
            deleter.entry(top.dir(), name, kind, |name| {
                deleter.spawn_dir(scope, &top, name);
            });
        }
        deleter.finish(top);
    })
}

/// Sets up a deletion below `dir` and runs `start` on its top node.
fn run<'o>(
    pool: &rayon::ThreadPool,
    dir: OwnedFd,
    path: PathChain,
    options: &'o DeleteOptions<'o>,
    start: impl for<'s> FnOnce(&'s Deleter<'o>, &rayon::Scope<'s>, Arc<Node>) + Send,
) -> Outcome {
    let deleter = Deleter {
        options,
        budget: Budget::for_threads(pool.current_num_threads()),
        objects: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        errors: Messages::default(),
        refused: Messages::default(),
        root_kept: AtomicBool::new(false),
    };
    let top = Arc::new(Node {
        fd: dir,
        path,
        parent: None,
        pending: AtomicUsize::new(1),
        kept: AtomicBool::new(false),
        bytes: 0,
        id: DirId::fresh(),
        _fd_token: None,
    });
    pool.scope(|scope| start(&deleter, scope, top));
    let complete = !deleter.root_kept.load(Ordering::Relaxed);
    let (errors, errors_total) = deleter.errors.take();
    let (refused, refused_total) = deleter.refused.take();
    Outcome {
        objects: deleter.objects.into_inner(),
        bytes: deleter.bytes.into_inner(),
        errors,
        errors_total,
        refused,
        refused_total,
        complete,
    }
}

/// A thread pool for deletions: `jobs` threads, or the number of CPUs,
/// but never more than half the open-file limit can serve (each thread
/// may walk alone, see the module docs). Raises the soft limit first.
pub(crate) fn pool(jobs: Option<std::num::NonZeroUsize>) -> rayon::ThreadPoolBuilder {
    fsroot::raise_fd_limit();
    let wanted = jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        std::num::NonZeroUsize::get,
    );
    let most = (fd_limit().saturating_sub(RESERVE) / 2 / PER_THREAD).max(1);
    let threads = wanted.min(usize::try_from(most).unwrap_or(usize::MAX));
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("delete-{i}"))
        .start_handler(|_| working_dir::own())
}

impl<'a> Deleter<'a> {
    /// Lists `node` and deletes its entries; subdirectories become tasks.
    fn visit<'s>(&'s self, scope: &rayon::Scope<'s>, node: Arc<Node>) {
        self.list(node.dir(), |name| self.spawn_dir(scope, &node, name));
        self.finish(node);
    }

    fn spawn_dir<'s>(&'s self, scope: &rayon::Scope<'s>, parent: &Arc<Node>, name: CString) {
        parent.pending.fetch_add(1, Ordering::Relaxed);
        let parent = Arc::clone(parent);
        scope.spawn(move |scope| {
            self.enter(scope, parent, name);
            working_dir::leave();
        });
    }

    /// Lists `dir` whole, removing every non-directory and handing each
    /// subdirectory's name to `subdir`.
    fn list(&self, dir: Dir<'_>, mut subdir: impl FnMut(CString)) {
        let mut buffer = Vec::with_capacity(DIRENT_BUFFER);
        let mut entries = RawDir::new(dir.fd, buffer.spare_capacity_mut());
        while let Some(entry) = entries.next() {
            if self.stop.load(Ordering::Relaxed) {
                dir.keep();
                break;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(errno) => {
                    self.error(dir, None, "list", errno);
                    dir.keep();
                    break;
                }
            };
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => match rfs::statat(dir.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                    Err(Errno::NOENT) => continue,
                    Err(errno) => {
                        self.error(dir, Some(name), "stat", errno);
                        dir.keep();
                        continue;
                    }
                },
                kind => kind,
            };
            self.entry(dir, name, kind, &mut subdir);
        }
    }

    /// One entry of `dir`: a non-directory is removed, a directory handed
    /// to `subdir`.
    fn entry(&self, dir: Dir<'_>, name: &CStr, kind: FileType, mut subdir: impl FnMut(CString)) {
        if kind == FileType::Directory || self.delete_file(dir, name) == Gone::IsDirectory {
            subdir(name.to_owned());
        }
    }

    /// Opens subdirectory `name` of `parent` and deletes it: as a task of
    /// its own while the budget has an fd for it, else alone.
    fn enter<'s>(&'s self, scope: &rayon::Scope<'s>, parent: Arc<Node>, name: CString) {
        let Some(token) = self.budget.take() else {
            self.delete_alone(parent.dir(), name);
            return self.finish(parent);
        };
        let Opened::Dir { fd, bytes } = self.open_subdir(parent.dir(), &name) else {
            return self.finish(parent);
        };
        let node = Arc::new(Node {
            fd,
            path: parent.path.child(name.to_bytes()),
            parent: Some((parent, name)),
            pending: AtomicUsize::new(1),
            kept: AtomicBool::new(false),
            bytes,
            id: DirId::fresh(),
            _fd_token: Some(token),
        });
        self.visit(scope, node);
    }

    /// Opens subdirectory `name` of `parent` for listing, or handles what
    /// it turned into since it was listed; its label is checked.
    fn open_subdir(&self, parent: Dir<'_>, name: &CStr) -> Opened {
        let mut attempt = 0;
        let fd = loop {
            if self.stop.load(Ordering::Relaxed) {
                parent.keep();
                return Opened::Done;
            }
            match fsroot::open_listing_beneath(parent.fd, name, Crossing::NoMounts) {
                Ok(fd) => break fd,
                // A symlink or a file swapped in since the listing: removed
                // as what it is now (a symlink is never followed).
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    if self.delete_file(parent, name) != Gone::IsDirectory {
                        return Opened::Done;
                    }
                    // Swapped back meanwhile: try again as a directory, a
                    // few times (a swapper must not keep the run busy).
                    if attempt == MAX_ATTEMPTS {
                        self.error(parent, Some(name), "remove", Errno::AGAIN);
                        parent.keep();
                        return Opened::Done;
                    }
                    attempt += 1;
                }
                Err(Errno::NOENT) => return Opened::Done,
                Err(Errno::XDEV) => {
                    self.refuse(
                        parent,
                        name,
                        "a mount point: never crossed, kept".to_owned(),
                    );
                    return Opened::Done;
                }
                Err(errno) => {
                    self.error(parent, Some(name), "open", errno);
                    parent.keep();
                    return Opened::Done;
                }
            }
        };
        if let Some(guard) = self.options.guard {
            match read_label(Handle::Fd(fd.as_fd())) {
                Ok(label) => {
                    if let Some(reason) = guard.refusal(label.as_deref()) {
                        self.refuse(parent, name, reason);
                        return Opened::Done;
                    }
                }
                Err(errno) => {
                    self.error(parent, Some(name), "read the label of", errno);
                    parent.keep();
                    return Opened::Done;
                }
            }
        }
        let bytes = if self.options.count_bytes {
            rfs::statx(&fd, c"", AtFlags::EMPTY_PATH, StatxFlags::BLOCKS)
                .map(|stx| stx.stx_blocks * 512)
                .unwrap_or(0)
        } else {
            0
        };
        Opened::Dir { fd, bytes }
    }

    /// Deletes subdirectory `name` of `parent` and everything below it
    /// on this thread, depth first, with the fds of at most [`WINDOW`]
    /// levels open (see the module docs).
    fn delete_alone(&self, parent: Dir<'_>, name: CString) {
        let Some(first) = self.level(parent, name) else {
            return;
        };
        let mut stack = vec![first];
        // Levels below this index have their fds closed.
        let mut open_from = 0;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                parent.keep();
                return;
            }
            let Some(top) = stack.last_mut() else {
                return;
            };
            if let Some(child) = top.pending.pop() {
                let Some(dir) = top.dir() else {
                    parent.keep();
                    return;
                };
                if let Some(level) = self.level(dir, child) {
                    stack.push(level);
                    if stack.len() - open_from > WINDOW {
                        stack[open_from].fd = None;
                        open_from += 1;
                    }
                }
                continue;
            }
            // The deepest level is done: remove it from the one above.
            let Some(done) = stack.pop() else {
                return;
            };
            let kept = done.kept.load(Ordering::Relaxed);
            let up_index = stack.len().saturating_sub(1);
            let Some(up) = stack.last_mut() else {
                return self.remove_finished(parent, &done.name, done.bytes, kept);
            };
            if up.fd.is_none() {
                let reopened = match &done.fd {
                    Some(fd) => fsroot::reopen_parent(fd.as_fd(), &up.meta),
                    None => Err(Errno::BADF),
                };
                match reopened {
                    Ok(fd) => {
                        up.fd = Some(fd);
                        open_from = up_index;
                    }
                    Err(errno) => {
                        // Moved away meanwhile: what is left stays.
                        let reason = match errno {
                            Errno::STALE => "moved while it was being deleted".to_owned(),
                            errno => describe(errno),
                        };
                        self.errors.push(PathError::new(
                            &up.path.to_vec(),
                            format!("cannot come back to it from below: {reason}; kept"),
                        ));
                        parent.keep();
                        return;
                    }
                }
            }
            match up.dir() {
                Some(dir) => self.remove_finished(dir, &done.name, done.bytes, kept),
                None => {
                    parent.keep();
                    return;
                }
            }
        }
    }

    /// Opens subdirectory `name` of `parent` as a level of a walk alone,
    /// listed whole (its non-directories removed).
    fn level(&self, parent: Dir<'_>, name: CString) -> Option<Level> {
        let Opened::Dir { fd, bytes } = self.open_subdir(parent, &name) else {
            return None;
        };
        let meta = match Meta::of(fd.as_fd()) {
            Ok(meta) => meta,
            Err(errno) => {
                self.error(parent, Some(&name), "stat", errno);
                parent.keep();
                return None;
            }
        };
        let mut level = Level {
            fd: Some(fd),
            meta,
            path: parent.path.child(name.to_bytes()),
            name,
            pending: Vec::new(),
            kept: AtomicBool::new(false),
            bytes,
            id: DirId::fresh(),
        };
        let mut pending = Vec::new();
        if let Some(dir) = level.dir() {
            self.list(dir, |name| pending.push(name));
        }
        pending.reverse();
        level.pending = pending;
        Some(level)
    }

    /// Removes the non-directory `name` of `dir`.
    fn delete_file(&self, dir: Dir<'_>, name: &CStr) -> Gone {
        if let Some(guard) = self.options.guard {
            match read_label(dir.entry_handle(name)) {
                Ok(label) => {
                    if let Some(reason) = guard.refusal(label.as_deref()) {
                        self.refuse(dir, name, reason);
                        return Gone::Kept;
                    }
                }
                Err(Errno::NOENT) => return Gone::Vanished,
                Err(errno) => {
                    self.error(dir, Some(name), "read the label of", errno);
                    dir.keep();
                    return Gone::Kept;
                }
            }
        }
        let mut bytes = 0;
        if self.options.count_bytes {
            let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC;
            let mask = StatxFlags::TYPE | StatxFlags::NLINK | StatxFlags::BLOCKS;
            match rfs::statx(dir.fd, name, flags, mask) {
                Ok(stx) if FileType::from_raw_mode(stx.stx_mode.into()) == FileType::Directory => {
                    return Gone::IsDirectory
                }
                // Only the last link frees the blocks.
                Ok(stx) if stx.stx_nlink <= 1 => bytes = stx.stx_blocks * 512,
                Ok(_) => {}
                Err(Errno::NOENT) => return Gone::Vanished,
                Err(_) => {}
            }
        }
        if !self.options.dry_run {
            match fsroot::unlink(dir.fd, name) {
                Ok(()) => {}
                Err(Errno::ISDIR) => return Gone::IsDirectory,
                Err(Errno::NOENT) => return Gone::Vanished,
                Err(Errno::BUSY) => {
                    self.refuse(dir, name, "a mount point: never removed".to_owned());
                    return Gone::Kept;
                }
                Err(errno) => {
                    if errno == Errno::ROFS {
                        self.stop.store(true, Ordering::Relaxed);
                    }
                    self.error(dir, Some(name), "remove", errno);
                    dir.keep();
                    return Gone::Kept;
                }
            }
        }
        self.objects.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        Gone::Removed
    }

    /// One piece of `node`'s work is done; when it was the last, the
    /// directory is removed from its parent, which may finish it in turn.
    fn finish(&self, node: Arc<Node>) {
        let mut current = node;
        loop {
            if current.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
                return;
            }
            let kept = current.kept.load(Ordering::Relaxed);
            let Some((parent, name)) = current.parent.as_ref() else {
                self.root_kept.store(kept, Ordering::Relaxed);
                return;
            };
            let parent = Arc::clone(parent);
            self.remove_finished(parent.dir(), name, current.bytes, kept);
            // Close this directory before finishing its parent.
            drop(current);
            current = parent;
        }
    }

    /// Removes directory `name` of `parent`, whose contents are done
    /// (`bytes`: its own blocks), unless something in it was `kept`.
    fn remove_finished(&self, parent: Dir<'_>, name: &CStr, bytes: u64, kept: bool) {
        if kept {
            return parent.keep();
        }
        if self.options.dry_run {
            return self.count_dir(bytes);
        }
        working_dir::climb_to(parent.fd, parent.id);
        match fsroot::remove_dir(parent.fd, name) {
            Ok(()) => self.count_dir(bytes),
            Err(Errno::NOENT) => {}
            // Something was put in meanwhile: keep it.
            Err(Errno::NOTEMPTY) => parent.keep(),
            Err(errno) => {
                if errno == Errno::ROFS {
                    self.stop.store(true, Ordering::Relaxed);
                }
                self.error(parent, Some(name), "remove", errno);
                parent.keep();
            }
        }
    }

    fn count_dir(&self, bytes: u64) {
        self.objects.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn refuse(&self, dir: Dir<'_>, name: &CStr, reason: String) {
        dir.keep();
        self.refused
            .push(PathError::new(&entry_path(dir.path, Some(name)), reason));
    }

    fn error(&self, dir: Dir<'_>, name: Option<&CStr>, doing: &str, errno: Errno) {
        self.errors.push(PathError::new(
            &entry_path(dir.path, name),
            format!("cannot {doing}: {}", describe(errno)),
        ));
    }
}

/// What became of a non-directory.
#[derive(Debug, PartialEq, Eq)]
enum Gone {
    Removed,
    Vanished,
    Kept,
    /// It is a directory now: delete it as one.
    IsDirectory,
}

fn entry_path(dir: &PathChain, name: Option<&CStr>) -> Vec<u8> {
    let mut path = dir.to_vec();
    if let Some(name) = name {
        if !path.ends_with(b"/") {
            path.push(b'/');
        }
        path.extend_from_slice(name.to_bytes());
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_refuses_protected_types_only() {
        let guard = Guard {
            protected: ["etcd_var_t".to_owned()].into(),
        };
        assert!(guard
            .refusal(Some(b"system_u:object_r:etcd_var_t:s0"))
            .is_some());
        assert!(guard
            .refusal(Some(b"system_u:object_r:var_mnt_t:s0:c1,c2"))
            .is_none());
        assert!(guard.refusal(None).is_none());
        assert!(guard.refusal(Some(b"not a context")).is_none());
        assert!(guard
            .allowing("etcd_var_t")
            .refusal(Some(b"system_u:object_r:etcd_var_t:s0"))
            .is_none());
    }

    #[test]
    fn a_spent_budget_gives_nothing_until_a_token_returns() {
        let budget = Arc::new(Budget(AtomicI64::new(2)));
        let first = budget.take().expect("one");
        let _second = budget.take().expect("two");
        assert!(budget.take().is_none());
        assert!(budget.take().is_none(), "a refusal takes nothing");
        drop(first);
        assert!(budget.take().is_some());
    }
}
