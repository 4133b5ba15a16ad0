//! The guest's disks: an ext4 `/var` as kubelet, etcd and containerd leave
//! it (every file root-owned and world-readable, so that only SELinux can
//! say no), with some labels wrong on purpose, and an empty one for
//! `semanifest apply`. Built fresh every run.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context as _, Result};

use crate::host::{self, say};

/// Labels a pod could read if relabel did not fix them.
const MISLABEL: &str = "\
ea_set /lib/etcd/member/snap/db security.selinux system_u:object_r:var_mnt_t:s0
ea_set /lib/kubelet/pki security.selinux system_u:object_r:var_mnt_t:s0
ea_set /log/audit/kube-apiserver.log security.selinux system_u:object_r:container_file_t:s0
";

/// Builds `work/var.img`, `work/node-var.img` and the capacity disks
/// ([`CAPACITY_DISKS`]).
pub fn build(work: &Path) -> Result<()> {
    say("ext4 /var image");
    let t = work.join("var-tree");
    for dir in [
        "lib/etcd/member/snap",
        "lib/etcd/member/wal",
        "lib/kubelet/pki",
        "lib/kubelet/pods/0b4c2a1e/volumes",
        "lib/containerd/io.containerd.content.v1.content/blobs/sha256",
        "log/audit",
        "log/pods/default_web_0/web",
        "log/containerd",
        "system/overlays/etc/kubernetes",
        "mnt",
        "lib/cni/networks",
    ] {
        fs::create_dir_all(t.join(dir))?;
    }
    for (path, text) in [
        ("lib/etcd/member/snap/db", "etcd-db-v1\n"),
        (
            "lib/etcd/member/wal/0000000000000000-0000000000000000.wal",
            "etcd wal\n",
        ),
        (
            "lib/kubelet/pki/kubelet-client-current.pem",
            "kubelet client key\n",
        ),
        (
            "log/audit/kube-apiserver.log",
            "{\"kind\":\"Event\",\"verb\":\"get\",\"objectRef\":{\"resource\":\"secrets\"}}\n",
        ),
        (
            "system/overlays/etc/kubernetes/kubelet.yaml",
            "overlay: kubelet config\n",
        ),
        ("log/pods/default_web_0/web/0.log", "GET-/-200\n"),
    ] {
        fs::write(t.join(path), text)?;
    }
    // Bulk, so the relabel count and time mean something.
    let blobs = t.join("lib/containerd/io.containerd.content.v1.content/blobs/sha256");
    for i in 1..=400 {
        fs::write(blobs.join(format!("blob{i}")), format!("{i}\n"))?;
    }
    let volumes = t.join("lib/kubelet/pods/0b4c2a1e/volumes");
    for i in 1..=100 {
        fs::write(volumes.join(format!("f{i}")), format!("{i}\n"))?;
    }
    world_readable(&t)?;
    let var = work.join("var.img");
    let _ = fs::remove_file(&var);
    host::output(
        Command::new("mkfs.ext4")
            .args([
                "-q", "-F", "-L", "var", "-b", "4096", "-I", "256", "-N", "8192", "-d",
            ])
            .arg(&t)
            .arg(&var)
            .arg("64M"),
        "mkfs.ext4 (var.img)",
    )?;
    // A second, empty disk: `semanifest apply` places the layout on it.
    host::output(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-L", "node-var", "-b", "4096", "-I", "256"])
            .arg(work.join("node-var.img"))
            .arg("32M"),
        "mkfs.ext4 (node-var.img)",
    )?;
    capacity_disks(work)?;
    let mut debugfs = Command::new("debugfs")
        .args(["-w", "-f", "-"])
        .arg(&var)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot run debugfs")?;
    debugfs
        .stdin
        .take()
        .context("debugfs's standard input")?
        .write_all(MISLABEL.as_bytes())?;
    let status = debugfs.wait()?;
    if !status.success() {
        bail!("debugfs (mislabelling var.img) failed ({status})");
    }
    Ok(())
}

/// The disks `capacity/…` places the layout on, in the order the guest
/// sees them after var.img and node-var.img (/dev/vdc, /dev/vdd, /dev/vde):
/// an ext4 with project quotas for the limit, the same for the control
/// without one, and an XFS. No reserved blocks (`-m 0`): a full disk is
/// full for root too, so the control's etcd fails as a node's would.
pub const CAPACITY_DISKS: [&str; 3] = ["cap-ext4.img", "cap-control.img", "cap-xfs.img"];

fn capacity_disks(work: &Path) -> Result<()> {
    for (name, label) in [
        ("cap-ext4.img", "cap-ext4"),
        ("cap-control.img", "cap-control"),
    ] {
        let image = work.join(name);
        let _ = fs::remove_file(&image);
        host::output(
            Command::new("mkfs.ext4")
                .args(["-q", "-F", "-m", "0", "-O", "quota,project", "-L", label])
                .args(["-b", "4096", "-I", "256"])
                .arg(&image)
                .arg("160M"),
            &format!("mkfs.ext4 ({name})"),
        )?;
    }
    // mkfs.xfs makes nothing smaller than 300 MB; the file is sparse.
    let xfs = work.join("cap-xfs.img");
    let _ = fs::remove_file(&xfs);
    fs::File::create(&xfs)?.set_len(320 << 20)?;
    host::output(
        Command::new("mkfs.xfs")
            .args(["-q", "-f", "-L", "cap-xfs"])
            .arg(&xfs),
        "mkfs.xfs (cap-xfs.img)",
    )?;
    Ok(())
}

/// `chmod -R u=rwX,go=rX`: directories 0755, files 0644.
fn world_readable(dir: &Path) -> Result<()> {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            world_readable(&entry.path())?;
        } else {
            fs::set_permissions(entry.path(), fs::Permissions::from_mode(0o644))?;
        }
    }
    Ok(())
}
