//! `.ci/packages` is what a fresh machine gets before the tests run: every
//! package the VM harness takes a command from must be in it, or be one
//! Debian installs everywhere (Priority: required). A missing one once made
//! the suite fail on a fresh machine only.

use std::collections::BTreeSet;
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

/// Debian's archive metadata, not this machine's state: a package is on
/// every Debian system when its priority is "required". One `apt-cache`
/// call for all of them (it takes about a second per call).
fn required(packages: &[String]) -> BTreeSet<String> {
    let out = Command::new("apt-cache")
        .args(["show", "--no-all-versions"])
        .args(packages)
        .output()
        .expect("run apt-cache show");
    let mut required = BTreeSet::new();
    let mut package = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(name) = line.strip_prefix("Package: ") {
            package = Some(name.to_owned());
        } else if line == "Priority: required" {
            required.extend(package.take());
        }
    }
    required
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
