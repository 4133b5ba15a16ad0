//! Running the real `secilc`, and reading its complaints back.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where to find secilc: an explicit path, or the first `secilc` on `PATH`.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, SecilcError> {
    if let Some(path) = explicit {
        return if path.is_file() {
            Ok(path.to_owned())
        } else {
            Err(SecilcError::NotFound { searched: path.display().to_string() })
        };
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&search)
        .map(|dir| dir.join("secilc"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| SecilcError::NotFound { searched: "PATH".to_owned() })
}

#[derive(Debug, thiserror::Error)]
pub enum SecilcError {
    #[error(
        "secilc not found (looked in {searched}); install it with `apt-get install secilc` \
         (Debian/Ubuntu) or `dnf install secilc` (Fedora), or pass --secilc PATH"
    )]
    NotFound { searched: String },
    #[error("cannot run {}: {source}", path.display())]
    Spawn { path: PathBuf, source: std::io::Error },
}

/// What one secilc run printed.
#[derive(Debug)]
pub struct Outcome {
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
}

/// `secilc -M true -c 33 -o POLICY -f FILE_CONTEXTS INPUT...`: MLS on,
/// policy version 33 (what Linux ≥ 5.x reads).
pub fn run(invocation: &Invocation<'_>) -> Result<Outcome, SecilcError> {
    let mut command = Command::new(invocation.secilc);
    command
        .args(["--mls=true", "--policyvers=33", "-o"])
        .arg(invocation.policy_out)
        .arg("-f")
        .arg(invocation.file_contexts_out);
    if invocation.disable_neverallow {
        command.arg("--disable-neverallow");
    }
    command.args(&invocation.inputs);
    let output = command
        .output()
        .map_err(|source| SecilcError::Spawn { path: invocation.secilc.to_owned(), source })?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(Outcome { success: output.status.success(), output: text })
}

/// One neverallow secilc reported as violated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenNeverallow {
    /// The protected type (`etcd_var_t` of `(neverallow etcd_var_t_denied etcd_var_t …)`).
    pub type_name: String,
    /// The offending rules as `FILE:LINE: (allow …)`.
    pub offending: Vec<String>,
}

/// The protected types whose generated neverallow secilc reported as
/// violated, with the rules that broke them. secilc 3.4 prints
/// `neverallow check failed at …`, the neverallow, then for each culprit
/// `allow at FILE:LINE` and the rule itself.
pub fn violated_protections(output: &str) -> Vec<BrokenNeverallow> {
    let mut broken: Vec<BrokenNeverallow> = Vec::new();
    let mut lines = output.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("(neverallow ") {
            let mut fields = rest.split_whitespace();
            if let (Some(subject), Some(target)) = (fields.next(), fields.next()) {
                if subject.strip_suffix("_denied") == Some(target) {
                    broken.push(BrokenNeverallow { type_name: target.to_owned(), offending: Vec::new() });
                }
            }
        } else if let Some(location) = line.strip_prefix("allow at ") {
            let rule = lines.next_if(|next| next.starts_with('(')).unwrap_or_default();
            if let Some(current) = broken.last_mut() {
                current.offending.push(format!("{location}: {rule}"));
            }
        }
    }
    broken
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
                offending: vec!["leaky.cil:1: (allow container_t etcd_var_t (file (read open)))".into()]
            }]
        );
        assert!(violated_protections("(neverallow a b c)").is_empty());
    }
}
