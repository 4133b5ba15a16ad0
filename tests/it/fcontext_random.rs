//! Randomised differential test: many small file_contexts built from random
//! regex pieces (every construct the translator accepts, and its corners),
//! random types, `<<none>>`, `.local` and `.subs`, against libselinux 3.4 on
//! random keys, for every file mode. Deterministic (fixed seeds); set
//! `FCONTEXT_RANDOM_FILES=N` for a longer run.

use crate::support::fc_oracle;
use crate::support::path_gen;

use path_gen::Rng;
use selabel::{FileContexts, FileKind};

/// Pieces a spec is assembled from. Each is valid wherever it is placed,
/// except the anchors, which only go last.
const PIECES: &[&str] = &[
    "/a",
    "/b",
    "/ab",
    "/a/b",
    "/x\\.y",
    "/1",
    "/a-b",
    "(/.*)?",
    "/.*",
    ".*",
    "[^/]*",
    "[^/]+",
    "[a-c]",
    "\\d",
    "\\d+",
    "\\w+",
    "\\W",
    "\\s",
    "(a|b)",
    "(/a|/b)",
    "b?",
    "a+",
    "a{1,2}",
    "x{2}",
    "(/[^/]*)?",
    "\\.",
    "[]a]",
    "[a-]",
    "[^a]",
    "\\x2e",
    "(?:ab)*",
    "(|/a)",
    "\\bx",
    "\\B",
    ".",
    "[.]",
    "[\\d.]",
    "\\/",
    "\\-",
    "\\_",
    "\\n",
    "\\t",
    "(/.*)*",
    "((a|b)c)?",
];
const ENDINGS: &[&str] = &["", "", "", "", "$", "\\Z", "\\z", "(/x$)?"];
const SUBSTITUTIONS: &[&str] = &[
    "/ab /a\n",
    "/x /\n",
    "/b /a/b\n",
    "/a/b /x\n",
    "/a /b\n",
    "/1 /a\n",
    "/b /x\n",
    "/ac /ab/\n",
    "# comment\n",
    "/lonely\n",
];
const TYPES: &[&str] = &["", "", "", "", "--", "-d", "-l", "-c", "-b", "-p", "-s"];
const KEY_PIECES: &[&[u8]] = &[
    b"/", b"/", b"/", b"a", b"b", b"ab", b"x.y", b"x", b"1", b"12", b"c", b"_", b"-", b".", b"..",
    b"\n", b"//", b"\xff", b"\x80a", b" ", b"\t", b"$", b"\\", b"xx", b"a-b", b"bc", b"ac",
];

fn random_spec(rng: &mut Rng) -> String {
    let mut spec = String::new();
    if rng.chance(5) {
        spec.push('^');
    }
    for _ in 0..1 + rng.below(4) {
        let piece: &str = rng.pick(PIECES);
        spec.push_str(piece);
    }
    if rng.chance(10) {
        spec.push('|');
        for _ in 0..1 + rng.below(2) {
            let piece: &str = rng.pick(PIECES);
            spec.push_str(piece);
        }
    }
    let ending: &str = rng.pick(ENDINGS);
    spec.push_str(ending);
    if rng.chance(3) {
        // Relative spec.
        spec = spec.trim_start_matches('/').to_owned();
        if spec.is_empty() {
            spec.push('a');
        }
    }
    spec
}

fn random_fc(rng: &mut Rng, lines: usize) -> String {
    let mut text = String::new();
    for line in 0..lines {
        let context = if rng.chance(10) {
            "<<none>>".to_owned()
        } else {
            format!("u:r:t{line}_t:s0")
        };
        let kind: &str = rng.pick(TYPES);
        text.push_str(&format!("{} {kind} {context}\n", random_spec(rng)));
    }
    text
}

fn random_key(rng: &mut Rng) -> Vec<u8> {
    let mut key = Vec::new();
    if !rng.chance(5) {
        key.push(b'/');
    }
    for _ in 0..rng.below(7) {
        let piece: &[u8] = rng.pick(KEY_PIECES);
        key.extend_from_slice(piece);
    }
    key
}

