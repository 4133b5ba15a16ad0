//! A distribution's policy store, read-only: its modules, how libsemanage
//! compiles them, what the compiled policy says, and how a layout module
//! fits into it (`build --target module`, `check --against`).
//!
//! Invariants: nothing here writes to, locks or creates anything in the
//! store; every compilation happens in a private temporary directory. The
//! store is never trusted to check anything: the layout's neverallows are
//! checked by a secilc shown to enforce them, whatever the store's
//! `expand-check` says, and every claim about labels is proven by looking
//! keys up in the predicted `file_contexts`.

mod cache;
mod carry;
mod compile;
mod conditions;
mod domains;
mod facts;
pub mod filecons;
mod grade;
pub mod module_report;
mod open;
mod profile;
mod proof;
mod reach;
mod target;
mod workload_set;

use std::path::{Path, PathBuf};

pub use grade::{describe_permissions, Grade};
pub use module_report::{ModuleReport, Verification};
pub use open::Store;
pub use profile::{Profile, ProfileName};
pub use proof::Proof;
pub use target::{build, Baseline, ModuleBuild, ModuleError, ModuleOptions};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The I/O error is part of the message, not a `source()`, so a
    /// chain-printing caller does not say it twice.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: not a policy store: {why}", path.display())]
    NotAStore { path: PathBuf, why: String },
    #[error(transparent)]
    Secilc(#[from] policy::secilc::SecilcError),
    #[error(transparent)]
    Sepol(#[from] sepol::CilError),
    #[error(transparent)]
    Setools(#[from] policy::setools::SetoolsError),
    /// A compiled policy (the store's, or the one predicted) unreadable.
    #[error(transparent)]
    KernelPolicy(#[from] policy::kernel_policy::KernelPolicyError),
    #[error(
        "the CIL compiler cannot compile the store as it is (its own modules fail){}:\n{output}",
        hint.as_deref().map(|h| format!("; {h}")).unwrap_or_default()
    )]
    StockRefused {
        output: String,
        /// What the store's form leaves unknown, when that may be why.
        hint: Option<String>,
    },
    #[error(
        "the store has module `{name}` at priority {priority}, above the 400 the new module is installed at: \
         it would keep winning; remove it first (`semodule -X {priority} -r {name}`)"
    )]
    Shadowed { name: String, priority: u16 },
    #[error("{0}")]
    Profile(String),
    #[error("{0}")]
    FileContexts(String),
    /// A compilation run beside the build stopped before it answered.
    #[error("{0} stopped")]
    Stopped(&'static str),
    /// The check of the store as it is, run beside the build, failed; the
    /// build asks for its answer more than once, so it is shared.
    #[error(transparent)]
    AsIs(std::sync::Arc<StoreError>),
    /// Writing an output (fsroot's one writer).
    #[error(transparent)]
    Write(#[from] fsroot::Error),
}

impl StoreError {
    pub(crate) fn io(path: &Path, error: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_owned(),
            error,
        }
    }
}

/// The directory `dir`, made if missing, opened to write outputs into.
pub(crate) fn output_dir(dir: &Path) -> Result<fsroot::Root, StoreError> {
    std::fs::create_dir_all(dir).map_err(|error| StoreError::io(dir, error))?;
    Ok(fsroot::Root::open(dir)?)
}

/// Writes `bytes` as the file `name` of `out` (mode 0644), through
/// fsroot's one writer: nothing at the name is followed.
pub(crate) fn write_output(
    out: &fsroot::Root,
    dir: &Path,
    name: &str,
    bytes: &[u8],
) -> Result<PathBuf, StoreError> {
    out.write_file(format!("/{name}").as_bytes(), bytes, 0o644)?;
    Ok(dir.join(name))
}

/// Removes the file `name` of `out` if it is there (never following it).
pub(crate) fn remove_output(out: &fsroot::Root, dir: &Path, name: &str) -> Result<(), StoreError> {
    let at = out.open_dir_beneath(b"/")?;
    let name = std::ffi::CString::new(name)
        .map_err(|_| StoreError::io(&dir.join(name), std::io::ErrorKind::InvalidInput.into()))?;
    match fsroot::unlink(&at, &name) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(errno) => Err(StoreError::io(
            &dir.join(name.to_string_lossy().as_ref()),
            errno.into(),
        )),
    }
}
