//! Characterisation tests: every layout under tests/data/layouts (and the
//! embedded default) compiles to the committed CIL and file_contexts byte for
//! byte, and the real secilc accepts it and writes the same file_contexts.
//!
//! After an intended change to the output, regenerate the goldens with
//! `SEMANIFEST_BLESS=1 cargo test --test it -- golden:: --skip diff_golden` and review the diff.

use crate::support::fc_oracle;

use std::fs;
use std::path::PathBuf;

use layout::diag::Source;
use layout::manifest::{self, Parsed};

fn layouts() -> Vec<(String, Parsed)> {
    let base = policy::base_facts();
    let mut layouts = vec![(
        "structured-var".to_owned(),
        manifest::default_layout(&base).expect("the default layout is valid"),
    )];
    let mut files: Vec<PathBuf> = fs::read_dir(crate::support::data("layouts"))
        .expect("tests/data/layouts")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(&path).unwrap();
        let source = Source::new(format!("tests/data/layouts/{name}.yaml"), text);
        let parsed = manifest::parse(source, &base).unwrap_or_else(|report| panic!("{report}"));
        layouts.push((name, parsed));
    }
    assert!(
        layouts.len() >= 4,
        "the default layout and at least three others"
    );
    layouts
}

fn check_golden(path: PathBuf, actual: &str) {
    if std::env::var_os("SEMANIFEST_BLESS").is_some() {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, actual).unwrap();
        return;
    }
    let expected = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run SEMANIFEST_BLESS=1 cargo test --test it -- golden:: --skip diff_golden",
            path.display()
        )
    });
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b);
        panic!(
            "{} differs from the generated output (first differing line: {:?}); \
             if intended, run SEMANIFEST_BLESS=1 cargo test --test it -- golden:: --skip diff_golden",
            path.display(),
            first.map(|i| i + 1)
        );
    }
}

#[test]
fn generated_cil_and_file_contexts_match_goldens() {
    for (name, parsed) in layouts() {
        let generated = policy::generate(&parsed).unwrap();
        let dir = crate::support::data("golden").join(&name);
        check_golden(
            dir.join(format!("{}.cil", generated.module_name)),
            &generated.module_cil,
        );
        check_golden(dir.join("file_contexts"), &generated.file_contexts);
    }
}

#[test]
fn output_is_deterministic() {
    for (_, parsed) in layouts() {
        assert_eq!(
            policy::generate(&parsed).unwrap(),
            policy::generate(&parsed).unwrap()
        );
    }
}

#[test]
fn every_golden_compiles_with_secilc_and_file_contexts_agree() {
    for (name, parsed) in layouts() {
        let generated = policy::generate(&parsed).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base.cil");
        let module = dir.path().join(format!("{}.cil", generated.module_name));
        fs::write(&base, policy::base_cil()).unwrap();
        fs::write(&module, &generated.module_cil).unwrap();
        let output = crate::support::secilc_files(dir.path(), &[&base, &module]);
        assert!(
            output.status.success(),
            "{name}: secilc failed:\n{}",
            crate::support::stderr(&output)
        );
        let written = fs::read_to_string(dir.path().join("file_contexts")).unwrap();
        assert_eq!(
            written, generated.file_contexts,
            "{name}: secilc wrote a different file_contexts"
        );
        // Our lookup engine answers like libselinux on what secilc wrote.
        let mut keys = fc_oracle::keys_for(&written);
        for rule in &parsed.layout.paths {
            for suffix in ["", "/", "/x", "/x/y.z", "//a", "/.", "/\n"] {
                keys.push(format!("{}{suffix}", rule.path).into_bytes());
            }
        }
        fc_oracle::assert_agrees_with_libselinux(&dir.path().join("file_contexts"), &keys);
    }
}
