//! Layout → policy: the generated CIL module, its `file_contexts`, and the
//! binary `policy.33` compiled by the real `secilc` together with the base
//! policy in `policy/`.
//!
//! Invariants: output is byte-for-byte deterministic for a given layout;
//! nothing is written outside the output directory (and, when asked, the
//! install root); files appear atomically (written aside, then renamed), so an
//! interrupted build never leaves a half-written policy behind.

mod access;
pub mod base;
pub mod build_json;
mod cil;
pub mod cil_scan;
pub mod file_contexts;
pub mod kernel_policy;
pub mod plan;
pub mod secilc;
pub mod setools;
pub mod store_module;

use std::fs;
use std::path::{Path, PathBuf};

use file_contexts::FileCon;
use layout::manifest::{BaseFacts, Parsed};
use layout::model::Layout;
use selabel::FileKind;

/// The generated texts of one layout, before secilc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// `<module>.cil`
    pub module_name: String,
    pub module_cil: String,
    /// The file_contexts secilc will write for base + module.
    pub file_contexts: String,
}

/// What the manifest rules need to know about the embedded base policy.
pub fn base_facts() -> BaseFacts {
    BaseFacts {
        types: base::base_types().into_iter().map(str::to_owned).collect(),
        adopt_existing: false,
    }
}

/// The embedded base policy as one CIL text, file by file with a header each.
pub fn base_cil() -> String {
    let mut text = String::new();
    for (name, content) in base::BASE_POLICY {
        text.push_str(&format!(";; ===== policy/{name} =====\n"));
        text.push_str(content);
        if !content.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

/// Renders the module and the file_contexts of a parsed layout.
pub fn generate(parsed: &Parsed) -> Result<Generated, minijinja::Error> {
    let layout = &parsed.layout;
    let plan = plan::plan(layout, &parsed.source.name, layout.description.as_deref());
    let module_cil = cil::render_module(&plan)?;
    Ok(Generated {
        module_name: layout.module.clone(),
        module_cil,
        file_contexts: file_contexts_text(layout),
    })
}

/// The `file_contexts` of base + layout, in secilc's order and format.
pub fn file_contexts_text(layout: &Layout) -> String {
    let mut specs = base_filecons();
    specs.extend(layout.paths.iter().map(|rule| FileCon {
        regex: plan::subtree_regex(&rule.path),
        file_type: FileKind::Any,
        context: Some(rule.context()),
    }));
    file_contexts::render(specs)
}

/// How to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub out_dir: PathBuf,
    /// Explicit secilc; `None` searches `PATH`.
    pub secilc: Option<PathBuf>,
    /// Extra CIL files compiled with base + module (and held to its neverallows).
    pub includes: Vec<PathBuf>,
    /// Also write the tree an SELinux system reads under this root.
    pub install_root: Option<PathBuf>,
    /// The policy name under `/etc/selinux/`.
    pub policy_name: String,
    /// Skip neverallow checking: for deliberately leaky test controls only.
    pub disable_neverallow: bool,
}

/// What a successful build wrote.
#[derive(Debug, Clone)]
pub struct BuildOutput {
    pub module_cil: PathBuf,
    pub base_cil: PathBuf,
    pub file_contexts: PathBuf,
    pub policy: PathBuf,
    pub installed: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Secilc(#[from] secilc::SecilcError),
    #[error("template error (a bug in semanifest): {0}")]
    Template(#[from] minijinja::Error),
    /// The I/O error is part of the message, not a `source()`, so a
    /// chain-printing caller does not say it twice.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Writing beneath the output directory or the install root.
    #[error(transparent)]
    Write(#[from] fsroot::Error),
    #[error("{}: no such CIL file to --include", path.display())]
    MissingInclude { path: PathBuf },
    /// secilc refused the policy. `violations` are the protected paths whose
    /// neverallow failed, with where the manifest declared them.
    #[error(
        "secilc rejected the policy{}\n\nsecilc said:\n{output}",
        describe_violations(violations)
    )]
    Rejected {
        violations: Vec<Violation>,
        output: String,
    },
}

/// A protection secilc proved broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub path: String,
    pub type_name: String,
    /// `FILE:LINE:COL` of the `protected: true` that declared it.
    pub declared_at: String,
    /// The same place, for machines (`None` when the position is unknown).
    pub location: Option<layout::diag::Location>,
    /// The rules that break it, as `FILE:LINE: (allow …)`.
    pub offending: Vec<String>,
}

/// The violations as `FILE:LINE:COL: error[neverallow]: …` lines.
pub fn describe_violations(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| {
            let mut text = format!(
                "\n{}: error[neverallow]: protected path `{}` ({}) is reachable by a domain the layout did not grant",
                v.declared_at, v.path, v.type_name
            );
            for rule in &v.offending {
                text.push_str(&format!("\n  = granted by {rule}"));
            }
            text
        })
        .collect()
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |error| BuildError::Io {
        path: path.to_owned(),
        error,
    }
}

