//! Differential test (a): the edge-case corpus in `tests/data/fcontext/corpus`
//! (one directory per rule of `docs/file-contexts.md`), every key × every file
//! mode, semanifest against the real libselinux 3.4. See the corpus README.

#[path = "common/fc_oracle.rs"]
mod fc_oracle;

use std::path::{Path, PathBuf};

use fc_oracle::{our_answer, Answer, LibSelinux};
use semanifest::fcontext::{FileContexts, FileKind};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fcontext/corpus")
}

/// Decodes one key of a `keys` file (see the corpus README).
fn decode_key(text: &str) -> Vec<u8> {
    if text == "<empty>" {
        return Vec::new();
    }
    let bytes = text.as_bytes();
    let mut key = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] != b'\\' || index + 1 == bytes.len() {
            key.push(bytes[index]);
            index += 1;
            continue;
        }
        index += 1;
        match bytes[index] {
            b'n' => key.push(b'\n'),
            b't' => key.push(b'\t'),
            b'r' => key.push(b'\r'),
            b'\\' => key.push(b'\\'),
            b'x' => {
                let hex = std::str::from_utf8(&bytes[index + 1..index + 3]).expect("hex digits");
                key.push(u8::from_str_radix(hex, 16).expect("hex escape"));
                index += 2;
            }
            // Any other backslash is literal (keys may contain them).
            other => {
                key.push(b'\\');
                key.push(other);
            }
        }
        index += 1;
    }
    key
}

struct Case {
    name: String,
    fc: PathBuf,
    keys: Vec<(Vec<u8>, Option<String>)>,
}

fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = std::fs::read_dir(corpus_dir())
        .expect("corpus directory")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.is_dir())
        .map(|dir| {
            let text = std::fs::read_to_string(dir.join("keys")).expect("keys file");
            let keys = text
                .lines()
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(|line| match line.split_once(" => ") {
                    Some((key, expected)) => (decode_key(key), Some(expected.to_owned())),
                    None => (decode_key(line), None),
                })
                .collect();
            Case {
                name: dir
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned(),
                fc: dir.join("file_contexts"),
                keys,
            }
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

#[test]
fn corpus_covers_every_rule() {
    let names: Vec<String> = cases().into_iter().map(|case| case.name).collect();
    for rule in [
        "line_format",
        "type_field",
        "none",
        "dollar_newline",
        "top_level_alternation",
        "exact_versus_regex",
        "last_match_wins",
        "file_order",
        "stem_filter",
        "normalisation",
        "substitutions",
        "regex_dialect",
    ] {
        assert!(names.iter().any(|name| name == rule), "corpus lacks {rule}");
    }
}

#[test]
fn every_key_and_mode_agrees_with_libselinux() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for case in cases() {
        let ours = FileContexts::load(&case.fc)
            .unwrap_or_else(|error| panic!("{}: semanifest cannot load: {error}", case.name));
        let theirs =
            LibSelinux::open(&case.fc).unwrap_or_else(|error| panic!("{}: {error}", case.name));
        for (key, expected) in &case.keys {
            for kind in FileKind::ALL {
                let libselinux = theirs.lookup(key, kind);
                let semanifest = our_answer(&ours, key, kind);
                compared += 1;
                let empty_key_alike = key.is_empty()
                    && semanifest == Answer::NoLabel
                    && libselinux == Answer::Error(Some(fc_oracle::EINVAL));
                if semanifest != libselinux && !empty_key_alike {
                    failures.push(format!(
                        "{}: {} ({kind:?}): semanifest {semanifest:?}, libselinux {libselinux:?}",
                        case.name,
                        fc_oracle::escape(key)
                    ));
                }
            }
            // The documented expectation keeps each case honest: it must
            // exercise its rule, not merely agree on "no label".
            if let Some(expected) = expected {
                let want = if expected == "<<none>>" {
                    Answer::NoLabel
                } else {
                    Answer::Label(expected.clone())
                };
                let got = theirs.lookup(key, FileKind::Any);
                if got != want {
                    failures.push(format!(
                        "{}: {}: corpus says {want:?}, libselinux says {got:?}",
                        case.name,
                        fc_oracle::escape(key)
                    ));
                }
            }
        }
        let keys: Vec<Vec<u8>> = case.keys.iter().map(|(key, _)| key.clone()).collect();
        let (_, _, differ) = fc_oracle::directory_mismatches(&ours, &keys, 5);
        failures.extend(
            differ
                .into_iter()
                .map(|line| format!("{}: {line}", case.name)),
        );
    }
    assert!(compared > 1000, "only {compared} comparisons");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The oracle itself can fail: a different file for libselinux than for us
/// must produce mismatches (control for the test above).
#[test]
fn oracle_detects_a_disagreement() {
    let case = cases()
        .into_iter()
        .find(|case| case.name == "last_match_wins")
        .expect("case");
    let skewed = FileContexts::from_text("skewed", b"/lm(/.*)? u:r:other_t:s0\n").expect("loads");
    let keys: Vec<Vec<u8>> = case.keys.iter().map(|(key, _)| key.clone()).collect();
    let (compared, mismatched, _) = fc_oracle::compare(&case.fc, &skewed, &keys, &FileKind::ALL, 5);
    assert!(compared > 0);
    assert_eq!(mismatched, compared, "every key is labelled differently");
}

/// Control for the per-directory check: directory lookups of one file
/// against plain lookups of another are reported, on every entry.
#[test]
fn directory_check_detects_a_disagreement() {
    let case = cases()
        .into_iter()
        .find(|case| case.name == "last_match_wins")
        .expect("case");
    let ours = FileContexts::load(&case.fc).expect("loads");
    let skewed = FileContexts::from_text("skewed", b"/lm(/.*)? u:r:other_t:s0\n").expect("loads");
    let keys: Vec<Vec<u8>> = case.keys.iter().map(|(key, _)| key.clone()).collect();
    let (compared, mismatched, examples) =
        fc_oracle::directory_mismatches_against(&skewed, &ours, &keys, 3);
    assert!(compared > 0);
    assert!(
        mismatched > 0 && examples.len() == 3,
        "{mismatched} of {compared}"
    );
    let (compared, mismatched, _) = fc_oracle::directory_mismatches(&ours, &keys, 3);
    assert!(compared > 0 && mismatched == 0);
}

/// The hook offered to the compiler's golden tests works on real files.
#[test]
fn whole_file_hook_runs_on_every_case() {
    for case in cases() {
        fc_oracle::assert_file_agrees_with_libselinux(&case.fc);
    }
}
