//! Adversarial tests of `semanifest relabel`: an attacker who
//! controls a directory between `--root` and an operand, or the tree being
//! walked, races the relabeler. A victim tree outside the root is dumped
//! (labels, modes, owners, times, contents) before and after; it must not
//! change. Each attack has a control showing it is live: `setfiles -F`
//! under the same attack is redirected outside the root.
//!
//! Root, `/proc`, and `setfiles` (policycoreutils) are required.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::support::relabel::*;
use rustix::fs::{renameat_with, RenameFlags, CWD};

/// A catch-all spec, so an object is labelled whatever key a redirected
/// tool looks it up with.
const SPECS: &str = "\
/.*\tsystem_u:object_r:default_t:s0
/var(/.*)?\tsystem_u:object_r:var_t:s0
/var/lib(/.*)?\tsystem_u:object_r:var_lib_t:s0
";

const VICTIM_LABEL: &[u8] = b"system_u:object_r:victim_t:s0\0";
const IN_TREE_LABEL: &[u8] = b"system_u:object_r:var_lib_t:s0\0";

/// How semanifest refuses an operand whose path crosses a symlink.
const REFUSED: &str = "resolved below the root without following symlinks";

/// Runs of each operand under attack.
const RUNS: usize = 500;

/// `ROOT/var/lib` (a real directory with `victim/` and `f3`) and
/// `ROOT/var/libsym` (a symlink to `OUTSIDE`, which has the same names),
/// ready to be exchanged.
struct Arena {
    _scratch: tempfile::TempDir,
    fc: PathBuf,
    root: PathBuf,
    outside: PathBuf,
}

impl Arena {
    fn new() -> Self {
        require_privileges();
        let scratch = scratch();
        let fc = scratch.path().join("file_contexts");
        write_file(&fc, SPECS);
        let root = scratch.path().join("root");
        let outside = scratch.path().join("outside");
        for base in [root.join("var/lib"), outside.clone()] {
            TreeBuilder::new(&base)
                .file("victim/f1", "1")
                .file("victim/f2", "2")
                .file("victim/sub/f4", "4")
                .file("f3", "3");
        }
        std::os::unix::fs::symlink(&outside, root.join("var/libsym")).expect("symlink");
        for (path, _) in dump(&outside) {
            let path = outside.join(std::ffi::OsStr::new(
                std::str::from_utf8(&path).expect("utf-8 names"),
            ));
            set_label(&path, VICTIM_LABEL);
        }
        Self {
            _scratch: scratch,
            fc,
            root,
            outside,
        }
    }

    /// Starts exchanging `var/lib` and `var/libsym` in a loop.
    fn attack(&self) -> Exchanger {
        Exchanger::start(self.root.join("var/lib"), self.root.join("var/libsym"))
    }

    /// The victim's dump and a digest of it, for the log.
    fn victim(&self) -> (BTreeMap<Vec<u8>, Object>, u64) {
        let objects = dump(&self.outside);
        let mut hasher = DefaultHasher::new();
        format!("{objects:?}").hash(&mut hasher);
        (objects, hasher.finish())
    }
}

/// `renameat2(A, B, RENAME_EXCHANGE)` as fast as it goes, on its own thread.
struct Exchanger {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
    a: PathBuf,
    b: PathBuf,
}

impl Exchanger {
    fn start(a: PathBuf, b: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, a, b) = (Arc::clone(&stop), a.clone(), b.clone());
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).expect("exchange");
                    swaps += 1;
                }
                swaps
            })
        };
        Self {
            stop,
            thread: Some(thread),
            a,
            b,
        }
    }

    /// Stops the loop and puts the directory back at `A`; the swap count.
    fn stop(mut self) -> u64 {
        self.halt()
    }

    fn halt(&mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let swaps = match self.thread.take() {
            Some(thread) => thread.join().expect("exchanger thread"),
            None => return 0,
        };
        if swaps % 2 == 1 {
            renameat_with(CWD, &self.a, CWD, &self.b, RenameFlags::EXCHANGE).expect("exchange");
        }
        swaps
    }
}

