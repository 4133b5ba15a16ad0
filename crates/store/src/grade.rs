//! How much a set of file permissions gives, in words a report can use:
//! each grade is named after the strongest permission in the set, and the
//! report lists the permissions beside it.

use std::collections::BTreeSet;

use serde::Serialize;

/// From weakest to strongest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grade {
    /// `map` or `execmod` only: neither opens a file nor reads it; they
    /// matter only beside `open` and `read`, `write` or `execute`.
    MapOnly,
    /// Attributes, traversal, opening without reading (`getattr`, `search`,
    /// `open`, `ioctl`, `lock`, `watch…`).
    Metadata,
    /// Running the file (`execute`, `execute_no_trans`, `entrypoint`).
    Execute,
    /// Reading the content (`read`).
    Read,
    /// Changing the label (`relabelfrom`, `relabelto`).
    Relabel,
    /// Changing content, names, attributes or what is mounted there.
    Write,
}

const WRITE: &[&str] = &[
    "write",
    "append",
    "create",
    "unlink",
    "link",
    "rename",
    "setattr",
    "add_name",
    "remove_name",
    "rmdir",
    "reparent",
    "mounton",
    "quotaon",
    "swapon",
];
const RELABEL: &[&str] = &["relabelfrom", "relabelto"];
const READ: &[&str] = &["read"];
const EXECUTE: &[&str] = &["execute", "execute_no_trans", "entrypoint"];
const MAP_ONLY: &[&str] = &["map", "execmod"];

impl Grade {
    /// The grade of one permission.
    pub fn of_permission(permission: &str) -> Grade {
        let is = |list: &[&str]| list.contains(&permission);
        if is(WRITE) {
            Grade::Write
        } else if is(RELABEL) {
            Grade::Relabel
        } else if is(READ) {
            Grade::Read
        } else if is(EXECUTE) {
            Grade::Execute
        } else if is(MAP_ONLY) {
            Grade::MapOnly
        } else {
            Grade::Metadata
        }
    }

    /// The strongest grade of `permissions` (`MapOnly` for none).
    pub fn of<'a>(permissions: impl IntoIterator<Item = &'a String>) -> Grade {
        permissions
            .into_iter()
            .map(|p| Grade::of_permission(p))
            .max()
            .unwrap_or(Grade::MapOnly)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Grade::MapOnly => "map only",
            Grade::Metadata => "metadata",
            Grade::Execute => "execute",
            Grade::Read => "read",
            Grade::Relabel => "relabel",
            Grade::Write => "write",
        }
    }
}

/// `class { p q }` per class, in class order, for reports.
pub fn describe_permissions(
    per_class: &std::collections::BTreeMap<String, BTreeSet<String>>,
) -> String {
    per_class
        .iter()
        .map(|(class, perms)| {
            let perms: Vec<&str> = perms.iter().map(String::as_str).collect();
            if perms.len() == 1 {
                format!("{class} {}", perms[0])
            } else {
                format!("{class} {{ {} }}", perms.join(" "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grade(perms: &[&str]) -> Grade {
        let set: Vec<String> = perms.iter().map(|p| (*p).to_owned()).collect();
        Grade::of(&set)
    }

    #[test]
    fn each_grade_matches_its_permissions() {
        assert_eq!(grade(&["getattr", "open", "search"]), Grade::Metadata);
        assert_eq!(grade(&["map"]), Grade::MapOnly);
        assert_eq!(grade(&["execmod"]), Grade::MapOnly);
        assert_eq!(grade(&["getattr", "map"]), Grade::Metadata);
        assert_eq!(grade(&["getattr", "read"]), Grade::Read);
        assert_eq!(grade(&["execute", "map"]), Grade::Execute);
        assert_eq!(grade(&["relabelto", "getattr"]), Grade::Relabel);
        assert_eq!(grade(&["read", "append"]), Grade::Write);
        assert!(Grade::Write > Grade::Relabel && Grade::Read > Grade::Execute);
    }
}
