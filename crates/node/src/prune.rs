//! `prune`: declared directories emptied by lifecycle or by name, each
//! directory itself kept with its mode, owner and label.
//!
//! **What is emptied.** The selected paths (every declared path of the
//! given lifecycles, or the declared paths named), and below each of them
//! every declared path with the same lifecycle that is not `protected`
//! (it too is emptied and kept), recursively. Another declared path below
//! (a different lifecycle, or protected and not selected itself) is a
//! boundary: kept whole, never entered. Undeclared directories between a
//! pruned path and a declared path or mount below it are entered, emptied
//! of everything else and kept.
//!
//! **Boundaries of the walk.** A pruned path is reached from the root one
//! component at a time with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`; it may be a mount point
//! itself, and so may a directory on its way, but only one `mount_rule`
//! accepts (a filesystem at its own root, a directory bound onto itself,
//! the layout's tmpfs): a bind mount of another directory there is an
//! error naming it, checked for every selected path before anything
//! changes (exit 2). Everything below it is reached with `RESOLVE_NO_XDEV` as well,
//! one name at a time from an open directory, and entries are moved by name
//! from their open parent, so no symlink is ever followed. A mount point
//! below a pruned path (that is not a declared path) is an error naming it
//! and nothing under it is touched: it is found in the mount table
//! before anything moves, and a mount made meanwhile is refused by the
//! kernel (`EBUSY` for a rename, `EXDEV` for a walk).
//!
//! **Labels.** An entry whose label has a protected type of the layout
//! (other than the pruned path's own) is never moved, nor deleted inside a
//! moved tree: a bind mount of a whole filesystem's root looks like that
//! filesystem, and what it exposes is still guarded by its labels.
//!
//! **Crash safety.** Each entry moves in one `renameat2(RENAME_NOREPLACE)`
//! into the pruned directory's own `.semanifest-trash` (so on its
//! filesystem), and only when every entry has moved is the trash deleted,
//! in parallel. A prune killed at any moment leaves every entry either in
//! place or in the trash; the next `prune` (or `apply`) empties a trash
//! that carries semanifest's mark, and never one that does not. What
//! cannot be deleted from the trash (an immutable file, a mount placed in
//! it) stays there: a warning, retried by the next run, never an error,
//! since the pruned path itself is empty.
//!
//! **A full filesystem.** When the trash cannot be made, or an entry
//! cannot be moved into it, for want of space or quota (`ENOSPC`,
//! `EDQUOT`), the entry is deleted where it is, with the same walk and the
//! same checks; only crash safety differs (a prune killed then leaves that
//! entry partly deleted). The report says which entries went so.

use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Instant;

use fsroot::Handle;
use rustix::fs::{self as rfs, AtFlags, FileType, RawDir, StatxFlags};
use rustix::io::Errno;
use serde::Serialize;

use super::delete::{self, DeleteOptions, Guard, Outcome};
use super::{apply, describe, mount_rule, read_label, trash, NodeError, PathError};
use fsroot::{self, Crossing, EscapedPath, Root};
use layout::model::{is_within, Layout, Lifecycle, PathRule};
use selabel::path_chain::PathChain;

/// Bytes read per `getdents` call.
const DIRENT_BUFFER: usize = 32 * 1024;
/// Listings of one directory while entries keep appearing in it.
const MAX_PASSES: usize = 4;

/// Which declared paths to empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Every declared path with one of these lifecycles (`persistent` is
    /// refused: persistent paths are pruned only when named).
    Lifecycles(Vec<Lifecycle>),
    /// These declared paths (layout paths, such as `/var/lib/containerd`).
    Paths(Vec<String>),
}

/// How to prune.
#[derive(Clone, Debug, Default)]
pub struct PruneOptions {
    /// Count what would be removed; change nothing.
    pub dry_run: bool,
    /// Deletion threads; the number of CPUs by default.
    pub jobs: Option<NonZeroUsize>,
    /// Layout paths (or ancestors of one) the image may hold as symlinks
    /// out of the layout, as `apply --keep-symlink` takes them: a selected
    /// path at or below one that is such a symlink is left alone and
    /// reported, never followed.
    pub keep_symlinks: Vec<String>,
}

/// Why a declared path is emptied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// Named as an operand.
    Named,
    /// Its lifecycle was selected.
    Lifecycle,
    /// Below an emptied path, with the same lifecycle, not protected.
    Nested,
}

/// Why a declared path below an emptied one is kept whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeptWhy {
    /// It has another lifecycle.
    Lifecycle,
    /// It has the same lifecycle but is protected, and was not selected.
    Protected,
}

/// A declared path below an emptied one that is kept whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Boundary {
    /// The path on this machine (root included), escaped.
    pub path: String,
    pub why: KeptWhy,
    #[serde(serialize_with = "lifecycle_name")]
    pub lifecycle: Lifecycle,
}

