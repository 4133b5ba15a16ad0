//! `capacity:` on a real tree: project quotas on ext4 and XFS.
//!
//! A capacity path's project ID (`layout::model::Capacity::project`) goes
//! on the directory with the inherit flag (`PROJINHERIT`), so everything
//! created below takes it, and on every object already below ([`tag`]);
//! then the filesystem is told the project's limits (`Q_SETQUOTA`). Each
//! step reads first and writes only what differs, so a second run
//! changes nothing and drift (an object tagged otherwise, a limit changed
//! by hand or in the layout) is repaired and reported.
//!
//! Before anything is changed, [`preflight`] asks each capacity's
//! filesystem whether it counts and enforces project quotas; if one does
//! not, the whole apply stops with an error naming the mount and the
//! option it needs (`NodeError::Capacity`, exit 2), so nothing is half
//! applied. The kernel calls live in `sys`, the one module with `unsafe`.

mod sys;
mod tag;

use std::os::fd::{AsFd, OwnedFd};

use rustix::io::Errno;
use serde::Serialize;

use crate::{describe, shown, NodeError, PathError};
use fsroot::{EscapedPath, Root};
use layout::model::{is_within, Capacity, Layout};

pub use sys::ProjectQuotaState;

/// Why a capacity path's filesystem, quota or project ID could not be
/// read. Paths are shown with the root and escaped.
#[derive(Debug, thiserror::Error)]
pub enum QuotaError {
    /// The root, a path below it, or the mount table.
    #[error(transparent)]
    Fs(#[from] fsroot::Error),
    #[error("{path}: cannot open: {}", describe(*.errno))]
    Open { path: String, errno: Errno },
    /// `path` is the layout path.
    #[error("{path}: cannot stat: {}", describe(*.errno))]
    Stat { path: String, errno: Errno },
    #[error("{path}: cannot read the quota state of its filesystem: {}", describe(*.errno))]
    QuotaState { path: String, errno: Errno },
    #[error("{path}: does not exist (run `semanifest apply`)")]
    Missing { path: String },
    #[error("{path}: the filesystem at {mount} ({fstype}) does not count project quotas")]
    NotCounting {
        path: String,
        mount: String,
        fstype: String,
    },
    #[error("{path}: cannot read the quota of project {project}: {}", describe(*.errno))]
    ReadQuota {
        path: String,
        project: u32,
        errno: Errno,
    },
    #[error("{path}: cannot statvfs: {}", describe(*.errno))]
    Statvfs { path: String, errno: Errno },
    #[error("{path}: cannot read its project ID: {}", describe(*.errno))]
    ProjectId { path: String, errno: Errno },
}

/// What `apply` does about capacities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapacityMode {
    /// Project IDs, inherit flags and limits; a filesystem that does not
    /// enforce project quotas is an error.
    #[default]
    Enforce,
    /// Project IDs and inherit flags only, no limits: for a filesystem
    /// whose project quotas are turned on later (XFS counts what was
    /// tagged when it is next mounted with `prjquota`). ext4 still needs
    /// its `project` feature to hold the IDs.
    TagOnly,
    /// Leave project IDs and limits alone (an image root, a node whose
    /// quotas another tool manages).
    Skip,
}

/// Limits as a filesystem holds them; `None` is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Bytes (the filesystem counts 1 KiB blocks).
    pub bytes: Option<u64>,
    pub inodes: Option<u64>,
}

impl Limits {
    pub fn of(capacity: &Capacity) -> Self {
        Limits {
            bytes: capacity.limit.as_ref().map(|l| l.kib() * 1024),
            inodes: capacity.inodes,
        }
    }

    fn found(quota: &sys::Dqblk) -> (Self, bool) {
        let none = |value: u64| (value != 0).then_some(value);
        let limits = Limits {
            bytes: none(quota.bhardlimit).map(|kib| kib * 1024),
            inodes: none(quota.ihardlimit),
        };
        (limits, quota.bsoftlimit != 0 || quota.isoftlimit != 0)
    }
}

impl std::fmt::Display for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bytes = self
            .bytes
            .map_or("unlimited".to_owned(), layout::model::human_bytes);
        let inodes = self
            .inodes
            .map_or("unlimited".to_owned(), |n| n.to_string());
        write!(f, "{bytes}, {inodes} inodes")
    }
}

