//! Boot 3 runs Debian's refpolicy store (with its container module), first
//! as shipped, then with the layout's module installed by semodule, then
//! with the module built without auditd's owner grant (the control): the
//! guest boots each store's own policy.33 and file_contexts, not our
//! prediction of them. The two policies depend on the packages, the
//! semanifest binary and the store script only, so they are cached in
//! `cache/refpolicy/KEY`, KEY a digest of those; a partial build never has
//! the final name.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use crate::assets::store_module;
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
    // What this file does with them: the stores it builds.
    text.push_str(&format!("variants {}\n", VARIANTS.join(" ")));
    for (name, path) in [
        ("semanifest", semanifest.to_owned()),
        ("refpolicy-store", repo.join("scripts/refpolicy-store")),
    ] {
        text.push_str(&format!("{} {name}\n", host::sha256_file(&path)?));
    }
    Ok(host::sha256_bytes(text.as_bytes())[..16].to_owned())
}

/// `cache/refpolicy/KEY` with `stock/`, `module/` and `no-owner/` (the
/// module built from the layout without auditd's owner grant: the
/// control), each holding policy.33, file_contexts and
/// file_contexts.subs_dist.
pub fn ensure(repo: &Path, cache: &Path, work: &Path, semanifest: &Path) -> Result<PathBuf> {
    let key = key(repo, semanifest)?;
    let dir = cache.join("refpolicy").join(&key);
    if VARIANTS
        .iter()
        .all(|v| store_module::complete(&dir.join(v), *v != "stock"))
    {
        say(format!("refpolicy stores: cached ({key})"));
        return Ok(dir);
    }
    say("refpolicy stores: Debian's store + container module, then + the layout's module, then + the module without its store owners");
    let _ = fs::remove_dir_all(cache.join("refpolicy"));
    let partial = cache.join("refpolicy").join(format!("{key}.partial"));
    fs::create_dir_all(&partial)?;
    let store = work.join("refpolicy-store");
    host::run_logged(
        Command::new(repo.join("scripts/refpolicy-store")).arg(&store),
        &work.join("refpolicy-store.log"),
        "scripts/refpolicy-store",
    )?;
    store_module::copy_policy(&store, &partial.join("stock"))?;
    store_module::install(
        semanifest,
        &store,
        None,
        work,
        "refpolicy",
        &partial.join("module"),
    )?;
    let no_owner = store_module::layout_without_owner(semanifest, work)?;
    store_module::install(
        semanifest,
        &store,
        Some(&no_owner),
        work,
        "refpolicy-no-owner",
        &partial.join("no-owner"),
    )?;
    fs::rename(&partial, &dir)?;
    Ok(dir)
}

/// The stores boot 3 loads, by directory: guest/suite's `refpolicy-NAME`.
const VARIANTS: [&str; 3] = ["stock", "module", "no-owner"];
