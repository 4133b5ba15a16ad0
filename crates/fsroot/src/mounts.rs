//! The mount table, from `/proc/thread-self/mountinfo`: where each mount is, and
//! what it shows there (a whole filesystem, or one directory of it bound
//! elsewhere).

use std::io;

use super::escape::EscapedPath;
use super::key;
use super::Error;

/// One line of a `mountinfo` file (see proc(5)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountInfo {
    /// The mount id, as `statx` reports it in `stx_mnt_id`.
    pub id: u64,
    /// The id of the mount it is mounted on (itself for the namespace's
    /// root).
    pub parent: u64,
    /// The filesystem's device, `major:minor`.
    pub device: (u32, u32),
    /// The directory of the filesystem the mount shows: `/` for the whole
    /// filesystem, another path for a bind mount of one directory of it.
    pub root: Vec<u8>,
    /// Where it is mounted, in this process's view.
    pub point: Vec<u8>,
    /// The filesystem type (`ext4`, `tmpfs`).
    pub fstype: String,
    /// The mount source (`/dev/vda2`, `tmpfs`, `none`).
    pub source: Vec<u8>,
    /// The per-mount options (`rw,nosuid,nodev,noexec,relatime`).
    pub mount_options: String,
    /// The filesystem's options, shared by every mount of it
    /// (`rw,prjquota`).
    pub super_options: String,
}

/// What a mount shows where it is mounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MountShape {
    /// A filesystem mounted at its own root (a disk, a volume, a tmpfs).
    OwnRoot,
    /// A bind mount of the very directory it covers onto itself (what
    /// makes a directory a mount point of its own, to give it a
    /// propagation or mount options).
    SelfBind,
    /// A bind mount of some other directory: what is seen below the mount
    /// point lives elsewhere.
    Bind,
}

/// The mounts of this process's mount namespace.
#[derive(Clone, Debug, Default)]
pub struct MountTable {
    mounts: Vec<MountInfo>,
}

impl MountTable {
    /// Reads the calling thread's mount table
    /// (`/proc/thread-self/mountinfo`: a thread may have a mount namespace
    /// of its own, and `/proc/self` is the main thread's). A mount held by
    /// an open fd is listed unless it was detached (`umount -l`), and its
    /// id cannot be reused while the fd is held: read the table after
    /// opening what it is asked about.
    pub fn read() -> Result<Self, Error> {
        const PATH: &str = "/proc/thread-self/mountinfo";
        let text = std::fs::read(PATH).map_err(|error: io::Error| Error::Io {
            path: PATH.as_bytes().to_vec(),
            error,
        })?;
        Ok(Self::parse(&text))
    }

    /// The lines that parse; a malformed one is skipped.
    pub fn parse(text: &[u8]) -> Self {
        let mounts = text
            .split(|&byte| byte == b'\n')
            .filter_map(parse_line)
            .collect();
        Self { mounts }
    }

    /// The mount with this id.
    pub fn get(&self, id: u64) -> Option<&MountInfo> {
        self.mounts.iter().find(|mount| mount.id == id)
    }

    /// Every mount, in the kernel's order.
    pub fn iter(&self) -> impl Iterator<Item = &MountInfo> {
        self.mounts.iter()
    }

    /// What `mount` shows at its mount point: its whole filesystem, the
    /// directory it covers, or another directory. A self-bind is told by
    /// its root being the path of its mount point within the parent
    /// mount's filesystem, on the same device.
    pub fn shape(&self, mount: &MountInfo) -> MountShape {
        if mount.root == b"/" {
            return MountShape::OwnRoot;
        }
        let Some(parent) = self.get(mount.parent).filter(|p| p.id != mount.id) else {
            return MountShape::Bind;
        };
        if parent.device != mount.device {
            return MountShape::Bind;
        }
        let Some(within_parent) = key::below(&mount.point, &parent.point) else {
            return MountShape::Bind;
        };
        let covered = if parent.root == b"/" {
            within_parent
        } else if within_parent == b"/" {
            parent.root.clone()
        } else {
            [parent.root.as_slice(), &within_parent].concat()
        };
        if covered == mount.root {
            MountShape::SelfBind
        } else {
            MountShape::Bind
        }
    }

    /// `mount` in words for messages: `a bind mount of /lib/etcd of
    /// /dev/vda2 (ext4)`, `tmpfs (tmpfs)`.
    pub fn describe(&self, mount: &MountInfo) -> String {
        let of = format!(
            "{} ({}, device {}:{})",
            EscapedPath(&mount.source),
            mount.fstype,
            mount.device.0,
            mount.device.1
        );
        match self.shape(mount) {
            MountShape::OwnRoot => format!("the filesystem {of}"),
            MountShape::SelfBind => format!(
                "a bind mount of the directory onto itself ({} of {of})",
                EscapedPath(&mount.root)
            ),
            MountShape::Bind => format!(
                "a bind mount of another directory: {} of {of}",
                EscapedPath(&mount.root)
            ),
        }
    }
}

