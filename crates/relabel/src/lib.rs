//! Parallel relabelling of a directory tree: the `setfiles -F` replacement.
//!
//! For every object below the given paths the walker looks up the expected
//! context, reads `security.selinux`, and writes the expected value (with a
//! trailing NUL, like libselinux) only when it differs.
//!
//! # Invariants
//! - **Never follows a symlink, never leaves the root.** The root (the
//!   alternate root, or `/`) is opened once by [`fsroot`]; each
//!   operand is resolved from its fd with `openat2(RESOLVE_BENEATH |
//!   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` (an operand whose path
//!   crosses a symlink is an error, unless it is the symlink being
//!   labelled), and the walk uses only the fds obtained from there. Every
//!   object below is reached by a single name from `getdents` relative to
//!   its already-open parent, never followed; no absolute path is ever
//!   resolved during the walk, so trees deeper than `PATH_MAX` work and no
//!   rename or exchange of an ancestor can redirect it. Messages name
//!   objects by the path they were resolved at.
//! - **Opens no FIFO or device.** A directory is opened for listing by its
//!   name with `openat2(O_DIRECTORY, RESOLVE_NO_SYMLINKS)`, which refuses a
//!   symlink or anything but a directory before opening it; its label is
//!   read and written through that fd. Every other entry is examined by
//!   its name without opening it: `lgetxattr(NAME)` (not followed) for its
//!   label, from the worker thread's own working directory
//!   ([`fsroot::working_dir`], `fchdir`ed into the directory being
//!   listed), so no object costs a walk through `/proc`, compared with the
//!   label of the kind `getdents` listed. A label that matches costs
//!   nothing more; one that must change is followed by a `statx` (not
//!   followed) for its kind, links and mount, and handled as what it is by
//!   then. (A rename between the listing and the read only makes the walk
//!   compare another object's label with the one it would have been
//!   compared with had it been listed there; a match writes nothing.)
//!   `DT_UNKNOWN` entries, and every entry of a directory that holds a
//!   mount point, are `statx`ed before they are read.
//! - **Every label written is the one its object's kind gets.** A label is
//!   written by name (`lsetxattr(NAME)`, which follows nothing and opens
//!   nothing) only when every kind of object at that name gets that same
//!   label (no spec with a file type wins there:
//!   [`selabel::Directory::lookup_with_scope`]), the full context
//!   is compared (so the value written does not depend on what was read)
//!   and the inode has one link (by `statx`). A rename between the `statx` and the write
//!   can then only hand the label to another object that was at that name
//!   at that instant — a file, a symlink, a FIFO, a directory — and it is
//!   the label that object gets there: what a walk listing the name at that
//!   instant would write. Otherwise (a typed spec decides, `--type-only`
//!   keeps the user, role and range that were read, or the inode is
//!   multiply linked) the entry is opened `O_PATH |
//!   O_NOFOLLOW` and labelled as what that fd holds: its `statx`, its
//!   kind's lookup, the read and the write all go through that one fd (the
//!   xattr calls through `/proc/self/fd/N`, since `f*xattr` refuses `O_PATH`
//!   fds; that magic link resolves to the object itself, never to a
//!   symlink's target). A naive walker that stats a name and then writes
//!   that kind's label by name gives objects another kind's label under an
//!   exchange loop; `relabel_attacks` shows both. A by-name write checked
//!   afterwards (the name `statx`ed again, same device, inode and kind)
//!   would not close that window: two exchanges between the check before
//!   and the one after leave the same object at the name while the write
//!   went to the other. Nor do `getxattrat` and `setxattrat` (Linux 6.13)
//!   spare the `/proc` walk: with `AT_EMPTY_PATH` they refuse an `O_PATH`
//!   fd (`EBADF`, as `f*xattr` do, still on 6.18). None of this costs the
//!   usual walk anything: a name whose every kind gets one label (every
//!   name of a `/var` layout's specs but a few typed ones) is written by
//!   name, and a pass where every label is wrong makes one `lgetxattr`,
//!   one `statx` (for the links) and one `lsetxattr` per object.
//! - **One mount.** An object on another mount than its directory
//!   (compared by `statx` mount id, and by device) is skipped and counted.
//!   A directory is opened for listing with `RESOLVE_NO_XDEV` as well, so
//!   a mount point is refused before it is opened. This includes bind
//!   mounts of the same filesystem (kubelet's subPath mounts, `mount
//!   --bind` of a file or directory), which setfiles, comparing devices
//!   only, enters; [`MountPolicy::CrossMounts`] lifts the rule. Since a
//!   label read by name would go through a mount point and `getdents` does
//!   not show one, the mount table is read when the walk starts and the
//!   entries of a directory holding a mount point are `statx`ed first; a
//!   mount made after that and carrying the label its name gets is counted
//!   unchanged, not skipped (nothing is written to it). A label
//!   written by name reaches whatever is at the name when it is written: a
//!   mount made on the name between the `statx` and the write (which only
//!   a privileged process in the walker's mount namespace can do) would
//!   receive it.
//! - **Hard links: one label per inode, first link wins, in one pass.** A
//!   link whose label matches is noted by device and `d_ino`; one to write
//!   on an inode with other links is deferred to the end of the walk
//!   (`hardlinks`): a link that kept its label keeps it for the inode,
//!   else the first deferred link still there (found again below the
//!   root, checked by device, inode, kind and mount) is labelled; every
//!   other link that wants another label is a conflict.
//! - **Memory grows with the tree by eight bytes per matching object.**
//!   Pending work is a (parent directory, name) pair per unvisited
//!   subdirectory; the tree-wide state is the hard-link bookkeeping: the
//!   inode number of each object whose label matched (dropped unread when
//!   no link was deferred) and one entry per deferred link.
//!   With [`Digests::Skip`] and writes, each directory whose subtree is not
//!   finished also holds an fd, until its digest is written; with
//!   [`Digests::Ignore`] and writes, up to 64 of them per path hold theirs
//!   until no label below can be written any more (their digests go before
//!   the first).
//! - **Digests never weaken drift detection.** Only [`Digests::Skip`] reads
//!   them; a digest is written only for a subtree labelled without error,
//!   exclusion, skipped mount or hard-link conflict, after every object below
//!   it was handled; a stale one is removed before its subtree is walked.
//! - **Compare before write**; with [`WriteMode::DryRun`] nothing is written.
//! - **Every write is one `setxattr`**, so an interrupted run leaves each
//!   object either old or new, and a rerun finishes the job.
//! - **Errors are per object.** Each is reported with its path through
//!   [`Observer::failed`] and the walk goes on. Objects that vanish during the
//!   walk are counted, not reported.
//!
//! # Intended differences from setfiles 3.4
//! - An empty `security.selinux` value is repaired (setfiles fails on it).
//! - With [`LabelScope::TypeOnly`], a stored value that is not a context is
//!   replaced (restorecon fails); customizable types are not consulted.
//! - Hard links: like setfiles, one link decides the label and the links
//!   with a different spec are left alone and reported as conflicts. A
//!   link whose stored label already matched decides first; otherwise the
//!   first link visited that needed a write. Within one directory "first"
//!   is directory order, as in `setfiles -T 1`; across directories it
//!   depends on scheduling, as with `setfiles -T N`. Inodes are told apart
//!   by device and inode number (setfiles uses the inode number alone).
//! - A directory that cannot be listed is still labelled (through an
//!   `O_PATH` fd) and the listing failure reported; setfiles skips it.
//! - `--exclude` leaves the object and everything below it alone, for any
//!   file type (setfiles only honours it for directories).
//! - Paths longer than `PATH_MAX` are labelled (setfiles 3.4 silently skips
//!   them and still exits 0).

