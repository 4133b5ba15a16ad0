//! Mount points from `/proc/self/mountinfo`.

/// The mount point (fifth field) of every line, unescaped: the kernel
/// writes space, tab, newline and backslash as `\\ooo` octal.
pub(crate) fn mount_points(text: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    text.split(|&byte| byte == b'\n')
        .filter_map(|line| line.split(|&byte| byte == b' ').nth(4))
        .map(unescape)
}

/// One line of `/proc/self/mountinfo`, the fields semanifest reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountLine {
    /// The mount id (`statx` `stx_mnt_id`).
    pub id: u64,
    /// Where it is mounted, unescaped.
    pub point: Vec<u8>,
    /// The per-mount options (`rw,nosuid,nodev,noexec,relatime`).
    pub mount_options: String,
    /// The filesystem type (`ext4`, `xfs`, `tmpfs`).
    pub fstype: String,
    /// The source (`/dev/vdb`), unescaped.
    pub source: Vec<u8>,
    /// The filesystem's options (`rw,prjquota`).
    pub super_options: String,
}

/// The line of mount `id`, if `text` has it.
pub(crate) fn line_of(text: &[u8], id: u64) -> Option<MountLine> {
    text.split(|&byte| byte == b'\n').find_map(|line| {
        let fields: Vec<&[u8]> = line.split(|&byte| byte == b' ').collect();
        let this: u64 = std::str::from_utf8(fields.first()?).ok()?.parse().ok()?;
        if this != id {
            return None;
        }
        let dash = fields.iter().position(|field| *field == b"-")?;
        let text = |field: &[u8]| String::from_utf8_lossy(field).into_owned();
        Some(MountLine {
            id,
            point: unescape(fields.get(4)?),
            mount_options: text(fields.get(5)?),
            fstype: text(fields.get(dash + 1)?),
            source: unescape(fields.get(dash + 2)?),
            super_options: text(fields.get(dash + 3).copied().unwrap_or_default()),
        })
    })
}

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

    #[test]
    fn lines_by_id() {
        let text = b"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                     40 22 0:5 / /var/mnt rw,nosuid,nodev,noexec - xfs /dev/vdb rw,prjquota\n";
        let line = line_of(text, 40).expect("line 40");
        assert_eq!(line.point, b"/var/mnt");
        assert_eq!(line.mount_options, "rw,nosuid,nodev,noexec");
        assert_eq!(line.fstype, "xfs");
        assert_eq!(line.source, b"/dev/vdb");
        assert_eq!(line.super_options, "rw,prjquota");
        assert_eq!(line_of(text, 22).expect("22").fstype, "ext4");
        assert_eq!(line_of(text, 7), None);
    }

    #[test]
    fn fifth_field_unescaped() {
        let text = b"22 1 8:1 / / rw - ext4 /dev/vda rw\n\
                     40 22 0:5 / /var/mnt/a\\040b rw - tmpfs none rw\n\
                     41 22 0:5 / /x\\134y\\012z rw - tmpfs none rw\n";
        let points: Vec<Vec<u8>> = mount_points(text).collect();
        assert_eq!(
            points,
            [
                b"/".to_vec(),
                b"/var/mnt/a b".to_vec(),
                b"/x\\y\nz".to_vec()
            ]
        );
    }
}
