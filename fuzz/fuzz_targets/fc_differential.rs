//! Differential fuzzing of the lookup engine: fuzzed file_contexts text and
//! fuzzed keys, `FileContexts` against the real libselinux 3.4 through the
//! test oracle (`tests/it/support/fc_oracle.rs`), every key in every mode, and
//! per-directory lookups against plain ones.
//!
//! Input: `FILE_CONTEXTS [\n%%subs\nSUBS] \0 KEY \0 KEY ...` (at most 32
//! keys; a key cannot hold NUL, libselinux takes C strings). Inputs that
//! either engine refuses to load are skipped: only lookups are compared.
//! A divergence panics with the key, the mode, both answers and the files,
//! so libFuzzer keeps the input under `fuzz/artifacts/fc_differential/`.
//!
//! Run and seed: see fuzz/README.md.

#![no_main]
#![feature(c_variadic)]

#[allow(dead_code)] // the tests' oracle, of which this target uses a part
#[path = "../../tests/it/support/fc_oracle.rs"]
mod fc_oracle;

use std::ffi::{c_char, c_int};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use fc_oracle::{agree, directory_mismatches, escape, our_answer, LibSelinux, Pcre2Specs};
use libfuzzer_sys::fuzz_target;
use selinux::call_back::{CallBack, Log};
use selabel::{FileContexts, FileKind};

const SUBS_MARKER: &[u8] = b"\n%%subs\n";
const MAX_KEYS: usize = 32;

/// Lookups where PCRE2 gave up, reported now and then on stderr.
static GAVE_UP: AtomicU64 = AtomicU64::new(0);

/// libselinux logs every refused line to stderr; thousands a second would
/// bury the report of a divergence.
unsafe extern "C" fn quiet(_level: c_int, _format: *const c_char, _args: ...) -> c_int {
    0
}

/// A private directory for the files both engines load.
fn files() -> &'static (tempfile::TempDir, PathBuf) {
    static FILES: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    FILES.get_or_init(|| {
        Log::set_call_back(Some(quiet));
        let dir = tempfile::tempdir().expect("temporary directory");
        let fc = dir.path().join("file_contexts");
        (dir, fc)
    })
}

fn sibling(fc: &std::path::Path, suffix: &str) -> PathBuf {
    let mut name = fc.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&byte| byte == 0);
    let text = parts.next().unwrap_or_default();
    let keys: Vec<Vec<u8>> = parts.take(MAX_KEYS).map(<[u8]>::to_vec).collect();
    if keys.is_empty() {
        return;
    }
    let (specs, subs) = match text
        .windows(SUBS_MARKER.len())
        .position(|window| window == SUBS_MARKER)
    {
        Some(at) => (&text[..at], Some(&text[at + SUBS_MARKER.len()..])),
        None => (text, None),
    };
    let (_, fc) = files();
    std::fs::write(fc, specs).expect("write file_contexts");
    let subs_path = sibling(fc, ".subs");
    match subs {
        Some(subs) => std::fs::write(&subs_path, subs).expect("write .subs"),
        None => {
            let _ = std::fs::remove_file(&subs_path);
        }
    }
    let Ok(ours) = FileContexts::load(fc) else {
        return;
    };
    let Ok(theirs) = LibSelinux::open(fc) else {
        return;
    };
    let show = || {
        format!(
            "--- file_contexts\n{}\n--- .subs\n{}",
            String::from_utf8_lossy(specs),
            subs.map(String::from_utf8_lossy).unwrap_or_default()
        )
    };
    let mut pcre2 = None;
    for key in &keys {
        for kind in FileKind::ALL {
            let mine = our_answer(&ours, key, kind);
            let libselinux = theirs.lookup(key, kind);
            if agree(&mine, &libselinux, key) {
                continue;
            }
            let pcre2 = pcre2.get_or_insert_with(|| Pcre2Specs::read(fc));
            if !pcre2.agree(&mine, &libselinux, key, kind) {
                panic!(
                    "divergence: key {} mode {kind:?}: semanifest {mine:?}, libselinux {libselinux:?}\n{}",
                    escape(key),
                    show()
                );
            }
            let seen = GAVE_UP.fetch_add(1, Ordering::Relaxed) + 1;
            if seen.is_power_of_two() {
                eprintln!(
                    "PCRE2 gave up: {seen} lookups so far (last: {})",
                    escape(key)
                );
            }
        }
    }
    let (_, mismatched, examples) = directory_mismatches(&ours, &keys, 3);
    if mismatched > 0 {
        panic!(
            "directory lookups differ from plain ones:\n{}\n{}",
            examples.join("\n"),
            show()
        );
    }
});