mod hardlinks;
mod label;
mod seal;
mod walk;

use std::io;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

pub use fsroot::EscapedPath;
pub use seal::{sealed, SEAL_XATTR};
pub use walk::relabel;

use selabel::path_chain::PathChain;
pub use selabel::EntryLabel;
use selabel::FileKind;

/// The xattr that holds an object's SELinux context.
pub(crate) const XATTR_NAME: &str = "security.selinux";

/// Where expected labels come from. Implemented by
/// [`selabel::FileContexts`]; `None` means "no label" (no matching
/// spec, or `<<none>>`): the object is left alone.
///
/// Paths are lookup keys (below the alternate root). The walker asks about
/// an operand by its key and about everything else as an entry of its
/// directory, so an implementation can share the work on the directory's key
/// among its entries; `entry_label(directory(d), name)` must equal
/// `expected_label(d/name)`.
pub trait LabelLookup: Sync {
    /// What the lookups of one directory's entries share.
    type Directory<'a>: Send + Sync
    where
        Self: 'a;

    fn expected_label(&self, path: &[u8], kind: FileKind) -> Option<&str>;

    fn directory(&self, path: &[u8]) -> Self::Directory<'_>;

    /// The directory `name` inside `parent`.
    fn subdirectory<'a>(&'a self, parent: &Self::Directory<'a>, name: &[u8])
        -> Self::Directory<'a>;

