//! The parallel walk: one rayon task per directory, objects handled through
//! file descriptors relative to their parent directory.

use std::collections::HashSet;
use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rustix::fs::{FileType, RawDir};
use rustix::io::Errno;
use sha2::{Digest as _, Sha256};

use super::hardlinks::{Deferred, Links, Settled};
use super::label::{decide, stored_context, Decision};
use super::seal::{self, SealInputs, SEAL_XATTR};
use super::{
    hex, Digests, EntryLabel, HardLinkConflict, LabelLookup, LabelScope, MountPolicy, ObjectError,
    ObjectPath, Observer, Operation, RelabelError, RelabelOptions, Relabeling, Summary, WriteMode,
    DIGEST_VERSION, DIGEST_XATTR, XATTR_NAME,
};
use fsroot::working_dir::{self, DirId};
use fsroot::{components, Crossing, Entry, Handle, Meta, MountTable, Root};
use selabel::path_chain::PathChain;
use selabel::FileKind;

/// Bytes read per `getdents` call.
const DIRENT_BUFFER: usize = 32 * 1024;
/// Most contexts fit; longer ones are read into a heap buffer.
const INLINE_LABEL: usize = 256;
/// The longest chain of directories whose digests wait for a write
/// ([`Vouching`]); deeper ones lose theirs when entered, so a deep tree
/// keeps at most this many of them open per path.
const LAZY_DEPTH: usize = 64;

