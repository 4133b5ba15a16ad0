//! `.ci/packages` is what a fresh machine gets before the tests run: every
//! package the VM harness takes a command from must be in it, or be one
//! Debian installs everywhere (Priority: required). A missing one once made
//! the suite fail on a fresh machine only. And every name in it must be a
//! package Debian has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn ci_packages() -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo().join(".ci/packages")).expect("read .ci/packages");
    text.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The packages of the VM harness's host commands: the table it embeds
/// (`testvm/host-commands`, `COMMAND PACKAGE` per line), which
/// `testvm/run --list-packages` prints; rustup is the toolchain, not a
/// Debian package.
fn harness_packages() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("testvm/host-commands"))
        .expect("read testvm/host-commands");
    let packages: BTreeSet<String> = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter_map(|line| line.split_whitespace().nth(1))
        .filter(|package| *package != "rustup")
        .map(str::to_owned)
        .collect();
    packages.into_iter().collect()
}

/// Debian's archive metadata, not this machine's state: each of
/// `packages` the archive knows, with its priority. One `apt-cache` call
/// for all of them (it takes about a second per call); names it does not
/// know are left out.
fn archive(packages: &[String]) -> BTreeMap<String, String> {
    let out = Command::new("apt-cache")
        .args(["show", "--no-all-versions"])
        .args(packages)
        .output()
        .expect("run apt-cache show");
    let mut known = BTreeMap::new();
    let mut package = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(name) = line.strip_prefix("Package: ") {
            package = Some(name.to_owned());
            known.insert(name.to_owned(), String::new());
        } else if let (Some(priority), Some(name)) = (line.strip_prefix("Priority: "), &package) {
            known.insert(name.clone(), priority.to_owned());
        }
    }
    known
}

/// A package is on every Debian system when its priority is "required".
fn required(packages: &[String]) -> BTreeSet<String> {
    archive(packages)
        .into_iter()
        .filter(|(_, priority)| priority == "required")
        .map(|(name, _)| name)
        .collect()
}

fn not_provided(packages: &[String]) -> Vec<String> {
    let listed = ci_packages();
    let unlisted: Vec<String> = packages
        .iter()
        .filter(|p| !listed.contains(*p))
        .cloned()
        .collect();
    let required = required(&unlisted);
    unlisted
        .into_iter()
        .filter(|p| !required.contains(p))
        .collect()
}

#[test]
fn every_harness_package_is_installed_on_a_fresh_machine() {
    let harness = harness_packages();
    assert!(
        harness.len() > 10,
        "the harness names its packages: {harness:?}"
    );
    assert_eq!(
        not_provided(&harness),
        Vec::<String>::new(),
        "add these to .ci/packages"
    );
}

#[test]
fn control_an_unlisted_optional_package_is_caught() {
    // kmod is neither in .ci/packages nor required: exactly the package
    // whose absence once broke the suite on a fresh machine.
    assert!(!ci_packages().contains("kmod"));
    assert_eq!(
        not_provided(&["kmod".to_owned(), "coreutils".to_owned()]),
        vec!["kmod".to_owned()]
    );
}

#[test]
fn every_listed_package_is_in_debian() {
    // A misspelt name would only show as a failed `apt-get install` on a
    // fresh machine, where the package is missing.
    let listed: Vec<String> = ci_packages().into_iter().collect();
    let known = archive(&listed);
    let unknown: Vec<&String> = listed.iter().filter(|p| !known.contains_key(*p)).collect();
    assert!(
        unknown.is_empty(),
        ".ci/packages names packages Debian does not have: {unknown:?}"
    );
}

#[test]
fn control_a_misspelt_package_is_caught() {
    let known = archive(&["pkgconfig".to_owned(), "pkg-config".to_owned()]);
    assert!(known.contains_key("pkg-config") && !known.contains_key("pkgconfig"));
}
