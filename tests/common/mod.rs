//! Helpers shared by the integration tests: the real tools, found or failed
//! loudly (a missing tool is a failed test, never a skipped one).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The path of a required system tool, or a panic that says how to get it.
pub fn tool(name: &str, package: &str) -> PathBuf {
    let search = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&search)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!("`{name}` not found on PATH: install the Debian package `{package}` (listed in .ci/packages)")
        })
}

pub fn run(command: &mut Command) -> Output {
    command.output().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The project's own data directory.
pub fn data(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(relative)
}

/// The `semanifest` binary built for these tests.
pub fn semanifest() -> Command {
    Command::new(env!("CARGO_BIN_EXE_semanifest"))
}

/// Compiles CIL files with the real secilc into `dir`; returns the output.
pub fn secilc(dir: &Path, inputs: &[&Path]) -> Output {
    let mut command = Command::new(tool("secilc", "secilc"));
    command
        .args(["--mls=true", "--policyvers=33", "-o"])
        .arg(dir.join("policy.33"))
        .arg("-f")
        .arg(dir.join("file_contexts"))
        .args(inputs);
    run(&mut command)
}