    fn entry_label<'a>(
        &'a self,
        directory: &Self::Directory<'a>,
        name: &[u8],
        kind: FileKind,
    ) -> Option<&'a str>;

    /// [`LabelLookup::entry_label`], and whether an object of any kind
    /// named `name` there would get the same label: then the walk may write
    /// it by name (a rename can only hand it to an object that gets the
    /// same). The default claims nothing, so every write goes through the
    /// object's own fd.
    fn entry_label_with_scope<'a>(
        &'a self,
        directory: &Self::Directory<'a>,
        name: &[u8],
        kind: FileKind,
    ) -> EntryLabel<'a> {
        EntryLabel {
            context: self.entry_label(directory, name, kind),
            every_kind: false,
        }
    }

    /// A digest of everything that decides the expected labels strictly
    /// below `directory` (for [`Digests::Skip`]); `None`: unknown, the
    /// directory is never skipped and gets no digest.
    fn subtree_digest<'a>(&'a self, _directory: &Self::Directory<'a>) -> Option<[u8; 32]> {
        None
    }
}

impl LabelLookup for selabel::FileContexts {
    type Directory<'a> = selabel::Directory<'a>;

    fn expected_label(&self, path: &[u8], kind: FileKind) -> Option<&str> {
        self.lookup(path, kind)
    }

    fn directory(&self, path: &[u8]) -> Self::Directory<'_> {
        selabel::FileContexts::directory(self, path)
    }

    fn subdirectory<'a>(
        &'a self,
        parent: &Self::Directory<'a>,
        name: &[u8],
    ) -> Self::Directory<'a> {
        parent.subdirectory(name)
    }

    fn entry_label<'a>(
        &'a self,
        directory: &Self::Directory<'a>,
        name: &[u8],
        kind: FileKind,
    ) -> Option<&'a str> {
        directory.lookup(name, kind)
    }

    fn entry_label_with_scope<'a>(
        &'a self,
        directory: &Self::Directory<'a>,
        name: &[u8],
        kind: FileKind,
    ) -> EntryLabel<'a> {
        directory.lookup_with_scope(name, kind)
    }

    fn subtree_digest<'a>(&'a self, directory: &Self::Directory<'a>) -> Option<[u8; 32]> {
        directory.live_specs_digest()
    }
}

/// The xattr that holds a directory's subtree digest
/// ([`Digests::Skip`]). A `trusted.*` name: only a process with
/// `CAP_SYS_ADMIN` can read or write it, so an unprivileged owner of a
/// directory cannot forge one to hide a wrong label below it.
pub(crate) const DIGEST_XATTR: &str = "trusted.semanifest.digest";

