//! `apply`: every declared directory, and each of its ancestors below `/`,
//! exists under the root with the declared mode, owner and label.
//!
//! - Directories are handled parents first, each reached from the root's
//!   fd one component at a time with `openat2(RESOLVE_BENEATH |
//!   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` to its parent and
//!   `O_PATH | O_NOFOLLOW` for its own name: a symlink anywhere is an
//!   error that names it, and so is a non-directory at a declared path.
//!   Nothing is ever deleted or replaced (the one exception: an *empty*
//!   directory at the temporary name below, left by an interrupted run).
//! - **Mounts.** A mount point at a directory or on its way must be one
//!   `mount_rule` accepts (a filesystem at its own root, a directory bound
//!   onto itself, the layout's tmpfs), never a bind mount of another
//!   directory, which would have apply chown, chmod and label that
//!   directory: every one is checked before anything changes (exit 2),
//!   and again as each directory is reached.
//! - **Born right.** A missing directory is made as `.semanifest-apply` in
//!   its parent with mode 0700, given its owner, mode and label through
//!   its own fd, and only then renamed to its name with
//!   `RENAME_NOREPLACE`: the declared name appears with everything right at
//!   once, and an object that appeared there meanwhile is never replaced.
//!   The temporary directory is opened without crossing a mount and
//!   checked to be the empty one just made ([`fsroot::make_dir`]) before
//!   anything is set on it, and what the rename put in place is checked to
//!   be it.
//!   Writing `/proc/thread-self/attr/fscreate` instead would set only the
//!   label (mode and owner would still change after the name appears),
//!   needs a kernel with SELinux enabled and the target's policy loaded
//!   (an image built on another machine has neither), and leaks into
//!   every later creation of the thread if a reset is missed.
//! - Drift is repaired in place (owner, then mode, then label) and each
//!   repair reported; a second run changes nothing.
//! - Undeclared ancestors get the label the file contexts give them;
//!   mode and owner are only enforced where the layout declares them (a
//!   directory apply creates without them is `0755`, owned by the caller).
//! - A trash a crashed prune left in a declared directory is emptied.
//!   What cannot be deleted from it (an immutable file, a mount placed in
//!   it) is a warning, not an error: the tree is placed, and the boot
//!   goes on.
//! - A symlink the caller names with [`apply_keeping`] (a path the image
//!   holds as a symlink out of the layout, like Debian's `/var/run` →
//!   `/run`) is kept and reported, never followed; nothing below it is
//!   placed (it lives at the target, which the image's file contexts
//!   label through an equivalence).

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Instant;

use rustix::fs::{FileType, Gid, Mode, Uid};
use rustix::io::Errno;
use serde::Serialize;

use super::delete::{self, DeleteOptions, Guard};
use super::owners::{Accounts, Ids, OwnerError, OwnerProblem};
use super::quota::{self, CapacityMode, CapacityOutcome, Limits};
use super::{
    c_name, describe, mount_rule, read_label, shown, split_key, trash, write_label, NodeError,
    PathError,
};
use fsroot::{self, Entry, EscapedPath, Handle, MountAt, Root};
use layout::model::{ancestors, is_within, link_target, Layout, Owner};
use selabel::path_chain::PathChain;
use selabel::{FileContexts, FileKind};

mod capacity;

/// The name a directory is made under before it is renamed into place.
const TEMPORARY: &std::ffi::CStr = c".semanifest-apply";
/// What a directory apply creates without a declared mode gets.
const DEFAULT_MODE: u32 = 0o755;

/// Whether `apply` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApplyMode {
    Write,
    /// Report what would change; change nothing.
    DryRun,
    /// Like `DryRun`, for drift detection (`--check`).
    Check,
}

/// One directory as the layout wants it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    /// The path below the root (`/var/lib/etcd`).
    pub key: String,
    /// Declared by the layout (not only an ancestor of a declared path).
    pub declared: bool,
    pub mode: Option<u32>,
    pub owner: Option<Ids>,
    /// The context the file contexts give it, if any.
    pub label: Option<String>,
}

