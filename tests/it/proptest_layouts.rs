//! Property: every valid layout compiles — secilc accepts base + module — and
//! generating twice gives the same bytes.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::fs;

use layout::diag::Source;
use layout::manifest;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct PathSpec {
    components: Vec<String>,
    protected: bool,
    grants: Vec<(usize, &'static str)>,
}

const LEVELS: [&str; 6] = ["search", "read", "append", "write", "exec", "[read, exec]"];

fn component() -> impl Strategy<Value = String> {
    // Includes regex metacharacters that must be escaped in file_contexts.
    "[a-z][a-z0-9._+-]{0,7}".prop_map(|s| s)
}

fn path_spec(domains: usize) -> impl Strategy<Value = PathSpec> {
    (
        prop::collection::vec(component(), 1..4),
        any::<bool>(),
        prop::collection::vec((0..domains, 0..LEVELS.len()), 0..3),
    )
        .prop_map(|(components, protected, grants)| PathSpec {
            components,
            protected,
            grants: grants.into_iter().map(|(d, l)| (d, LEVELS[l])).collect(),
        })
}

/// Renders a layout that obeys every rule: workloads (domain 0) never on
/// protected paths, hostPath roots only where nothing protected lies below.
fn render(domains: usize, paths: &[PathSpec], hostpath_seed: u8) -> String {
    let mut yaml = String::from(
        "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata:\n  name: prop\nspec:\n  domains:\n",
    );
    for d in 0..domains {
        let extra = if d == 0 { ", workload: true" } else { "" };
        writeln!(yaml, "    d{d}: {{ type: d{d}_t{extra} }}").unwrap();
    }
    writeln!(yaml, "    sys: {{ type: init_t, trusted: true }}").unwrap();
    yaml.push_str("  paths:\n");
    let mut seen = BTreeSet::new();
    let rendered: Vec<(String, &PathSpec)> = paths
        .iter()
        .map(|p| (format!("/var/{}", p.components.join("/")), p))
        .filter(|(path, _)| seen.insert(path.clone()))
        .collect();
    let protected: Vec<&String> = rendered
        .iter()
        .filter(|(_, p)| p.protected)
        .map(|(path, _)| path)
        .collect();
    for (i, (path, spec)) in rendered.iter().enumerate() {
        writeln!(yaml, "    - path: {path}\n      type: p{i}_t").unwrap();
        let grants: Vec<String> = spec
            .grants
            .iter()
            .filter(|(d, _)| !(spec.protected && *d == 0))
            .map(|(d, level)| format!("d{d}: {level}"))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        // One grant per domain: keep the first for each.
        let mut by_domain = BTreeSet::new();
        let grants: Vec<String> = grants
            .into_iter()
            .filter(|g| by_domain.insert(g.split(':').next().unwrap().to_owned()))
            .collect();
        if !grants.is_empty() {
            writeln!(yaml, "      access: {{ {} }}", grants.join(", ")).unwrap();
        }
        if spec.protected {
            yaml.push_str("      protected: true\n");
        } else {
            let covers_protected = protected.iter().any(|p| layout::model::is_within(p, path));
            let under_root = false;
            if !covers_protected && !under_root && (i as u8 ^ hostpath_seed).is_multiple_of(3) {
                yaml.push_str("      hostPath: true\n      removable: true\n");
            }
        }
    }
    yaml
}

fn compile_with_secilc(module_cil: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.cil");
    let module = dir.path().join("prop.cil");
    fs::write(&base, policy::base_cil()).unwrap();
    fs::write(&module, module_cil).unwrap();
    let output = crate::support::secilc_files(dir.path(), &[&base, &module]);
    if output.status.success() {
        Ok(())
    } else {
        Err(crate::support::stderr(&output))
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_valid_layouts_compile_deterministically(
        (domains, paths) in (1usize..4).prop_flat_map(|d| (Just(d), prop::collection::vec(path_spec(d), 1..8))),
        seed in any::<u8>(),
    ) {
        let yaml = render(domains, &paths, seed);
        let parsed = manifest::parse(Source::new("prop.yaml", yaml.clone()), &policy::base_facts())
            .map_err(|report| TestCaseError::fail(format!("generator made an invalid layout:\n{yaml}\n{report}")))?;
        let first = policy::generate(&parsed).unwrap();
        let second = policy::generate(&parsed).unwrap();
        prop_assert_eq!(&first, &second);
        if let Err(message) = compile_with_secilc(&first.module_cil) {
            return Err(TestCaseError::fail(format!("secilc rejected:\n{yaml}\n{message}")));
        }
    }
}

fn parse(yaml: &str) -> Result<manifest::Parsed, TestCaseError> {
    manifest::parse(
        Source::new("prop.yaml", yaml.to_owned()),
        &policy::base_facts(),
    )
    .map_err(|report| {
        TestCaseError::fail(format!(
            "generator made an invalid layout:\n{yaml}\n{report}"
        ))
    })
}

proptest! {
    // Each case compiles two policies and runs sediff (~0.7 s); 200 cases
    // passed once (138 s) when this was written.
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// `semanifest diff` between random valid layouts and random edits of
    /// them: a layout against itself changes nothing, and every allow rule
    /// sediff finds changed between the compiled policies is explained by a
    /// reported change.
    #[test]
    fn sediff_finds_nothing_the_diff_does_not_explain(
        (domains, paths, edits) in (1usize..4).prop_flat_map(|d| (
            Just(d),
            prop::collection::vec(path_spec(d), 1..7),
            prop::collection::vec((0usize..8, path_spec(d)), 1..4),
        )),
        seed in any::<u8>(),
        seed2 in any::<u8>(),
    ) {
        let mut edited = paths.clone();
        for (index, spec) in edits {
            if index < edited.len() {
                edited[index] = spec;
            } else {
                edited.push(spec);
            }
        }
        let old = parse(&render(domains, &paths, seed))?;
        let new = parse(&render(domains, &edited, seed2))?;
        let same = semanifest::diff::diff(&old, &old, &Default::default()).unwrap();
        prop_assert!(same.changes.is_empty() && same.labels.is_empty() && !same.security_relevant);
        let result = semanifest::diff::diff(&old, &new, &Default::default()).unwrap();
        let check = semanifest::diff::sediff::cross_check(&old, &new, &result).unwrap();
        prop_assert!(
            check.unexplained.is_empty(),
            "unexplained:\n{:#?}\nold:\n{}\nnew:\n{}\nchanges:\n{:#?}",
            check.unexplained, old.source.text, new.source.text, result.changes
        );
    }
}
