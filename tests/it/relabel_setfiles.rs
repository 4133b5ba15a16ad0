//! `semanifest relabel` against `setfiles -F` (policycoreutils 3.4) on
//! identical trees: each scenario builds the same tree twice, runs setfiles
//! on one copy and semanifest on the other, and compares every object's
//! `security.selinux`. Differences are asserted only where they are the
//! documented, intended ones (empty xattrs are repaired; paths deeper than
//! PATH_MAX are labelled).
//!
//! setfiles runs with `-T 1` here: with more threads its choice between two
//! hard links of one inode that want different labels depends on thread
//! timing, and the comparison needs a deterministic reference. (semanifest
//! decides such links within one directory in directory order, as
//! `setfiles -T 1` does.) The benchmark uses `-T 0`.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::support::relabel::*;

/// Specs for every file kind, typed and untyped, regex and exact,
/// `<<none>>`, an MLS range, and a pair of specs that disagree on two links
/// of one inode. Paths are relative to the alternate root (`-r`).
const SPECS: &str = r"
/srv(/.*)?                      system_u:object_r:var_t:s0
/srv/log(/.*)?                  system_u:object_r:var_log_t:s0
/srv/log/.*\.gz         --      system_u:object_r:var_log_t:s0:c1
/srv/log/current        -l      system_u:object_r:var_log_link_t:s0
/srv/run(/.*)?                  system_u:object_r:var_run_t:s0
/srv/run/.*             -s      system_u:object_r:socket_t:s0
/srv/run/.*             -p      system_u:object_r:fifo_t:s0
/srv/dev/.*             -c      system_u:object_r:null_device_t:s0
/srv/dev/.*             -b      system_u:object_r:fixed_disk_device_t:s0
/srv/links(/.*)?        -l      system_u:object_r:symlink_t:s0
/srv/untouched(/.*)?            <<none>>
/srv/lib/[^/]+/data(/.*)?       system_u:object_r:data_t:s0
/srv/lib/pki                    system_u:object_r:cert_t:s0
/srv/hard/a                     system_u:object_r:first_t:s0
/srv/hard/b                     system_u:object_r:second_t:s0
/srv/names/.*                   system_u:object_r:names_t:s0
";

/// Two copies of a scenario: `left` for setfiles, `right` for semanifest.
struct Pair {
    _scratch: tempfile::TempDir,
    fc: PathBuf,
    left: PathBuf,
    right: PathBuf,
}

impl Pair {
    fn new(mut build: impl FnMut(&TreeBuilder)) -> Self {
        require_privileges();
        let scratch = scratch();
        let fc = scratch.path().join("file_contexts");
        write_file(&fc, SPECS);
        let left = scratch.path().join("left");
        let right = scratch.path().join("right");
        build(&TreeBuilder::new(&left.join("srv")));
        build(&TreeBuilder::new(&right.join("srv")));
        Self {
            _scratch: scratch,
            fc,
            left,
            right,
        }
    }

    fn tree(&self, side: &Path) -> PathBuf {
        side.join("srv")
    }

    /// Applies `edit` to both copies (e.g. to plant wrong labels).
    fn edit_both(&self, mut edit: impl FnMut(&Path)) {
        edit(&self.tree(&self.left));
        edit(&self.tree(&self.right));
    }

    fn run_setfiles(&self) {
        let output = setfiles(&self.fc, Some(&self.left), &[&self.tree(&self.left)]);
        assert!(
            output.status.success(),
            "setfiles failed: {}",
            stderr_of(&output)
        );
    }

    /// Runs semanifest with `--json` and returns its summary.
    fn run_semanifest(&self, extra: &[&str]) -> serde_json::Value {
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        let output = relabel(
            &self.fc,
            Some(&self.right),
            &args,
            &[&self.tree(&self.right)],
        );
        assert!(
            output.status.success(),
            "semanifest relabel failed ({:?}): {}",
            output.status,
            stderr_of(&output)
        );
        serde_json::from_slice(&output.stdout).expect("--json prints one JSON object")
    }

    /// Labels both copies with setfiles: the "all correct" starting point.
    fn label_both_with_setfiles(&self) {
        for side in [&self.left, &self.right] {
            let output = setfiles(&self.fc, Some(side), &[&self.tree(side)]);
            assert!(output.status.success(), "{}", stderr_of(&output));
        }
    }

    fn assert_same_labels(&self) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
        let left = labels(&dump(&self.tree(&self.left)));
        let right = labels(&dump(&self.tree(&self.right)));
        let differences = label_differences(&left, &right);
        assert!(
            differences.is_empty(),
            "setfiles (left) and semanifest (right) disagree on {} objects:\n{}",
            differences.len(),
            differences.join("\n")
        );
        right
    }
}

