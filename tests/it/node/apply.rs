//! `semanifest apply`: places the layout born right, repairs and reports
//! drift, never follows a symlink or replaces what is in the way.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::arena::*;

/// Every directory the default layout places, with its mode and type.
const PLACED: &[(&str, u32, &str)] = &[
    ("var", 0o755, "var_t"),
    ("var/lib", 0o755, "var_t"),
    ("var/lib/etcd", 0o700, "etcd_var_t"),
    ("var/lib/kubelet", 0o700, "kubelet_var_t"),
    ("var/lib/kubelet/pki", 0o700, "kubelet_pki_t"),
    ("var/lib/kubelet/pods", 0o755, "kubelet_pods_t"),
    ("var/lib/kubelet/plugins", 0o755, "kubelet_plugins_t"),
    (
        "var/lib/kubelet/plugins_registry",
        0o755,
        "kubelet_plugins_registry_t",
    ),
    (
        "var/lib/kubelet/device-plugins",
        0o755,
        "kubelet_device_plugins_t",
    ),
    (
        "var/lib/kubelet/pod-resources",
        0o755,
        "kubelet_pod_resources_t",
    ),
    ("var/lib/containerd", 0o700, "containerd_var_t"),
    (
        "var/lib/containerd/io.containerd.snapshotter.v1.overlayfs",
        0o700,
        "container_file_t",
    ),
    // Undeclared, on the way to the sandboxes: labelled as its parent.
    (
        "var/lib/containerd/io.containerd.grpc.v1.cri",
        0o755,
        "containerd_var_t",
    ),
    (
        "var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes",
        0o700,
        "container_file_t",
    ),
    ("var/lib/cni", 0o755, "cni_var_t"),
    ("var/log", 0o755, "var_log_t"),
    ("var/log/pods", 0o755, "pods_log_t"),
    ("var/log/audit", 0o700, "audit_log_t"),
    ("var/system", 0o755, "var_t"),
    ("var/system/overlays", 0o755, "overlays_var_t"),
    ("var/mnt", 0o755, "var_mnt_t"),
    ("var/run", 0o755, "var_run_t"),
];

fn context(type_name: &str) -> String {
    format!("system_u:object_r:{type_name}:s0")
}

