//! `rm`: deletes objects strictly below a `removable` root of the layout,
//! and nothing else.
//!
//! An operand is a layout path (`/var/mnt/x`, taken below the root; a path
//! that starts with the root has it stripped first, as `relabel --root`
//! does). Every operand is checked before anything is removed; one refusal
//! and nothing is removed at all:
//!
//! - lexically: no `..`, strictly below a removable root (never the root
//!   itself, never outside one), and neither inside nor holding a
//!   protected path of the layout;
//! - on disk: the removable root is reached from the root's fd with
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS)`, one component at a time (it may be a mount
//!   point itself, but only one `mount_rule` accepts: never a bind mount
//!   of another directory, which would make rm remove there), then the
//!   operand's parent from the removable root's fd with `RESOLVE_NO_XDEV`
//!   added: a symlink on the way is refused, and so is any mount point. The
//!   last component is opened `O_PATH | O_NOFOLLOW`: a symlink there is
//!   the object (unlinked, never followed); a mount point (a bind-mounted
//!   file or directory) is refused; so is an object whose label has a
//!   protected type (a hard link to an etcd file keeps etcd's label), a
//!   directory without `recursive`, and a directory that holds a mount
//!   point anywhere below it (the mount table).
//!
//! A directory's contents then go through `delete`: every level
//! is opened from its parent's fd with the same `openat2` flags including
//! `RESOLVE_NO_XDEV`, everything else is removed by name in its open
//! parent (`unlinkat` removes a symlink itself), and every object's label
//! is checked against the protected types. A directory swapped for a
//! symlink at any moment is therefore never followed: the worst a
//! concurrent writer below the removable root can do is make `rm` remove
//! its symlink, or keep something. What is kept inside a tree (a protected
//! label, a mount made meanwhile) is reported as refused.
//!
//! What is left to the policy: a label is read before the object is
//! unlinked by name, so a process that could rename a protected object
//! into the tree in between would win that race; the layout's
//! neverallows keep every workload from renaming or linking protected
//! objects at all.

use std::ffi::CString;
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

use rustix::fs::{self as rfs, AtFlags, FileType, StatxFlags};
use rustix::io::Errno;
use serde::Serialize;

use super::delete::{self, DeleteOptions, Guard};
use super::{describe, mount_rule, read_label, NodeError, PathError};
use fsroot::{self, Crossing, Entry, EscapedPath, Handle, Meta, Root};
use layout::model::Layout;
use selabel::path_chain::PathChain;

/// How to remove.
#[derive(Clone, Copy, Debug, Default)]
pub struct RemoveOptions {
    /// Remove directories and everything below them (`rm -r`).
    pub recursive: bool,
    /// Check and count everything; remove nothing.
    pub dry_run: bool,
    /// Threads deleting trees (default: the number of CPUs).
    pub jobs: Option<NonZeroUsize>,
    /// Add up the bytes freed: one `statx` per object, about a tenth of
    /// the run on a tmpfs, which is why it is asked for, not done always.
    pub count_bytes: bool,
}

/// What became of one operand.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Removed {
    /// The operand's path on this machine (with the root), escaped.
    pub path: String,
    /// `file`, `directory`, `symlink` or `other` (FIFO, socket, device).
    pub kind: &'static str,
    /// Objects removed (or that would be), the operand included.
    pub objects: u64,
    /// Blocks freed, in bytes (objects whose last link went); `None`
    /// when bytes were not counted.
    pub bytes: Option<u64>,
    /// The operand itself is gone (or would be).
    pub complete: bool,
}

/// What one run did.
#[derive(Clone, Debug, Serialize)]
pub struct RemoveReport {
    pub dry_run: bool,
    pub recursive: bool,
    /// Objects removed in all (or that would be).
    pub objects: u64,
    /// Bytes freed in all; `None` when bytes were not counted.
    pub bytes: Option<u64>,
    /// The operands that were removed, in the order given.
    pub operands: Vec<Removed>,
    /// Refused on purpose: an operand (then nothing was removed), or an
    /// object kept inside a tree (a protected label, a mount point).
    pub refused: Vec<PathError>,
    /// Refusals in all (`refused` holds at most a thousand per tree).
    pub refused_total: u64,
    /// Objects that could not be removed (the operand missing included).
    pub errors: Vec<PathError>,
    pub errors_total: u64,
    pub seconds: f64,
}

impl RemoveReport {
    /// Something was refused: exit 2.
    pub fn refusals(&self) -> bool {
        self.refused_total > 0
    }

    /// Something could not be removed: exit 1.
    pub fn failures(&self) -> bool {
        self.errors_total > 0
    }
}

/// Removes `operands` below `root` as the layout allows (see the module
/// docs). `Err` only when the run cannot start; refusals and failures
/// are in the report.
pub fn remove(
    layout: &Layout,
    root: &Root,
    operands: &[&Path],
    options: RemoveOptions,
) -> Result<RemoveReport, NodeError> {
    let started = Instant::now();
    let _lock = if options.dry_run {
        None
    } else {
        Some(root.lock()?)
    };
    let rules = Rules::of(layout);
    let mut report = RemoveReport {
        dry_run: options.dry_run,
        recursive: options.recursive,
        objects: 0,
        bytes: options.count_bytes.then_some(0),
        operands: Vec::new(),
        refused: Vec::new(),
        refused_total: 0,
        errors: Vec::new(),
        errors_total: 0,
        seconds: 0.0,
    };
    let mut targets = Vec::new();
    for operand in operands {
        match examine(layout, root, &rules, operand, options) {
            Ok(target) => targets.push(target),
            Err(Problem::Refused(refusal)) => report.refuse(refusal),
            Err(Problem::Failed(error)) => report.fail(error),
        }
    }
    if report.refusals() {
        // Nothing is removed when any operand is refused.
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    let pool = if targets.iter().any(|t| t.kind == FileType::Directory) {
        fsroot::raise_fd_limit();
        Some(delete::pool(options.jobs).build()?)
    } else {
        None
    };
    for target in targets {
        let done = target.remove(pool.as_ref(), &rules.guard, options, &mut report);
        report.objects += done.objects;
        report.bytes = report.bytes.zip(done.bytes).map(|(all, own)| all + own);
        report.operands.push(done);
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

impl RemoveReport {
    fn refuse(&mut self, refusal: PathError) {
        self.refused_total += 1;
        self.refused.push(refusal);
    }

    fn fail(&mut self, error: PathError) {
        self.errors_total += 1;
        self.errors.push(error);
    }
}

/// What the layout says about removal.
struct Rules {
    /// The `removable: true` roots, longest first (the innermost matches).
    removable: Vec<String>,
    /// The protected paths, for the lexical check.
    protected: Vec<String>,
    guard: Guard,
}

impl Rules {
    fn of(layout: &Layout) -> Self {
        let mut removable: Vec<String> = layout
            .paths
            .iter()
            .filter(|rule| rule.removable)
            .map(|rule| rule.path.clone())
            .collect();
        removable.sort_by_key(|path| std::cmp::Reverse(path.len()));
        let protected = layout.paths.iter().filter(|rule| rule.protected);
        Rules {
            removable,
            protected: protected.clone().map(|rule| rule.path.clone()).collect(),
            guard: Guard {
                protected: protected.map(|rule| rule.type_name.clone()).collect(),
            },
        }
    }
}

/// Why an operand is not removed.
enum Problem {
    /// Refused on purpose: exit 2, nothing removed.
    Refused(PathError),
    /// Cannot be removed (missing, unreadable): exit 1.
    Failed(PathError),
}

fn refused(path: &[u8], message: impl Into<String>) -> Problem {
    Problem::Refused(PathError::new(path, message))
}

fn failed(path: &[u8], message: impl Into<String>) -> Problem {
    Problem::Failed(PathError::new(path, message))
}

/// An operand checked and opened, ready to go.
struct Target {
    /// The path on this machine, for messages.
    shown: Vec<u8>,
    /// Its parent, reached without symlinks or mounts.
    parent: OwnedFd,
    name: CString,
    kind: FileType,
    /// A directory's listing fd.
    listing: Option<OwnedFd>,
    /// The operand's own blocks, if its removal frees them.
    bytes: u64,
}

/// Where an operand lies in the layout, before anything is opened.
struct Located<'r> {
    key: Vec<u8>,
    shown: Vec<u8>,
    /// The removable root it is below.
    removable: &'r str,
    /// Its parent, relative to the removable root (`None`: directly in it).
    parent: Option<CString>,
    name: CString,
}

/// The operand's object, opened below its parent.
struct Opened {
    parent: OwnedFd,
    parent_meta: Meta,
    entry: Entry,
}

/// Checks one operand and opens it (see the module docs): each step
/// refuses or fails with a message naming the operand.
fn examine(
    layout: &Layout,
    root: &Root,
    rules: &Rules,
    operand: &Path,
    options: RemoveOptions,
) -> Result<Target, Problem> {
    let located = locate(root, rules, operand)?;
    let top = open_removable_root(layout, root, &located)?;
    let opened = open_operand(root, &top, &located)?;
    let shown = &located.shown;
    let kind = opened.entry.kind();
    let listing = match kind {
        FileType::Directory if !options.recursive => {
            return Err(refused(
                shown,
                "is a directory; rm -r removes it and everything below it",
            ))
        }
        FileType::Directory => Some(open_tree(&opened, &located)?),
        _ => None,
    };
    check_label(rules, &opened, &located, listing.as_ref())?;
    if listing.is_some() {
        check_no_mounts_below(root, &located)?;
    }
    let bytes = if options.count_bytes {
        own_bytes(opened.entry.fd(), kind)
    } else {
        0
    };
    Ok(Target {
        shown: located.shown,
        parent: opened.parent,
        name: located.name,
        kind,
        listing,
        bytes,
    })
}

/// The lexical checks: an absolute path (or one inside the root) without
/// `..`, strictly below a removable root, neither in nor holding a
/// protected path.
fn locate<'r>(root: &Root, rules: &'r Rules, operand: &Path) -> Result<Located<'r>, Problem> {
    let raw = operand.as_os_str().as_bytes();
    let key = key_of(root, raw)?;
    let shown = root.display(&key);
    let Some(removable) = rules
        .removable
        .iter()
        .find(|removable| is_at_or_below(&key, removable.as_bytes()))
    else {
        let roots = if rules.removable.is_empty() {
            "the layout declares none".to_owned()
        } else {
            rules.removable.join(", ")
        };
        return Err(refused(
            &shown,
            format!("not below a removable root of the layout ({roots}); rm removes nothing else"),
        ));
    };
    if rules.removable.iter().any(|r| r.as_bytes() == key) {
        return Err(refused(
            &shown,
            format!("is the removable root {removable} itself; rm removes only what is below it"),
        ));
    }
    for protected in &rules.protected {
        if is_at_or_below(&key, protected.as_bytes()) {
            return Err(refused(
                &shown,
                format!("lies in the protected layout path {protected}: never removed"),
            ));
        }
        if is_at_or_below(protected.as_bytes(), &key) {
            return Err(refused(
                &shown,
                format!("holds the protected layout path {protected}: never removed"),
            ));
        }
    }
    let below = &key[removable.len() + 1..];
    let no_nul =
        |bytes: &[u8]| CString::new(bytes).map_err(|_| refused(raw, "a path holds no NUL byte"));
    let (parent, name) = match below.iter().rposition(|&b| b == b'/') {
        Some(slash) => (Some(no_nul(&below[..slash])?), no_nul(&below[slash + 1..])?),
        None => (None, no_nul(below)?),
    };
    Ok(Located {
        key,
        shown,
        removable,
        parent,
        name,
    })
}

/// The removable root, reached from the root's fd: symlinks on the way
/// are refused; mounts are entered (it is often a mount point itself),
/// but only those `mount_rule` accepts (never a bind mount of another
/// directory).
fn open_removable_root(
    layout: &Layout,
    root: &Root,
    located: &Located<'_>,
) -> Result<(OwnedFd, Meta), Problem> {
    let (shown, removable) = (&located.shown, located.removable);
    let reached = root
        .reach_dir(removable.as_bytes())
        .map_err(|error| match error {
            fsroot::Error::Symlink { symlink, .. } => refused(
                shown,
                format!(
                    "{} on the way to the removable root {removable}; rm never follows symlinks",
                    match symlink {
                        Some(at) => format!("{} is a symlink", EscapedPath(&at)),
                        None => "a directory is a symlink".to_owned(),
                    }
                ),
            ),
            error => failed(shown, format!("cannot reach the removable root: {error}")),
        })?;
    if let Some(refusal) = mount_rule::refusals(layout, root, &reached.mounts)
        .into_iter()
        .next()
    {
        return Err(refused(
            shown,
            format!(
                "the way to the removable root {removable} is refused: {refusal}; nothing was \
                 removed"
            ),
        ));
    }
    Ok((reached.fd, reached.meta))
}

/// The operand's parent, from the removable root with `RESOLVE_NO_XDEV`
/// added, and the operand itself `O_PATH | O_NOFOLLOW`: a symlink on the
/// way is refused, so is any mount point.
fn open_operand(
    root: &Root,
    (top, top_meta): &(OwnedFd, Meta),
    located: &Located<'_>,
) -> Result<Opened, Problem> {
    let shown = &located.shown;
    let removable = located.removable;
    let below = &located.key[removable.len() + 1..];
    let parent = fsroot::open_dir_beneath(
        top,
        located.parent.as_deref().unwrap_or(c"."),
        Crossing::NoMounts,
    )
    .map_err(|errno| on_the_way(root, top, removable, below, shown, errno))?;
    let parent_meta = Meta::of(parent.as_fd()).map_err(|e| failed(shown, describe(e)))?;
    if parent_meta.other_mount(top_meta) {
        // RESOLVE_NO_XDEV already refuses this; kept as a second lock.
        return Err(refused(
            shown,
            "lies on another mount; rm never crosses mounts",
        ));
    }
    let entry = match Entry::open_at(&parent, &located.name) {
        Ok(entry) => entry,
        Err(Errno::NOENT) => return Err(failed(shown, "cannot remove: no such file or directory")),
        Err(errno) => return Err(failed(shown, format!("cannot open: {}", describe(errno)))),
    };
    if entry.meta().other_mount(&parent_meta) {
        return Err(refused(
            shown,
            "is a mount point (another filesystem or a bind mount): rm never removes or crosses mounts",
        ));
    }
    Ok(Opened {
        parent,
        parent_meta,
        entry,
    })
}

/// A directory operand opened for listing without crossing a mount, and
/// checked to be the object examined.
fn open_tree(opened: &Opened, located: &Located<'_>) -> Result<OwnedFd, Problem> {
    let shown = &located.shown;
    let fd = fsroot::open_listing_beneath(&opened.parent, &located.name, Crossing::NoMounts)
        .map_err(|errno| match errno {
            Errno::XDEV => refused(
                shown,
                "is a mount point: rm never removes or crosses mounts",
            ),
            errno => failed(
                shown,
                format!(
                    "changed while it was examined; not removed ({})",
                    describe(errno)
                ),
            ),
        })?;
    let meta = Meta::of(fd.as_fd()).map_err(|e| failed(shown, describe(e)))?;
    let examined = opened.entry.meta();
    if (meta.dev, meta.ino, meta.mount) != (examined.dev, examined.ino, examined.mount)
        || meta.mount != opened.parent_meta.mount
    {
        return Err(failed(shown, "changed while it was examined; not removed"));
    }
    Ok(fd)
}

/// Refuses an operand whose label has a protected type (a hard link to
/// an etcd file keeps etcd's label).
fn check_label(
    rules: &Rules,
    opened: &Opened,
    located: &Located<'_>,
    listing: Option<&OwnedFd>,
) -> Result<(), Problem> {
    let label = match (listing, opened.entry.kind()) {
        (Some(fd), _) => read_label(Handle::Fd(fd.as_fd())),
        (None, FileType::Symlink) => {
            read_label(Handle::Named(opened.parent.as_fd(), &located.name))
        }
        (None, _) => read_label(opened.entry.handle()),
    };
    let label = label.map_err(|errno| {
        failed(
            &located.shown,
            format!("cannot read the label: {}", describe(errno)),
        )
    })?;
    match rules.guard.refusal(label.as_deref()) {
        Some(reason) => Err(refused(&located.shown, reason)),
        None => Ok(()),
    }
}

/// Refuses a directory that holds a mount point anywhere below it.
fn check_no_mounts_below(root: &Root, located: &Located<'_>) -> Result<(), Problem> {
    let mounts = root
        .mounts_below(&located.key)
        .map_err(|error| failed(&located.shown, error.to_string()))?;
    let Some(first) = mounts.first() else {
        return Ok(());
    };
    let more = match mounts.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    Err(refused(
        &located.shown,
        format!(
            "holds the mount point {}{more}; rm never crosses mounts (unmount first)",
            EscapedPath(&root.display(first))
        ),
    ))
}

/// The blocks an object frees when it goes: a directory's always, another
/// object's when this is its last link.
fn own_bytes(fd: BorrowedFd<'_>, kind: FileType) -> u64 {
    let mask = StatxFlags::NLINK | StatxFlags::BLOCKS;
    match rfs::statx(fd, c"", AtFlags::EMPTY_PATH, mask) {
        Ok(stx) if kind == FileType::Directory || stx.stx_nlink <= 1 => stx.stx_blocks * 512,
        _ => 0,
    }
}

/// The key below the root an operand names: a path inside the root (as
/// given or as it really is) loses the root; another absolute path is a
/// layout path taken below it. `..` is refused, never resolved.
fn key_of(root: &Root, raw: &[u8]) -> Result<Vec<u8>, Problem> {
    if raw.is_empty() {
        return Err(refused(raw, "an empty path"));
    }
    if !raw.starts_with(b"/") {
        return Err(refused(
            raw,
            "is a relative path; rm takes layout paths (/var/mnt/x, below --root) or paths \
             that start with the root, never relative to the working directory",
        ));
    }
    if raw
        .split(|&b| b == b'/')
        .any(|component| component == b"..")
    {
        return Err(refused(
            raw,
            "contains `..`; rm takes paths without `..` and never walks up",
        ));
    }
    match root.key(Path::new(std::ffi::OsStr::from_bytes(raw))) {
        Ok(key) => Ok(key),
        Err(fsroot::Error::OutsideRoot { .. }) if raw.starts_with(b"/") => Ok(normalise(raw)),
        Err(fsroot::Error::OutsideRoot { root: at, .. }) => Err(refused(
            raw,
            format!(
                "is outside the root {}; rm removes nothing else",
                EscapedPath(&at)
            ),
        )),
        Err(error) => Err(failed(raw, error.to_string())),
    }
}

/// An absolute path without empty or `.` components (it holds no `..`).
fn normalise(path: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(path.len());
    for component in path.split(|&b| b == b'/') {
        if !matches!(component, b"" | b".") {
            key.push(b'/');
            key.extend_from_slice(component);
        }
    }
    if key.is_empty() {
        key.push(b'/');
    }
    key
}

/// `path` equals `ancestor` or lies below it.
fn is_at_or_below(path: &[u8], ancestor: &[u8]) -> bool {
    path.strip_prefix(ancestor)
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

/// The problem for an operand whose parent could not be reached from the
/// removable root `top` (`below`: the operand relative to it), naming the
/// component at fault when a second walk finds it.
fn on_the_way(
    root: &Root,
    top: &OwnedFd,
    removable: &str,
    below: &[u8],
    shown: &[u8],
    errno: Errno,
) -> Problem {
    let culprit = || -> Option<Vec<u8>> {
        let mut walked = Vec::new();
        for component in below.split(|&b| b == b'/') {
            if !walked.is_empty() {
                walked.push(b'/');
            }
            walked.extend_from_slice(component);
            let rel = CString::new(walked.clone()).ok()?;
            if let Err(found) = fsroot::open_dir_beneath(top, &rel, Crossing::NoMounts) {
                if found == errno {
                    let mut key = removable.as_bytes().to_vec();
                    key.push(b'/');
                    key.extend_from_slice(&walked);
                    return Some(root.display(&key));
                }
                return None;
            }
        }
        None
    };
    let at = culprit();
    let named = |what: &str| match &at {
        Some(at) => format!("{} {what}", EscapedPath(at)),
        None => format!("a directory on the way {what}"),
    };
    match errno {
        Errno::LOOP => refused(
            shown,
            format!(
                "{}; rm never follows symlinks (only a symlink named as the path itself is removed, not followed)",
                named("is a symlink")
            ),
        ),
        Errno::XDEV => refused(
            shown,
            format!("{}; rm never crosses mounts", named("is a mount point")),
        ),
        Errno::NOENT => failed(shown, "cannot remove: no such file or directory"),
        Errno::NOTDIR => failed(shown, format!("cannot remove: {}", named("is not a directory"))),
        errno => failed(shown, format!("cannot reach: {}", describe(errno))),
    }
}

impl Target {
    /// Removes the operand (a tree through [`delete`]).
    fn remove(
        self,
        pool: Option<&rayon::ThreadPool>,
        guard: &Guard,
        options: RemoveOptions,
        report: &mut RemoveReport,
    ) -> Removed {
        let mut done = Removed {
            path: EscapedPath(&self.shown).to_string(),
            kind: kind_name(self.kind),
            objects: 0,
            bytes: options.count_bytes.then_some(0),
            complete: false,
        };
        if let (Some(listing), Some(pool)) = (self.listing, pool) {
            let delete_options = DeleteOptions {
                dry_run: options.dry_run,
                count_bytes: options.count_bytes,
                guard: Some(guard),
            };
            let outcome = delete::delete_contents(
                pool,
                listing,
                PathChain::new(&self.shown),
                &delete_options,
            );
            done.objects += outcome.objects;
            done.bytes = done.bytes.map(|bytes| bytes + outcome.bytes);
            report.refused.extend(outcome.refused);
            report.refused_total += outcome.refused_total;
            report.errors.extend(outcome.errors);
            report.errors_total += outcome.errors_total;
            if !outcome.complete {
                return done;
            }
        }
        let result = if options.dry_run {
            Ok(())
        } else if self.kind == FileType::Directory {
            fsroot::remove_dir(&self.parent, &self.name)
        } else {
            fsroot::unlink(&self.parent, &self.name)
        };
        match result {
            Ok(()) => {
                done.objects += 1;
                done.bytes = done.bytes.map(|bytes| bytes + self.bytes);
                done.complete = true;
            }
            // Gone meanwhile (an operand inside another one).
            Err(Errno::NOENT) => done.complete = true,
            Err(Errno::BUSY) => report.refuse(PathError::new(
                &self.shown,
                "became a mount point: rm never removes mounts",
            )),
            Err(Errno::NOTEMPTY) => report.fail(PathError::new(
                &self.shown,
                "cannot remove: something was created in it meanwhile (kept)",
            )),
            Err(Errno::ISDIR | Errno::NOTDIR) => report.fail(PathError::new(
                &self.shown,
                "cannot remove: it was replaced meanwhile (kept, never followed)",
            )),
            Err(errno) => report.fail(PathError::errno(&self.shown, "remove", errno)),
        }
        done
    }
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "directory",
        FileType::RegularFile => "file",
        FileType::Symlink => "symlink",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_without_dots() {
        assert_eq!(normalise(b"/var//mnt/./x/"), b"/var/mnt/x");
        assert_eq!(normalise(b"/"), b"/");
        assert!(is_at_or_below(b"/var/mnt/x", b"/var/mnt"));
        assert!(is_at_or_below(b"/var/mnt", b"/var/mnt"));
        assert!(!is_at_or_below(b"/var/mntx", b"/var/mnt"));
    }
}
