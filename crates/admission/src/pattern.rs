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

/// Any run of empty and `.` components, each with the `/` before it.
const SEPARATORS: &str = r"(?:/\.?)*";

/// Matches `..` as a whole component anywhere in a path (the API server
/// rejects it; `NormalPath::parse` does too).
pub const BACKSTEP: &str = r"(?:^|/)\.\.(?:/|$)";

/// The components of a normalised path (none for `/`), escaped.
fn components(path: &str) -> Vec<String> {
    path.split('/')
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

/// One way a normalised path covers the written paths a hostPath may
/// hold.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cover {
    /// The path and everything below it.
    Within(String),
    /// The path and every ancestor of it, `/` included.
    AncestorOrSelf(String),
    /// The path alone.
    Exact(String),
    /// Every name of the path's directory that starts with its last
    /// component, and nothing below them.
    NamePrefix(String),
}

impl Cover {
    /// Its alternative of a [`regex`], after the leading separators.
    fn alternative(&self) -> String {
        match self {
            Cover::Within(path) => format!("{}(?:/|$)", spelled(&components(path))),
            Cover::AncestorOrSelf(path) => {
                format!("{}{SEPARATORS}$", any_prefix(&components(path)))
            }
            Cover::Exact(path) => format!("{}{SEPARATORS}$", spelled(&components(path))),
            Cover::NamePrefix(path) => {
                let mut parts = components(path);
                let prefix = parts.pop().unwrap_or_default();
                format!("{}{SEPARATORS}/{prefix}[^/]*{SEPARATORS}$", spelled(&parts))
            }
        }
    }
}

/// Matches a valid written path that one of `covers` covers; `None` when
/// there are none (nothing matches).
pub fn regex(covers: &[Cover]) -> Option<String> {
    // Subtrees share their suffix: `(?:/a|/b)(?:/|$)`.
    let within: Vec<String> = covers
        .iter()
        .filter_map(|c| match c {
            Cover::Within(path) => Some(spelled(&components(path))),
            _ => None,
        })
        .collect();
    let mut alternatives: Vec<String> = covers
        .iter()
        .filter(|c| !matches!(c, Cover::Within(_)))
        .map(Cover::alternative)
        .collect();
    match within.as_slice() {
        [] => {}
        [one] => alternatives.insert(0, format!("{one}(?:/|$)")),
        many => alternatives.insert(0, format!("(?:{})(?:/|$)", many.join("|"))),
    }
    match alternatives.as_slice() {
        [] => None,
        [one] => Some(format!("^{SEPARATORS}{one}")),
        many => Some(format!("^{SEPARATORS}(?:{})", many.join("|"))),
    }
}

/// A set of written paths as regular expressions: a path is in it when it
/// matches some term's `include` and not that term's `exclude`. RE2 has
/// no negative lookahead, so "below X but not below Y" takes two.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathTest {
    pub terms: Vec<Term>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub include: String,
    pub exclude: Option<String>,
}

impl PathTest {
    /// The union of `(include, exclude)` cover sets; terms with the same
    /// exclusions share one expression.
    pub fn of(parts: impl IntoIterator<Item = (Vec<Cover>, Vec<Cover>)>) -> PathTest {
        let mut grouped: Vec<(Vec<Cover>, Vec<Cover>)> = Vec::new();
        for (include, mut exclude) in parts {
            exclude.sort();
            exclude.dedup();
            match grouped.iter_mut().find(|(_, e)| *e == exclude) {
                Some((covers, _)) => covers.extend(include),
                None => grouped.push((include, exclude)),
            }
        }
        PathTest {
            terms: grouped
                .into_iter()
                .filter_map(|(mut include, exclude)| {
                    include.dedup();
                    Some(Term {
                        include: regex(&include)?,
                        exclude: regex(&exclude),
                    })
                })
                .collect(),
        }
    }

    /// Whether no path is in it.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s::NormalPath;
    use layout::model::host::{HostPath, ObjectKind, Scope};
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
            let pattern = regex(&[Cover::Within(root.to_owned())]).unwrap();
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
            let pattern = regex(&[
                Cover::Within(protected.to_owned()),
                Cover::AncestorOrSelf(protected.to_owned()),
            ])
            .unwrap();
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

    /// Exact paths and name prefixes as the host classes cover them.
    #[test]
    fn host_paths_match_as_they_cover_the_normalised_path() {
        let hosts = [
            (Scope::Exact, "/dev"),
            (Scope::Exact, "/run/xtables.lock"),
            (Scope::NamePrefix, "/dev/nvme"),
            (Scope::NamePrefix, "/var/mnt"),
            (Scope::Subtree, "/var/lib/etcd"),
        ];
        let raw = RAW.iter().copied().chain([
            "/dev",
            "//dev/./",
            "/dev/nvme0n1",
            "/dev/./nvme0n1/",
            "/dev/nvme",
            "/dev/nvme0n1/x",
            "/dev/xnvme",
            "/devx",
            "/run/xtables.lock",
            "/run/xtablesxlock",
            "/var/mnt.d",
        ]);
        for (scope, path) in hosts {
            let host = HostPath {
                path,
                scope,
                kind: ObjectKind::Directory,
            };
            let cover = match scope {
                Scope::Exact => Cover::Exact(path.to_owned()),
                Scope::NamePrefix => Cover::NamePrefix(path.to_owned()),
                Scope::Subtree => Cover::Within(path.to_owned()),
            };
            let pattern = regex(&[cover]).unwrap();
            let regex = Regex::new(&pattern).unwrap();
            for raw in raw.clone() {
                assert_eq!(
                    regex.is_match(raw),
                    host.covers(p(raw).as_str()),
                    "{raw:?} covered by {path} ({pattern})"
                );
            }
        }
    }

    #[test]
    fn a_term_excludes_what_lies_below_its_exclusions() {
        let test = PathTest::of([
            (
                vec![Cover::Within("/var/lib/kubelet".to_owned())],
                vec![Cover::Within("/var/lib/kubelet/pods".to_owned())],
            ),
            (vec![Cover::Within("/var/lib/etcd".to_owned())], vec![]),
            (vec![Cover::Exact("/dev".to_owned())], vec![]),
        ]);
        assert_eq!(test.terms.len(), 2, "{test:?}");
        let is_in = |raw: &str| {
            test.terms.iter().any(|t| {
                Regex::new(&t.include).unwrap().is_match(raw)
                    && !t
                        .exclude
                        .as_ref()
                        .is_some_and(|e| Regex::new(e).unwrap().is_match(raw))
            })
        };
        for (raw, expected) in [
            ("/var/lib/kubelet", true),
            ("/var/lib/kubelet/pki", true),
            ("/var/lib/kubelet/pods", false),
            ("//var/lib/kubelet/./pods/x", false),
            ("/var/lib/kubelet/podsx", true),
            ("/var/lib/etcd/member", true),
            ("/dev/", true),
            ("/dev/sda", false),
        ] {
            assert_eq!(is_in(raw), expected, "{raw}");
        }
    }

    #[test]
    fn nothing_declared_matches_nothing() {
        assert_eq!(regex(&[]), None);
        assert!(PathTest::of([]).is_empty());
    }
}
