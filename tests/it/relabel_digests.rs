//! `relabel --skip-unchanged`: per-directory subtree digests.
//!
//! Differential: after every scenario the labels left by `--skip-unchanged`
//! runs are those of a full relabel (the full pass that follows changes
//! nothing and the label dumps are equal). Precision: a change to one spec
//! examines that subtree and the directories on the way (with their
//! entries), not the tree. Controls show what the flag trusts: a wrong label
//! below a matching digest survives `--skip-unchanged` but not a plain
//! relabel or `--check`, which never read digests.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::relabel::*;

const DIGEST: &str = "trusted.semanifest.digest";
const SEAL: &str = "trusted.semanifest.seal";

const SPECS: &str = "\
/srv(/.*)?\tsystem_u:object_r:var_t:s0
/srv/log(/.*)?\tsystem_u:object_r:var_log_t:s0
/srv/etc(/.*)?\tsystem_u:object_r:etc_t:s0
/srv/etc/inner(/.*)?\tsystem_u:object_r:etc_inner_t:s0
/srv/data(/.*)?\tsystem_u:object_r:data_t:s0
";

struct Fixture {
    _scratch: tempfile::TempDir,
    fc: PathBuf,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        require_privileges();
        let scratch = scratch();
        let fc = scratch.path().join("file_contexts");
        write_file(&fc, SPECS);
        let root = scratch.path().join("root");
        let tree = TreeBuilder::new(&root.join("srv"));
        tree.file("top", "t")
            .file("log/a/one", "1")
            .file("log/a/two", "2")
            .file("log/b/deep/er/three", "3")
            .file("etc/conf", "c")
            .file("etc/inner/x/y", "y")
            .file("etc/inner/z", "z")
            .file("etc/other/w", "w")
            .file("data/x/f", "f")
            .file("data/x/g/h", "h")
            .file("data/y/k", "k");
        for i in 0..20 {
            tree.file(&format!("data/many/f{i}"), "m");
        }
        Self {
            _scratch: scratch,
            fc,
            root,
        }
    }

    fn srv(&self) -> PathBuf {
        self.root.join("srv")
    }

    fn specs(&self, specs: &str) {
        write_file(&self.fc, specs);
    }

    fn relabel(&self, extra: &[&str]) -> Output {
        relabel(&self.fc, Some(&self.root), extra, &[&self.srv()])
    }

    /// A `--json` run that must exit `code`; its summary.
    fn run_json(&self, extra: &[&str], code: i32) -> serde_json::Value {
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        let output = self.relabel(&args);
        assert_eq!(
            output.status.code(),
            Some(code),
            "relabel {extra:?}: {}",
            stderr_of(&output)
        );
        json(&output)
    }

    fn skip(&self, extra: &[&str]) -> serde_json::Value {
        let mut args = vec!["--skip-unchanged"];
        args.extend_from_slice(extra);
        self.run_json(&args, 0)
    }

    /// The differential: a full relabel (same scope) after the skipping
    /// runs would change nothing, so their labels are the full relabel's.
    /// A dry run: a writing relabel without the flag removes digests.
    fn assert_same_as_full(&self, extra: &[&str]) {
        let after_skip = labels(&dump(&self.srv()));
        let mut args = vec!["--dry-run"];
        args.extend_from_slice(extra);
        let summary = self.run_json(&args, 0);
        assert_eq!(summary["relabelled"], 0, "full pass after skips: {summary}");
        assert_eq!(labels(&dump(&self.srv())), after_skip);
    }

    /// `--check` agrees too (no drift).
    fn assert_no_drift(&self) {
        let output = self.relabel(&["--check"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    }
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// The xattr `name` of `path` (not followed), if it has one.
fn xattr_of(path: &Path, name: &str) -> Option<Vec<u8>> {
    let mut buffer = [0u8; 512];
    match rustix::fs::lgetxattr(path, name, &mut buffer) {
        Ok(len) => Some(buffer[..len].to_vec()),
        Err(rustix::io::Errno::NODATA) => None,
        Err(errno) => panic!("lgetxattr {name} {}: {errno}", path.display()),
    }
}

/// The stored digest of `path`, if any.
fn digest_of(path: &Path) -> Option<Vec<u8>> {
    xattr_of(path, DIGEST)
}

/// The operand seal stored on `path`, if any.
fn seal_of(path: &Path) -> Option<Vec<u8>> {
    xattr_of(path, SEAL)
}

/// Every directory at and below `root` (relative path) with its digest.
fn digests(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let relative = dir.strip_prefix(root).expect("below root");
        out.insert(relative.display().to_string(), digest_of(&dir));
        for entry in fs::read_dir(&dir).expect("read_dir") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_dir() {
                stack.push(entry.path());
            }
        }
    }
    out
}