/// One difference found (and repaired, when writing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The path on this machine (root included), escaped.
    pub path: String,
    #[serde(flatten)]
    pub what: What,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum What {
    /// The directory did not exist.
    Created {
        mode: String,
        owner: Ids,
        label: Option<String>,
    },
    Mode {
        found: String,
        wanted: String,
    },
    Owner {
        found: Ids,
        wanted: Ids,
    },
    Label {
        found: Option<String>,
        wanted: String,
    },
    /// Objects below a capacity path not (all) in its project: tagged
    /// with it (directories with the inherit flag).
    Project {
        project: u32,
        objects: u64,
    },
    /// A capacity's project limits differ from the layout's.
    Limits {
        project: u32,
        found: Limits,
        wanted: Limits,
    },
    /// A path with `mount: options:` is mounted without some of them
    /// (its mount unit makes the mount; apply only reports).
    MountFlags {
        missing: Vec<String>,
    },
    /// A trash left by an interrupted prune, or holding what a prune could
    /// not delete (emptied when writing: the objects removed and the bytes
    /// they freed; `left`, the objects that could not be and stay; in
    /// check and dry-run modes, `entries` it holds).
    Trash {
        objects: Option<u64>,
        bytes: Option<u64>,
        left: Option<u64>,
        entries: Option<u64>,
    },
}

impl Change {
    /// One line for people, in the tense of `mode`: `created /x (…)`,
    /// `would repair /x: mode 0755 -> 0700`, `drift /x: …`.
    pub fn line(&self, mode: ApplyMode) -> String {
        let path = &self.path;
        let (create, repair, empty) = match mode {
            ApplyMode::Write => ("created", "repaired", "emptied"),
            ApplyMode::DryRun => ("would create", "would repair", "would empty"),
            ApplyMode::Check => ("missing", "drift", "pending"),
        };
        match &self.what {
            What::Created { mode, owner, label } => format!(
                "{create} {path} (mode {mode}, owner {owner}, label {})",
                label.as_deref().unwrap_or("<none>")
            ),
            What::Mode { found, wanted } => format!("{repair} {path}: mode {found} -> {wanted}"),
            What::Owner { found, wanted } => {
                format!("{repair} {path}: owner {found} -> {wanted}")
            }
            What::Label { found, wanted } => format!(
                "{repair} {path}: label {} -> {wanted}",
                found.as_deref().unwrap_or("<none>")
            ),
            What::Project { project, objects } => match mode {
                ApplyMode::Check => {
                    format!("drift {path}: {objects} objects not tagged with project {project}")
                }
                _ => {
                    let tag = if mode == ApplyMode::Write {
                        "tagged"
                    } else {
                        "would tag"
                    };
                    format!("{tag} {path}: {objects} objects with project {project}")
                }
            },
            What::Limits {
                project,
                found,
                wanted,
            } => format!("{repair} {path}: limits of project {project}: {found} -> {wanted}"),
            What::MountFlags { missing } => format!(
                "{} {path}: mounted without {} (its mount unit binds it onto itself with them)",
                if mode == ApplyMode::Check {
                    "drift"
                } else {
                    "would need"
                },
                missing.join(", ")
            ),
            What::Trash {
                objects,
                bytes,
                left,
                entries,
            } => {
                let trash = trash::NAME.to_string_lossy();
                match (objects, bytes, left) {
                    (Some(objects), Some(bytes), Some(0) | None) => format!(
                        "{empty} {path}/{trash}: a trash left by an interrupted prune \
                         ({objects} objects, {bytes} bytes removed)"
                    ),
                    (Some(objects), Some(bytes), Some(left)) => format!(
                        "could not empty {path}/{trash}: {left} objects could not be deleted \
                         and stay in it (see the warnings; the next prune or apply tries \
                         again); {objects} objects, {bytes} bytes removed"
                    ),
                    _ => format!(
                        "{empty} {path}/{trash}: a trash left by an interrupted prune or \
                         holding what a prune could not delete{}",
                        match entries {
                            Some(entries) => format!(" ({entries} entries)"),
                            None => String::new(),
                        }
                    ),
                }
            }
        }
    }
}

/// A symlink kept at a layout path (see [`apply_keeping`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeptSymlink {
    /// The path on this machine (root included), escaped.
    pub path: String,
    /// Where it points, absolute in the root (`/run`).
    pub target: String,
}

