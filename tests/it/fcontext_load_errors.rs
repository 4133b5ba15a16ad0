//! Load errors: each bad file is refused by semanifest with `FILE:LINE: what`
//! and refused by libselinux 3.4 too; the same file without the bad line is
//! accepted by both (the control).

use crate::support::fc_oracle;

use std::path::{Path, PathBuf};

use fc_oracle::{Answer, LibSelinux};
use selabel::{FileContexts, FileKind, LoadError, SpecProblem};

const GOOD: &[u8] = b"# header\n/ok(/.*)? u:r:ok_t:s0\n";

fn write_fc(dir: &Path, bad_line: &[u8]) -> PathBuf {
    let path = dir.join("file_contexts");
    let mut text = GOOD.to_vec();
    text.extend_from_slice(bad_line);
    text.extend_from_slice(b"\n/after u:r:after_t:s0\n");
    std::fs::write(&path, text).expect("write");
    path
}

/// The load error of a file whose line 3 holds a regex semanifest refuses.
fn refused_regex_at_line_3(path: &Path) -> String {
    let message = FileContexts::load(path)
        .expect_err("semanifest refuses")
        .to_string();
    assert!(
        message.starts_with(&format!("{}:3: regex `", path.display())),
        "{message}"
    );
    message
}

fn control_loads(dir: &Path) {
    let path = dir.join("control");
    std::fs::write(&path, GOOD).expect("write");
    FileContexts::load(&path).expect("control loads with semanifest");
    LibSelinux::open(&path).expect("control loads with libselinux");
}

/// (bad line, what our error must say) — all on line 3.
const REFUSED_BY_BOTH: &[(&[u8], &str)] = &[
    (b"/lonely", "only one field"),
    (b"   /lonely-indented   ", "only one field"),
    (b"/caf\xc3\xa9 u:r:t:s0", "non-ASCII byte 0xC3"),
    (b"/a u:r:t\xff:s0", "non-ASCII byte 0xFF"),
    (b"/a -x u:r:t:s0", "invalid file type `-x`"),
    (b"/a --- u:r:t:s0", "invalid file type `---`"),
    (b"/a d u:r:t:s0", "invalid file type `d`"),
    (b"/a # not a comment", "invalid file type `#`"),
];

#[test]
fn bad_lines_are_refused_by_both_with_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    control_loads(dir.path());
    for (bad_line, says) in REFUSED_BY_BOTH {
        let path = write_fc(dir.path(), bad_line);
        let error = FileContexts::load(&path).expect_err("semanifest refuses");
        let message = error.to_string();
        let prefix = format!("{}:3: ", path.display());
        assert!(
            message.starts_with(&prefix),
            "{message:?} should start with {prefix:?}"
        );
        assert!(message.contains(says), "{message:?} should say {says:?}");
        assert!(
            LibSelinux::open(&path).is_err(),
            "libselinux should refuse the line {:?}",
            String::from_utf8_lossy(bad_line)
        );
    }
}

