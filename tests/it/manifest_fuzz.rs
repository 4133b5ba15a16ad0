//! The manifest parser on mutated manifests: never a panic, always either a
//! layout or diagnostics with positions inside the text. A control checks
//! that the mutations reach both outcomes, so the property is not vacuous.

use std::sync::atomic::{AtomicUsize, Ordering};

use layout::diag::Source;
use layout::manifest;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, String),
    DuplicateLine(usize),
    Dedent(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (
            any::<usize>(),
            prop::sample::select(vec![
                ":".to_owned(),
                "- ".to_owned(),
                "{".to_owned(),
                "\n  ".to_owned(),
                "..".to_owned(),
                "//".to_owned(),
                "&a".to_owned(),
                "*a".to_owned(),
                "\u{e9}".to_owned(),
                "\t".to_owned(),
                "protected: true\n".to_owned(),
                "yes".to_owned(),
                "\"".to_owned(),
            ])
        )
            .prop_map(|(i, s)| Mutation::Insert(i, s)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::Dedent),
    ]
}

fn apply(text: &str, mutations: &[Mutation]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for m in mutations {
        let len = bytes.len().max(1);
        match m {
            Mutation::Flip(i, b) => {
                if !bytes.is_empty() {
                    bytes[i % len] = *b;
                }
            }
            Mutation::Truncate(i) => bytes.truncate(i % len),
            Mutation::Insert(i, s) => {
                let at = i % (bytes.len() + 1);
                bytes.splice(at..at, s.bytes());
            }
            Mutation::DuplicateLine(i) | Mutation::Dedent(i) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
                if lines.is_empty() {
                    continue;
                }
                let at = i % lines.len();
                if matches!(m, Mutation::DuplicateLine(_)) {
                    let line = lines[at].clone();
                    lines.insert(at, line);
                } else {
                    lines[at] = lines[at].trim_start().to_owned();
                }
                bytes = lines.join("\n").into_bytes();
            }
        }
    }
    // Manifests are read as UTF-8 text; invalid bytes are refused earlier.
    String::from_utf8_lossy(&bytes).into_owned()
}

static ACCEPTED: AtomicUsize = AtomicUsize::new(0);
static REJECTED: AtomicUsize = AtomicUsize::new(0);

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn mutated_manifests_never_panic(mutations in prop::collection::vec(mutation(), 1..4)) {
        let text = apply(manifest::DEFAULT_LAYOUT, &mutations);
        let lines = text.lines().count() as u32 + 1;
        match manifest::parse(Source::new("fuzz.yaml", text.clone()), &policy::base_facts()) {
            Ok(parsed) => {
                ACCEPTED.fetch_add(1, Ordering::Relaxed);
                // Whatever parses also compiles to CIL.
                policy::generate(&parsed).unwrap();
            }
            Err(report) => {
                REJECTED.fetch_add(1, Ordering::Relaxed);
                prop_assert!(!report.diagnostics.is_empty());
                for d in &report.diagnostics {
                    prop_assert!(d.pos.line <= lines, "{d:?} outside the text");
                }
                let _ = report.to_string();
            }
        }
    }
}

#[test]
fn control_mutations_reach_both_outcomes() {
    let mut accepted = 0;
    let mut rejected = 0;
    for i in 0..400usize {
        let text = apply(
            manifest::DEFAULT_LAYOUT,
            &[Mutation::DuplicateLine(i * 7), Mutation::Dedent(i * 13)],
        );
        match manifest::parse(Source::new("c.yaml", text), &policy::base_facts()) {
            Ok(_) => accepted += 1,
            Err(_) => rejected += 1,
        }
    }
    assert!(
        accepted > 0 && rejected > 0,
        "accepted {accepted}, rejected {rejected}"
    );
}
