//! Writing a [`UnitSet`] beneath a root (an image, or an output
//! directory): every directory on the way is reached through `fsroot`
//! without following symlinks, every file appears by a rename of a
//! temporary sibling, and a symlink or non-directory on the way is an
//! error that names it. Only the set's own files and links are replaced;
//! nothing else is removed.

use std::ffi::CString;
use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::UnitSet;
use fsroot::{self, EscapedPath, Root};

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
    #[error("{}: {error}", EscapedPath(.path))]
    Io {
        path: Vec<u8>,
        error: std::io::Error,
    },
    #[error(
        "{}: a {what} is in the way; beneath the root semanifest follows nothing and \
         replaces only its own files and links",
        EscapedPath(.path)
    )]
    InTheWay { path: Vec<u8>, what: &'static str },
}

/// Writes the set's files beneath `root` and, with `enable`, its
/// enablement symlinks (as `systemctl --root=ROOT enable` makes them).
pub fn install(set: &UnitSet, root: &Path, enable: bool) -> Result<Written, InstallError> {
    let root = Root::open(root)?;
    let mut written = Written::default();
    for file in &set.files {
        let mode = if file.executable { 0o755 } else { 0o644 };
        let key = file.path.as_bytes();
        write_file(&root, key, file.text.as_bytes(), mode)?;
        written.files.push(display(&root, key));
    }
    if enable {
        for link in &set.links {
            let key = link.path.as_bytes();
            write_link(&root, key, link.target.as_bytes())?;
            written.links.push(display(&root, key));
        }
    }
    Ok(written)
}

/// Writes `bytes` (the running semanifest, read by the caller) to
/// `SEMANIFEST` beneath `root`, mode 0755, through
/// `write_file`: the units run it, so an image built with the units holds
/// it too.
pub fn install_binary(root: &Path, bytes: &[u8]) -> Result<PathBuf, InstallError> {
    let root = Root::open(root)?;
    let key = super::SEMANIFEST.as_bytes();
    write_file(&root, key, bytes, 0o755)?;
    Ok(display(&root, key))
}

fn display(root: &Root, key: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(&root.display(key)))
}

/// `key`'s parent directory, made (0755) where missing, as an `O_PATH`
/// fd, and `key`'s last name.
fn parent_of(root: &Root, key: &[u8]) -> Result<(OwnedFd, CString), InstallError> {
    let cut = key.iter().rposition(|&b| b == b'/').unwrap_or(0);
    let (parent, name) = (&key[..cut.max(1)], &key[cut + 1..]);
    let mut prefix_end = 0;
    while prefix_end < parent.len() {
        let next = parent[prefix_end + 1..]
            .iter()
            .position(|&b| b == b'/')
            .map_or(parent.len(), |i| prefix_end + 1 + i);
        let prefix = &parent[..next];
        prefix_end = next;
        if prefix == b"/" {
            continue;
        }
        match root.resolve(prefix) {
            Ok(entry) => match entry.kind() {
                FileType::Directory => {}
                FileType::Symlink => return Err(in_the_way(root, prefix, "symlink")),
                _ => return Err(in_the_way(root, prefix, "non-directory")),
            },
            Err(fsroot::Error::Io { error, .. })
                if error.kind() == std::io::ErrorKind::NotFound =>
            {
                root.create_dir(prefix, 0o755)?;
            }
            Err(error) => return Err(error.into()),
        }
    }
    let fd = root.open_dir_beneath(parent)?;
    let name = CString::new(name).map_err(|_| io_error(root, key, Errno::INVAL))?;
    Ok((fd, name))
}

fn in_the_way(root: &Root, key: &[u8], what: &'static str) -> InstallError {
    InstallError::InTheWay {
        path: root.display(key),
        what,
    }
}

fn io_error(root: &Root, key: &[u8], errno: Errno) -> InstallError {
    InstallError::Io {
        path: root.display(key),
        error: errno.into(),
    }
}

fn temporary(name: &CString) -> CString {
    let mut tmp = b".".to_vec();
    tmp.extend_from_slice(name.as_bytes());
    tmp.extend_from_slice(format!(".semanifest-{}", std::process::id()).as_bytes());
    CString::new(tmp).unwrap_or_default()
}

/// Writes `bytes` to `key` with `mode`: a temporary sibling (never
/// following a symlink), synced, then renamed over the name. A directory at
/// the name is an error.
pub(crate) fn write_file(
    root: &Root,
    key: &[u8],
    bytes: &[u8],
    mode: u32,
) -> Result<(), InstallError> {
    let (dir, name) = parent_of(root, key)?;
    let tmp = temporary(&name);
    let flags =
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rfs::openat(&dir, tmp.as_c_str(), flags, Mode::from_raw_mode(mode))
        .map_err(|errno| io_error(root, key, errno))?;
    let write = || -> std::io::Result<()> {
        rfs::fchmod(&fd, Mode::from_raw_mode(mode))?;
        let mut file = std::fs::File::from(fd.as_fd().try_clone_to_owned()?);
        file.write_all(bytes)?;
        file.sync_all()
    };
    if let Err(error) = write() {
        let _ = rfs::unlinkat(&dir, tmp.as_c_str(), rfs::AtFlags::empty());
        return Err(InstallError::Io {
            path: root.display(key),
            error,
        });
    }
    rename_into_place(root, key, &dir, &tmp, &name)
}

/// Makes `key` a symlink to `target`, replacing a symlink or file there.
fn write_link(root: &Root, key: &[u8], target: &[u8]) -> Result<(), InstallError> {
    let (dir, name) = parent_of(root, key)?;
    let tmp = temporary(&name);
    let target = CString::new(target).map_err(|_| io_error(root, key, Errno::INVAL))?;
    rfs::symlinkat(target.as_c_str(), &dir, tmp.as_c_str())
        .map_err(|errno| io_error(root, key, errno))?;
    rename_into_place(root, key, &dir, &tmp, &name)
}

fn rename_into_place(
    root: &Root,
    key: &[u8],
    dir: &OwnedFd,
    tmp: &CString,
    name: &CString,
) -> Result<(), InstallError> {
    if let Ok(existing) = fsroot::Entry::open_at(dir, name) {
        if existing.kind() == FileType::Directory {
            let _ = rfs::unlinkat(dir, tmp.as_c_str(), rfs::AtFlags::empty());
            return Err(in_the_way(root, key, "directory"));
        }
    }
    rfs::renameat(dir, tmp.as_c_str(), dir, name.as_c_str()).map_err(|errno| {
        let _ = rfs::unlinkat(dir, tmp.as_c_str(), rfs::AtFlags::empty());
        io_error(root, key, errno)
    })
}
