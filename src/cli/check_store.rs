//! `semanifest check --against STORE`: the layout is checked against the
//! store's types (as the module target builds it), then built, compiled
//! with the store and proven by `check::run_against`.

use std::path::Path;

use layout::diag::Report;
use layout::manifest::Parsed;
use store::{self, Baseline};

pub struct Prepared {
    pub baseline: Baseline,
    pub options: store::ModuleOptions,
    /// The layout as parsed against the store: an invalid one is reported
    /// as findings, like any other.
    pub parsed: Result<Parsed, Report>,
}

/// Opens and compiles the store, then parses the layout against it (again
/// without the layout's own module when the store already has it).
pub fn prepare(
    against: &Path,
    layout: Option<&Path>,
    options: store::ModuleOptions,
) -> anyhow::Result<Prepared> {
    eprintln!(
        "semanifest: reading {} and compiling it as it is…",
        against.display()
    );
    let open = |exclude: Option<&str>| Baseline::prepare(against, &options, exclude);
    let baseline = open(None)?;
    let parsed = super::parse_layout_for_store(layout, &baseline)?;
    let module = parsed.as_ref().ok().map(|p| p.layout.module.clone());
    match module {
        Some(module) if baseline.store.module(&module).is_some() => {
            eprintln!("semanifest: the store has module `{module}` already; compiling it again without it…");
            let baseline = open(Some(&module))?;
            let parsed = super::parse_layout_for_store(layout, &baseline)?;
            Ok(Prepared {
                baseline,
                options,
                parsed,
            })
        }
        _ => Ok(Prepared {
            baseline,
            options,
            parsed,
        }),
    }
}
