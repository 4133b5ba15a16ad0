//! Mutated Kubernetes YAML never panics the parser, the audit or the
//! renderers: byte flips, truncations, indentation shifts, line drops and
//! duplications of the corpus documents. Errors are fine; panics are not.
//! (A cargo-fuzz target over the same path lives in `fuzz/`.)

use std::fs;
use std::sync::OnceLock;

use k8s::{self, HostPathRules};
use proptest::prelude::*;
use semanifest::check::report::{self, HumanOptions};

fn corpus() -> &'static [String] {
    static CORPUS: OnceLock<Vec<String>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut texts = Vec::new();
        for dir in [
            "tests/data/k8s/corpus",
            "tests/data/k8s/errors",
            "tests/data/k8s/upstream",
        ] {
            let mut files: Vec<_> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            files.sort();
            texts.extend(files.iter().map(|f| fs::read_to_string(f).unwrap()));
        }
        texts
    })
}

fn rules() -> HostPathRules {
    super::k8s_corpus::rules_of(
        "spec:\n  domains:\n    pods: { type: container_t, workload: true }\n    etcd: { type: etcd_t }\n  paths:\n\
         \x20   - { path: /var/mnt, type: var_mnt_t, access: { pods: write }, hostPath: true }\n\
         \x20   - { path: /var/lib/etcd, type: etcd_var_t, access: { etcd: write }, protected: true }\n\
         \x20   - { path: /var/log, type: var_log_t, access: { pods: read } }\n",
    )
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipByte { at: usize, byte: u8 },
    Truncate { at: usize },
    Indent { line: usize, delta: i8 },
    DropLine { line: usize },
    DuplicateLine { line: usize },
    Insert { at: usize, text: &'static str },
}

const FRAGMENTS: [&str; 10] = [
    "{{",
    "- ",
    ": ",
    "\n---\n",
    "&a ",
    "*a",
    "<<: *a\n",
    "\t",
    "\"",
    "!!binary ",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::FlipByte { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), -4i8..=4).prop_map(|(line, delta)| Mutation::Indent { line, delta }),
        any::<usize>().prop_map(|line| Mutation::DropLine { line }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
        (any::<usize>(), 0..FRAGMENTS.len()).prop_map(|(at, i)| Mutation::Insert {
            at,
            text: FRAGMENTS[i]
        }),
    ]
}

fn apply(text: &str, mutation: &Mutation) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    match *mutation {
        Mutation::FlipByte { at, byte } => {
            if !bytes.is_empty() {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        Mutation::Truncate { at } => {
            bytes.truncate(at % (bytes.len() + 1));
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        Mutation::Insert { at, text: fragment } => {
            let at = at % (bytes.len() + 1);
            bytes.splice(at..at, fragment.bytes());
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        Mutation::Indent { line, delta } if !lines.is_empty() => {
            let line = line % lines.len();
            if delta >= 0 {
                lines[line].insert_str(0, &" ".repeat(delta as usize));
            } else {
                let strip = lines[line]
                    .chars()
                    .take((-delta) as usize)
                    .take_while(|c| *c == ' ')
                    .count();
                lines[line].drain(..strip);
            }
        }
        Mutation::DropLine { line } if !lines.is_empty() => {
            lines.remove(line % lines.len());
        }
        Mutation::DuplicateLine { line } if !lines.is_empty() => {
            let line = line % lines.len();
            lines.insert(line, lines[line].clone());
        }
        _ => {}
    }
    lines.join("\n")
}

fn exercise(text: &str) {
    let manifests = k8s::parse_str("fuzz.yaml", text);
    for error in &manifests.invalid {
        // The error names the file with a position inside the text.
        let message = error.to_string();
        assert!(message.starts_with("fuzz.yaml:"), "{message}");
        // YAML breaks lines at CR too (a flipped byte may make one).
        let lines = text.replace("\r\n", "\n").split(['\n', '\r']).count();
        let line = error.location().pos.line as usize;
        assert!(line >= 1 && line <= lines.max(1), "{message}");
    }
    let findings = k8s::audit(&manifests, &rules());
    let _ = report::render_human(&findings, HumanOptions::default());
    let _ = report::render_json(&findings);
    let _ = report::render_sarif(&findings);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn mutated_corpus_never_panics(
        file in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let corpus = corpus();
        let mut text = corpus[file.index(corpus.len())].clone();
        for mutation in &mutations {
            text = apply(&text, mutation);
        }
        exercise(&text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        exercise(&text);
    }
}

/// Control: the mutations reach both outcomes (read and rejected), so
/// the properties above exercise the audit and renderers as well as the
/// error path.
#[test]
fn mutations_reach_both_outcomes() {
    let (mut parsed, mut rejected) = (0, 0);
    for text in corpus() {
        for step in 0..20 {
            let mutated = apply(
                text,
                &Mutation::Truncate {
                    at: step * text.len() / 20,
                },
            );
            if k8s::parse_str("fuzz.yaml", &mutated).invalid.is_empty() {
                parsed += 1;
            } else {
                rejected += 1;
            }
            exercise(&mutated);
        }
    }
    assert!(
        parsed > 20 && rejected > 20,
        "parsed {parsed}, rejected {rejected}"
    );
}
