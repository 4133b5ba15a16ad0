//! Bad input and hostile conditions: malformed file_contexts, unreadable
//! directories, vanishing files, read-only and xattr-less filesystems.
//! Each case asserts the exit code, a message naming the culprit, no panic,
//! and that nothing but labels changed; each has a control run that shows
//! the assertion can fail.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::support::relabel::*;
use relabel::{self, Collector, LabelLookup, RelabelOptions};
use selabel::{FileContexts, FileKind};

const SPECS: &str = "\
/srv(/.*)?\tsystem_u:object_r:var_t:s0
/srv/log(/.*)?\tsystem_u:object_r:var_log_t:s0
";
const VAR_T: &[u8] = b"system_u:object_r:var_t:s0\0";
const VAR_LOG_T: &[u8] = b"system_u:object_r:var_log_t:s0\0";

struct Fixture {
    scratch: tempfile::TempDir,
    fc: PathBuf,
}

impl Fixture {
    fn new(specs: &str) -> Self {
        require_privileges();
        let scratch = scratch();
        let fc = scratch.path().join("file_contexts");
        write_file(&fc, specs);
        Self { scratch, fc }
    }

    /// Root directory for `--root`; the tree goes in `root()/srv`.
    fn root(&self) -> PathBuf {
        self.scratch.path().join("image")
    }

    fn srv(&self) -> PathBuf {
        self.root().join("srv")
    }

    fn small_tree(&self) -> TreeBuilder {
        let tree = TreeBuilder::new(&self.srv());
        tree.file("a", "a")
            .file("log/b", "b")
            .dir("log/sub")
            .file("log/sub/c", "c");
        tree
    }

    fn relabel(&self, extra: &[&str]) -> std::process::Output {
        relabel(&self.fc, Some(&self.root()), extra, &[&self.srv()])
    }
}

fn code(output: &std::process::Output) -> Option<i32> {
    output.status.code()
}

fn assert_no_panic(output: &std::process::Output) {
    let stderr = stderr_of(output);
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    assert!(
        output.status.code().is_some(),
        "killed by a signal: {:?}",
        output.status
    );
}

#[test]
fn malformed_file_contexts_lines_are_reported_with_file_and_line() {
    let cases: &[(&str, &str)] = &[
        (
            "one token",
            "/srv(/.*)?\tsystem_u:object_r:var_t:s0\n/srv/bad\n",
        ),
        (
            "bad type field",
            "/srv(/.*)?\tsystem_u:object_r:var_t:s0\n/srv/x\t-z\tu:r:t:s0\n",
        ),
        (
            "non-ASCII",
            "/srv(/.*)?\tsystem_u:object_r:var_t:s0\n/srv/caf\u{e9}\tu:r:t:s0\n",
        ),
        (
            "comment after spec",
            "/srv(/.*)?\tsystem_u:object_r:var_t:s0\n/srv/x\tu:r:t:s0 # no\n",
        ),
    ];
    for (what, specs) in cases {
        let fixture = Fixture::new(specs);
        fixture.small_tree();
        let before = dump(&fixture.srv());
        let output = fixture.relabel(&[]);
        assert_no_panic(&output);
        assert_eq!(code(&output), Some(2), "{what}: {}", stderr_of(&output));
        let stderr = stderr_of(&output);
        let location = format!("{}:2", fixture.fc.display());
        assert!(
            stderr.contains(&location),
            "{what}: want {location} in {stderr}"
        );
        assert_eq!(dump(&fixture.srv()), before, "{what}: nothing may change");
    }
    // Control: the valid first line alone loads and labels.
    let fixture = Fixture::new(SPECS);
    fixture.small_tree();
    let output = fixture.relabel(&[]);
    assert_eq!(code(&output), Some(0), "{}", stderr_of(&output));
    assert_eq!(label_of(&fixture.srv().join("a")).as_deref(), Some(VAR_T));
}