/// A lifecycle as the layout writes it (`cache`).
fn lifecycle_name<S: serde::Serializer>(lifecycle: &Lifecycle, out: S) -> Result<S::Ok, S::Error> {
    out.serialize_str(lifecycle.as_str())
}

/// What happened to one emptied declared path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TargetReport {
    /// The path on this machine (root included), escaped.
    pub path: String,
    /// The layout path.
    pub layout_path: String,
    #[serde(serialize_with = "lifecycle_name")]
    pub lifecycle: Lifecycle,
    pub reason: Reason,
    /// The directory does not exist: nothing to empty.
    pub missing: bool,
    /// Entries moved into the trash (or that would be).
    pub entries: u64,
    /// Objects removed (or that would be), directories included, the
    /// leftover trash's too.
    pub objects: u64,
    /// Bytes freed (blocks of objects whose last link went).
    pub bytes: u64,
    /// Objects and bytes of them that a trash left by an interrupted run
    /// held.
    pub leftover_objects: u64,
    pub leftover_bytes: u64,
    /// Objects that could not be deleted and stay in `.semanifest-trash`
    /// (warnings; the next prune or apply tries again).
    pub left_in_trash: u64,
    /// Entries deleted where they were instead of through the trash (the
    /// filesystem had no room for it: see `in_place_reason`).
    pub in_place_entries: u64,
    /// Why entries were deleted in place, if any were.
    pub in_place_reason: Option<String>,
    /// Declared paths below kept whole.
    pub kept: Vec<Boundary>,
    /// Where the symlink the image holds at this path (or at the ancestor
    /// named with `--keep-symlink`) points: the path was left alone.
    pub symlink: Option<String>,
    /// Nothing is left in the directory but the declared paths (and the
    /// undeclared directories leading to them) and what errors name.
    pub complete: bool,
}

/// What one run did.
#[derive(Clone, Debug, Serialize)]
pub struct PruneReport {
    pub dry_run: bool,
    pub targets: Vec<TargetReport>,
    /// Totals over the targets.
    pub objects: u64,
    pub bytes: u64,
    /// What is left in a pruned path: exit 1.
    pub errors: Vec<PathError>,
    /// What stays in a trash because it could not be deleted (the pruned
    /// path itself is empty): reported, exit 0.
    pub warnings: Vec<PathError>,
    pub seconds: f64,
}

impl PruneReport {
    /// One line per emptied path (and one per declared path kept whole
    /// below it), for people.
    pub fn lines(&self) -> String {
        let mut text = String::new();
        for target in &self.targets {
            let what = format!(
                "{} ({}, {})",
                target.path,
                target.lifecycle.as_str(),
                match target.reason {
                    Reason::Named => "named",
                    Reason::Lifecycle => "by lifecycle",
                    Reason::Nested => "below a pruned path",
                }
            );
            if target.missing {
                text.push_str(&format!("absent {what}: nothing to prune\n"));
                continue;
            }
            if let Some(link) = &target.symlink {
                text.push_str(&format!(
                    "kept {what}: the image holds it as a symlink to {link} (never followed)\n"
                ));
                continue;
            }
            let verb = match (self.dry_run, target.complete, target.left_in_trash) {
                (true, _, _) => "would prune",
                (false, true, _) => "pruned",
                (false, false, 0) => "partly pruned",
                (false, false, _) => "emptied",
            };
            text.push_str(&format!(
                "{verb} {what}: {} entries, {} objects, {}",
                target.entries,
                target.objects,
                human_bytes(target.bytes)
            ));
            if target.in_place_entries > 0 {
                text.push_str(&format!(
                    " ({} of the entries deleted in place, not through the trash: {})",
                    target.in_place_entries,
                    target
                        .in_place_reason
                        .as_deref()
                        .unwrap_or("no room for it")
                ));
            }
            if target.left_in_trash > 0 {
                text.push_str(&format!(
                    "; {} objects could not be deleted and stay in {} (the next prune or \
                     apply tries again)",
                    target.left_in_trash,
                    trash::NAME.to_string_lossy()
                ));
            }
            if target.leftover_objects > 0 {
                text.push_str(&format!(
                    " (of which a trash left by an interrupted prune: {} objects, {})",
                    target.leftover_objects,
                    human_bytes(target.leftover_bytes)
                ));
            }
            text.push('\n');
            for kept in &target.kept {
                let why = match kept.why {
                    KeptWhy::Protected => "protected".to_owned(),
                    KeptWhy::Lifecycle => format!("lifecycle {}", kept.lifecycle.as_str()),
                };
                text.push_str(&format!("  kept {}: {why}\n", kept.path));
            }
        }
        text
    }

    /// The one-line summary.
    pub fn summary(&self) -> String {
        let (removed, freed) = if self.dry_run {
            ("would be removed", "would be freed")
        } else {
            ("removed", "freed")
        };
        let warnings = match self.warnings.len() {
            0 => String::new(),
            n => format!(", {n} warnings"),
        };
        format!(
            "prune: {} paths: {} objects {removed}, {} {freed}, {} errors{warnings} in {:.2} s",
            self.targets.len(),
            self.objects,
            human_bytes(self.bytes),
            self.errors.len(),
            self.seconds
        )
    }
}

