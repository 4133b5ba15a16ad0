//! Compiling a store's modules the way libsemanage does, with the real
//! secilc: same module order (`strcmp` of names), same settings (policy
//! version, handle-unknown, target, dontaudit, tunables, optimisation), and
//! the same split of the file contexts into `file_contexts` and the home
//! directory template. Neverallows are checked as the store checks them
//! (`expand-check`) for the prediction, and always for the proof.

use std::fs;
use std::path::{Path, PathBuf};

use super::open::{Form, Settings, Store};
use super::StoreError;
use policy::secilc::{self, Flags, Invocation};

/// A module to compile: its name (which orders it) and its CIL file.
#[derive(Debug, Clone)]
pub struct Input {
    pub name: String,
    pub path: PathBuf,
}

/// Where each active module of `store` can be read as a CIL file: the
/// extracted files themselves, or decompressed copies in `dir`.
pub(crate) fn module_inputs(store: &Store, dir: &Path) -> Result<Vec<Input>, StoreError> {
    if let Form::ExtractedCil { .. } = store.form {
        return Ok(store
            .modules
            .iter()
            .map(|m| Input {
                name: m.name.clone(),
                path: m.path.clone(),
            })
            .collect());
    }
    fs::create_dir_all(dir).map_err(|error| StoreError::io(dir, error))?;
    store
        .modules
        .iter()
        .map(|module| {
            // Module names are directory names in the store: plain, but not trusted.
            let file = dir.join(format!("{}.cil", module.name.replace('/', "_")));
            fs::write(&file, &module.cil).map_err(|error| StoreError::io(&file, error))?;
            Ok(Input {
                name: module.name.clone(),
                path: file,
            })
        })
        .collect()
}

/// The secilc flags libsemanage would use for this store.
pub(crate) fn flags(settings: &Settings) -> Flags {
    Flags {
        mls: None,
        policy_version: settings.policy_version,
        handle_unknown: settings.handle_unknown.clone(),
        target_platform: settings.target_platform.clone(),
        disable_dontaudit: settings.disable_dontaudit,
        preserve_tunables: settings.preserve_tunables,
        optimize: settings.optimize,
    }
}

/// One compilation's results, in its own directory.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub policy: PathBuf,
    /// `file_contexts` as the store installs it (template lines split off).
    pub file_contexts: PathBuf,
    /// The lines libsemanage moves to `homedir_template`.
    pub homedir_template: String,
}

/// secilc refused the modules; `output` is what it said.
#[derive(Debug, Clone)]
pub(crate) struct Refused {
    pub output: String,
}

/// Compiles `inputs` (sorted here by name, as libsemanage does) into
/// `out_dir/policy.33` and `out_dir/file_contexts`, checking neverallows
/// only when the store's `expand-check` says libsemanage would: the
/// binary is the same either way, and a store with `expand-check=0` may
/// break its own.
pub(crate) fn compile(
    secilc_path: &Path,
    settings: &Settings,
    inputs: &[Input],
    out_dir: &Path,
) -> Result<Result<Compiled, Refused>, StoreError> {
    fs::create_dir_all(out_dir).map_err(|error| StoreError::io(out_dir, error))?;
    let policy = out_dir.join("policy.33");
    let all_contexts = out_dir.join("file_contexts.all");
    let outcome = secilc::run(&Invocation {
        secilc: secilc_path,
        inputs: in_order(inputs),
        policy_out: &policy,
        file_contexts_out: &all_contexts,
        disable_neverallow: !settings.expand_check,
        flags: flags(settings),
    })?;
    if !outcome.success {
        return Ok(Err(Refused {
            output: outcome.output,
        }));
    }
    let text = fs::read(&all_contexts).map_err(|error| StoreError::io(&all_contexts, error))?;
    let (main, template) = split_file_contexts(&text);
    let file_contexts = out_dir.join("file_contexts");
    fs::write(&file_contexts, main).map_err(|error| StoreError::io(&file_contexts, error))?;
    let _ = fs::remove_file(&all_contexts);
    Ok(Ok(Compiled {
        policy,
        file_contexts,
        homedir_template: String::from_utf8_lossy(&template).into_owned(),
    }))
}

/// Compiles `inputs` with every neverallow checked, whatever the store's
/// `expand-check` says: the proof, whose binary is not kept (so it is not
/// optimised either, which changes no verdict).
pub(crate) fn check_neverallows(
    secilc_path: &Path,
    settings: &Settings,
    inputs: &[Input],
    out_dir: &Path,
) -> Result<secilc::SecilcOutput, StoreError> {
    fs::create_dir_all(out_dir).map_err(|error| StoreError::io(out_dir, error))?;
    let output = secilc::run(&Invocation {
        secilc: secilc_path,
        inputs: in_order(inputs),
        policy_out: &out_dir.join("policy.33"),
        file_contexts_out: &out_dir.join("file_contexts.all"),
        disable_neverallow: false,
        flags: Flags {
            optimize: false,
            ..flags(settings)
        },
    })?;
    let _ = fs::remove_dir_all(out_dir);
    Ok(output)
}

/// The input files in libsemanage's order: `strcmp` of the module names.
fn in_order(inputs: &[Input]) -> Vec<PathBuf> {
    let mut ordered: Vec<&Input> = inputs.iter().collect();
    ordered.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    ordered.iter().map(|input| input.path.clone()).collect()
}

/// libsemanage's `semanage_split_fc`: a line that starts with `HOME_DIR` or
/// `HOME_ROOT`, or contains `ROLE` or `USER` anywhere, is a template line
/// for `genhomedircon`; every other line is `file_contexts`.
pub(crate) fn split_file_contexts(text: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut main = Vec::with_capacity(text.len());
    let mut template = Vec::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        let contains = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
        if line.starts_with(b"HOME_DIR")
            || line.starts_with(b"HOME_ROOT")
            || contains(b"ROLE")
            || contains(b"USER")
        {
            template.extend_from_slice(line);
        } else {
            main.extend_from_slice(line);
        }
    }
    (main, template)
}

/// Whether two files hold the same bytes.
pub(crate) fn same_bytes(a: &Path, b: &Path) -> Result<bool, StoreError> {
    let left = fs::read(a).map_err(|error| StoreError::io(a, error))?;
    let right = fs::read(b).map_err(|error| StoreError::io(b, error))?;
    Ok(left == right)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_lines_are_split_off_like_libsemanage() {
        let text = b"/var(/.*)?\tsystem_u:object_r:var_t:s0\nHOME_DIR/.ssh\tsystem_u:object_r:ssh_home_t:s0\n/run/user/%{USERID}\t-d\tx\n/tmp/ROLE_x\ty\nHOME_ROOT\tz\n/usr\tw";
        let (main, template) = split_file_contexts(text);
        assert_eq!(main, b"/var(/.*)?\tsystem_u:object_r:var_t:s0\n/usr\tw");
        assert_eq!(template, b"HOME_DIR/.ssh\tsystem_u:object_r:ssh_home_t:s0\n/run/user/%{USERID}\t-d\tx\n/tmp/ROLE_x\ty\nHOME_ROOT\tz\n");
    }
}
