//! libsepol's CIL compiler — the library the `secilc` command is a front
//! end of — driven the way a store build needs it.
//!
//! `secilc` parses and resolves the whole policy for every binary it
//! writes. A store build asks for two binaries of the same store + module:
//! one with every neverallow checked (the proof) and one as the store
//! compiles it (the prediction, when the store breaks its own neverallows
//! and the checked build is refused). Parsing and resolving are two thirds
//! of a compilation, and they are the same for both. A [`Request`] names
//! the inputs once and the [`Build`]s wanted: the helper process parses
//! and resolves once, then forks, and each build takes its own copy of the
//! resolved database (copy-on-write) into libsepol's policydb builder, at
//! once. Every call and setting is the one secilc makes for the same
//! [`Flags`] ([`Flags::secilc_args`]), so the bytes written are secilc's;
//! the messages are the ones secilc prints.
//!
//! The helper is a process of its own ([`Helper`]: `PROGRAM
//! __compile-cil`, the semanifest binary) because `fork` is only safe from
//! a single-threaded process, and a build is not one. libsepol is loaded
//! with `dlopen` ([`library`]): a binary that only relabels does not need it.

mod ffi;
mod serve;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

pub use serve::serve;

/// The hidden subcommand that runs [`serve`].
pub const SUBCOMMAND: &str = "__compile-cil";

/// Where libsepol is loaded from (`libsepol.so.2`, as the dynamic loader
/// finds it), or why it cannot be.
pub fn library() -> Result<PathBuf, String> {
    ffi::library()
}

/// How the binary is built: secilc's options, as libsemanage sets them
/// from a store's `semanage.conf`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flags {
    /// `--mls`; `None` leaves it to the policy's `(mls …)` statement.
    pub mls: Option<bool>,
    /// `--policyvers`; `None` is libsepol's newest.
    pub policy_version: Option<u32>,
    /// `--handle-unknown allow|deny|reject`; `None` keeps the policy's.
    pub handle_unknown: Option<String>,
    /// `--target selinux|xen`.
    pub target_platform: Option<String>,
    /// `--disable-dontaudit`.
    pub disable_dontaudit: bool,
    /// `--preserve-tunables`.
    pub preserve_tunables: bool,
    /// `--optimize`.
    pub optimize: bool,
}

impl Flags {
    /// The same settings as `secilc` arguments.
    pub fn secilc_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(mls) = self.mls {
            args.push(format!("--mls={mls}"));
        }
        if let Some(version) = self.policy_version {
            args.push(format!("--policyvers={version}"));
        }
        if let Some(handle) = &self.handle_unknown {
            args.push(format!("--handle-unknown={handle}"));
        }
        if let Some(target) = &self.target_platform {
            args.push(format!("--target={target}"));
        }
        if self.disable_dontaudit {
            args.push("--disable-dontaudit".to_owned());
        }
        if self.preserve_tunables {
            args.push("--preserve-tunables".to_owned());
        }
        if self.optimize {
            args.push("--optimize".to_owned());
        }
        args
    }
}

/// One compilation's inputs and the binaries wanted from it. The default
/// is secilc's default flags, every build wanted, all inputs parsed at
/// once.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Request {
    pub flags: Flags,
    /// CIL files, compiled in this order; messages cite them as given.
    pub inputs: Vec<PathBuf>,
    /// The first runs in the helper itself, each other in a fork of it;
    /// all at once.
    pub builds: Vec<Build>,
    /// The other builds are only needed when the first is refused (they
    /// would write the same bytes): they are stopped when it is accepted,
    /// and reported [`Outcome::Skipped`].
    pub first_suffices: bool,
    /// Parses only the first N inputs at once, then waits for
    /// [`Started::finish`] before reading the others: the caller starts the
    /// helper while it still writes a later input.
    #[serde(default)]
    pub parse_first: Option<usize>,
}