/// What one run found and did.
#[derive(Clone, Debug, Serialize)]
pub struct ApplyReport {
    pub mode: ApplyMode,
    /// Directories examined (declared paths and their ancestors).
    pub directories: u64,
    pub created: u64,
    /// Existing directories with at least one repair.
    pub repaired: u64,
    pub unchanged: u64,
    /// Directories not reached because an ancestor failed.
    pub skipped: u64,
    pub changes: Vec<Change>,
    pub errors: Vec<PathError>,
    /// What could not be deleted from a leftover trash (an immutable
    /// file, a mount placed in it): reported, not an error.
    pub warnings: Vec<PathError>,
    /// Symlinks kept as the image holds them.
    pub kept: Vec<KeptSymlink>,
    /// What was examined below each `capacity:` path.
    pub capacities: Vec<CapacityOutcome>,
    pub seconds: f64,
}

impl ApplyReport {
    /// Anything differed from the layout (what `--check` fails on).
    pub fn drift(&self) -> bool {
        !self.changes.is_empty()
    }
}

/// The directories `apply` makes sure of, parents first: every declared
/// path and its ancestors below `/`. Owner names are resolved in
/// `accounts` (required when the layout names one); every unknown name is
/// reported at once.
pub(crate) fn places(
    layout: &Layout,
    contexts: &FileContexts,
    accounts: Option<&Accounts>,
) -> Result<Vec<Place>, NodeError> {
    let mut keys: Vec<&str> = layout
        .paths
        .iter()
        .flat_map(|rule| std::iter::once(rule.path.as_str()).chain(ancestors(&rule.path)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut problems = Vec::new();
    let mut places = Vec::with_capacity(keys.len());
    for key in keys {
        let rule = layout.paths.iter().find(|rule| rule.path == key);
        let owner = match rule.and_then(|rule| rule.owner.as_ref()) {
            None => None,
            Some(owner) => {
                let resolved = match (owner, accounts) {
                    (Owner::Name(name), None) => Err(OwnerError::NoAccounts(name.clone())),
                    (Owner::Ids { uid, gid }, _) => super::owners::check_ids(Ids {
                        uid: *uid,
                        gid: *gid,
                    }),
                    (owner, Some(accounts)) => accounts.resolve(owner),
                };
                match resolved {
                    Ok(ids) => Some(ids),
                    Err(error) => {
                        problems.push(OwnerProblem {
                            path: key.to_owned(),
                            line: rule.map(|rule| rule.pos.line).unwrap_or_default(),
                            error,
                        });
                        None
                    }
                }
            }
        };
        places.push(Place {
            key: key.to_owned(),
            declared: rule.is_some(),
            mode: rule.and_then(|rule| rule.mode),
            owner,
            label: contexts
                .lookup(key.as_bytes(), FileKind::Dir)
                .map(str::to_owned),
        });
    }
    if problems.is_empty() {
        Ok(places)
    } else {
        Err(NodeError::Owners(problems))
    }
}

/// Whether the layout names an owner that must be looked up.
pub(crate) fn needs_accounts(layout: &Layout) -> bool {
    layout
        .paths
        .iter()
        .any(|rule| matches!(rule.owner, Some(Owner::Name(_))))
}

/// Places the layout under `root` (see the module docs).
pub fn apply(
    layout: &Layout,
    contexts: &FileContexts,
    root: &Root,
    mode: ApplyMode,
) -> Result<ApplyReport, NodeError> {
    apply_keeping(layout, contexts, root, mode, &[])
}

/// The first of `keep` that is neither a path of `layout` nor an ancestor
/// of one, as an error for `--keep-symlink` (`apply` and `check --labels`
/// take the same paths).
pub fn unknown_keep(layout: &Layout, keep: &[String]) -> Result<(), UnknownKeep> {
    match keep.iter().find(|path| {
        !layout
            .paths
            .iter()
            .any(|rule| rule.path == **path || ancestors(&rule.path).any(|a| a == path.as_str()))
    }) {
        Some(path) => Err(UnknownKeep(path.clone())),
        None => Ok(()),
    }
}

/// A `--keep-symlink` path the layout does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--keep-symlink {0}: not a path of the layout nor an ancestor of one")]
pub struct UnknownKeep(pub String);

/// Why one directory was not placed, or a symlink not kept.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlaceError {
    #[error("{} is in the way of creating it ({}); remove it", TEMPORARY.to_string_lossy(), said(.0))]
    TemporaryInTheWay(Errno),
    #[error("cannot create: {}", said(.0))]
    Create(Errno),
    /// A mount or another directory took the temporary name between its
    /// `mkdir` and its open.
    #[error(
        "cannot create: {} was replaced before it could be opened ({}); left alone",
        TEMPORARY.to_string_lossy(),
        said(.0)
    )]
    Replaced(Errno),
    #[error("cannot open: {0}")]
    Reopen(Errno),
    #[error("cannot set the owner: {}", said(.0))]
    SetOwner(Errno),
    #[error("cannot set the mode: {}", said(.0))]
    SetMode(Errno),
    #[error("cannot set the label: {}", said(.0))]
    SetLabel(Errno),
    #[error("appeared while it was being created; left alone")]
    Appeared,
    #[error("cannot rename into place: {}", said(.0))]
    Rename(Errno),
    /// Made, but it cannot be opened again.
    #[error("{}", said(.0))]
    Made(Errno),
    /// What the rename put in place is not the directory made.
    #[error(
        "{} was replaced before it was renamed into place; what is there now is not what \
         apply made (left alone)",
        TEMPORARY.to_string_lossy()
    )]
    NotWhatWasMade,
    #[error("cannot read the symlink: {}", said(.0))]
    ReadLink(Errno),
    #[error(
        "is a symlink to {0}, which names no path semanifest can label; not kept (never followed)"
    )]
    Unlabelled(String),
    #[error(
        "is a symlink to {shown}, which overlaps the layout's `{rule}`; not kept (never followed)"
    )]
    IntoTheLayout { shown: String, rule: String },
    #[error(transparent)]
    Resolve(fsroot::Error),
    #[error("cannot open: {}", said(.0))]
    Open(Errno),
}

