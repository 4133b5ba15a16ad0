//! Reading Kubernetes YAML: [`parse_source`] turns one file's text into
//! [`Manifests`] without touching the filesystem; [`load_paths`] walks the
//! `--k8s` arguments and feeds it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_saphyr::{Budget, DuplicateKeyPolicy, MessageFormatter, Spanned, UserMessageFormatter};

use super::api::{self, is_list_kind, RawObject, Spec, WorkloadKind};
use super::model::{
    ContainerKind, HostPathMount, HostPathVolume, Manifests, Position, SkippedObject, SourceFile,
    Sourced, Workload,
};
use crate::check::report::{Finding, Location, Rule, Severity};

/// Why an input could not be read. Each names the file as given and, for
/// YAML, the line and column.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{path}: not valid UTF-8 text")]
    NotUtf8 { path: String },
    #[error("{location}: invalid YAML: {message}")]
    Yaml { location: Location, message: String },
    #[error(
        "{location}: invalid YAML: {message}; the file holds template syntax (`{{{{` at line {template_line}): \
         render it first (e.g. `helm template`) and check the output"
    )]
    Templated {
        location: Location,
        message: String,
        template_line: u32,
    },
}

/// Rule under which [`LoadError::to_finding`] reports unreadable input.
pub static RULE_YAML: Rule = Rule {
    id: "k8s-invalid-yaml",
    name: "KubernetesInvalidYaml",
    summary: "A Kubernetes input file cannot be parsed.",
    why: "A manifest that cannot be parsed cannot be checked; the API server would reject it too.",
    default_severity: Severity::Error,
};

impl LoadError {
    /// The error as a finding, for reports that show input errors inline
    /// (e.g. SARIF in code review).
    pub fn to_finding(&self, snippet: Option<String>) -> Finding {
        let (location, message) = match self {
            LoadError::Io { path, source } => (file_location(path), source.to_string()),
            LoadError::NotUtf8 { path } => (file_location(path), "not valid UTF-8 text".to_owned()),
            LoadError::Yaml { location, message } => (location.clone(), message.clone()),
            LoadError::Templated { location, .. } => {
                let text = self.to_string();
                let message = text
                    .strip_prefix(&format!("{location}: "))
                    .unwrap_or(&text)
                    .to_owned();
                (location.clone(), message)
            }
        };
        Finding {
            rule: &RULE_YAML,
            severity: Severity::Error,
            message,
            location: Some(location),
            snippet,
            related: Vec::new(),
        }
    }
}

fn file_location(path: &str) -> Location {
    Location {
        file: path.to_owned(),
        line: 1,
        column: 1,
        end_column: None,
    }
}

/// Every error met while loading, and what could be loaded regardless.
#[derive(Debug, thiserror::Error)]
#[error("{}", .errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct LoadErrors {
    pub errors: Vec<LoadError>,
    pub loaded: Manifests,
}

/// YAML options shared by every Kubernetes input.
fn yaml_options() -> serde_saphyr::Options {
    let mut budget = Budget::default();
    // The defaults count the whole stream and suit one config file; a
    // rendered chart or a cluster dump runs to thousands of documents and
    // millions of nodes. These grow only linearly with the file size; the
    // nesting and alias limits that stop YAML bombs stay at their defaults.
    budget.max_documents = 1 << 20;
    budget.max_nodes = 1 << 24;
    budget.max_events = 1 << 26;
    serde_saphyr::options! {
        // `readOnly: yes` is true to the API server's YAML 1.1 decoder but a
        // string elsewhere; refuse the spelling instead of guessing.
        strict_booleans: true,
        // A second `path:` could hide the first from a reviewer.
        duplicate_keys: DuplicateKeyPolicy::Error,
        with_snippet: false,
        budget: Some(budget),
    }
}

/// Parses one file's text (any number of YAML documents) into workloads and
/// skipped objects. `name` is how positions will name the file.
pub fn parse_str(name: &str, text: &str) -> Result<Manifests, LoadError> {
    parse_source(Arc::new(SourceFile::new(name.to_owned(), text.to_owned())))
}

