//! Micro-benchmark: lookups per second of semanifest's file_contexts engine
//! versus libselinux 3.4's `selabel_lookup`, single thread, same keys, on
//! Debian's policy (or the file given as first argument).
//!
//!     cargo run --release --example lookup_bench [FC] [KEYS]
//!
//! Keys: the differential tests' generated paths (real-looking and hostile)
//! and the first KEYS paths found on this host under /usr, /etc and /var,
//! each looked up as a regular file; the host paths once more as a tree walk
//! (`FileContexts::directory`, advanced one component per subdirectory, as
//! the relabeler looks up). Both engines are warmed up first (libselinux
//! compiles regexes lazily; our lazy DFAs fill their caches). Answers are
//! compared too, so a fast wrong engine cannot win.
//!
//! Measured on the 2-core development machine, idle (Debian 12, libselinux
//! 3.4, 20,000 keys):
//!
//! | keys          | semanifest | libselinux | ratio |
//! |---------------|-----------:|-----------:|------:|
//! | real-looking  |    2.20 µs |     536 µs |  244× |
//! | hostile       |    3.63 µs |     407 µs |  112× |
//! | host files    |    1.49 µs |     345 µs |  232× |
//! | tree walk     |    0.63 µs |  (314 µs) |  501× |
//!
//! Load: semanifest 192 ms, libselinux 7 ms (compiles each regex on first
//! use). Measured when semanifest compiled every automaton at load; it now
//! builds each group's on its first lookup, as libselinux does.

// An example prints its results.
#![allow(clippy::print_stdout, clippy::print_stderr)]

// The differential tests' oracle and key generator, of which this bench
// uses a part.
#[allow(dead_code)]
#[path = "../tests/it/support/fc_oracle.rs"]
mod fc_oracle;
#[allow(dead_code)]
#[path = "../tests/it/support/path_gen.rs"]
mod path_gen;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use selabel::{FileContexts, FileKind};

fn main() {
    let mut args = std::env::args().skip(1);
    let fc = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "/etc/selinux/default/contexts/files/file_contexts".to_owned()),
    );
    let count: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(20_000);

    let read = |suffix: &str| {
        let mut name = fc.as_os_str().to_owned();
        name.push(suffix);
        std::fs::read_to_string(&name).unwrap_or_default()
    };
    let vocabulary =
        path_gen::Vocabulary::new(&[&read(""), &read(".homedirs")], &[&read(".subs_dist")]);
    let mut rng = path_gen::Rng::new(0xBE4C);
    let real: Vec<Vec<u8>> = (0..count)
        .map(|_| vocabulary.real_looking(&mut rng))
        .collect();
    let hostile: Vec<Vec<u8>> = (0..count / 4)
        .map(|_| vocabulary.hostile(&mut rng))
        .collect();
    let mut host = Vec::new();
    for root in ["/usr", "/etc", "/var"] {
        collect_paths(std::path::Path::new(root), count / 3, &mut host);
    }
    let kind = FileKind::File;

    let started = Instant::now();
    let ours = FileContexts::load(&fc).unwrap_or_else(|error| panic!("{error}"));
    let our_load = started.elapsed();
    let started = Instant::now();
    let theirs = fc_oracle::LibSelinux::open(&fc).unwrap_or_else(|error| panic!("{error}"));
    let their_load = started.elapsed();

    println!(
        "file_contexts: {} ({} specs), mode file, single thread",
        fc.display(),
        ours.len()
    );
    println!(
        "load: semanifest {:.1} ms, libselinux {:.1} ms (lazy: compiles regexes on first use)",
        our_load.as_secs_f64() * 1e3,
        their_load.as_secs_f64() * 1e3
    );
    let mut mismatches = 0;
    let mut host_rate = 0.0;
    for (name, keys) in [
        ("real-looking", &real),
        ("hostile", &hostile),
        ("host files", &host),
    ] {
        // Warm-up (libselinux compiles lazily, our lazy DFAs fill) and
        // agreement check on the same keys.
        mismatches += keys
            .iter()
            .filter(|key| fc_oracle::our_answer(&ours, key, kind) != theirs.lookup(key, kind))
            .count();
        let rounds = 5;
        let started = Instant::now();
        for _ in 0..rounds {
            for key in keys.iter() {
                black_box(ours.lookup(black_box(key), kind));
            }
        }
        let our_rate = (rounds * keys.len()) as f64 / started.elapsed().as_secs_f64();
        let started = Instant::now();
        for key in keys.iter() {
            black_box(theirs.lookup(black_box(key), kind));
        }
        let their_rate = keys.len() as f64 / started.elapsed().as_secs_f64();
        host_rate = their_rate;
        println!(
            "{name:>12} keys ({:>6}): semanifest {our_rate:>10.0}/s ({:>7.2} µs)  libselinux {their_rate:>8.0}/s ({:>8.2} µs)  ratio {:>6.1}x",
            keys.len(),
            1e6 / our_rate,
            1e6 / their_rate,
            our_rate / their_rate
        );
    }
    // The relabeler's way: a walk from `/` that advances each directory's
    // state by one component (`Directory::subdirectory`) and looks its
    // entries up by name.
    let tree = fc_oracle::KeyTree::of(&host);
    let mut checked = 0;
    tree.walk(
        &ours.directory(b"/"),
        b"/",
        &mut |directory, _, name, key| {
            checked += 1;
            mismatches += usize::from(directory.lookup(name, kind) != ours.lookup(key, kind));
        },
    );
    // Every entry of the tree: each distinct chain of components of a key.
    let entries: std::collections::BTreeSet<Vec<u8>> = host
        .iter()
        .filter(|key| key.starts_with(b"/"))
        .flat_map(|key| {
            let names: Vec<&[u8]> = key
                .split(|&byte| byte == b'/')
                .filter(|name| !name.is_empty())
                .collect();
            (1..=names.len()).map(move |n| names[..n].join(&b'/'))
        })
        .collect();
    assert_eq!(checked, entries.len(), "every entry was looked up");
    let rounds = 5;
    let started = Instant::now();
    for _ in 0..rounds {
        tree.walk(&ours.directory(b"/"), b"/", &mut |directory, _, name, _| {
            black_box(directory.lookup(black_box(name), kind));
        });
    }
    let our_rate = (rounds * checked) as f64 / started.elapsed().as_secs_f64();
    println!(
        "{:>12} keys ({:>6}): semanifest {our_rate:>10.0}/s ({:>7.2} µs)  (libselinux as above)           ratio {:>6.1}x",
        "tree walk",
        checked,
        1e6 / our_rate,
        our_rate / host_rate
    );
    println!("target: ratio >= 50x on real-looking keys; mismatches: {mismatches}");
    if mismatches > 0 {
        std::process::exit(1);
    }
}

/// Up to `limit` more paths below `dir` (depth first, no symlinks followed).
fn collect_paths(dir: &std::path::Path, limit: usize, out: &mut Vec<Vec<u8>>) {
    use std::os::unix::ffi::OsStrExt as _;
    let start = out.len();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if out.len() - start >= limit {
                return;
            }
            let path = entry.path();
            out.push(path.as_os_str().as_bytes().to_vec());
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                stack.push(path);
            }
        }
    }
}
