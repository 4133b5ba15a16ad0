//! Where a layout to compare comes from: a file, or `git:REV:PATH` — the
//! file at a revision, read with `git show REV:PATH` in the current
//! directory's repository (the working tree is not touched).

use std::path::Path;
use std::process::Command;

use layout::diag::Source;
use layout::manifest::{read_source, ReadError, MAX_MANIFEST_BYTES};

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{spec}: expected git:REV:PATH (e.g. git:main:node/layout.yaml)")]
    Spec { spec: String },
    #[error("{spec}: cannot run git: {error}")]
    GitMissing { spec: String, error: std::io::Error },
    #[error("{spec}: git show {object} failed: {message}")]
    Git {
        spec: String,
        object: String,
        message: String,
    },
    #[error("{spec}: not UTF-8")]
    NotUtf8 { spec: String },
    #[error("{spec}: {size} bytes; the limit is {MAX_MANIFEST_BYTES}")]
    TooLarge { spec: String, size: usize },
}

/// Reads `spec`: `git:REV:PATH` or a file path. The source is named as
/// given, so diagnostics say `git:main:layout.yaml:12:7`.
pub fn read(spec: &str) -> Result<Source, SourceError> {
    let Some(rest) = spec.strip_prefix("git:") else {
        return Ok(read_source(Path::new(spec))?);
    };
    let Some((rev, path)) = rest.split_once(':') else {
        return Err(SourceError::Spec {
            spec: spec.to_owned(),
        });
    };
    if rev.is_empty() || path.is_empty() || rev.starts_with('-') {
        return Err(SourceError::Spec {
            spec: spec.to_owned(),
        });
    }
    // `REV:./PATH` is relative to the current directory, as the user means
    // it; `REV:PATH` would be relative to the repository's top.
    let relative = if path.starts_with("./") || path.starts_with('/') {
        path.to_owned()
    } else {
        format!("./{path}")
    };
    let object = format!("{rev}:{relative}");
    let output = Command::new("git")
        .args(["show", "--no-textconv", &object, "--"])
        .output()
        .map_err(|error| SourceError::GitMissing {
            spec: spec.to_owned(),
            error,
        })?;
    if !output.status.success() {
        return Err(SourceError::Git {
            spec: spec.to_owned(),
            object,
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    if output.stdout.len() > MAX_MANIFEST_BYTES {
        return Err(SourceError::TooLarge {
            spec: spec.to_owned(),
            size: output.stdout.len(),
        });
    }
    let text = String::from_utf8(output.stdout).map_err(|_| SourceError::NotUtf8 {
        spec: spec.to_owned(),
    })?;
    Ok(Source::new(spec.to_owned(), text))
}
