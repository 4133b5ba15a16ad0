//! Debian's kernel, fetched as a package (unpacked, never installed) into
//! `cache/kernel`, with the modules the guest needs (virtio disk, ext4 with
//! its metadata checksums, quotas, XFS). Their dependencies are read from each `.ko`'s
//! own `.modinfo` `depends=` field, since the package ships no modules.dep
//! (depmod runs at install, which is skipped) and kmod need not be on the
//! host.
//!
//! The cache directory is complete or absent: it is assembled under a
//! temporary name and renamed into place last. Its MANIFEST records what it
//! holds, and every run checks the cache against it before trusting it:
//!
//! ```text
//! package NAME SHA256-OF-DEB      the kernel package it came from
//! file PATH SHA256 SIZE           every file, digest and size
//! module NAME DEP,DEP             in load order (dependencies first)
//! ```

use std::collections::BTreeSet;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, ensure, Context as _, Result};

use crate::host::{self, say};

/// The modules the guest loads, with their dependencies: quota_v2 is the
/// format of ext4's quota files (without it an ext4 made with `-O quota`
/// does not mount), xfs the filesystem of the XFS capacity disk.
pub const GUEST_MODULES: [&str; 6] = [
    "virtio_pci",
    "virtio_blk",
    "crc32c_generic",
    "ext4",
    "quota_v2",
    "xfs",
];

/// The kernel the meta package `linux-image-amd64` depends on.
pub fn current_package() -> Result<String> {
    let text = host::output(
        Command::new("apt-cache").args(["depends", "linux-image-amd64"]),
        "apt-cache depends linux-image-amd64",
    )?;
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("Depends: "))
        .find(|name| {
            name.strip_prefix("linux-image-")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .map(str::to_owned)
        .context("cannot resolve linux-image-amd64 (run apt-get update?)")
}

/// Why the cache in `dir` cannot be used for `package`, if it cannot.
pub fn why_unusable(dir: &Path, package: &str) -> Option<String> {
    let manifest = match fs::read_to_string(dir.join("MANIFEST")) {
        Ok(text) => text,
        Err(_) => return Some("no MANIFEST (absent, or left by an interrupted run)".into()),
    };
    let mut holds = None;
    let mut files = BTreeSet::new();
    let mut loaded = BTreeSet::new();
    for line in manifest.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields[..] {
            ["package", name, ..] => holds = Some(name.to_owned()),
            ["file", path, digest, size] => {
                files.insert(path.to_owned());
                let file = dir.join(path);
                let Ok(meta) = fs::metadata(&file) else {
                    return Some(format!("{path} is missing"));
                };
                if meta.len().to_string() != size {
                    return Some(format!("{path} has the wrong size"));
                }
                if host::sha256_file(&file).ok().as_deref() != Some(digest) {
                    return Some(format!("{path} does not match its digest"));
                }
            }
            ["module", name, ref deps @ ..] => {
                let deps = deps.first().copied().unwrap_or("");
                if let Some(dep) = deps
                    .split(',')
                    .filter(|d| !d.is_empty())
                    .find(|d| !loaded.contains(*d))
                {
                    return Some(format!(
                        "module {name} is listed before its dependency {dep}"
                    ));
                }
                if !files.contains(&format!("modules/{name}.ko")) {
                    return Some(format!("module {name} has no file"));
                }
                loaded.insert(name.to_owned());
            }
            _ => {
                return Some(format!(
                    "MANIFEST line not understood: {}",
                    fields.first().unwrap_or(&"")
                ))
            }
        }
    }
    if holds.as_deref() != Some(package) {
        return Some(format!(
            "it holds {}, the current kernel is {package}",
            holds.as_deref().unwrap_or("no package")
        ));
    }
    GUEST_MODULES
        .iter()
        .find(|m| !loaded.contains(**m))
        .map(|m| format!("module {m} is missing"))
}

