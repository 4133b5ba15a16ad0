//! Regular expressions that judge a hostPath exactly as it is written in
//! the object, the way `k8s::NormalPath` judges its normalised form.
//!
//! The API server stores `path` as written; the node resolves it, so
//! `//var/./mnt/` is `/var/mnt`. Neither CEL's standard library nor Rego
//! splits a path into components, but both have RE2 regular expressions:
//! between two components a written path may hold any run of `/` and `/.`
//! tokens, which [`SEPARATORS`] matches, so one expression per layout path
//! decides containment per component on the raw string. Only valid paths
//! (absolute, no `..` component) are judged this way; the validity check
//! comes first in every renderer.

use k8s::NormalPath;

/// Any run of empty and `.` components, each with the `/` before it.
const SEPARATORS: &str = r"(?:/\.?)*";

/// Matches `..` as a whole component anywhere in a path (the API server
/// rejects it; `NormalPath::parse` does too).
pub const BACKSTEP: &str = r"(?:^|/)\.\.(?:/|$)";

/// The components of a normalised path (none for `/`).
fn components(path: &NormalPath) -> Vec<String> {
    path.to_string()
        .split('/')
        .filter(|c| !c.is_empty())
        .map(escape)
        .collect()
}

/// A component as a literal: every character RE2 gives a meaning to is
/// escaped. Layout paths are plain ASCII, so this is the whole list.
fn escape(component: &str) -> String {
    let mut escaped = String::with_capacity(component.len());
    for c in component.chars() {
        if r"\.+*?()|[]{}^$".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// `/c1 SEP /c2 … SEP /cn`: the components of `path` in order, each after
/// its `/`, with any run of empty and `.` components between them.
fn spelled(components: &[String]) -> String {
    components
        .iter()
        .map(|c| format!("/{c}"))
        .collect::<Vec<_>>()
        .join(SEPARATORS)
}

/// `/c1 (SEP /c2 (SEP /c3)?)?`: the first component, then optionally
/// any leading run of the others.
fn nested(components: &[String]) -> String {
    match components {
        [] => String::new(),
        [first] => format!("/{first}"),
        [first, rest @ ..] => format!("/{first}(?:{SEPARATORS}{})?", nested(rest)),
    }
}

/// Any leading run of the components (none, some, all).
fn any_prefix(components: &[String]) -> String {
    if components.is_empty() {
        String::new()
    } else {
        format!("(?:{})?", nested(components))
    }
}

/// Matches a valid written path that lies at or below one of `paths`;
/// `None` when `paths` is empty (nothing matches).
pub fn within_any<'a>(paths: impl IntoIterator<Item = &'a NormalPath>) -> Option<String> {
    let alternatives: Vec<String> = paths
        .into_iter()
        .map(|path| spelled(&components(path)))
        .collect();
    if alternatives.is_empty() {
        return None;
    }
    Some(format!(
        "^{SEPARATORS}(?:{})(?:/|$)",
        alternatives.join("|")
    ))
}

/// Matches a valid written path that is one of `paths`, lies below one or
/// lies above one (an ancestor, `/` included); `None` when `paths` is empty.
pub fn overlapping_any<'a>(paths: impl IntoIterator<Item = &'a NormalPath>) -> Option<String> {
    let mut alternatives = Vec::new();
    for path in paths {
        let components = components(path);
        alternatives.push(format!("{}(?:/|$)", spelled(&components)));
        alternatives.push(format!("{}{SEPARATORS}$", any_prefix(&components)));
    }
    if alternatives.is_empty() {
        return None;
    }
    Some(format!("^{SEPARATORS}(?:{})", alternatives.join("|")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    fn p(s: &str) -> NormalPath {
        NormalPath::parse(s).unwrap()
    }

    /// The judgement the patterns must equal: normalise, then compare
    /// components.
    fn normal_within(raw: &str, root: &str) -> bool {
        let normal = p(raw).to_string();
        normal == root || root == "/" || normal.starts_with(&format!("{root}/"))
    }

    const RAW: [&str; 22] = [
        "/",
        "//",
        "/.",
        "/var",
        "/var/",
        "//var//mnt",
        "/var/./mnt/.",
        "/var/mnt",
        "/var/mntx",
        "/var/mnt/x",
        "/var/.mnt",
        "/var/..mnt/x",
        "/./var/./",
        "/var/lib/etcd",
        "/var/lib/etcd.d",
        "/var/lib/etcd/member",
        "/var/lib",
        "/var/li",
        "/var/mnt/é/ü",
        "/var/mnt\n",
        "/var/mnt/\n",
        "/var/lib/kubelet/pki",
    ];

    #[test]
    fn containment_matches_the_normalised_judgement() {
        for root in ["/", "/var", "/var/mnt", "/var/lib/etcd", "/var/mnt/.hidden"] {
            let pattern = within_any([&p(root)]).unwrap();
            let regex = Regex::new(&pattern).unwrap();
            for raw in RAW {
                assert_eq!(
                    regex.is_match(raw),
                    normal_within(raw, root),
                    "{raw:?} within {root} ({pattern})"
                );
            }
        }
    }

    #[test]
    fn overlap_matches_the_normalised_judgement() {
        for protected in ["/var/lib/etcd", "/var/lib/kubelet/pki", "/"] {
            let pattern = overlapping_any([&p(protected)]).unwrap();
            let regex = Regex::new(&pattern).unwrap();
            for raw in RAW {
                let expected =
                    normal_within(raw, protected) || normal_within(protected, &p(raw).to_string());
                assert_eq!(
                    regex.is_match(raw),
                    expected,
                    "{raw:?} overlaps {protected} ({pattern})"
                );
            }
        }
    }

    #[test]
    fn nothing_declared_matches_nothing() {
        assert_eq!(within_any([]), None);
        assert_eq!(overlapping_any([]), None);
    }
}
