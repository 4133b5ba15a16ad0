//! The one way semanifest writes a file or a symlink: made under a
//! temporary name in the open directory it belongs to (`O_CREAT | O_EXCL |
//! O_NOFOLLOW`, so nothing there is followed or reused), written and
//! synced, then renamed over its name. A reader sees the old object or the
//! new one, never a part; a symlink or file at the name is replaced, never
//! followed; a directory there is left alone and is an error.

use std::ffi::{CStr, CString};
use std::io::{self, Write as _};
use std::os::fd::AsFd;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::entry::Entry;

/// Writes `bytes` as the file `name` of the open directory `dir`, with
/// `mode` (exactly: the umask does not apply).
pub fn replace_file(dir: impl AsFd, name: &CStr, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = dir.as_fd();
    refuse_directory(dir, name)?;
    let tmp = temporary(name)?;
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let open = || rfs::openat(dir, tmp.as_c_str(), flags, Mode::from_raw_mode(mode));
    let fd = match open() {
        // Left by an earlier run of this pid: ours by its name, unlinked
        // (never followed) and made again.
        Err(Errno::EXIST) => {
            rfs::unlinkat(dir, tmp.as_c_str(), AtFlags::empty())?;
            open()?
        }
        other => other?,
    };
    let written = (|| -> io::Result<()> {
        rfs::fchmod(&fd, Mode::from_raw_mode(mode))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        file.sync_all()?;
        rfs::renameat(dir, tmp.as_c_str(), dir, name)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = rfs::unlinkat(dir, tmp.as_c_str(), AtFlags::empty());
    }
    written
}

/// Makes `name` in the open directory `dir` a symlink to `target`,
/// replacing a symlink or file there.
pub fn replace_symlink(dir: impl AsFd, name: &CStr, target: &CStr) -> io::Result<()> {
    let dir = dir.as_fd();
    refuse_directory(dir, name)?;
    let tmp = temporary(name)?;
    match rfs::symlinkat(target, dir, tmp.as_c_str()) {
        Err(Errno::EXIST) => {
            rfs::unlinkat(dir, tmp.as_c_str(), AtFlags::empty())?;
            rfs::symlinkat(target, dir, tmp.as_c_str())?;
        }
        other => other?,
    }
    rfs::renameat(dir, tmp.as_c_str(), dir, name).inspect_err(|_| {
        let _ = rfs::unlinkat(dir, tmp.as_c_str(), AtFlags::empty());
    })?;
    Ok(())
}

/// A directory at `name` is never replaced (`EISDIR`).
fn refuse_directory(dir: impl AsFd, name: &CStr) -> io::Result<()> {
    match Entry::open_at(dir, name) {
        Ok(entry) if entry.kind() == FileType::Directory => Err(Errno::ISDIR.into()),
        Ok(_) | Err(Errno::NOENT) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

/// `.NAME.semanifest-PID`: hidden, and this process's own.
fn temporary(name: &CStr) -> io::Result<CString> {
    let mut tmp = b".".to_vec();
    tmp.extend_from_slice(name.to_bytes());
    tmp.extend_from_slice(format!(".semanifest-{}", std::process::id()).as_bytes());
    CString::new(tmp).map_err(|_| Errno::INVAL.into())
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::{symlink, MetadataExt as _};

    use crate::{Error, Obstacle, Root};

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_symlink_at_the_name_is_replaced_never_followed() {
        let tree = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let sentinel = outside.path().join("sentinel");
        fs::write(&sentinel, "untouched").unwrap();
        symlink(&sentinel, tree.path().join("out")).unwrap();
        let root = Root::open(tree.path()).unwrap();
        root.write_file(b"/out", b"new", 0o640).unwrap();
        assert_eq!(fs::read_to_string(&sentinel).unwrap(), "untouched");
        let written = tree.path().join("out");
        assert!(fs::symlink_metadata(&written).unwrap().is_file());
        assert_eq!(fs::read_to_string(&written).unwrap(), "new");
        // The mode is exact (no umask) and nothing temporary is left.
        assert_eq!(fs::metadata(&written).unwrap().mode() & 0o7777, 0o640);
        assert_eq!(names(tree.path()), ["out"]);
        // Control: writing through the path follows the link.
        fs::remove_file(&written).unwrap();
        symlink(&sentinel, &written).unwrap();
        fs::write(&written, "followed").unwrap();
        assert_eq!(fs::read_to_string(&sentinel).unwrap(), "followed");
    }

    #[test]
    fn nothing_on_the_way_is_followed_and_directories_are_made() {
        let tree = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), tree.path().join("etc")).unwrap();
        fs::write(tree.path().join("file"), "").unwrap();
        let root = Root::open(tree.path()).unwrap();
        for (key, what) in [
            (&b"/etc/selinux/config"[..], Obstacle::Symlink),
            (b"/file/below", Obstacle::NonDirectory),
        ] {
            match root.write_file(key, b"x", 0o644) {
                Err(Error::InTheWay { what: found, .. }) => assert_eq!(found, what),
                other => panic!("{other:?}"),
            }
        }
        assert!(names(outside.path()).is_empty());
        root.write_file(b"/usr/lib/x/y", b"y", 0o644).unwrap();
        assert_eq!(
            fs::read_to_string(tree.path().join("usr/lib/x/y")).unwrap(),
            "y"
        );
    }

    #[test]
    fn a_directory_at_the_name_stays() {
        let tree = tempfile::tempdir().unwrap();
        fs::create_dir(tree.path().join("d")).unwrap();
        fs::write(tree.path().join("d/kept"), "kept").unwrap();
        let root = Root::open(tree.path()).unwrap();
        match root.write_file(b"/d", b"x", 0o644) {
            Err(Error::InTheWay { what, .. }) => assert_eq!(what, Obstacle::Directory),
            other => panic!("{other:?}"),
        }
        match root.write_symlink(b"/d", b"/elsewhere") {
            Err(Error::InTheWay { what, .. }) => assert_eq!(what, Obstacle::Directory),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            fs::read_to_string(tree.path().join("d/kept")).unwrap(),
            "kept"
        );
        assert_eq!(names(tree.path()), ["d"]);
        root.write_symlink(b"/link", b"/elsewhere").unwrap();
        root.write_symlink(b"/link", b"/again").unwrap();
        assert_eq!(
            fs::read_link(tree.path().join("link")).unwrap(),
            std::path::Path::new("/again")
        );
    }
}
