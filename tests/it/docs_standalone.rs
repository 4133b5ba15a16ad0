//! The repository stands alone: no file points a reader at a document
//! outside it, and every `docs/…` file the code and docs name exists.
//! Third-party data (`tests/data/`) is left as it came.

use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;

/// Text that sends a reader outside the repository: a design document or
/// notes kept beside it, an absolute workspace path, a tracker's numbering.
fn outside_references() -> Regex {
    Regex::new(concat!(
        r"DESIGN(\.md| ?§)",
        r"|(^|[^A-Za-z0-9_./-])notes/[A-Za-z0-9_-]+\.md",
        r"|\.\./shared/",
        r"|/work/",
        r"|(?i-u:\bissue [0-9]+)",
    ))
    .unwrap()
}

fn docs_mentions() -> Regex {
    Regex::new(r"(^|[^A-Za-z0-9_./-])(docs/[A-Za-z0-9_-]+\.(md|json))").unwrap()
}

/// Every text file of the repository, but build output, version control,
/// the Python tools scripts/install-deps installs and third-party test data.
fn repository_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let skip = [
        "target",
        ".git",
        ".venv",
        "tests/data",
        "testvm/cache",
        "fuzz/target",
        "fuzz/corpus",
        "fuzz/artifacts",
    ];
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap();
            if skip.iter().any(|s| relative == Path::new(s)) {
                continue;
            }
            let kind = fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .display()
        .to_string()
}

#[test]
fn no_file_points_outside_the_repository() {
    let pattern = outside_references();
    let this_file = Path::new(file!());
    let mut found = Vec::new();
    for path in repository_files() {
        if path.ends_with(this_file) {
            continue;
        }
        // The CI entry point may hand a fixture that lives beside the
        // checkout to the tests, through an environment variable they
        // read and say they skipped without; nothing else may.
        let ci_entry = path.ends_with(".ci/run");
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        for (index, line) in text.lines().enumerate() {
            if ci_entry && line.contains("fixtures/") {
                continue;
            }
            if let Some(hit) = pattern.find(line) {
                found.push(format!(
                    "{}:{}: {}",
                    relative(&path),
                    index + 1,
                    hit.as_str()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "references outside the repository:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_named_doc_exists() {
    let pattern = docs_mentions();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    let mut named = 0;
    for path in repository_files() {
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        for (index, line) in text.lines().enumerate() {
            for hit in pattern.captures_iter(line) {
                named += 1;
                let doc = &hit[2];
                if !root.join(doc).is_file() {
                    missing.push(format!("{}:{}: {doc}", relative(&path), index + 1));
                }
            }
        }
    }
    assert!(
        named > 10,
        "only {named} mentions of docs/ found: is the scan blind?"
    );
    assert!(
        missing.is_empty(),
        "named but missing:\n{}",
        missing.join("\n")
    );
}

/// Control: the scan finds each kind of reference it exists to forbid, and
/// lets the repository's own docs and look-alikes through.
#[test]
fn control_the_patterns_catch_what_they_forbid() {
    let pattern = outside_references();
    let design = ["DESIGN", " §2"].concat();
    for bad in [
        format!("//! The rules of {design}, applied"),
        ["see ", "notes/", "vm.md"].concat(),
        ["read ", "../shared/", "DESIGN.md"].concat(),
        ["`", "/work/", "team/x.md`"].concat(),
        ["/// ", "Issue 17", ".1: a bad document"].concat(),
    ] {
        assert!(pattern.is_match(&bad), "not caught: {bad}");
    }
    for good in [
        "described in `docs/file-contexts.md`",
        "/var/mnt/shared/x",
        "an issue with 3 parts",
        "docs/notes/x.md",
    ] {
        assert!(!pattern.is_match(good), "wrongly caught: {good}");
    }
    let docs = docs_mentions();
    assert_eq!(&docs.captures("see docs/vm.md.").unwrap()[2], "docs/vm.md");
    assert!(!docs.is_match("testvm/docs/x.md"));
}