/// Makes `cache/kernel` hold the current kernel: kept when it verifies
/// (unless `rebuild`), else fetched again, saying why.
pub fn ensure(cache: &Path, rebuild: bool) -> Result<()> {
    let dir = cache.join("kernel");
    let package = current_package()?;
    if !rebuild {
        match why_unusable(&dir, &package) {
            None => return Ok(()),
            Some(why) if dir.exists() => {
                say(format!("kernel cache not usable ({why}): rebuilding"))
            }
            Some(_) => {}
        }
    }
    say(format!("fetching {package}"));
    for entry in fs::read_dir(cache)? {
        let entry = entry?;
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("kernel.partial.")
        {
            fs::remove_dir_all(entry.path())?;
        }
    }
    let tmp = cache.join(format!("kernel.partial.{}", std::process::id()));
    fs::create_dir_all(tmp.join("dl"))?;
    let new = tmp.join("new");
    fs::create_dir_all(new.join("modules"))?;
    let deb = download(&tmp, &package)?;
    let digest = host::sha256_file(&deb)?;
    let show = host::output(
        Command::new("apt-cache").args(["show", &package]),
        "apt-cache show",
    )?;
    if let Some(expected) = show.lines().find_map(|l| l.strip_prefix("SHA256: ")) {
        ensure!(
            expected == digest,
            "{package}: downloaded .deb has SHA256 {digest}, the archive says {expected}"
        );
    }
    let unpacked = tmp.join("x");
    host::output(
        Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked),
        "dpkg-deb -x",
    )?;
    let vmlinuz = find_file(&unpacked.join("boot"), &|name| name.starts_with("vmlinuz-"))?
        .context("the kernel package has no boot/vmlinuz-*")?;
    fs::copy(&vmlinuz, new.join("vmlinuz"))?;
    if !extract_vmlinux(&new.join("vmlinuz"), &new.join("vmlinux"))? {
        let _ = fs::remove_file(new.join("vmlinux"));
    }

    let mut order = Vec::new();
    for module in GUEST_MODULES {
        add_module(
            &unpacked.join("lib/modules"),
            &new.join("modules"),
            &package,
            module,
            &mut order,
        )?;
    }
    let mut manifest = format!("package {package} {digest}\n");
    let mut files = Vec::new();
    list_files(&new, &new, &mut files)?;
    files.sort();
    for relative in files {
        let path = new.join(&relative);
        manifest.push_str(&format!(
            "file {} {} {}\n",
            relative.display(),
            host::sha256_file(&path)?,
            fs::metadata(&path)?.len()
        ));
    }
    for (module, deps) in &order {
        manifest.push_str(&format!("module {module} {deps}\n"));
    }
    fs::write(new.join("MANIFEST.tmp"), manifest)?;
    fs::rename(new.join("MANIFEST.tmp"), new.join("MANIFEST"))?;
    if let Some(why) = why_unusable(&new, &package) {
        bail!("the kernel cache just built does not verify: {why}");
    }
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    fs::rename(&new, &dir)?;
    fs::remove_dir_all(&tmp)?;
    Ok(())
}

/// `apt-get download PACKAGE` into `tmp/dl` (a fetch into the cache, not an
/// install): the `.deb`.
fn download(tmp: &Path, package: &str) -> Result<PathBuf> {
    let dl = tmp.join("dl");
    let log = tmp.join("download.log");
    // (apt's warning that root downloads unsandboxed is noise here)
    let status = Command::new("apt-get")
        .args(["download", "-qq", package])
        .current_dir(&dl)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log)?)
        .status()
        .context("cannot run apt-get download")?;
    if !status.success() {
        eprint!("{}", fs::read_to_string(&log).unwrap_or_default());
        bail!("apt-get download {package} failed");
    }
    find_file(&dl, &|name| name.ends_with(".deb"))?
        .with_context(|| format!("apt-get download {package} left no .deb"))
}