/// Part of every digest: a change to what a digest covers or to the walk
/// bumps it, so digests written by an older version are never trusted.
pub(crate) const DIGEST_VERSION: u32 = 1;

/// What the walk does with per-directory subtree digests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Digests {
    /// Never read: every object is examined. With [`WriteMode::Write`],
    /// the digests of every operand's ancestors are removed first, and
    /// before a label is written those of every directory above it:
    /// labels written under other specs must not be vouched for by them.
    /// A walk that writes nothing below a digest leaves it.
    #[default]
    Ignore,
    /// A directory whose stored digest matches the digest of its live specs
    /// (and the label scope) is labelled but not listed: its subtree is
    /// trusted. A directory whose whole subtree was labelled without error,
    /// exclusion, skipped mount or hard-link conflict gets the digest
    /// (unless [`WriteMode::DryRun`], which writes none).
    Skip,
    /// As `Skip`, but no stored digest is trusted: every object is
    /// examined and each fully checked subtree gets a fresh digest (a full
    /// pass forced at boot).
    Refresh,
    /// Every directory walked loses its digest (and is relabelled as with
    /// `Ignore`).
    Forget,
}

/// Whether to write labels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WriteMode {
    #[default]
    Write,
    /// Compute and report every change, write nothing (`--dry-run`,
    /// `--check`).
    DryRun,
}

/// Which part of a stored context must agree with the spec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LabelScope {
    /// The whole context (setfiles `-F`).
    #[default]
    Full,
    /// Only the type; user, role and range of a stored context are kept
    /// (restorecon without `-F`).
    TypeOnly,
}

/// Whether the walk may leave the mount it started on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MountPolicy {
    /// Skip every object on another mount or device, including mount
    /// points and same-filesystem bind mounts.
    #[default]
    SameFilesystem,
    CrossMounts,
}

/// How to relabel. Operands and excludes are resolved below the root (the
/// alternate root, or `/`) by [`fsroot`]: lexically, then without
/// following any symlink.
#[derive(Clone, Debug, Default)]
pub struct RelabelOptions {
    pub write: WriteMode,
    pub scope: LabelScope,
    pub mounts: MountPolicy,
    /// Like `setfiles -r`: the tree is an image mounted at this directory;
    /// it is stripped from each path before the lookup (`ROOT` itself is
    /// looked up as `/`). It is opened once and every operand and exclude
    /// must be inside it.
    pub alternate_root: Option<PathBuf>,
    /// Objects at or below these paths are neither labelled nor descended.
    pub excludes: Vec<PathBuf>,
    /// Worker threads; default: the number of CPUs.
    pub jobs: Option<NonZeroUsize>,
    pub digests: Digests,
    /// The digest of the file contexts the labels come from
    /// ([`selabel::ParsedContexts::digest`]). With [`Digests::Skip`]
    /// or [`Digests::Refresh`] and writes, each operand directory whose
    /// subtree digest is written or confirmed also gets a seal, which
    /// [`sealed`] checks without compiling anything.
    pub specs_digest: Option<[u8; 32]>,
}

impl RelabelOptions {
    /// The root operands are resolved below: the alternate root, or `/`.
    fn open_root(&self) -> Result<fsroot::Root, RelabelError> {
        let root = self
            .alternate_root
            .as_deref()
            .unwrap_or(std::path::Path::new("/"));
        Ok(fsroot::Root::open(root)?)
    }

    /// What the label scope and the mount policy add to a digest or seal.
    fn digest_tags(&self) -> [&'static [u8]; 2] {
        [
            match self.scope {
                LabelScope::Full => b"full",
                LabelScope::TypeOnly => b"type",
            },
            match self.mounts {
                MountPolicy::SameFilesystem => b"one mount",
                MountPolicy::CrossMounts => b"any mount",
            },
        ]
    }
}