#[test]
fn usage_errors_exit_2() {
    let fixture = Fixture::new(SPECS);
    fixture.small_tree();
    let missing_fc = fixture.scratch.path().join("no-such-file_contexts");
    let outside = fixture.scratch.path().join("outside");
    std::fs::create_dir(&outside).expect("outside dir");
    let cases: Vec<(&str, Command)> = vec![
        ("missing FC", {
            let mut c = semanifest();
            c.arg("relabel")
                .arg("--file-contexts")
                .arg(&missing_fc)
                .arg(fixture.srv());
            c
        }),
        ("missing operand", {
            let mut c = semanifest();
            c.arg("relabel")
                .arg("--file-contexts")
                .arg(&fixture.fc)
                .arg(fixture.srv().join("nope"));
            c
        }),
        ("operand outside --root", {
            let mut c = semanifest();
            c.arg("relabel").arg("--file-contexts").arg(&fixture.fc);
            c.arg("--root").arg(fixture.root()).arg(&outside);
            c
        }),
        ("no label source", {
            let mut c = semanifest();
            c.arg("relabel").arg(fixture.srv());
            c
        }),
        ("--check with --dry-run", {
            let mut c = semanifest();
            c.arg("relabel").arg("--file-contexts").arg(&fixture.fc);
            c.args(["--check", "--dry-run"]).arg(fixture.srv());
            c
        }),
        ("--root naming a file", {
            let mut c = semanifest();
            c.arg("relabel").arg("--file-contexts").arg(&fixture.fc);
            c.arg("--root").arg(&fixture.fc).arg(fixture.srv());
            c
        }),
        ("--layout given a file_contexts instead of a manifest", {
            let mut c = semanifest();
            c.arg("relabel")
                .arg("--layout")
                .arg(&fixture.fc)
                .arg(fixture.srv());
            c
        }),
    ];
    let before = dump(&fixture.srv());
    for (what, mut command) in cases {
        let output = run(&mut command);
        assert_no_panic(&output);
        assert_eq!(code(&output), Some(2), "{what}: {}", stderr_of(&output));
        assert!(!stderr_of(&output).is_empty(), "{what}: needs a message");
    }
    assert_eq!(dump(&fixture.srv()), before);
}

#[test]
fn unreadable_directory_is_labelled_reported_and_skipped() {
    let fixture = Fixture::new(SPECS);
    fixture
        .small_tree()
        .dir("log/locked")
        .file("log/locked/inside", "x")
        .chmod("log/locked", 0o000);
    let before = metadata(&dump(&fixture.srv()));

    // Root without the DAC override capabilities cannot list a 000
    // directory; it keeps CAP_SYS_ADMIN, which security.* xattrs need.
    let run_without_dac = |extra: &[&str]| {
        let mut command = Command::new("setpriv");
        command.args(["--bounding-set", "-dac_override,-dac_read_search", "--"]);
        command.arg(env!("CARGO_BIN_EXE_semanifest")).arg("relabel");
        command
            .arg("--file-contexts")
            .arg(&fixture.fc)
            .arg("--root")
            .arg(fixture.root());
        command.args(extra).arg(fixture.srv());
        run(&mut command)
    };
    let output = run_without_dac(&[]);
    assert_no_panic(&output);
    assert_eq!(code(&output), Some(1), "{}", stderr_of(&output));
    let locked = fixture.srv().join("log/locked");
    assert!(
        stderr_of(&output).contains(&format!("cannot read directory {}", locked.display())),
        "{}",
        stderr_of(&output)
    );
    // The directory itself is labelled; its contents cannot be reached.
    assert_eq!(label_of(&locked).as_deref(), Some(VAR_LOG_T));
    assert_eq!(label_of(&locked.join("inside")), None);
    // Everything else was labelled.
    assert_eq!(
        label_of(&fixture.srv().join("log/sub/c")).as_deref(),
        Some(VAR_LOG_T)
    );
    assert_eq!(metadata(&dump(&fixture.srv())), before);

    // Control: once readable, the same run reaches the file and exits 0.
    TreeBuilder::new(&fixture.srv()).chmod("log/locked", 0o755);
    let output = run_without_dac(&[]);
    assert_eq!(code(&output), Some(0), "{}", stderr_of(&output));
    assert_eq!(label_of(&locked.join("inside")).as_deref(), Some(VAR_LOG_T));
}

/// Deletes every other entry of a directory the first time one of its
/// entries is looked up: the walker has listed the directory by then, so the
/// others vanish between listing and labelling. (With one thread the
/// subdirectory is visited only after the directory's own entries.)
struct VanishingLookup {
    labels: FileContexts,
    directory: PathBuf,
    lookup_prefix: Vec<u8>,
    fired: AtomicBool,
}

impl LabelLookup for VanishingLookup {
    /// The directory's key: every entry is looked up by its full key.
    type Directory<'a> = Vec<u8>;

    fn directory(&self, path: &[u8]) -> Vec<u8> {
        path.to_vec()
    }

    fn subdirectory(&self, parent: &Vec<u8>, name: &[u8]) -> Vec<u8> {
        selabel::entry_key(parent, name)
    }