/// Objects strictly below `dir`.
fn count_below(dir: &Path) -> u64 {
    dump(dir).len() as u64 - 1
}

/// Entries of `dir`.
fn count_entries(dir: &Path) -> u64 {
    fs::read_dir(dir).expect("read_dir").count() as u64
}

#[test]
fn unchanged_tree_is_skipped_and_stays_equal_to_a_full_relabel() {
    let fixture = Fixture::new();
    let total = dump(&fixture.srv()).len() as u64;
    let first = fixture.skip(&[]);
    assert_eq!(first["examined"], total, "{first}");
    assert_eq!(first["skipped"], 0, "{first}");
    // Every directory now holds a digest.
    let stored = digests(&fixture.srv());
    assert!(stored.values().all(Option::is_some), "{stored:?}");
    // The next run examines the operand only: its digest matches.
    let second = fixture.skip(&[]);
    assert_eq!(second["examined"], 1, "{second}");
    assert_eq!(second["skipped"], 1, "{second}");
    assert_eq!(digests(&fixture.srv()), stored);
    fixture.assert_same_as_full(&[]);
    fixture.assert_no_drift();
    // Control: without the flag every object is examined again.
    let full = fixture.run_json(&[], 0);
    assert_eq!(full["examined"], total, "{full}");
    assert_eq!(full["skipped"], 0, "{full}");
}

#[test]
fn changed_spec_relabels_its_subtree_and_examines_only_the_way_there() {
    let fixture = Fixture::new();
    fixture.skip(&[]);
    let before = digests(&fixture.srv());
    fixture.specs(&SPECS.replace("etc_inner_t", "etc_inner2_t"));
    let summary = fixture.skip(&["--verbose"]);
    let srv = fixture.srv();
    // The operand, its entries, the entries of etc, and all of inner.
    let expected = 1
        + count_entries(&srv)
        + count_entries(&srv.join("etc"))
        + count_below(&srv.join("etc/inner"));
    assert_eq!(summary["examined"], expected, "{summary}");
    assert_eq!(
        summary["relabelled"],
        1 + count_below(&srv.join("etc/inner"))
    );
    // log, data (below srv) and other (below etc) were skipped whole.
    assert_eq!(summary["skipped"], 3, "{summary}");
    assert_eq!(
        label_of(&srv.join("etc/inner/x/y")).as_deref(),
        Some(&b"system_u:object_r:etc_inner2_t:s0\0"[..])
    );
    // Digests changed exactly on the way and below inner.
    let after = digests(&srv);
    for (path, digest) in &after {
        let on_the_way = ["", "etc"].contains(&path.as_str()) || path.starts_with("etc/inner");
        assert_eq!(digest != &before[path], on_the_way, "{path}");
        assert!(digest.is_some(), "{path}");
    }
    fixture.assert_same_as_full(&[]);
    fixture.assert_no_drift();
}

