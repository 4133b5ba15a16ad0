//! The parallel walk: one rayon task per directory, objects handled through
//! file descriptors relative to their parent directory.

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rustix::fs::{FileType, RawDir};
use rustix::io::Errno;
use sha2::{Digest as _, Sha256};

use super::hardlinks::{Claim, HardLinks};
use super::label::{decide, stored_context, Decision};
use super::seal::{self, SealInputs, SEAL_XATTR};
use super::{
    hex, Digests, HardLinkConflict, LabelLookup, MountPolicy, ObjectError, ObjectPath, Observer,
    Operation, RelabelError, RelabelOptions, Relabeling, Summary, WriteMode, DIGEST_VERSION,
    DIGEST_XATTR, XATTR_NAME,
};
use fsroot::{components, Entry, Handle, Meta, Root};
use selabel::path_chain::PathChain;
use selabel::FileKind;

/// Bytes read per `getdents` call.
const DIRENT_BUFFER: usize = 32 * 1024;
/// Most contexts fit; longer ones are read into a heap buffer.
const INLINE_LABEL: usize = 256;

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

    let mut pool = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("relabel-{i}"));
    if let Some(jobs) = options.jobs {
        pool = pool.num_threads(jobs.get());
    }
    let pool = pool.build()?;

    let walker = Walker {
        labels,
        options,
        root,
        excludes,
        observer,
        hard_links: HardLinks::default(),
        totals: Totals::default(),
    };
    walker.totals.add(&early);
    pool.scope(|scope| {
        for operand in operands {
            walker.start(scope, operand);
        }
    });
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

/// A command-line path, resolved below the root: where the walk starts.
struct Operand {
    /// The lookup key (the path below the root).
    key: Vec<u8>,
    /// Opened `O_PATH | O_NOFOLLOW`; a symlink operand is the link.
    entry: Entry,
}