/// Every file a build writes: readable by all, as policy files are.
const FILE_MODE: u32 = 0o644;

/// The key of the file `name` directly in a root.
fn key_of(name: &str) -> Vec<u8> {
    format!("/{name}").into_bytes()
}

/// Generates, writes and compiles: `OUT/<module>.cil`, `OUT/base.cil`,
/// `OUT/file_contexts`, `OUT/policy.33`; optionally the install-root tree.
pub fn build(parsed: &Parsed, options: &BuildOptions) -> Result<BuildOutput, BuildError> {
    let secilc_path = secilc::locate(options.secilc.as_deref())?;
    for include in &options.includes {
        if !include.is_file() {
            return Err(BuildError::MissingInclude {
                path: include.clone(),
            });
        }
    }
    let generated = generate(parsed)?;
    let out = &options.out_dir;
    fs::create_dir_all(out).map_err(io_error(out))?;
    let out_root = fsroot::Root::open(out)?;

    let module_name = format!("{}.cil", generated.module_name);
    let module_cil = out.join(&module_name);
    let base_cil_path = out.join("base.cil");
    let file_contexts = out.join("file_contexts");
    let policy = out.join("policy.33");
    out_root.write_file(&key_of("base.cil"), base_cil().as_bytes(), FILE_MODE)?;
    out_root.write_file(
        &key_of(&module_name),
        generated.module_cil.as_bytes(),
        FILE_MODE,
    )?;

    // secilc writes where it is told, following symlinks: into a private
    // directory, from which the outputs are written into place.
    let private = tempfile::Builder::new()
        .prefix(".semanifest-build-")
        .tempdir_in(out)
        .map_err(io_error(out))?;
    let policy_tmp = private.path().join("policy.33");
    let fc_tmp = private.path().join("file_contexts");
    let mut inputs = vec![base_cil_path.clone(), module_cil.clone()];
    inputs.extend(options.includes.iter().cloned());
    let outcome = secilc::run(&secilc::Invocation {
        secilc: &secilc_path,
        inputs,
        policy_out: &policy_tmp,
        file_contexts_out: &fc_tmp,
        disable_neverallow: options.disable_neverallow,
        flags: secilc::standalone_flags(),
    })?;
    if !outcome.success {
        let violations = violations(parsed, &outcome.output);
        return Err(BuildError::Rejected {
            violations,
            output: outcome.output,
        });
    }
    for (name, built) in [("file_contexts", &fc_tmp), ("policy.33", &policy_tmp)] {
        let bytes = fs::read(built).map_err(io_error(built))?;
        out_root.write_file(&key_of(name), &bytes, FILE_MODE)?;
    }

    let installed = match &options.install_root {
        Some(root) => install(
            root,
            &options.policy_name,
            &policy,
            &file_contexts,
            lxc_contexts(&parsed.layout).as_deref(),
        )?,
        None => Vec::new(),
    };
    Ok(BuildOutput {
        module_cil,
        base_cil: base_cil_path,
        file_contexts,
        policy,
        installed,
    })
}

/// What the container runtimes' SELinux library (go-selinux, in
/// containerd and CRI-O) reads from `contexts/lxc_contexts` for a
/// container that asks for no label: the process label and the label of
/// its files, to which the runtime adds the pod's MCS categories. Without
/// the file it starts containers with no label at all. The process type is
/// the layout's first workload domain; a layout without one gets no file.
pub fn lxc_contexts(layout: &Layout) -> Option<String> {
    let workload = layout.domains.iter().find(|domain| domain.workload)?;
    Some(format!(
        "# Written by semanifest build --install-root: the labels a container\n\
         # runtime gives a container that asks for none (then adds the pod's\n\
         # MCS categories).\n\
         process = \"system_u:system_r:{}:s0\"\n\
         file = \"system_u:object_r:{CONTAINER_FILE}:s0\"\n",
        workload.type_name
    ))
}

/// The base policy's type of container content (image layers, a pod's
/// own files).
const CONTAINER_FILE: &str = "container_file_t";

/// The protected paths whose neverallow secilc reports broken in
/// `output`, each with where the layout protects it.
fn violations(parsed: &Parsed, output: &str) -> Vec<Violation> {
    secilc::violated_protections(output)
        .into_iter()
        .filter_map(|broken| {
            let rule = parsed
                .layout
                .paths
                .iter()
                .find(|r| r.protected && r.type_name == broken.type_name)?;
            let pos = rule.protected_pos.unwrap_or(rule.pos);
            Some(Violation {
                path: rule.path.clone(),
                type_name: broken.type_name,
                declared_at: format!("{}:{}:{}", parsed.source.name, pos.line, pos.column),
                location: layout::diag::Location::at(&parsed.source.name, pos),
                offending: broken.offending,
            })
        })
        .collect()
}