#[test]
fn added_path_is_labelled_and_the_rest_skipped() {
    let fixture = Fixture::new();
    fixture.skip(&[]);
    let mut specs = SPECS.to_owned();
    specs.push_str("/srv/data/y(/.*)?\tsystem_u:object_r:data_y_t:s0\n");
    fixture.specs(&specs);
    let summary = fixture.skip(&[]);
    let srv = fixture.srv();
    let expected = 1
        + count_entries(&srv)
        + count_entries(&srv.join("data"))
        + count_below(&srv.join("data/y"));
    assert_eq!(summary["examined"], expected, "{summary}");
    assert_eq!(
        label_of(&srv.join("data/y/k")).as_deref(),
        Some(&b"system_u:object_r:data_y_t:s0\0"[..])
    );
    fixture.assert_same_as_full(&[]);
    // The spec goes again: y is relabelled back, nothing else walked.
    fixture.specs(SPECS);
    let summary = fixture.skip(&[]);
    assert_eq!(summary["examined"], expected, "{summary}");
    fixture.assert_same_as_full(&[]);
}

/// A rename inside a tree whose digests match is not seen (the ancestors'
/// digests cover their specs, not their entries): the moved subtree keeps
/// its labels, as after any rename, until something walks its new parent.
/// Digests cover the directory's key, so the moved subtree's own stale
/// digests never match at the new place: once its new parent is walked, it
/// is walked too, even where the same specs apply.
#[test]
fn moved_subtree_is_trusted_until_its_new_parent_is_walked() {
    let fixture = Fixture::new();
    fixture.skip(&[]);
    let srv = fixture.srv();
    fs::rename(srv.join("data/x"), srv.join("log/x")).expect("rename");
    assert!(digest_of(&srv.join("log/x")).is_some());
    // Trusted: the operand's digest still matches.
    let summary = fixture.skip(&[]);
    assert_eq!(summary["examined"], 1, "{summary}");
    let data_t = &b"system_u:object_r:data_t:s0\0"[..];
    assert_eq!(label_of(&srv.join("log/x/g/h")).as_deref(), Some(data_t));
    // Control: --check sees it.
    let output = fixture.relabel(&["--check"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));

    // A spec added below log makes log walked; x's stale digest (made for
    // /srv/data/x) does not match at /srv/log/x: x is walked and fixed.
    let mut specs = SPECS.to_owned();
    specs.push_str("/srv/log/new(/.*)?\tsystem_u:object_r:var_log_new_t:s0\n");
    fixture.specs(&specs);
    let summary = fixture.skip(&[]);
    let moved = 1 + count_below(&srv.join("log/x"));
    let expected = 1 + count_entries(&srv) + count_entries(&srv.join("log")) + moved - 1;
    assert_eq!(summary["examined"], expected, "{summary}");
    assert_eq!(summary["relabelled"], moved, "{summary}");
    assert_eq!(
        label_of(&srv.join("log/x/g/h")).as_deref(),
        Some(&b"system_u:object_r:var_log_t:s0\0"[..])
    );
    fixture.assert_same_as_full(&[]);

    // Within data (same live specs, another key): still walked once data
    // is, with nothing to change.
    fs::rename(srv.join("data/many"), srv.join("data/moved")).expect("rename");
    specs.push_str("/srv/data/new(/.*)?\tsystem_u:object_r:data_new_t:s0\n");
    fixture.specs(&specs);
    let summary = fixture.skip(&[]);
    let expected = 1
        + count_entries(&srv)
        + count_entries(&srv.join("data"))
        + count_below(&srv.join("data/moved"));
    assert_eq!(summary["examined"], expected, "{summary}");
    assert_eq!(summary["relabelled"], 0, "{summary}");
    fixture.assert_same_as_full(&[]);
}

#[test]
fn switching_between_full_and_type_only_walks_everything() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    let total = dump(&srv).len() as u64;
    fixture.skip(&[]);
    // Another user on some objects: type-only keeps it, full replaces it.
    let foreign = b"unconfined_u:object_r:data_t:s0\0";
    set_label(&srv.join("data/x/f"), foreign);
    set_label(&srv.join("data/y"), b"unconfined_u:object_r:data_t:s0\0");
    // Type-only digests differ from full ones: everything is examined.
    let summary = fixture.skip(&["--type-only"]);
    assert_eq!(summary["examined"], total, "{summary}");
    assert_eq!(summary["relabelled"], 0, "{summary}");
    fixture.assert_same_as_full(&["--type-only"]);
    assert_eq!(summary["skipped"], 0, "{summary}");
    assert_eq!(fixture.skip(&["--type-only"])["examined"], 1);
    // Back to full: the type-only digests are not trusted.
    let summary = fixture.skip(&[]);
    assert_eq!(summary["examined"], total, "{summary}");
    assert_eq!(summary["relabelled"], 2, "{summary}");
    assert_eq!(
        label_of(&srv.join("data/x/f")).as_deref(),
        Some(&b"system_u:object_r:data_t:s0\0"[..])
    );
    fixture.assert_same_as_full(&[]);
}

