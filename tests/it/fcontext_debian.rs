//! Differential test (b): Debian's own policy
//! (`/etc/selinux/default/contexts/files/file_contexts` from
//! selinux-policy-default, with its `.homedirs`, `.subs_dist` and compiled
//! `.bin` siblings, all read by both engines) against libselinux 3.4, on
//! generated keys, for every file mode.
//!
//! - `debian_policy_sample`: 20,000 keys × 8 modes (~15 s on 2 idle cores).
//! - `debian_policy_million`: 1,000,000 keys, each in one mode, the modes
//!   rotating so each gets 125,000 keys: 1 M libselinux lookups, ~4 minutes
//!   on 2 idle cores. In the plain `cargo test`, so CI runs it.
//! - `debian_policy_million_every_mode` (ignored: ~27 minutes on 2 idle
//!   cores, 47.6 on a loaded one): the same million keys × all 8 modes,
//!   `cargo test --release --test it fcontext_debian:: -- --ignored`.
//!
//! libselinux costs 300-500 µs per lookup on these keys (most fall through to
//! the generic regexes, which it tries one by one); ours adds seconds.
//! `FCONTEXT_KEYS=N` and `FCONTEXT_SEED=S` change the size and the seed.

use crate::support::fc_oracle;
use crate::support::path_gen;

use std::path::Path;

use path_gen::{Rng, Vocabulary};
use selabel::{FileContexts, FileKind};

const DEBIAN_FC: &str = "/etc/selinux/default/contexts/files/file_contexts";

fn debian_fc() -> &'static Path {
    let path = Path::new(DEBIAN_FC);
    assert!(
        path.exists(),
        "{DEBIAN_FC} is missing: install the Debian package selinux-policy-default (see .ci/packages)"
    );
    path
}

fn vocabulary(fc: &Path) -> Vocabulary {
    let read = |suffix: &str| {
        let mut name = fc.as_os_str().to_owned();
        name.push(suffix);
        std::fs::read_to_string(&name).unwrap_or_default()
    };
    let (base, homedirs, subs_dist) = (read(""), read(".homedirs"), read(".subs_dist"));
    Vocabulary::new(&[&base, &homedirs], &[&subs_dist])
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// How many modes each key is looked up in.
#[derive(Clone, Copy, PartialEq)]
enum Modes {
    Every,
    Rotating,
}

/// Runs `total` generated keys through both engines in batches (memory stays
/// flat) and panics on any mismatch.
fn run(total: usize, modes: Modes) {
    let fc = debian_fc();
    let contexts = FileContexts::load(fc).unwrap_or_else(|error| panic!("{error}"));
    assert!(
        contexts.len() > 5000,
        "Debian's policy has thousands of specs"
    );
    let vocabulary = vocabulary(fc);
    let seed = env_number("FCONTEXT_SEED", 0x5E1A_BE15);
    let mut rng = Rng::new(seed);
    let started = std::time::Instant::now();
    let (mut compared, mut mismatched, mut examples) = (0, 0, Vec::new());
    let mut labelled = 0usize;
    let mut done = 0;
    while done < total {
        let batch = (total - done).min(100_000);
        let keys = vocabulary.keys(&mut rng, batch);
        labelled += keys
            .iter()
            .filter(|key| contexts.lookup(key, FileKind::Any).is_some())
            .count();
        let (count, bad, mut list) = match modes {
            Modes::Every => fc_oracle::compare(fc, &contexts, &keys, &FileKind::ALL, 20),
            Modes::Rotating => fc_oracle::compare_rotating(fc, &contexts, &keys, done, 20),
        };
        compared += count;
        mismatched += bad;
        examples.append(&mut list);
        // The walker's per-directory lookups, on the same keys as a tree.
        fc_oracle::assert_directory_lookups_agree(&contexts, &keys, DEBIAN_FC);
        done += batch;
    }
    let per_key = if modes == Modes::Every {
        "x 8 modes"
    } else {
        "in rotating modes"
    };
    eprintln!(
        "{compared} lookups ({total} keys {per_key}, seed {seed:#x}) in {:.1} s, {labelled} keys labelled",
        started.elapsed().as_secs_f64()
    );
    let expected = if modes == Modes::Every {
        total * FileKind::ALL.len()
    } else {
        total
    };
    assert_eq!(compared, expected, "every key was compared");
    // Control: the keys are not trivially unlabelled.
    assert!(
        labelled > total / 2,
        "only {labelled} of {total} keys get a label"
    );
    if mismatched > 0 {
        let listing: Vec<String> = examples.iter().take(20).map(ToString::to_string).collect();
        panic!(
            "{mismatched} of {compared} lookups differ (seed {seed:#x}):\n{}",
            listing.join("\n")
        );
    }
}

#[test]
fn debian_policy_sample() {
    run(
        env_number("FCONTEXT_SAMPLE_KEYS", 20_000) as usize,
        Modes::Every,
    );
}

#[test]
fn debian_policy_million() {
    run(
        env_number("FCONTEXT_KEYS", 1_000_000) as usize,
        Modes::Rotating,
    );
}

#[test]
#[ignore = "~27 minutes on 2 idle cores: run it with --ignored"]
fn debian_policy_million_every_mode() {
    run(
        env_number("FCONTEXT_KEYS", 1_000_000) as usize,
        Modes::Every,
    );
}

/// Keys known to matter on Debian's policy, checked by hand against
/// libselinux (and thus against us): substitutions from `.subs_dist`,
/// `<<none>>` trees, typed specs.
#[test]
fn debian_policy_landmarks() {
    let fc = debian_fc();
    let contexts = FileContexts::load(fc).unwrap_or_else(|error| panic!("{error}"));
    let oracle = fc_oracle::LibSelinux::open(fc).unwrap_or_else(|error| panic!("{error}"));
    for key in [
        &b"/bin/bash"[..],
        b"/usr/bin/bash",
        b"/var/run/x",
        b"/run/x",
        b"/proc/1",
        b"/sys/x",
        b"/var/log/messages",
        b"/home/user/.ssh",
        b"/tmp/x",
        b"/dev/null",
        b"/lib64/libc.so.6",
        b"/var/lib/kubelet/pods",
        b"/var/lib/containerd",
        b"/etc/shadow",
        b"/",
    ] {
        for kind in FileKind::ALL {
            assert_eq!(
                fc_oracle::our_answer(&contexts, key, kind),
                oracle.lookup(key, kind),
                "{} {kind:?}",
                fc_oracle::escape(key)
            );
        }
    }
    // Substitution `/bin /usr/bin` really applies.
    assert_eq!(
        contexts.lookup(b"/bin/bash", FileKind::File),
        contexts.lookup(b"/usr/bin/bash", FileKind::File)
    );
    // `/proc` is `<<none>>` in refpolicy.
    assert_eq!(
        oracle.lookup(b"/proc/1", FileKind::Dir),
        fc_oracle::Answer::NoLabel
    );
}
