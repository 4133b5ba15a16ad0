//! Host paths normalised the way the node sees them.
//!
//! The API server rejects any `..` component in a hostPath (it splits on
//! `/` and looks for `..`, wherever it is); the kernel then resolves the
//! rest, so `//var/./lib/` and `/var/lib` are the same directory. A
//! [`NormalPath`] is that resolved spelling: absolute, no empty, `.` or `..`
//! component, no trailing `/` (except `/` itself). Containment is decided
//! per component, never by string prefix: `/var/mntx` is not under `/var/mnt`.

use std::fmt;

/// Why a path cannot be normalised.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostPathError {
    #[error("the path is empty")]
    Empty,
    #[error("the path is not absolute")]
    Relative,
    #[error("the path contains a `..` component, which the API server rejects")]
    Backstep,
    #[error("the path contains a NUL byte")]
    Nul,
    #[error("the path looks like an unrendered template (`{{{{`); render it first (e.g. `helm template`)")]
    Templated,
}

/// An absolute, normalised host path. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NormalPath(String);

impl NormalPath {
    /// Normalises `raw` like the API server and kernel would, or says why not.
    pub fn parse(raw: &str) -> Result<Self, HostPathError> {
        if raw.is_empty() {
            return Err(HostPathError::Empty);
        }
        if raw.contains("{{") {
            return Err(HostPathError::Templated);
        }
        if raw.contains('\0') {
            return Err(HostPathError::Nul);
        }
        if raw.split('/').any(|component| component == "..") {
            return Err(HostPathError::Backstep);
        }
        if !raw.starts_with('/') {
            return Err(HostPathError::Relative);
        }
        let mut normal = String::with_capacity(raw.len());
        for component in raw.split('/').filter(|c| !c.is_empty() && *c != ".") {
            normal.push('/');
            normal.push_str(component);
        }
        if normal.is_empty() {
            normal.push('/');
        }
        Ok(NormalPath(normal))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path's components (none for `/`).
    pub(crate) fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|c| !c.is_empty())
    }

    /// Number of components: 0 for `/`.
    pub(crate) fn depth(&self) -> usize {
        self.components().count()
    }

    /// True if `other` is this path or lies below it.
    pub fn contains(&self, other: &NormalPath) -> bool {
        layout::model::is_within(other.as_str(), self.as_str())
    }

    /// This path extended by a relative, `..`-free sub-path (a volume mount's
    /// `subPath`), normalised.
    pub(crate) fn join(&self, relative: &str) -> Result<NormalPath, HostPathError> {
        if relative.starts_with('/') {
            return Err(HostPathError::Relative);
        }
        NormalPath::parse(&format!("{}/{relative}", self.0))
    }
}

impl serde::Serialize for NormalPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl fmt::Display for NormalPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_like_the_node() {
        let cases = [
            ("/", "/"),
            ("//", "/"),
            ("/var", "/var"),
            ("/var/", "/var"),
            ("//var//lib/./etcd/", "/var/lib/etcd"),
            ("/./var/.", "/var"),
            ("/var/lib/etcd...", "/var/lib/etcd..."),
            ("/var/..data", "/var/..data"),
        ];
        for (raw, normal) in cases {
            assert_eq!(
                NormalPath::parse(raw).map(|p| p.0),
                Ok(normal.to_owned()),
                "{raw}"
            );
        }
    }

    #[test]
    fn rejects_what_the_api_server_rejects() {
        let cases = [
            ("", HostPathError::Empty),
            ("var/lib", HostPathError::Relative),
            ("./var", HostPathError::Relative),
            ("/var/mnt/../lib/etcd", HostPathError::Backstep),
            ("/..", HostPathError::Backstep),
            ("../var", HostPathError::Backstep),
            ("/var/mnt/..", HostPathError::Backstep),
            ("/var/\0x", HostPathError::Nul),
            ("{{ .Values.root }}/x", HostPathError::Templated),
        ];
        for (raw, error) in cases {
            assert_eq!(NormalPath::parse(raw), Err(error), "{raw:?}");
        }
    }

    #[test]
    fn containment_is_per_component() {
        let p = |s| NormalPath::parse(s).unwrap();
        assert!(p("/var/mnt").contains(&p("/var/mnt")));
        assert!(p("/var/mnt").contains(&p("/var/mnt/x")));
        assert!(p("/").contains(&p("/var")));
        // Control: a string-prefix test would say yes here.
        assert!(!p("/var/mnt").contains(&p("/var/mntx")));
        assert!(!p("/var/mnt/x").contains(&p("/var/mnt")));
        assert!(!p("/var/lib").contains(&p("/var/log")));
    }

    #[test]
    fn join_normalises_and_rejects_backsteps() {
        let base = NormalPath::parse("/var/log").unwrap();
        assert_eq!(base.join("pods/./x/").unwrap().as_str(), "/var/log/pods/x");
        assert_eq!(base.join("../lib"), Err(HostPathError::Backstep));
        assert_eq!(base.join("/etc"), Err(HostPathError::Relative));
    }
}