    fn entry_label<'a>(
        &'a self,
        directory: &Vec<u8>,
        name: &[u8],
        kind: FileKind,
    ) -> Option<&'a str> {
        self.expected_label(&self.subdirectory(directory, name), kind)
    }

    fn expected_label(&self, path: &[u8], kind: FileKind) -> Option<&str> {
        if path.starts_with(&self.lookup_prefix) && !self.fired.swap(true, Ordering::SeqCst) {
            let this = path.rsplit(|&b| b == b'/').next().expect("name");
            for entry in std::fs::read_dir(&self.directory).expect("list") {
                let entry = entry.expect("entry");
                if entry.file_name().as_encoded_bytes() == this {
                    continue;
                }
                if entry.file_type().expect("type").is_dir() {
                    std::fs::remove_dir_all(entry.path()).expect("remove dir");
                } else {
                    std::fs::remove_file(entry.path()).expect("remove file");
                }
            }
        }
        self.labels.lookup(path, kind)
    }
}

#[test]
fn files_vanishing_mid_walk_are_not_errors() {
    let fixture = Fixture::new(SPECS);
    let tree = TreeBuilder::new(&fixture.srv());
    for i in 0..6 {
        tree.file(&format!("log/f{i}"), "x");
    }
    tree.symlink("log/link", "f0")
        .fifo("log/fifo")
        .file("log/sub/deep", "x");
    let lookup = VanishingLookup {
        labels: FileContexts::load(&fixture.fc).expect("load specs"),
        directory: fixture.srv().join("log"),
        lookup_prefix: b"/srv/log/".to_vec(),
        fired: AtomicBool::new(false),
    };
    let options = RelabelOptions {
        alternate_root: Some(fixture.root()),
        jobs: std::num::NonZeroUsize::new(1),
        ..RelabelOptions::default()
    };
    let collector = Collector::default();
    let summary =
        relabel::relabel(&lookup, &[fixture.srv()], &options, &collector).expect("relabel");
    assert!(
        lookup.fired.load(Ordering::SeqCst),
        "the deletion must have happened"
    );
    assert_eq!(summary.errors, 0, "{summary:?}");
    let (changes, errors) = collector.into_parts();
    assert!(errors.is_empty(), "{errors:?}");
    let changed: Vec<&[u8]> = changes
        .iter()
        .map(|change| change.path.as_slice())
        .collect();
    let srv = fixture.srv().into_os_string().into_encoded_bytes();
    assert_eq!(changed[..2], [&srv[..], &[&srv[..], b"/log"].concat()[..]]);
    // Of the 8 non-directories and the subdirectory listed, all but the
    // first one looked up were removed: each is counted as vanished.
    assert_eq!(summary.vanished, 8, "{summary:?}");
    // srv, srv/log and the one surviving file.
    assert_eq!(summary.examined, 3, "{summary:?}");
    assert_eq!(summary.relabelled, 3, "{summary:?}");
}