#[test]
fn errors_carry_their_kind() {
    let error = FileContexts::from_text("fc", b"\n\n/x -q t\n").expect_err("refused");
    match error {
        LoadError::Spec {
            file,
            line,
            problem,
        } => {
            assert_eq!(file, "fc");
            assert_eq!(line.to_string(), "3");
            assert_eq!(problem, SpecProblem::InvalidFileType("-q".to_owned()));
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// Regexes PCRE2 rejects: libselinux loads the file (it compiles regexes
/// lazily) but every lookup that reaches the spec fails; we refuse at load
/// time, naming the line.
#[test]
fn invalid_regexes_are_refused_at_load_where_libselinux_fails_at_lookup() {
    let dir = tempfile::tempdir().expect("tempdir");
    for bad_line in [
        &b"/ok/bad( u:r:t:s0"[..],
        b"/ok/[z-a] u:r:t:s0",
        b"/ok/a** u:r:t:s0",
    ] {
        let path = write_fc(dir.path(), bad_line);
        refused_regex_at_line_3(&path);
        let oracle = LibSelinux::open(&path).expect("libselinux loads lazily");
        // The failed compile surfaces as a lookup failure (with a stale
        // errno, often ENOENT): no label either way.
        assert!(
            !matches!(oracle.lookup(b"/ok/bad", FileKind::Any), Answer::Label(_)),
            "libselinux cannot use {:?} either",
            String::from_utf8_lossy(bad_line)
        );
        // Control: a key that never reaches that spec works in libselinux.
        assert_eq!(
            oracle.lookup(b"/after", FileKind::Any),
            Answer::Label("u:r:after_t:s0".into())
        );
    }
}

/// Valid PCRE2 whose meaning the Rust engine cannot reproduce: libselinux
/// uses them, we refuse (with the line) rather than risk another answer.
#[test]
fn pcre_only_constructs_are_refused_with_a_reason() {
    for (spec, reason) in [
        (&b"/a(?=b).*"[..], "lookaround"),
        (b"/(a)\\1", "backreference"),
        (b"/ax{", "counted repeat"),
        (b"/a{,3}", "counted repeat"),
        (b"/a$/b", "final newline"),
        (b"/a*+", "possessive"),
        (b"/[[:alpha:]]", "POSIX class"),
        (b"/a\\Qb\\E", "escape"),
    ] {
        let mut text = b"/x t\n".to_vec();
        text.extend_from_slice(spec);
        text.extend_from_slice(b" u:r:t:s0\n");
        let message = FileContexts::from_text("fc", &text)
            .expect_err("refused")
            .to_string();
        assert!(message.starts_with("fc:2: regex `"), "{message}");
        assert!(
            message.contains(reason),
            "{message:?} should mention {reason:?}"
        );
    }
}

/// The automata are built on first lookup, yet a spec they could not be
/// built for is still refused when the file loads, with its line: one
/// nested past the regex parser's limit, one whose counted repeats
/// multiply past any sane size. Control: the same shapes a little smaller
/// load and match.
#[test]
fn specs_too_large_for_an_automaton_are_refused_at_load_with_their_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nested = |depth: usize| format!("/ok/{}{}", "(b".repeat(depth), ")*".repeat(depth));
    for (bad, says) in [
        (nested(130), "nested too deeply"),
        (
            "/ok/((((a{1000}){1000}){1000}){1000})".to_owned(),
            "too large",
        ),
        ("/ok/((a{1000}){1000})".to_owned(), "too large"),
    ] {
        let path = write_fc(dir.path(), format!("{bad} u:r:t:s0").as_bytes());
        let message = refused_regex_at_line_3(&path);
        assert!(message.contains(says), "{message:?} should say {says:?}");
    }
    // Each small enough, but not all of them in one automaton: the line
    // named is that of the spec that tips it over.
    let many: Vec<String> = (0..150)
        .map(|index| format!("/ok/g{index}(a{{100}}){{100}} u:r:t:s0"))
        .collect();
    let path = write_fc(dir.path(), many.join("\n").as_bytes());
    let message = FileContexts::load(&path)
        .expect_err("semanifest refuses")
        .to_string();
    let line: usize = message
        .strip_prefix(&format!("{}:", path.display()))
        .and_then(|rest| rest.split(':').next())
        .and_then(|line| line.parse().ok())
        .unwrap_or_else(|| panic!("{message:?} names no line"));
    assert!((3 + 50..3 + 150).contains(&line), "{message}");
    assert!(
        message.contains(&format!("regex `/ok/g{}(", line - 3)),
        "{message}"
    );
    assert!(message.contains("together with"), "{message}");
    for (good, key) in [
        (nested(30), format!("/ok/{}", "b".repeat(30))),
        (
            "/ok/(a{100}){100}".to_owned(),
            format!("/ok/{}", "a".repeat(10_000)),
        ),
    ] {
        let path = write_fc(dir.path(), format!("{good} u:r:big_t:s0").as_bytes());
        let contexts = FileContexts::load(&path).expect("loads");
        assert_eq!(
            contexts.lookup(key.as_bytes(), FileKind::Any),
            Some("u:r:big_t:s0")
        );
        assert_eq!(
            contexts.lookup(b"/after", FileKind::Any),
            Some("u:r:after_t:s0")
        );
    }
}

#[test]
fn missing_base_file_is_an_io_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let error = FileContexts::load(&dir.path().join("nope")).expect_err("refused");
    assert!(matches!(error, LoadError::Io { .. }), "{error:?}");
    assert!(LibSelinux::open(&dir.path().join("nope")).is_err());
}

#[test]
fn broken_homedirs_or_local_fails_the_whole_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("file_contexts");
    std::fs::write(&path, GOOD).expect("write");
    for sibling in ["file_contexts.homedirs", "file_contexts.local"] {
        let sibling = dir.path().join(sibling);
        std::fs::write(&sibling, b"/h u:r:h_t:s0\n/bad\n").expect("write");
        let message = FileContexts::load(&path).expect_err("refused").to_string();
        assert!(
            message.starts_with(&format!("{}:2: ", sibling.display())),
            "{message}"
        );
        assert!(LibSelinux::open(&path).is_err());
        std::fs::remove_file(&sibling).expect("remove");
    }
    // Control: without them both load.
    FileContexts::load(&path).expect("loads");
    LibSelinux::open(&path).expect("loads");
}
