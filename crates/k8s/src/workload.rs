//! What the hostPath checks know about a workload, extracted from its YAML:
//! plain data with source positions, no serde, no YAML.

use std::sync::Arc;

use layout::diag::{Location, Pos};

/// A value and where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub position: Pos,
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
    pub(crate) fn new(name: String, text: String) -> Self {
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
    pub(crate) fn line(&self, line: u32) -> Option<&str> {
        let (_, line) = self.raw_line(line)?;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }

    /// The byte offset and text of 1-based line `line`, without its `\n`.
    fn raw_line(&self, line: u32) -> Option<(usize, &str)> {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        let start = *self.line_starts.get(index)?;
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        Some((start, self.text.get(start..end)?))
    }

    /// The byte offset of 1-based `line` and character `column` (the
    /// parser's positions), if the file has it; a column one past the end
    /// of the line is its end.
    pub(crate) fn offset(&self, line: u32, column: u32) -> Option<usize> {
        let (start, text) = self.raw_line(line)?;
        let skip = usize::try_from(column).ok()?.checked_sub(1)?;
        let mut chars = text.char_indices().map(|(at, _)| at).chain([text.len()]);
        chars.nth(skip).map(|at| start + at)
    }

    /// `pos` in this file.
    pub fn location(&self, pos: Pos) -> Location {
        Location {
            file: self.name.clone(),
            pos,
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
    /// The operating system other than Linux that the pod spec pins with
    /// `nodeSelector` or required node affinity on `kubernetes.io/os`
    /// (e.g. `windows`), located at that value. Such a pod never runs on a
    /// Linux node, so its host paths are not this node's.
    pub pinned_os: Option<Sourced<String>>,
    /// Where the pod template's SELinux type is written, or would be: what
    /// a tool that sets it edits. `None` for a PersistentVolume and for a
    /// workload without a pod spec.
    pub selinux_spots: Option<SelinuxSpots>,
}

/// The places of a pod template where `seLinuxOptions.type` is decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelinuxSpots {
    /// `securityContext.seLinuxOptions.type` of the pod spec.
    pub pod: TypeSpot,
    /// Containers with a `seLinuxOptions` of their own (which replaces the
    /// pod's as a whole), in spec order.
    pub containers: Vec<ContainerSpot>,
}

/// A container's own `seLinuxOptions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerSpot {
    pub container: String,
    pub container_kind: ContainerKind,
    pub spot: TypeSpot,
}

/// Where a `seLinuxOptions.type` is, or where it would be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeSpot {
    /// The type's value is written here (its width covers any quotes).
    Value(Pos),
    /// The deepest mapping present starts at `at` (its first key, or the
    /// `{` of a flow mapping); `missing` are the keys to write at its start,
    /// outermost first (`securityContext`, `seLinuxOptions`, `type`).
    Insert {
        at: Pos,
        missing: &'static [&'static str],
    },
    /// The mapping comes through a YAML alias or merge key (written at
    /// `at`): an edit there would change every place using it.
    Aliased { at: Pos },
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
    /// `hostPath.path` exactly as written (normalised only by the checks),
    /// located at the `path:` value: the alias token for `path: *anchor`,
    /// the scalar inside the merged or aliased mapping otherwise.
    pub path: Sourced<String>,
    /// Where the value came from when the position above is not the whole
    /// story (an alias or a merge key).
    pub path_origin: Option<PathOrigin>,
    /// `hostPath.type` (`Directory`, `Socket`, `CharDevice`, …).
    pub path_type: Option<Sourced<String>>,
    pub mounts: Vec<HostPathMount>,
}

/// How a `path:` value reached its volume through an anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathOrigin {
    /// `path: *alias`: the position is the alias; the string is written at
    /// this anchor.
    Anchor(Pos),
    /// The mapping holding `path:` is merged (`<<:`) or aliased into the
    /// volume here; the position is the `path:` value inside it.
    Merged(Pos),
}

/// Which list of the pod spec a container comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainerKind {
    Init,
    Regular,
    Ephemeral,
}

impl ContainerKind {
    pub(crate) fn as_str(self) -> &'static str {
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
}

/// An object that was read but not checked.
#[derive(Debug)]
pub struct SkippedObject {
    pub source: Arc<SourceFile>,
    /// `kind` when the object has one.
    pub kind: Option<Sourced<String>>,
    /// Where the object starts.
    pub position: Pos,
    /// A kustomize patch rather than an object.
    pub patch: Option<PatchKind>,
}