/// Copies `module` and, first, its dependencies; `order` gets each once,
/// dependencies before the modules that need them.
fn add_module(
    tree: &Path,
    into: &Path,
    package: &str,
    module: &str,
    order: &mut Vec<(String, String)>,
) -> Result<()> {
    if order.iter().any(|(m, _)| m == module) {
        return Ok(());
    }
    let name = format!("{module}.ko");
    let file = find_file(tree, &|n| n == name)?
        .with_context(|| format!("module {name} not found in {package}"))?;
    let bytes = fs::read(&file)?;
    let deps = modinfo_depends(&bytes);
    // Marked before its dependencies are added, so a cycle cannot recurse.
    order.push((module.to_owned(), String::new()));
    let at = order.len() - 1;
    for dep in deps.split(',').filter(|d| !d.is_empty()) {
        add_module(tree, into, package, dep, order)?;
    }
    let entry = order.remove(at);
    order.push((entry.0, deps));
    fs::copy(&file, into.join(&name))?;
    Ok(())
}

/// The `depends=` value of a module's `.modinfo` strings.
pub fn modinfo_depends(ko: &[u8]) -> String {
    ko.split(|&b| b == 0)
        .find_map(|field| field.strip_prefix(b"depends="))
        .map(|deps| String::from_utf8_lossy(deps).into_owned())
        .unwrap_or_default()
}

/// The bzImage's payload as an ELF vmlinux, which QEMU boots directly
/// through its PVH entry point (Debian sets CONFIG_PVH): under TCG this
/// saves the seconds the in-guest XZ decompressor takes on every boot.
/// `false` when there is no XZ payload or it is no ELF.
fn extract_vmlinux(vmlinuz: &Path, vmlinux: &Path) -> Result<bool> {
    let image = fs::read(vmlinuz)?;
    let magic = b"\xfd7zXZ\x00";
    let Some(offset) = image.windows(magic.len()).position(|w| w == magic) else {
        return Ok(false);
    };
    let mut xz = Command::new("xz")
        .arg("-dc")
        .stdin(Stdio::piped())
        .stdout(fs::File::create(vmlinux)?)
        .stderr(Stdio::null())
        .spawn()
        .context("cannot run xz")?;
    let mut stdin = xz.stdin.take().context("xz's standard input")?;
    // xz stops reading (and exits 1) at the data that follows the stream;
    // the ELF check below decides.
    let _ = stdin.write_all(&image[offset..]);
    drop(stdin);
    let _ = xz.wait()?;
    let mut head = [0u8; 4];
    let elf = fs::File::open(vmlinux)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && &head == b"\x7fELF";
    Ok(elf)
}

/// The kernel to boot: the extracted vmlinux when there is one.
pub fn image(cache: &Path) -> PathBuf {
    let vmlinux = cache.join("kernel/vmlinux");
    if fs::metadata(&vmlinux).is_ok_and(|m| m.len() > 0) {
        vmlinux
    } else {
        cache.join("kernel/vmlinuz")
    }
}

/// The MANIFEST's package and its modules in load order.
pub fn manifest_package_and_modules(cache: &Path) -> Result<(String, Vec<String>)> {
    let path = cache.join("kernel/MANIFEST");
    let text =
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut package = String::new();
    let mut modules = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        match (fields.next(), fields.next()) {
            (Some("package"), Some(name)) => package = name.to_owned(),
            (Some("module"), Some(name)) => modules.push(name.to_owned()),
            _ => {}
        }
    }
    Ok((package, modules))
}

/// The first file below `dir` (depth first) whose name satisfies `want`.
fn find_file(dir: &Path, want: &dyn Fn(&str) -> bool) -> Result<Option<PathBuf>> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if let Some(found) = find_file(&entry.path(), want)? {
                return Ok(Some(found));
            }
        } else if kind.is_file() && want(&entry.file_name().to_string_lossy()) {
            return Ok(Some(entry.path()));
        }
    }
    Ok(None)
}