/// One binary policy and its file contexts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Build {
    pub policy_out: PathBuf,
    pub file_contexts_out: PathBuf,
    /// Checks every neverallow (secilc without `--disable-neverallow`).
    pub check_neverallows: bool,
}

/// What became of one [`Build`]; `output` is what secilc would have printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Outcome {
    Written {
        output: String,
    },
    Refused {
        output: String,
    },
    /// Not needed: the first build was accepted.
    Skipped,
}

#[derive(Debug, thiserror::Error)]
pub enum CilError {
    #[error("cannot run {} {SUBCOMMAND}: {source}", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("{} {SUBCOMMAND} failed{}: {stderr}", program.display(), status.map(|s| format!(" (exit {s})")).unwrap_or_default())]
    Failed {
        program: PathBuf,
        status: Option<i32>,
        stderr: String,
    },
}

/// The program that serves [`SUBCOMMAND`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Helper {
    program: PathBuf,
}

impl Helper {
    pub fn new(program: impl Into<PathBuf>) -> Helper {
        Helper {
            program: program.into(),
        }
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Runs `request`: one outcome per build, in order.
    pub fn compile(&self, request: &Request) -> Result<Vec<Outcome>, CilError> {
        self.start(request)?.finish()
    }

    /// Starts `request`; [`Started::finish`] lets it go on past
    /// [`Request::parse_first`] and waits for its outcomes.
    pub fn start(&self, request: &Request) -> Result<Started, CilError> {
        let spawn = |source| CilError::Spawn {
            program: self.program.clone(),
            source,
        };
        let mut child = Command::new(&self.program)
            .arg(SUBCOMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn)?;
        let mut started = Started {
            program: self.program.clone(),
            builds: request.builds.len(),
            stdin: child.stdin.take(),
            child: Some(child),
        };
        let mut line = serde_json::to_vec(request).map_err(|e| spawn(e.into()))?;
        line.push(b'\n');
        if let Some(stdin) = &mut started.stdin {
            stdin.write_all(&line).map_err(spawn)?;
            stdin.flush().map_err(spawn)?;
        }
        Ok(started)
    }
}

/// A running helper. Dropped without [`Started::finish`], it is stopped.
#[derive(Debug)]
pub struct Started {
    program: PathBuf,
    builds: usize,
    stdin: Option<std::process::ChildStdin>,
    child: Option<std::process::Child>,
}

impl Started {
    /// Lets the helper read the rest of its inputs, and waits for one
    /// outcome per build, in order.
    pub fn finish(mut self) -> Result<Vec<Outcome>, CilError> {
        let spawn = |source| CilError::Spawn {
            program: self.program.clone(),
            source,
        };
        if let Some(mut stdin) = self.stdin.take() {
            stdin.write_all(GO).map_err(spawn)?;
        }
        let Some(child) = self.child.take() else {
            return Err(spawn(std::io::ErrorKind::NotFound.into()));
        };
        let output = child.wait_with_output().map_err(spawn)?;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let failed = |stderr: String| CilError::Failed {
            program: self.program.clone(),
            status: output.status.code(),
            stderr,
        };
        if !output.status.success() {
            return Err(failed(stderr));
        }
        let mut outcomes: Vec<Outcome> = serde_json::from_slice(&output.stdout)
            .map_err(|e| failed(format!("unreadable answer ({e}); {stderr}")))?;
        if outcomes.len() != self.builds {
            return Err(failed(format!(
                "{} outcomes for {} builds; {stderr}",
                outcomes.len(),
                self.builds
            )));
        }
        // libsepol's own messages (not CIL's) go to the helper's stderr.
        if !stderr.is_empty() {
            for outcome in &mut outcomes {
                if let Outcome::Refused { output } = outcome {
                    output.push_str(&stderr);
                }
            }
        }
        Ok(outcomes)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Unfinished: the build that started it gave up.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The line that lets a helper go on past [`Request::parse_first`].
const GO: &[u8] = b"go\n";