/// [`parse_str`] on an already shared source.
pub fn parse_source(source: Arc<SourceFile>) -> Result<Manifests, LoadError> {
    let documents: Vec<Spanned<RawObject>> =
        serde_saphyr::from_multiple_with_options(source.text(), yaml_options())
            .map_err(|error| yaml_error(&source, &error))?;
    let mut manifests = Manifests::default();
    for document in documents {
        collect(&source, document, &mut manifests);
    }
    Ok(manifests)
}

fn yaml_error(source: &SourceFile, error: &serde_saphyr::Error) -> LoadError {
    let position = error
        .location()
        .filter(|l| l.line() > 0)
        .map(|l| position_of(&l))
        .unwrap_or(Position {
            line: 1,
            column: 1,
            length: None,
        });
    let location = source.location(Position {
        length: None,
        ..position
    });
    // The position is reported separately; take the bare message, with
    // control characters (from the input) made visible.
    let message: String = UserMessageFormatter
        .format_message(error.without_snippet())
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect();
    let template_line = match error {
        // Size limits say nothing about templating.
        serde_saphyr::Error::Budget { .. } => None,
        _ => template_line(source.text()),
    };
    match template_line {
        Some(template_line) => LoadError::Templated {
            location,
            message,
            template_line,
        },
        None => LoadError::Yaml { location, message },
    }
}

/// First line holding `{{`, the mark of an unrendered Helm/Go template.
fn template_line(text: &str) -> Option<u32> {
    text.lines()
        .position(|line| line.contains("{{"))
        .map(|index| u32::try_from(index + 1).unwrap_or(u32::MAX))
}

fn position_of(location: &serde_saphyr::Location) -> Position {
    let length = location.span().len();
    Position {
        line: u32::try_from(location.line()).unwrap_or(u32::MAX),
        column: u32::try_from(location.column()).unwrap_or(u32::MAX),
        length: (length > 0).then(|| u32::try_from(length).unwrap_or(u32::MAX)),
    }
}

fn sourced<T>(spanned: Spanned<T>) -> Sourced<T> {
    Sourced {
        position: position_of(&spanned.referenced),
        value: spanned.value,
    }
}

fn collect(source: &Arc<SourceFile>, object: Spanned<RawObject>, out: &mut Manifests) {
    let position = position_of(&object.referenced);
    let RawObject {
        kind,
        name,
        namespace,
        spec,
        template,
        items,
    } = object.value;
    let Some(kind) = kind.map(sourced) else {
        out.skipped.push(SkippedObject {
            source: Arc::clone(source),
            kind: None,
            position,
        });
        return;
    };
    if is_list_kind(&kind.value) {
        for item in items.into_iter().flatten() {
            collect(source, item, out);
        }
        return;
    }
    let Some(workload_kind) = WorkloadKind::of(&kind.value) else {
        out.skipped.push(SkippedObject {
            source: Arc::clone(source),
            kind: Some(kind),
            position,
        });
        return;
    };
    let pod = match workload_kind {
        WorkloadKind::Pod => spec,
        WorkloadKind::Controller => spec
            .and_then(|s| s.template)
            .and_then(|t| t.spec.map(|b| *b)),
        WorkloadKind::CronJob => spec
            .and_then(|s| s.job_template)
            .and_then(|j| j.spec)
            .and_then(|s| s.template)
            .and_then(|t| t.spec.map(|b| *b)),
        WorkloadKind::PodTemplate => template.and_then(|t| t.spec.map(|b| *b)),
    };
    out.workloads.push(Workload {
        source: Arc::clone(source),
        kind,
        name,
        namespace,
        host_path_volumes: pod.map(host_path_volumes).unwrap_or_default(),
    });
}

