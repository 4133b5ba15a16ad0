//! The relabel benchmark's floor: the cheapest parallel walk that reads every
//! object's `security.selinux`, with the same safety rules as the relabeler
//! (fd-relative opens, `O_NOFOLLOW`, `O_PATH` + `/proc/self/fd` for objects
//! that must not be opened) but no stat, no path, no lookup and no writes.
//!
//! Usage: `xattr_floor [--jobs N] DIR...`; prints `objects seconds`.

// An example prints its results.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rustix::fs::{self as rfs, FileType, Mode, OFlags, RawDir, CWD};

const XATTR: &str = "security.selinux";

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    let mut jobs = 0;
    if args.peek().map(String::as_str) == Some("--jobs") {
        args.next();
        jobs = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    }
    let roots: Vec<String> = args.collect();
    if roots.is_empty() {
        eprintln!("usage: xattr_floor [--jobs N] DIR...");
        return std::process::ExitCode::from(2);
    }
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
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
                Ok(fd) => visit(scope, &objects, fd),
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

fn visit<'s>(scope: &rayon::Scope<'s>, objects: &'s AtomicU64, dir: OwnedFd) {
    let mut label = [0u8; 256];
    let _ = rfs::fgetxattr(&dir, XATTR, &mut label[..]);
    let dir = Arc::new(dir);
    let mut count = 1;
    let mut buffer = Vec::with_capacity(32 * 1024);
    let mut entries = RawDir::new(dir.as_fd(), buffer.spare_capacity_mut());
    while let Some(Ok(entry)) = entries.next() {
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        match entry.file_type() {
            FileType::Directory => {
                let parent = Arc::clone(&dir);
                let name: CString = name.to_owned();
                scope.spawn(move |scope| {
                    let flags =
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                    if let Ok(fd) = rfs::openat(&*parent, name.as_c_str(), flags, Mode::empty()) {
                        drop(parent);
                        visit(scope, objects, fd);
                    }
                });
            }
            FileType::RegularFile => {
                count += 1;
                let flags = OFlags::RDONLY
                    | OFlags::NOFOLLOW
                    | OFlags::NONBLOCK
                    | OFlags::NOCTTY
                    | OFlags::CLOEXEC;
                if let Ok(fd) = rfs::openat(&*dir, name, flags, Mode::empty()) {
                    let _ = rfs::fgetxattr(&fd, XATTR, &mut label[..]);
                }
            }
            _ => {
                count += 1;
                let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                if let Ok(fd) = rfs::openat(&*dir, name, flags, Mode::empty()) {
                    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
                    let _ = rfs::getxattr(path.as_str(), XATTR, &mut label[..]);
                }
            }
        }
    }
    objects.fetch_add(count, Ordering::Relaxed);
}