fn said(errno: &Errno) -> String {
    describe(*errno)
}

/// [`apply()`], keeping the symlinks found at `keep` (layout paths or
/// ancestors of one) whose targets lie outside the layout: the image holds
/// them so, and the boot units say so too. Any other symlink, and a kept
/// one pointing into the layout, stays an error.
pub fn apply_keeping(
    layout: &Layout,
    contexts: &FileContexts,
    root: &Root,
    mode: ApplyMode,
    keep: &[String],
) -> Result<ApplyReport, NodeError> {
    apply_with(layout, contexts, root, mode, keep, CapacityMode::Enforce)
}

/// [`apply_keeping`], with `capacity` saying what is done about the
/// layout's `capacity:` paths (see [`quota`]). Their filesystems are
/// checked first: if one cannot do it, nothing is changed.
pub fn apply_with(
    layout: &Layout,
    contexts: &FileContexts,
    root: &Root,
    mode: ApplyMode,
    keep: &[String],
    capacity: CapacityMode,
) -> Result<ApplyReport, NodeError> {
    let started = Instant::now();
    let _lock = if mode == ApplyMode::Write {
        Some(root.lock()?)
    } else {
        None
    };
    let accounts = if needs_accounts(layout) {
        Some(Accounts::read(root)?)
    } else {
        None
    };
    let places = places(layout, contexts, accounts.as_ref())?;
    check_mounts(layout, root, &places)?;
    quota::preflight(root, layout, capacity)?;
    let mut run = Run {
        root,
        mode,
        report: ApplyReport {
            mode,
            directories: 0,
            created: 0,
            repaired: 0,
            unchanged: 0,
            skipped: 0,
            changes: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            kept: Vec::new(),
            capacities: Vec::new(),
            seconds: 0.0,
        },
        layout,
        keep,
        kept: Vec::new(),
        failed: Vec::new(),
        absent: Vec::new(),
        pool: None,
    };
    for place in &places {
        run.place(place);
    }
    for place in places.iter().filter(|place| place.declared) {
        run.leftover_trash(place);
    }
    if mode != ApplyMode::Write {
        run.mount_flags();
    }
    run.capacities(capacity);
    run.report.seconds = started.elapsed().as_secs_f64();
    Ok(run.report)
}