/// The file_contexts secilc writes for the default layout.
fn file_contexts(arena: &Arena) -> PathBuf {
    let out = arena.outside().join("build");
    let output = arena.semanifest(&[OsStr::new("build"), OsStr::new("--out"), out.as_os_str()]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    out.join("file_contexts")
}

#[test]
fn apply_places_the_default_layout_born_right_then_changes_nothing() {
    for fs_kind in BOTH {
        let arena = Arena::new(fs_kind);
        let output = arena.on_root("apply", &["--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        let report = json(&output);
        // etcd existed (the sentinel) and was already right; its
        // ancestors existed without labels.
        assert_eq!(report["created"], PLACED.len() - 3, "{report:#}");
        assert_eq!(report["repaired"], 2, "{report:#}");
        assert_eq!(report["unchanged"], 1, "{report:#}");
        for (rel, mode, type_name) in PLACED {
            let path = arena.path(rel);
            assert_eq!(mode_of(&path), *mode, "{rel}");
            assert_eq!(
                label_of(&path).as_deref(),
                Some(context(type_name).as_str()),
                "{rel}"
            );
            assert_eq!(
                owner_of(&path),
                if *rel == "var/lib/etcd" {
                    (ETCD_UID, ETCD_GID)
                } else {
                    (0, 0)
                }
            );
        }
        // Nothing left behind.
        assert!(!arena.path("var/lib/.semanifest-apply").exists());

        // Idempotent: a second run changes nothing and says so.
        let again = arena.on_root("apply", &[]);
        assert_eq!(again.status.code(), Some(0), "{}", stderr_of(&again));
        assert_eq!(stdout_of(&again), "");
        assert!(
            stderr_of(&again).contains("nothing to change"),
            "{}",
            stderr_of(&again)
        );
        let check = arena.on_root("apply", &["--check"]);
        assert_eq!(check.status.code(), Some(0), "{}", stderr_of(&check));

        // Independent oracles: setfiles (libselinux) and the relabeler
        // find nothing to relabel on what apply made.
        let fc = file_contexts(&arena);
        let setfiles = run(Command::new("setfiles")
            .args(["-n", "-v", "-F", "-r"])
            .arg(&arena.root)
            .arg(&fc)
            .arg(arena.path("var/lib"))
            .arg(arena.path("var/log"))
            .arg(arena.path("var/mnt"))
            .arg(arena.path("var/run"))
            .arg(arena.path("var/system")));
        assert_eq!(setfiles, "", "setfiles would relabel");
        let relabel = arena.semanifest(&[
            OsStr::new("relabel"),
            OsStr::new("--check"),
            OsStr::new("--json"),
            OsStr::new("--file-contexts"),
            fc.as_os_str(),
            OsStr::new("--root"),
            arena.root.as_os_str(),
            arena.path("var").as_os_str(),
        ]);
        assert_eq!(relabel.status.code(), Some(0), "{}", stderr_of(&relabel));
        assert_eq!(json(&relabel)["relabelled"], 0);
        arena.finish();
    }
}

/// Born right: the declared name only ever appears by a rename of a
/// directory that already has its owner, mode and label (inotify sees
/// `IN_MOVED_TO`, never `IN_CREATE`, for it), and at that moment it is
/// right. Control: `mkdir` then label shows `IN_CREATE` and a window.
#[test]
fn a_created_directory_never_shows_another_label() {
    use rustix::fs::inotify;
    let arena = Arena::new(Fs::Tmpfs);
    let output = arena.on_root("apply", &[]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let kubelet = arena.path("var/lib/kubelet");
    let wanted = context("kubelet_pki_t");

    let watch = |create: &dyn Fn()| -> (Vec<String>, Option<(String, u32)>) {
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
            .expect("inotify");
        inotify::add_watch(
            &fd,
            &kubelet,
            inotify::WatchFlags::CREATE | inotify::WatchFlags::MOVED_TO,
        )
        .expect("watch");
        create();
        let mut events = Vec::new();
        let mut buffer = [std::mem::MaybeUninit::uninit(); 4096];
        let mut reader = inotify::Reader::new(&fd, &mut buffer);
        while let Ok(event) = reader.next() {
            let name = event
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let kind = if event.events().contains(inotify::ReadFlags::CREATE) {
                "create"
            } else {
                "moved-to"
            };
            events.push(format!("{kind} {name}"));
        }
        let pki = kubelet.join("pki");
        let state = label_of(&pki).map(|label| (label, mode_of(&pki)));
        (events, state)
    };

    fs::remove_dir(kubelet.join("pki")).expect("rmdir pki");
    let (events, state) = watch(&|| {
        let output = arena.on_root("apply", &[]);
        assert!(output.status.success(), "{}", stderr_of(&output));
    });
    assert_eq!(
        events,
        ["create .semanifest-apply", "moved-to pki"],
        "pki appears only by a rename"
    );
    assert_eq!(state, Some((wanted.clone(), 0o700)));

    // Control: the naive way creates the name itself, unlabelled.
    fs::remove_dir(kubelet.join("pki")).expect("rmdir pki");
    let seen_between = std::cell::RefCell::new(None);
    let (events, _) = watch(&|| {
        fs::create_dir(kubelet.join("pki")).expect("mkdir");
        *seen_between.borrow_mut() = Some(label_of(&kubelet.join("pki")));
        set_label(&kubelet.join("pki"), &wanted);
    });
    assert_eq!(events, ["create pki"]);
    assert_ne!(
        seen_between.into_inner(),
        Some(Some(wanted)),
        "a window with another label"
    );
    arena.finish();
}

#[test]
fn drift_in_mode_owner_and_label_is_reported_then_repaired() {
    for fs_kind in BOTH {
        let arena = Arena::new(fs_kind);
        let layout = layout_with_owners(&arena);
        let layout = layout.to_str().expect("utf-8");
        let output = arena.on_root("apply", &["--layout", layout]);
        assert!(output.status.success(), "{}", stderr_of(&output));
        // etcd by name from ROOT/etc/passwd; /var/mnt by ids.
        assert_eq!(owner_of(&arena.path("var/lib/etcd")), (ETCD_UID, ETCD_GID));
        assert_eq!(owner_of(&arena.path("var/mnt")), (1000, 1000));

        let mnt = arena.path("var/mnt");
        let log = arena.path("var/log");
        let containerd = arena.path("var/lib/containerd");
        fs::set_permissions(
            &containerd,
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .expect("chmod");
        std::os::unix::fs::lchown(&mnt, Some(0), Some(0)).expect("chown");
        set_label(&log, "system_u:object_r:var_t:s0");
        let before = tree_digest(&arena.path("var"));

        let check = arena.on_root("apply", &["--layout", layout, "--check"]);
        assert_eq!(check.status.code(), Some(1), "{}", stderr_of(&check));
        let shown = |path: &Path| path.display().to_string();
        assert_eq!(
            stdout_of(&check),
            format!(
                "drift {}: mode 0777 -> 0700\n\
                 drift {}: label system_u:object_r:var_t:s0 -> system_u:object_r:var_log_t:s0\n\
                 drift {}: owner 0:0 -> 1000:1000\n",
                shown(&containerd),
                shown(&log),
                shown(&mnt)
            )
        );
        // --check and --dry-run change nothing.
        let dry = arena.on_root("apply", &["--layout", layout, "--dry-run", "--json"]);
        assert_eq!(dry.status.code(), Some(0), "{}", stderr_of(&dry));
        assert_eq!(json(&dry)["changes"].as_array().map(Vec::len), Some(3));
        assert_eq!(tree_digest(&arena.path("var")), before);

        let repair = arena.on_root("apply", &["--layout", layout, "--json"]);
        assert_eq!(repair.status.code(), Some(0), "{}", stderr_of(&repair));
        let report = json(&repair);
        assert_eq!(report["repaired"], 3, "{report:#}");
        let kinds: Vec<&str> = report["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .map(|c| c["change"].as_str().expect("kind"))
            .collect();
        assert_eq!(kinds, ["mode", "label", "owner"]);
        assert_eq!(mode_of(&containerd), 0o700);
        assert_eq!(owner_of(&mnt), (1000, 1000));
        assert_eq!(
            label_of(&log).as_deref(),
            Some("system_u:object_r:var_log_t:s0")
        );
        let again = arena.on_root("apply", &["--layout", layout, "--check"]);
        assert_eq!(again.status.code(), Some(0), "{}", stderr_of(&again));
        arena.finish();
    }
}

/// Owner names come from ROOT/etc/passwd, never from the host's.
#[test]
fn owners_resolve_in_the_target_root_only() {
    let arena = Arena::new(Fs::Tmpfs);
    let outside = arena.outside();
    let text = include_str!("../../../layouts/structured-var.yaml").replace(
        "      mode: \"0700\"\n      access: { kubelet: write }",
        "      mode: \"0700\"\n      owner: daemon\n      access: { kubelet: write }",
    );
    assert!(text.contains("owner: daemon"));
    let layout = outside.join("daemon.yaml");
    fs::write(&layout, &text).expect("layout");
    // `daemon` exists on the host (Debian's base-passwd), not in ROOT.
    assert!(fs::read_to_string("/etc/passwd")
        .expect("host passwd")
        .contains("\ndaemon:"));
    let output = arena.on_root("apply", &["--layout", layout.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    let passwd = arena.path("etc/passwd");
    let line = 1 + text
        .lines()
        .position(|line| line.ends_with("path: /var/lib/kubelet/pki"))
        .expect("pki");
    assert!(
        stderr_of(&output).contains(&format!(
            "owner of /var/lib/kubelet/pki (layout line {line}): user `daemon` is not in {}",
            passwd.display()
        )),
        "{}",
        stderr_of(&output)
    );
    assert!(!arena.path("var/mnt").exists(), "nothing was placed");

    // Control: once ROOT knows the user, its uid is used.
    let mut passwd_text = fs::read_to_string(&passwd).expect("passwd");
    passwd_text.push_str("daemon:x:4242:4343::/:/bin/false\n");
    fs::write(&passwd, passwd_text).expect("passwd");
    let output = arena.on_root("apply", &["--layout", layout.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(owner_of(&arena.path("var/lib/kubelet/pki")), (4242, 4343));
    arena.finish();
}

/// What is in the way is named, never deleted, replaced or followed.
#[test]
fn nothing_in_the_way_is_destroyed_or_followed() {
    for fs_kind in BOTH {
        let arena = Arena::new(fs_kind);
        let outside = arena.outside();
        fs::create_dir_all(outside.join("victim")).expect("victim");
        fs::write(outside.join("victim/keep"), "keep").expect("keep");
        let before = tree_digest(&outside);
        // A file at a declared path, a symlink at another, a symlinked
        // ancestor (into the etcd tree and out of the root).
        fs::create_dir_all(arena.path("var/log")).expect("log");
        fs::write(arena.path("var/log/pods"), "not a directory").expect("file");
        symlink(outside.join("victim"), arena.path("var/mnt")).expect("symlink");
        fs::create_dir_all(arena.path("var/system")).expect("system");
        symlink("../lib/etcd", arena.path("var/system/overlays")).expect("symlink");
        symlink(&outside, arena.path("var/run")).expect("symlink");

        let output = arena.on_root("apply", &[]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
        let stderr = stderr_of(&output);
        for (path, what) in [
            (
                "var/log/pods",
                "is a regular file, not a directory; apply never deletes or replaces it".to_owned(),
            ),
            (
                "var/mnt",
                format!(
                    "is a symlink to {} (never followed)",
                    outside.join("victim").display()
                ),
            ),
            (
                "var/system/overlays",
                "is a symlink to ../lib/etcd (never followed)".to_owned(),
            ),
        ] {
            let line = format!("semanifest: error: {}: {what}", arena.path(path).display());
            assert!(stderr.contains(&line), "{line}\n{stderr}");
        }
        assert_eq!(
            fs::read_to_string(arena.path("var/log/pods")).expect("kept"),
            "not a directory"
        );
        assert_eq!(
            tree_digest(&outside),
            before,
            "nothing outside the root changed"
        );
        // The rest was placed.
        assert_eq!(
            label_of(&arena.path("var/log/audit")).as_deref(),
            Some(context("audit_log_t").as_str())
        );

        // A symlinked ancestor: nothing below it is created through it.
        fs::remove_file(arena.path("var/run")).expect("rm");
        fs::rename(arena.path("var/lib"), arena.path("var/lib.real")).expect("mv");
        symlink("lib.real", arena.path("var/lib")).expect("symlink");
        fs::remove_dir_all(arena.path("var/lib.real/kubelet")).expect("rm kubelet");
        let output = arena.on_root("apply", &[]);
        assert_eq!(output.status.code(), Some(1));
        assert!(
            stderr_of(&output).contains("var/lib: is a symlink to lib.real"),
            "{}",
            stderr_of(&output)
        );
        assert!(
            !arena.path("var/lib.real/kubelet").exists(),
            "nothing created through the link"
        );
        fs::remove_file(arena.path("var/lib")).expect("rm link");
        fs::rename(arena.path("var/lib.real"), arena.path("var/lib")).expect("mv back");
        arena.finish();
    }
}

#[test]
fn a_read_only_filesystem_is_reported_and_left_alone() {
    let mut arena = Arena::new(Fs::Ext4);
    let output = arena.on_root("apply", &[]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    // The mode containerd gave its root before it made it 0700.
    fs::set_permissions(
        arena.path("var/lib/containerd"),
        std::os::unix::fs::PermissionsExt::from_mode(0o711),
    )
    .expect("chmod");
    fs::remove_dir(arena.path("var/log/audit")).expect("rmdir");
    let before = tree_digest(&arena.path("var"));
    let root = arena.root.clone();
    arena.mount(&[OsStr::new("-o"), OsStr::new("remount,ro")], &root);
    let output = arena.on_root("apply", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains("var/lib/containerd: cannot set the mode: read-only filesystem"),
        "{stderr}"
    );
    assert!(
        stderr.contains("var/log/audit: cannot create: read-only filesystem"),
        "{stderr}"
    );
    assert_eq!(tree_digest(&arena.path("var")), before);
    arena.finish();
}

#[test]
fn permission_errors_are_reported_per_directory() {
    let arena = Arena::new(Fs::Tmpfs);
    let output = arena.on_root("apply", &[]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    fs::remove_dir(arena.path("var/log/audit")).expect("rmdir");
    fs::set_permissions(
        arena.path("var/lib/containerd"),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod");
    // As nobody: no directory can be changed or created.
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_semanifest"))
        .args(["apply", "--root"])
        .arg(&arena.root)
        .output()
        .expect("setpriv");
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    let stderr = stderr_of(&output);
    for line in [
        "var/lib/containerd: cannot set the mode: Operation not permitted",
        "var/log/audit: cannot create: Permission denied",
        // Below a directory nobody may search.
        "var/lib/kubelet/pki: cannot open: Permission denied",
    ] {
        assert!(stderr.contains(line), "{line}\n{stderr}");
    }
    assert_eq!(mode_of(&arena.path("var/lib/containerd")), 0o777);
    assert!(!arena.path("var/log/audit").exists());
    arena.finish();
}

/// An empty `.semanifest-apply` left by an interrupted run is cleared;
/// one with anything in it is not ours to delete.
#[test]
fn a_leftover_temporary_directory_is_removed_only_when_empty() {
    let arena = Arena::new(Fs::Tmpfs);
    fs::create_dir_all(arena.path("var/lib/.semanifest-apply")).expect("leftover");
    let output = arena.on_root("apply", &[]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(!arena.path("var/lib/.semanifest-apply").exists());

    fs::remove_dir(arena.path("var/lib/cni")).expect("rmdir");
    fs::create_dir_all(arena.path("var/lib/.semanifest-apply")).expect("leftover");
    fs::write(arena.path("var/lib/.semanifest-apply/data"), "someone's").expect("data");
    let output = arena.on_root("apply", &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr_of(&output)
            .contains(".semanifest-apply is in the way of creating it (Directory not empty"),
        "{}",
        stderr_of(&output)
    );
    assert_eq!(
        fs::read_to_string(arena.path("var/lib/.semanifest-apply/data")).expect("kept"),
        "someone's"
    );
    arena.finish();
}

/// Control for every test: the sentinel digest sees contents, modes,
/// owners and labels.
#[test]
fn the_sentinel_digest_sees_every_change() {
    let arena = Arena::new(Fs::Tmpfs);
    let db = arena.path("var/lib/etcd/member/snap/db");
    type Change = Box<dyn Fn(&Path)>;
    let changes: [(&str, Change); 4] = [
        ("contents", Box::new(|p| fs::write(p, "x").expect("write"))),
        (
            "mode",
            Box::new(|p| {
                fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o644))
                    .expect("chmod")
            }),
        ),
        (
            "owner",
            Box::new(|p| std::os::unix::fs::lchown(p, Some(1), None).expect("chown")),
        ),
        (
            "label",
            Box::new(|p| set_label(p, "system_u:object_r:var_t:s0")),
        ),
    ];
    for (what, change) in &changes {
        let copy = arena.outside().join(format!("etcd-{what}"));
        run(Command::new("cp")
            .arg("-a")
            .arg(arena.path("var/lib/etcd"))
            .arg(&copy));
        assert_eq!(
            tree_digest(&copy),
            arena.sentinel_digest(),
            "{what}: a copy is equal"
        );
        change(&copy.join(db.strip_prefix(arena.path("var/lib/etcd")).expect("below")));
        assert_ne!(tree_digest(&copy), arena.sentinel_digest(), "{what}");
    }
    arena.finish();
}

/// The names in the first cell of each row of the `n`th `| field |` table.
fn documented_fields(doc: &str, n: usize) -> std::collections::BTreeSet<String> {
    doc.split("| field |")
        .nth(n)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.starts_with("| `"))
        .flat_map(|line| {
            let cell = line.split('|').nth(1).unwrap_or_default();
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// docs/apply-json.md lists exactly the fields `--format json` prints, and
/// `--json`, the older spelling, prints the same report; the two together
/// are a usage error. Control: the table without one row disagrees.
#[test]
fn the_json_report_is_the_documented_one() {
    let arena = Arena::new(Fs::Tmpfs);
    let output = arena.on_root("apply", &["--dry-run", "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let mut report = json(&output);
    assert_eq!(report["version"], 1);
    let doc = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/apply-json.md"))
        .expect("docs/apply-json.md");
    let keys = |value: &serde_json::Value| -> std::collections::BTreeSet<String> {
        value.as_object().expect("object").keys().cloned().collect()
    };
    let top = documented_fields(&doc, 1);
    assert_eq!(keys(&report), top);
    let mut without = top.clone();
    without.remove("kept");
    assert_ne!(keys(&report), without);
    let change_fields = documented_fields(&doc, 2);
    let changes = report["changes"].as_array().expect("changes").clone();
    let kinds: std::collections::BTreeSet<&str> = changes
        .iter()
        .map(|change| change["change"].as_str().expect("change"))
        .collect();
    assert_eq!(kinds, ["created", "label"].into(), "{report:#}");
    for change in &changes {
        let unknown: Vec<String> = keys(change).difference(&change_fields).cloned().collect();
        assert!(unknown.is_empty(), "undocumented {unknown:?} in {change}");
    }

    let alias = arena.on_root("apply", &["--dry-run", "--json"]);
    assert_eq!(alias.status.code(), Some(0), "{}", stderr_of(&alias));
    let mut again = json(&alias);
    report["seconds"] = 0.into();
    again["seconds"] = 0.into();
    assert_eq!(again, report);
    let both = arena.on_root("apply", &["--json", "--format", "human"]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr_of(&both));
    assert!(
        stderr_of(&both).contains("cannot be used with"),
        "{}",
        stderr_of(&both)
    );
    arena.finish();
}
