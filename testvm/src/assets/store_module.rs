//! What the store boots (3: Debian's refpolicy, 7: Fedora's targeted)
//! share: the layout's module built against a store and installed by the
//! real `semodule` into a copy of it, and the policy files a guest boots
//! from such a store. The guest always boots what the store installed,
//! never our prediction of it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context as _, Result};

use crate::host;
use crate::report::Row;

/// The files of a store's installed policy a guest needs: the binary
/// policy and the text file_contexts with its path aliases.
const POLICY_FILES: [&str; 3] = [
    "policy/policy.33",
    "contexts/files/file_contexts",
    "contexts/files/file_contexts.subs_dist",
];

/// Beside each installed policy: whether semodule installed what the
/// build predicted (`identical` or what differs).
const PREDICTION: &str = "prediction";

/// The line of the default layout that names auditd the store owner of
/// `/var/log/audit`; the control layout is the default without it.
const AUDITD_OWNER: &str = "storeOwners: [auditd_t]";

/// The policy name a `semodule -p ROOT` root uses (`SELINUXTYPE` in
/// `ROOT/etc/selinux/config`).
pub fn policy_name(root: &Path) -> Result<String> {
    let config = root.join("etc/selinux/config");
    let text =
        fs::read_to_string(&config).with_context(|| format!("cannot read {}", config.display()))?;
    text.lines()
        .find_map(|line| line.trim().strip_prefix("SELINUXTYPE="))
        .map(|name| name.trim().to_owned())
        .with_context(|| format!("{} names no SELINUXTYPE", config.display()))
}

/// The embedded default layout without auditd's owner grant, in
/// `work/layout-no-owner.yaml`: the control in which the store's auditd
/// must lose the audit log.
pub fn layout_without_owner(semanifest: &Path, work: &Path) -> Result<PathBuf> {
    let layout = host::output(
        Command::new(semanifest).args(["layout", "show"]),
        "semanifest layout show",
    )?;
    let kept: Vec<&str> = layout
        .lines()
        .filter(|line| line.trim() != AUDITD_OWNER)
        .collect();
    ensure!(
        kept.len() + 1 == layout.lines().count(),
        "the default layout no longer has exactly one `{AUDITD_OWNER}` line; \
         the auditd controls need it to leave it out"
    );
    let path = work.join("layout-no-owner.yaml");
    fs::write(&path, kept.join("\n") + "\n")?;
    Ok(path)
}

/// `build --target module --against STORE [--layout LAYOUT]`, then
/// `semodule -X 400 -i` of that module into a fresh copy of `store` (a
/// root for `semodule -p`); the copy's installed policy goes to `dest`.
/// `tag` names the logs and scratch directories in `work`.
pub fn install(
    semanifest: &Path,
    store: &Path,
    layout: Option<&Path>,
    work: &Path,
    tag: &str,
    dest: &Path,
) -> Result<()> {
    let module = work.join(format!("{tag}-module"));
    let mut build = Command::new(semanifest);
    build
        .args(["build", "--target", "module", "--against"])
        .arg(store);
    if let Some(layout) = layout {
        build.arg("--layout").arg(layout);
    }
    host::run_logged(
        build.arg("--out").arg(&module),
        &work.join(format!("{tag}-build.log")),
        "build --target module",
    )?;
    let copy = work.join(format!("{tag}-installed"));
    copy_root(store, &copy)?;
    host::run_logged(
        Command::new("semodule")
            .args(["-n", "-p"])
            .arg(&copy)
            .args(["-s", &policy_name(&copy)?, "-X", "400", "-i"])
            .arg(module.join("structured_var.cil")),
        &work.join(format!("{tag}-semodule.log")),
        "semodule -i structured_var.cil",
    )?;
    copy_policy(&copy, dest)?;
    fs::write(dest.join(PREDICTION), compare(&module, dest)?)?;
    Ok(())
}

/// `identical`, or each predicted file that is not what semodule
/// installed, with both sizes.
fn compare(predicted: &Path, installed: &Path) -> Result<String> {
    let mut differ = Vec::new();
    for file in ["policy.33", "file_contexts"] {
        let read = |dir: &Path| {
            fs::read(dir.join(file))
                .with_context(|| format!("cannot read {}", dir.join(file).display()))
        };
        let (ours, theirs) = (read(predicted)?, read(installed)?);
        if ours != theirs {
            differ.push(format!(
                "{file} differs (predicted {} bytes, installed {} bytes)",
                ours.len(),
                theirs.len()
            ));
        }
    }
    Ok(if differ.is_empty() {
        "identical: policy.33 and file_contexts".to_owned()
    } else {
        differ.join("; ")
    })
}

/// The host scenario NAME: semodule installed, byte for byte, the
/// policy.33 and file_contexts `build --target module` predicted (the
/// store boot's `module/`, recorded when it was built).
pub fn prediction_row(name: &str, installed: &Path) -> Row {
    let (observed, passed) = match fs::read_to_string(installed.join(PREDICTION)) {
        Ok(text) => (text.trim().to_owned(), text.starts_with("identical")),
        Err(error) => (format!("no record of the comparison: {error}"), false),
    };
    Row::new(name, "semodule installs the prediction", observed, passed)
}

/// The installed policy of the store at `root` (POLICY_FILES) into `dest`.
pub fn copy_policy(root: &Path, dest: &Path) -> Result<()> {
    let etc = root.join("etc/selinux").join(policy_name(root)?);
    fs::create_dir_all(dest)?;
    for file in POLICY_FILES {
        let from = etc.join(file);
        let name = from.file_name().context("a file name")?;
        fs::copy(&from, dest.join(name))
            .with_context(|| format!("cannot copy {}", from.display()))?;
    }
    Ok(())
}

/// `cp -a FROM TO`, TO emptied first: a store is thousands of files.
pub fn copy_root(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        fs::remove_dir_all(to).with_context(|| format!("cannot empty {}", to.display()))?;
    }
    host::output(
        Command::new("cp").arg("-a").arg(from).arg(to),
        "cp -a (a copy of the store)",
    )?;
    Ok(())
}

/// Whether `dir` holds every policy file a guest boots (and, for a store
/// with the module, the comparison with the prediction).
pub fn complete(dir: &Path, with_module: bool) -> bool {
    let names = POLICY_FILES
        .iter()
        .filter_map(|file| Path::new(file).file_name())
        .chain(with_module.then_some(PREDICTION.as_ref()));
    names
        .into_iter()
        .all(|name| fs::metadata(dir.join(name)).is_ok_and(|m| m.len() > 0))
}
