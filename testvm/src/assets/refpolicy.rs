//! Boot 3 runs Debian's refpolicy store (with its container module), first
//! as shipped and then with the layout's module installed by semodule: the
//! guest boots each store's own policy.33 and file_contexts, not our
//! prediction of them. The two policies depend on the packages, the
//! semanifest binary and the store script only, so they are cached in
//! `cache/refpolicy/KEY`, KEY a digest of those; a partial build never has
//! the final name.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result};

use crate::host::{self, say};

const PACKAGES: [&str; 6] = [
    "selinux-policy-default",
    "selinux-policy-src",
    "selinux-policy-dev",
    "policycoreutils",
    "semodule-utils",
    "secilc",
];

/// The cache key: installed versions of the policy packages, the binary
/// and the store script.
fn key(repo: &Path, semanifest: &Path) -> Result<String> {
    let mut text = host::output(
        Command::new("dpkg-query").arg("-W").args(PACKAGES),
        "dpkg-query -W",
    )?;
    for (name, path) in [
        ("semanifest", semanifest.to_owned()),
        ("refpolicy-store", repo.join("scripts/refpolicy-store")),
    ] {
        text.push_str(&format!("{} {name}\n", host::sha256_file(&path)?));
    }
    Ok(host::sha256_bytes(text.as_bytes())[..16].to_owned())
}

/// `cache/refpolicy/KEY` with `stock/` and `module/`, each holding
/// policy.33, file_contexts and file_contexts.subs_dist.
pub fn ensure(repo: &Path, cache: &Path, work: &Path, semanifest: &Path) -> Result<PathBuf> {
    let key = key(repo, semanifest)?;
    let dir = cache.join("refpolicy").join(&key);
    let nonempty = |p: PathBuf| fs::metadata(p).is_ok_and(|m| m.len() > 0);
    if nonempty(dir.join("stock/policy.33")) && nonempty(dir.join("module/policy.33")) {
        say(format!("refpolicy stores: cached ({key})"));
        return Ok(dir);
    }
    say("refpolicy stores: Debian's store + container module, then + the layout's module");
    let _ = fs::remove_dir_all(cache.join("refpolicy"));
    let partial = cache.join("refpolicy").join(format!("{key}.partial"));
    fs::create_dir_all(&partial)?;
    let store = work.join("refpolicy-store");
    host::run_logged(
        Command::new(repo.join("scripts/refpolicy-store")).arg(&store),
        &work.join("refpolicy-store.log"),
        "scripts/refpolicy-store",
    )?;
    copy_store_policy(&store, &partial.join("stock"))?;
    let module_out = work.join("refpolicy-module");
    host::run_logged(
        Command::new(semanifest)
            .args(["build", "--target", "module", "--against"])
            .arg(&store)
            .arg("--out")
            .arg(&module_out),
        &work.join("refpolicy-build.log"),
        "build --target module",
    )?;
    host::run_logged(
        Command::new("semodule")
            .args(["-n", "-p"])
            .arg(&store)
            .args(["-X", "400", "-i"])
            .arg(module_out.join("structured_var.cil")),
        &work.join("semodule.log"),
        "semodule -i structured_var.cil",
    )?;
    copy_store_policy(&store, &partial.join("module"))?;
    fs::rename(&partial, &dir)?;
    Ok(dir)
}

/// The binary policy and the text file_contexts (with its .subs_dist) the
/// store at `root` installed.
fn copy_store_policy(root: &Path, dest: &Path) -> Result<()> {
    let etc = root.join("etc/selinux/default");
    fs::create_dir_all(dest)?;
    for file in [
        "policy/policy.33",
        "contexts/files/file_contexts",
        "contexts/files/file_contexts.subs_dist",
    ] {
        let from = etc.join(file);
        let name = from.file_name().context("a file name")?;
        fs::copy(&from, dest.join(name))
            .with_context(|| format!("cannot copy {}", from.display()))?;
    }
    Ok(())
}