/// Every kind of object the walker handles, with names that need care.
fn rich_tree(t: &TreeBuilder) {
    t.dir("log/archive")
        .file("log/messages", "boot\n")
        .file("log/archive/messages.1.gz", "gz")
        .file("log/archive/messages.2", "old")
        .symlink("log/current", "archive/messages.2")
        .dir("run")
        .socket("run/api.sock")
        .fifo("run/events")
        .file("run/pid", "1\n")
        .dir("dev")
        .char_device("dev/null0")
        .block_device("dev/disk0")
        .dir("links")
        .symlink("links/to-etc", "/etc")
        .symlink("links/dangling", "/nonexistent/target")
        .symlink("links/loop", "loop")
        .symlink("links/to-untouched", "../untouched/sub/file")
        .dir("untouched/sub")
        .file("untouched/sub/file", "x")
        .dir("lib/etcd/data/member")
        .file("lib/etcd/data/member/db", "etcd")
        .dir("lib/pki")
        .file("lib/pki/ca.crt", "cert")
        .dir("names")
        .raw_file("names", b"latin1-caf\xe9", "x")
        .raw_file("names", b"new\nline", "x")
        .raw_file("names", b"tab\there", "x")
        .raw_file("names", b"esc\x1b[31m", "x")
        .raw_file("names", b"utf8-\xc3\xa9t\xc3\xa9", "x")
        .raw_file("names", b"space name", "x")
        .raw_file("names", &[b'n'; 255], "x")
        .dir("hard")
        .file("hard/a", "shared inode")
        .hard_link("hard/a", "hard/b")
        .file("log/shared", "shared across dirs, same spec")
        .hard_link("log/shared", "log/archive/shared");
}

#[test]
fn unlabelled_tree_gets_setfiles_labels() {
    let pair = Pair::new(rich_tree);
    let before = metadata(&dump(&pair.tree(&pair.right)));
    pair.run_setfiles();
    let summary = pair.run_semanifest(&[]);
    let labels = pair.assert_same_labels();

    // The comparison is only meaningful if labels were actually written.
    let get = |path: &[u8]| labels.get(path).cloned().flatten();
    let want = |context: &str| Some(format!("{context}\0").into_bytes());
    assert_eq!(get(b""), want("system_u:object_r:var_t:s0"));
    assert_eq!(
        get(b"log/archive/messages.1.gz"),
        want("system_u:object_r:var_log_t:s0:c1")
    );
    assert_eq!(
        get(b"log/current"),
        want("system_u:object_r:var_log_link_t:s0")
    );
    assert_eq!(get(b"run/api.sock"), want("system_u:object_r:socket_t:s0"));
    assert_eq!(get(b"run/events"), want("system_u:object_r:fifo_t:s0"));
    assert_eq!(
        get(b"dev/null0"),
        want("system_u:object_r:null_device_t:s0")
    );
    assert_eq!(
        get(b"dev/disk0"),
        want("system_u:object_r:fixed_disk_device_t:s0")
    );
    assert_eq!(get(b"links/to-etc"), want("system_u:object_r:symlink_t:s0"));
    assert_eq!(
        get(b"lib/etcd/data/member/db"),
        want("system_u:object_r:data_t:s0")
    );
    assert_eq!(
        get(b"names/new\nline"),
        want("system_u:object_r:names_t:s0")
    );
    assert_eq!(
        get(b"names/latin1-caf\xe9"),
        want("system_u:object_r:names_t:s0")
    );
    // <<none>>: left alone, but its subtree is still visited (and also none).
    assert_eq!(get(b"untouched"), None);
    assert_eq!(get(b"untouched/sub/file"), None);
    // The two links of one inode in one directory: the first in directory
    // order keeps its label in both tools (asserted equal above); whichever
    // it is, both names show that one label.
    assert_eq!(get(b"hard/a"), get(b"hard/b"));
    // A symlink's target is never labelled through the link.
    assert_eq!(
        get(b"links/to-untouched"),
        want("system_u:object_r:symlink_t:s0")
    );

    assert_eq!(summary["errors"], 0);
    assert_eq!(summary["hard_link_conflicts"], 1, "{summary}");
    assert_eq!(
        metadata(&dump(&pair.tree(&pair.right))),
        before,
        "relabelling changed something other than labels"
    );
}

