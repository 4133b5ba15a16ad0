//! A distribution's policy store, read-only: its modules, how libsemanage
//! compiles them, what the compiled policy says, and how a layout module
//! fits into it (`build --target module`, `check --against`).
//!
//! Invariants: nothing here writes to, locks or creates anything in the
//! store; every compilation happens in a private temporary directory. The
//! store is never trusted to check anything: neverallows are checked by
//! secilc whatever its `expand-check` says, and every claim about labels is
//! proven by looking keys up in the predicted `file_contexts`.

mod compile;
mod facts;
pub mod filecons;
pub mod module_report;
mod open;
mod profile;
mod reach;
mod target;

use std::path::{Path, PathBuf};

pub use module_report::{ModuleReport, Verification};
pub use open::Store;
pub use profile::{Profile, ProfileName};
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
    Setools(#[from] policy::setools::SetoolsError),
    #[error("secilc cannot compile the store as it is (its own modules fail):\n{output}")]
    StockRefused { output: String },
    #[error(
        "the store has module `{name}` at priority {priority}, above the 400 the new module is installed at: \
         it would keep winning; remove it first (`semodule -X {priority} -r {name}`)"
    )]
    Shadowed { name: String, priority: u16 },
    #[error("{0}")]
    Profile(String),
    #[error("{0}")]
    FileContexts(String),
}

impl StoreError {
    pub(crate) fn io(path: &Path, error: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_owned(),
            error,
        }
    }
}
