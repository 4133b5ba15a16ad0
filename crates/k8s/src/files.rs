//! The filesystem side of `--k8s`: which files of a directory are read
//! (the rule of `kubectl apply -f DIR`, recursively), and reading them.
//! Everything else here is text handed to [`parse_source`].

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::load::parse_source;
use super::workload::{Manifests, SkipReason, SkippedFile, SourceFile};

/// Why an input file could not be read at all. YAML problems are not
/// errors here: they are [`Manifests::invalid`] documents.
#[derive(Debug, thiserror::Error)]
pub enum FileReadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{path}: not valid UTF-8 text")]
    NotUtf8 { path: String },
}

/// What [`load_paths`] read, and the inputs it could not read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub manifests: Manifests,
    /// Every file read, in reading order.
    pub sources: Vec<Arc<SourceFile>>,
    pub errors: Vec<FileReadError>,
}

/// Extensions `kubectl apply -f DIR` reads, compared as it does:
/// case-sensitively.
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Reads every `--k8s` argument: files as given (whatever their extension),
/// directories recursively: files ending in `.yaml`, `.yml` or `.json` (as
/// `kubectl apply -f DIR` reads them), dot-files included, in name order.
/// Hidden directories, symbolic links to directories and non-regular files
/// are not entered or read, and every entry left out is recorded in
/// [`Manifests::skipped_files`] with the reason. Positions name files as
/// `ARG/relative/path`.
///
/// Every input is read even after an error.
pub fn load_paths(paths: &[PathBuf]) -> Loaded {
    let mut files = Vec::new();
    let mut loaded = Loaded::default();
    for path in paths {
        match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => walk_dir(path, &mut files, &mut loaded),
            Ok(_) => files.push(path.clone()),
            Err(source) => loaded.errors.push(FileReadError::Io {
                path: path.display().to_string(),
                source,
            }),
        }
    }
    for file in files {
        match read_file(&file) {
            Ok(source) => {
                loaded.sources.push(Arc::clone(&source));
                loaded.manifests.extend(parse_source(source));
            }
            Err(error) => loaded.errors.push(error),
        }
    }
    loaded
}

fn read_file(path: &Path) -> Result<Arc<SourceFile>, FileReadError> {
    let name = path.display().to_string();
    let bytes = fs::read(path).map_err(|source| FileReadError::Io {
        path: name.clone(),
        source,
    })?;
    let text =
        String::from_utf8(bytes).map_err(|_| FileReadError::NotUtf8 { path: name.clone() })?;
    Ok(Arc::new(SourceFile::new(name, text)))
}

/// Whether a directory entry named `name` is read, by its extension alone.
fn extension_rule(name: &Path) -> Result<(), SkipReason> {
    let Some(extension) = name.extension() else {
        return Err(SkipReason::Extension);
    };
    let extension = extension.to_string_lossy();
    if EXTENSIONS.contains(&extension.as_ref()) {
        Ok(())
    } else if EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str()) {
        Err(SkipReason::ExtensionCase)
    } else {
        Err(SkipReason::Extension)
    }
}

fn walk_dir(dir: &Path, files: &mut Vec<PathBuf>, loaded: &mut Loaded) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(source) => {
            loaded.errors.push(FileReadError::Io {
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
                loaded.errors.push(FileReadError::Io {
                    path: dir.display().to_string(),
                    source,
                });
                None
            }
        })
        .collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        let skip = |loaded: &mut Loaded, reason| {
            loaded.manifests.skipped_files.push(SkippedFile {
                path: path.display().to_string(),
                reason,
            })
        };
        let file_type = match entry.file_type() {
            Ok(file_type) => file_type,
            Err(source) => {
                loaded.errors.push(FileReadError::Io {
                    path: path.display().to_string(),
                    source,
                });
                continue;
            }
        };
        if file_type.is_dir() {
            if entry.file_name().as_encoded_bytes().starts_with(b".") {
                skip(loaded, SkipReason::HiddenDirectory);
            } else {
                walk_dir(&path, files, loaded);
            }
            continue;
        }
        // What a symbolic link points at decides; it is never followed
        // into a directory.
        let target_is_file = file_type.is_file()
            || (file_type.is_symlink() && fs::metadata(&path).is_ok_and(|m| m.is_file()));
        if file_type.is_symlink() && fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
            skip(loaded, SkipReason::SymlinkedDirectory);
            continue;
        }
        if let Err(reason) = extension_rule(&path) {
            skip(loaded, reason);
            continue;
        }
        if !target_is_file {
            skip(loaded, SkipReason::NotRegularFile);
            continue;
        }
        files.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_kubectls() {
        let rule = |name: &str| extension_rule(Path::new(name));
        for name in ["a.yaml", "a.yml", "a.json", ".hidden.yaml", "a.b.yml"] {
            assert_eq!(rule(name), Ok(()), "{name}");
        }
        for name in ["a.YAML", "a.Yml", "a.JSON"] {
            assert_eq!(rule(name), Err(SkipReason::ExtensionCase), "{name}");
        }
        for name in ["README.md", "a.yaml.bak", "yaml", "Makefile", "a.tpl"] {
            assert_eq!(rule(name), Err(SkipReason::Extension), "{name}");
        }
    }
}