#[test]
fn correct_tree_is_not_written() {
    let pair = Pair::new(rich_tree);
    pair.label_both_with_setfiles();
    let before = dump(&pair.tree(&pair.right));
    let before_ctimes = ctimes(&pair.tree(&pair.right));
    pair.run_setfiles();
    let summary = pair.run_semanifest(&[]);
    pair.assert_same_labels();
    assert_eq!(summary["relabelled"], 0, "{summary}");
    assert_eq!(summary["errors"], 0, "{summary}");
    // `hard/a` and `hard/b` want different labels: one link already has
    // its own, and the other is reported in the same pass, not written.
    assert_eq!(summary["hard_link_conflicts"], 1, "{summary}");
    assert_eq!(dump(&pair.tree(&pair.right)), before);
    // No setxattr at all: a write, even of the same value, bumps ctime.
    assert_eq!(ctimes(&pair.tree(&pair.right)), before_ctimes);
}

#[test]
fn ten_percent_wrong_types_are_fixed_like_setfiles() {
    let pair = Pair::new(rich_tree);
    pair.label_both_with_setfiles();
    // Counted per inode: the links of one inode share one label.
    let mut planted = HashSet::new();
    pair.edit_both(|tree| {
        planted.clear();
        let paths: Vec<Vec<u8>> = dump(tree).into_keys().collect();
        for path in paths.iter().step_by(10) {
            let full = tree.join(OsStr::from_bytes(path));
            if label_of(&full).is_some() {
                set_label(&full, b"system_u:object_r:wrong_t:s0\0");
                planted.insert(inode_of(&full));
            }
        }
    });
    assert!(planted.len() >= 3, "the scenario must plant wrong labels");
    pair.run_setfiles();
    let summary = pair.run_semanifest(&[]);
    pair.assert_same_labels();
    assert_eq!(summary["relabelled"], planted.len(), "{summary}");
}

#[test]
fn right_type_with_wrong_user_and_range_is_rewritten_in_full() {
    let pair = Pair::new(rich_tree);
    pair.label_both_with_setfiles();
    let mut planted = HashSet::new();
    pair.edit_both(|tree| {
        planted.clear();
        for (path, object) in dump(tree) {
            let Some(label) = object.label else { continue };
            let text = String::from_utf8(label).expect("utf-8 label");
            let type_ = text.trim_end_matches('\0').split(':').nth(2).expect("type");
            let odd = format!("unconfined_u:object_r:{type_}:s0:c7.c9\0");
            let full = tree.join(OsStr::from_bytes(&path));
            set_label(&full, odd.as_bytes());
            planted.insert(inode_of(&full));
        }
    });
    pair.run_setfiles();
    let summary = pair.run_semanifest(&[]);
    pair.assert_same_labels();
    assert_eq!(summary["relabelled"], planted.len(), "{summary}");
}

#[test]
fn empty_xattr_is_repaired_where_setfiles_fails() {
    let pair = Pair::new(rich_tree);
    pair.label_both_with_setfiles();
    pair.edit_both(|tree| set_label(&tree.join("log/messages"), b""));
    let output = setfiles(&pair.fc, Some(&pair.left), &[&pair.tree(&pair.left)]);
    assert!(
        !output.status.success(),
        "setfiles 3.4 is expected to fail on an empty xattr; if it no longer does, \
         drop this documented difference"
    );
    let summary = pair.run_semanifest(&[]);
    assert_eq!(summary["relabelled"], 1, "{summary}");
    assert_eq!(
        label_of(&pair.tree(&pair.right).join("log/messages")),
        Some(b"system_u:object_r:var_log_t:s0\0".to_vec())
    );
    // Everything else agrees with setfiles.
    let mut left = labels(&dump(&pair.tree(&pair.left)));
    let right = labels(&dump(&pair.tree(&pair.right)));
    assert_eq!(
        left.insert(b"log/messages".to_vec(), None),
        Some(Some(Vec::new()))
    );
    let mut right_without = right.clone();
    right_without.insert(b"log/messages".to_vec(), None);
    assert!(label_differences(&left, &right_without).is_empty());
}

#[test]
fn tree_deeper_than_path_max_is_labelled_to_the_bottom() {
    let mut bottom_length = 0;
    let pair = Pair::new(|t| {
        t.dir("log");
        bottom_length = t.deep_chain("log/deep", &"d".repeat(60), 80);
    });
    assert!(bottom_length > 4096, "the chain must exceed PATH_MAX");
    pair.run_setfiles();
    let summary = pair.run_semanifest(&[]);
    assert_eq!(summary["errors"], 0, "{summary}");

    let left = labels(&dump(&pair.tree(&pair.left)));
    let right = labels(&dump(&pair.tree(&pair.right)));
    let var_log = Some(b"system_u:object_r:var_log_t:s0\0".to_vec());
    // semanifest labels every object, whatever its depth.
    for (path, label) in &right {
        assert_eq!(
            label,
            &if path.is_empty() {
                Some(b"system_u:object_r:var_t:s0\0".to_vec())
            } else {
                var_log.clone()
            },
            "{}",
            String::from_utf8_lossy(path)
        );
    }
    // setfiles agrees wherever the full path fits in PATH_MAX and silently
    // skips the rest (the documented difference).
    let prefix = pair.tree(&pair.left).as_os_str().len() + 1;
    for (path, label) in &left {
        if prefix + path.len() < 4096 {
            assert_eq!(label, &right[path], "{}", String::from_utf8_lossy(path));
        } else {
            assert_eq!(
                label, &None,
                "setfiles now labels deep paths: update the docs"
            );
        }
    }
}

