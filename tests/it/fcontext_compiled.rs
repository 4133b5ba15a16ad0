//! Compiled `.bin` siblings, built with the real `sefcontext_compile`
//! (selinux-utils): which file libselinux reads depends on modification
//! times; we read the same one, and refuse when the `.bin` libselinux would
//! prefer disagrees with the text (its choice then depends on its PCRE2
//! version).

use crate::support::fc_oracle;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use fc_oracle::{Answer, LibSelinux};
use selabel::{FileContexts, FileKind, LoadError};

const ORIGINAL: &str = "\
/c(/.*)?        u:r:c_tree_t:s0
/c/x    -d      u:r:c_x_dir_t:s0
/c/exact        u:r:c_exact_t:s0
/c/[0-9]+       u:r:c_digits_t:s0
";

const EDITED: &str = "\
/c(/.*)?        u:r:c_tree_edited_t:s0
/c/exact        u:r:c_exact_edited_t:s0
";

const KEYS: &[&[u8]] = &[
    b"/c",
    b"/c/x",
    b"/c/exact",
    b"/c/42",
    b"/c/x/y",
    b"/c/exact\n",
    b"/other",
];

fn compile(fc: &Path) {
    let status = Command::new("sefcontext_compile")
        .arg(fc)
        .status()
        .expect("sefcontext_compile runs (package selinux-utils, see .ci/packages)");
    assert!(status.success(), "sefcontext_compile {}", fc.display());
}

fn set_mtime(path: &Path, seconds_ago: u64) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
        .expect("set mtime");
}

fn bin_of(fc: &Path) -> PathBuf {
    let mut name = fc.as_os_str().to_owned();
    name.push(".bin");
    PathBuf::from(name)
}

fn assert_agree(fc: &Path, contexts: &FileContexts) {
    let oracle = LibSelinux::open(fc).expect("libselinux loads");
    for key in KEYS {
        for kind in FileKind::ALL {
            assert_eq!(
                fc_oracle::our_answer(contexts, key, kind),
                oracle.lookup(key, kind),
                "{} {kind:?}",
                fc_oracle::escape(key)
            );
        }
    }
}

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let fc = dir.path().join("file_contexts");
    std::fs::write(&fc, ORIGINAL).expect("write");
    (dir, fc)
}

#[test]
fn bin_compiled_from_the_text_is_read_and_agrees() {
    let (_dir, fc) = setup();
    compile(&fc);
    let contexts = FileContexts::load(&fc).expect("loads");
    assert_eq!(contexts.len(), 4);
    assert_agree(&fc, &contexts);
}

#[test]
fn bin_alone_is_read() {
    let (_dir, fc) = setup();
    compile(&fc);
    std::fs::remove_file(&fc).expect("remove text");
    let contexts = FileContexts::load(&fc).expect("loads the .bin");
    assert_eq!(
        contexts.lookup(b"/c/42", FileKind::Any),
        Some("u:r:c_digits_t:s0")
    );
    assert_agree(&fc, &contexts);
}

#[test]
fn text_newer_than_bin_wins_and_the_stale_bin_is_ignored() {
    let (_dir, fc) = setup();
    compile(&fc);
    std::fs::write(&fc, EDITED).expect("edit");
    set_mtime(&bin_of(&fc), 3600);
    let contexts = FileContexts::load(&fc).expect("loads the text");
    assert_eq!(
        contexts.lookup(b"/c/exact", FileKind::Any),
        Some("u:r:c_exact_edited_t:s0")
    );
    assert_agree(&fc, &contexts);
}

#[test]
fn newer_bin_that_disagrees_with_the_text_is_refused() {
    let (_dir, fc) = setup();
    compile(&fc);
    std::fs::write(&fc, EDITED).expect("edit");
    set_mtime(&fc, 3600);
    let error = FileContexts::load(&fc).expect_err("ambiguous");
    assert!(matches!(error, LoadError::StaleCompiled { .. }), "{error}");
    assert!(error.to_string().contains("sefcontext_compile"), "{error}");
    // libselinux (same PCRE2 version as the one that compiled it) reads the .bin:
    let oracle = LibSelinux::open(&fc).expect("libselinux loads");
    assert_eq!(
        oracle.lookup(b"/c/exact", FileKind::Any),
        Answer::Label("u:r:c_exact_t:s0".into())
    );
    // Control: recompiling resolves it.
    compile(&fc);
    let contexts = FileContexts::load(&fc).expect("loads");
    assert_agree(&fc, &contexts);
}

#[test]
fn equal_mtimes_prefer_the_bin() {
    let (_dir, fc) = setup();
    compile(&fc);
    let now = SystemTime::now();
    for path in [fc.clone(), bin_of(&fc)] {
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_modified(now).expect("mtime");
    }
    let contexts = FileContexts::load(&fc).expect("loads");
    assert_agree(&fc, &contexts);
}

#[test]
fn a_file_named_like_text_but_holding_compiled_data_is_read_as_compiled() {
    let (_dir, fc) = setup();
    compile(&fc);
    std::fs::rename(bin_of(&fc), &fc).expect("rename");
    let contexts = FileContexts::load(&fc).expect("loads by content");
    assert_eq!(contexts.len(), 4);
    assert_agree(&fc, &contexts);
}

#[test]
fn truncated_bin_is_refused() {
    let (_dir, fc) = setup();
    compile(&fc);
    let bin = bin_of(&fc);
    let bytes = std::fs::read(&bin).expect("read");
    std::fs::write(&bin, &bytes[..bytes.len() / 2]).expect("truncate");
    std::fs::remove_file(&fc).expect("remove text");
    let error = FileContexts::load(&fc).expect_err("refused");
    assert!(matches!(error, LoadError::Compiled { .. }), "{error}");
    assert!(LibSelinux::open(&fc).is_err(), "libselinux refuses it too");
}