/// Writes the standard tree libselinux and the kernel loader read:
/// `ROOT/etc/selinux/config`, `ROOT/etc/selinux/NAME/policy/policy.33`,
/// `ROOT/etc/selinux/NAME/contexts/files/file_contexts` and, given
/// `lxc`, `ROOT/etc/selinux/NAME/contexts/lxc_contexts`. A stale
/// `file_contexts.bin` would be loaded instead of the new text (libselinux
/// prefers a `.bin` at least as new), so those siblings are removed, and
/// so is `file_contexts.subs_dist` (the image's equivalences, which
/// `units` writes afterwards).
fn install(
    root: &Path,
    name: &str,
    policy: &Path,
    file_contexts: &Path,
    lxc: Option<&str>,
) -> Result<Vec<PathBuf>, BuildError> {
    // Inside the image nothing is followed: its etc/selinux may be a
    // symlink planted to make a build write elsewhere.
    let image = fsroot::Root::open(root)?;
    let selinux = root.join("etc/selinux");
    let config = selinux.join("config");
    let config_text = format!(
        "# Written by semanifest build --install-root.\nSELINUX=enforcing\nSELINUXTYPE={name}\n"
    );
    image.write_file(b"/etc/selinux/config", config_text.as_bytes(), FILE_MODE)?;
    let policy_target = selinux.join(name).join("policy/policy.33");
    let policy_key = format!("/etc/selinux/{name}/policy/policy.33");
    let bytes = fs::read(policy).map_err(io_error(policy))?;
    image.write_file(policy_key.as_bytes(), &bytes, FILE_MODE)?;
    let files_key = format!("/etc/selinux/{name}/contexts/files");
    let fc_target = selinux.join(name).join("contexts/files/file_contexts");
    let bytes = fs::read(file_contexts).map_err(io_error(file_contexts))?;
    image.write_file(
        format!("{files_key}/file_contexts").as_bytes(),
        &bytes,
        FILE_MODE,
    )?;
    // An equivalence file of an earlier build would relabel what the image
    // no longer holds as a symlink; `units` writes the current one.
    let files_dir = image.open_dir_beneath(files_key.as_bytes())?;
    for stale in [
        c"file_contexts.subs_dist",
        c"file_contexts.bin",
        c"file_contexts.local.bin",
        c"file_contexts.homedirs.bin",
    ] {
        match fsroot::unlink(&files_dir, stale) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(errno) => {
                return Err(BuildError::Io {
                    path: fc_target.with_file_name(stale.to_string_lossy().as_ref()),
                    error: errno.into(),
                })
            }
        }
    }
    let mut installed = vec![config, policy_target, fc_target];
    if let Some(lxc) = lxc {
        let lxc_target = selinux.join(name).join("contexts/lxc_contexts");
        let lxc_key = format!("/etc/selinux/{name}/contexts/lxc_contexts");
        image.write_file(lxc_key.as_bytes(), lxc.as_bytes(), FILE_MODE)?;
        installed.push(lxc_target);
    }
    Ok(installed)
}

/// The `filecon` statements of the base policy, which secilc also writes to
/// `file_contexts`. The base keeps them in the one-line literal form
/// `(filecon "REGEX" TYPE (USER ROLE TYPE ((LOW) (HIGH))))` or `... ())`.
pub fn base_filecons() -> Vec<FileCon> {
    base::BASE_POLICY
        .iter()
        .flat_map(|(_, text)| text.lines())
        .filter_map(|line| parse_filecon(line.trim()))
        .collect()
}

fn parse_filecon(line: &str) -> Option<FileCon> {
    let rest = line.strip_prefix("(filecon \"")?;
    let (regex, rest) = rest.split_once('"')?;
    let mut words = rest.trim_start().splitn(2, ' ');
    let file_type = file_contexts::from_cil_keyword(words.next()?).unwrap_or(FileKind::Any);
    let context: String = words
        .next()?
        .chars()
        .filter(|c| !matches!(c, '(' | ')'))
        .collect();
    let parts: Vec<&str> = context.split_whitespace().collect();
    let context = match parts.as_slice() {
        [] => None,
        [user, role, type_name, low, high] if low == high => {
            Some(format!("{user}:{role}:{type_name}:{low}"))
        }
        [user, role, type_name, low, high] => {
            Some(format!("{user}:{role}:{type_name}:{low}-{high}"))
        }
        _ => return None,
    };
    Some(FileCon {
        regex: regex.to_owned(),
        file_type,
        context,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_base_filecon_is_read() {
        let statements = base::BASE_POLICY
            .iter()
            .map(|(_, t)| t.matches("\n(filecon ").count())
            .sum::<usize>();
        assert!(statements > 0);
        assert_eq!(
            base_filecons().len(),
            statements,
            "a base filecon is not in the one-line literal form"
        );
    }
}
