//! The busybox stage's initramfs: busybox, crun, runc, runcon,
//! getfattr/setfattr, `semanifest` and the shared libraries they need (the
//! guest has no glibc of its own), the kernel modules, the policies, the
//! guest scripts, the scenarios with the plan, and the pods' image. Built
//! fresh every run into the run directory.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context as _, Result};

use crate::host::{self, say};

/// What goes in besides the host's binaries.
pub struct Inputs<'a> {
    /// testvm/ of the repository (guest scripts).
    pub testvm: &'a Path,
    pub cache: &'a Path,
    pub semanifest: &'a Path,
    /// policy.33, policy-leaky.33 and file_contexts.
    pub policy: &'a Path,
    /// The refpolicy stores, when a boot loads them.
    pub refpolicy: Option<&'a Path>,
    /// The Fedora stores, when a boot loads them.
    pub fedora: Option<&'a Path>,
    /// The modules in load order.
    pub modules: &'a [String],
    /// The guests' plan (plan::Plan::guest_text).
    pub plan: &'a str,
}

/// Builds `work/initramfs` and archives it as `work/initramfs.cpio`.
pub fn build(work: &Path, inputs: &Inputs<'_>) -> Result<PathBuf> {
    say("initramfs");
    let root = work.join("initramfs");
    for dir in [
        "bin",
        "etc/selinux",
        "etc/semanifest",
        "etc/testvm",
        "lib/modules",
        "proc",
        "sys",
        "dev",
        "run",
        "tmp",
        "var",
    ] {
        fs::create_dir_all(root.join(dir))?;
    }
    let busybox = Path::new("/bin/busybox");
    install(busybox, &root.join("bin/busybox"), 0o755)?;
    let applets = host::output(Command::new(busybox).arg("--list"), "busybox --list")?;
    for applet in applets.lines().filter(|a| !a.is_empty()) {
        let link = root.join("bin").join(applet);
        if fs::symlink_metadata(&link).is_err() {
            symlink("busybox", &link)?;
        }
    }
    for (command, dest) in [
        ("crun", "/usr/bin/crun"),
        ("runc", "/usr/bin/runc"),
        ("getfattr", "/usr/bin/getfattr"),
        ("setfattr", "/usr/bin/setfattr"),
        ("runcon", "/usr/bin/runcon"),
    ] {
        let path = host::find_command(command)
            .with_context(|| format!("{command} is not on PATH; run scripts/install-deps"))?;
        install_with_libs(&root, &path, dest)?;
    }
    install_with_libs(&root, inputs.semanifest, "/usr/bin/semanifest")?;
    // Whatever profile built it, the guest needs no debug info.
    host::output(
        Command::new("strip")
            .arg("--strip-debug")
            .arg(root.join("usr/bin/semanifest")),
        "strip",
    )?;
    for module in inputs.modules {
        let name = format!("{module}.ko");
        fs::copy(
            inputs.cache.join("kernel/modules").join(&name),
            root.join("lib/modules").join(&name),
        )?;
    }
    let mut list = inputs.modules.join("\n");
    list.push('\n');
    fs::write(root.join("etc/testvm/modules"), list)?;
    // libselinux tools refuse to run without it.
    fs::write(
        root.join("etc/selinux/config"),
        "SELINUX=permissive\nSELINUXTYPE=semanifest\n",
    )?;
    for file in ["policy.33", "policy-leaky.33", "file_contexts"] {
        fs::copy(
            inputs.policy.join(file),
            root.join("etc/semanifest").join(file),
        )?;
    }
    if let Some(refpolicy) = inputs.refpolicy {
        copy_tree(refpolicy, &root.join("etc/semanifest/refpolicy"))?;
    }
    if let Some(fedora) = inputs.fedora {
        copy_tree(fedora, &root.join("etc/semanifest/fedora"))?;
    }
    // The store boots enter init_t the way a service manager does: through a file
    // of init's entry type (a copy of busybox, so labelled on its own).
    install(busybox, &root.join("usr/libexec/testvm/sh"), 0o755)?;
    let guest = inputs.testvm.join("guest");
    install(&guest.join("init"), &root.join("init"), 0o755)?;
    install(&guest.join("suite"), &root.join("suite"), 0o755)?;
    for lib in ["helpers", "pods"] {
        install(&guest.join(lib), &root.join("etc/testvm").join(lib), 0o644)?;
    }
    copy_tree(
        &inputs.testvm.join("scenarios"),
        &root.join("etc/testvm/scenarios"),
    )?;
    fs::write(root.join("etc/testvm/plan"), inputs.plan)?;

    // The pods' image: a static busybox, nothing else.
    let pod = root.join("pods/rootfs");
    for dir in ["bin", "proc", "dev", "tmp", "host"] {
        fs::create_dir_all(pod.join(dir))?;
    }
    install(busybox, &pod.join("bin/busybox"), 0o755)?;
    for applet in ["sh", "cat", "head", "ls", "echo", "touch", "tr", "printf"] {
        fs::hard_link(pod.join("bin/busybox"), pod.join("bin").join(applet))?;
    }
    install(&guest.join("checks"), &pod.join("bin/checks"), 0o755)?;

    let archive = work.join("initramfs.cpio");
    cpio(&root, &archive)?;
    Ok(archive)
}

/// Copies `from` to `to` with `mode`, creating the parents (`install -D`).
pub fn install(from: &Path, to: &Path, mode: u32) -> Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::copy(from, to)
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    fs::set_permissions(to, fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// Installs `binary` as `root/dest`, and every shared library `ldd` names
/// for it at its own path under `root`.
fn install_with_libs(root: &Path, binary: &Path, dest: &str) -> Result<()> {
    install(binary, &root.join(dest.trim_start_matches('/')), 0o755)?;
    let out = Command::new("ldd")
        .arg(binary)
        .stderr(Stdio::null())
        .output()
        .context("cannot run ldd")?;
    // A static binary makes ldd fail: it needs nothing.
    for lib in String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|word| word.starts_with('/'))
    {
        let target = root.join(lib.trim_start_matches('/'));
        if fs::symlink_metadata(&target).is_err() {
            install(Path::new(lib), &target, 0o755)?;
        }
    }
    Ok(())
}

/// Copies the regular files and directories below `from` to `to`.
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &dest)?;
        } else {
            fs::copy(entry.path(), &dest)?;
        }
    }
    Ok(())
}

/// `find . | cpio -o -H newc` in `root`: every path, a directory before
/// what it holds.
pub fn cpio(root: &Path, archive: &Path) -> Result<()> {
    let mut names = vec![".".to_owned()];
    walk(root, Path::new("."), &mut names)?;
    let mut child = Command::new("cpio")
        .args(["-o", "-H", "newc", "--quiet"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(fs::File::create(archive)?)
        .spawn()
        .context("cannot run cpio")?;
    let mut stdin = child.stdin.take().context("cpio's standard input")?;
    stdin.write_all((names.join("\n") + "\n").as_bytes())?;
    drop(stdin);
    let status = child.wait()?;
    if !status.success() {
        bail!("cpio failed ({status})");
    }
    Ok(())
}

fn walk(root: &Path, relative: &Path, names: &mut Vec<String>) -> Result<()> {
    let mut entries: Vec<_> = fs::read_dir(root.join(relative))?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = relative.join(entry.file_name());
        names.push(path.to_string_lossy().into_owned());
        if entry.file_type()?.is_dir() {
            walk(root, &path, names)?;
        }
    }
    Ok(())
}