/// `1.5 MiB (1572864 bytes)`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {} ({bytes} bytes)", UNITS[unit])
}

/// One declared path to empty, as planned.
#[derive(Debug)]
struct Target<'l> {
    rule: &'l PathRule,
    reason: Reason,
    /// Keys strictly below that are not entered: declared paths (each
    /// emptied on its own or kept whole) and mount points.
    stops: BTreeSet<Vec<u8>>,
    /// Undeclared directories between the target and its stops.
    between: BTreeSet<Vec<u8>>,
    kept: Vec<Boundary>,
    /// Mount points below (errors, reported once).
    mounts: Vec<Vec<u8>>,
}

/// Empties the declared paths `selection` picks under `root` (see the
/// module docs). `Err` when nothing could start (an operand that is not a
/// declared path, the lock, `/proc`); failures on objects are in the
/// report.
pub fn prune(
    layout: &Layout,
    root: &Root,
    selection: &Selection,
    options: &PruneOptions,
) -> Result<PruneReport, NodeError> {
    let started = Instant::now();
    let _lock = if options.dry_run {
        None
    } else {
        Some(root.lock()?)
    };
    let targets = plan(layout, root, selection)?;
    let mut reached = reach(layout, root, &targets)?;
    let pool = delete::pool(options.jobs).build()?;
    let protected = Guard {
        protected: layout
            .paths
            .iter()
            .filter(|rule| rule.protected)
            .map(|rule| rule.type_name.clone())
            .collect(),
    };
    let mut report = PruneReport {
        dry_run: options.dry_run,
        targets: Vec::new(),
        objects: 0,
        bytes: 0,
        errors: Vec::new(),
        warnings: Vec::new(),
        seconds: 0.0,
    };
    // Nothing under a mount an enclosing target refused is touched.
    let mut blocked: Vec<Vec<u8>> = Vec::new();
    let mut failed: Vec<&str> = Vec::new();
    for (target, reached) in targets.iter().zip(reached.iter_mut()) {
        let key = target.rule.path.as_str();
        if blocked.iter().any(|mount| within(key.as_bytes(), mount))
            || failed.iter().any(|failed| is_within(key, failed))
        {
            continue;
        }
        refuse_mounts(root, target, &mut report.errors, &mut blocked);
        if keep_held(
            layout,
            root,
            &options.keep_symlinks,
            target,
            &mut report,
            &mut failed,
        ) {
            continue;
        }
        let mut run = TargetRun {
            root,
            target,
            dry_run: options.dry_run,
            pool: &pool,
            guard: protected.allowing(&target.rule.type_name),
            errors: &mut report.errors,
            warnings: &mut report.warnings,
            report: target_report(root, target, target.mounts.is_empty()),
            top: None,
            trash: None,
            stop: false,
        };
        let dir = std::mem::replace(reached, Err(None));
        if run.run(dir).is_err() {
            failed.push(key);
        }
        let done = run.report;
        report.objects += done.objects;
        report.bytes += done.bytes;
        report.targets.push(done);
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The mount points below a target, each an error once; nothing under
/// them is touched, by this target or any below.
fn refuse_mounts(
    root: &Root,
    target: &Target<'_>,
    errors: &mut Vec<PathError>,
    blocked: &mut Vec<Vec<u8>>,
) {
    let key = target.rule.path.as_bytes();
    for mount in &target.mounts {
        errors.push(PathError::new(
            &root.display(mount),
            format!(
                "a mount point below {}: prune never crosses a mount; nothing under it was \
                 touched",
                EscapedPath(&root.display(key))
            ),
        ));
        blocked.push(mount.clone());
    }
}

/// A target's report before anything is done to it.
fn target_report(root: &Root, target: &Target<'_>, complete: bool) -> TargetReport {
    let key = target.rule.path.as_str();
    TargetReport {
        path: EscapedPath(&root.display(key.as_bytes())).to_string(),
        layout_path: key.to_owned(),
        lifecycle: target.rule.lifecycle,
        reason: target.reason,
        missing: false,
        entries: 0,
        objects: 0,
        bytes: 0,
        leftover_objects: 0,
        leftover_bytes: 0,
        left_in_trash: 0,
        in_place_entries: 0,
        in_place_reason: None,
        kept: target.kept.clone(),
        symlink: None,
        complete,
    }
}

/// A target at or below a `--keep-symlink` path that the image holds as a
/// symlink is reported as kept; one that cannot be checked is an error
/// (once: nothing at or below the link is tried again). Returns whether
/// the target is done with; `false` when no symlink is there, and it is
/// pruned as usual.
fn keep_held<'a>(
    layout: &Layout,
    root: &Root,
    keep_symlinks: &'a [String],
    target: &Target<'_>,
    report: &mut PruneReport,
    failed: &mut Vec<&'a str>,
) -> bool {
    let key = target.rule.path.as_str();
    let Some(held) = keep_symlinks.iter().find(|held| is_within(key, held)) else {
        return false;
    };
    match apply::kept_symlink(layout, root, held) {
        Ok(Some(link)) => {
            report.targets.push(TargetReport {
                symlink: Some(link),
                ..target_report(root, target, true)
            });
            true
        }
        Ok(None) => false,
        Err(why) => {
            report.errors.push(PathError::new(
                &root.display(held.as_bytes()),
                format!("--keep-symlink: {why}"),
            ));
            failed.push(held);
            report.targets.push(target_report(root, target, false));
            true
        }
    }
}

/// Each target's directory (`Err(None)` when it does not exist), reached
/// with the mounts on its way checked (`mount_rule`): a mount it may not
/// act through is an error before anything changes.
fn reach(
    layout: &Layout,
    root: &Root,
    targets: &[Target<'_>],
) -> Result<Vec<Result<OwnedFd, Option<fsroot::Error>>>, NodeError> {
    let mut reached = Vec::with_capacity(targets.len());
    let mut refused: Vec<PathError> = Vec::new();
    for target in targets {
        match root.reach_dir(target.rule.path.as_bytes()) {
            Ok(dir) => {
                for refusal in mount_rule::refusals(layout, root, &dir.mounts) {
                    if !refused.contains(&refusal) {
                        refused.push(refusal);
                    }
                }
                reached.push(Ok(dir.fd));
            }
            Err(fsroot::Error::Io { error, .. })
                if error.raw_os_error() == Some(Errno::NOENT.raw_os_error()) =>
            {
                reached.push(Err(None));
            }
            Err(error) => reached.push(Err(Some(error))),
        }
    }
    if refused.is_empty() {
        Ok(reached)
    } else {
        Err(NodeError::Mounts(refused))
    }
}

/// The targets, parents first, with what each must not enter.
fn plan<'l>(
    layout: &'l Layout,
    root: &Root,
    selection: &Selection,
) -> Result<Vec<Target<'l>>, NodeError> {
    let mut rules: Vec<&PathRule> = layout.paths.iter().collect();
    rules.sort_by(|a, b| a.path.cmp(&b.path));
    let selected = match selection {
        Selection::Lifecycles(lifecycles) => select_lifecycles(&rules, lifecycles)?,
        Selection::Paths(paths) => select_named(&rules, paths)?,
    };
    let targets = with_nested(&rules, &selected);
    targets
        .iter()
        .map(|(rule, reason)| plan_target(&rules, &targets, rule, *reason, root))
        .collect()
}