/// Every mount point at or on the way to a place, checked against
/// `mount_rule` before anything changes: one apply may not act through is
/// an error that names it.
fn check_mounts(layout: &Layout, root: &Root, places: &[Place]) -> Result<(), NodeError> {
    let mut mounts: Vec<MountAt> = Vec::new();
    for place in places {
        // A place that cannot be reached is reported by the run.
        if let Ok(reached) = root.reach_dir(place.key.as_bytes()) {
            for mount in reached.mounts {
                if !mounts.contains(&mount) {
                    mounts.push(mount);
                }
            }
        }
    }
    let refused = mount_rule::refusals(layout, root, &mounts);
    if refused.is_empty() {
        Ok(())
    } else {
        Err(NodeError::Mounts(refused))
    }
}

struct Run<'a> {
    root: &'a Root,
    mode: ApplyMode,
    report: ApplyReport,
    layout: &'a Layout,
    /// Keys whose symlink is to be kept.
    keep: &'a [String],
    /// Keys kept as symlinks: nothing below them is placed.
    kept: Vec<String>,
    /// Keys that failed: nothing below them is attempted.
    failed: Vec<String>,
    /// Keys that do not exist (dry run and check): below them everything
    /// would be created.
    absent: Vec<String>,
    pool: Option<rayon::ThreadPool>,
}

