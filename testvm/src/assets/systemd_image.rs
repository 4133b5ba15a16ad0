//! The systemd stage's guest: Debian 12 as debootstrap makes it (minbase
//! with systemd, containerd and etcd), with the layout's policy, units and
//! binary installed by `semanifest build --install-root`, labelled by
//! setfiles, on an ext4 root disk; and a busybox initramfs that mounts it
//! and hands over to systemd. The packages are cached in
//! `cache/systemd-debs/KEY`, KEY a digest of the suite, mirror and package
//! list; the root is built fresh every run.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _, Result};

use crate::assets::initramfs;
use crate::host::{self, say};

const SUITE: &str = "bookworm";
const MIRROR: &str = "http://deb.debian.org/debian";
const PACKAGES: [&str; 8] = [
    "systemd",
    "systemd-sysv",
    "udev",
    "selinux-utils",
    "policycoreutils",
    // The runtime and the store the CRI boots run for real (runc comes
    // with containerd).
    "containerd",
    "etcd-server",
    "etcd-client",
];
/// What `build --install-root` names the policy (its default).
const POLICY: &str = "semanifest";
/// The test units (testvm/guest/systemd/units): kubelet's is a stand-in
/// (containerd's and etcd's are Debian's).
const UNITS: [&str; 3] = ["test.target", "testvm-scenarios.service", "kubelet.service"];
/// Drop-ins (testvm/guest/systemd/units/UNIT.d/testvm.conf) for Debian's
/// units.
const DROP_INS: [&str; 1] = ["etcd.service"];
/// udev does nothing the scenarios need, and costs time under TCG.
const MASKED: [&str; 4] = [
    "systemd-udevd.service",
    "systemd-udev-trigger.service",
    "systemd-udevd-control.socket",
    "systemd-udevd-kernel.socket",
];

/// The package cache's key.
fn key() -> String {
    let text = format!("{SUITE} {MIRROR} {}\n", PACKAGES.join(","));
    host::sha256_bytes(text.as_bytes())[..16].to_owned()
}

/// The stage's root disks.
pub struct Image {
    /// `work/root.img`: the image as built.
    pub disk: PathBuf,
    /// `work/control.img`: the same, with guest/systemd/relabel-fails.conf
    /// as a drop-in of semanifest-relabel.service (when asked for).
    pub control_disk: Option<PathBuf>,
    /// The units that place the layout: semanifest-*.service and the
    /// layout's mount units, as `semanifest build` generated them.
    pub layout_units: Vec<String>,
}

/// What the boots that make pods through containerd's CRI need in the
/// image.
pub struct CriAssets {
    /// The `cri-run` binary (testvm/cri), installed as
    /// /usr/local/bin/cri-run.
    pub cri_run: PathBuf,
    /// The OCI image archive (assets::oci_image), in
    /// /usr/lib/testvm/images.
    pub image: PathBuf,
}

