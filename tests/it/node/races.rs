//! Mounts raced onto the directories the node commands make for
//! themselves: a thread binds etcd onto `.semanifest-trash` (prune) or
//! `.semanifest-apply` (apply) the moment one appears, holds it a few
//! microseconds and detaches it, while the command runs a thousand
//! times through the library. etcd never gets the trash's mark, its
//! contents or the apply's owner, mode and label. Controls: the naive
//! sequence (`mkdir`, then open or change by path, the window widened by
//! a pause as a preemption would) on a decoy lands in the decoy.
//!
//! `SEMANIFEST_RACE_RUNS=20000` runs each race longer (a soak); the
//! default keeps each test to a few seconds.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fsroot::Root;
use layout::diag::Source;
use node::{ApplyMode, PruneOptions, Selection};

use super::arena::*;
use super::mounts::layout_with_shared;

const RUNS: usize = 1000;

/// How many times each race runs: `SEMANIFEST_RACE_RUNS`, or [`RUNS`].
fn runs() -> usize {
    std::env::var("SEMANIFEST_RACE_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(RUNS)
}
/// How long the racer holds a mount before it detaches it.
const HOLD: Duration = Duration::from_micros(20);
/// The naive sequence's pause between its `mkdir` and what follows.
const NAIVE_PAUSE: Duration = Duration::from_micros(30);

/// Binds `source` onto `target` whenever `target` exists, holds it and
/// detaches it, until stopped. The thread is started from the test's
/// thread, so it is in the test's mount namespace.
struct Racer {
    stop: Arc<AtomicBool>,
    hits: Arc<AtomicU64>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Racer {
    fn start(source: PathBuf, target: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let hits = Arc::new(AtomicU64::new(0));
        let handle = {
            let (stop, hits) = (Arc::clone(&stop), Arc::clone(&hits));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if rustix::mount::mount_bind(&source, &target).is_ok() {
                        hits.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(HOLD);
                        detach_below(target.parent().expect("a parent"));
                    } else {
                        std::thread::yield_now();
                    }
                }
            })
        };
        Racer {
            stop,
            hits,
            handle: Some(handle),
        }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            handle.join().expect("racer");
        }
        self.hits.load(Ordering::Relaxed)
    }
}

/// Detaches every mount strictly below `dir`: the raced mount sits on
/// the directory it was mounted on whatever that was renamed to since.
fn detach_below(dir: &Path) {
    let table = fsroot::MountTable::read().expect("mountinfo");
    let dir = std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str());
    for mount in table.iter() {
        if mount.point.len() > dir.len()
            && mount.point.starts_with(dir)
            && mount.point[dir.len()] == b'/'
        {
            let point: &std::ffi::OsStr =
                std::os::unix::ffi::OsStrExt::from_bytes(&mount.point[..]);
            let _ = rustix::mount::unmount(point, rustix::mount::UnmountFlags::DETACH);
        }
    }
}

/// A message without the paths it names, to tally what the race made
/// the command report.
fn gist(message: &str) -> String {
    message
        .split(": ")
        .filter(|part| !part.starts_with('/'))
        .collect::<Vec<_>>()
        .join(": ")
}

/// The etcd directory's own owner, mode and label, cheaper than the
/// whole digest (which is checked every 250 runs and at the end).
fn etcd_itself(etcd: &Path) -> (u32, u32, u32, Option<String>) {
    let meta = fs::symlink_metadata(etcd).expect("etcd");
    (meta.uid(), meta.gid(), meta.mode(), label_of(etcd))
}

/// Until `path` (made by the naive sequence) can be removed: the racer
/// may still hold a mount on it.
fn remove_when_free(path: &Path) {
    for _ in 0..10_000 {
        match fs::remove_dir(path) {
            Ok(()) => return,
            Err(_) => std::thread::sleep(HOLD),
        }
    }
    panic!("{} stayed busy", path.display());
}