impl Drop for Exchanger {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Outcomes of the runs of one operand under attack.
#[derive(Debug, Default)]
struct Tally {
    /// Exit 0: the operand was resolved while `var/lib` was the directory.
    labelled: usize,
    /// Exit 2, "is a symlink": resolved while it was the symlink.
    refused: usize,
}

fn attack_semanifest(arena: &Arena, operand: &Path) -> Tally {
    let (before, digest) = arena.victim();
    let exchanger = arena.attack();
    let mut tally = Tally::default();
    let outside = arena.outside.to_str().expect("utf-8");
    for run in 0..RUNS {
        let output = relabel(&arena.fc, Some(&arena.root), &["-v"], &[operand]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = stderr_of(&output);
        assert!(
            !stdout.contains(outside) && !stderr.contains(outside),
            "run {run}: output names the victim:\n{stdout}{stderr}"
        );
        match output.status.code() {
            Some(0) => tally.labelled += 1,
            Some(2) if stderr.contains(REFUSED) => tally.refused += 1,
            code => panic!("run {run}: unexpected exit {code:?}:\n{stdout}{stderr}"),
        }
    }
    let swaps = exchanger.stop();
    let (after, digest_after) = arena.victim();
    eprintln!(
        "{}: {RUNS} runs under {swaps} exchanges: {tally:?}; victim digest {digest:016x} \
         before, {digest_after:016x} after",
        operand.display()
    );
    assert!(
        before == after,
        "the victim outside the root changed: {:#?}",
        label_differences(&labels(&before), &labels(&after))
    );
    tally
}

/// Runs `setfiles -F -r ROOT` on `operand` under the same attack until
/// the victim changes; the run that did it.
fn attack_setfiles(arena: &Arena, operand: &Path) -> Option<usize> {
    let (before, _) = arena.victim();
    let _exchanger = arena.attack();
    (1..=RUNS).find(|_| {
        setfiles(&arena.fc, Some(&arena.root), &[operand]);
        labels(&dump(&arena.outside)) != labels(&before)
    })
}

#[test]
fn operand_ancestor_exchange_never_labels_outside_the_root() {
    let arena = Arena::new();
    for name in ["victim", "f3"] {
        let operand = arena.root.join("var/lib").join(name);
        let tally = attack_semanifest(&arena, &operand);
        // Both outcomes happened, so the attack was live on every path.
        assert!(tally.labelled > 0 && tally.refused > 0, "{tally:?}");
    }
    // What was labelled is the tree inside the root.
    let inside = arena.root.join("var/lib");
    for path in ["victim", "victim/f1", "victim/sub/f4", "f3"] {
        assert_eq!(
            label_of(&inside.join(path)).as_deref(),
            Some(IN_TREE_LABEL),
            "{path}"
        );
    }
}

/// Control: the same attack redirects `setfiles -F` outside the root.
#[test]
fn operand_ancestor_exchange_redirects_setfiles() {
    for name in ["victim", "f3"] {
        let arena = Arena::new();
        let operand = arena.root.join("var/lib").join(name);
        let run = attack_setfiles(&arena, &operand);
        eprintln!("setfiles -F on {name}: victim relabelled at run {run:?}");
        assert!(
            run.is_some(),
            "setfiles was never redirected in {RUNS} runs"
        );
    }
}

#[test]
fn operand_through_a_symlink_is_refused_naming_it() {
    let arena = Arena::new();
    let (before, _) = arena.victim();
    for operand in ["var/libsym/victim", "var/libsym/f3"] {
        let output = relabel(
            &arena.fc,
            Some(&arena.root),
            &[],
            &[&arena.root.join(operand)],
        );
        assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
        let symlink = arena.root.join("var/libsym");
        assert!(
            stderr_of(&output).contains(&format!("{} is a symlink", symlink.display())),
            "{}",
            stderr_of(&output)
        );
    }
    assert!(arena.victim().0 == before);
    // Control: the symlink itself, as the operand, is labelled (not its target).
    let link = arena.root.join("var/libsym");
    let output = relabel(&arena.fc, Some(&arena.root), &[], &[&link]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(
        label_of(&link).as_deref(),
        Some(&b"system_u:object_r:var_t:s0\0"[..])
    );
    assert!(arena.victim().0 == before);
}

#[test]
fn operand_outside_the_root_is_refused() {
    let arena = Arena::new();
    let operand = arena.root.join("var/../../outside/victim");
    let output = relabel(&arena.fc, Some(&arena.root), &[], &[&operand]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    assert!(
        stderr_of(&output).contains("is not inside the root"),
        "{}",
        stderr_of(&output)
    );
}

/// Runs of the FIFO swap, each listing the directory `LISTINGS` times (the
/// operand given that often).
const FIFO_RUNS: usize = 300;
const LISTINGS: usize = 20;

/// `ROOT/var/lib/q/file` (regular) and `ROOT/var/lib/q/pipe` (a FIFO),
/// exchanged in a loop, so a name listed as a regular file may be a FIFO
/// when it is opened; a writer blocks in `open(O_WRONLY)` on the FIFO
/// through a hard link outside `q`, and counts how often a reader released
/// it.
struct FifoTrap {
    _scratch: tempfile::TempDir,
    fc: PathBuf,
    root: PathBuf,
    q: PathBuf,
    writer: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    released: Arc<AtomicU64>,
    link: PathBuf,
}

impl FifoTrap {
    fn new() -> Self {
        require_privileges();
        let scratch = scratch();
        let fc = scratch.path().join("file_contexts");
        write_file(&fc, SPECS);
        let root = scratch.path().join("root");
        let tree = TreeBuilder::new(&root.join("var/lib"));
        tree.file("q/file", "x").fifo("q/pipe");
        let link = scratch.path().join("pipe-link");
        std::fs::hard_link(tree.path("q/pipe"), &link).expect("link the FIFO");
        let stop = Arc::new(AtomicBool::new(false));
        let released = Arc::new(AtomicU64::new(0));
        let writer = {
            let (stop, released, link) = (Arc::clone(&stop), Arc::clone(&released), link.clone());
            std::thread::spawn(move || loop {
                // Blocks until some reader opens the FIFO.
                let fifo = std::fs::OpenOptions::new().write(true).open(&link);
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                fifo.expect("open the FIFO for writing");
                released.fetch_add(1, Ordering::SeqCst);
            })
        };
        Self {
            _scratch: scratch,
            fc,
            q: root.join("var/lib/q"),
            root,
            writer: Some(writer),
            stop,
            released,
            link,
        }
    }

    fn swap(&self) -> Exchanger {
        Exchanger::start(self.q.join("file"), self.q.join("pipe"))
    }

    /// Stops the writer (by opening the FIFO ourselves) and returns how
    /// often it was released before.
    fn releases(mut self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&self.link)
            .expect("open the FIFO to stop the writer");
        if let Some(writer) = self.writer.take() {
            writer.join().expect("writer");
        }
        drop(reader);
        self.released.load(Ordering::SeqCst)
    }
}

use std::os::unix::fs::OpenOptionsExt;

#[test]
fn fifo_swapped_for_a_listed_file_is_never_opened() {
    let trap = FifoTrap::new();
    let swapper = trap.swap();
    let mut fifo_labelled = false;
    for run in 0..FIFO_RUNS {
        // Unlabel both so every run writes both.
        for name in ["file", "pipe"] {
            let _ = rustix::fs::lremovexattr(trap.q.join(name), XATTR);
        }
        let operands = vec![trap.q.as_path(); LISTINGS];
        let output = relabel(&trap.fc, Some(&trap.root), &["--json"], &operands);
        assert_eq!(
            output.status.code(),
            Some(0),
            "run {run}: {}",
            stderr_of(&output)
        );
        let summary: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("JSON summary");
        assert_eq!(summary["examined"], 3 * LISTINGS, "run {run}: {summary}");
        fifo_labelled |= label_of(&trap.link).as_deref() == Some(IN_TREE_LABEL);
    }
    let swaps = swapper.stop();
    assert!(
        fifo_labelled,
        "the FIFO itself is labelled (through O_PATH)"
    );
    let releases = trap.releases();
    eprintln!("semanifest: {FIFO_RUNS} runs under {swaps} swaps, writer released {releases} times");
    assert_eq!(releases, 0);
}

/// Control: a walker that opens what was listed as a regular file for
/// reading, as the relabeler did before (`O_RDONLY | O_NONBLOCK |
/// O_NOCTTY | O_NOFOLLOW` relative to the directory), releases the writer
/// under the same swap: at least once in the same number of runs, or (on a
/// busy machine, where the window is hit less often) in at most ten times
/// as many.
#[test]
fn fifo_swap_releases_a_walker_that_opens_listed_files() {
    use rustix::fs::{openat, FileType, Mode, OFlags, RawDir};
    let trap = FifoTrap::new();
    let swapper = trap.swap();
    let mut runs = 0;
    while runs < FIFO_RUNS || (trap.released.load(Ordering::SeqCst) == 0 && runs < 10 * FIFO_RUNS) {
        runs += 1;
        // About the pace of a relabel run, so the swapper runs as often.
        std::thread::sleep(std::time::Duration::from_millis(5));
        for _ in 0..LISTINGS {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let dir = openat(CWD, &trap.q, flags, Mode::empty()).expect("open q");
            let mut buffer = Vec::with_capacity(4096);
            let mut entries = RawDir::new(&dir, buffer.spare_capacity_mut());
            // An entry listed as a regular file is opened, as the
            // relabeler's were.
            while let Some(entry) = entries.next() {
                let entry = entry.expect("getdents");
                if entry.file_type() == FileType::RegularFile {
                    let flags = OFlags::RDONLY
                        | OFlags::NOFOLLOW
                        | OFlags::NONBLOCK
                        | OFlags::NOCTTY
                        | OFlags::CLOEXEC;
                    let _ = openat(&dir, entry.file_name(), flags, Mode::empty());
                }
            }
        }
    }
    let swaps = swapper.stop();
    let releases = trap.releases();
    eprintln!("old approach: {runs} runs under {swaps} swaps, writer released {releases} times");
    assert!(releases > 0);
}

/// Comparison: `setfiles -F` under the same swap. It reads and writes
/// labels by path (`lgetfilecon`/`lsetfilecon`) and opens no object, so it
/// never releases the writer either; what it labels is whatever the path
/// names at each call.
#[test]
fn fifo_swap_under_setfiles() {
    let trap = FifoTrap::new();
    let swapper = trap.swap();
    let mut fifo_labelled = false;
    let mut failed = 0;
    for _ in 0..FIFO_RUNS {
        for name in ["file", "pipe"] {
            let _ = rustix::fs::lremovexattr(trap.q.join(name), XATTR);
        }
        let operands = vec![trap.q.as_path(); LISTINGS];
        let output = setfiles(&trap.fc, Some(&trap.root), &operands);
        failed += usize::from(!output.status.success());
        fifo_labelled |= label_of(&trap.link).as_deref() == Some(IN_TREE_LABEL);
    }
    let swaps = swapper.stop();
    assert!(fifo_labelled, "setfiles labelled the FIFO");
    let releases = trap.releases();
    eprintln!(
        "setfiles -F: {FIFO_RUNS} runs under {swaps} swaps, writer released {releases} times, \
         {failed} runs exited non-zero"
    );
    assert_eq!(releases, 0);
}

/// A same-filesystem bind mount of the victim inside the tree: a directory
/// (`mount --bind OUTSIDE/victim ROOT/var/lib/x`) and a file, as kubelet's
/// subPath mounts are (`OUTSIDE/f3` on `ROOT/var/lib/file`).
fn bind_victim(arena: &Arena) -> Vec<MountGuard> {
    let lib = arena.root.join("var/lib");
    std::fs::create_dir(lib.join("x")).expect("mount point");
    write_file(&lib.join("file"), "mount point");
    let mut guards = Vec::new();
    for (source, target) in [("victim", "x"), ("f3", "file")] {
        let (source, target) = (arena.outside.join(source), lib.join(target));
        mount(&[
            "--bind",
            source.to_str().expect("utf-8"),
            target.to_str().expect("utf-8"),
        ]);
        guards.push(MountGuard(target));
    }
    // Same device: only the mount id tells them apart.
    assert_eq!(inode_of(&lib.join("x")).0, inode_of(&lib).0);
    guards
}

#[test]
fn bind_mounts_in_the_tree_are_skipped_and_counted() {
    let arena = Arena::new();
    let (before, digest) = arena.victim();
    let _guards = bind_victim(&arena);
    let var = arena.root.join("var");
    let output = relabel(&arena.fc, Some(&arena.root), &["--json"], &[&var]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(summary["mounts_skipped"], 2, "{summary}");
    let (after, digest_after) = arena.victim();
    eprintln!("victim digest {digest:016x} before, {digest_after:016x} after");
    assert!(
        before == after,
        "{:#?}",
        label_differences(&labels(&before), &labels(&after))
    );
    // Control: the rest of the tree was labelled.
    assert_eq!(
        label_of(&arena.root.join("var/lib/victim/f1")).as_deref(),
        Some(IN_TREE_LABEL)
    );

    // --cross-mounts enters them.
    let output = relabel(
        &arena.fc,
        Some(&arena.root),
        &["--json", "--cross-mounts"],
        &[&var],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(summary["mounts_skipped"], 0, "{summary}");
    assert_eq!(
        label_of(&arena.outside.join("victim/sub/f4")).as_deref(),
        Some(IN_TREE_LABEL)
    );
    assert_eq!(
        label_of(&arena.outside.join("f3")).as_deref(),
        Some(IN_TREE_LABEL)
    );

    // Now the bind-mounted file carries the label its name gets, and a
    // label read by name goes through the mount (what a walker that took
    // a matching label on trust would count as unchanged) ...
    let through_mount = arena.root.join("var/lib/file");
    assert_eq!(label_of(&through_mount).as_deref(), Some(IN_TREE_LABEL));
    // ... yet both mounts are still skipped, the file's as well.
    let output = relabel(&arena.fc, Some(&arena.root), &["--json"], &[&var]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(summary["mounts_skipped"], 2, "{summary}");
}

/// Control: setfiles compares devices only, so it enters the bind mounts.
#[test]
fn bind_mounts_in_the_tree_are_entered_by_setfiles() {
    let arena = Arena::new();
    let before = labels(&arena.victim().0);
    let _guards = bind_victim(&arena);
    let output = setfiles(&arena.fc, Some(&arena.root), &[&arena.root.join("var")]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let after = labels(&arena.victim().0);
    assert_ne!(before, after);
    assert_eq!(
        label_of(&arena.outside.join("victim/sub/f4")).as_deref(),
        Some(IN_TREE_LABEL)
    );
}

/// A label per kind of object in `ROOT/var/lib/q`: the label a name gets
/// depends on what the name holds, so the walk must write through the
/// object it examined.
const KIND_SPECS: &str = "\
/.*\tsystem_u:object_r:default_t:s0
/var/lib/q/.*\t-d\tsystem_u:object_r:q_dir_t:s0
/var/lib/q/.*\t--\tsystem_u:object_r:q_file_t:s0
/var/lib/q/.*\t-l\tsystem_u:object_r:q_link_t:s0
/var/lib/q/.*\t-p\tsystem_u:object_r:q_fifo_t:s0
";

const UNLABELLED: &[u8] = b"system_u:object_r:unlabeled_t:s0\0";

/// Runs of semanifest under the kind swap, each listing `q` `LISTINGS`
/// times (every label wrong before each run, so each listing may write).
const KIND_RUNS: usize = 2000;

/// `ROOT/var/lib/q` holding a regular file `a` and a symlink `b`, and a
/// FIFO `c` and a directory `d`, each pair exchanged in a loop; every
/// object held by an `O_PATH` fd, so its label is read whatever name it
/// has.
struct KindSwap {
    _scratch: tempfile::TempDir,
    fc: PathBuf,
    root: PathBuf,
    q: PathBuf,
    /// The objects and the label their kind gets.
    objects: Vec<(&'static str, std::os::fd::OwnedFd, &'static [u8])>,
}

impl KindSwap {
    fn new() -> Self {
        require_privileges();
        let scratch = scratch();
        let fc = scratch.path().join("file_contexts");
        write_file(&fc, KIND_SPECS);
        let root = scratch.path().join("root");
        let tree = TreeBuilder::new(&root.join("var/lib/q"));
        tree.file("a", "file").symlink("b", "a").fifo("c").dir("d");
        let q = root.join("var/lib/q");
        let objects = [
            ("file", "a", &b"system_u:object_r:q_file_t:s0\0"[..]),
            ("symlink", "b", b"system_u:object_r:q_link_t:s0\0"),
            ("fifo", "c", b"system_u:object_r:q_fifo_t:s0\0"),
            ("directory", "d", b"system_u:object_r:q_dir_t:s0\0"),
        ]
        .into_iter()
        .map(|(kind, name, label)| {
            let flags = rustix::fs::OFlags::PATH | rustix::fs::OFlags::NOFOLLOW;
            let fd = rustix::fs::open(q.join(name), flags, rustix::fs::Mode::empty())
                .expect("open O_PATH");
            (kind, fd, label)
        })
        .collect();
        Self {
            _scratch: scratch,
            fc,
            root,
            q,
            objects,
        }
    }

    fn swap(&self) -> [Exchanger; 2] {
        [
            Exchanger::start(self.q.join("a"), self.q.join("b")),
            Exchanger::start(self.q.join("c"), self.q.join("d")),
        ]
    }

    /// `/proc/self/fd/N` of an object: its own label, never a name's.
    fn proc_path(fd: &std::os::fd::OwnedFd) -> String {
        use std::os::fd::AsRawFd;
        format!("/proc/self/fd/{}", fd.as_raw_fd())
    }

    fn unlabel(&self) {
        for (_, fd, _) in &self.objects {
            rustix::fs::setxattr(
                Self::proc_path(fd),
                XATTR,
                UNLABELLED,
                rustix::fs::XattrFlags::empty(),
            )
            .expect("unlabel");
        }
    }

    /// The label of the object `fd` holds.
    fn label(fd: &std::os::fd::OwnedFd) -> Vec<u8> {
        let mut buffer = [0u8; 256];
        let len =
            rustix::fs::getxattr(Self::proc_path(fd), XATTR, &mut buffer).expect("read label");
        buffer[..len].to_vec()
    }

    /// The objects whose label is another kind's: `(kind, label)`.
    fn mislabelled(&self) -> Vec<(&'static str, String)> {
        let mut wrong = Vec::new();
        for (kind, fd, want) in &self.objects {
            let got = Self::label(fd);
            if got != *want && got != UNLABELLED {
                wrong.push((*kind, String::from_utf8_lossy(&got).into_owned()));
            }
        }
        wrong
    }

    /// Whether every object has its own kind's label.
    fn all_labelled(&self) -> bool {
        self.objects
            .iter()
            .all(|(_, fd, want)| Self::label(fd) == *want)
    }
}

/// Names exchanged between a file and a symlink, and between a FIFO and a
/// directory, while semanifest reads labels by name: whatever a name held
/// when it was examined, every label written is the one its object's own
/// kind gets (the labels depend on the kind here, so each write goes
/// through the fd of the object examined, checked against its `statx`).
#[test]
fn kind_swap_never_gives_an_object_another_kinds_label() {
    let arena = KindSwap::new();
    let swappers = arena.swap();
    let operands = vec![arena.q.as_path(); LISTINGS];
    let mut labelled = 0;
    for run in 0..KIND_RUNS {
        arena.unlabel();
        let output = relabel(&arena.fc, Some(&arena.root), &[], &operands);
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "run {run}: {}",
            stderr_of(&output)
        );
        let wrong = arena.mislabelled();
        assert!(wrong.is_empty(), "run {run}: {wrong:?}");
        labelled += usize::from(arena.all_labelled());
    }
    let swaps: Vec<u64> = swappers.into_iter().map(Exchanger::stop).collect();
    eprintln!(
        "semanifest: {KIND_RUNS} runs under {swaps:?} exchanges; all four labelled in {labelled}"
    );
    // Live: both pairs were swapped throughout, and the runs did label.
    assert!(swaps.iter().all(|&n| n > KIND_RUNS as u64), "{swaps:?}");
    assert!(labelled > 0);
}

/// Control: a walker that reads the kind of each name with `statx` and
/// then writes that kind's label by name (`lsetxattr`), as a naive
/// name-based relabeler would, gives objects another kind's label under
/// the same swap: at least once in as many listings, or (on a busy
/// machine) in at most ten times as many.
#[test]
fn kind_swap_mislabels_a_naive_name_based_walker() {
    use rustix::fs::{lsetxattr, statx, AtFlags, FileType, StatxFlags, XattrFlags};
    let arena = KindSwap::new();
    let swappers = arena.swap();
    let label_of_kind = |kind: FileType| -> &[u8] {
        match kind {
            FileType::Directory => b"system_u:object_r:q_dir_t:s0\0",
            FileType::RegularFile => b"system_u:object_r:q_file_t:s0\0",
            FileType::Symlink => b"system_u:object_r:q_link_t:s0\0",
            _ => b"system_u:object_r:q_fifo_t:s0\0",
        }
    };
    let mut wrong = Vec::new();
    let mut listings = 0;
    while listings < KIND_RUNS * LISTINGS
        || (wrong.is_empty() && listings < 10 * KIND_RUNS * LISTINGS)
    {
        listings += 1;
        if listings % LISTINGS == 1 {
            arena.unlabel();
        }
        for name in ["a", "b", "c", "d"] {
            let path = arena.q.join(name);
            let Ok(stx) = statx(CWD, &path, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE) else {
                continue;
            };
            let kind = FileType::from_raw_mode(stx.stx_mode.into());
            let _ = lsetxattr(&path, XATTR, label_of_kind(kind), XattrFlags::empty());
        }
        if listings % LISTINGS == 0 {
            wrong = arena.mislabelled();
            if !wrong.is_empty() {
                break;
            }
        }
    }
    let swaps: Vec<u64> = swappers.into_iter().map(Exchanger::stop).collect();
    eprintln!(
        "naive walker: {listings} listings under {swaps:?} exchanges; mislabelled: {wrong:?}"
    );
    assert!(!wrong.is_empty());
}
