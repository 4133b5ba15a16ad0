//! A working directory per worker thread, so that an entry of an open
//! directory is reached by its bare name.
//!
//! `l*xattr(NAME)` from the directory resolves one component, never
//! follows it if it is a symlink, and opens nothing.
//! `/proc/self/fd/DIR/NAME` does the same lookup after walking procfs and
//! a magic link, which costs more than the xattr call itself. So each
//! worker thread owns its working directory ([`own`], from a pool's start
//! handler: `unshare(CLONE_FS)` detaches only the working directory, root
//! and umask from the other threads) and [`entry`] `fchdir`s into the
//! directory it is asked about, once per directory per thread. A thread
//! that could not unshare gets [`Handle::Named`] instead: the same single
//! lookup, through `/proc`.
//!
//! A working directory pins the dentries of every directory down to it,
//! removed or not, and each `rmdir` above it walks them again
//! (`shrink_dcache_parent`). A thread that removes directories climbs out
//! of one before removing it ([`climb_to`]) and [`leave`]s for `/` when
//! its task is done, so no removed chain stays pinned.

use std::cell::Cell;
use std::ffi::CStr;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Handle;

/// Ids of directories a thread may `fchdir` into: fd numbers are reused,
/// ids never are.
static DIR_IDS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's working directory is its own.
    static OWN: Cell<bool> = const { Cell::new(false) };
    /// The directory this thread's working directory is (0: none of ours).
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// Gives the calling thread a working directory of its own; for a thread
/// pool's start handler. Without it (or if the kernel refuses), [`entry`]
/// goes through `/proc`.
pub fn own() {
    // rustix deprecates its safe `unshare` for CLONE_FILES, which is never
    // asked for here.
    #[allow(deprecated)]
    let own = rustix::thread::unshare(rustix::thread::UnshareFlags::FS).is_ok();
    OWN.with(|flag| flag.set(own));
    CURRENT.with(|current| current.set(0));
}

/// Names one open directory for the process's lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirId(u64);

impl DirId {
    /// An id no other directory has had.
    pub fn fresh() -> Self {
        Self(DIR_IDS.fetch_add(1, Ordering::Relaxed))
    }
}

/// The handle for the xattrs of entry `name` of the open directory `dir`
/// (known as `id`): the bare name in this thread's working directory, set
/// to `dir` first unless it already is; through `/proc` when this thread
/// does not own its working directory or `fchdir` fails.
pub fn entry<'a>(dir: BorrowedFd<'a>, id: DirId, name: &'a CStr) -> Handle<'a> {
    if OWN.with(Cell::get) {
        if CURRENT.with(Cell::get) == id.0 {
            return Handle::InWorkingDir(name);
        }
        if rustix::process::fchdir(dir).is_ok() {
            CURRENT.with(|current| current.set(id.0));
            return Handle::InWorkingDir(name);
        }
        CURRENT.with(|current| current.set(0));
    }
    Handle::Named(dir, name)
}

/// Moves this thread's working directory up to `dir` (known as `id`),
/// the parent of a directory about to be removed, if it is in one of ours
/// and not already there. Left deep in a removed chain, it made deleting
/// a chain with a file at its bottom take time quadratic in its depth.
pub fn climb_to(dir: BorrowedFd<'_>, id: DirId) {
    let current = CURRENT.with(Cell::get);
    if current == 0 || current == id.0 {
        return;
    }
    let now = if rustix::process::fchdir(dir).is_ok() {
        id.0
    } else {
        0
    };
    CURRENT.with(|current| current.set(now));
}

/// Moves this thread's working directory to `/` when its task is done:
/// the directory it was in may be removed later by another thread, and
/// all its ancestors after it.
pub fn leave() {
    if CURRENT.with(Cell::get) != 0 && rustix::process::chdir("/").is_ok() {
        CURRENT.with(|current| current.set(0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_never_reused() {
        let (a, b) = (DirId::fresh(), DirId::fresh());
        assert_ne!(a, b);
    }
}