/// The kustomize patch files a `--k8s` directory may hold beside the
/// objects they patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// A top-level sequence of JSON patch (RFC 6902) operations.
    JsonPatch,
    /// A document with a top-level `$patch` directive (strategic merge).
    StrategicMerge,
}

/// Why a document could not be checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalidity {
    /// Not YAML: a syntax error, an undefined alias, or a document past the
    /// size and alias limits that stop YAML bombs.
    NotYaml,
    /// An unrendered Helm or Go template (the document holds `{{`, first at
    /// this line, and cannot be read): not the YAML it will become, even
    /// where its braces happen to parse.
    Templated { template_line: u32 },
    /// YAML, but not an object the API server accepts: a value of the wrong
    /// shape, a duplicate key, a boolean spelled `yes`/`no`/`on`/`off`.
    NotAnObject,
}

/// One document of a stream that could not be read; the other documents
/// of its file are read regardless.
#[derive(Debug)]
pub struct InvalidDocument {
    pub source: Arc<SourceFile>,
    /// Where the parser stopped.
    pub position: Pos,
    /// The parser's message, without position, control characters escaped.
    pub message: String,
    pub invalidity: Invalidity,
}

impl InvalidDocument {
    pub fn location(&self) -> Location {
        self.source.location(Pos {
            width: 0,
            ..self.position
        })
    }

    /// Whether the text is YAML at all (`check` exits 2 when it is not).
    pub fn is_yaml(&self) -> bool {
        self.invalidity == Invalidity::NotAnObject
    }

    /// The message without the location prefix.
    pub(crate) fn description(&self) -> String {
        match self.invalidity {
            Invalidity::NotYaml => format!("invalid YAML: {}", self.message),
            Invalidity::Templated { template_line } => format!(
                "invalid YAML: {}; the file holds template syntax (`{{{{` at line {template_line}): \
                 render it first (e.g. `helm template`) and check the output",
                self.message
            ),
            Invalidity::NotAnObject => format!("not a valid Kubernetes object: {}", self.message),
        }
    }
}

impl std::fmt::Display for InvalidDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.location(), self.description())
    }
}

/// A directory entry under a `--k8s` directory that was not read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedFile {
    /// The entry, named as `ARG/relative/path`.
    pub path: String,
    pub reason: SkipReason,
}

/// Why a directory entry was not read (see `docs/k8s.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// Not `.yaml`, `.yml` or `.json`.
    Extension,
    /// `.YAML`, `.Yml`, `.JSON`…: `kubectl apply -f DIR` compares
    /// extensions case-sensitively and skips these too.
    ExtensionCase,
    /// A directory whose name starts with `.` (`.git`, `.github`).
    HiddenDirectory,
    /// A symbolic link to a directory (never followed: a loop could trap
    /// the walk).
    SymlinkedDirectory,
    /// A FIFO, socket or device node (reading a FIFO could block forever),
    /// or a symbolic link to one, or a dangling symbolic link.
    NotRegularFile,
}

impl SkipReason {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            SkipReason::Extension => "not a .yaml, .yml or .json file",
            SkipReason::ExtensionCase => {
                "the extension is not lower-case .yaml, .yml or .json (kubectl apply -f DIR skips it too); \
                 rename it or pass it as a file"
            }
            SkipReason::HiddenDirectory => "a hidden directory; pass it explicitly to check it",
            SkipReason::SymlinkedDirectory => {
                "a symbolic link to a directory, not followed; pass its target to check it"
            }
            SkipReason::NotRegularFile => "not a regular file (or a link to none)",
        }
    }
}

/// Everything read from the `--k8s` inputs.
#[derive(Debug, Default)]
pub struct Manifests {
    pub workloads: Vec<Workload>,
    pub skipped: Vec<SkippedObject>,
    /// Documents that could not be read, in input order.
    pub invalid: Vec<InvalidDocument>,
    /// Directory entries that were not read.
    pub skipped_files: Vec<SkippedFile>,
}

impl Manifests {
    pub(crate) fn extend(&mut self, other: Manifests) {
        self.workloads.extend(other.workloads);
        self.skipped.extend(other.skipped);
        self.invalid.extend(other.invalid);
        self.skipped_files.extend(other.skipped_files);
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