/// A digest in lowercase hex, as digests and seals are stored.
fn hex(digest: &[u8; 32]) -> String {
    use std::fmt::Write as _;
    digest
        .iter()
        .fold(String::with_capacity(64), |mut out, byte| {
            let _ = write!(out, "{byte:02x}");
            out
        })
}

/// Totals of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Objects whose label was evaluated.
    pub examined: u64,
    /// Objects written (with [`WriteMode::DryRun`]: that would be written).
    pub relabelled: u64,
    /// Objects whose label already matched.
    pub unchanged: u64,
    /// Objects with no spec or a `<<none>>` spec, left alone.
    pub no_label: u64,
    /// Links of an inode left alone because another link keeps another
    /// label: one whose stored label already matched, or else the first
    /// that needed a write.
    pub hard_link_conflicts: u64,
    /// Objects that could not be examined or labelled (each reported).
    pub errors: u64,
    /// Objects that disappeared between listing and labelling.
    pub vanished: u64,
    /// Mount points (directories or bind-mounted files, and everything
    /// below them) not entered.
    pub mounts_skipped: u64,
    /// Objects at an excluded path (their subtrees are not counted).
    pub excluded: u64,
    /// Directories whose stored digest matched ([`Digests::Skip`]): labelled
    /// (and counted in `examined`) but not listed.
    pub skipped: u64,
    /// Operands whose seal held ([`sealed`]): nothing was compiled or
    /// walked (each is also counted in `examined`, `unchanged` and
    /// `skipped`).
    pub sealed: u64,
    /// Wall-clock duration of the run.
    pub seconds: f64,
}

/// Where an object is, as the walk reached it: its directory's path and
/// its name, joined only when shown or kept, so that a walk never builds a
/// path per object (deep trees would cost their depth for each). Displays
/// escaped, like [`EscapedPath`].
#[derive(Clone, Copy, Debug)]
pub struct ObjectPath<'a> {
    directory: &'a PathChain,
    name: Option<&'a [u8]>,
}

impl<'a> ObjectPath<'a> {
    /// The directory itself.
    pub(crate) fn directory(directory: &'a PathChain) -> Self {
        Self {
            directory,
            name: None,
        }
    }

    /// Entry `name` of `directory`.
    pub(crate) fn entry(directory: &'a PathChain, name: &'a [u8]) -> Self {
        Self {
            directory,
            name: Some(name),
        }
    }

    /// The path on disk (including any alternate root).
    pub(crate) fn to_bytes(self) -> Vec<u8> {
        let mut path = self.directory.to_vec();
        if let Some(name) = self.name {
            if !self.directory.is_root() {
                path.push(b'/');
            }
            path.extend_from_slice(name);
        }
        path
    }
}

impl std::fmt::Display for ObjectPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&EscapedPath(&self.to_bytes()), f)
    }
}

/// A label that differs from the spec, reported whether or not it is written.
#[derive(Debug)]
pub struct Relabeling<'a> {
    /// The object's path on disk (including any alternate root).
    pub path: ObjectPath<'a>,
    pub kind: FileKind,
    /// The stored context (trailing NUL removed); `None` if there was none
    /// or it was empty.
    pub found: Option<&'a [u8]>,
    /// The context written, or that would be written.
    pub expected: &'a str,
    /// False in dry-run mode.
    pub written: bool,
}

/// A later hard link whose spec disagrees with the link visited first.
#[derive(Debug)]
pub struct HardLinkConflict<'a> {
    pub path: ObjectPath<'a>,
    /// What this path's spec asks for (not applied).
    pub wanted: &'a str,
    /// The label kept: the stored one, if a link already had its label,
    /// else what the first link written asked for.
    pub kept: &'a str,
}

/// The step that failed on an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Open,
    Stat,
    ReadDirectory,
    ReadLabel,
    WriteLabel,
    WriteDigest,
    RemoveDigest,
}

