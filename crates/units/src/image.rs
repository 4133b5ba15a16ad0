//! What an image (an install root) holds at the layout's paths, read
//! without following anything: a declared path the image holds as a
//! symlink (Debian's `/var/run` → `/run`) cannot be a mount point (systemd
//! refuses a mount unit whose path is not canonical), and its content lives
//! at the link's target.
//!
//! Such a path becomes an *equivalence*, the way refpolicy writes `/run
//! /var/run` in `file_contexts.subs_dist`: libselinux (systemd, setfiles,
//! restorecon) and `semanifest relabel` then label the target as the
//! declared path, so the distribution's `/run` tmpfs carries `/var/run`'s
//! type.

use rustix::fs::FileType;

use fsroot::{self, EscapedPath, Root};
use layout::model::{ancestors, is_within, link_target, Layout};

/// A path of the layout (or an ancestor of one) that the image holds as a
/// symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The symlink: a declared path or an ancestor of one (`/var/run`).
    pub path: String,
    /// Where it points, made absolute and normalised (`/run`).
    pub target: String,
}

/// The image's side of the layout: which paths it holds as symlinks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Image {
    pub held: Vec<Held>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error(transparent)]
    Root(#[from] fsroot::Error),
    #[error("{}: cannot read the symlink: {error}", EscapedPath(.path))]
    ReadLink {
        path: Vec<u8>,
        error: std::io::Error,
    },
    #[error(
        "{}: a symlink to `{}`, which semanifest cannot name in file_contexts or a unit (it \
         must resolve to an absolute path of printable ASCII without spaces or quotes)",
        EscapedPath(.path),
        EscapedPath(.target)
    )]
    Unnamable { path: Vec<u8>, target: Vec<u8> },
    #[error(
        "{}: a symlink to `{target}`, which overlaps the layout's `{declared}`: its content \
         would be labelled as two paths at once; point it outside the layout, or make it a \
         directory",
        EscapedPath(.path)
    )]
    Overlaps {
        path: Vec<u8>,
        target: String,
        declared: String,
    },
}

impl Image {
    /// What nothing is known about (`semanifest units` without `--root`):
    /// no path is held as a symlink.
    pub fn unknown() -> Self {
        Image::default()
    }

    /// Reads every declared path and its ancestors below the root, each
    /// component opened without following it; the first symlink on a
    /// path's way is recorded once. Missing paths are fine (apply makes
    /// them).
    pub fn inspect(root: &Root, layout: &Layout) -> Result<Image, ImageError> {
        let mut held: Vec<Held> = Vec::new();
        for rule in &layout.paths {
            let mut chain: Vec<&str> = ancestors(&rule.path).collect();
            chain.reverse();
            chain.push(&rule.path);
            for component in chain {
                if held.iter().any(|h| h.path == component) {
                    break;
                }
                let entry = match root.resolve(component.as_bytes()) {
                    Ok(entry) => entry,
                    Err(fsroot::Error::Io { error, .. })
                        if error.kind() == std::io::ErrorKind::NotFound =>
                    {
                        break
                    }
                    Err(error) => return Err(error.into()),
                };
                if entry.kind() != FileType::Symlink {
                    continue;
                }
                let display = root.display(component.as_bytes());
                let raw = rustix::fs::readlinkat(entry.fd(), c"", Vec::new()).map_err(|errno| {
                    ImageError::ReadLink {
                        path: display.clone(),
                        error: errno.into(),
                    }
                })?;
                let target = link_target(component, raw.as_bytes()).ok_or_else(|| {
                    ImageError::Unnamable {
                        path: display.clone(),
                        target: raw.as_bytes().to_vec(),
                    }
                })?;
                if let Some(declared) = layout.overlapping(&target) {
                    return Err(ImageError::Overlaps {
                        path: display,
                        target,
                        declared: declared.path.clone(),
                    });
                }
                held.push(Held {
                    path: component.to_owned(),
                    target,
                });
                break;
            }
        }
        held.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Image { held })
    }

    /// The symlink `path` lies at or below, if any.
    pub(crate) fn holding(&self, path: &str) -> Option<&Held> {
        self.held.iter().find(|held| is_within(path, &held.path))
    }

    /// `file_contexts.subs_dist` lines: `TARGET PATH` per held path, so a
    /// lookup of the target is answered as for the declared path.
    pub(crate) fn equivalences(&self) -> Vec<(String, String)> {
        self.held
            .iter()
            .map(|held| (held.target.clone(), held.path.clone()))
            .collect()
    }
}
