//! The host: which commands the harness takes from it (and from which
//! Debian package), running them, and progress lines for the person
//! watching.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};

/// `COMMAND PACKAGE` per line (shared with tests/it/ci_packages.rs).
const HOST_COMMANDS: &str = include_str!("../host-commands");

/// (command, Debian package), in the table's order.
pub fn host_commands() -> Vec<(&'static str, &'static str)> {
    HOST_COMMANDS
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter_map(|line| line.split_once(char::is_whitespace))
        .map(|(command, package)| (command, package.trim()))
        .collect()
}

/// The packages to install, sorted, once each (rustup is not a Debian
/// package: cargo comes with the toolchain).
pub fn packages() -> BTreeSet<&'static str> {
    host_commands()
        .into_iter()
        .map(|(_, package)| package)
        .filter(|package| *package != "rustup")
        .collect()
}

/// `command` on PATH.
pub fn find_command(command: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Every host command that is missing, as `COMMAND (package PACKAGE)`.
pub fn missing_commands() -> Vec<String> {
    host_commands()
        .into_iter()
        .filter(|(command, _)| find_command(command).is_none())
        .map(|(command, package)| format!("{command} (package {package})"))
        .collect()
}

fn started() -> Instant {
    static STARTED: OnceLock<Instant> = OnceLock::new();
    *STARTED.get_or_init(Instant::now)
}

/// Seconds since the run started.
pub fn elapsed() -> u64 {
    started().elapsed().as_secs()
}

/// Starts the run's clock.
pub fn start_clock() {
    started();
}

/// A progress line on standard error: `==> [  12 s] message`, in bold.
pub fn say(message: impl std::fmt::Display) {
    eprintln!("\x1b[1m==> [{:3} s] {message}\x1b[0m", elapsed());
}

/// Runs `command` with its output in `log`; when it fails, shows the log
/// and says `what` failed.
pub fn run_logged(command: &mut Command, log: &Path, what: &str) -> Result<()> {
    let file = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let status = command
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .status()
        .with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        eprint!(
            "{}",
            String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default())
        );
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Runs `command` and returns its standard output; its standard error is
/// part of the error when it fails.
pub fn output(command: &mut Command, what: &str) -> Result<String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// SHA-256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(hex(&hasher.finalize()))
}

pub fn sha256_bytes(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_a_package_for_every_command() {
        let commands = host_commands();
        assert!(commands.len() > 10, "{commands:?}");
        assert!(commands.contains(&("qemu-system-x86_64", "qemu-system-x86")));
        assert!(commands.iter().all(|(c, p)| !c.is_empty() && !p.is_empty()));
        assert!(!packages().contains("rustup"));
        // Installs belong to scripts/install-deps: nothing here asks for
        // awk, sed or grep any more.
        assert!(!packages().contains("mawk"));
    }

    #[test]
    fn sha256_of_nothing() {
        assert_eq!(
            sha256_bytes(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
