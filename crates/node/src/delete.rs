//! Deleting everything inside an open directory, in parallel: what empties
//! a prune's trash and what `rm -r` runs.
//!
//! One rayon task per directory. A task lists its directory (`getdents`),
//! unlinks the non-directories by name, and spawns a task per
//! subdirectory; a directory is removed (`unlinkat(AT_REMOVEDIR)` by name
//! in its parent) when its last child task finishes, and that in turn may
//! finish its parent. So no stack grows with the depth of the tree and
//! every pending directory holds exactly one fd.
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
//! - on a read-only filesystem the run stops at the first `EROFS`.
//!
//! Labels of non-directories are read by name in their open directory.
//! Through `/proc/self/fd/DIR/NAME` that walk through `/proc` costs more
//! than the unlink itself, so each worker thread owns its working
//! directory (`unshare(CLONE_FS)` when the pool starts it), `fchdir`s
//! into the directory it lists and reads `lgetxattr(NAME)`: one lookup of
//! one name, never followed. A thread that could not unshare reads
//! through `/proc` as before.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rustix::fs::{self as rfs, AtFlags, FileType, RawDir, StatxFlags};
use rustix::io::Errno;

use super::{context_type, describe, read_label, PathError};
use fsroot::{self, Crossing, Handle};
use selabel::path_chain::PathChain;

/// Bytes read per `getdents` call.
const DIRENT_BUFFER: usize = 32 * 1024;
/// Times an entry that keeps changing between directory and not is tried.
const MAX_ATTEMPTS: u32 = 8;
/// Messages kept per kind; the rest are only counted.
const MESSAGE_LIMIT: usize = 1000;

/// Node ids: a thread's working directory is known by the id of the node
/// it belongs to (fd numbers are reused, ids never are).
static NODE_IDS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's working directory is its own (see the module docs).
    static OWN_WORKING_DIR: Cell<bool> = const { Cell::new(false) };
    /// The node whose directory is this thread's working directory.
    static WORKING_DIR_NODE: Cell<u64> = const { Cell::new(0) };
}

/// Gives the calling (pool) thread a working directory of its own.
fn own_working_directory() {
    // unshare(CLONE_FS) detaches only the working directory, root and
    // umask from the other threads; rustix deprecates its safe `unshare`
    // for CLONE_FILES, which is never asked for here.
    #[allow(deprecated)]
    let own = rustix::thread::unshare(rustix::thread::UnshareFlags::FS).is_ok();
    OWN_WORKING_DIR.with(|flag| flag.set(own));
}

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
    /// Everything inside the directory is gone.
    pub complete: bool,
}

impl Outcome {
    /// Moves the errors and refusals into `errors`, with one line for
    /// those not kept (`dir` names where they were).
    pub(crate) fn errors_into(&mut self, dir: &[u8], errors: &mut Vec<PathError>) {
        let kept = (self.errors.len() + self.refused.len()) as u64;
        let total = self.errors_total + self.refused_total;
        errors.append(&mut self.errors);
        errors.append(&mut self.refused);
        if total > kept {
            errors.push(PathError::new(
                dir,
                format!("{} more objects could not be removed", total - kept),
            ));
        }
    }
}

/// An open directory whose deletion is under way.
struct Node {
    /// `O_RDONLY | O_DIRECTORY`: listed, and the dirfd of its entries.
    fd: OwnedFd,
    path: PathChain,
    /// The parent and this directory's name in it; `None` for the
    /// directory whose contents are being deleted.
    parent: Option<(Arc<Node>, CString)>,
    /// Its own listing plus its subdirectories still being deleted.
    pending: AtomicUsize,
    /// Something inside was kept: the directory cannot go.
    kept: AtomicBool,
    /// Its own blocks, counted when it is removed.
    bytes: u64,
    /// Unique for the run's lifetime (see [`NODE_IDS`]).
    id: u64,
}