#[test]
fn read_only_filesystem_fails_per_object_without_changes() {
    let fixture = Fixture::new(SPECS);
    std::fs::create_dir_all(fixture.srv()).expect("srv");
    mount(&[
        "-t",
        "tmpfs",
        "-o",
        "size=4m",
        "tmpfs",
        fixture.srv().to_str().expect("utf-8"),
    ]);
    let _guard = MountGuard(fixture.srv());
    fixture.small_tree();
    // Label one object correctly beforehand: on a read-only filesystem it is
    // not an error, only the others are.
    set_label(&fixture.srv().join("a"), VAR_T);
    mount(&["-o", "remount,ro", fixture.srv().to_str().expect("utf-8")]);
    let before = dump(&fixture.srv());

    let output = fixture.relabel(&["--json"]);
    assert_no_panic(&output);
    assert_eq!(code(&output), Some(1), "{}", stderr_of(&output));
    let stderr = stderr_of(&output);
    let log = fixture.srv().join("log");
    assert!(
        stderr.contains(&format!(
            "cannot write the label of {}: read-only filesystem",
            log.display()
        )),
        "{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    // srv, log, log/b, log/sub, log/sub/c: five failures; `a` was fine.
    assert_eq!(summary["errors"], 5, "{summary}");
    assert_eq!(summary["unchanged"], 1, "{summary}");
    assert_eq!(dump(&fixture.srv()), before, "nothing may change");

    // Control: --check needs no writes, so it reports drift, not errors.
    let output = fixture.relabel(&["--check", "--json"]);
    assert_eq!(code(&output), Some(1), "{}", stderr_of(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(summary["errors"], 0, "{summary}");
    assert_eq!(summary["relabelled"], 5, "{summary}");
}

#[test]
fn filesystem_without_xattrs_is_reported_once() {
    let fixture = Fixture::new(SPECS);
    let srv = fixture.srv();
    std::fs::create_dir_all(&srv).expect("srv");
    mount(&["-t", "ramfs", "ramfs", srv.to_str().expect("utf-8")]);
    let _guard = MountGuard(srv.clone());
    fixture.small_tree();
    let before = metadata(&dump_without_labels(&srv));

    let output = fixture.relabel(&["--json"]);
    assert_no_panic(&output);
    assert_eq!(code(&output), Some(1), "{}", stderr_of(&output));
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains(&format!(
            "cannot read the label of {}: the filesystem does not support security.selinux xattrs",
            srv.display()
        )),
        "{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(
        summary["errors"], 1,
        "one message, not one per object: {summary}"
    );
    assert_eq!(metadata(&dump_without_labels(&srv)), before);
}

/// `dump` reads labels, which ramfs refuses; compare metadata only.
fn dump_without_labels(root: &Path) -> std::collections::BTreeMap<Vec<u8>, Object> {
    let mut objects = std::collections::BTreeMap::new();
    for entry in walk(root) {
        let meta = std::fs::symlink_metadata(&entry).expect("lstat");
        use std::os::unix::fs::MetadataExt;
        let data = if meta.is_file() {
            std::fs::read(&entry).expect("read")
        } else {
            Vec::new()
        };
        objects.insert(
            entry.as_os_str().as_encoded_bytes().to_vec(),
            Object {
                kind: rustix::fs::FileType::from_raw_mode(meta.mode()),
                label: None,
                meta: Meta {
                    mode: meta.mode(),
                    uid: meta.uid(),
                    gid: meta.gid(),
                    mtime: (meta.mtime(), meta.mtime_nsec() as u64),
                    size: meta.size(),
                    data,
                },
            },
        );
    }
    objects
}

fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    if std::fs::symlink_metadata(root).expect("lstat").is_dir() {
        for entry in std::fs::read_dir(root).expect("read_dir") {
            out.extend(walk(&entry.expect("entry").path()));
        }
    }
    out
}

/// Replaces `srv/x` with a symlink the first time a directory's work is
/// done: after the walk deferred the links of `x`'s inode (it has two and
/// must be written) and before it settles them.
struct SwapAfterListing {
    x: PathBuf,
    fired: AtomicBool,
}

impl relabel::Observer for SwapAfterListing {
    fn progress(&self, _examined: u64) {
        if !self.fired.swap(true, Ordering::SeqCst) {
            let staged = self.x.with_file_name("staged");
            std::os::unix::fs::symlink("x2", &staged).expect("symlink");
            std::fs::rename(&staged, &self.x).expect("rename over x");
        }
    }
}

#[test]
fn hard_link_replaced_before_it_is_settled_is_not_labelled() {
    // The symlink at `x` gets its own label; the file's must not reach it.
    let specs = format!("{SPECS}/srv/x\t-l\tsystem_u:object_r:link_t:s0\n");
    let fixture = Fixture::new(&specs);
    let run = |swap: bool| {
        std::fs::remove_dir_all(fixture.srv()).ok();
        TreeBuilder::new(&fixture.srv())
            .file("x", "x")
            .hard_link("x", "x2");
        let options = RelabelOptions {
            alternate_root: Some(fixture.root()),
            jobs: std::num::NonZeroUsize::new(1),
            ..RelabelOptions::default()
        };
        let labels = FileContexts::load(&fixture.fc).expect("load specs");
        let observer = SwapAfterListing {
            x: fixture.srv().join("x"),
            fired: AtomicBool::new(!swap),
        };
        relabel::relabel(&labels, &[fixture.srv()], &options, &observer).expect("relabel")
    };

    let summary = run(true);
    assert_eq!(summary.errors, 0, "{summary:?}");
    assert_eq!(summary.vanished, 1, "{summary:?}");
    // The next link of the inode is labelled instead.
    assert_eq!(summary.relabelled, 2, "{summary:?}");
    assert_eq!(label_of(&fixture.srv().join("x2")).as_deref(), Some(VAR_T));
    assert_eq!(label_of(&fixture.srv().join("x")), None);

    // Control: left alone, the first link is labelled (and the second
    // then has the label).
    let summary = run(false);
    assert_eq!(summary.vanished, 0, "{summary:?}");
    assert_eq!(summary.relabelled, 2, "{summary:?}");
    assert_eq!(summary.unchanged, 1, "{summary:?}");
    assert_eq!(label_of(&fixture.srv().join("x")).as_deref(), Some(VAR_T));
}
