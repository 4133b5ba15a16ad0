//! Mounts placed where the node commands act, as a privileged pod with
//! Bidirectional propagation or a compromised runtime could place them: a
//! bind mount of another directory at a pruned path, on its way, at a
//! removable root or at a declared directory is refused before anything
//! changes (exit 2, the path and the mount named); a filesystem mounted
//! at its own root, a directory bound onto itself and the layout's tmpfs
//! are accepted; what a bind of a whole filesystem's root exposes is
//! still guarded by its labels. Each attack has a control: the naive
//! implementation (acting by path) on a decoy copy of etcd changes it.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use super::arena::*;
use super::prune::fill;

fn bind(arena: &mut Arena, source: &Path, target: &Path) {
    arena.mount(&[OsStr::new("--bind"), source.as_os_str()], target);
}

/// Refused with exit 2, naming `path` and the bind of a directory whose
/// path in its filesystem ends with `mount`.
#[track_caller]
fn refused(output: &std::process::Output, path: &Path, mount: &str) {
    let stderr = stderr_of(output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let line = format!("{}: a bind mount of another directory: ", path.display());
    let named = stderr
        .lines()
        .find_map(|at| at.split_once(&line))
        .is_some_and(|(_, rest)| rest.contains(&format!("{mount} of ")));
    assert!(named, "wanted {line:?} and {mount:?} in:\n{stderr}");
    assert!(
        stderr.contains("is mounted here: acting through it would change that directory instead"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was changed"), "{stderr}");
}

/// `prune /var/mnt` with etcd bound onto `/var/mnt`: refused, nothing
/// changed. Control: a prune by path empties a decoy bound the same way.
#[test]
fn prune_refuses_a_bind_of_etcd_on_the_pruned_path() {
    for fs_kind in BOTH {
        let mut arena = placed(fs_kind);
        let var_mnt = arena.path("var/mnt");
        fill(&var_mnt, "m");
        let before = digest(&arena.path("var"));
        let etcd = arena.path("var/lib/etcd");
        bind(&mut arena, &etcd, &var_mnt);
        assert!(var_mnt.join("member/snap/db").exists(), "control: exposed");

        let output = arena.on_root("prune", &["/var/mnt"]);
        refused(&output, &var_mnt, "/var/lib/etcd");
        let output = arena.on_root("prune", &["/var/mnt", "--dry-run"]);
        refused(&output, &var_mnt, "/var/lib/etcd");
        umount(&var_mnt);
        assert_eq!(digest(&arena.path("var")), before, "nothing changed");

        // Control: the naive prune through the same bind of a decoy.
        let decoy = decoy(&arena, "decoy");
        bind(&mut arena, &decoy, &var_mnt);
        naive_empty(&var_mnt);
        umount(&var_mnt);
        assert!(
            names(&decoy).is_empty(),
            "the naive prune emptied the decoy"
        );
        arena.finish();
    }
}

/// What a node legitimately mounts at a pruned path is pruned through: a
/// tmpfs (own root), the directory bound onto itself (the layout's
/// rshared mount unit), a filesystem image at its own root.
#[test]
fn prune_acts_through_a_filesystem_at_its_root_and_a_self_bind() {
    let mut arena = placed(Fs::Ext4);
    let var_mnt = arena.path("var/mnt");
    // The layout's mount unit: /var/mnt bound onto itself, rshared.
    bind(&mut arena, &var_mnt, &var_mnt);
    run(Command::new("mount").arg("--make-rshared").arg(&var_mnt));
    fill(&var_mnt, "s");
    let output = arena.on_root("prune", &["/var/mnt"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(names(&var_mnt).is_empty());
    // A volume mounted at /var/lib/containerd (own root).
    let containerd = arena.path("var/lib/containerd");
    arena.mount(
        &[OsStr::new("-t"), OsStr::new("tmpfs"), OsStr::new("volume")],
        &containerd,
    );
    fill(&containerd, "v");
    let output = arena.on_root("prune", &["--lifecycle", "cache"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(names(&containerd).is_empty());
    arena.finish();
}

/// `prune --lifecycle cache` with an outside directory bound onto
/// `/var/lib/containerd`: refused, and the other cache path is not pruned
/// either. A bind on the way (onto `/var/lib`, holding a `containerd`) is
/// refused naming `/var/lib`.
#[test]
fn prune_refuses_a_bind_at_a_cache_path_or_on_its_way() {
    let mut arena = placed(Fs::Tmpfs);
    let containerd = arena.path("var/lib/containerd");
    let overlays = arena.path("var/system/overlays");
    fill(&containerd, "c");
    fill(&overlays, "o");
    let outside = arena.outside().join("victim");
    fill(&outside, "v");
    let victim = digest(&outside);
    let before = digest(&arena.path("var"));

    bind(&mut arena, &outside, &containerd);
    let output = arena.on_root("prune", &["--lifecycle", "cache"]);
    refused(&output, &containerd, "outside/victim");
    umount(&containerd);
    assert_eq!(digest(&outside), victim);
    assert_eq!(
        digest(&arena.path("var")),
        before,
        "overlays not pruned either"
    );

    // On the way: the outside directory, holding a containerd, on /var/lib.
    fs::create_dir_all(outside.join("containerd/x")).expect("mkdir");
    let victim = digest(&outside);
    let var_lib = arena.path("var/lib");
    bind(&mut arena, &outside, &var_lib);
    let output = arena.on_root("prune", &["/var/lib/containerd"]);
    refused(&output, &var_lib, "outside/victim");
    umount(&var_lib);
    assert_eq!(digest(&outside), victim);
    assert_eq!(digest(&arena.path("var")), before);

    // Control: the naive prune of the cache paths empties the victim.
    bind(&mut arena, &outside, &containerd);
    naive_empty(&containerd);
    umount(&containerd);
    assert!(names(&outside).is_empty());
    arena.finish();
}

/// `rm -r /var/mnt/d` with an unlabelled outside directory bound onto
/// the removable root: refused, nothing removed. Controls: unmounted, the
/// same rm removes `/var/mnt/d`; a naive rm through the bind removes the
/// outside `d`.
#[test]
fn rm_refuses_a_bind_of_another_directory_on_the_removable_root() {
    let mut arena = placed(Fs::Tmpfs);
    let var_mnt = arena.path("var/mnt");
    fs::create_dir_all(var_mnt.join("d/e")).expect("mkdir");
    let outside = arena.outside().join("victim");
    fs::create_dir_all(outside.join("d/e")).expect("mkdir");
    fs::write(outside.join("d/e/data"), "precious").expect("write");
    let victim = digest(&outside);
    bind(&mut arena, &outside, &var_mnt);

    let output = arena.on_root("rm", &["-r", "/var/mnt/d"]);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let line = format!(
        "semanifest: refused: {}/d: the way to the removable root /var/mnt is refused: {}: a \
         bind mount of another directory: ",
        var_mnt.display(),
        var_mnt.display(),
    );
    assert!(stderr.contains(&line), "{line}\n{stderr}");
    assert!(stderr.contains("outside/victim of "), "{stderr}");
    assert!(stderr.contains("nothing was removed"), "{stderr}");
    // The JSON report says the same.
    let output = arena.on_root("rm", &["-r", "--json", "/var/mnt/d"]);
    assert_eq!(output.status.code(), Some(2));
    let report = json(&output);
    assert_eq!(report["refused_total"], 1);
    assert_eq!(report["objects"], 0);
    assert_eq!(digest(&outside), victim);

    // Control: a naive rm through the bind (in a child: see `umount`).
    run(Command::new("rm").arg("-r").arg(var_mnt.join("d")));
    assert!(
        !outside.join("d").exists(),
        "the naive rm removed the victim's d"
    );
    umount(&var_mnt);
    let output = arena.on_root("rm", &["-r", "/var/mnt/d"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(!var_mnt.join("d").exists());
    arena.finish();
}

/// A layout with a declared directory below `/var/mnt`, owned by the
/// pods' user, as a hostPath volume root.
pub(super) fn layout_with_shared(arena: &Arena) -> std::path::PathBuf {
    let text = include_str!("../../../layouts/structured-var.yaml").replace(
        "    - path: /var/run\n",
        "    - path: /var/mnt/shared\n      type: mnt_shared_t\n      mode: \"0750\"\n      \
         owner: \"1000:1000\"\n      access: { pods: write, kubelet: write, containerd: write \
         }\n\n    - path: /var/run\n",
    );
    let path = arena.outside().join("shared.yaml");
    fs::write(&path, text).expect("layout");
    path
}

/// `apply` with etcd bound onto `/var/mnt`, and onto a declared directory
/// below it: refused, etcd neither relabelled nor chowned nor chmodded.
/// Control: a naive apply (chown, chmod, setxattr by path) through the
/// same bind changes a decoy.
#[test]
fn apply_refuses_a_bind_of_etcd_on_a_declared_path() {
    for fs_kind in BOTH {
        let mut arena = Arena::new(fs_kind);
        let layout = layout_with_shared(&arena);
        let layout = layout.to_str().expect("utf-8");
        let output = arena.on_root("apply", &["--layout", layout]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        let etcd = arena.path("var/lib/etcd");
        let before = digest(&arena.path("var"));
        for at in ["var/mnt", "var/mnt/shared"] {
            let target = arena.path(at);
            bind(&mut arena, &etcd, &target);
            for args in [&["--layout", layout][..], &["--layout", layout, "--check"]] {
                let output = arena.on_root("apply", args);
                refused(&output, &target, "/var/lib/etcd");
            }
            umount(&target);
            assert_eq!(digest(&arena.path("var")), before, "{at}: nothing changed");
        }
        // A declared directory missing below the bind: nothing is made in
        // etcd either.
        fs::remove_dir(arena.path("var/mnt/shared")).expect("rmdir");
        let var_mnt = arena.path("var/mnt");
        bind(&mut arena, &etcd, &var_mnt);
        let output = arena.on_root("apply", &["--layout", layout]);
        refused(&output, &var_mnt, "/var/lib/etcd");
        umount(&var_mnt);
        assert!(!etcd.join("shared").exists());

        // Control: the naive apply through a bind of a decoy.
        let decoy = decoy(&arena, "decoy");
        bind(&mut arena, &decoy, &var_mnt);
        let naive = var_mnt.join("shared");
        fs::create_dir(&naive).expect("mkdir");
        rustix::fs::chown(
            &var_mnt,
            Some(rustix::fs::Uid::from_raw(1000)),
            Some(rustix::fs::Gid::from_raw(1000)),
        )
        .expect("chown");
        fs::set_permissions(&var_mnt, fs::Permissions::from_mode(0o755)).expect("chmod");
        set_label(&var_mnt, "system_u:object_r:var_mnt_t:s0");
        umount(&var_mnt);
        let meta = fs::metadata(&decoy).expect("decoy");
        assert_eq!((meta.uid(), meta.mode() & 0o777), (1000, 0o755));
        assert_eq!(
            label_of(&decoy).as_deref(),
            Some("system_u:object_r:var_mnt_t:s0")
        );
        assert!(decoy.join("shared").exists());
        arena.finish();
    }
}

/// The layout's own mounts are checked to be what it says: a tmpfs at
/// `/var/run` and `/var/mnt` bound onto itself are accepted; a bind of
/// the directory onto itself where the layout mounts a tmpfs is not.
#[test]
fn apply_checks_the_layouts_own_mounts() {
    let mut arena = placed(Fs::Ext4);
    let var_run = arena.path("var/run");
    let var_mnt = arena.path("var/mnt");
    bind(&mut arena, &var_run, &var_run);
    let before = digest(&arena.path("var"));
    let output = arena.on_root("apply", &[]);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let line = format!(
        "{}: a bind mount of the directory onto itself (/var/run of",
        var_run.display()
    );
    assert!(stderr.contains(&line), "{line}\n{stderr}");
    assert!(
        stderr.contains(
            "where the layout mounts a tmpfs (/var/run declares `mount: { tmpfs: true }`)"
        ),
        "{stderr}"
    );
    umount(&var_run);
    assert_eq!(digest(&arena.path("var")), before);
    // Control: what the units mount is accepted.
    arena.mount(
        &[OsStr::new("-t"), OsStr::new("tmpfs"), OsStr::new("none")],
        &var_run,
    );
    bind(&mut arena, &var_mnt, &var_mnt);
    run(Command::new("mount").arg("--make-rshared").arg(&var_mnt));
    let output = arena.on_root("apply", &["--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    // The tmpfs's root got its label, the self-bound /var/mnt kept its own.
    assert_eq!(
        label_of(&var_run).as_deref(),
        Some("system_u:object_r:var_run_t:s0")
    );
    arena.finish();
}

/// A bind of a whole filesystem's root looks like a filesystem mounted at
/// its own root (accepted); what it exposes is guarded by its labels:
/// objects with a protected type are never moved or deleted by prune,
/// nor removed by rm. Control: the unprotected objects beside them go.
#[test]
fn protected_labels_under_an_accepted_mount_are_never_pruned() {
    let mut arena = placed(Fs::Tmpfs);
    let volume = arena.outside().join("volume");
    fs::create_dir_all(&volume).expect("mkdir");
    arena.mount(
        &[OsStr::new("-t"), OsStr::new("tmpfs"), OsStr::new("volume")],
        &volume,
    );
    // The volume holds etcd's data and pods' files.
    run(Command::new("cp")
        .arg("-a")
        .arg(arena.path("var/lib/etcd"))
        .arg(volume.join("etcd")));
    for entry in walk(&volume.join("etcd")) {
        set_label(&entry, ETCD_LABEL);
    }
    fs::create_dir_all(volume.join("pods/data")).expect("mkdir");
    fs::write(volume.join("pods/data/f"), "pod").expect("write");
    fs::write(volume.join("top"), "pod").expect("write");
    // A moved tree holding an etcd-labelled file keeps it in the trash.
    fs::create_dir_all(volume.join("mixed")).expect("mkdir");
    fs::hard_link(volume.join("etcd/member/snap/db"), volume.join("mixed/db")).expect("link");
    let etcd_copy = digest(&volume.join("etcd"));
    let var_mnt = arena.path("var/mnt");
    bind(&mut arena, &volume, &var_mnt);

    let output = arena.on_root("rm", &["-r", "/var/mnt/etcd"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    assert!(stderr_of(&output).contains("a protected type: never removed"));

    let output = arena.on_root("prune", &["/var/mnt", "--json"]);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let line = format!(
        "semanifest: error: {}/etcd: labelled `{ETCD_LABEL}`, a protected type: never pruned; kept",
        var_mnt.display()
    );
    assert!(stderr.contains(&line), "{line}\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "semanifest: warning: {}/.semanifest-trash/mixed/db: labelled",
            var_mnt.display()
        )),
        "{stderr}"
    );
    let report = json(&output);
    assert_eq!(report["targets"][0]["left_in_trash"], 1, "{report:#}");
    umount(&var_mnt);
    assert_eq!(
        digest(&volume.join("etcd")),
        etcd_copy,
        "the etcd copy kept"
    );
    // Control: the unprotected objects went; the protected link stays in
    // the trash.
    assert_eq!(
        names(&volume),
        [".semanifest-trash", "etcd"]
            .iter()
            .map(std::ffi::OsString::from)
            .collect()
    );
    assert!(volume.join(".semanifest-trash/mixed/db").exists());
    arena.finish();
}