impl Node {
    /// Where the label of entry `name` is read: this directory as the
    /// thread's own working directory when it can be, else `/proc`.
    fn entry_handle<'a>(&'a self, name: &'a CStr) -> Handle<'a> {
        if OWN_WORKING_DIR.with(Cell::get) {
            if WORKING_DIR_NODE.with(Cell::get) == self.id {
                return Handle::InWorkingDir(name);
            }
            if rustix::process::fchdir(&self.fd).is_ok() {
                WORKING_DIR_NODE.with(|node| node.set(self.id));
                return Handle::InWorkingDir(name);
            }
            WORKING_DIR_NODE.with(|node| node.set(0));
        }
        Handle::Named(self.fd.as_fd(), name)
    }
}

struct Deleter<'a> {
    options: &'a DeleteOptions<'a>,
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
    let deleter = Deleter {
        options,
        objects: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        errors: Messages::default(),
        refused: Messages::default(),
        root_kept: AtomicBool::new(false),
    };
    let root = Arc::new(Node {
        fd: dir,
        path,
        parent: None,
        pending: AtomicUsize::new(1),
        kept: AtomicBool::new(false),
        bytes: 0,
        id: NODE_IDS.fetch_add(1, Ordering::Relaxed),
    });
    pool.scope(|scope| deleter.visit(scope, root));
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

/// A thread pool for deletions: `jobs` threads, or the number of CPUs.
pub(crate) fn pool(jobs: Option<std::num::NonZeroUsize>) -> rayon::ThreadPoolBuilder {
    let mut builder = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("delete-{i}"))
        .start_handler(|_| own_working_directory());
    if let Some(jobs) = jobs {
        builder = builder.num_threads(jobs.get());
    }
    builder
}