/// The declared paths with one of `lifecycles`; never by `persistent`.
fn select_lifecycles<'l>(
    rules: &[&'l PathRule],
    lifecycles: &[Lifecycle],
) -> Result<Vec<(&'l PathRule, Reason)>, NodeError> {
    if lifecycles.contains(&Lifecycle::Persistent) {
        return Err(NodeError::Selection(
            "persistent paths are never pruned by lifecycle; name them instead".to_owned(),
        ));
    }
    Ok(rules
        .iter()
        .filter(|rule| lifecycles.contains(&rule.lifecycle))
        .map(|rule| (*rule, Reason::Lifecycle))
        .collect())
}

/// The declared paths the operands name; every operand that names none is
/// refused, all of them in one error.
fn select_named<'l>(
    rules: &[&'l PathRule],
    paths: &[String],
) -> Result<Vec<(&'l PathRule, Reason)>, NodeError> {
    let mut selected = Vec::new();
    let mut unknown = Vec::new();
    for path in paths {
        if !path.starts_with('/') {
            unknown.push(format!(
                "{path}: a relative path; prune takes layout paths, which are absolute \
                 (/var/lib/containerd), and takes them below --root"
            ));
            continue;
        }
        let trimmed = match path.trim_end_matches('/') {
            "" => "/",
            trimmed => trimmed,
        };
        match rules.iter().find(|rule| rule.path == trimmed) {
            Some(rule) => selected.push((*rule, Reason::Named)),
            None => unknown.push(format!(
                "{path}: not a path of the layout; prune empties declared paths only \
                 (layout paths such as /var/lib/containerd, without the root)"
            )),
        }
    }
    if unknown.is_empty() {
        Ok(selected)
    } else {
        Err(NodeError::Selection(unknown.join("\n")))
    }
}

