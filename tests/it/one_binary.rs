//! The integration tests are one binary (`autotests = false`, one
//! `[[test]]` at `tests/it/main.rs`), so cargo no longer finds test files by
//! itself: a file under `tests/` that no module declares would be compiled
//! by nobody and run by nobody, silently. Every `.rs` file under `tests/`
//! (but the data) must be a module of `tests/it/`, declared by its parent;
//! helpers are ordinary modules, never included by a path attribute, and
//! none is kept alive by allowing dead code.

use std::fs;
use std::path::{Path, PathBuf};

/// The problems of the test tree at `tests`: files outside `tests/it`,
/// modules their parent does not declare, path attributes and dead-code
/// allowances.
fn problems(tests: &Path) -> Vec<String> {
    let path_attribute = ["#[", "path"].concat();
    let dead_code = ["allow(", "dead_code)"].concat();
    let mut problems = Vec::new();
    for file in rust_files(tests) {
        let relative = file.strip_prefix(tests).unwrap();
        let shown = Path::new("tests").join(relative).display().to_string();
        let text = fs::read_to_string(&file).unwrap();
        if text.contains(&path_attribute) {
            problems.push(format!("{shown}: includes a file by path"));
        }
        if text.contains(&dead_code) {
            problems.push(format!("{shown}: allows dead code"));
        }
        let Ok(in_it) = relative.strip_prefix("it") else {
            problems.push(format!("{shown}: outside tests/it, never compiled"));
            continue;
        };
        if in_it == Path::new("main.rs") {
            continue;
        }
        let (parents, name) = declared_by(&file);
        let declaration = format!("mod {name};");
        if !parents.iter().any(|parent| {
            fs::read_to_string(parent).is_ok_and(|text| {
                text.lines().any(|line| {
                    let line = line.trim();
                    line.strip_prefix("pub ").unwrap_or(line) == declaration
                })
            })
        }) {
            problems.push(format!("{shown}: not declared (`{declaration}`)"));
        }
    }
    problems
}

/// The files that may declare the module of `file`, and its name.
fn declared_by(file: &Path) -> (Vec<PathBuf>, String) {
    let dir = file.parent().unwrap();
    let stem = file.file_stem().unwrap().to_str().unwrap();
    let (dir, name) = if stem == "mod" {
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        (dir.parent().unwrap(), name)
    } else {
        (dir, stem.to_owned())
    };
    let mut parents = vec![dir.join("main.rs"), dir.join("mod.rs")];
    if let Some(up) = dir.parent() {
        parents.push(up.join(format!("{}.rs", dir.file_name().unwrap().to_str().unwrap())));
    }
    (parents, name)
}

/// Every `.rs` file below `tests`, but the test data's.
fn rust_files(tests: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![tests.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path == tests.join("data") {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_test_file_is_a_declared_module_of_the_one_binary() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    assert!(
        rust_files(&tests).len() > 30,
        "too few test files: is the scan blind?"
    );
    let problems = problems(&tests);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Control: a test file beside `tests/it`, an undeclared module, a nested
/// one declared by the wrong parent, a path include and a dead-code
/// allowance are each found; the same tree without them is clean.
#[test]
fn control_each_kind_of_stray_file_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let tests = dir.path().join("tests");
    let write = |relative: &str, text: &str| {
        let path = tests.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write("it/main.rs", "mod a;\nmod node;\n");
    write("it/a.rs", "#[test]\nfn t() {}\n");
    write("it/node/mod.rs", "pub mod arena;\n");
    write("it/node/arena.rs", "");
    write("data/x/helper.rs", "not a module");
    assert_eq!(problems(&tests), Vec::<String>::new());

    write("old.rs", "");
    write("it/b.rs", "");
    write("it/node/prune.rs", "");
    write("it/main.rs", "mod a;\nmod node;\nmod prune;\n");
    write(
        "it/a.rs",
        &[
            "#[",
            "path = \"x.rs\"]\nmod x;\n#![",
            "allow(",
            "dead_code)]\n",
        ]
        .concat(),
    );
    assert_eq!(
        problems(&tests),
        [
            "tests/it/a.rs: includes a file by path",
            "tests/it/a.rs: allows dead code",
            "tests/it/b.rs: not declared (`mod b;`)",
            "tests/it/node/prune.rs: not declared (`mod prune;`)",
            "tests/old.rs: outside tests/it, never compiled",
        ]
    );
}