/// Builds `work/root.img`: debootstrap, `semanifest build
/// --install-root`, the test units and drop-ins, containerd's
/// configuration, the runner with the scenarios and `plan`
/// (plan::Plan::guest_text), `cri` when given, setfiles, mkfs.ext4; and
/// `work/control.img` when `control`.
pub fn build(
    cache: &Path,
    work: &Path,
    testvm: &Path,
    semanifest: &Path,
    plan: &str,
    control: bool,
    cri: Option<&CriAssets>,
) -> Result<Image> {
    let key = key();
    let debs = cache.join("systemd-debs").join(&key);
    let cached = fs::read_dir(&debs).is_ok_and(|mut d| d.next().is_some());
    say(format!(
        "debootstrap {SUITE} ({}, packages {})",
        if cached { "cached" } else { "downloading" },
        key
    ));
    if !cached {
        // Another key's packages are stale.
        let _ = fs::remove_dir_all(cache.join("systemd-debs"));
    }
    fs::create_dir_all(&debs)?;
    let root = work.join("systemd-root");
    debootstrap(&debs, &root, work)?;

    say("semanifest build --install-root (policy, units, binary)");
    let layout = layout(testvm, work)?;
    host::run_logged(
        Command::new(semanifest)
            .arg("build")
            .arg("--layout")
            .arg(&layout)
            .arg("--out")
            .arg(work.join("systemd-policy"))
            // spc_t, the privileged domain the agents' control runs in.
            .arg("--include")
            .arg(testvm.join("guest/systemd/privileged.cil"))
            .arg("--install-root")
            .arg(&root),
        &work.join("systemd-build.log"),
        "semanifest build --install-root",
    )?;
    let guest = testvm.join("guest/systemd");
    let unit_dir = root.join("usr/lib/systemd/system");
    let layout_units = layout_units(&unit_dir)?;
    for unit in UNITS {
        fs::copy(guest.join("units").join(unit), unit_dir.join(unit))
            .with_context(|| format!("cannot install the unit {unit}"))?;
    }
    let etc = root.join("etc/systemd/system");
    for unit in DROP_INS {
        let dir = etc.join(format!("{unit}.d"));
        fs::create_dir_all(&dir)?;
        fs::copy(
            guest.join("units").join(format!("{unit}.d/testvm.conf")),
            dir.join("testvm.conf"),
        )
        .with_context(|| format!("cannot install the drop-in of {unit}"))?;
    }
    // What every node has and debootstrap does not write: /etc/hosts (the
    // runtime copies it into each pod) and the CNI plugins' directories
    // (containerd's CRI watches the configuration's, or makes it).
    fs::write(
        root.join("etc/hosts"),
        "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    )?;
    for dir in ["etc/cni/net.d", "usr/lib/cni"] {
        fs::create_dir_all(root.join(dir))?;
    }
    // containerd's CRI with SELinux, and the image it has for sandboxes.
    fs::copy(
        guest.join("containerd.toml"),
        root.join("etc/containerd/config.toml"),
    )
    .context("cannot install containerd's configuration")?;
    let default = etc.join("default.target");
    let _ = fs::remove_file(&default);
    symlink("/usr/lib/systemd/system/test.target", &default)?;
    for unit in MASKED {
        let link = etc.join(unit);
        let _ = fs::remove_file(&link);
        symlink("/dev/null", &link)?;
    }
    let lib = root.join("usr/lib/testvm");
    fs::create_dir_all(&lib)?;
    fs::copy(guest.join("run"), lib.join("run"))?;
    initramfs::copy_tree(&testvm.join("scenarios"), &lib.join("scenarios"))?;
    fs::write(lib.join("plan"), plan)?;
    expectations(&root, semanifest, &layout_units, &lib)?;
    if let Some(cri) = cri {
        initramfs::install(&cri.cri_run, &root.join("usr/local/bin/cri-run"), 0o755)?;
        let images = lib.join("images");
        fs::create_dir_all(&images)?;
        let name = cri.image.file_name().context("the image archive's name")?;
        fs::copy(&cri.image, images.join(name))?;
    }

    let file_contexts = root.join(format!("etc/selinux/{POLICY}/contexts/files/file_contexts"));
    host::run_logged(
        Command::new("setfiles")
            .args(["-F", "-r"])
            .arg(&root)
            .arg(&file_contexts)
            .arg(&root),
        &work.join("setfiles.log"),
        "setfiles (labelling the root)",
    )?;
    let disk = ext4(&root, &work.join("root.img"))?;
    if !control {
        return Ok(Image {
            disk,
            control_disk: None,
            layout_units,
        });
    }

    let drop_ins = etc.join("semanifest-relabel.service.d");
    fs::create_dir_all(&drop_ins)?;
    fs::copy(
        guest.join("relabel-fails.conf"),
        drop_ins.join("testvm-relabel-fails.conf"),
    )?;
    host::output(
        Command::new("setfiles")
            .arg("-r")
            .arg(&root)
            .arg(&file_contexts)
            .arg(&drop_ins),
        "setfiles (the control's drop-in)",
    )?;
    let control_disk = ext4(&root, &work.join("control.img"))?;
    Ok(Image {
        disk,
        control_disk: Some(control_disk),
        layout_units,
    })
}

/// debootstrap, its packages from and into `debs`. While it configures
/// them it forbids every service start (a `policy-rc.d` that exits 101, a
/// stand-in start-stop-daemon): etcd-server's maintainer script does not
/// start etcd on the host.
fn debootstrap(debs: &Path, root: &Path, work: &Path) -> Result<()> {
    host::run_logged(
        Command::new("debootstrap")
            .args([
                "--variant=minbase",
                &format!("--include={}", PACKAGES.join(",")),
            ])
            .arg(format!("--cache-dir={}", fs::canonicalize(debs)?.display()))
            .arg(SUITE)
            .arg(root)
            .arg(MIRROR),
        &work.join("debootstrap.log"),
        "debootstrap",
    )
}

/// `mkfs.ext4 -d root` into a fresh 1 GiB sparse `image`; mke2fs copies
/// the labels (security.selinux xattrs).
fn ext4(root: &Path, image: &Path) -> Result<PathBuf> {
    let _ = fs::remove_file(image);
    host::output(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-L", "root", "-d"])
            .arg(root)
            .arg(image)
            .arg("1G"),
        &format!("mkfs.ext4 ({})", image.display()),
    )?;
    Ok(image.to_owned())
}

/// The units in `dir` that `semanifest build` generated to place the
/// layout (not kubens, not the runtime drop-ins).
fn layout_units(dir: &Path) -> Result<Vec<String>> {
    let mut units = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let placing = name.starts_with("semanifest-") || name.ends_with(".mount");
        if placing
            && path.is_file()
            && fs::read_to_string(&path)?.starts_with("# Generated by semanifest")
        {
            units.push(name.to_owned());
        }
    }
    units.sort();
    if !units.iter().any(|u| u == "semanifest-apply.service") {
        bail!(
            "semanifest build installed no semanifest-apply.service in {}",
            dir.display()
        );
    }
    Ok(units)
}