#[test]
fn random_files_agree_with_libselinux() {
    let files = std::env::var("FCONTEXT_RANDOM_FILES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(150usize);
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = std::env::var("FCONTEXT_RANDOM_SEED")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(0x00F1_1E5E_u64);
    let mut rng = Rng::new(seed);
    let mut compared = 0;
    let (mut asked, mut labelled) = (0usize, 0usize);
    let mut failures = Vec::new();
    for file in 0..files {
        let fc = dir.path().join(format!("fc{file}"));
        let lines = 2 + rng.below(12);
        std::fs::write(&fc, random_fc(&mut rng, lines)).expect("write");
        let mut local = fc.as_os_str().to_owned();
        local.push(".local");
        let mut subs = fc.as_os_str().to_owned();
        subs.push(".subs");
        if rng.chance(30) {
            let lines = 1 + rng.below(3);
            std::fs::write(&local, random_fc(&mut rng, lines)).expect("write");
        }
        let mut subs_dist = fc.as_os_str().to_owned();
        subs_dist.push(".subs_dist");
        for path in [&subs, &subs_dist] {
            if rng.chance(25) {
                let lines: String = (0..1 + rng.below(4))
                    .map(|_| rng.pick(SUBSTITUTIONS))
                    .collect();
                std::fs::write(path, lines).expect("write");
            }
        }
        let text = std::fs::read_to_string(&fc).expect("read");
        let ours = FileContexts::load(&fc)
            .unwrap_or_else(|error| panic!("semanifest refuses a valid file: {error}\n{text}"));
        let mut keys: Vec<Vec<u8>> = (0..150).map(|_| random_key(&mut rng)).collect();
        keys.extend(fc_oracle::keys_for(&text));
        asked += keys.len();
        labelled += keys
            .iter()
            .filter(|key| ours.lookup(key, FileKind::Any).is_some())
            .count();
        let (count, mismatched, examples) =
            fc_oracle::compare(&fc, &ours, &keys, &FileKind::ALL, 3);
        compared += count;
        let (_, _, differ) = fc_oracle::directory_mismatches(&ours, &keys, 3);
        if !differ.is_empty() {
            failures.push(format!("{}:\n{text}{}", fc.display(), differ.join("\n")));
        }
        if mismatched > 0 {
            let listing: Vec<String> = examples.iter().map(ToString::to_string).collect();
            failures.push(format!("{}:\n{text}{}", fc.display(), listing.join("\n")));
        }
        for path in [&local, &subs, &subs_dist] {
            let _ = std::fs::remove_file(path);
        }
    }
    eprintln!("{compared} lookups over {files} random files (seed {seed}), {labelled}/{asked} keys labelled");
    // Control: the random files do label a good share of the keys.
    assert!(
        labelled * 5 > asked,
        "only {labelled} of {asked} keys labelled"
    );
    assert!(
        failures.is_empty(),
        "{} files differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Arbitrary bytes never make loading or looking up panic.
    #[test]
    fn arbitrary_input_never_panics(
        text in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        key in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..100),
    ) {
        if let Ok(contexts) = FileContexts::from_text("fuzz", &text) {
            for kind in FileKind::ALL {
                let _ = contexts.lookup(&key, kind);
            }
        }
    }

    /// Spec-shaped arbitrary text (metacharacters, slashes, type fields) too.
    #[test]
    fn spec_shaped_input_never_panics(
        lines in proptest::collection::vec("[/a-c.*+?()|\\\\\\[\\]^${},0-9dswxzZAb-]{1,16}( -[-dlcbps])? u:r:t:s0", 1..8),
        key in "[/a-c.\n]{0,12}",
    ) {
        if let Ok(contexts) = FileContexts::from_text("fuzz", lines.join("\n").as_bytes()) {
            for kind in FileKind::ALL {
                let _ = contexts.lookup(key.as_bytes(), kind);
            }
        }
    }
}

/// A directory with hundreds of live regex specs (more than the per-spec
/// stepping takes on): its groups are run whole, still exactly.
#[test]
fn many_specs_under_one_directory_agree_with_libselinux() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fc = dir.path().join("file_contexts");
    // The generic spec first: later specs win.
    let mut text = String::from("/big(/.*)? u:r:big_t:s0\n");
    for i in 0..400 {
        text.push_str(&format!("/big/d[0-9]+x{i}(/.*)? u:r:big{i}_t:s0\n"));
        if i % 7 == 0 {
            text.push_str(&format!("/big/[a-z]+{i}/deep(/.*)? -d u:r:deep{i}_t:s0\n"));
        }
    }
    text.push_str("/big/d1x3 u:r:exact_t:s0\n");
    std::fs::write(&fc, &text).expect("write");
    let mut keys = Vec::new();
    for i in (0..400).step_by(3) {
        keys.push(format!("/big/d{i}x{i}").into_bytes());
        keys.push(format!("/big/d7x{i}/sub/file").into_bytes());
        keys.push(format!("/big/abc{i}/deep/x").into_bytes());
        keys.push(format!("/big/d{i}y/other").into_bytes());
    }
    keys.push(b"/big/d1x3".to_vec());
    fc_oracle::assert_agrees_with_libselinux(&fc, &keys);
    // Control: the many specs decide, not the generic one.
    let contexts = FileContexts::load(&fc).expect("loads");
    assert_eq!(
        contexts.lookup(b"/big/d9x300", FileKind::File),
        Some("u:r:big300_t:s0")
    );
    let below_big = contexts.directory(b"/big");
    assert_eq!(
        below_big.lookup(b"d9x300", FileKind::File),
        Some("u:r:big300_t:s0")
    );
}