impl Run<'_> {
    fn place(&mut self, place: &Place) {
        let key = place.key.as_str();
        if self.kept.iter().any(|kept| is_within(key, kept)) {
            return;
        }
        if self.failed.iter().any(|failed| is_within(key, failed)) {
            self.report.skipped += 1;
            return;
        }
        self.report.directories += 1;
        let path = shown(self.root, key);
        if self.absent.iter().any(|absent| is_within(key, absent)) {
            return self.created(place, &path, None);
        }
        let Some((parent_key, name)) = split_key(key) else {
            return;
        };
        let name = c_name(name.as_bytes());
        let reached = match self.root.reach_dir(parent_key.as_bytes()) {
            Ok(reached) => reached,
            Err(error) => return self.fail(key, PathError::new(&path, error.to_string())),
        };
        let mut mounts = reached.mounts;
        let parent = reached.fd;
        let entry = Entry::open_at(&parent, &name);
        if let Ok(entry) = &entry {
            if entry.meta().mount != reached.meta.mount {
                mounts.push(MountAt {
                    key: key.as_bytes().to_vec(),
                    id: entry.meta().mount,
                });
            }
        }
        // Mounted meanwhile (all were checked before the run).
        if let Some(refusal) = mount_rule::refusals(self.layout, self.root, &mounts)
            .into_iter()
            .next()
        {
            let error = PathError::new(&path, format!("{refusal}; nothing below was changed"));
            return self.fail(key, error);
        }
        match entry {
            Ok(entry) if entry.kind() == FileType::Directory => self.repair(place, &path, &entry),
            Ok(entry)
                if entry.kind() == FileType::Symlink && self.keep.iter().any(|k| k == key) =>
            {
                match keepable_target(self.layout, key, &parent, &name) {
                    Ok(target) => {
                        self.kept.push(key.to_owned());
                        self.report.kept.push(KeptSymlink {
                            path: EscapedPath(&path).to_string(),
                            target,
                        });
                    }
                    Err(why) => self.fail(key, PathError::new(&path, why.to_string())),
                }
            }
            Ok(entry) => {
                let what = in_the_way(&parent, &name, entry.kind());
                let message = format!("{what}; apply never deletes or replaces it");
                self.fail(key, PathError::new(&path, message));
            }
            Err(Errno::NOENT) if self.mode != ApplyMode::Write => {
                self.absent.push(key.to_owned());
                self.created(place, &path, None);
            }
            Err(Errno::NOENT) => match self.create(place, &parent, &name) {
                Ok(entry) => self.created(place, &path, Some(&entry)),
                Err(error) => self.fail(key, PathError::new(&path, error.to_string())),
            },
            Err(errno) => self.fail(key, PathError::errno(&path, "open", errno)),
        }
    }

    /// Makes the directory under the temporary name, sets everything, and
    /// renames it into place; on failure the temporary directory goes.
    fn create(&self, place: &Place, parent: &OwnedFd, name: &CString) -> Result<Entry, PlaceError> {
        let made = match fsroot::make_dir(parent, TEMPORARY, 0o700) {
            Err(Errno::EXIST) => {
                // Left by an interrupted run: removed only if empty.
                fsroot::remove_dir(parent, TEMPORARY).map_err(PlaceError::TemporaryInTheWay)?;
                fsroot::make_dir(parent, TEMPORARY, 0o700)
            }
            other => other,
        };
        // Not what was made (a mount or another directory in its place):
        // left alone, nothing set on it.
        let dir = made.map_err(|errno| match errno {
            Errno::XDEV | Errno::STALE => PlaceError::Replaced(errno),
            errno => PlaceError::Create(errno),
        })?;
        let made = rustix::fs::fstat(&dir).map_err(PlaceError::Reopen)?;
        let finish = || -> Result<(), PlaceError> {
            if let Some(owner) = place.owner {
                rustix::fs::fchown(
                    &dir,
                    Some(Uid::from_raw(owner.uid)),
                    Some(Gid::from_raw(owner.gid)),
                )
                .map_err(PlaceError::SetOwner)?;
            }
            let mode = place.mode.unwrap_or(DEFAULT_MODE);
            rustix::fs::fchmod(&dir, Mode::from_raw_mode(mode)).map_err(PlaceError::SetMode)?;
            if let Some(label) = &place.label {
                write_label(Handle::Fd(dir.as_fd()), label).map_err(PlaceError::SetLabel)?;
            }
            fsroot::rename_noreplace(parent, TEMPORARY, parent, name).map_err(|errno| match errno {
                Errno::EXIST => PlaceError::Appeared,
                errno => PlaceError::Rename(errno),
            })
        };
        match finish() {
            Ok(()) => {
                let entry = Entry::open_at(parent, name).map_err(PlaceError::Made)?;
                if (entry.meta().dev, entry.meta().ino) != (made.st_dev, made.st_ino) {
                    return Err(PlaceError::NotWhatWasMade);
                }
                Ok(entry)
            }
            Err(error) => {
                let _ = fsroot::remove_dir(parent, TEMPORARY);
                Err(error)
            }
        }
    }

    fn created(&mut self, place: &Place, path: &[u8], entry: Option<&Entry>) {
        let owner = place.owner.unwrap_or_else(|| match entry {
            Some(entry) => Ids {
                uid: entry.meta().uid,
                gid: entry.meta().gid,
            },
            None => Ids {
                uid: rustix::process::geteuid().as_raw(),
                gid: rustix::process::getegid().as_raw(),
            },
        });
        self.report.created += 1;
        self.change(
            path,
            What::Created {
                mode: octal(place.mode.unwrap_or(DEFAULT_MODE)),
                owner,
                label: place.label.clone(),
            },
        );
    }

    /// Compares an existing directory with the layout and repairs it.
    fn repair(&mut self, place: &Place, path: &[u8], entry: &Entry) {
        let meta = entry.meta();
        let found_owner = Ids {
            uid: meta.uid,
            gid: meta.gid,
        };
        let owner = place.owner.filter(|owner| *owner != found_owner);
        let mode = place.mode.filter(|mode| *mode != meta.permissions());
        let label = match &place.label {
            None => None,
            Some(wanted) => match read_label(entry.handle()) {
                Ok(found) if found.as_deref() == Some(wanted.as_bytes()) => None,
                Ok(found) => Some((found, wanted)),
                Err(errno) => {
                    let error = PathError::errno(path, "read the label", errno);
                    return self.fail(&place.key, error);
                }
            },
        };
        if owner.is_none() && mode.is_none() && label.is_none() {
            self.report.unchanged += 1;
            return;
        }
        self.report.repaired += 1;
        let dir = if self.mode == ApplyMode::Write {
            match fsroot::reopen_dir(entry.fd()) {
                Ok(dir) => Some(dir),
                Err(errno) => {
                    return self.fail(&place.key, PathError::errno(path, "open", errno));
                }
            }
        } else {
            None
        };
        if let Some(wanted) = owner {
            let done = dir.as_ref().map(|dir| {
                rustix::fs::fchown(
                    dir,
                    Some(Uid::from_raw(wanted.uid)),
                    Some(Gid::from_raw(wanted.gid)),
                )
            });
            let what = What::Owner {
                found: found_owner,
                wanted,
            };
            self.repaired(path, what, done, "set the owner");
        }
        if let Some(wanted) = mode {
            let done = dir
                .as_ref()
                .map(|dir| rustix::fs::fchmod(dir, Mode::from_raw_mode(wanted)));
            let what = What::Mode {
                found: octal(meta.permissions()),
                wanted: octal(wanted),
            };
            self.repaired(path, what, done, "set the mode");
        }
        if let Some((found, wanted)) = label {
            let done = dir
                .as_ref()
                .map(|dir| write_label(Handle::Fd(dir.as_fd()), wanted));
            let what = What::Label {
                found: found.map(|found| EscapedPath(&found).to_string()),
                wanted: wanted.clone(),
            };
            self.repaired(path, what, done, "set the label");
        }
    }

    /// Reports a repair that was made (`Some(Ok)`), would be made (`None`)
    /// or failed.
    fn repaired(
        &mut self,
        path: &[u8],
        what: What,
        done: Option<rustix::io::Result<()>>,
        doing: &str,
    ) {
        match done {
            Some(Err(errno)) => self
                .report
                .errors
                .push(PathError::errno(path, doing, errno)),
            _ => self.change(path, what),
        }
    }

    /// Empties a trash an interrupted prune left in a declared directory
    /// (or one holding what a prune could not delete). What cannot be
    /// deleted stays, as warnings: the tree is placed either way.
    fn leftover_trash(&mut self, place: &Place) {
        if self
            .failed
            .iter()
            .any(|failed| is_within(&place.key, failed))
            || self
                .absent
                .iter()
                .any(|absent| is_within(&place.key, absent))
            || self.kept.iter().any(|kept| is_within(&place.key, kept))
        {
            return;
        }
        let path = shown(self.root, &place.key);
        let Ok(reached) = self.root.reach_dir(place.key.as_bytes()) else {
            return;
        };
        if !mount_rule::refusals(self.layout, self.root, &reached.mounts).is_empty() {
            // Reported by place(); nothing is acted through it.
            return;
        }
        let dir = reached.fd;
        let listing = match trash::find(dir.as_fd()) {
            Ok(trash::Found::Ours(listing)) => listing,
            Ok(trash::Found::Nothing | trash::Found::Foreign) => return,
            Err(errno) => {
                let error = PathError::errno(&path, "look for a leftover trash in", errno);
                return self.report.warnings.push(error);
            }
        };
        if self.mode != ApplyMode::Write {
            let what = What::Trash {
                objects: None,
                bytes: None,
                left: None,
                entries: count_entries(listing.as_fd()),
            };
            return self.change(&path, what);
        }
        let pool = match &self.pool {
            Some(pool) => pool,
            None => match delete::pool(None).build() {
                Ok(pool) => self.pool.insert(pool),
                Err(error) => {
                    let error = PathError::new(&path, format!("cannot start threads: {error}"));
                    return self.report.warnings.push(error);
                }
            },
        };
        let mut trash_path = path.clone();
        trash_path.push(b'/');
        trash_path.extend_from_slice(trash::NAME.to_bytes());
        let guard = protected_guard(self.layout, &place.key);
        let options = DeleteOptions {
            dry_run: false,
            count_bytes: true,
            guard: Some(&guard),
        };
        let mut outcome =
            delete::delete_contents(pool, listing, PathChain::new(&trash_path), &options);
        let left = if outcome.complete {
            0
        } else {
            outcome.left().max(1)
        };
        outcome.errors_into(&trash_path, &mut self.report.warnings);
        if outcome.complete {
            if let Err(errno) = trash::remove(&dir) {
                let error = PathError::errno(&trash_path, "remove", errno);
                self.report.warnings.push(error);
            }
        }
        self.change(
            &path,
            What::Trash {
                objects: Some(outcome.objects),
                bytes: Some(outcome.bytes),
                left: Some(left),
                entries: None,
            },
        );
    }

    fn change(&mut self, path: &[u8], what: What) {
        self.report.changes.push(Change {
            path: EscapedPath(path).to_string(),
            what,
        });
    }

    fn fail(&mut self, key: &str, error: PathError) {
        self.failed.push(key.to_owned());
        self.report.errors.push(error);
    }
}