/// The mount line of the default layout's `/var/mnt`, and what the image
/// has instead: the flags `mountopts/…` checks on the live mount.
const VAR_MNT_MOUNT: (&str, &str) = (
    "    - path: /var/mnt\n",
    "      mount: { propagation: rshared }\n",
);
const VAR_MNT_MOUNT_FLAGS: &str =
    "      mount: { propagation: rshared, options: [nodev, nosuid, noexec] }\n";

/// The image's layout, `work/systemd-layout.yaml`: the default layout
/// (layouts/structured-var.yaml, whose `spec.paths` list comes last) with
/// `/var/mnt` mounted nodev, nosuid and noexec, and
/// guest/systemd/layout-node.yaml appended: one more tmpfs path, and the
/// node section (kubens, the runtime stand-ins' commands).
fn layout(testvm: &Path, work: &Path) -> Result<PathBuf> {
    let default = testvm.join("../layouts/structured-var.yaml");
    let mut text = fs::read_to_string(&default)
        .with_context(|| format!("cannot read {}", default.display()))?;
    let (path, mount) = VAR_MNT_MOUNT;
    let at = text
        .find(path)
        .map(|start| start + path.len())
        .and_then(|body| {
            let end = text[body..]
                .find("    - path: ")
                .map_or(text.len(), |n| body + n);
            text[body..end].find(mount).map(|n| body + n)
        })
        .with_context(|| {
            format!(
                "{}: no `{}` under /var/mnt",
                default.display(),
                mount.trim()
            )
        })?;
    text.replace_range(at..at + mount.len(), VAR_MNT_MOUNT_FLAGS);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&fs::read_to_string(
        testvm.join("guest/systemd/layout-node.yaml"),
    )?);
    let layout = work.join("systemd-layout.yaml");
    fs::write(&layout, text)?;
    Ok(layout)
}

/// The scenarios' expectations: `expected` (PATH CONTEXT for every
/// declared directory the image does not hold through a symlink) and
/// `var-run` (the context the layout gives /var/run), both from the
/// layout the image carries and the file_contexts build wrote; `tmpfs`
/// from the layout's mount units among `units`.
fn expectations(root: &Path, semanifest: &Path, units: &[String], out: &Path) -> Result<()> {
    let layout = root.join("usr/lib/semanifest/layout.yaml");
    let text =
        fs::read_to_string(&layout).with_context(|| format!("cannot read {}", layout.display()))?;
    let declared = declared_paths(&text);
    if declared.is_empty() {
        bail!("{} declares no path", layout.display());
    }
    let mut paths: Vec<&str> = declared
        .iter()
        .map(String::as_str)
        .filter(|path| !through_symlink(root, path))
        .collect();
    paths.push("/var/run");
    let file_contexts = root.join(format!("etc/selinux/{POLICY}/contexts/files/file_contexts"));
    let looked = host::output(
        Command::new(semanifest)
            .arg("lookup")
            .arg("--file-contexts")
            .arg(&file_contexts)
            .args(["--mode", "dir"])
            .args(&paths),
        "semanifest lookup",
    )?;
    let mut expected = String::new();
    let mut var_run = String::new();
    for line in looked.lines() {
        let Some((path, context)) = line.split_once('\t') else {
            continue;
        };
        if path == "/var/run" {
            var_run = format!("{context}\n");
        } else {
            expected.push_str(&format!("{path} {context}\n"));
        }
    }
    fs::write(out.join("expected"), expected)?;
    fs::write(out.join("var-run"), var_run)?;
    fs::write(out.join("tmpfs"), tmpfs_mounts(root, units)?)?;
    Ok(())
}

