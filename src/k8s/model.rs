//! What the hostPath checks know about a workload, extracted from its YAML:
//! plain data with source positions, no serde, no YAML.

use std::sync::Arc;

use crate::check::report::Location;

/// A position in a source file: 1-based line, 1-based column counted in
/// Unicode scalar values, and the value's length in the same unit when the
/// parser knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub line: u32,
    pub column: u32,
    pub length: Option<u32>,
}

/// A value and where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub position: Position,
}

/// A file's text and its name as the user gave it (the name every
/// position is reported against), with its line starts indexed so that
/// snippets cost no rescan of the file.
#[derive(Debug, PartialEq, Eq)]
pub struct SourceFile {
    name: String,
    text: String,
    /// Byte offset of the start of each line.
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(name: String, text: String) -> Self {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        SourceFile {
            name,
            text,
            line_starts,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text of 1-based line `line`, without its line break.
    pub fn line(&self, line: u32) -> Option<&str> {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        let start = *self.line_starts.get(index)?;
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        let line = self.text.get(start..end)?;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }

    /// A report location for `position` in this file.
    pub fn location(&self, position: Position) -> Location {
        Location {
            file: self.name.clone(),
            line: position.line,
            column: position.column,
            end_column: position
                .length
                .filter(|&len| len > 0)
                .map(|len| position.column.saturating_add(len)),
        }
    }
}

/// A Pod or an object with a pod template (Deployment, CronJob, …).
#[derive(Debug)]
pub struct Workload {
    pub source: Arc<SourceFile>,
    /// `kind`, e.g. `DaemonSet`, where it was written.
    pub kind: Sourced<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// Every `hostPath` volume of the pod template, in spec order.
    pub host_path_volumes: Vec<HostPathVolume>,
}

impl Workload {
    /// `Kind/name` (or `Kind` alone), for messages.
    pub fn display_name(&self) -> String {
        match &self.name {
            Some(name) => format!("{}/{}", self.kind.value, name),
            None => self.kind.value.clone(),
        }
    }
}

/// One `hostPath` volume and the containers that mount it.
#[derive(Debug)]
pub struct HostPathVolume {
    /// The volume's `name`.
    pub name: String,
    /// `hostPath.path` exactly as written (normalised only by the checks).
    pub path: Sourced<String>,
    /// `hostPath.type` (`Directory`, `Socket`, `CharDevice`, …).
    pub path_type: Option<Sourced<String>>,
    pub mounts: Vec<HostPathMount>,
}

/// Which list of the pod spec a container comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainerKind {
    Init,
    Regular,
    Ephemeral,
}

impl ContainerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ContainerKind::Init => "init container",
            ContainerKind::Regular => "container",
            ContainerKind::Ephemeral => "ephemeral container",
        }
    }
}

/// One container's mount of a hostPath volume, with the container's
/// security settings that decide whether SELinux confines it.
#[derive(Debug)]
pub struct HostPathMount {
    pub container: String,
    pub container_kind: ContainerKind,
    pub mount_path: Sourced<String>,
    /// `readOnly` as written; absent means writable.
    pub read_only: Option<Sourced<bool>>,
    pub mount_propagation: Option<String>,
    pub sub_path: Option<Sourced<String>>,
    pub sub_path_expr: Option<String>,
    /// The container's `securityContext.privileged`.
    pub privileged: Option<Sourced<bool>>,
    /// The effective `seLinuxOptions.type`: the container's `seLinuxOptions`,
    /// when present, replaces the pod's as a whole (as the kubelet does), so
    /// a container `seLinuxOptions` without `type` yields `None` even if the
    /// pod sets one.
    pub selinux_type: Option<Sourced<String>>,
}

impl HostPathMount {
    pub fn is_read_only(&self) -> bool {
        self.read_only.as_ref().is_some_and(|r| r.value)
    }

    pub fn is_privileged(&self) -> bool {
        self.privileged.as_ref().is_some_and(|p| p.value)
    }
}

/// An object that was read but not checked.
#[derive(Debug)]
pub struct SkippedObject {
    pub source: Arc<SourceFile>,
    /// `kind` when the object has one.
    pub kind: Option<Sourced<String>>,
    /// Where the object starts.
    pub position: Position,
}

/// Everything read from the `--k8s` inputs.
#[derive(Debug, Default)]
pub struct Manifests {
    pub workloads: Vec<Workload>,
    pub skipped: Vec<SkippedObject>,
}

impl Manifests {
    pub fn extend(&mut self, other: Manifests) {
        self.workloads.extend(other.workloads);
        self.skipped.extend(other.skipped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_by_number() {
        let source = SourceFile::new("f".to_owned(), "a\r\nbc\n\nlast".to_owned());
        let lines: Vec<Option<&str>> = (0..=5).map(|n| source.line(n)).collect();
        assert_eq!(
            lines,
            [None, Some("a"), Some("bc"), Some(""), Some("last"), None]
        );
        let trailing = SourceFile::new("f".to_owned(), "x\n".to_owned());
        assert_eq!(
            (trailing.line(1), trailing.line(2), trailing.line(3)),
            (Some("x"), Some(""), None)
        );
    }
}