/// Every target, parents first: the selected ones and, below a target,
/// declared paths with its lifecycle that are not protected.
fn with_nested<'l>(
    rules: &[&'l PathRule],
    selected: &[(&'l PathRule, Reason)],
) -> Vec<(&'l PathRule, Reason)> {
    let mut targets: Vec<(&PathRule, Reason)> = Vec::new();
    for rule in rules {
        if let Some((_, reason)) = selected.iter().find(|(s, _)| s.path == rule.path) {
            targets.push((rule, *reason));
            continue;
        }
        let parent = rules
            .iter()
            .filter(|other| other.path != rule.path && is_within(&rule.path, &other.path))
            .max_by_key(|other| other.path.len());
        if let Some(parent) = parent {
            let parent_is_target = targets.iter().any(|(t, _)| t.path == parent.path);
            if parent_is_target && parent.lifecycle == rule.lifecycle && !rule.protected {
                targets.push((rule, Reason::Nested));
            }
        }
    }
    targets
}

/// One target: the declared paths and mounts it stops at, the directories
/// between, and the declared paths it keeps whole.
fn plan_target<'l>(
    rules: &[&'l PathRule],
    targets: &[(&'l PathRule, Reason)],
    rule: &'l PathRule,
    reason: Reason,
    root: &Root,
) -> Result<Target<'l>, NodeError> {
    let key = rule.path.as_str();
    let below: Vec<&PathRule> = rules
        .iter()
        .copied()
        .filter(|other| other.path != key && is_within(&other.path, key))
        .collect();
    // The declared paths directly below (not below another of them).
    let direct: Vec<&PathRule> = below
        .iter()
        .copied()
        .filter(|d| {
            !below
                .iter()
                .any(|other| other.path != d.path && is_within(&d.path, &other.path))
        })
        .collect();
    let mut stops: BTreeSet<Vec<u8>> = direct
        .iter()
        .map(|rule| rule.path.as_bytes().to_vec())
        .collect();
    let kept = direct
        .iter()
        .filter(|d| !targets.iter().any(|(t, _)| t.path == d.path))
        .map(|d| Boundary {
            path: EscapedPath(&root.display(d.path.as_bytes())).to_string(),
            why: if d.lifecycle != rule.lifecycle {
                KeptWhy::Lifecycle
            } else {
                KeptWhy::Protected
            },
            lifecycle: d.lifecycle,
        })
        .collect();
    let mounts = outer_mounts(root, key, &below)?;
    stops.extend(mounts.iter().cloned());
    let between = between(key, &stops);
    Ok(Target {
        rule,
        reason,
        stops,
        between,
        kept,
        mounts,
    })
}

/// The mount points below `key` that no declared path below holds, outer
/// ones only (a mount below another is under the outer one already).
fn outer_mounts(root: &Root, key: &str, below: &[&PathRule]) -> Result<Vec<Vec<u8>>, NodeError> {
    // A mount in the trash is out of the path already: the trash's
    // deletion keeps it, as a warning.
    let trash = trash_path(key.as_bytes());
    let mounts: Vec<Vec<u8>> = root
        .mounts_below(key.as_bytes())?
        .into_iter()
        .filter(|mount| !below.iter().any(|d| within(mount, d.path.as_bytes())))
        .filter(|mount| !within(mount, &trash))
        .collect();
    Ok(mounts
        .iter()
        .filter(|m| !mounts.iter().any(|o| o != *m && within(m, o)))
        .cloned()
        .collect())
}

/// The undeclared directories strictly between `key` and its stops.
fn between(key: &str, stops: &BTreeSet<Vec<u8>>) -> BTreeSet<Vec<u8>> {
    let mut between = BTreeSet::new();
    for stop in stops {
        let mut at = stop.as_slice();
        while let Some(slash) = at.iter().rposition(|&b| b == b'/') {
            at = &at[..slash];
            if at.len() <= key.len() {
                break;
            }
            between.insert(at.to_vec());
        }
    }
    between
}

/// Component-wise `path` at or below `top`, on bytes.
fn within(path: &[u8], top: &[u8]) -> bool {
    match path.strip_prefix(top) {
        Some(rest) => rest.is_empty() || rest.starts_with(b"/") || top == b"/",
        None => false,
    }
}

/// The run on one target.
struct TargetRun<'a, 'l> {
    root: &'a Root,
    target: &'a Target<'l>,
    dry_run: bool,
    pool: &'a rayon::ThreadPool,
    /// The layout's protected types but the target's own.
    guard: Guard,
    errors: &'a mut Vec<PathError>,
    warnings: &'a mut Vec<PathError>,
    report: TargetReport,
    /// The target's listing fd, where the trash is made.
    top: Option<OwnedFd>,
    /// The trash's listing fd, once there is one.
    trash: Option<OwnedFd>,
    /// A read-only filesystem: nothing more can move.
    stop: bool,
}

/// A target that could not be opened: nothing below it is attempted.
struct Unreachable;

/// What became of an entry that was to move into the trash.
enum Moved {
    Yes,
    No,
    /// No room for it (or for the trash): delete it in place.
    NoRoom(String),
}

impl TargetRun<'_, '_> {
    /// Empties the target, reached beforehand as `dir` (`Err(None)`: it
    /// does not exist).
    fn run(&mut self, dir: Result<OwnedFd, Option<fsroot::Error>>) -> Result<(), Unreachable> {
        let key = self.target.rule.path.as_str();
        let path = self.root.display(key.as_bytes());
        let dir = match dir {
            Ok(dir) => dir,
            Err(None) => {
                self.report.missing = true;
                return Ok(());
            }
            Err(Some(error)) => {
                self.report.complete = false;
                self.errors
                    .push(PathError::new(&path, without_path(&error, &path)));
                return Err(Unreachable);
            }
        };
        let listing = match fsroot::reopen_dir(dir.as_fd()) {
            Ok(listing) => listing,
            Err(errno) => {
                self.report.complete = false;
                self.errors.push(PathError::errno(&path, "open", errno));
                return Err(Unreachable);
            }
        };
        self.top = listing.try_clone().ok();
        if !self.take_trash(&listing, &path) {
            self.report.complete = false;
            return Ok(());
        }
        let top = PathChain::new(&path);
        self.empty_dir(&listing, key.as_bytes(), &top);
        self.delete_trash(&listing, &path);
        Ok(())
    }

    /// Finds the trash: a leftover of ours is emptied first (and kept to
    /// move into); an empty foreign one (a crash between its `mkdir` and
    /// its mark) is removed; any other foreign one stops the target.
    fn take_trash(&mut self, dir: &OwnedFd, path: &[u8]) -> bool {
        let trash_path = trash_path(path);
        match trash::find(dir.as_fd()) {
            Ok(trash::Found::Nothing) => true,
            Ok(trash::Found::Ours(listing)) => {
                let options = DeleteOptions {
                    dry_run: self.dry_run,
                    count_bytes: true,
                    guard: Some(&self.guard),
                };
                // Its own open file description: listing it must not move
                // the offset of the fd entries are later moved through and
                // that deletes them.
                let own = match fsroot::reopen_dir(listing.as_fd()) {
                    Ok(own) => own,
                    Err(errno) => {
                        self.warnings
                            .push(PathError::errno(&trash_path, "open", errno));
                        return false;
                    }
                };
                let mut outcome =
                    delete::delete_contents(self.pool, own, PathChain::new(&trash_path), &options);
                self.report.leftover_objects += outcome.objects;
                self.report.leftover_bytes += outcome.bytes;
                self.count(&outcome);
                // Retried by delete_trash: reported once, from there.
                outcome.errors.clear();
                outcome.refused.clear();
                if !self.dry_run {
                    self.trash = Some(listing);
                }
                true
            }
            Ok(trash::Found::Foreign) => {
                let empty = fsroot::open_listing_beneath(dir, trash::NAME, Crossing::NoMounts)
                    .and_then(|fd| fsroot::is_empty(fd.as_fd()))
                    .unwrap_or(false);
                if empty && (self.dry_run || trash::remove(dir).is_ok()) {
                    return true;
                }
                self.errors.push(PathError::new(
                    &trash_path,
                    "not a trash semanifest made (no trusted.semanifest mark): never emptied; \
                     nothing in the directory was pruned (move it away to prune)",
                ));
                false
            }
            Err(errno) => {
                self.errors
                    .push(PathError::errno(&trash_path, "look for the trash", errno));
                false
            }
        }
    }

    /// Moves every entry of `dir` (the target, or an undeclared directory
    /// on the way to a stop) into the trash, entering the directories on
    /// the way to stops.
    fn empty_dir(&mut self, dir: &OwnedFd, key: &[u8], path: &PathChain) {
        let at_top = key == self.target.rule.path.as_bytes();
        for _ in 0..MAX_PASSES {
            let mut moved = 0u64;
            let mut buffer = Vec::with_capacity(DIRENT_BUFFER);
            let mut entries = RawDir::new(dir.as_fd(), buffer.spare_capacity_mut());
            while let Some(entry) = entries.next() {
                if self.stop {
                    return;
                }
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(errno) => {
                        self.fail(PathError::errno(&path.to_vec(), "list", errno));
                        return;
                    }
                };
                let name = entry.file_name();
                let bytes = name.to_bytes();
                if matches!(bytes, b"." | b"..") || (at_top && name == trash::NAME) {
                    continue;
                }
                let mut child = key.to_vec();
                if child != b"/" {
                    child.push(b'/');
                }
                child.extend_from_slice(bytes);
                if self.target.stops.contains(&child) {
                    continue;
                }
                if self.target.between.contains(&child) {
                    self.enter(dir, name, &child, path);
                    continue;
                }
                if self.prune_entry(dir, name, entry.file_type(), path) {
                    moved += 1;
                }
            }
            // A dry run moves nothing: one listing says it all.
            if moved == 0 || self.dry_run {
                return;
            }
        }
    }

    /// Enters the undeclared directory `name` of `dir` on the way to a
    /// stop (never a symlink, never another mount).
    fn enter(&mut self, dir: &OwnedFd, name: &CStr, key: &[u8], path: &PathChain) {
        let child_path = path.child(name.to_bytes());
        match fsroot::open_listing_beneath(dir, name, Crossing::NoMounts) {
            Ok(fd) => self.empty_dir(&fd, key, &child_path),
            Err(Errno::NOENT) => {}
            Err(Errno::LOOP) => self.fail(PathError::new(
                &child_path.to_vec(),
                "a symlink where the layout's paths below lead (never followed); kept",
            )),
            Err(Errno::NOTDIR) => self.fail(PathError::new(
                &child_path.to_vec(),
                "not a directory where the layout's paths below lead; kept",
            )),
            Err(Errno::XDEV) => self.fail(PathError::new(
                &child_path.to_vec(),
                "a mount point: prune never crosses a mount; nothing under it was touched",
            )),
            Err(errno) => self.fail(PathError::errno(&child_path.to_vec(), "open", errno)),
        }
    }

    /// Takes one entry out of the directory: into the trash, or deleted in
    /// place when there is no room for that (a dry run counts what it
    /// holds). Whether it went.
    fn prune_entry(
        &mut self,
        dir: &OwnedFd,
        name: &CStr,
        kind: FileType,
        path: &PathChain,
    ) -> bool {
        if !self.label_allows(dir, name, path) {
            return false;
        }
        if self.dry_run {
            self.count_in_place(dir, name, kind, path);
            return true;
        }
        match self.move_entry(dir, name, path) {
            Moved::Yes => true,
            Moved::No => false,
            Moved::NoRoom(reason) => {
                self.report.in_place_reason.get_or_insert(reason);
                self.delete_in_place(dir, name, path)
            }
        }
    }

    /// Whether entry `name` may go: its label has no protected type but
    /// the target's own. A refusal is an error that names it.
    fn label_allows(&mut self, dir: &OwnedFd, name: &CStr, path: &PathChain) -> bool {
        match read_label(Handle::Named(dir.as_fd(), name)) {
            Ok(label) => match self.guard.refusal(label.as_deref()) {
                None => true,
                Some(reason) => {
                    let reason = reason.replace("never removed", "never pruned; kept");
                    self.fail(PathError::new(
                        &path.child(name.to_bytes()).to_vec(),
                        reason,
                    ));
                    false
                }
            },
            Err(Errno::NOENT) => false,
            Err(errno) => {
                let at = path.child(name.to_bytes()).to_vec();
                self.fail(PathError::errno(&at, "read the label of", errno));
                false
            }
        }
    }

    /// Moves one entry into the trash.
    fn move_entry(&mut self, dir: &OwnedFd, name: &CStr, path: &PathChain) -> Moved {
        let trash = match self.trash_fd() {
            Ok(trash) => trash,
            Err(Errno::NOSPC | Errno::DQUOT) => {
                return Moved::NoRoom(format!(
                    "no room to create {} ({})",
                    trash::NAME.to_string_lossy(),
                    describe(Errno::NOSPC)
                ))
            }
            Err(_) => return Moved::No,
        };
        let mut to = name.to_owned();
        let mut attempt = 0u64;
        let moved = loop {
            match fsroot::rename_noreplace(dir, name, trash, &to) {
                // A name already in the trash (an entry of an undeclared
                // directory on the way, or a leftover): another name.
                Err(Errno::EXIST) if attempt < 1000 => {
                    attempt += 1;
                    to = CString::new(format!("#{attempt}")).unwrap_or_default();
                }
                result => break result,
            }
        };
        match moved {
            Ok(()) => {
                self.report.entries += 1;
                Moved::Yes
            }
            Err(Errno::NOENT) => Moved::No,
            Err(Errno::BUSY) => {
                self.fail(PathError::new(
                    &path.child(name.to_bytes()).to_vec(),
                    "a mount point: prune never crosses a mount; nothing under it was touched",
                ));
                Moved::No
            }
            Err(errno @ (Errno::NOSPC | Errno::DQUOT)) => Moved::NoRoom(format!(
                "no room in {} for its name ({})",
                trash::NAME.to_string_lossy(),
                describe(errno)
            )),
            Err(errno) => {
                if errno == Errno::ROFS {
                    self.stop = true;
                }
                self.fail(PathError::errno(
                    &path.child(name.to_bytes()).to_vec(),
                    "move into the trash",
                    errno,
                ));
                Moved::No
            }
        }
    }

    /// Deletes entry `name` of `dir` where it is (a whole tree through
    /// [`delete`]): what is left of it is an error.
    fn delete_in_place(&mut self, dir: &OwnedFd, name: &CStr, path: &PathChain) -> bool {
        let options = DeleteOptions {
            dry_run: false,
            count_bytes: true,
            guard: Some(&self.guard),
        };
        let mut outcome =
            delete::delete_entry(self.pool, dir.as_fd(), name, path.clone(), &options);
        self.count(&outcome);
        self.report.entries += 1;
        self.report.in_place_entries += 1;
        if !outcome.complete {
            self.report.complete = false;
            let at = path.child(name.to_bytes()).to_vec();
            outcome.errors_into(&at, self.errors);
        }
        outcome.complete
    }

    /// The trash's fd, made (and marked) in the target on first use.
    fn trash_fd(&mut self) -> Result<BorrowedFd<'_>, Errno> {
        if self.trash.is_none() {
            let made = match &self.top {
                Some(top) => trash::create(top.as_fd()),
                None => Err(Errno::BADF),
            };
            match made {
                Ok(fd) => self.trash = Some(fd),
                // Deleted in place instead.
                Err(errno @ (Errno::NOSPC | Errno::DQUOT)) => return Err(errno),
                Err(errno) => {
                    // Nothing can move without a trash.
                    self.stop = true;
                    let target = self.root.display(self.target.rule.path.as_bytes());
                    self.fail(PathError::errno(&trash_path(&target), "create", errno));
                    return Err(errno);
                }
            }
        }
        self.trash.as_ref().map(AsFd::as_fd).ok_or(Errno::BADF)
    }

    /// A dry run: what deleting entry `name` would remove.
    fn count_in_place(&mut self, dir: &OwnedFd, name: &CStr, kind: FileType, path: &PathChain) {
        let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC;
        let mask = StatxFlags::TYPE | StatxFlags::NLINK | StatxFlags::BLOCKS;
        let Ok(stx) = rfs::statx(dir, name, flags, mask) else {
            return;
        };
        self.report.entries += 1;
        let is_dir = kind == FileType::Directory
            || FileType::from_raw_mode(stx.stx_mode.into()) == FileType::Directory;
        if !is_dir {
            self.report.objects += 1;
            if stx.stx_nlink <= 1 {
                self.report.bytes += stx.stx_blocks * 512;
            }
            return;
        }
        let child = path.child(name.to_bytes());
        match fsroot::open_listing_beneath(dir, name, Crossing::NoMounts) {
            Ok(fd) => {
                let options = DeleteOptions {
                    dry_run: true,
                    count_bytes: true,
                    guard: Some(&self.guard),
                };
                let mut outcome = delete::delete_contents(self.pool, fd, child.clone(), &options);
                self.count(&outcome);
                if outcome.complete {
                    self.report.objects += 1;
                    self.report.bytes += stx.stx_blocks * 512;
                }
                let mut errors = Vec::new();
                outcome.errors_into(&child.to_vec(), &mut errors);
                for error in errors {
                    self.fail(error);
                }
            }
            Err(Errno::XDEV) => self.fail(PathError::new(
                &child.to_vec(),
                "a mount point: prune never crosses a mount; nothing under it was touched",
            )),
            Err(Errno::NOENT) => {}
            Err(errno) => self.fail(PathError::errno(&child.to_vec(), "open", errno)),
        }
    }

    /// Deletes what the trash holds, then the trash. What cannot be
    /// deleted stays in it: warnings, since the pruned path is empty.
    fn delete_trash(&mut self, dir: &OwnedFd, path: &[u8]) {
        let Some(listing) = self.trash.take() else {
            return;
        };
        let trash_path = trash_path(path);
        let options = DeleteOptions {
            dry_run: false,
            count_bytes: true,
            guard: Some(&self.guard),
        };
        let mut outcome =
            delete::delete_contents(self.pool, listing, PathChain::new(&trash_path), &options);
        self.count(&outcome);
        if !outcome.complete {
            self.report.complete = false;
            self.report.left_in_trash += outcome.left().max(1);
        }
        outcome.errors_into(&trash_path, self.warnings);
        if outcome.complete {
            if let Err(errno) = trash::remove(dir) {
                self.report.complete = false;
                self.warnings
                    .push(PathError::errno(&trash_path, "remove", errno));
            }
        }
    }

    fn count(&mut self, outcome: &Outcome) {
        self.report.objects += outcome.objects;
        self.report.bytes += outcome.bytes;
    }

    fn fail(&mut self, error: PathError) {
        self.report.complete = false;
        self.errors.push(error);
    }
}

/// `PATH/.semanifest-trash`.
fn trash_path(path: &[u8]) -> Vec<u8> {
    let mut trash = path.to_vec();
    if !trash.ends_with(b"/") {
        trash.push(b'/');
    }
    trash.extend_from_slice(trash::NAME.to_bytes());
    trash
}

/// The message of an [`fsroot::Error`] without the path it starts with
/// (a [`PathError`] names the path itself).
fn without_path(error: &fsroot::Error, path: &[u8]) -> String {
    let text = error.to_string();
    let prefix = format!("{}: ", EscapedPath(path));
    match text.strip_prefix(&prefix) {
        Some(rest) => rest.to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_is_component_wise_on_bytes() {
        assert!(within(b"/var/lib", b"/var/lib"));
        assert!(within(b"/var/lib/x", b"/var/lib"));
        assert!(!within(b"/var/libx", b"/var/lib"));
        assert!(within(b"/var", b"/"));
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(human_bytes(0), "0 bytes");
        assert_eq!(human_bytes(1536), "1.5 KiB (1536 bytes)");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB (3145728 bytes)");
    }

    #[test]
    fn trash_paths() {
        assert_eq!(trash_path(b"/r/var"), b"/r/var/.semanifest-trash");
        assert_eq!(trash_path(b"/"), b"/.semanifest-trash");
    }
}
