//! Writing a [`UnitSet`] beneath a root (an image, or an output
//! directory) with [`Root::write_file`] and [`Root::write_symlink`]: every
//! directory on the way is reached without following symlinks, every file
//! and link appears by a rename of a temporary sibling, and a symlink or
//! non-directory on the way is an error that names it. Only the set's own
//! files and links are replaced; nothing else is removed.

use std::path::{Path, PathBuf};

use super::UnitSet;
use fsroot::Root;

/// What [`install`] wrote, as paths on this machine.
#[derive(Debug, Clone, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub links: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Root(#[from] fsroot::Error),
}

/// Writes the set's files beneath `root` and, with `enable`, its
/// enablement symlinks (as `systemctl --root=ROOT enable` makes them).
pub fn install(set: &UnitSet, root: &Path, enable: bool) -> Result<Written, InstallError> {
    let root = Root::open(root)?;
    let mut written = Written::default();
    for file in &set.files {
        let mode = if file.executable { 0o755 } else { 0o644 };
        let key = file.path.as_bytes();
        root.write_file(key, file.text.as_bytes(), mode)?;
        written.files.push(display(&root, key));
    }
    if enable {
        for link in &set.links {
            let key = link.path.as_bytes();
            root.write_symlink(key, link.target.as_bytes())?;
            written.links.push(display(&root, key));
        }
    }
    Ok(written)
}

/// Writes `bytes` (the running semanifest, read by the caller) to
/// `SEMANIFEST` beneath `root`, mode 0755: the units run it, so an image
/// built with the units holds it too.
pub fn install_binary(root: &Path, bytes: &[u8]) -> Result<PathBuf, InstallError> {
    let root = Root::open(root)?;
    let key = super::SEMANIFEST.as_bytes();
    root.write_file(key, bytes, 0o755)?;
    Ok(display(&root, key))
}

fn display(root: &Root, key: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(&root.display(key)))
}