fn host_path_volumes(pod: Spec) -> Vec<HostPathVolume> {
    let pod_selinux_type = pod
        .security_context
        .and_then(|sc| sc.se_linux_options)
        .and_then(|options| options.selinux_type);
    let containers: Vec<(ContainerKind, api::Container)> = [
        (ContainerKind::Init, pod.init_containers),
        (ContainerKind::Regular, pod.containers),
        (ContainerKind::Ephemeral, pod.ephemeral_containers),
    ]
    .into_iter()
    .flat_map(|(kind, list)| list.into_iter().flatten().map(move |c| (kind, c)))
    .collect();

    let mut volumes = Vec::new();
    for volume in pod.volumes.into_iter().flatten() {
        let Some(host_path) = volume.host_path else {
            continue;
        };
        let name = volume.name.value;
        let mut mounts = Vec::new();
        for (container_kind, container) in &containers {
            let (privileged, container_selinux) = match &container.security_context {
                Some(sc) => (sc.privileged.clone(), sc.se_linux_options.as_ref()),
                None => (None, None),
            };
            // The kubelet replaces the pod's seLinuxOptions with the
            // container's as a whole, not field by field.
            let selinux_type = match container_selinux {
                Some(options) => options.selinux_type.clone(),
                None => pod_selinux_type.clone(),
            };
            for mount in container.volume_mounts.iter().flatten() {
                if mount.name != name {
                    continue;
                }
                mounts.push(HostPathMount {
                    container: container.name.value.clone(),
                    container_kind: *container_kind,
                    mount_path: sourced(mount.mount_path.clone()),
                    read_only: mount.read_only.clone().map(sourced),
                    mount_propagation: mount.mount_propagation.clone(),
                    sub_path: mount.sub_path.clone().map(sourced),
                    sub_path_expr: mount.sub_path_expr.clone(),
                    privileged: privileged.clone().map(sourced),
                    selinux_type: selinux_type.clone().map(sourced),
                });
            }
        }
        volumes.push(HostPathVolume {
            name,
            path: sourced(host_path.path),
            path_type: host_path.path_type.map(sourced),
            mounts,
        });
    }
    volumes
}

/// Reads every `--k8s` argument: files as given (whatever their extension),
/// directories recursively (`*.yaml` and `*.yml`, in name order, skipping
/// hidden entries and not following symlinked directories, so a link loop
/// cannot trap the walk). Positions name files as `ARG/relative/path`.
///
/// All inputs are read even after an error; the error lists every failure
/// and carries what did load.
pub fn load_paths(paths: &[PathBuf]) -> Result<Manifests, LoadErrors> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => walk_dir(path, &mut files, &mut errors),
            Ok(_) => files.push(path.clone()),
            Err(source) => errors.push(LoadError::Io {
                path: path.display().to_string(),
                source,
            }),
        }
    }
    let mut loaded = Manifests::default();
    for file in files {
        match read_file(&file).and_then(parse_source) {
            Ok(manifests) => loaded.extend(manifests),
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        Ok(loaded)
    } else {
        Err(LoadErrors { errors, loaded })
    }
}

fn read_file(path: &Path) -> Result<Arc<SourceFile>, LoadError> {
    let name = path.display().to_string();
    let bytes = fs::read(path).map_err(|source| LoadError::Io {
        path: name.clone(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|_| LoadError::NotUtf8 { path: name.clone() })?;
    Ok(Arc::new(SourceFile::new(name, text)))
}

fn walk_dir(dir: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<LoadError>) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(source) => {
            errors.push(LoadError::Io {
                path: dir.display().to_string(),
                source,
            });
            return;
        }
    };
    let mut entries: Vec<_> = entries
        .filter_map(|entry| match entry {
            Ok(entry) => Some(entry),
            Err(source) => {
                errors.push(LoadError::Io {
                    path: dir.display().to_string(),
                    source,
                });
                None
            }
        })
        .collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let file_name = entry.file_name();
        if file_name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = entry.path();
        let file_type = match entry.file_type() {
            Ok(file_type) => file_type,
            Err(source) => {
                errors.push(LoadError::Io {
                    path: path.display().to_string(),
                    source,
                });
                continue;
            }
        };
        if file_type.is_dir() {
            walk_dir(&path, files, errors);
            continue;
        }
        let is_yaml = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        if !is_yaml {
            continue;
        }
        // A symlink to a YAML file counts; one to a directory does not.
        if file_type.is_file() || fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            files.push(path);
        }
    }
}
