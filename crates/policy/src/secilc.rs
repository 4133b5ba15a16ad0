//! Running the real `secilc`, and reading its complaints back.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where to find secilc: an explicit path, or the first `secilc` on `PATH`.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, SecilcError> {
    if let Some(path) = explicit {
        return if path.is_file() {
            Ok(path.to_owned())
        } else {
            Err(SecilcError::NotFound {
                searched: path.display().to_string(),
            })
        };
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&search)
        .map(|dir| dir.join("secilc"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| SecilcError::NotFound {
            searched: "PATH".to_owned(),
        })
}

#[derive(Debug, thiserror::Error)]
pub enum SecilcError {
    #[error(
        "secilc not found (looked in {searched}); install it with `apt-get install secilc` \
         (Debian/Ubuntu) or `dnf install secilc` (Fedora), or pass --secilc PATH"
    )]
    NotFound { searched: String },
    #[error("cannot run {}: {source}", path.display())]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What one secilc run printed.
#[derive(Debug)]
pub struct SecilcOutput {
    pub success: bool,
    pub output: String,
}

/// Options for one compilation.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    pub secilc: &'a Path,
    pub inputs: Vec<PathBuf>,
    pub policy_out: &'a Path,
    pub file_contexts_out: &'a Path,
    /// Skips neverallow checking (`-N`): only for deliberately broken controls.
    pub disable_neverallow: bool,
    pub flags: Flags,
}

/// How secilc builds the binary: a policy store sets these from its
/// `semanage.conf` and flag files, as libsemanage does when it compiles the
/// store. One definition serves the `secilc` command and libsepol's
/// compiler in a helper process (the `sepol` crate).
pub use sepol::Flags;

/// The standalone target's flags: MLS on, policy version 33 (what Linux
/// ≥ 5.x reads).
pub(crate) fn standalone_flags() -> Flags {
    Flags {
        mls: Some(true),
        policy_version: Some(33),
        ..Flags::default()
    }
}

/// `secilc [FLAGS] -o POLICY -f FILE_CONTEXTS INPUT...`.
pub fn run(invocation: &Invocation<'_>) -> Result<SecilcOutput, SecilcError> {
    let mut command = Command::new(invocation.secilc);
    command
        .args(invocation.flags.secilc_args())
        .arg("-o")
        .arg(invocation.policy_out)
        .arg("-f")
        .arg(invocation.file_contexts_out);
    if invocation.disable_neverallow {
        command.arg("--disable-neverallow");
    }
    command.args(&invocation.inputs);
    let output = command.output().map_err(|source| SecilcError::Spawn {
        path: invocation.secilc.to_owned(),
        source,
    })?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(SecilcOutput {
        success: output.status.success(),
        output: text,
    })
}

/// One neverallow secilc reported as violated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrokenNeverallow {
    /// The protected type (`etcd_var_t` of `(neverallow etcd_var_t_denied etcd_var_t …)`).
    pub type_name: String,
    /// The offending rules as `FILE:LINE: (allow …)`.
    pub offending: Vec<String>,
}

/// The protected types whose generated neverallow secilc reported as
/// violated, with the rules that broke them.
pub(crate) fn violated_protections(output: &str) -> Vec<BrokenNeverallow> {
    violated_neverallows(output)
        .into_iter()
        .filter(|broken| broken.subject.strip_suffix("_denied") == Some(broken.target.as_str()))
        .map(|broken| BrokenNeverallow {
            type_name: broken.target,
            offending: broken.offending,
        })
        .collect()
}

/// One failed neverallow as secilc reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedNeverallow {
    /// `FILE:LINE` of the neverallow statement itself.
    pub at: String,
    pub subject: String,
    pub target: String,
    /// The offending rules as `FILE:LINE: (allow …)`.
    pub offending: Vec<String>,
}

impl FailedNeverallow {
    /// The file the neverallow statement is in.
    pub fn file(&self) -> &str {
        file_of(&self.at)
    }

    /// The file each offending rule is in.
    pub fn offending_files(&self) -> impl Iterator<Item = &str> {
        self.offending
            .iter()
            .map(|rule| file_of(rule.split_once(": ").map_or(rule.as_str(), |(at, _)| at)))
    }
}

/// The file of a `FILE:LINE` location as secilc prints it.
pub fn file_of(location: &str) -> &str {
    location.rsplit_once(':').map_or(location, |(file, _)| file)
}