fn parse_line(line: &[u8]) -> Option<MountInfo> {
    let fields: Vec<&[u8]> = line.split(|&byte| byte == b' ').collect();
    // id parent major:minor root point options [optional...] - fstype source super
    let separator = fields.iter().position(|field| *field == b"-")?;
    if separator < 6 || fields.len() < separator + 3 {
        return None;
    }
    let number = |field: &[u8]| std::str::from_utf8(field).ok()?.parse::<u64>().ok();
    let (major, minor) = {
        let text = std::str::from_utf8(fields[2]).ok()?;
        let (major, minor) = text.split_once(':')?;
        (major.parse().ok()?, minor.parse().ok()?)
    };
    Some(MountInfo {
        id: number(fields[0])?,
        parent: number(fields[1])?,
        device: (major, minor),
        root: unescape(fields[3]),
        point: unescape(fields[4]),
        fstype: String::from_utf8_lossy(&unescape(fields[separator + 1])).into_owned(),
        source: unescape(fields[separator + 2]),
        mount_options: String::from_utf8_lossy(fields[5]).into_owned(),
        super_options: fields
            .get(separator + 3)
            .map(|field| String::from_utf8_lossy(field).into_owned())
            .unwrap_or_default(),
    })
}

/// The kernel writes space, tab, newline and backslash as `\ooo` octal.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut rest = field;
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'\\' && tail.len() >= 3 && tail[..3].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let value = tail[..3]
                .iter()
                .fold(0u32, |acc, digit| acc * 8 + u32::from(digit - b'0'));
            if let Ok(value) = u8::try_from(value) {
                out.push(value);
                rest = &tail[3..];
                continue;
            }
        }
        out.push(byte);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[u8] = b"22 1 8:1 / / rw shared:1 - ext4 /dev/vda rw\n\
        30 22 8:2 / /var rw shared:2 - ext4 /dev/vdb rw\n\
        40 30 8:2 /mnt /var/mnt rw shared:7 - ext4 /dev/vdb rw\n\
        41 30 8:2 /lib/etcd /var/lib/containerd rw - ext4 /dev/vdb rw\n\
        42 22 0:5 / /var/mnt/a\\040b rw - tmpfs none rw\n\
        43 22 8:1 /x\\134y\\012z /srv rw master:1 - ext4 /dev/vda rw\n\
        44 22 8:1 /srv /srv rw - ext4 /dev/vda rw\n\
        45 44 8:1 /srv /srv rw - ext4 /dev/vda rw\n\
        garbage\n";

    #[test]
    fn fields_unescaped() {
        let table = MountTable::parse(TABLE);
        let points: Vec<&[u8]> = table.iter().map(|m| m.point.as_slice()).collect();
        assert_eq!(
            points,
            [
                &b"/"[..],
                b"/var",
                b"/var/mnt",
                b"/var/lib/containerd",
                b"/var/mnt/a b",
                b"/srv",
                b"/srv",
                b"/srv"
            ]
        );
        let odd = table.get(43).expect("43");
        assert_eq!(odd.root, b"/x\\y\nz");
        assert_eq!(odd.fstype, "ext4");
        assert_eq!(odd.device, (8, 1));
        assert_eq!(table.get(42).expect("42").source, b"none");
    }

    #[test]
    fn options_of_the_mount_and_of_its_filesystem() {
        let text = b"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                     40 22 0:5 / /var/mnt rw,nosuid,nodev,noexec - xfs /dev/vdb rw,prjquota\n";
        let table = MountTable::parse(text);
        let mount = table.get(40).expect("40");
        assert_eq!(mount.point, b"/var/mnt");
        assert_eq!(mount.mount_options, "rw,nosuid,nodev,noexec");
        assert_eq!(mount.fstype, "xfs");
        assert_eq!(mount.source, b"/dev/vdb");
        assert_eq!(mount.super_options, "rw,prjquota");
        assert_eq!(table.get(22).expect("22").mount_options, "rw,relatime");
        assert_eq!(table.get(7), None);
    }

    #[test]
    fn shapes_tell_binds_of_other_directories() {
        let table = MountTable::parse(TABLE);
        let shape = |id| table.shape(table.get(id).expect("mount"));
        assert_eq!(shape(22), MountShape::OwnRoot);
        assert_eq!(shape(30), MountShape::OwnRoot);
        // /var/mnt is /mnt of /var's filesystem: itself.
        assert_eq!(shape(40), MountShape::SelfBind);
        // /var/lib/containerd shows /lib/etcd of the same filesystem.
        assert_eq!(shape(41), MountShape::Bind);
        assert_eq!(shape(42), MountShape::OwnRoot);
        assert_eq!(shape(43), MountShape::Bind);
        // A self-bind on / (root /) and one stacked on it.
        assert_eq!(shape(44), MountShape::SelfBind);
        assert_eq!(shape(45), MountShape::SelfBind);
    }
}