#[test]
fn nested_mount_is_skipped_like_setfiles() {
    let pair = Pair::new(rich_tree);
    let mut guards = Vec::new();
    pair.edit_both(|tree| {
        let mount_point = tree.join("run/mnt");
        std::fs::create_dir(&mount_point).expect("mount point");
        mount(&[
            "-t",
            "tmpfs",
            "-o",
            "size=1m",
            "tmpfs",
            mount_point.to_str().expect("utf-8"),
        ]);
        write_file(&mount_point.join("inside"), "on tmpfs");
    });
    guards.push(MountGuard(pair.tree(&pair.left).join("run/mnt")));
    guards.push(MountGuard(pair.tree(&pair.right).join("run/mnt")));

    pair.run_setfiles();
    let summary = pair.run_semanifest(&[]);
    pair.assert_same_labels();
    assert_eq!(summary["mounts_skipped"], 1, "{summary}");
    for side in [&pair.left, &pair.right] {
        let mounted = pair.tree(side).join("run/mnt");
        assert_eq!(label_of(&mounted), None, "the mounted root is skipped");
        assert_eq!(
            label_of(&mounted.join("inside")),
            None,
            "the mount is not entered"
        );
    }

    // --cross-mounts enters it (tmpfs holds security.* xattrs).
    let summary = pair.run_semanifest(&["--cross-mounts"]);
    assert_eq!(summary["mounts_skipped"], 0, "{summary}");
    let inside = pair.tree(&pair.right).join("run/mnt/inside");
    assert_eq!(
        label_of(&inside),
        Some(b"system_u:object_r:var_run_t:s0\0".to_vec())
    );
    drop(guards);
}

#[test]
fn debian_policy_labels_a_var_tree_like_setfiles() {
    let fc = Path::new("/etc/selinux/default/contexts/files/file_contexts");
    assert!(
        fc.exists(),
        "{} missing: install selinux-policy-default (listed in .ci/packages)",
        fc.display()
    );
    require_privileges();
    let scratch = scratch();
    let build = |t: &TreeBuilder| {
        t.file("log/messages", "x")
            .file("log/audit/audit.log", "x")
            .file("log/pods/ns_pod_uid/app/0.log", "x")
            .symlink("log/containers-link", "pods/ns_pod_uid/app/0.log")
            .file("lib/containerd/io.containerd.metadata.v1.bolt/meta.db", "x")
            .file("lib/kubelet/pki/kubelet.crt", "x")
            .file("lib/etcd/member/snap/db", "x")
            .file("lib/dpkg/status", "x")
            .file("cache/apt/pkgcache.bin", "x")
            .file("spool/cron/crontabs/root", "x")
            .dir("run")
            .dir("tmp")
            .fifo("lib/fifo")
            .socket("lib/sock");
    };
    let left = scratch.path().join("left");
    let right = scratch.path().join("right");
    build(&TreeBuilder::new(&left.join("var")));
    build(&TreeBuilder::new(&right.join("var")));
    let output = setfiles(fc, Some(&left), &[&left.join("var")]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let output = relabel(fc, Some(&right), &[], &[&right.join("var")]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let left_labels = labels(&dump(&left.join("var")));
    let right_labels = labels(&dump(&right.join("var")));
    let differences = label_differences(&left_labels, &right_labels);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    assert_eq!(
        right_labels[&b"log/audit/audit.log"[..]],
        Some(b"system_u:object_r:auditd_log_t:s0\0".to_vec())
    );
}

/// ctime of every object: any setxattr bumps it.
fn ctimes(root: &Path) -> BTreeMap<Vec<u8>, (i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    dump(root)
        .into_keys()
        .map(|path| {
            let full = root.join(OsStr::from_bytes(&path));
            let meta = std::fs::symlink_metadata(&full).expect("lstat");
            (path, (meta.ctime(), meta.ctime_nsec()))
        })
        .collect()
}
