//! Parse and audit throughput of the Kubernetes YAML path on the test
//! corpus repeated N times as one multi-document stream.
//! `cargo run --release --example k8s_parse_throughput -- 200`

// An example prints its results.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

use k8s::{audit, parse_str, HostPathRules};

fn main() {
    let copies: usize = std::env::args()
        .nth(1)
        .map_or(Ok(200), |arg| arg.parse())
        .expect("N must be a number");
    let mut files: Vec<_> = std::fs::read_dir("tests/data/k8s/corpus")
        .expect("run from the repository root")
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    files.sort();
    let mut text = String::new();
    for file in files {
        text.push_str(&std::fs::read_to_string(file).expect("corpus file"));
        text.push_str("\n---\n");
    }
    let stream = text.repeat(copies);

    let started = Instant::now();
    let manifests = parse_str("stream.yaml", &stream);
    if let Some(error) = manifests.invalid.first() {
        eprintln!("{error}");
        std::process::exit(1);
    }
    let parsed = started.elapsed();
    let started = Instant::now();
    let findings = audit(&manifests, &HostPathRules::default());
    let audited = started.elapsed();
    println!(
        "{} bytes, {} workloads, {} findings: parse {parsed:?}, audit {audited:?}",
        stream.len(),
        manifests.workloads.len(),
        findings.len()
    );
}
