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

/// The protected types whose neverallow secilc reported as violated: every
/// `(neverallow <type>_denied <type> …)` it quotes.
pub fn violated_protections(output: &str) -> Vec<String> {
    let mut types: Vec<String> = Vec::new();
    for line in output.lines() {
        let Some(rest) = line.trim_start().strip_prefix("(neverallow ") else { continue };
        let mut fields = rest.split_whitespace();
        let (Some(subject), Some(target)) = (fields.next(), fields.next()) else { continue };
        if subject.strip_suffix("_denied") == Some(target) && !types.iter().any(|t| t == target) {
            types.push(target.to_owned());
        }
    }
    types
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_violated_types_in_secilc_output() {
        let output = "Neverallow check failed at line 12 of module.cil\n  (neverallow etcd_var_t_denied etcd_var_t semanifest_file_all)\n    <rule>\n      (allow container_t etcd_var_t (file (read)))\n";
        assert_eq!(violated_protections(output), ["etcd_var_t"]);
        assert!(violated_protections("(neverallow a b c)").is_empty());
    }
}
