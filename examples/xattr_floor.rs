//! The relabel benchmark's floors: the system calls a relabel pass makes,
//! and nothing else. A parallel walk that reads every object's
//! `security.selinux` the way the relabeler does — each directory opened
//! for listing by its name (`openat2`, no symlink, no mount point),
//! `statx`ed and read through its fd; every other entry read with
//! `lgetxattr(NAME)` from the worker's own working directory, its kind
//! taken from `getdents` (`statx`ed first only where the filesystem does
//! not say) — but no lookup, no comparison, no path, no mount table, no
//! digest bookkeeping.
//!
//! Without `--write`, nothing is written: the floor of a pass with nothing
//! to change. With `--write CONTEXT`, every object read is then given
//! CONTEXT (a directory with `fsetxattr` on its fd, any other entry with
//! `lsetxattr(NAME)`): the floor of a pass where every label is wrong.
//!
//! Usage: `xattr_floor [--jobs N] [--write CONTEXT] DIR...`; prints
//! `objects seconds`.

// An example prints its results.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use fsroot::working_dir::{self, DirId};
use fsroot::{open_listing_beneath, Crossing, Handle, Meta};
use rustix::fs::{self as rfs, FileType, Mode, OFlags, RawDir, CWD};

const XATTR: &str = "security.selinux";

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    let mut jobs = 0;
    let mut write = None;
    loop {
        match args.peek().map(String::as_str) {
            Some("--jobs") => {
                args.next();
                jobs = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            }
            Some("--write") => {
                args.next();
                // Stored with a trailing NUL, as the relabeler stores it.
                write = args
                    .next()
                    .map(|context| [context.as_bytes(), b"\0"].concat());
            }
            _ => break,
        }
    }
    let roots: Vec<String> = args.collect();
    if roots.is_empty() || write.as_ref().is_some_and(|value| value.len() < 2) {
        eprintln!("usage: xattr_floor [--jobs N] [--write CONTEXT] DIR...");
        return std::process::ExitCode::from(2);
    }
    let write = write.as_deref();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .start_handler(|_| working_dir::own())
        .build();
    let pool = match pool {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("xattr_floor: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let objects = AtomicU64::new(0);
    let started = Instant::now();
    pool.scope(|scope| {
        for root in &roots {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match rfs::openat(CWD, root.as_str(), flags, Mode::empty()) {
                Ok(fd) => match Meta::of(fd.as_fd()) {
                    Ok(_) => visit(scope, &objects, write, fd),
                    Err(error) => eprintln!("xattr_floor: {root}: {error}"),
                },
                Err(error) => eprintln!("xattr_floor: {root}: {error}"),
            }
        }
    });
    println!(
        "{} {:.3}",
        objects.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    std::process::ExitCode::SUCCESS
}

fn visit<'s>(
    scope: &rayon::Scope<'s>,
    objects: &'s AtomicU64,
    write: Option<&'s [u8]>,
    dir: OwnedFd,
) {
    let mut label = [0u8; 256];
    let handle = Handle::Fd(dir.as_fd());
    let _ = handle.get(XATTR, &mut label);
    if let Some(value) = write {
        let _ = handle.set(XATTR, value);
    }
    let dir = Arc::new(dir);
    let id = DirId::fresh();
    let mut count = 1;
    let mut buffer = Vec::with_capacity(32 * 1024);
    let mut entries = RawDir::new(dir.as_fd(), buffer.spare_capacity_mut());
    while let Some(Ok(entry)) = entries.next() {
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        if entry.file_type() == FileType::Directory {
            let parent = Arc::clone(&dir);
            let name: CString = name.to_owned();
            scope.spawn(move |scope| {
                let opened = open_listing_beneath(&*parent, &name, Crossing::NoMounts);
                if let Ok(fd) = opened {
                    drop(parent);
                    if Meta::of(fd.as_fd()).is_ok() {
                        visit(scope, objects, write, fd);
                    }
                }
            });
        } else {
            count += 1;
            read_named(&dir, id, name, entry.file_type(), &mut label, write);
        }
    }
    objects.fetch_add(count, Ordering::Relaxed);
}

/// What the relabeler does for an entry listed as anything but a
/// directory: reads its label, and writes `write` if given.
fn read_named(
    dir: &OwnedFd,
    id: DirId,
    name: &CStr,
    listed: FileType,
    label: &mut [u8],
    write: Option<&[u8]>,
) {
    if listed == FileType::Unknown && Meta::at(dir, name).is_err() {
        return;
    }
    let handle = working_dir::entry(dir.as_fd(), id, name);
    let _ = handle.get(XATTR, label);
    if let Some(value) = write {
        let _ = handle.set(XATTR, value);
    }
}