impl Operation {
    fn verb(self) -> &'static str {
        match self {
            Operation::Open => "cannot open",
            Operation::Stat => "cannot stat",
            Operation::ReadDirectory => "cannot read directory",
            Operation::ReadLabel => "cannot read the label of",
            Operation::WriteLabel => "cannot write the label of",
            Operation::WriteDigest => "cannot store the subtree digest of",
            Operation::RemoveDigest => "cannot remove the subtree digest of",
        }
    }
}

/// A failure on one object; the walk continues.
#[derive(Debug, thiserror::Error)]
#[error("{} {}: {}", .operation.verb(), EscapedPath(.path), describe_io(.source))]
pub struct ObjectError {
    pub path: Vec<u8>,
    pub operation: Operation,
    #[source]
    pub source: io::Error,
}

/// The walker's errors always carry an errno, which copies exactly.
impl Clone for ObjectError {
    fn clone(&self) -> Self {
        let source = match self.source.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(self.source.kind(), self.source.to_string()),
        };
        Self {
            path: self.path.clone(),
            operation: self.operation,
            source,
        }
    }
}

fn is_unsupported(error: &io::Error) -> bool {
    error.raw_os_error() == Some(rustix::io::Errno::OPNOTSUPP.raw_os_error())
}

fn describe_io(error: &io::Error) -> String {
    if is_unsupported(error) {
        return "the filesystem does not support security.selinux xattrs".to_owned();
    }
    if error.raw_os_error() == Some(rustix::io::Errno::ROFS.raw_os_error()) {
        return "read-only filesystem".to_owned();
    }
    error.to_string()
}

/// Receives events from the worker threads while the walk runs. Each
/// worker owns its working directory ([`fsroot::working_dir`]) and
/// reaches entries by name from it: an observer must not change it.
pub trait Observer: Sync {
    fn changed(&self, _change: &Relabeling<'_>) {}
    fn failed(&self, _error: &ObjectError) {}
    fn hard_link_conflict(&self, _conflict: &HardLinkConflict<'_>) {}
    /// Called once per directory with the number of objects just examined.
    fn progress(&self, _examined: u64) {}
}

/// Ignores every event.
impl Observer for () {}

/// An owned [`Relabeling`], as kept by [`Collector`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drift {
    pub path: Vec<u8>,
    pub kind: FileKind,
    pub found: Option<Vec<u8>>,
    pub expected: String,
}

/// Keeps every change and error in memory, for callers that want a list
/// rather than a stream (drift reports, tests). Memory grows with the
/// number of drifted objects, not with the tree.
#[derive(Debug, Default)]
pub struct Collector {
    drift: Mutex<Vec<Drift>>,
    errors: Mutex<Vec<ObjectError>>,
}

impl Collector {
    /// The changes sorted by path, and the errors in the order they came.
    pub fn into_parts(self) -> (Vec<Drift>, Vec<ObjectError>) {
        let mut drift = self
            .drift
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        drift.sort_by(|a, b| a.path.cmp(&b.path));
        let errors = self
            .errors
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        (drift, errors)
    }
}

impl Observer for Collector {
    fn changed(&self, change: &Relabeling<'_>) {
        let drift = Drift {
            path: change.path.to_bytes(),
            kind: change.kind,
            found: change.found.map(<[u8]>::to_vec),
            expected: change.expected.to_owned(),
        };
        self.drift
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(drift);
    }

    fn failed(&self, error: &ObjectError) {
        self.errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(error.clone());
    }
}

/// Problems that stop a run before it starts.
#[derive(Debug, thiserror::Error)]
pub enum RelabelError {
    #[error("no paths to relabel")]
    NoPaths,
    /// The root could not be opened, or an operand or exclude not resolved
    /// below it.
    #[error(transparent)]
    Resolve(#[from] fsroot::Error),
    #[error("cannot start worker threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
}