/// Every neverallow secilc reported as violated. secilc 3.4 prints
/// `neverallow check failed at FILE:LINE`, the neverallow, then for each
/// culprit its enclosing statements (`booleanif at …`, `optional at …`),
/// `allow at FILE:LINE` and the rule itself.
pub fn violated_neverallows(output: &str) -> Vec<FailedNeverallow> {
    let mut broken: Vec<FailedNeverallow> = Vec::new();
    let mut at = String::new();
    let mut lines = output.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        if let Some(location) = line.strip_prefix("neverallow check failed at ") {
            location.clone_into(&mut at);
        } else if let Some(rest) = line.strip_prefix("(neverallow ") {
            let mut fields = rest.split_whitespace();
            if let (Some(subject), Some(target)) = (fields.next(), fields.next()) {
                broken.push(FailedNeverallow {
                    at: std::mem::take(&mut at),
                    subject: subject.to_owned(),
                    target: target.to_owned(),
                    offending: Vec::new(),
                });
            }
        } else if let Some(location) = line.strip_prefix("allow at ") {
            let rule = lines
                .next_if(|next| next.starts_with('('))
                .unwrap_or_default();
            if let Some(current) = broken.last_mut() {
                current.offending.push(format!("{location}: {rule}"));
            }
        }
    }
    broken
}

/// Whether a secilc enforces neverallows, found by compiling a tiny policy
/// twice: as it is (it must compile) and with one rule its neverallow
/// forbids (it must be refused with a neverallow failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NeverallowProbe {
    Enforced,
    /// The violating policy compiled: this secilc proves nothing.
    Ignored,
    /// The probe gave no verdict (the clean policy failed, or the violating
    /// one failed for another reason); `output` is what secilc said.
    Inconclusive {
        output: String,
    },
}

const PROBE_POLICY: &str = "\
(class file (read))
(classorder (file))
(sid kernel)
(sidorder (kernel))
(user probe_u)
(role probe_r)
(type probe_t)
(type probe_data_t)
(userrole probe_u probe_r)
(roletype probe_r probe_t)
(sensitivity s0)
(sensitivityorder (s0))
(category c0)
(categoryorder (c0))
(sensitivitycategory s0 (c0))
(userlevel probe_u (s0))
(userrange probe_u ((s0) (s0)))
(sidcontext kernel (probe_u probe_r probe_t ((s0) (s0))))
(allow probe_t probe_t (file (read)))
(neverallow probe_t probe_data_t (file (read)))
";

/// Runs the [`NeverallowProbe`] with `secilc` in `dir` (created).
pub fn probe_neverallows(secilc: &Path, dir: &Path) -> Result<NeverallowProbe, SecilcError> {
    probe_neverallows_with(dir, |input, policy_out, file_contexts_out| {
        run(&Invocation {
            secilc,
            inputs: vec![input.to_owned()],
            policy_out,
            file_contexts_out,
            disable_neverallow: false,
            flags: Flags::default(),
        })
    })
}

/// Runs the [`NeverallowProbe`] in `dir` (created) with any compiler:
/// `compile(INPUT, POLICY_OUT, FILE_CONTEXTS_OUT)` answers as secilc does
/// with neverallows checked and default flags.
pub fn probe_neverallows_with<E: From<SecilcError>>(
    dir: &Path,
    compile: impl Fn(&Path, &Path, &Path) -> Result<SecilcOutput, E>,
) -> Result<NeverallowProbe, E> {
    let io = |source| SecilcError::Spawn {
        path: dir.to_owned(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let compile = |name: &str, text: &str| -> Result<SecilcOutput, E> {
        let input = dir.join(format!("{name}.cil"));
        std::fs::write(&input, text).map_err(io)?;
        compile(
            &input,
            &dir.join(format!("{name}.policy")),
            &dir.join(format!("{name}.file_contexts")),
        )
    };
    let clean = compile("clean", PROBE_POLICY)?;
    if !clean.success {
        return Ok(NeverallowProbe::Inconclusive {
            output: clean.output,
        });
    }
    let violating = compile(
        "violating",
        &format!("{PROBE_POLICY}(allow probe_t probe_data_t (file (read)))\n"),
    )?;
    if violating.success {
        return Ok(NeverallowProbe::Ignored);
    }
    let caught = violated_neverallows(&violating.output)
        .iter()
        .any(|failed| failed.subject == "probe_t" && failed.target == "probe_data_t");
    Ok(if caught {
        NeverallowProbe::Enforced
    } else {
        NeverallowProbe::Inconclusive {
            output: violating.output,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_violated_types_in_secilc_output() {
        let output = "neverallow check failed at out/m.cil:113\n  (neverallow etcd_var_t_denied etcd_var_t semanifest_file_all)\n    <root>\n    allow at leaky.cil:1\n      (allow container_t etcd_var_t (file (read open)))\n";
        assert_eq!(
            violated_protections(output),
            [BrokenNeverallow {
                type_name: "etcd_var_t".into(),
                offending: vec![
                    "leaky.cil:1: (allow container_t etcd_var_t (file (read open)))".into()
                ]
            }]
        );
        assert!(violated_protections("(neverallow a b c)").is_empty());
        let failed = violated_neverallows(output);
        assert_eq!(failed[0].at, "out/m.cil:113");
        assert_eq!(failed[0].file(), "out/m.cil");
    }
}
