//! Boot 7 runs Fedora's targeted store with container-selinux (the store
//! RHEL, CentOS Stream and Fedora CoreOS nodes run), given by
//! `SEMANIFEST_FEDORA_STORE`: a `.tar.zst` of a root for `semodule -p`, or
//! that root. The guest boots what `semodule -X 400 -i` installs of the
//! layout's module (`module/`), and of the module built from the layout
//! without auditd's owner grant (`no-owner/`, the control). Cached in
//! `cache/fedora/KEY`, KEY a digest of the store, the tools and the
//! semanifest binary; a partial build never has the final name.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _, Result};

use crate::assets::store_module;
use crate::host::{self, say};

/// The userland that installs the module: its versions are part of the key.
const PACKAGES: [&str; 4] = [
    "policycoreutils",
    "semodule-utils",
    "libsemanage2",
    "secilc",
];

/// The stores boot 7 loads, by directory: guest/suite's `fedora-NAME`.
const VARIANTS: [&str; 2] = ["module", "no-owner"];

/// The cache key: the store (the tarball's digest, or the root's
/// installed policy and modules' digest), the tools, the binary.
fn key(source: &Path, semanifest: &Path) -> Result<String> {
    let mut text = host::output(
        Command::new("dpkg-query").arg("-W").args(PACKAGES),
        "dpkg-query -W",
    )?;
    text.push_str(&format!("variants {}\n", VARIANTS.join(" ")));
    text.push_str(&format!("{} semanifest\n", host::sha256_file(semanifest)?));
    if source.is_dir() {
        let name = store_module::policy_name(source)?;
        let active = source.join("var/lib/selinux").join(&name).join("active");
        for file in ["policy.kern", "commit_num", "file_contexts"] {
            let path = active.join(file);
            if path.exists() {
                text.push_str(&format!("{} {file}\n", host::sha256_file(&path)?));
            }
        }
    } else {
        text.push_str(&format!("{} store\n", host::sha256_file(source)?));
    }
    Ok(host::sha256_bytes(text.as_bytes())[..16].to_owned())
}

/// `cache/fedora/KEY` with `module/` and `no-owner/`, each holding
/// policy.33, file_contexts and file_contexts.subs_dist.
pub fn ensure(source: &Path, cache: &Path, work: &Path, semanifest: &Path) -> Result<PathBuf> {
    if !source.exists() {
        bail!(
            "{}={}: no such file or directory (a .tar.zst of a store's root, or the root)",
            crate::boots::FEDORA_STORE_ENV,
            source.display()
        );
    }
    let key = key(source, semanifest)?;
    let dir = cache.join("fedora").join(&key);
    if VARIANTS
        .iter()
        .all(|v| store_module::complete(&dir.join(v), true))
    {
        say(format!("Fedora store: cached ({key})"));
        return Ok(dir);
    }
    say(format!(
        "Fedora store: {} + the layout's module, then + the module without its store owners",
        source.display()
    ));
    let _ = fs::remove_dir_all(cache.join("fedora"));
    let partial = cache.join("fedora").join(format!("{key}.partial"));
    fs::create_dir_all(&partial)?;
    let store = work.join("fedora-store");
    if source.is_dir() {
        store_module::copy_root(source, &store)?;
    } else {
        fs::create_dir_all(&store)?;
        host::output(
            Command::new("tar")
                .arg("-C")
                .arg(&store)
                .args(["--zstd", "-xf"])
                .arg(source),
            "tar --zstd -xf (the Fedora store)",
        )
        .with_context(|| format!("cannot unpack {}", source.display()))?;
    }
    store_module::install(
        semanifest,
        &store,
        None,
        work,
        "fedora",
        &partial.join("module"),
    )?;
    let no_owner = store_module::layout_without_owner(semanifest, work)?;
    store_module::install(
        semanifest,
        &store,
        Some(&no_owner),
        work,
        "fedora-no-owner",
        &partial.join("no-owner"),
    )?;
    fs::rename(&partial, &dir)?;
    Ok(dir)
}
