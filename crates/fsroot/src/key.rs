//! Lexical path handling: operands become keys below the root without
//! touching the filesystem.

/// `path` (absolute) with empty and `.` components dropped and each `..`
/// removing the component before it (never above `/`), as `realpath -s`
/// does. Lexical `..` is the physical one here because resolution later
/// refuses every symlink on the way.
pub(crate) fn normalise(path: &[u8]) -> Vec<u8> {
    let mut components: Vec<&[u8]> = Vec::new();
    for component in path.split(|&byte| byte == b'/') {
        match component {
            b"" | b"." => {}
            b".." => {
                components.pop();
            }
            name => components.push(name),
        }
    }
    join(&components)
}

fn join(components: &[&[u8]]) -> Vec<u8> {
    if components.is_empty() {
        return b"/".to_vec();
    }
    let mut joined = Vec::new();
    for component in components {
        joined.push(b'/');
        joined.extend_from_slice(component);
    }
    joined
}

/// `path` equals `ancestor` or lies below it (both normalised).
pub(crate) fn is_at_or_below(path: &[u8], ancestor: &[u8]) -> bool {
    if ancestor == b"/" {
        return path.starts_with(b"/");
    }
    path.strip_prefix(ancestor)
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

/// The key of normalised `path` below normalised `root`: `/` for the root
/// itself, `/REST` below it, `None` outside.
pub(crate) fn below(path: &[u8], root: &[u8]) -> Option<Vec<u8>> {
    if !is_at_or_below(path, root) {
        return None;
    }
    let rest = if root == b"/" {
        path
    } else {
        &path[root.len()..]
    };
    Some(if rest.is_empty() {
        b"/".to_vec()
    } else {
        rest.to_vec()
    })
}

/// The components of a key (`/` has none).
pub fn components(key: &[u8]) -> impl Iterator<Item = &[u8]> {
    key.split(|&byte| byte == b'/').filter(|c| !c.is_empty())
}

/// A single directory entry name: what `openat` of one component accepts
/// without any path walk.
pub(crate) fn is_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_is_lexical() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"/", b"/"),
            (b"//", b"/"),
            (b"/a//b/./c/", b"/a/b/c"),
            (b"/a/b/../c", b"/a/c"),
            (b"/../../a", b"/a"),
            (b"/a/..", b"/"),
        ];
        for (raw, want) in cases {
            assert_eq!(normalise(raw), *want, "{raw:?}");
        }
    }

    #[test]
    fn keys_below_a_root() {
        assert_eq!(below(b"/r/var", b"/r").as_deref(), Some(&b"/var"[..]));
        assert_eq!(below(b"/r", b"/r").as_deref(), Some(&b"/"[..]));
        assert_eq!(below(b"/rr/var", b"/r"), None);
        assert_eq!(below(b"/var", b"/").as_deref(), Some(&b"/var"[..]));
        assert_eq!(below(b"/", b"/").as_deref(), Some(&b"/"[..]));
    }

    #[test]
    fn ancestry_respects_component_boundaries() {
        assert!(is_at_or_below(b"/var/lib", b"/var"));
        assert!(is_at_or_below(b"/var", b"/var"));
        assert!(!is_at_or_below(b"/variable", b"/var"));
        assert!(is_at_or_below(b"/anything", b"/"));
    }

    #[test]
    fn names_are_single_components() {
        assert!(is_name(b"a"));
        assert!(is_name(b"..."));
        for bad in [&b""[..], b".", b"..", b"a/b", b"/"] {
            assert!(!is_name(bad), "{bad:?}");
        }
    }
}