/// The target of the symlink `name` in `parent` (at `key`), if it may be
/// kept: a path outside the layout.
fn keepable_target(
    layout: &Layout,
    key: &str,
    parent: &OwnedFd,
    name: &CString,
) -> Result<String, PlaceError> {
    let raw = rustix::fs::readlinkat(parent, name.as_c_str(), Vec::new())
        .map_err(PlaceError::ReadLink)?;
    let shown = EscapedPath(raw.as_bytes()).to_string();
    let Some(target) = link_target(key, raw.as_bytes()) else {
        return Err(PlaceError::Unlabelled(shown));
    };
    match layout.overlapping(&target) {
        Some(rule) => Err(PlaceError::IntoTheLayout {
            shown,
            rule: rule.path.clone(),
        }),
        None => Ok(target),
    }
}

/// Whether the image holds `key` (a `--keep-symlink` path) as a symlink
/// that may be kept: `Ok(Some(target))`; `Ok(None)` when it is anything
/// else (or absent); `Err` for a symlink that may not be kept, or one that
/// cannot be read. What `prune --keep-symlink` asks before leaving a
/// selected path alone.
pub(crate) fn kept_symlink(
    layout: &Layout,
    root: &Root,
    key: &str,
) -> Result<Option<String>, PlaceError> {
    let Some((parent_key, name)) = split_key(key) else {
        return Ok(None);
    };
    let name = c_name(name.as_bytes());
    let parent = root
        .open_dir_beneath(parent_key.as_bytes())
        .map_err(PlaceError::Resolve)?;
    match Entry::open_at(&parent, &name) {
        Ok(entry) if entry.kind() == FileType::Symlink => {
            keepable_target(layout, key, &parent, &name).map(Some)
        }
        Ok(_) | Err(Errno::NOENT) => Ok(None),
        Err(errno) => Err(PlaceError::Open(errno)),
    }
}