#[test]
fn a_mount_racing_onto_the_trash_never_gets_it_marked_or_emptied() {
    let arena = placed(Fs::Tmpfs);
    let etcd = arena.path("var/lib/etcd");
    let containerd = arena.path("var/lib/containerd");
    let parsed = layout::manifest::default_layout(&policy::base_facts()).expect("layout");
    let root = Root::open(&arena.root).expect("root");
    let selection = Selection::Paths(vec!["/var/lib/containerd".to_owned()]);
    let options = PruneOptions {
        jobs: Some(std::num::NonZeroUsize::MIN),
        ..PruneOptions::default()
    };
    let itself = etcd_itself(&etcd);
    let sentinel = arena.sentinel_digest();
    let racer = Racer::start(etcd.clone(), containerd.join(".semanifest-trash"));
    let mut said: BTreeMap<String, u64> = BTreeMap::new();
    let runs = runs();
    for run in 0..runs {
        fs::create_dir_all(containerd.join("d/e")).expect("mkdir");
        fs::write(containerd.join("f"), "x").expect("write");
        fs::write(containerd.join("d/e/g"), "y").expect("write");
        match node::prune(&parsed.layout, &root, &selection, &options) {
            Ok(report) => {
                for problem in report.errors.iter().chain(&report.warnings) {
                    *said.entry(gist(&problem.message)).or_default() += 1;
                }
            }
            Err(error) => *said.entry(gist(&error.to_string())).or_default() += 1,
        }
        assert_eq!(etcd_itself(&etcd), itself, "run {run}");
        assert!(etcd.join("member/snap/db").exists(), "run {run}");
        if run % 250 == 0 {
            assert_eq!(arena.sentinel_digest(), sentinel, "run {run}");
        }
    }
    let hits = racer.stop();
    eprintln!(
        "{runs} prunes, the racer mounted etcd on the trash {hits} times; prune said {said:#?}"
    );
    assert!(hits > 0, "the racer got its mount onto a trash");
    let mut trusted = [0u8; 16];
    assert!(
        rustix::fs::getxattr(&etcd, "trusted.semanifest", &mut trusted).is_err(),
        "etcd never got the trash's mark"
    );
    let output = arena.on_root("prune", &["/var/lib/containerd"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_containerd_emptied(&arena);
    arena.finish();

    // Control: mkdir, a pause, open by name: the naive trash is the decoy.
    let arena = placed(Fs::Tmpfs);
    let decoy = decoy(&arena, "decoy");
    let naive = arena.path("var/lib/containerd/.naive-trash");
    let racer = Racer::start(decoy.clone(), naive.clone());
    let decoy_ino = fs::metadata(&decoy).expect("decoy").ino();
    let mut landed = None;
    for attempt in 1..=RUNS {
        fs::create_dir(&naive).expect("naive mkdir");
        std::thread::sleep(NAIVE_PAUSE);
        if let Ok(dir) = fs::File::open(&naive) {
            if dir.metadata().expect("fstat").ino() == decoy_ino {
                // What the naive prune does next: mark it, empty it.
                let through = format!(
                    "/proc/{}/fd/{}",
                    std::process::id(),
                    std::os::fd::AsRawFd::as_raw_fd(&dir)
                );
                run(std::process::Command::new("find").args([
                    "-H",
                    &through,
                    "-mindepth",
                    "1",
                    "-delete",
                ]));
                landed = Some(attempt);
            }
        }
        remove_when_free(&naive);
        if landed.is_some() {
            break;
        }
    }
    racer.stop();
    eprintln!("control: the naive trash was the decoy after {landed:?} attempts");
    assert!(
        landed.is_some(),
        "the race can land a mount on a naive trash"
    );
    assert!(names(&decoy).is_empty(), "and the naive prune empties it");
    arena.finish();
}

#[test]
fn a_mount_racing_onto_the_apply_directory_never_gets_it_chowned() {
    let arena = Arena::new(Fs::Tmpfs);
    let layout_file = layout_with_shared(&arena);
    let text = fs::read_to_string(&layout_file).expect("layout");
    let parsed = layout::manifest::parse(Source::new("shared", text), &policy::base_facts())
        .unwrap_or_else(|report| panic!("{report}"));
    let contexts = selabel::FileContexts::from_text(
        "shared",
        policy::file_contexts_text(&parsed.layout).as_bytes(),
    )
    .expect("file contexts");
    let root = Root::open(&arena.root).expect("root");
    let report = node::apply(&parsed.layout, &contexts, &root, ApplyMode::Write).expect("apply");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let etcd = arena.path("var/lib/etcd");
    let shared = arena.path("var/mnt/shared");
    let itself = etcd_itself(&etcd);
    let sentinel = arena.sentinel_digest();
    let racer = Racer::start(etcd.clone(), arena.path("var/mnt/.semanifest-apply"));
    let mut said: BTreeMap<String, u64> = BTreeMap::new();
    let mut created = 0;
    let runs = runs();
    for run in 0..runs {
        let _ = fs::remove_dir(&shared);
        match node::apply(&parsed.layout, &contexts, &root, ApplyMode::Write) {
            Ok(report) => {
                created += report.created;
                for problem in report.errors.iter().chain(&report.warnings) {
                    *said.entry(gist(&problem.message)).or_default() += 1;
                }
            }
            Err(error) => *said.entry(gist(&error.to_string())).or_default() += 1,
        }
        assert_eq!(etcd_itself(&etcd), itself, "run {run}");
        if run % 250 == 0 {
            assert_eq!(arena.sentinel_digest(), sentinel, "run {run}");
        }
    }
    let hits = racer.stop();
    eprintln!(
        "{runs} applies ({created} directories created), the racer mounted etcd on \
         .semanifest-apply {hits} times; apply said {said:#?}"
    );
    assert!(hits > 0, "the racer got its mount onto the apply directory");
    // Once the racer is gone, apply places the tree.
    let report = node::apply(&parsed.layout, &contexts, &root, ApplyMode::Write).expect("apply");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(owner_of(&shared), (1000, 1000));
    arena.finish();

    // Control: mkdir, a pause, chown by name: the decoy is chowned.
    let arena = Arena::new(Fs::Tmpfs);
    fs::create_dir_all(arena.path("var/mnt")).expect("mkdir");
    let decoy = decoy(&arena, "decoy");
    let naive = arena.path("var/mnt/.naive-apply");
    let racer = Racer::start(decoy.clone(), naive.clone());
    let mut landed = None;
    for attempt in 1..=RUNS {
        fs::create_dir(&naive).expect("naive mkdir");
        std::thread::sleep(NAIVE_PAUSE);
        let _ = std::os::unix::fs::chown(&naive, Some(1000), Some(1000));
        remove_when_free(&naive);
        if owner_of(&decoy) == (1000, 1000) {
            landed = Some(attempt);
            break;
        }
    }
    racer.stop();
    eprintln!("control: the naive apply chowned the decoy after {landed:?} attempts");
    assert!(
        landed.is_some(),
        "the race can land a mount on a naive apply"
    );
    arena.finish();
}
