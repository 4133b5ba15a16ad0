//! What each access level of a layout allows, class by class: the one
//! table both CIL generators print their `classpermission`s from — the
//! standalone module as `semanifest_<level>` with every permission, a
//! store module as `<module>_<level>` without the permissions its store's
//! classes lack.

use serde::Serialize;

use layout::model::AccessLevel;

/// Per level, per class, the permissions the level allows. Levels nest as
/// the model says (write ⊃ read ⊃ search, write ⊃ append ⊃ search): each
/// lists every class it touches, so a grant is its levels' union.
pub(crate) const LEVELS: [(AccessLevel, &[(&str, &str)]); 5] = [
    (AccessLevel::Search, &[("dir", "getattr search open"), ("lnk_file", "getattr read")]),
    (
        AccessLevel::Read,
        &[
            ("dir", "getattr search open read ioctl lock watch"),
            ("file", "getattr open read ioctl lock map watch"),
            ("lnk_file", "getattr read"),
            ("fifo_file", "getattr open read ioctl lock"),
            ("sock_file", "getattr"),
        ],
    ),
    (
        AccessLevel::Append,
        &[("dir", "getattr search open"), ("file", "getattr open append ioctl lock"), ("lnk_file", "getattr read")],
    ),
    // `mounton` on directories and files: who owns a tree may mount over
    // what is in it (runc bind-mounts a copy of itself over a file in its
    // state directory under /run/containerd). Mounting also needs
    // CAP_SYS_ADMIN and the filesystem's `mount`, which workloads lack.
    (
        AccessLevel::Write,
        &[
            ("dir", "getattr search open read write add_name remove_name create rmdir setattr rename reparent ioctl lock watch mounton"),
            ("file", "getattr open read write append create unlink link rename setattr ioctl lock map watch mounton"),
            ("lnk_file", "getattr read create unlink link rename setattr"),
            ("fifo_file", "getattr open read write append create unlink link rename setattr ioctl lock"),
            ("sock_file", "getattr open read write append create unlink link rename setattr"),
        ],
    ),
    (AccessLevel::Exec, &[("dir", "getattr search"), ("file", "getattr open read map execute execute_no_trans ioctl")]),
];

/// The permission sets agents' host classes grant beyond the access levels
/// (docs/agents.md), by the name the generated module gives them after its
/// prefix: device nodes used, never created; connecting to a socket; other
/// processes' `/proc/PID` entries; and, for the runtime, a mount point.
pub(crate) const HOST_SETS: [(&str, &[(&str, &str)]); 5] = [
    (
        "device_read",
        &[
            ("chr_file", "getattr open read ioctl lock map"),
            ("blk_file", "getattr open read ioctl lock map"),
        ],
    ),
    (
        "device_write",
        &[
            ("chr_file", "getattr open read write append ioctl lock map"),
            ("blk_file", "getattr open read write append ioctl lock map"),
        ],
    ),
    ("connect", &[("sock_file", "getattr write")]),
    (
        "processes",
        &[
            ("dir", "getattr open read search"),
            ("file", "getattr open read ioctl lock"),
            ("lnk_file", "getattr read"),
        ],
    ),
    // A hostPath volume's own directory (or file, socket, device node) as
    // a mount point: runc bind-mounts the volume, then sets its
    // propagation on the new mount, whose root is the host path itself.
    // `mounton` opens, reads and writes nothing.
    (
        "mountpoint",
        &[
            ("dir", "mounton"),
            ("file", "mounton"),
            ("sock_file", "mounton"),
            ("chr_file", "mounton"),
            ("blk_file", "mounton"),
        ],
    ),
];

/// One level as a template prints it: `(classpermission NAME)` and one
/// `classpermissionset` per class.
#[derive(Debug, Serialize)]
pub(crate) struct Level {
    pub(crate) name: String,
    pub(crate) sets: Vec<ClassPerms>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ClassPerms {
    pub(crate) class: String,
    pub(crate) perms: Vec<String>,
}

/// The classpermission the standalone module names `level` by.
pub(crate) fn standalone_name(level: AccessLevel) -> String {
    format!("semanifest_{level}")
}

/// Every level with every permission, as the standalone module defines
/// them.
pub(crate) fn standalone_levels() -> Vec<Level> {
    LEVELS
        .iter()
        .map(|&(level, sets)| standalone_level(standalone_name(level), sets))
        .collect()
}

/// The host classes' permission sets, as the standalone module defines
/// them.
pub(crate) fn standalone_host_sets() -> Vec<Level> {
    HOST_SETS
        .iter()
        .map(|&(name, sets)| standalone_level(format!("semanifest_{name}"), sets))
        .collect()
}

fn standalone_level(name: String, sets: &[(&str, &str)]) -> Level {
    Level {
        name,
        sets: sets
            .iter()
            .map(|&(class, perms)| ClassPerms {
                class: class.to_owned(),
                perms: perms.split_whitespace().map(str::to_owned).collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_once_weakest_first() {
        let levels: Vec<AccessLevel> = LEVELS.iter().map(|&(level, _)| level).collect();
        assert_eq!(levels, AccessLevel::ALL);
    }
}