/// Relabels every object at and below `paths` (see the module docs).
///
/// Raises the process's soft limit on open files to the hard limit
/// first ([`fsroot::raise_fd_limit`]).
///
/// Fails before touching anything if the root cannot be opened or an
/// operand is missing, outside the root or reached through a symlink;
/// later failures are per object and only counted in the returned
/// [`Summary`] (and reported to `observer`).
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
    // Each directory on the walk's frontier holds an fd.
    fsroot::raise_fd_limit();
    let root = options.open_root()?;
    // Excludes need not exist: they are compared as keys, a name at a time.
    let excludes = options
        .excludes
        .iter()
        .map(|path| {
            let key = root.key(path)?;
            Ok(components(&key).map(Box::from).collect())
        })
        .collect::<Result<Vec<Vec<Box<[u8]>>>, RelabelError>>()?;
    let operands = paths
        .iter()
        .map(|path| {
            let key = root.key(path)?;
            let entry = root.resolve(&key)?;
            Ok(Operand { key, entry })
        })
        .collect::<Result<Vec<_>, RelabelError>>()?;
    let mut early = Tally::default();
    if options.write == WriteMode::Write {
        // The digests of the operands' ancestors cover what this run may
        // change, and this walk cannot keep them right: they go first.
        for operand in &operands {
            forget_ancestor_digests(&root, &operand.key, observer, &mut early);
        }
    }

    let mut pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("relabel-{i}"))
        .start_handler(|_| working_dir::own());
    if let Some(jobs) = options.jobs {
        pool = pool.num_threads(jobs.get());
    }
    let pool = pool.build()?;

    let walked: Option<HashSet<u64>> = match options.mounts {
        MountPolicy::SameFilesystem => {
            Some(operands.iter().map(|o| o.entry.meta().mount).collect())
        }
        MountPolicy::CrossMounts => None,
    };
    let mount_parents = mount_parents(&root, walked.as_ref());
    let mut walker = Walker {
        labels,
        options,
        root,
        excludes,
        observer,
        mount_parents,
        links: Links::default(),
        totals: Totals::default(),
    };
    walker.totals.add(&early);
    pool.scope(|scope| {
        for operand in operands {
            walker.start(scope, operand);
        }
    });
    walker.settle_links();
    let mut summary = walker.totals.snapshot();
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Removes the subtree digest of every directory strictly above `key` (up
/// to the root): a digest there would vouch for labels this run may write
/// under other specs. Errors are reported; a filesystem without xattrs or a
/// caller without `CAP_SYS_ADMIN` (who cannot read `trusted.*` either) is
/// not an error.
fn forget_ancestor_digests(root: &Root, key: &[u8], observer: &dyn Observer, tally: &mut Tally) {
    let ancestors = key
        .iter()
        .enumerate()
        .filter(|&(at, &byte)| byte == b'/' && at + 1 < key.len())
        .map(|(at, _)| if at == 0 { &key[..1] } else { &key[..at] });
    for ancestor in ancestors {
        let Ok(fd) = root.open_dir_beneath(ancestor) else {
            continue;
        };
        match seal::forget(Handle::Path(fd.as_fd())) {
            Ok(()) | Err(Errno::OPNOTSUPP | Errno::PERM | Errno::ROFS) => {}
            Err(errno) => {
                tally.errors += 1;
                observer.failed(&ObjectError {
                    path: root.display(ancestor),
                    operation: Operation::RemoveDigest,
                    source: errno.into(),
                });
            }
        }
    }
}

/// The directories that hold a mount point (by device and inode), from
/// the mount table when the walk starts; `None` if it could not be read.
/// Their entries are `statx`ed before their labels are read: `lgetxattr`
/// by name enters a mount, and `getdents` tells the walk nothing about one.
/// Unless crossing mounts, only mounts placed on the operands' own mounts
/// count (the walk lists no directory elsewhere), so no other filesystem
/// (a hung network or FUSE mount) is ever looked into.
fn mount_parents(root: &Root, walked: Option<&HashSet<u64>>) -> Option<HashSet<(u64, u64)>> {
    let table = MountTable::read().ok()?;
    let parents = table
        .iter()
        .filter(|mount| walked.is_none_or(|walked| walked.contains(&mount.parent)))
        .filter_map(|mount| {
            let key = root.key(Path::new(OsStr::from_bytes(&mount.point))).ok()?;
            let slash = key.iter().rposition(|&byte| byte == b'/')?;
            let parent = if slash == 0 { &b"/"[..] } else { &key[..slash] };
            let fd = root.open_dir_beneath(parent).ok()?;
            let meta = Meta::of(fd.as_fd()).ok()?;
            Some((meta.dev, meta.ino))
        });
    Some(parents.collect())
}

/// A command-line path, resolved below the root: where the walk starts.
struct Operand {
    /// The lookup key (the path below the root).
    key: Vec<u8>,
    /// Opened `O_PATH | O_NOFOLLOW`; a symlink operand is the link.
    entry: Entry,
}

/// An open directory whose entries are being, or will be, visited.
struct OpenDir<D> {
    /// Opened for listing; shared with its [`Vouching`].
    fd: Arc<OwnedFd>,
    /// For reaching its entries by name from a worker's working directory.
    id: DirId,
    /// Shared with its parent's: a directory costs its name, not its depth.
    path: PathChain,
    /// Its entries must be on the same mount (unless crossing mounts).
    meta: Meta,
    /// A mount point may be among its entries: each is `statx`ed first.
    stat_entries: bool,
    /// Where the walk stands among the excludes.
    excludes: Excludes,
    /// What the label lookups of its entries share.
    labels: D,
    /// With [`Digests::Skip`] and writes: where its subtree's digest goes.
    subtree: Option<Arc<Subtree>>,
    /// With [`Digests::Ignore`] and writes: the digests to remove before a
    /// label below it is written (its own and its ancestors').
    vouching: Option<Arc<Vouching>>,
}

/// With [`Digests::Ignore`] and writes, a directory whose subtree digest
/// and seal, if it has any, must go before a label at or below it is
/// written: a walk that may write labels under other specs than a
/// digest's must not leave it, or a later `--skip-unchanged` with those
/// specs would trust labels they did not decide. Most directories hold
/// none and most passes write nothing, so rather than listing every
/// directory's xattrs, the walk removes them on the first write below,
/// for the whole chain up to the operand, top down, before that write
/// (the operand's own ancestors lost theirs before the walk). A pass
/// that changes nothing below a digest leaves it as true as it was.
struct Vouching {
    fd: Arc<OwnedFd>,
    path: PathChain,
    parent: Option<Arc<Vouching>>,
    /// Directories in the chain, itself included.
    depth: usize,
    /// Its digests and every ancestor's are gone (or failed to go, which
    /// was reported).
    cleared: AtomicBool,
}

/// A directory walked with [`Digests::Skip`] (and writes), waiting for
/// every object below it to be handled before its digest is written.
struct Subtree {
    /// Opened for reading: the digest is written through it.
    fd: OwnedFd,
    path: PathChain,
    /// The value to store; `None` for a directory without a digest, which
    /// only passes an incomplete subtree on to its ancestors.
    digest: Option<Box<[u8]>>,
    /// An operand's seal, stored after its digest.
    seal: Option<Box<[u8]>>,
    parent: Option<Arc<Subtree>>,
    /// Its own listing plus each subdirectory whose job or subtree has not
    /// finished yet.
    pending: AtomicUsize,
    /// Cleared by any error, exclusion, skipped mount or hard-link conflict
    /// at or below it: then neither it nor any ancestor gets a digest.
    complete: AtomicBool,
}

/// The excludes that lie strictly below a directory, matched one name per
/// level, so that checking an entry costs nothing when there are none.
#[derive(Clone, Debug, Default)]
struct Excludes {
    /// Components of the directory's key below the root.
    depth: usize,
    /// Indices of the excludes whose first `depth` components are the
    /// directory's key and which have more.
    live: Vec<usize>,
}

/// A subdirectory still to visit. Holding the parent keeps its fd open until
/// every child has been opened.
struct DirJob<D> {
    parent: Arc<OpenDir<D>>,
    name: CString,
}

type Dir<'a, L> = OpenDir<<L as LabelLookup>::Directory<'a>>;

/// Room for one stored `security.selinux` value: on the stack when it
/// fits (most contexts do), on the heap when it is longer.
struct LabelBuffer {
    inline: [u8; INLINE_LABEL],
    heap: Vec<u8>,
}

impl LabelBuffer {
    fn new() -> Self {
        Self {
            inline: [0; INLINE_LABEL],
            heap: Vec::new(),
        }
    }

    /// The context stored on the object behind `handle`, as
    /// [`stored_context`] compares it: `None` if it has none.
    fn read(&mut self, handle: Handle<'_>) -> rustix::io::Result<Option<&[u8]>> {
        let raw = match handle.get(XATTR_NAME, &mut self.inline) {
            Ok(len) => Some(&self.inline[..len]),
            Err(Errno::NODATA) => None,
            Err(Errno::RANGE) => self.read_long(handle)?,
            Err(errno) => return Err(errno),
        };
        Ok(raw.and_then(stored_context))
    }

    /// A value longer than the inline buffer; it may change between the
    /// calls.
    fn read_long(&mut self, handle: Handle<'_>) -> rustix::io::Result<Option<&[u8]>> {
        loop {
            let size = match handle.size(XATTR_NAME) {
                Ok(size) => size,
                Err(Errno::NODATA) => return Ok(None),
                Err(errno) => return Err(errno),
            };
            self.heap.resize(size, 0);
            match handle.get(XATTR_NAME, &mut self.heap) {
                Ok(len) => return Ok(Some(&self.heap[..len])),
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
    skipped: u64,
    /// Device and inode of the objects whose label matched, for the hard
    /// links settled after the walk.
    kept_links: Vec<(u64, u64)>,
    /// Links that must be written on inodes with other links.
    deferred: Vec<Deferred>,
}

impl Tally {
    /// Whether something at or below the task's objects was not fully
    /// checked: no digest may cover it. A deferred link is settled after
    /// the digests are written.
    fn incomplete(&self) -> bool {
        self.errors != 0
            || self.mounts_skipped != 0
            || self.excluded != 0
            || self.hard_link_conflicts != 0
            || !self.deferred.is_empty()
    }
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
    skipped: AtomicU64,
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
            (&self.skipped, tally.skipped),
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
            skipped: get(&self.skipped),
            sealed: 0,
            seconds: 0.0,
        }
    }
}

struct Walker<'a, L: ?Sized> {
    labels: &'a L,
    options: &'a RelabelOptions,
    /// The alternate root, or `/`: operands were resolved below it.
    root: Root,
    /// The components of each exclude's key.
    excludes: Vec<Vec<Box<[u8]>>>,
    observer: &'a dyn Observer,
    /// See [`mount_parents`].
    mount_parents: Option<HashSet<(u64, u64)>>,
    links: Links,
    totals: Totals,
}

impl<'a, L: LabelLookup + ?Sized> Walker<'a, L> {
    fn start<'s>(&'s self, scope: &rayon::Scope<'s>, operand: Operand) {
        let mut tally = Tally::default();
        let Operand { key, entry } = operand;
        let path = PathChain::new(&self.root.display(&key));
        let object = ObjectPath::directory(&path);
        let names: Vec<&[u8]> = components(&key).collect();
        let prefix_of_key = |exclude: &[Box<[u8]>]| {
            exclude
                .iter()
                .zip(&names)
                .all(|(excluded, name)| **excluded == **name)
        };
        if self
            .excludes
            .iter()
            .any(|e| e.len() <= names.len() && prefix_of_key(e))
        {
            tally.excluded += 1;
        } else if entry.kind() == FileType::Directory {
            let excludes = Excludes {
                depth: names.len(),
                live: (0..self.excludes.len())
                    .filter(|&i| prefix_of_key(&self.excludes[i]))
                    .collect(),
            };
            match entry.open_dir() {
                Ok(fd) => {
                    let entered = Entered {
                        fd,
                        vouching: None,
                        meta: *entry.meta(),
                        expected: self.labels.expected_label(&key, FileKind::Dir),
                        labels: self.labels.directory(&key),
                        path,
                        excludes,
                    };
                    self.enter_dir(scope, entered, Some(&key), &mut tally, &mut None);
                }
                Err(errno) => self.fail(object, Operation::Open, errno, &mut tally),
            }
        } else {
            // Labelled through its O_PATH fd, whatever it is.
            let expected = |kind| self.labels.expected_label(&key, kind);
            self.label(
                entry.handle(),
                object,
                entry.meta(),
                expected,
                None,
                &mut tally,
            );
        }
        self.finish(tally);
    }

    /// A directory listed in `parent`, opened for listing by its name in
    /// one step that refuses a symlink, a mount point (unless crossing
    /// mounts) and anything but a directory before opening it. A name
    /// that is no longer a directory, or that cannot be opened for
    /// reading, is handled through an `O_PATH` fd instead.
    fn visit_dir<'s>(&'s self, scope: &rayon::Scope<'s>, job: DirJob<L::Directory<'a>>) {
        let mut tally = Tally::default();
        let DirJob { parent, name } = job;
        // This job's share of the parent's pending count: paid here, or
        // passed on to the subdirectory's own subtree.
        let mut owed = parent.subtree.clone();
        self.visit_listed_dir(scope, parent, &name, &mut tally, &mut owed);
        if let Some(owed) = owed {
            self.settle(owed, tally.incomplete());
        }
        self.finish(tally);
    }

    fn visit_listed_dir<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        parent: Arc<Dir<'a, L>>,
        name: &CStr,
        tally: &mut Tally,
        owed: &mut Option<Arc<Subtree>>,
    ) {
        let crossing = match self.options.mounts {
            MountPolicy::SameFilesystem => Crossing::NoMounts,
            MountPolicy::CrossMounts => Crossing::Mounts,
        };
        let path = ObjectPath::entry(&parent.path, name.to_bytes());
        let opened = fsroot::open_listing_beneath(&parent.fd, name, crossing)
            .and_then(|fd| Ok((Meta::of(fd.as_fd())?, fd)));
        match opened {
            // Another device on the same mount (a btrfs subvolume): closed
            // unread.
            Ok((meta, _)) if self.leaves_filesystem(&parent.meta, &meta) => {
                tally.mounts_skipped += 1;
            }
            Ok((meta, fd)) => {
                let name = name.to_bytes();
                let entered = Entered {
                    fd,
                    vouching: parent.vouching.clone(),
                    meta,
                    path: parent.path.child(name),
                    excludes: self.excludes_of(&parent.excludes, name),
                    expected: self.labels.entry_label(&parent.labels, name, FileKind::Dir),
                    labels: self.labels.subdirectory(&parent.labels, name),
                };
                drop(parent);
                self.enter_dir(scope, entered, None, tally, owed);
            }
            Err(Errno::XDEV) => tally.mounts_skipped += 1,
            // No longer a directory, or not readable: through O_PATH.
            Err(Errno::LOOP | Errno::NOTDIR | Errno::ACCESS | Errno::PERM) => {
                self.visit_listed_object(scope, parent, name, tally, owed);
            }
            Err(errno) => self.fail(path, Operation::Open, errno, tally),
        }
    }

    /// Entry `name` of `parent`, listed as a directory but found otherwise
    /// (or unreadable): opened `O_PATH` and checked before a directory is
    /// reopened for listing, so a name swapped for something else is
    /// labelled as what it now is.
    fn visit_listed_object<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        parent: Arc<Dir<'a, L>>,
        name: &CStr,
        tally: &mut Tally,
        owed: &mut Option<Arc<Subtree>>,
    ) {
        let path = ObjectPath::entry(&parent.path, name.to_bytes());
        let entry = match Entry::open_at(&parent.fd, name) {
            Ok(entry) => entry,
            Err(errno) => return self.fail(path, Operation::Open, errno, tally),
        };
        if entry.kind() != FileType::Directory {
            self.label_entry(&parent, name, &entry, tally);
        } else if self.leaves_filesystem(&parent.meta, entry.meta()) {
            tally.mounts_skipped += 1;
        } else {
            match entry.open_dir() {
                Ok(fd) => {
                    let name = name.to_bytes();
                    let entered = Entered {
                        fd,
                        vouching: parent.vouching.clone(),
                        meta: *entry.meta(),
                        path: parent.path.child(name),
                        excludes: self.excludes_of(&parent.excludes, name),
                        expected: self.labels.entry_label(&parent.labels, name, FileKind::Dir),
                        labels: self.labels.subdirectory(&parent.labels, name),
                    };
                    drop((entry, parent));
                    self.enter_dir(scope, entered, None, tally, owed);
                }
                // Still label it, through its O_PATH fd, then say why its
                // contents were not visited.
                Err(errno @ (Errno::ACCESS | Errno::PERM)) => {
                    self.label_entry(&parent, name, &entry, tally);
                    self.fail(path, Operation::ReadDirectory, errno, tally);
                }
                Err(errno) => self.fail(path, Operation::Open, errno, tally),
            }
        }
    }

    /// Labels an opened directory and lists it, unless its stored digest
    /// matches ([`Digests::Skip`]). `operand`: the key of an operand
    /// (which may get a seal). `owed`: the parent's pending share, taken
    /// over by this directory's subtree if it gets one.
    fn enter_dir<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        entered: Entered<'a, L>,
        operand: Option<&[u8]>,
        tally: &mut Tally,
        owed: &mut Option<Arc<Subtree>>,
    ) {
        let Entered {
            fd,
            vouching: parent_vouching,
            meta,
            path,
            excludes,
            expected,
            labels,
        } = entered;
        let fd = Arc::new(fd);
        let handle = Handle::Fd(fd.as_fd());
        let object = ObjectPath::directory(&path);
        let vouched = parent_vouching.as_ref();
        if self.label(handle, object, &meta, |_| expected, vouched, tally) == Descend::No {
            return;
        }
        let mut subtree = None;
        let mut vouching = None;
        match self.options.digests {
            Digests::Ignore if self.options.write == WriteMode::Write => {
                vouching = self.vouching(&fd, &path, parent_vouching, tally);
            }
            Digests::Ignore => {}
            Digests::Forget => {
                if let Err(errno) = seal::forget(handle) {
                    self.fail(object, Operation::RemoveDigest, errno, tally);
                }
            }
            Digests::Skip | Digests::Refresh => {
                let target = DigestTarget {
                    fd: &fd,
                    path: &path,
                    labels: &labels,
                    operand,
                    expected,
                };
                match self.check_digest(target, tally, owed) {
                    Walk::Skip => return,
                    Walk::List(own) => subtree = own,
                }
            }
        }
        let stat_entries = self
            .mount_parents
            .as_ref()
            .is_none_or(|parents| parents.contains(&(meta.dev, meta.ino)));
        let dir = Arc::new(OpenDir {
            fd,
            id: DirId::fresh(),
            path,
            meta,
            stat_entries,
            excludes,
            labels,
            subtree,
            vouching,
        });
        self.list(scope, &dir, tally);
        if let Some(subtree) = dir.subtree.clone() {
            drop(dir);
            self.settle(subtree, tally.incomplete());
        }
    }

    /// With [`Digests::Ignore`] and writes: the chain whose digests go
    /// before a label below directory `fd` is written ([`Vouching`]).
    fn vouching(
        &self,
        fd: &Arc<OwnedFd>,
        path: &PathChain,
        parent: Option<Arc<Vouching>>,
        tally: &mut Tally,
    ) -> Option<Arc<Vouching>> {
        let depth = parent.as_ref().map_or(0, |parent| parent.depth);
        if depth < LAZY_DEPTH {
            return Some(Arc::new(Vouching {
                fd: Arc::clone(fd),
                path: path.clone(),
                parent,
                depth: depth + 1,
                cleared: AtomicBool::new(false),
            }));
        }
        // Too deep to wait: its own go now; its ancestors' still wait for
        // a write.
        match seal::forget(Handle::Fd(fd.as_fd())) {
            Ok(()) | Err(Errno::OPNOTSUPP | Errno::PERM | Errno::ROFS) => {}
            Err(errno) => {
                let object = ObjectPath::directory(path);
                self.fail(object, Operation::RemoveDigest, errno, tally);
            }
        }
        parent
    }

    /// With [`Digests::Skip`] or [`Digests::Refresh`]: compares the
    /// directory's stored digest with its specs', skips the subtree if
    /// trusted and equal (sealing an operand), and otherwise drops a stale
    /// digest and, when writing, sets up the [`Subtree`] whose digest is
    /// written once everything below is handled.
    fn check_digest(
        &self,
        target: DigestTarget<'_, 'a, L>,
        tally: &mut Tally,
        owed: &mut Option<Arc<Subtree>>,
    ) -> Walk {
        let DigestTarget {
            fd,
            path,
            labels,
            operand,
            expected,
        } = target;
        let handle = Handle::Fd(fd.as_fd());
        let object = ObjectPath::directory(path);
        let digest = self
            .labels
            .subtree_digest(labels)
            .map(|d| self.stored_digest(d));
        // An operand gets a seal even without a digest of its own (a
        // substitution below it keeps it untracked).
        let seal = match (operand, self.options.specs_digest, expected) {
            (Some(key), Some(specs), Some(expected)) => {
                let inputs = SealInputs {
                    specs,
                    key,
                    options: self.options,
                };
                Some(inputs.value(digest.as_deref().unwrap_or_default(), expected))
            }
            _ => None,
        };
        let mut buffer = [0u8; 128];
        let stored = match handle.get(DIGEST_XATTR, &mut buffer) {
            Ok(len) => Some(&buffer[..len]),
            Err(_) => None,
        };
        let trusted = self.options.digests == Digests::Skip;
        let write = self.options.write == WriteMode::Write;
        if trusted && stored.is_some() && stored == digest.as_deref() {
            tally.skipped += 1;
            // An operand confirmed whole (its own label included) is
            // sealed, so the next pass need not compile.
            if let (true, false, Some(seal)) = (write, tally.incomplete(), seal) {
                if let Err(errno) = handle.set(SEAL_XATTR, &seal) {
                    self.fail(object, Operation::WriteDigest, errno, tally);
                }
            }
            return Walk::Skip;
        }
        if !write {
            return Walk::List(None);
        }
        // A stale digest goes before the walk: should this walk not
        // complete, it must not match again later.
        if stored.is_some() || operand.is_some() {
            if let Err(errno) = seal::forget(handle) {
                self.fail(object, Operation::RemoveDigest, errno, tally);
            }
        }
        match fd.try_clone() {
            Ok(dup) => Walk::List(Some(Arc::new(Subtree {
                fd: dup,
                path: path.clone(),
                digest,
                seal,
                parent: owed.take(),
                pending: AtomicUsize::new(1),
                complete: AtomicBool::new(true),
            }))),
            Err(error) => {
                let errno = Errno::from_io_error(&error).unwrap_or(Errno::MFILE);
                self.fail(object, Operation::Open, errno, tally);
                Walk::List(None)
            }
        }
    }

    /// The value stored for a directory whose live specs have `digest`:
    /// it also covers the algorithm version, the label scope and the mount
    /// policy.
    fn stored_digest(&self, digest: [u8; 32]) -> Box<[u8]> {
        let mut hasher = Sha256::new();
        hasher.update(b"semanifest subtree digest\0");
        hasher.update(DIGEST_VERSION.to_le_bytes());
        for tag in self.options.digest_tags() {
            hasher.update(tag);
        }
        hasher.update(digest);
        format!("v1:{}", hex(&hasher.finalize().into()))
            .into_bytes()
            .into()
    }

    /// Releases one pending share of `subtree` (marking it incomplete
    /// first if `incomplete`); a subtree with none left writes its digest
    /// if complete and releases its share of its parent, and so on up.
    fn settle(&self, subtree: Arc<Subtree>, incomplete: bool) {
        if incomplete {
            subtree.complete.store(false, Ordering::SeqCst);
        }
        let mut current = subtree;
        while current.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            let mut complete = current.complete.load(Ordering::SeqCst);
            if complete && (current.digest.is_some() || current.seal.is_some()) {
                let handle = Handle::Fd(current.fd.as_fd());
                let set = |name, value: &Option<Box<[u8]>>| match value {
                    Some(value) => handle.set(name, value),
                    None => Ok(()),
                };
                // The seal covers the digest: it goes second.
                let written = set(DIGEST_XATTR, &current.digest)
                    .and_then(|()| set(SEAL_XATTR, &current.seal));
                if let Err(errno) = written {
                    let mut tally = Tally::default();
                    let object = ObjectPath::directory(&current.path);
                    self.fail(object, Operation::WriteDigest, errno, &mut tally);
                    self.totals.add(&tally);
                    complete = false;
                }
            }
            let Some(parent) = current.parent.clone() else {
                return;
            };
            if !complete {
                parent.complete.store(false, Ordering::SeqCst);
            }
            current = parent;
        }
    }

    fn list<'s>(&'s self, scope: &rayon::Scope<'s>, dir: &Arc<Dir<'a, L>>, tally: &mut Tally) {
        let mut buffer = Vec::with_capacity(DIRENT_BUFFER);
        let mut entries = RawDir::new(dir.fd.as_fd(), buffer.spare_capacity_mut());
        while let Some(entry) = entries.next() {
            let entry = match entry {
                Ok(entry) => entry,
                Err(errno) => {
                    let path = ObjectPath::directory(&dir.path);
                    return self.fail(path, Operation::ReadDirectory, errno, tally);
                }
            };
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            if self.is_excluded(&dir.excludes, name.to_bytes()) {
                tally.excluded += 1;
                continue;
            }
            match entry.file_type() {
                FileType::Directory => self.spawn_dir(scope, dir, name),
                // The filesystem does not say (`DT_UNKNOWN`), or a mount
                // point may be listed here.
                FileType::Unknown => self.visit_entry(scope, dir, name, tally),
                _ if dir.stat_entries => self.visit_entry(scope, dir, name, tally),
                listed => self.label_listed(scope, dir, name, listed, entry.ino(), tally),
            }
        }
    }

    fn spawn_dir<'s>(&'s self, scope: &rayon::Scope<'s>, parent: &Arc<Dir<'a, L>>, name: &CStr) {
        if let Some(subtree) = &parent.subtree {
            subtree.pending.fetch_add(1, Ordering::SeqCst);
        }
        let job = DirJob {
            parent: Arc::clone(parent),
            name: name.to_owned(),
        };
        scope.spawn(move |scope| self.visit_dir(scope, job));
    }

    /// An entry listed as anything but a directory: examined by its name
    /// (a `statx` that follows nothing, then [`Walker::label_named`]), so
    /// nothing is opened.
    fn visit_entry<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        dir: &Arc<Dir<'a, L>>,
        name: &CStr,
        tally: &mut Tally,
    ) {
        match Meta::at(&dir.fd, name) {
            // Replaced by a directory since it was listed.
            Ok(meta) if meta.kind == FileType::Directory => self.spawn_dir(scope, dir, name),
            Ok(meta) => self.label_named(dir, name, &meta, None, None, tally),
            Err(errno) => {
                let path = ObjectPath::entry(&dir.path, name.to_bytes());
                self.fail(path, Operation::Stat, errno, tally)
            }
        }
    }

    /// An entry that `getdents` listed as `listed` (not a directory), in a
    /// directory without mount points: its label is read by name
    /// ([`working_dir::entry`], `lgetxattr`, which follows and opens
    /// nothing) and compared with the label its listed kind gets. Nothing
    /// more is asked of a label that matches; only one that must change is
    /// `statx`ed and handed to [`Walker::label_named`] as what it is by
    /// then (its mount, kind and links checked there). `ino`: `d_ino`,
    /// noting a matching object for the hard links ([`Links`]).
    fn label_listed<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        dir: &Arc<Dir<'a, L>>,
        name: &CStr,
        listed: FileType,
        ino: u64,
        tally: &mut Tally,
    ) {
        let path = ObjectPath::entry(&dir.path, name.to_bytes());
        let expected =
            self.labels
                .entry_label_with_scope(&dir.labels, name.to_bytes(), file_kind(listed));
        let Some(context) = expected.context else {
            tally.examined += 1;
            tally.no_label += 1;
            return;
        };
        let handle = working_dir::entry(dir.fd.as_fd(), dir.id, name);
        let mut buffer = LabelBuffer::new();
        let stored = match buffer.read(handle) {
            Ok(stored) => stored,
            // Gone since it was listed: counted as vanished only.
            Err(Errno::NOENT) => return tally.vanished += 1,
            Err(errno) => {
                tally.examined += 1;
                return self.fail(path, Operation::ReadLabel, errno, tally);
            }
        };
        if decide(stored, context, self.options.scope) == Decision::Keep {
            tally.examined += 1;
            tally.unchanged += 1;
            tally.kept_links.push((dir.meta.dev, ino));
            return;
        }
        match Meta::at(&dir.fd, name) {
            // Replaced by a directory since it was listed.
            Ok(meta) if meta.kind == FileType::Directory => self.spawn_dir(scope, dir, name),
            // What was read is reused only for the kind it was compared
            // as; the lookup as well, unless every kind gets its label.
            Ok(meta) => {
                let same_kind = meta.kind == listed;
                let read = same_kind.then_some(stored);
                let looked_up = (same_kind || expected.every_kind).then_some(expected);
                self.label_named(dir, name, &meta, read, looked_up, tally)
            }
            Err(errno) => self.fail(path, Operation::Stat, errno, tally),
        }
    }

    /// Labels entry `name` of `dir`, a non-directory that `meta` (a
    /// `statx` of the name) describes, by its name: its label is read with
    /// `lgetxattr(NAME)` from the worker's working directory, and written
    /// the same way when every kind of object there would get that label
    /// and the value does not depend on what was read (the full context is
    /// compared) — a rename between the `statx` and the write can then only
    /// hand the label to another object that gets the very same at that
    /// name. Otherwise (the kind decides the label, `--type-only` keeps
    /// parts of the stored value, or the inode has other links, settled
    /// after the walk)
    /// the entry is labelled through its own `O_PATH` fd instead, as what
    /// it is by then: read, decided and written through that one fd.
    ///
    /// `read`: the stored label, if the caller has just read it by name;
    /// `looked_up`: the label, if the caller has just looked it up for
    /// this kind.
    fn label_named(
        &self,
        dir: &Dir<'a, L>,
        name: &CStr,
        meta: &Meta,
        read: Option<Option<&[u8]>>,
        looked_up: Option<EntryLabel<'a>>,
        tally: &mut Tally,
    ) {
        let path = ObjectPath::entry(&dir.path, name.to_bytes());
        if self.leaves_filesystem(&dir.meta, meta) {
            tally.mounts_skipped += 1;
            return;
        }
        let kind = file_kind(meta.kind);
        let through_fd = |tally: &mut Tally| match Entry::open_at(&dir.fd, name) {
            Ok(entry) => self.label_entry(dir, name, &entry, tally),
            Err(errno) => self.fail(path, Operation::Open, errno, tally),
        };
        if meta.nlink > 1 {
            return through_fd(tally);
        }
        tally.examined += 1;
        let expected = looked_up.unwrap_or_else(|| {
            self.labels
                .entry_label_with_scope(&dir.labels, name.to_bytes(), kind)
        });
        let Some(context) = expected.context else {
            tally.no_label += 1;
            return;
        };
        let handle = working_dir::entry(dir.fd.as_fd(), dir.id, name);
        let mut buffer = LabelBuffer::new();
        let stored = match read {
            Some(stored) => stored,
            None => match buffer.read(handle) {
                Ok(stored) => stored,
                Err(errno) => return self.fail(path, Operation::ReadLabel, errno, tally),
            },
        };
        let value = match decide(stored, context, self.options.scope) {
            Decision::Keep => {
                tally.unchanged += 1;
                return;
            }
            Decision::Write(value) => value,
        };
        if self.options.write == WriteMode::Write
            && !(expected.every_kind && self.options.scope == LabelScope::Full)
        {
            // Examined again, through the fd.
            tally.examined -= 1;
            return through_fd(tally);
        }
        let vouching = dir.vouching.as_ref();
        self.write_label(handle, path, kind, stored, &value, vouching, tally);
    }

    /// Whether entry `name` of a directory is excluded.
    fn is_excluded(&self, excludes: &Excludes, name: &[u8]) -> bool {
        excludes.live.iter().any(|&i| {
            let exclude = &self.excludes[i];
            exclude.len() == excludes.depth + 1 && *exclude[excludes.depth] == *name
        })
    }

    /// The excludes below subdirectory `name` of a directory.
    fn excludes_of(&self, excludes: &Excludes, name: &[u8]) -> Excludes {
        let live = excludes.live.iter().copied().filter(|&i| {
            let exclude = &self.excludes[i];
            exclude.len() > excludes.depth + 1 && *exclude[excludes.depth] == *name
        });
        Excludes {
            depth: excludes.depth + 1,
            live: live.collect(),
        }
    }

    /// Labels `entry`, the entry `name` of `dir`, through its O_PATH fd
    /// (without descending) unless it is on another mount.
    fn label_entry(&self, dir: &Dir<'a, L>, name: &CStr, entry: &Entry, tally: &mut Tally) {
        if self.leaves_filesystem(&dir.meta, entry.meta()) {
            tally.mounts_skipped += 1;
        } else {
            let name = name.to_bytes();
            let expected = |kind| self.labels.entry_label(&dir.labels, name, kind);
            let path = ObjectPath::entry(&dir.path, name);
            let vouching = dir.vouching.as_ref();
            self.label(
                entry.handle(),
                path,
                entry.meta(),
                expected,
                vouching,
                tally,
            );
        }
    }

    /// Whether `object`, found in a directory described by `parent`, is on
    /// another mount (or device) that the walk must not enter.
    fn leaves_filesystem(&self, parent: &Meta, object: &Meta) -> bool {
        self.options.mounts == MountPolicy::SameFilesystem && object.other_mount(parent)
    }

    /// Looks up (with `expected`, given the object's kind), compares and
    /// (maybe) writes the label of one object, in the directory whose
    /// digests `vouching` holds.
    fn label(
        &self,
        handle: Handle<'_>,
        path: ObjectPath<'_>,
        meta: &Meta,
        expected: impl FnOnce(FileKind) -> Option<&'a str>,
        vouching: Option<&Arc<Vouching>>,
        tally: &mut Tally,
    ) -> Descend {
        tally.examined += 1;
        let kind = file_kind(meta.kind);
        let Some(expected) = expected(kind) else {
            tally.no_label += 1;
            return Descend::Yes;
        };
        let linked = kind != FileKind::Dir && meta.nlink > 1;
        let mut buffer = LabelBuffer::new();
        let stored = match buffer.read(handle) {
            Ok(stored) => stored,
            Err(errno) => {
                self.fail(path, Operation::ReadLabel, errno, tally);
                return if errno == Errno::OPNOTSUPP {
                    Descend::No
                } else {
                    Descend::Yes
                };
            }
        };
        let value = match decide(stored, expected, self.options.scope) {
            Decision::Keep => {
                tally.unchanged += 1;
                if linked {
                    tally.kept_links.push((meta.dev, meta.ino));
                }
                return Descend::Yes;
            }
            Decision::Write(value) => value,
        };
        if linked {
            // Settled once every link has been seen ([`Links`]); the
            // digests that vouch for it go now, as before any write.
            if self.options.write == WriteMode::Write {
                self.clear_digests(vouching, tally);
            }
            tally.deferred.push(Deferred {
                meta: *meta,
                dir: path.directory.clone(),
                name: path.name.map(Box::from),
                wanted: expected.into(),
                stored: stored.map(Box::from),
            });
            return Descend::Yes;
        }
        self.write_label(handle, path, kind, stored, &value, vouching, tally);
        Descend::Yes
    }

    /// Writes `value` through `handle` (or, in a dry run, does not) and
    /// reports the change, once the digests that vouch for the object are
    /// gone.
    #[allow(clippy::too_many_arguments)]
    fn write_label(
        &self,
        handle: Handle<'_>,
        path: ObjectPath<'_>,
        kind: FileKind,
        stored: Option<&[u8]>,
        value: &str,
        vouching: Option<&Arc<Vouching>>,
        tally: &mut Tally,
    ) {
        let written = self.options.write == WriteMode::Write;
        if written {
            self.clear_digests(vouching, tally);
            if let Err(errno) = handle.set(XATTR_NAME, &with_nul(value)) {
                return self.fail(path, Operation::WriteLabel, errno, tally);
            }
        }
        tally.relabelled += 1;
        self.observer.changed(&Relabeling {
            path,
            kind,
            found: stored,
            expected: value,
            written,
        });
    }

    /// Settles the links deferred during the walk ([`Links`]).
    fn settle_links(&mut self) {
        let links = std::mem::take(&mut self.links);
        let mut tally = Tally::default();
        links.settle(|settled| match settled {
            Settled::Kept { stored, links } => {
                for link in links {
                    self.conflict(link, &stored, &mut tally);
                }
            }
            Settled::First(links) => {
                let mut first: Option<&Deferred> = None;
                for link in links {
                    match first {
                        None if self.label_deferred(link, &mut tally) => first = Some(link),
                        // Gone or failed (counted): the next link is first.
                        None => {}
                        Some(first) if link.wanted == first.wanted => tally.unchanged += 1,
                        Some(first) => self.conflict(link, &first.wanted, &mut tally),
                    }
                }
            }
        });
        self.totals.add(&tally);
    }

    fn conflict(&self, link: &Deferred, kept: &str, tally: &mut Tally) {
        tally.hard_link_conflicts += 1;
        self.observer.hard_link_conflict(&HardLinkConflict {
            path: deferred_path(link),
            wanted: &link.wanted,
            kept,
        });
    }

    /// Labels the link that settles its inode: found again by its path
    /// below the root (nothing followed on the way), and only if it is
    /// still the object, on the same mount, that was seen in the walk.
    /// Whether it was (and its label was read).
    fn label_deferred(&self, link: &Deferred, tally: &mut Tally) -> bool {
        let path = deferred_path(link);
        let shown = path.to_bytes();
        let entry = self
            .root
            .key(Path::new(OsStr::from_bytes(&shown)))
            .and_then(|key| self.root.resolve(&key));
        let entry = match entry {
            Ok(entry) if entry.meta().same_object(&link.meta) => entry,
            Ok(_) => {
                tally.vanished += 1;
                return false;
            }
            Err(error) => {
                self.fail(path, Operation::Open, errno_of(&error), tally);
                return false;
            }
        };
        let handle = entry.handle();
        let mut buffer = LabelBuffer::new();
        let stored = match buffer.read(handle) {
            Ok(stored) => stored,
            Err(errno) => {
                self.fail(path, Operation::ReadLabel, errno, tally);
                return false;
            }
        };
        match decide(stored, &link.wanted, self.options.scope) {
            Decision::Keep => tally.unchanged += 1,
            Decision::Write(value) => {
                let kind = file_kind(link.meta.kind);
                self.write_label(handle, path, kind, stored, &value, None, tally);
            }
        }
        true
    }

    /// Removes the digests of `vouching`'s directory and of every
    /// ancestor whose digests are not gone yet, top down: what must come
    /// before a label below it is written ([`Vouching`]).
    fn clear_digests(&self, vouching: Option<&Arc<Vouching>>, tally: &mut Tally) {
        let mut chain = Vec::new();
        let mut next = vouching;
        while let Some(node) = next.filter(|node| !node.cleared.load(Ordering::Acquire)) {
            chain.push(node);
            next = node.parent.as_ref();
        }
        for node in chain.into_iter().rev() {
            match seal::forget(Handle::Fd(node.fd.as_fd())) {
                Ok(()) | Err(Errno::OPNOTSUPP | Errno::PERM | Errno::ROFS) => {}
                Err(errno) => {
                    let object = ObjectPath::directory(&node.path);
                    self.fail(object, Operation::RemoveDigest, errno, tally);
                }
            }
            // Seen only once the removal is done: a write below waits
            // for it.
            node.cleared.store(true, Ordering::Release);
        }
    }

    fn fail(&self, path: ObjectPath<'_>, operation: Operation, errno: Errno, tally: &mut Tally) {
        if errno == Errno::NOENT && operation != Operation::ReadDirectory {
            tally.vanished += 1;
            return;
        }
        tally.errors += 1;
        self.observer.failed(&ObjectError {
            path: path.to_bytes(),
            operation,
            source: errno.into(),
        });
    }

    fn finish(&self, mut tally: Tally) {
        self.totals.add(&tally);
        self.links.kept(&tally.kept_links);
        self.links.defer(std::mem::take(&mut tally.deferred));
        if tally.examined != 0 {
            self.observer.progress(tally.examined);
        }
    }
}

