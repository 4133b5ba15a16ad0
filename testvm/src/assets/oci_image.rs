//! The one container image the CRI boots use, for the pod sandbox (pause)
//! and the containers alike: Debian's static busybox with a few applets,
//! as an OCI image layout in a tar archive that `ctr images import` reads
//! offline. Its default command sleeps, as a pause container does;
//! containers are given their own command.
//!
//! ```text
//! oci-layout                      {"imageLayoutVersion": "1.0.0"}
//! index.json                      the manifest, with the image's name
//! blobs/sha256/DIGEST             the layer (tar), the config, the manifest
//! ```

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;
use serde_json::json;

use crate::assets::initramfs;
use crate::host::{self, say};

/// The name containerd knows the image by (`ctr images ls`), and what
/// `cri-run --image` and containerd's `sandbox_image` name.
pub const NAME: &str = "testvm.local/busybox:1";
/// The busybox applets the scenarios use inside a pod.
const APPLETS: [&str; 14] = [
    "sh", "cat", "ls", "head", "echo", "sleep", "touch", "id", "printf", "tr", "mkdir", "rm",
    "stat", "true",
];

/// Builds `work/NAME.tar` from the host's /bin/busybox.
pub fn build(work: &Path) -> Result<PathBuf> {
    say(format!("OCI image {NAME} (busybox)"));
    let dir = work.join("oci-image");
    let _ = fs::remove_dir_all(&dir);
    let rootfs = dir.join("rootfs");
    fs::create_dir_all(rootfs.join("bin"))?;
    for empty in ["proc", "sys", "dev", "tmp", "etc", "data"] {
        fs::create_dir_all(rootfs.join(empty))?;
    }
    initramfs::install(
        Path::new("/bin/busybox"),
        &rootfs.join("bin/busybox"),
        0o755,
    )?;
    for applet in APPLETS {
        symlink("busybox", rootfs.join("bin").join(applet))?;
    }
    let layout = dir.join("layout");
    let blobs = layout.join("blobs/sha256");
    fs::create_dir_all(&blobs)?;

    let layer = dir.join("layer.tar");
    tar(&rootfs, &layer)?;
    let layer_digest = host::sha256_file(&layer)?;
    let layer_size = fs::metadata(&layer)?.len();
    fs::rename(&layer, blobs.join(&layer_digest))?;

    let config = json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Env": ["PATH=/bin"],
            "Cmd": ["/bin/sleep", "2147483647"],
        },
        "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{layer_digest}")]},
    });
    let (config_digest, config_size) = blob(&blobs, &config)?;
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": format!("sha256:{config_digest}"),
            "size": config_size,
        },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": format!("sha256:{layer_digest}"),
            "size": layer_size,
        }],
    });
    let (manifest_digest, manifest_size) = blob(&blobs, &manifest)?;
    let tag = NAME.rsplit_once(':').map_or("latest", |(_, tag)| tag);
    let index = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": format!("sha256:{manifest_digest}"),
            "size": manifest_size,
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {
                "io.containerd.image.name": NAME,
                "org.opencontainers.image.ref.name": tag,
            },
        }],
    });
    fs::write(layout.join("index.json"), serde_json::to_vec(&index)?)?;
    fs::write(
        layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    let archive = work.join("testvm-busybox.oci.tar");
    tar(&layout, &archive)?;
    Ok(archive)
}

/// Writes `value` as a blob; its digest and size.
fn blob(blobs: &Path, value: &serde_json::Value) -> Result<(String, usize)> {
    let bytes = serde_json::to_vec(value)?;
    let digest = host::sha256_bytes(&bytes);
    fs::write(blobs.join(&digest), &bytes)?;
    Ok((digest, bytes.len()))
}

/// `dir`'s content as a tar archive, the same bytes for the same files:
/// sorted, root-owned, no times, names without a `./`.
fn tar(dir: &Path, archive: &Path) -> Result<()> {
    let mut names: Vec<_> = fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    host::output(
        Command::new("tar")
            .args([
                "--sort=name",
                "--owner=0",
                "--group=0",
                "--numeric-owner",
                "--mtime=@0",
                "--format=posix",
                "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
                "-C",
            ])
            .arg(dir)
            .arg("-cf")
            .arg(archive)
            .args(&names),
        "tar (the OCI image)",
    )?;
    Ok(())
}