/// One capacity after a run.
#[derive(Clone, Debug, Serialize)]
pub struct CapacityOutcome {
    /// The path on this machine (root included), escaped.
    pub path: String,
    pub project: u32,
    /// Objects examined, the directory included.
    pub objects: u64,
    /// Objects whose project ID (or a directory's inherit flag) differed.
    pub tagged: u64,
    /// Objects this kernel cannot tag without opening them (symlinks,
    /// FIFOs, sockets and devices before Linux 6.17); they count in the
    /// project they had.
    pub untaggable: u64,
    /// Mount points below, not entered.
    pub mounts: u64,
    /// The limits the layout asks for (`null` with `--capacity tag-only`).
    pub limits: Option<Limits>,
}

/// A capacity path's filesystem, as the preflight found it.
#[derive(Clone, Debug)]
pub struct Filesystem {
    /// Where it is mounted, and what it is.
    pub mount: String,
    pub fstype: String,
    pub source: String,
    /// Its project quota state; `None`: the kernel has no quota support
    /// for it.
    pub state: Option<ProjectQuotaState>,
}

/// Checks, before anything is changed, that every capacity's filesystem
/// can do what `mode` asks. Paths that do not exist yet are judged by the
/// filesystem of their nearest existing ancestor.
pub fn preflight(root: &Root, layout: &Layout, mode: CapacityMode) -> Result<(), NodeError> {
    if mode == CapacityMode::Skip {
        return Ok(());
    }
    let mut problems = Vec::new();
    for (rule, _) in layout.capacities() {
        let filesystem = match filesystem_of(root, &rule.path) {
            Ok(filesystem) => filesystem,
            Err(error) => {
                problems.push(error.to_string());
                continue;
            }
        };
        if let Some(why) = refusal(&filesystem, mode) {
            problems.push(format!(
                "{}: `capacity:` needs project quotas, but the filesystem at {} ({} on {}) {why}",
                EscapedPath(&shown(root, &rule.path)),
                filesystem.mount,
                filesystem.fstype,
                filesystem.source,
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(NodeError::Capacity(problems))
    }
}

/// Why `filesystem` cannot serve `mode`, with what to do about it.
fn refusal(filesystem: &Filesystem, mode: CapacityMode) -> Option<String> {
    let state = filesystem.state;
    match (filesystem.fstype.as_str(), state) {
        ("ext4", Some(state))
            if state.accounting && (state.enforcing || mode == CapacityMode::TagOnly) =>
        {
            None
        }
        ("ext4", Some(state)) if state.accounting => Some(
            "counts project use but does not enforce limits: mount it with `-o prjquota`"
                .to_owned(),
        ),
        ("ext4", Some(_)) => Some(
            "has no project quotas: create it with `mkfs.ext4 -O quota,project` (or run \
             `tune2fs -O quota,project` on it unmounted), then mount it with `-o prjquota`"
                .to_owned(),
        ),
        ("ext4", None) => Some(
            "cannot have project quotas on this kernel (it was built without quota support: \
             CONFIG_QUOTA and CONFIG_QFMT_V2); on a kernel with it, create the filesystem with \
             `mkfs.ext4 -O quota,project` and mount it with `-o prjquota`"
                .to_owned(),
        ),
        ("xfs", _) if mode == CapacityMode::TagOnly => None,
        ("xfs", Some(state)) if state.accounting && state.enforcing => None,
        ("xfs", Some(state)) if state.accounting => Some(
            "counts project use but does not enforce limits: mount it with `-o prjquota` \
             instead of `pqnoenforce`"
                .to_owned(),
        ),
        ("xfs", Some(_)) => Some(
            "does not count project quotas: mount it with `-o prjquota` (XFS turns quotas on \
             only when it is mounted, not on a remount: set the option where the mount is \
             declared, fstab or a mount unit, and reboot)"
                .to_owned(),
        ),
        ("xfs", None) => Some(
            "cannot enforce project quotas on this kernel (it was built without \
             CONFIG_XFS_QUOTA); on a kernel with it, mount it with `-o prjquota`; \
             `--capacity tag-only` tags without limits"
                .to_owned(),
        ),
        (other, _) => Some(format!(
            "is {other}: semanifest sets project quotas on ext4 and XFS only; put the path on \
             one, or use `--capacity skip`"
        )),
    }
}

/// The filesystem `key` is (or will be) on.
pub fn filesystem_of(root: &Root, key: &str) -> Result<Filesystem, QuotaError> {
    let (dir, _) = nearest_dir(root, key)?;
    let meta = fsroot::Meta::of(dir.as_fd()).map_err(|errno| QuotaError::Stat {
        path: key.to_owned(),
        errno,
    })?;
    // Read after `dir` is open: the mount it is on stays listed.
    let table = fsroot::MountTable::read()?;
    let mount = table.get(meta.mount);
    let state = match sys::project_state(dir.as_fd()) {
        Ok(state) => Some(state),
        Err(Errno::NOSYS) => None,
        // A filesystem without quota support at all (tmpfs, overlay).
        Err(Errno::INVAL | Errno::NOTTY | Errno::OPNOTSUPP) => Some(ProjectQuotaState {
            accounting: false,
            enforcing: false,
        }),
        Err(errno) => {
            return Err(QuotaError::QuotaState {
                path: escaped(root, key),
                errno,
            })
        }
    };
    Ok(match mount {
        Some(mount) => Filesystem {
            mount: EscapedPath(&mount.point).to_string(),
            fstype: mount.fstype.clone(),
            source: EscapedPath(&mount.source).to_string(),
            state,
        },
        None => Filesystem {
            mount: "?".to_owned(),
            fstype: "?".to_owned(),
            source: "?".to_owned(),
            state,
        },
    })
}

/// `key`, or its nearest existing ancestor (the root at worst), opened for
/// reading; and whether it was `key` itself.
fn nearest_dir(root: &Root, key: &str) -> Result<(OwnedFd, bool), QuotaError> {
    let mut at = key;
    loop {
        match root.open_dir_beneath(at.as_bytes()) {
            Ok(fd) => {
                let dir = fsroot::reopen_dir(fd.as_fd()).map_err(|errno| QuotaError::Open {
                    path: escaped(root, at),
                    errno,
                })?;
                return Ok((dir, at == key));
            }
            Err(fsroot::Error::Io { error, .. })
                if error.kind() == std::io::ErrorKind::NotFound && at != "/" =>
            {
                at = match at.rfind('/') {
                    Some(0) | None => "/",
                    Some(cut) => &at[..cut],
                };
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// `key` as an error shows it: with the root, escaped.
fn escaped(root: &Root, key: &str) -> String {
    EscapedPath(&shown(root, key)).to_string()
}

/// What [`apply`] changed (or would), for the apply report.
pub(crate) enum Finding {
    Tagged { objects: u64 },
    Limits { found: Limits, wanted: Limits },
}

/// What [`apply`] found and did.
#[derive(Default)]
pub(crate) struct Applied {
    pub outcomes: Vec<CapacityOutcome>,
    /// What differed, per path shown.
    pub findings: Vec<(Vec<u8>, Finding)>,
    pub errors: Vec<PathError>,
}

/// Tags every capacity's subtree and sets its limits, parents first,
/// skipping paths that `skip` says failed or do not exist.
pub(crate) fn apply(
    root: &Root,
    layout: &Layout,
    mode: CapacityMode,
    write: bool,
    pool: &rayon::ThreadPool,
    skip: impl Fn(&str) -> bool,
) -> Applied {
    let mut applied = Applied::default();
    if mode == CapacityMode::Skip {
        return applied;
    }
    let Applied {
        outcomes,
        findings,
        errors,
    } = &mut applied;
    let mut report = |path: &[u8], finding: Finding| findings.push((path.to_vec(), finding));
    let nested: Vec<&str> = layout
        .capacities()
        .map(|(rule, _)| rule.path.as_str())
        .collect();
    for (rule, capacity) in layout.capacities() {
        let path = shown(root, &rule.path);
        if skip(&rule.path) {
            continue;
        }
        let dir = match root
            .open_dir_beneath(rule.path.as_bytes())
            .map_err(|error| error.to_string())
            .and_then(|fd| fsroot::reopen_dir(fd.as_fd()).map_err(describe))
        {
            Ok(dir) => dir,
            Err(error) => {
                errors.push(PathError::new(&path, format!("cannot open: {error}")));
                continue;
            }
        };
        let stops: Vec<Vec<u8>> = nested
            .iter()
            .filter(|other| **other != rule.path && is_within(other, &rule.path))
            .map(|other| shown(root, other))
            .collect();
        let limits_fd = fsroot::reopen_dir(dir.as_fd());
        let tally = tag::tag_tree(pool, dir, &path, capacity.project, write, &stops);
        if tally.tagged > 0 {
            report(
                &path,
                Finding::Tagged {
                    objects: tally.tagged,
                },
            );
        }
        errors.extend(tally.errors);
        if tally.errors_total > MESSAGES {
            errors.push(PathError::new(
                &path,
                format!(
                    "{} more objects could not be tagged",
                    tally.errors_total - MESSAGES
                ),
            ));
        }
        let wanted = (mode == CapacityMode::Enforce).then(|| Limits::of(capacity));
        if let Some(wanted) = wanted {
            match limits_fd.and_then(|fd| {
                let quota = sys::get_project(fd.as_fd(), capacity.project)?;
                Ok((fd, quota))
            }) {
                Ok((fd, quota)) => {
                    let (found, soft) = Limits::found(&quota);
                    if found != wanted || soft {
                        let done = if write {
                            sys::set_project_limits(
                                fd.as_fd(),
                                capacity.project,
                                wanted.bytes.map_or(0, |b| b / 1024),
                                wanted.inodes.unwrap_or(0),
                            )
                        } else {
                            Ok(())
                        };
                        match done {
                            Ok(()) => report(&path, Finding::Limits { found, wanted }),
                            Err(errno) => errors.push(PathError::errno(
                                &path,
                                &format!("set the limits of project {}", capacity.project),
                                errno,
                            )),
                        }
                    }
                }
                Err(errno) => errors.push(PathError::errno(
                    &path,
                    &format!("read the quota of project {}", capacity.project),
                    errno,
                )),
            }
        }
        outcomes.push(CapacityOutcome {
            path: EscapedPath(&path).to_string(),
            project: capacity.project,
            objects: tally.objects,
            tagged: tally.tagged,
            untaggable: tally.untaggable,
            mounts: tally.mounts,
            limits: wanted,
        });
    }
    applied
}

/// Error messages a walk keeps (see `tag`).
const MESSAGES: u64 = 1000;

/// A capacity path's use against its limits (`semanifest df`).
#[derive(Clone, Debug, Serialize)]
pub struct Usage {
    /// The layout path (`/var/mnt`).
    pub path: String,
    pub project: u32,
    /// Bytes of blocks the project's objects take.
    pub used_bytes: u64,
    /// The hard limit on bytes; `null`: none.
    pub limit_bytes: Option<u64>,
    /// Objects counted in the project.
    pub used_inodes: u64,
    pub limit_inodes: Option<u64>,
    /// The limits the layout asks for (differing from the live ones
    /// until the next `apply`).
    pub layout_limits: Limits,
    /// The filesystem the path is on.
    pub mount: String,
    pub fstype: String,
    /// The filesystem's size and what is left of it for unprivileged
    /// writers (`statvfs`: `f_blocks`, `f_bavail`).
    pub filesystem_bytes: u64,
    pub available_bytes: u64,
}

/// Each capacity path's use, from the filesystem's quota. A path that
/// cannot be read is an error for that path alone.
pub fn usage(root: &Root, layout: &Layout) -> Vec<Result<Usage, QuotaError>> {
    layout
        .capacities()
        .map(|(rule, capacity)| {
            let (dir, exact) = nearest_dir(root, &rule.path)?;
            let path = || escaped(root, &rule.path);
            if !exact {
                return Err(QuotaError::Missing { path: path() });
            }
            let filesystem = filesystem_of(root, &rule.path)?;
            if !filesystem.state.is_some_and(|s| s.accounting) {
                return Err(QuotaError::NotCounting {
                    path: path(),
                    mount: filesystem.mount,
                    fstype: filesystem.fstype,
                });
            }
            let quota = sys::get_project(dir.as_fd(), capacity.project).map_err(|errno| {
                QuotaError::ReadQuota {
                    path: path(),
                    project: capacity.project,
                    errno,
                }
            })?;
            let (limits, _) = Limits::found(&quota);
            let stat = rustix::fs::fstatvfs(&dir).map_err(|errno| QuotaError::Statvfs {
                path: path(),
                errno,
            })?;
            Ok(Usage {
                path: rule.path.clone(),
                project: capacity.project,
                used_bytes: quota.curspace,
                limit_bytes: limits.bytes,
                used_inodes: quota.curinodes,
                limit_inodes: limits.inodes,
                layout_limits: Limits::of(capacity),
                mount: filesystem.mount,
                fstype: filesystem.fstype,
                filesystem_bytes: stat.f_blocks * stat.f_frsize,
                available_bytes: stat.f_bavail * stat.f_frsize,
            })
        })
        .collect()
}

/// The project ID and inherit flag of the directory `key`, for tests and
/// reports: `(project, inherit)`.
pub fn project_of(root: &Root, key: &str) -> Result<(u32, bool), QuotaError> {
    let fd = root.open_dir_beneath(key.as_bytes())?;
    let dir = fsroot::reopen_dir(fd.as_fd()).map_err(|errno| QuotaError::Open {
        path: escaped(root, key),
        errno,
    })?;
    let attr = sys::get_fsxattr(dir.as_fd()).map_err(|errno| QuotaError::ProjectId {
        path: escaped(root, key),
        errno,
    })?;
    Ok((attr.projid, attr.xflags & sys::XFLAG_PROJINHERIT != 0))
}