impl<'a> Deleter<'a> {
    /// Lists `node` and deletes its entries; subdirectories become tasks.
    fn visit<'s>(&'s self, scope: &rayon::Scope<'s>, node: Arc<Node>) {
        let mut buffer = Vec::with_capacity(DIRENT_BUFFER);
        let mut entries = RawDir::new(node.fd.as_fd(), buffer.spare_capacity_mut());
        while let Some(entry) = entries.next() {
            if self.stop.load(Ordering::Relaxed) {
                node.kept.store(true, Ordering::Relaxed);
                break;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(errno) => {
                    self.error(&node.path, None, "list", errno);
                    node.kept.store(true, Ordering::Relaxed);
                    break;
                }
            };
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => match rfs::statat(&node.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                    Err(Errno::NOENT) => continue,
                    Err(errno) => {
                        self.error(&node.path, Some(name), "stat", errno);
                        node.kept.store(true, Ordering::Relaxed);
                        continue;
                    }
                },
                kind => kind,
            };
            if kind == FileType::Directory || self.delete_file(&node, name) == Gone::IsDirectory {
                self.spawn_dir(scope, &node, name.to_owned());
            }
        }
        self.finish(node);
    }

    fn spawn_dir<'s>(&'s self, scope: &rayon::Scope<'s>, parent: &Arc<Node>, name: CString) {
        parent.pending.fetch_add(1, Ordering::Relaxed);
        let parent = Arc::clone(parent);
        scope.spawn(move |scope| self.enter(scope, parent, name, 0));
    }

    /// Opens subdirectory `name` of `parent` and visits it, or handles
    /// what it turned into since it was listed.
    fn enter<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        parent: Arc<Node>,
        name: CString,
        attempt: u32,
    ) {
        if self.stop.load(Ordering::Relaxed) {
            parent.kept.store(true, Ordering::Relaxed);
            return self.finish(parent);
        }
        let fd = match fsroot::open_listing_beneath(&parent.fd, &name, Crossing::NoMounts) {
            Ok(fd) => fd,
            // A symlink or a file swapped in since the listing: removed as
            // what it is now (a symlink is never followed).
            Err(Errno::LOOP | Errno::NOTDIR) => {
                if self.delete_file(&parent, &name) == Gone::IsDirectory {
                    // Swapped back meanwhile: try again as a directory, a
                    // few times (a swapper must not keep the run busy).
                    if attempt < MAX_ATTEMPTS {
                        return self.enter(scope, parent, name, attempt + 1);
                    }
                    self.error(&parent.path, Some(&name), "remove", Errno::AGAIN);
                    parent.kept.store(true, Ordering::Relaxed);
                }
                return self.finish(parent);
            }
            Err(Errno::NOENT) => return self.finish(parent),
            Err(Errno::XDEV) => {
                self.refuse(
                    &parent,
                    &name,
                    "a mount point: never crossed, kept".to_owned(),
                );
                return self.finish(parent);
            }
            Err(errno) => {
                self.error(&parent.path, Some(&name), "open", errno);
                parent.kept.store(true, Ordering::Relaxed);
                return self.finish(parent);
            }
        };
        if let Some(guard) = self.options.guard {
            match read_label(Handle::Fd(fd.as_fd())) {
                Ok(label) => {
                    if let Some(reason) = guard.refusal(label.as_deref()) {
                        self.refuse(&parent, &name, reason);
                        return self.finish(parent);
                    }
                }
                Err(errno) => {
                    self.error(&parent.path, Some(&name), "read the label of", errno);
                    parent.kept.store(true, Ordering::Relaxed);
                    return self.finish(parent);
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
        let node = Arc::new(Node {
            fd,
            path: parent.path.child(name.to_bytes()),
            parent: Some((parent, name)),
            pending: AtomicUsize::new(1),
            kept: AtomicBool::new(false),
            bytes,
            id: NODE_IDS.fetch_add(1, Ordering::Relaxed),
        });
        self.visit(scope, node);
    }

    /// Removes the non-directory `name` of `node`.
    fn delete_file(&self, node: &Node, name: &CStr) -> Gone {
        if let Some(guard) = self.options.guard {
            match read_label(node.entry_handle(name)) {
                Ok(label) => {
                    if let Some(reason) = guard.refusal(label.as_deref()) {
                        self.refuse(node, name, reason);
                        return Gone::Kept;
                    }
                }
                Err(Errno::NOENT) => return Gone::Vanished,
                Err(errno) => {
                    self.error(&node.path, Some(name), "read the label of", errno);
                    node.kept.store(true, Ordering::Relaxed);
                    return Gone::Kept;
                }
            }
        }
        let mut bytes = 0;
        if self.options.count_bytes {
            let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC;
            let mask = StatxFlags::TYPE | StatxFlags::NLINK | StatxFlags::BLOCKS;
            match rfs::statx(&node.fd, name, flags, mask) {
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
            match fsroot::unlink(&node.fd, name) {
                Ok(()) => {}
                Err(Errno::ISDIR) => return Gone::IsDirectory,
                Err(Errno::NOENT) => return Gone::Vanished,
                Err(Errno::BUSY) => {
                    self.refuse(node, name, "a mount point: never removed".to_owned());
                    return Gone::Kept;
                }
                Err(errno) => {
                    if errno == Errno::ROFS {
                        self.stop.store(true, Ordering::Relaxed);
                    }
                    self.error(&node.path, Some(name), "remove", errno);
                    node.kept.store(true, Ordering::Relaxed);
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
            if kept {
                parent.kept.store(true, Ordering::Relaxed);
            } else if self.options.dry_run {
                self.count_dir(&current);
            } else {
                match fsroot::remove_dir(&parent.fd, name) {
                    Ok(()) => self.count_dir(&current),
                    Err(Errno::NOENT) => {}
                    // Something was put in meanwhile: keep it.
                    Err(Errno::NOTEMPTY) => parent.kept.store(true, Ordering::Relaxed),
                    Err(errno) => {
                        if errno == Errno::ROFS {
                            self.stop.store(true, Ordering::Relaxed);
                        }
                        self.error(&parent.path, Some(name), "remove", errno);
                        parent.kept.store(true, Ordering::Relaxed);
                    }
                }
            }
            // Close this directory before finishing its parent.
            drop(current);
            current = parent;
        }
    }

    fn count_dir(&self, node: &Node) {
        self.objects.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(node.bytes, Ordering::Relaxed);
    }

    fn refuse(&self, node: &Node, name: &CStr, reason: String) {
        node.kept.store(true, Ordering::Relaxed);
        self.refused
            .push(PathError::new(&entry_path(&node.path, Some(name)), reason));
    }

    fn error(&self, dir: &PathChain, name: Option<&CStr>, doing: &str, errno: Errno) {
        self.errors.push(PathError::new(
            &entry_path(dir, name),
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
    }
}
