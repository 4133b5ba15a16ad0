//! Arbitrary bytes through the Kubernetes YAML path: parse, audit, render.
//! Run: `cargo +nightly fuzz run k8s_yaml -- -max_len=8192` from the
//! repository root, seeding with `tests/data/k8s/corpus` (see fuzz/README.md).

#![no_main]

use libfuzzer_sys::fuzz_target;
use semanifest::check::report::{render_human, render_json, render_sarif, HumanOptions};
use k8s::{audit, parse_str, HostPathRules, LayoutPathRule, NormalPath, RootRule};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(root) = NormalPath::parse("/var/mnt") else {
        return;
    };
    let Ok(etcd) = NormalPath::parse("/var/lib/etcd") else {
        return;
    };
    let rules = HostPathRules {
        roots: vec![RootRule {
            path: root,
            workload_writable: true,
            declared_at: None,
        }],
        protected: vec![LayoutPathRule {
            path: etcd,
            declared_at: None,
        }],
        workload_types: vec!["container_t".to_owned()],
        read_only: Vec::new(),
    };
    let manifests = parse_str("fuzz.yaml", text);
    let findings = audit(&manifests, &rules);
    let _ = render_human(&findings, HumanOptions::default());
    let _ = render_json(&findings);
    let _ = render_sarif(&findings);
});