/// Every regular file below `dir` but the MANIFEST, relative to `root`.
fn list_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            list_files(root, &path, out)?;
        } else if !entry.file_name().to_string_lossy().starts_with("MANIFEST") {
            out.push(path.strip_prefix(root)?.to_owned());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depends_comes_from_modinfo() {
        let ko = b"\x7fELF junk\0license=GPL\0depends=crc16,mbcache,jbd2\0intree=Y\0";
        assert_eq!(modinfo_depends(ko), "crc16,mbcache,jbd2");
        assert_eq!(modinfo_depends(b"\0depends=\0"), "");
        assert_eq!(modinfo_depends(b"nothing"), "");
    }

    fn cache_with(files: &[(&str, &[u8])], modules: &[&str]) -> (PathBuf, String) {
        let dir = std::env::temp_dir().join(format!(
            "testvm-kernel-{}-{}",
            std::process::id(),
            files.len() * 10 + modules.len()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("modules")).unwrap();
        let mut manifest = "package linux-image-6.1.0-1-amd64 0123\n".to_owned();
        for (path, bytes) in files {
            fs::write(dir.join(path), bytes).unwrap();
            manifest.push_str(&format!(
                "file {path} {} {}\n",
                host::sha256_bytes(bytes),
                bytes.len()
            ));
        }
        for line in modules {
            manifest.push_str(&format!("module {line}\n"));
        }
        fs::write(dir.join("MANIFEST"), manifest).unwrap();
        (dir, "linux-image-6.1.0-1-amd64".to_owned())
    }

    const ALL: [(&str, &[u8]); 9] = [
        ("vmlinux", b"\x7fELF kernel"),
        ("modules/virtio_pci.ko", b"a"),
        ("modules/virtio_blk.ko", b"b"),
        ("modules/crc32c_generic.ko", b"c"),
        ("modules/crc16.ko", b"d"),
        ("modules/ext4.ko", b"e"),
        ("modules/quota_tree.ko", b"f"),
        ("modules/quota_v2.ko", b"g"),
        ("modules/xfs.ko", b"h"),
    ];
    const ORDER: [&str; 8] = [
        "virtio_pci ",
        "virtio_blk ",
        "crc32c_generic ",
        "crc16 ",
        "ext4 crc16,crc32c_generic",
        "quota_tree ",
        "quota_v2 quota_tree",
        "xfs crc32c_generic",
    ];

    #[test]
    fn a_complete_cache_verifies_and_every_defect_is_named() {
        let (dir, package) = cache_with(&ALL, &ORDER);
        assert_eq!(why_unusable(&dir, &package), None);
        assert_eq!(
            why_unusable(&dir, "linux-image-6.1.0-2-amd64").unwrap(),
            "it holds linux-image-6.1.0-1-amd64, the current kernel is linux-image-6.1.0-2-amd64"
        );
        // Truncated: an interrupted copy of the big file.
        fs::write(dir.join("vmlinux"), b"\x7fELF").unwrap();
        assert_eq!(
            why_unusable(&dir, &package).unwrap(),
            "vmlinux has the wrong size"
        );
        fs::write(dir.join("vmlinux"), b"\x7fELF kernex").unwrap();
        assert_eq!(
            why_unusable(&dir, &package).unwrap(),
            "vmlinux does not match its digest"
        );
        fs::remove_file(dir.join("vmlinux")).unwrap();
        assert_eq!(why_unusable(&dir, &package).unwrap(), "vmlinux is missing");
        fs::remove_file(dir.join("MANIFEST")).unwrap();
        assert!(why_unusable(&dir, &package)
            .unwrap()
            .starts_with("no MANIFEST"));
        fs::remove_dir_all(&dir).unwrap();

        let (dir, package) = cache_with(
            &ALL,
            &[
                "virtio_pci ",
                "virtio_blk ",
                "crc32c_generic ",
                "ext4 crc16,crc32c_generic",
                "crc16 ",
            ],
        );
        assert_eq!(
            why_unusable(&dir, &package).unwrap(),
            "module ext4 is listed before its dependency crc16"
        );
        fs::remove_dir_all(&dir).unwrap();
        let (dir, package) = cache_with(&ALL[..5], &ORDER[..4]);
        assert_eq!(
            why_unusable(&dir, &package).unwrap(),
            "module ext4 is missing"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
