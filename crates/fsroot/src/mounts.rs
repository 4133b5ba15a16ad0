//! Mount points from `/proc/self/mountinfo`.

/// The mount point (fifth field) of every line, unescaped: the kernel
/// writes space, tab, newline and backslash as `\\ooo` octal.
pub(crate) fn mount_points(text: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    text.split(|&byte| byte == b'\n')
        .filter_map(|line| line.split(|&byte| byte == b' ').nth(4))
        .map(unescape)
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
