//! Which mounts the node commands act through: the mount points on the
//! way to a directory they change (a pruned path, a removable root, a
//! declared directory and its ancestors), each checked against the mount
//! table before anything changes.
//!
//! A node legitimately has a mount there when it is a filesystem mounted
//! at its own root (a disk or volume at `/var/mnt`, a tmpfs), a bind mount
//! of the directory onto itself (what gives a path a propagation), or the
//! layout's own `mount:` entry, checked to be what the layout says (a
//! tmpfs). A bind mount of some other directory (mountinfo's root field
//! names it) would make the command act on that directory instead, so it
//! is refused, naming the path and the mount. A bind mount of a whole
//! filesystem's root looks like the filesystem itself: what is under it
//! is still guarded by its labels (`prune` and `rm` keep protected ones).

use fsroot::{MountAt, MountShape, MountTable, Root};
use layout::model::Layout;

use super::PathError;

/// Why each of `mounts` (entered on the way to a directory under `root`)
/// may not be acted through; empty when all may. Reads the mount table
/// only when there is a mount to check, after the fds that entered them
/// were opened (so the ids are theirs).
pub(crate) fn refusals(layout: &Layout, root: &Root, mounts: &[MountAt]) -> Vec<PathError> {
    if mounts.is_empty() {
        return Vec::new();
    }
    let table = match MountTable::read() {
        Ok(table) => table,
        Err(error) => {
            return mounts
                .iter()
                .map(|mount| {
                    PathError::new(
                        &root.display(&mount.key),
                        format!("a mount point, and the mount table cannot be read: {error}"),
                    )
                })
                .collect();
        }
    };
    mounts
        .iter()
        .filter_map(|mount| {
            refusal(layout, &table, mount).map(|why| PathError::new(&root.display(&mount.key), why))
        })
        .collect()
}

/// Why `mount` may not be acted through, if it may not.
fn refusal(layout: &Layout, table: &MountTable, mount: &MountAt) -> Option<String> {
    let Some(info) = table.get(mount.id) else {
        return Some(format!(
            "a mount point whose mount (id {}) is not in the mount table (detached \
             meanwhile?); never acted through",
            mount.id
        ));
    };
    let what = table.describe(info);
    let declared = std::str::from_utf8(&mount.key)
        .ok()
        .and_then(|key| layout.paths.iter().find(|rule| rule.path == key));
    if let Some(rule) = declared.filter(|rule| rule.mount.tmpfs) {
        if info.fstype == "tmpfs" && table.shape(info) == MountShape::OwnRoot {
            return None;
        }
        return Some(format!(
            "{what} is mounted here, where the layout mounts a tmpfs ({} declares `mount: {{ \
             tmpfs: true }}`); never acted through",
            rule.path
        ));
    }
    match table.shape(info) {
        MountShape::OwnRoot | MountShape::SelfBind => None,
        MountShape::Bind => Some(format!(
            "{what} is mounted here: acting through it would change that directory instead; \
             semanifest acts only through a filesystem mounted at its own root, a directory \
             bound onto itself, or the layout's own mounts"
        )),
    }
}