/// The layout's protected types but the one of the path at `key`: what a
/// trash in that path may not delete.
fn protected_guard(layout: &Layout, key: &str) -> Guard {
    let own = layout.paths.iter().find(|rule| rule.path == key);
    Guard {
        protected: layout
            .paths
            .iter()
            .filter(|rule| rule.protected)
            .map(|rule| rule.type_name.clone())
            .filter(|type_name| own.is_none_or(|own| own.type_name != *type_name))
            .collect(),
    }
}

/// The entries of a directory open for listing (`None` if it cannot be
/// listed), through its own open file description.
fn count_entries(dir: std::os::fd::BorrowedFd<'_>) -> Option<u64> {
    let own = fsroot::reopen_dir(dir).ok()?;
    let mut buffer = Vec::with_capacity(4096);
    let mut entries = rustix::fs::RawDir::new(&own, buffer.spare_capacity_mut());
    let mut count = 0;
    while let Some(entry) = entries.next() {
        if !matches!(entry.ok()?.file_name().to_bytes(), b"." | b"..") {
            count += 1;
        }
    }
    Some(count)
}

/// Describes a non-directory found at a declared path.
fn in_the_way(parent: &OwnedFd, name: &CString, kind: FileType) -> String {
    match kind {
        FileType::Symlink => match rustix::fs::readlinkat(parent, name.as_c_str(), Vec::new()) {
            Ok(target) => format!(
                "is a symlink to {} (never followed)",
                EscapedPath(target.as_bytes())
            ),
            Err(_) => "is a symlink (never followed)".to_owned(),
        },
        FileType::RegularFile => "is a regular file, not a directory".to_owned(),
        FileType::Fifo => "is a FIFO, not a directory".to_owned(),
        FileType::Socket => "is a socket, not a directory".to_owned(),
        FileType::CharacterDevice | FileType::BlockDevice => {
            "is a device, not a directory".to_owned()
        }
        _ => "is not a directory".to_owned(),
    }
}

fn octal(mode: u32) -> String {
    format!("{mode:04o}")
}