/// What [`Walker::check_digest`] decides.
enum Walk {
    /// The stored digest holds: the subtree is not listed.
    Skip,
    /// List it, with the [`Subtree`] its digest waits on, if any.
    List(Option<Arc<Subtree>>),
}

/// The directory whose digest [`Walker::check_digest`] checks.
struct DigestTarget<'t, 'a, L: LabelLookup + ?Sized + 'a> {
    fd: &'t Arc<OwnedFd>,
    path: &'t PathChain,
    labels: &'t L::Directory<'a>,
    /// The key of an operand, which may get a seal.
    operand: Option<&'t [u8]>,
    /// The directory's own label.
    expected: Option<&'a str>,
}

/// A directory opened for the walk, before its own label is checked.
struct Entered<'a, L: LabelLookup + ?Sized + 'a> {
    fd: OwnedFd,
    /// The parent's (`None` for an operand).
    vouching: Option<Arc<Vouching>>,
    meta: Meta,
    path: PathChain,
    excludes: Excludes,
    expected: Option<&'a str>,
    labels: L::Directory<'a>,
}

/// Where a deferred link was seen.
fn deferred_path(link: &Deferred) -> ObjectPath<'_> {
    ObjectPath {
        directory: &link.dir,
        name: link.name.as_deref(),
    }
}

/// The errno behind a failure to find an object again below the root.
fn errno_of(error: &fsroot::Error) -> Errno {
    match error {
        fsroot::Error::Io { error, .. } => Errno::from_io_error(error).unwrap_or(Errno::IO),
        fsroot::Error::Symlink { .. } => Errno::LOOP,
        _ => Errno::INVAL,
    }
}

/// A context as stored, with a trailing NUL like libselinux writes it.
fn with_nul(context: &str) -> Vec<u8> {
    let mut raw = Vec::with_capacity(context.len() + 1);
    raw.extend_from_slice(context.as_bytes());
    raw.push(0);
    raw
}

fn file_kind(file_type: FileType) -> FileKind {
    // fstat always reports a type; `Any` (for `Unknown`) matches every spec.
    FileKind::from_mode(file_type.as_raw_mode()).unwrap_or(FileKind::Any)
}