/// A spec whose own DFA would be too large (`(a|b)*a(a|b){20}` needs a
/// million states) among specs that share its directory: entries that
/// pass its head run its group's automaton, here and in subdirectories,
/// still exactly; the specs beside it keep being stepped.
#[test]
fn spec_without_a_dfa_among_stepped_ones_agrees_with_libselinux() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fc = dir.path().join("file_contexts");
    let text = "/d(/.*)? u:r:d_t:s0\n\
                /d/big(a|b)*a(a|b){20}(/.*)? u:r:big_t:s0\n\
                /d/bigger/.* u:r:bigger_t:s0\n\
                /d/other[0-9]+(/.*)? u:r:other_t:s0\n\
                /d/b[a-z]*/x -- u:r:x_t:s0\n";
    std::fs::write(&fc, text).expect("write");
    let twenty_b = "b".repeat(20);
    let mut keys: Vec<Vec<u8>> = [
        format!("/d/biga{twenty_b}"),
        format!("/d/bigba{twenty_b}"),
        format!("/d/biga{}", "b".repeat(19)),
        format!("/d/biga{twenty_b}/sub/file"),
        format!("/d/bigab{twenty_b}/x"),
        "/d/bigger/x".to_owned(),
        "/d/bigger/y/z".to_owned(),
        "/d/bigaaa/x".to_owned(),
        "/d/bi".to_owned(),
        "/d/other12/x".to_owned(),
        "/d/otherx".to_owned(),
        "/d/bx/x".to_owned(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect();
    keys.push(b"/d/big".to_vec());
    fc_oracle::assert_agrees_with_libselinux(&fc, &keys);
    // Control: the spec without a DFA does decide these.
    let contexts = FileContexts::load(&fc).expect("loads");
    let below_d = contexts.directory(b"/d");
    let name = format!("biga{twenty_b}");
    assert_eq!(
        below_d.lookup(name.as_bytes(), FileKind::File),
        Some("u:r:big_t:s0")
    );
    assert_eq!(
        below_d
            .subdirectory(name.as_bytes())
            .lookup(b"sub", FileKind::Dir),
        Some("u:r:big_t:s0")
    );
    assert_eq!(below_d.lookup(b"bigab", FileKind::File), Some("u:r:d_t:s0"));
}