/// An open directory whose entries are being, or will be, visited.
struct OpenDir<D> {
    fd: OwnedFd,
    /// Shared with its parent's: a directory costs its name, not its depth.
    path: PathChain,
    /// Its entries must be on the same mount (unless crossing mounts).
    meta: Meta,
    /// Where the walk stands among the excludes.
    excludes: Excludes,
    /// What the label lookups of its entries share.
    labels: D,
    /// With [`Digests::Skip`] and writes: where its subtree's digest goes.
    subtree: Option<Arc<Subtree>>,
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

/// The stored `security.selinux` value, `None` if there is none. Uses
/// `inline` when it fits.
fn read_label<'b>(
    handle: Handle<'_>,
    inline: &'b mut [u8; INLINE_LABEL],
    heap: &'b mut Vec<u8>,
) -> rustix::io::Result<Option<&'b [u8]>> {
    match handle.get(XATTR_NAME, inline) {
        Ok(len) => return Ok(Some(&inline[..len])),
        Err(Errno::NODATA) => return Ok(None),
        Err(Errno::RANGE) => {}
        Err(errno) => return Err(errno),
    }
    // Longer than the inline buffer; it may change between the calls.
    loop {
        let size = match handle.size(XATTR_NAME) {
            Ok(size) => size,
            Err(Errno::NODATA) => return Ok(None),
            Err(errno) => return Err(errno),
        };
        heap.resize(size, 0);
        match handle.get(XATTR_NAME, heap) {
            Ok(len) => return Ok(Some(&heap[..len])),
            Err(Errno::NODATA) => return Ok(None),
            Err(Errno::RANGE) => continue,
            Err(errno) => return Err(errno),
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
}

impl Tally {
    /// Whether something at or below the task's objects was not fully
    /// checked: no digest may cover it.
    fn incomplete(&self) -> bool {
        self.errors != 0
            || self.mounts_skipped != 0
            || self.excluded != 0
            || self.hard_link_conflicts != 0
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
    hard_links: HardLinks,
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
            self.label(entry.handle(), object, entry.meta(), expected, &mut tally);
        }
        self.finish(tally);
    }

    /// A directory listed in `parent`: opened `O_PATH` and checked before
    /// it is reopened for listing, so a directory on another mount is never
    /// opened for reading, and a name swapped for something else since the
    /// listing is labelled as what it now is.
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
        let tally = &mut *tally;
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
            meta,
            path,
            excludes,
            expected,
            labels,
        } = entered;
        let handle = Handle::Fd(fd.as_fd());
        let object = ObjectPath::directory(&path);
        if self.label(handle, object, &meta, |_| expected, tally) == Descend::No {
            return;
        }
        let mut subtree = None;
        match self.options.digests {
            // A walk that may write labels under other specs than a
            // digest's must not leave it: a later --skip-unchanged with
            // those specs would trust labels they did not decide.
            Digests::Ignore if self.options.write == WriteMode::Write => {
                match seal::forget(handle) {
                    Ok(()) | Err(Errno::OPNOTSUPP | Errno::PERM | Errno::ROFS) => {}
                    Err(errno) => self.fail(object, Operation::RemoveDigest, errno, tally),
                }
            }
            Digests::Ignore => {}
            Digests::Forget => {
                if let Err(errno) = seal::forget(handle) {
                    self.fail(object, Operation::RemoveDigest, errno, tally);
                }
            }
            Digests::Skip | Digests::Refresh => {
                let digest = self
                    .labels
                    .subtree_digest(&labels)
                    .map(|d| self.stored_digest(d));
                // An operand gets a seal even without a digest of its own
                // (a substitution below it keeps it untracked).
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
                    // An operand confirmed whole (its own label included)
                    // is sealed, so the next pass need not compile.
                    if let (true, false, Some(seal)) = (write, tally.incomplete(), seal) {
                        if let Err(errno) = handle.set(SEAL_XATTR, &seal) {
                            self.fail(object, Operation::WriteDigest, errno, tally);
                        }
                    }
                    return;
                }
                if write {
                    // A stale digest goes before the walk: should this walk
                    // not complete, it must not match again later.
                    if stored.is_some() || operand.is_some() {
                        if let Err(errno) = seal::forget(handle) {
                            self.fail(object, Operation::RemoveDigest, errno, tally);
                        }
                    }
                    match fd.try_clone() {
                        Ok(dup) => {
                            subtree = Some(Arc::new(Subtree {
                                fd: dup,
                                path: path.clone(),
                                digest,
                                seal,
                                parent: owed.take(),
                                pending: AtomicUsize::new(1),
                                complete: AtomicBool::new(true),
                            }))
                        }
                        Err(error) => {
                            let errno = Errno::from_io_error(&error).unwrap_or(Errno::MFILE);
                            self.fail(object, Operation::Open, errno, tally);
                        }
                    }
                }
            }
        }
        let dir = Arc::new(OpenDir {
            fd,
            path,
            meta,
            excludes,
            labels,
            subtree,
        });
        self.list(scope, &dir, tally);
        if let Some(subtree) = dir.subtree.clone() {
            drop(dir);
            self.settle(subtree, tally.incomplete());
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
                _ => self.visit_entry(scope, dir, name, tally),
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

    /// An entry listed as anything but a directory: opened `O_PATH |
    /// O_NOFOLLOW` (never for I/O, so a regular file swapped for a FIFO or
    /// a device since the listing is not opened either) and labelled
    /// through that fd.
    fn visit_entry<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        dir: &Arc<Dir<'a, L>>,
        name: &CStr,
        tally: &mut Tally,
    ) {
        match Entry::open_at(&dir.fd, name) {
            // Replaced by a directory since it was listed.
            Ok(entry) if entry.kind() == FileType::Directory => self.spawn_dir(scope, dir, name),
            Ok(entry) => self.label_entry(dir, name, &entry, tally),
            Err(errno) => {
                let path = ObjectPath::entry(&dir.path, name.to_bytes());
                self.fail(path, Operation::Open, errno, tally)
            }
        }
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
            self.label(entry.handle(), path, entry.meta(), expected, tally);
        }
    }

    /// Whether `object`, found in a directory described by `parent`, is on
    /// another mount (or device) that the walk must not enter.
    fn leaves_filesystem(&self, parent: &Meta, object: &Meta) -> bool {
        self.options.mounts == MountPolicy::SameFilesystem && object.other_mount(parent)
    }

    /// Looks up (with `expected`, given the object's kind), compares and
    /// (maybe) writes the label of one object.
    fn label(
        &self,
        handle: Handle<'_>,
        path: ObjectPath<'_>,
        meta: &Meta,
        expected: impl FnOnce(FileKind) -> Option<&'a str>,
        tally: &mut Tally,
    ) -> Descend {
        tally.examined += 1;
        let kind = file_kind(meta.kind);
        let Some(expected) = expected(kind) else {
            tally.no_label += 1;
            return Descend::Yes;
        };
        if kind != FileKind::Dir && meta.nlink > 1 {
            if let Claim::Conflict(kept) = self.hard_links.claim(meta.dev, meta.ino, expected) {
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
        let stored = match read_label(handle, &mut inline, &mut heap) {
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
            if let Err(errno) = handle.set(XATTR_NAME, &raw) {
                self.fail(path, Operation::WriteLabel, errno, tally);
                return Descend::Yes;
            }
        }
        tally.relabelled += 1;
        self.observer.changed(&Relabeling {
            path,
            kind,
            found: stored,
            expected: &value,
            written,
        });
        Descend::Yes
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
    meta: Meta,
    path: PathChain,
    excludes: Excludes,
    expected: Option<&'a str>,
    labels: L::Directory<'a>,
}

fn file_kind(file_type: FileType) -> FileKind {
    // fstat always reports a type; `Any` (for `Unknown`) matches every spec.
    FileKind::from_mode(file_type.as_raw_mode()).unwrap_or(FileKind::Any)
}
