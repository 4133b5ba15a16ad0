//! Helpers shared by integration tests that run the real SELinux tools.
//!
//! A missing tool is a test failure naming the Debian package to install
//! (all of them are listed in `.ci/packages`), never a silent skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub mod fc_oracle;
pub mod path_gen;
pub mod relabel;
pub mod store;

/// Finds `program` on PATH or fails the test with how to install it.
pub fn tool(program: &str, debian_package: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!("`{program}` not found on PATH: apt-get install {debian_package} (see .ci/packages)")
        })
}

/// The Python the tests run their validators with (`.ci/validate-*.py`):
/// `.venv/bin/python3`, the virtual environment `scripts/install-deps` makes
/// with Debian's python3 and fills from `.ci/python-requirements.txt`
/// (Debian's own python3 takes no `pip install`). A missing one fails the
/// test, naming the command that makes it.
pub fn venv_python() -> Command {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python3");
    assert!(
        python.is_file(),
        "{} missing: run scripts/install-deps (it installs .ci/python-requirements.txt there)",
        python.display()
    );
    Command::new(python)
}

/// Runs a command that must succeed and returns its standard output.
pub fn run_ok(command: &mut Command) -> String {
    let output = output_of(command);
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("tool output is UTF-8")
}

fn output_of(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|error| panic!("cannot run {command:?}: {error}"))
}

/// A policy compiled by secilc in its own temporary directory.
pub struct CompiledPolicy {
    dir: tempfile::TempDir,
}

impl CompiledPolicy {
    pub fn policy(&self) -> PathBuf {
        self.dir.path().join("policy.33")
    }

    pub fn file_contexts(&self) -> PathBuf {
        self.dir.path().join("file_contexts")
    }
}

/// Compiles `files` (name, CIL text), in the given order, the way the
/// standalone target does: `secilc -M true -c 33`. On failure returns
/// secilc's diagnostics.
pub fn secilc(files: &[(&str, &str)]) -> Result<CompiledPolicy, String> {
    let secilc = tool("secilc", "secilc");
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut command = Command::new(secilc);
    command.current_dir(dir.path()).args([
        "-M",
        "true",
        "-c",
        "33",
        "-o",
        "policy.33",
        "-f",
        "file_contexts",
    ]);
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text)
            .expect("write CIL into the temporary directory");
        command.arg(name);
    }
    let output = output_of(&mut command);
    if output.status.success() {
        Ok(CompiledPolicy { dir })
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

pub fn run(command: &mut Command) -> Output {
    output_of(command)
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The project's own test data directory.
pub fn data(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(relative)
}

/// The `semanifest` binary built for these tests, with the store cache
/// under the build's temporary directory (not the user's home).
pub fn semanifest() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_semanifest"));
    command.env(
        "SEMANIFEST_CACHE_DIR",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("semanifest-cache"),
    );
    command
}

/// Compiles CIL files on disk with the real secilc, writing `policy.33` and
/// `file_contexts` into `dir`.
pub fn secilc_files(dir: &Path, inputs: &[&Path]) -> Output {
    let mut command = Command::new(tool("secilc", "secilc"));
    command
        .args(["--mls=true", "--policyvers=33", "-o"])
        .arg(dir.join("policy.33"))
        .arg("-f")
        .arg(dir.join("file_contexts"))
        .args(inputs);
    output_of(&mut command)
}

/// Asks libsepol (python3-selinux's audit2why) whether `source` may use
/// `perm` on `target`; returns its verdict name.
pub fn libsepol_verdict(
    policy: &Path,
    source: &str,
    target: &str,
    class: &str,
    perm: &str,
) -> String {
    let query = [source, target, class, perm].map(str::to_owned);
    libsepol_verdicts(policy, &[query]).remove(0)
}

/// The 1-based line of the first `line` after the line holding `after` in
/// the default layout (diagnostics point there; the layout keeps growing).
pub fn default_layout_line(after: &str, line: &str) -> usize {
    let lines: Vec<&str> = layout::manifest::DEFAULT_LAYOUT.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(after))
        .unwrap_or_else(|| panic!("`{after}` not in the default layout"));
    1 + start
        + lines[start..]
            .iter()
            .position(|l| l.trim() == line)
            .unwrap_or_else(|| panic!("`{line}` not after `{after}` in the default layout"))
}

/// The line of the etcd directory's `protected: true` in the default
/// layout, where a broken protection of etcd is reported.
pub fn etcd_protected_line() -> usize {
    default_layout_line("- path: /var/lib/etcd", "protected: true")
}

/// [`libsepol_verdict`] for many questions on one policy, loaded once:
/// each `(source, target, class, perm)` (full contexts) gets its verdict
/// name, in order.
pub fn libsepol_verdicts(policy: &Path, queries: &[[String; 4]]) -> Vec<String> {
    // Debian's python3-selinux installs for the system interpreter only.
    let python = Path::new("/usr/bin/python3");
    assert!(
        python.is_file(),
        "/usr/bin/python3 missing: apt-get install python3-selinux"
    );
    let script = r#"
import sys
try:
    import selinux.audit2why as a
except ImportError:
    sys.exit("python3-selinux is missing: apt-get install python3-selinux")
a.init(sys.argv[1])
names = {a.ALLOW: "allow", a.CONSTRAINT: "constraint", a.TERULE: "terule", a.BOOLEAN: "boolean", a.BADTCON: "badtcon", a.BADSCON: "badscon"}
for line in sys.stdin:
    source, target, tclass, perm = line.split()
    rc, _ = a.analyze(source, target, tclass, [perm])
    print(names.get(rc, rc))
"#;
    let input: String = queries
        .iter()
        .map(|q| format!("{}\n", q.join(" ")))
        .collect();
    let mut child = Command::new(python)
        .args(["-c", script])
        .arg(policy)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "audit2why failed");
    let verdicts: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(verdicts.len(), queries.len(), "one verdict per question");
    verdicts
}
