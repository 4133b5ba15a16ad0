//! What `apply` does for `capacity:` and `mount: options:` paths, kept
//! apart from the directories' placing: the capacities' tagging and
//! limits (through [`quota`]) and the live mount flags' check.

use layout::model::{is_within, MountFlag};

use super::{ApplyMode, Run, What};
use crate::quota::{self, CapacityMode, Finding};
use crate::{delete, describe, shown, PathError};
use fsroot::EscapedPath;

impl Run<'_> {
    /// The live per-mount flags of every path with `mount: options:`
    /// (reported, never changed: the path's mount unit makes the mount).
    pub(super) fn mount_flags(&mut self) {
        let layout = self.layout;
        for rule in layout
            .paths
            .iter()
            .filter(|rule| !rule.mount.options.is_empty())
        {
            let key = rule.path.as_str();
            if self
                .failed
                .iter()
                .chain(&self.kept)
                .chain(&self.absent)
                .any(|other| is_within(key, other))
            {
                continue;
            }
            let path = shown(self.root, key);
            let flags = self
                .root
                .open_dir_beneath(key.as_bytes())
                .map_err(|error| error.to_string())
                .and_then(|fd| rustix::fs::fstatvfs(fd).map_err(describe));
            match flags {
                Ok(stat) => {
                    let missing: Vec<String> = rule
                        .mount
                        .options
                        .iter()
                        .filter(|flag| !stat.f_flag.contains(statvfs_flag(**flag)))
                        .map(|flag| flag.as_str().to_owned())
                        .collect();
                    if !missing.is_empty() {
                        self.change(&path, What::MountFlags { missing });
                    }
                }
                Err(error) => self.report.errors.push(PathError::new(
                    &path,
                    format!("cannot read its mount flags: {error}"),
                )),
            }
        }
    }

    /// Tags the capacity paths and sets their limits (not below a failed,
    /// kept or absent directory).
    pub(super) fn capacities(&mut self, capacity: CapacityMode) {
        if capacity == CapacityMode::Skip || self.layout.capacities().next().is_none() {
            return;
        }
        let pool = match &self.pool {
            Some(pool) => pool,
            None => match delete::pool(None).build() {
                Ok(pool) => self.pool.insert(pool),
                Err(error) => {
                    let error = PathError::new(b"/", format!("cannot start threads: {error}"));
                    return self.report.errors.push(error);
                }
            },
        };
        fsroot::raise_fd_limit();
        let (failed, kept, absent) = (&self.failed, &self.kept, &self.absent);
        let skip = |key: &str| {
            failed
                .iter()
                .chain(kept)
                .chain(absent)
                .any(|other| is_within(key, other))
        };
        let applied = quota::apply(
            self.root,
            self.layout,
            capacity,
            self.mode == ApplyMode::Write,
            pool,
            skip,
        );
        let outcomes = applied.outcomes;
        for (path, finding) in applied.findings {
            let project = |path: &[u8]| {
                outcomes
                    .iter()
                    .find(|o| o.path == EscapedPath(path).to_string())
                    .map_or(0, |o| o.project)
            };
            let what = match finding {
                Finding::Tagged { objects } => What::Project {
                    project: project(&path),
                    objects,
                },
                Finding::Limits { found, wanted } => What::Limits {
                    project: project(&path),
                    found,
                    wanted,
                },
            };
            self.change(&path, what);
        }
        self.report.errors.extend(applied.errors);
        self.report.capacities = outcomes;
    }
}

/// The `statvfs` flag of a layout mount flag.
fn statvfs_flag(flag: MountFlag) -> rustix::fs::StatVfsMountFlags {
    use rustix::fs::StatVfsMountFlags;
    match flag {
        MountFlag::Nodev => StatVfsMountFlags::NODEV,
        MountFlag::Nosuid => StatVfsMountFlags::NOSUID,
        MountFlag::Noexec => StatVfsMountFlags::NOEXEC,
    }
}