/// `WHERE CONTEXT` for every tmpfs mount unit among the layout's `units`
/// whose path the image does not hold through a symlink (those units skip
/// themselves).
fn tmpfs_mounts(root: &Path, units: &[String]) -> Result<String> {
    let mut found = String::new();
    let dir = root.join("usr/lib/systemd/system");
    for name in units.iter().filter(|name| name.ends_with(".mount")) {
        let unit = dir.join(name);
        let text = fs::read_to_string(&unit)?;
        let value = |key: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(key))
                .map(str::trim)
        };
        let (Some(where_), Some("tmpfs"), Some(options)) =
            (value("Where="), value("Type="), value("Options="))
        else {
            continue;
        };
        let Some(context) = options
            .split(',')
            .find_map(|option| option.strip_prefix("context="))
        else {
            bail!("{}: a tmpfs without context=", unit.display());
        };
        if !through_symlink(root, where_) {
            found.push_str(&format!("{where_} {context}\n"));
        }
    }
    Ok(found)
}

/// The `path:` of every entry of the layout's `spec.paths`.
fn declared_paths(layout: &str) -> Vec<String> {
    layout
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- path:"))
        .map(|rest| rest.split('#').next().unwrap_or("").trim())
        .map(|path| path.trim_matches(|c| c == '"' || c == '\''))
        .filter(|path| path.starts_with('/'))
        .map(str::to_owned)
        .collect()
}

/// `path` or one of its parents is a symlink in the image.
fn through_symlink(root: &Path, path: &str) -> bool {
    let mut here = root.to_owned();
    path.split('/').filter(|part| !part.is_empty()).any(|part| {
        here.push(part);
        fs::symlink_metadata(&here).is_ok_and(|m| m.file_type().is_symlink())
    })
}

/// The initramfs: busybox, the kernel modules in load order and
/// testvm/guest/systemd/init, as `work/systemd-initramfs.cpio`.
pub fn initramfs(work: &Path, testvm: &Path, cache: &Path, modules: &[String]) -> Result<PathBuf> {
    say("initramfs (busybox, modules, switch_root to systemd)");
    let root = work.join("systemd-initramfs");
    for dir in ["bin", "lib/modules", "etc/testvm", "proc", "dev"] {
        fs::create_dir_all(root.join(dir))?;
    }
    initramfs::install(Path::new("/bin/busybox"), &root.join("bin/busybox"), 0o755)?;
    for applet in [
        "sh",
        "mount",
        "umount",
        "insmod",
        "mkdir",
        "cat",
        "cut",
        "switch_root",
        "poweroff",
    ] {
        symlink("busybox", root.join("bin").join(applet))?;
    }
    for module in modules {
        let name = format!("{module}.ko");
        fs::copy(
            cache.join("kernel/modules").join(&name),
            root.join("lib/modules").join(&name),
        )?;
    }
    fs::write(root.join("etc/testvm/modules"), modules.join("\n") + "\n")?;
    initramfs::install(
        &testvm.join("guest/systemd/init"),
        &root.join("init"),
        0o755,
    )?;
    let archive = work.join("systemd-initramfs.cpio");
    initramfs::cpio(&root, &archive)?;
    Ok(archive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_paths_come_from_the_layout() {
        let layout = "spec:\n  paths:\n    - path: /var\n      type: var_t\n    - path: \"/var/lib/etcd\"  # etcd\n      description: not - path: /x\n    - path: relative\n";
        assert_eq!(declared_paths(layout), ["/var", "/var/lib/etcd"]);
        assert!(declared_paths("kind: Layout\n").is_empty());
    }

    #[test]
    fn a_path_below_a_symlink_is_held_by_the_image() {
        let root = std::env::temp_dir().join(format!("testvm-systemd-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("var/lib")).unwrap();
        fs::create_dir_all(root.join("run")).unwrap();
        symlink("/run", root.join("var/run")).unwrap();
        assert!(through_symlink(&root, "/var/run"));
        assert!(through_symlink(&root, "/var/run/containerd"));
        assert!(!through_symlink(&root, "/var/lib"));
        // Not there yet: apply makes it.
        assert!(!through_symlink(&root, "/var/lib/etcd"));
        fs::remove_dir_all(&root).unwrap();
    }
}