/// Runs `semanifest relabel` without the DAC override capabilities (root
/// then cannot list a 000 directory; it keeps CAP_SYS_ADMIN).
fn run_without_dac(fixture: &Fixture, extra: &[&str]) -> Output {
    let mut command = Command::new("setpriv");
    command.args(["--bounding-set", "-dac_override,-dac_read_search", "--"]);
    command.arg(env!("CARGO_BIN_EXE_semanifest")).arg("relabel");
    command
        .arg("--file-contexts")
        .arg(&fixture.fc)
        .arg("--root")
        .arg(&fixture.root);
    command.args(extra).arg(fixture.srv());
    run(&mut command)
}

#[test]
fn error_in_a_subtree_leaves_no_digest_there_or_above() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    TreeBuilder::new(&srv)
        .file("log/locked/inside", "i")
        .chmod("log/locked", 0o000);
    let output = run_without_dac(&fixture, &["--skip-unchanged"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    for path in ["", "log", "log/locked"] {
        assert_eq!(digest_of(&srv.join(path)), None, "{path}");
    }
    // Siblings that were fully labelled have theirs.
    for path in ["log/a", "log/b", "etc", "data"] {
        assert!(digest_of(&srv.join(path)).is_some(), "{path}");
    }
    // The next run walks log again and reports the same error.
    let output = run_without_dac(&fixture, &["--skip-unchanged"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert!(stderr_of(&output).contains("cannot read directory"));
    // Control: once readable, the run completes and every directory has
    // its digest; the labels are a full relabel's.
    TreeBuilder::new(&srv).chmod("log/locked", 0o755);
    let output = run_without_dac(&fixture, &["--skip-unchanged"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(digests(&srv).values().all(Option::is_some));
    assert_eq!(
        label_of(&srv.join("log/locked/inside")).as_deref(),
        Some(&b"system_u:object_r:var_log_t:s0\0"[..])
    );
    fixture.assert_same_as_full(&[]);
}

/// A digest that no longer matches is removed before its subtree is walked:
/// should that walk fail, a later return to the old specs must not trust
/// labels written for the new ones.
#[test]
fn stale_digest_is_removed_when_the_walk_fails() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    fixture.skip(&[]);
    let old = digest_of(&srv.join("log")).expect("digest");
    fixture.specs(&SPECS.replace("var_log_t", "var_log2_t"));
    TreeBuilder::new(&srv)
        .file("log/locked/inside", "i")
        .chmod("log/locked", 0o000);
    let output = run_without_dac(&fixture, &["--skip-unchanged"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert_eq!(digest_of(&srv.join("log")), None);
    TreeBuilder::new(&srv).chmod("log/locked", 0o755);
    // Back to the old specs: log is walked and relabelled back.
    fixture.specs(SPECS);
    let summary = fixture.skip(&[]);
    assert!(summary["relabelled"].as_u64() > Some(3), "{summary}");
    assert_eq!(digest_of(&srv.join("log")), Some(old));
    fixture.assert_same_as_full(&[]);
}

/// What the flag trusts: a wrong label below a matching digest.
#[test]
fn wrong_label_below_a_digest_is_trusted_only_by_skip_unchanged() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    fixture.skip(&[]);
    let wrong = b"system_u:object_r:shadow_t:s0\0";
    set_label(&srv.join("data/x/g/h"), wrong);
    // Trusted: nothing relabelled, the wrong label stays.
    let summary = fixture.skip(&[]);
    assert_eq!(summary["relabelled"], 0, "{summary}");
    assert_eq!(
        label_of(&srv.join("data/x/g/h")).as_deref(),
        Some(&wrong[..])
    );
    // Control: --check ignores digests and reports it.
    let output = fixture.relabel(&["--check"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("data/x/g/h"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    // Control: so does a dry run without the flag.
    let summary = fixture.run_json(&["--dry-run"], 0);
    assert_eq!(summary["relabelled"], 1, "{summary}");
    // Control: a plain relabel ignores digests and repairs it.
    let summary = fixture.run_json(&[], 0);
    assert_eq!(summary["relabelled"], 1, "{summary}");
    assert_eq!(
        label_of(&srv.join("data/x/g/h")).as_deref(),
        Some(&b"system_u:object_r:data_t:s0\0"[..])
    );
}

/// A digest can only be forged with CAP_SYS_ADMIN (trusted.* xattrs).
#[test]
fn digest_cannot_be_written_without_cap_sys_admin() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    fixture.skip(&[]);
    let value = digest_of(&srv.join("data")).expect("digest");
    let value = String::from_utf8(value).expect("ascii");
    let forge = |target: &Path, drop: Option<&str>| {
        let mut command = match drop {
            Some(drop) => {
                let mut command = Command::new("setpriv");
                command.args(["--bounding-set", drop, "--", "setfattr"]);
                command
            }
            None => Command::new("setfattr"),
        };
        command.args(["-n", DIGEST, "-v", &value]).arg(target);
        run(&mut command)
    };
    let target = srv.join("etc");
    let output = forge(&target, Some("-sys_admin"));
    assert!(!output.status.success(), "forged without CAP_SYS_ADMIN");
    assert_ne!(
        digest_of(&target).as_deref(),
        Some(value.as_bytes()),
        "digest replaced"
    );
    // Control: the same command with CAP_SYS_ADMIN writes it.
    let output = forge(&target, None);
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert_eq!(digest_of(&target).as_deref(), Some(value.as_bytes()));
}

#[test]
fn forget_digests_removes_every_digest() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    fixture.skip(&[]);
    assert!(digests(&srv).values().all(Option::is_some));
    let summary = fixture.run_json(&["--forget-digests"], 0);
    assert_eq!(summary["relabelled"], 0, "{summary}");
    assert!(digests(&srv).values().all(Option::is_none));
    // Then everything is examined again.
    let total = dump(&srv).len() as u64;
    assert_eq!(fixture.skip(&[])["examined"], total);
}

#[test]
fn dry_run_check_and_excludes_write_no_digest() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    // --dry-run reads digests but writes none (nor labels).
    let before = dump(&srv);
    let summary = fixture.run_json(&["--skip-unchanged", "--dry-run"], 0);
    assert!(summary["relabelled"].as_u64() > Some(0), "{summary}");
    assert_eq!(dump(&srv), before);
    assert!(digests(&srv).values().all(Option::is_none));
    // --check never reads digests: the flags conflict.
    let output = fixture.relabel(&["--skip-unchanged", "--check"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    let output = fixture.relabel(&["--forget-digests", "--dry-run"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    // An excluded object leaves its ancestors without a digest.
    let excluded = srv.join("log/a/one");
    let summary = fixture.skip(&["--exclude", excluded.to_str().expect("utf-8")]);
    assert_eq!(summary["excluded"], 1, "{summary}");
    for path in ["", "log", "log/a"] {
        assert_eq!(digest_of(&srv.join(path)), None, "{path}");
    }
    assert!(digest_of(&srv.join("log/b")).is_some());
    assert!(digest_of(&srv.join("data")).is_some());
    // Without the exclude, the excluded file is labelled.
    fixture.skip(&[]);
    assert_eq!(
        label_of(&excluded).as_deref(),
        Some(&b"system_u:object_r:var_log_t:s0\0"[..])
    );
    assert!(digests(&srv).values().all(Option::is_some));
    fixture.assert_same_as_full(&[]);
    // A --dry-run with digests present skips like a real run.
    assert_eq!(
        fixture.run_json(&["--skip-unchanged", "--dry-run"], 0)["examined"],
        1
    );
}

#[test]
fn skipped_mount_leaves_no_digest_on_the_way() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    let point = srv.join("data/mnt");
    fs::create_dir(&point).expect("mkdir");
    mount(&["-t", "tmpfs", "tmpfs", point.to_str().expect("utf-8")]);
    let _guard = MountGuard(point.clone());
    let summary = fixture.skip(&[]);
    assert_eq!(summary["mounts_skipped"], 1, "{summary}");
    assert_eq!(digest_of(&srv.join("data")), None);
    assert_eq!(digest_of(&srv), None);
    assert!(digest_of(&srv.join("data/x")).is_some());
    // Control: the same tree without the mount gets every digest.
    drop(_guard);
    fixture.skip(&[]);
    assert!(digest_of(&srv.join("data")).is_some());
    fixture.assert_same_as_full(&[]);
}

#[test]
fn kernel_command_line_forces_a_full_pass() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    let total = dump(&srv).len() as u64;
    fixture.skip(&[]);
    let cmdline = fixture.root.with_file_name("cmdline");
    let cmdline_arg = cmdline.to_str().expect("utf-8");
    // Control: another option (and a prefix of this one) does not force.
    write_file(&cmdline, "ro quiet semanifest.relabel=fullish\n");
    let summary = fixture.skip(&["--kernel-cmdline", cmdline_arg]);
    assert_eq!(summary["examined"], 1, "{summary}");
    // A wrong label below a digest: only the forced pass repairs it.
    set_label(&srv.join("log/a/one"), b"system_u:object_r:shadow_t:s0\0");
    write_file(&cmdline, "ro semanifest.relabel=full quiet\n");
    let summary = fixture.skip(&["--kernel-cmdline", cmdline_arg]);
    assert_eq!(summary["examined"], total, "{summary}");
    assert_eq!(summary["skipped"], 0, "{summary}");
    assert_eq!(summary["relabelled"], 1, "{summary}");
    assert!(digests(&srv).values().all(Option::is_some));
    fixture.assert_same_as_full(&[]);
}

#[test]
fn force_file_forces_one_full_pass_without_errors() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    let total = dump(&srv).len() as u64;
    let absent = fixture.root.with_file_name("no-cmdline");
    let absent = absent.to_str().expect("utf-8");
    let force = fixture.root.with_file_name("force-full-relabel");
    let force_arg = force.to_str().expect("utf-8");
    let args = ["--kernel-cmdline", absent, "--force-full-file", force_arg];
    fixture.skip(&args);
    set_label(&srv.join("data/y/k"), b"system_u:object_r:shadow_t:s0\0");
    // With an error in the tree the file stays, and forces the next pass.
    write_file(&force, "");
    TreeBuilder::new(&srv)
        .file("etc/locked/inside", "i")
        .chmod("etc/locked", 0o000);
    let mut extra = vec!["--skip-unchanged"];
    extra.extend_from_slice(&args);
    let output = run_without_dac(&fixture, &extra);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert!(stderr_of(&output).contains("full pass"));
    assert!(force.exists());
    assert_eq!(
        label_of(&srv.join("data/y/k")).as_deref(),
        Some(&b"system_u:object_r:data_t:s0\0"[..])
    );
    TreeBuilder::new(&srv).chmod("etc/locked", 0o755);
    let summary = fixture.skip(&args);
    assert_eq!(summary["examined"], total + 2, "{summary}");
    assert!(!force.exists(), "the force file is removed after the pass");
    // Control: the next pass skips again.
    assert_eq!(fixture.skip(&args)["examined"], 1);
    fixture.assert_same_as_full(&[]);
}

/// A relabel without the flag may write labels under other specs than the
/// digests': before it writes a label it removes the digests of every
/// directory above it (and it removes those of its operands' ancestors
/// first), so returning to the old specs walks them again.
#[test]
fn relabel_without_the_flag_removes_the_digests_it_could_falsify() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    fixture.skip(&[]);
    fixture.specs(&SPECS.replace("var_log_t", "var_log2_t"));
    let output = relabel(&fixture.fc, Some(&fixture.root), &[], &[&srv.join("log/a")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    for path in ["", "log", "log/a"] {
        assert_eq!(digest_of(&srv.join(path)), None, "{path}");
    }
    // Control: directories it neither walked nor passed keep theirs.
    for path in ["log/b", "etc", "data"] {
        assert!(digest_of(&srv.join(path)).is_some(), "{path}");
    }
    // Back to the old specs: the skipping run walks the way down again
    // and puts a back.
    fixture.specs(SPECS);
    let summary = fixture.skip(&[]);
    assert_eq!(
        summary["relabelled"],
        1 + count_below(&srv.join("log/a")),
        "{summary}"
    );
    fixture.assert_same_as_full(&[]);
    // Control: a dry run without the flag removes nothing.
    let before = digests(&srv);
    fixture.run_json(&["--dry-run"], 0);
    assert_eq!(digests(&srv), before);
}

/// A relabel without the flag that writes nothing leaves every digest and
/// the seal: the labels they vouch for did not change. One that fixes one
/// label removes the digests of the directories above it only (and the
/// operand's seal), and the next skipping pass walks just that way.
#[test]
fn relabel_without_the_flag_removes_only_the_digests_above_what_it_writes() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    fixture.skip(&[]);
    let sealed = digests(&srv);
    let unchanged = fixture.run_json(&[], 0);
    assert_eq!(unchanged["relabelled"], 0, "{unchanged}");
    assert_eq!(digests(&srv), sealed);
    assert!(seal_of(&srv).is_some());
    assert_eq!(fixture.skip(&[])["sealed"], 1);

    set_label(&srv.join("data/x/g/h"), b"system_u:object_r:wrong_t:s0\0");
    let fixed = fixture.run_json(&[], 0);
    assert_eq!(fixed["relabelled"], 1, "{fixed}");
    for path in ["", "data", "data/x", "data/x/g"] {
        assert_eq!(digest_of(&srv.join(path)), None, "{path}");
    }
    assert_eq!(seal_of(&srv), None);
    // Control: the directories beside the way keep theirs.
    for path in ["data/y", "data/many", "log", "log/a", "etc", "etc/inner"] {
        let kept = digest_of(&srv.join(path));
        assert!(kept.is_some(), "{path}");
        assert_eq!(kept, sealed[path], "{path}");
    }
    let summary = fixture.skip(&[]);
    assert_eq!(summary["relabelled"], 0, "{summary}");
    assert!(summary["skipped"].as_u64() > Some(0), "{summary}");
    fixture.assert_same_as_full(&[]);
}

/// An unchanged pass with the same file contexts checks the operand's seal
/// and compiles nothing; each way the seal could lie voids it (controls:
/// the sealed pass right before each change).
#[test]
fn operand_seal_skips_the_compile_and_every_change_voids_it() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    let total = dump(&srv).len() as u64;
    let first = fixture.skip(&[]);
    assert_eq!(first["sealed"], 0, "{first}");
    assert!(seal_of(&srv).is_some(), "the operand is sealed");
    assert_eq!(seal_of(&srv.join("log")), None, "only operands are sealed");
    let sealed_pass = |fixture: &Fixture| {
        let summary = fixture.skip(&[]);
        assert_eq!(summary["sealed"], 1, "{summary}");
        assert_eq!(summary["examined"], 1, "{summary}");
        assert_eq!(summary["relabelled"], 0, "{summary}");
    };
    sealed_pass(&fixture);
    fixture.assert_same_as_full(&[]);

    // The same specs written differently (a comment, other spacing) are
    // the same specs: still sealed.
    fixture.specs(&format!("# reformatted\n{}", SPECS.replace('\t', "   ")));
    sealed_pass(&fixture);

    // A changed spec: the seal is void, the changed subtree is walked.
    fixture.specs(&SPECS.replace("etc_inner_t", "etc_inner2_t"));
    let summary = fixture.skip(&[]);
    assert_eq!(summary["sealed"], 0, "{summary}");
    assert!(summary["relabelled"].as_u64() > Some(0), "{summary}");
    fixture.assert_same_as_full(&[]);
    sealed_pass(&fixture);

    // The operand's own label drifted: repaired, not trusted.
    set_label(&srv, b"system_u:object_r:etc_t:s0\0");
    let summary = fixture.skip(&[]);
    assert_eq!(summary["sealed"], 0, "{summary}");
    assert_eq!(summary["relabelled"], 1, "{summary}");
    sealed_pass(&fixture);

    // Another tool removed the operand's subtree digest: the seal covers
    // it, so it no longer holds.
    rustix::fs::lremovexattr(&srv, DIGEST).expect("remove the digest");
    assert_eq!(fixture.skip(&[])["sealed"], 0);
    sealed_pass(&fixture);

    // A forged seal (another label with the old hash) is not trusted.
    let mut forged = seal_of(&srv).expect("sealed");
    let at = forged.len() - "system_u:object_r:var_t:s0".len();
    forged.truncate(at);
    forged.extend_from_slice(b"system_u:object_r:etc_t:s0");
    rustix::fs::lsetxattr(&srv, SEAL, &forged, rustix::fs::XattrFlags::empty()).expect("forge");
    set_label(&srv, b"system_u:object_r:etc_t:s0\0");
    let summary = fixture.skip(&[]);
    assert_eq!(summary["sealed"], 0, "{summary}");
    assert_eq!(
        label_of(&srv).as_deref(),
        Some(&b"system_u:object_r:var_t:s0\0"[..])
    );
    sealed_pass(&fixture);

    // Type-only seals are not full ones, and back.
    assert_eq!(fixture.skip(&["--type-only"])["sealed"], 0);
    assert_eq!(fixture.skip(&["--type-only"])["sealed"], 1);
    assert_eq!(fixture.skip(&[])["sealed"], 0);
    sealed_pass(&fixture);

    // A plain writing relabel below the operand removes the seal (it may
    // write labels under other specs).
    let output = relabel(&fixture.fc, Some(&fixture.root), &[], &[&srv.join("log")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(seal_of(&srv), None);
    assert_eq!(fixture.skip(&[])["sealed"], 0);
    sealed_pass(&fixture);

    // An exclude is never sealed through; --forget-digests removes seals.
    let excluded = srv.join("log/a/one");
    let summary = fixture.skip(&["--exclude", excluded.to_str().expect("utf-8")]);
    assert_eq!(summary["sealed"], 0, "{summary}");
    let summary = fixture.run_json(&["--forget-digests"], 0);
    assert_eq!(summary["relabelled"], 0, "{summary}");
    assert_eq!(seal_of(&srv), None);
    assert_eq!(fixture.skip(&[])["examined"], total);
    sealed_pass(&fixture);
    fixture.assert_same_as_full(&[]);
    fixture.assert_no_drift();
}

/// A path substitution below the operand leaves it without a subtree
/// digest of its own (as Debian's `/var/run` → `/run` does for `/var`);
/// it is sealed all the same, and the substitutions are part of the seal.
#[test]
fn operand_without_a_digest_of_its_own_is_sealed_too() {
    let fixture = Fixture::new();
    let srv = fixture.srv();
    let subs = fixture.fc.with_file_name("file_contexts.subs_dist");
    write_file(&subs, "/srv/run /run\n");
    fixture.skip(&[]);
    assert_eq!(digest_of(&srv), None, "untracked below a substitution");
    assert!(digest_of(&srv.join("log")).is_some());
    assert!(seal_of(&srv).is_some());
    let summary = fixture.skip(&[]);
    assert_eq!(summary["sealed"], 1, "{summary}");
    assert_eq!(summary["examined"], 1, "{summary}");
    // Control: other substitutions, another seal.
    write_file(&subs, "/srv/run /var/run\n");
    let summary = fixture.skip(&[]);
    assert_eq!(summary["sealed"], 0, "{summary}");
    assert_eq!(fixture.skip(&[])["sealed"], 1);
    fixture.assert_same_as_full(&[]);
}
