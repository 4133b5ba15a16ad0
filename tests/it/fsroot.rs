//! `fsroot`, the one way semanifest resolves paths under a root: operands
//! become keys lexically, are resolved without following symlinks, and
//! entries are opened without being opened for I/O. Needs no privileges.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use fsroot::{Entry, Error, Root};
use rustix::fs::FileType;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("var/lib/app")).expect("dirs");
    fs::write(root.join("var/lib/app/data"), "d").expect("file");
    fs::create_dir_all(dir.path().join("outside/app")).expect("outside");
    symlink(dir.path().join("outside"), root.join("var/link")).expect("symlink");
    symlink("app", root.join("var/lib/current")).expect("symlink");
    dir
}

#[test]
fn operands_become_keys_lexically() {
    let dir = tree();
    let root = Root::open(&dir.path().join("root")).expect("open root");
    let key = |path: &str| root.key(&dir.path().join(path));
    assert_eq!(key("root").expect("root"), b"/");
    assert_eq!(key("root/var/lib/").expect("key"), b"/var/lib");
    assert_eq!(key("root/var/./x/../lib").expect("key"), b"/var/lib");
    // Keys need not exist.
    assert_eq!(key("root/nothing/here").expect("key"), b"/nothing/here");
    assert!(matches!(key("outside"), Err(Error::OutsideRoot { .. })));
    assert!(matches!(
        key("root/../outside"),
        Err(Error::OutsideRoot { .. })
    ));
    // Control: the same name as a prefix is not the root.
    assert!(matches!(key("rootx/var"), Err(Error::OutsideRoot { .. })));
    assert_eq!(
        root.display(b"/var"),
        [root.path(), b"/var"].concat(),
        "messages name the real location"
    );
}

#[test]
fn resolution_never_follows_a_symlink_before_the_last_component() {
    let dir = tree();
    let root = Root::open(&dir.path().join("root")).expect("open root");
    let data = root.resolve(b"/var/lib/app/data").expect("resolve");
    assert_eq!(data.kind(), FileType::RegularFile);
    // The last component is the link itself.
    let current = root.resolve(b"/var/lib/current").expect("resolve link");
    assert_eq!(current.kind(), FileType::Symlink);
    for key in [&b"/var/link/app"[..], b"/var/lib/current/data"] {
        match root.resolve(key) {
            Err(Error::Symlink { symlink, .. }) => assert!(symlink.is_some(), "named"),
            other => panic!("{}: {other:?}", String::from_utf8_lossy(key)),
        }
    }
    let message = root
        .resolve(b"/var/link/app")
        .expect_err("symlink")
        .to_string();
    assert!(message.contains("var/link is a symlink"), "{message}");
    // The root itself.
    assert_eq!(
        root.resolve(b"/").expect("root").kind(),
        FileType::Directory
    );
}

#[test]
fn entries_open_one_name_without_following() {
    let dir = tree();
    let root = Root::open(&dir.path().join("root")).expect("open root");
    let lib = root.open_dir_beneath(b"/var/lib").expect("lib");
    let link = Entry::open_at(&lib, c"current").expect("entry");
    assert_eq!(link.kind(), FileType::Symlink);
    assert!(link.open_dir().is_err(), "only directories are reopened");
    let app = Entry::open_at(&lib, c"app").expect("entry");
    assert!(app.open_dir().is_ok());
    for bad in [c"", c".", c"..", c"app/data"] {
        assert!(Entry::open_at(&lib, bad).is_err(), "{bad:?}");
    }
}

#[test]
fn directories_are_created_beneath_and_nothing_in_the_way_is_replaced() {
    let dir = tree();
    let root = Root::open(&dir.path().join("root")).expect("open root");
    let made = root.create_dir(b"/var/lib/new", 0o750).expect("create");
    assert_eq!(made.kind(), FileType::Directory);
    assert!(dir.path().join("root/var/lib/new").is_dir());
    // Through a symlink: refused, and nothing is created outside.
    assert!(matches!(
        root.create_dir(b"/var/link/new", 0o750),
        Err(Error::Symlink { .. })
    ));
    assert!(!dir.path().join("outside/new").exists());
    // Something in the way, of any kind, is an error naming it.
    for key in [
        &b"/var/lib/app"[..],
        b"/var/lib/current",
        b"/var/lib/app/data",
    ] {
        let error = root.create_dir(key, 0o750).expect_err("exists");
        assert!(error.to_string().contains("exists"), "{error}");
    }
    assert!(
        fs::symlink_metadata(dir.path().join("root/var/lib/current"))
            .expect("still there")
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_missing_or_non_directory_root_is_an_error_naming_it() {
    let dir = tree();
    for path in [
        dir.path().join("missing"),
        dir.path().join("root/var/lib/app/data"),
    ] {
        let error = Root::open(&path).expect_err("not a root").to_string();
        assert!(error.contains(path.to_str().expect("utf-8")), "{error}");
    }
    // Control: a symlink to a directory is a fine root (the administrator's
    // own path is followed).
    let root = Root::open(Path::new(&dir.path().join("root/var/link"))).expect("root");
    assert!(root.path().ends_with(b"/outside"));
}

/// A walk that closed an ancestor's fd reopens it as `..` only while the
/// child is still where it was: moved elsewhere, `..` is another
/// directory and the reopen says so (`ESTALE`). Control: unmoved, it is
/// the same directory.
#[test]
fn a_parent_is_reopened_only_while_it_is_still_the_parent() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::create_dir_all(dir.path().join("a/b")).expect("dirs");
    fs::create_dir_all(dir.path().join("elsewhere")).expect("dirs");
    let open = |path: &Path| {
        rustix::fs::open(
            path,
            rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
            rustix::fs::Mode::empty(),
        )
        .expect("open")
    };
    let a = fsroot::Meta::of(std::os::fd::AsFd::as_fd(&open(&dir.path().join("a")))).expect("a");
    let b = open(&dir.path().join("a/b"));
    let again = fsroot::reopen_parent(std::os::fd::AsFd::as_fd(&b), &a).expect("unmoved");
    let meta = fsroot::Meta::of(std::os::fd::AsFd::as_fd(&again)).expect("meta");
    assert_eq!((meta.dev, meta.ino), (a.dev, a.ino));
    fs::rename(dir.path().join("a/b"), dir.path().join("elsewhere/b")).expect("move");
    assert_eq!(
        fsroot::reopen_parent(std::os::fd::AsFd::as_fd(&b), &a).err(),
        Some(rustix::io::Errno::STALE)
    );
}

/// `make_dir` hands back the empty directory it made, and nothing in
/// the way: an existing name is `EEXIST`, whatever it is.
#[test]
fn make_dir_hands_back_only_what_it_made() {
    let dir = tempfile::tempdir().expect("tempdir");
    let top = rustix::fs::open(
        dir.path(),
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
        rustix::fs::Mode::empty(),
    )
    .expect("open");
    let made = fsroot::make_dir(&top, c"new", 0o700).expect("made");
    assert!(fsroot::is_empty(std::os::fd::AsFd::as_fd(&made)).expect("list"));
    fs::write(dir.path().join("file"), "x").expect("file");
    symlink("new", dir.path().join("link")).expect("symlink");
    for name in [c"new", c"file", c"link"] {
        assert_eq!(
            fsroot::make_dir(&top, name, 0o700).err(),
            Some(rustix::io::Errno::EXIST),
            "{name:?}"
        );
    }
}
