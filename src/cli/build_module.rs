//! `semanifest build --target module --against STORE`, and the store
//! arguments `check --against` shares.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::{Args as ClapArgs, ValueEnum};
use layout::manifest::Parsed;
use store::{self, Baseline, ProfileName};

#[derive(Clone, Copy, ValueEnum)]
pub enum ProfileArg {
    /// Detect from the store's names.
    Auto,
    /// refpolicy's container module (Debian, Ubuntu): container_engine_t
    /// runs the runtime, privileged_container_domain marks spc_t.
    Refpolicy,
    /// container-selinux (Fedora, RHEL, RHCOS): container_runtime_t runs
    /// the runtime, unconfined container domains are privileged.
    ContainerSelinux,
}

/// The policy store to build or check against.
#[derive(ClapArgs, Clone, Default)]
pub struct StoreArgs {
    /// A policy store, only read: a root as for `semodule -p ROOT` (`/` for
    /// this host), a store directory (/var/lib/selinux/NAME), or a
    /// directory of CIL files from `semodule -E --cil`.
    #[arg(long, value_name = "STORE")]
    pub against: Option<PathBuf>,
    /// The store's container policy, for the names that differ.
    #[arg(long, value_enum, value_name = "PROFILE")]
    pub profile: Option<ProfileArg>,
    /// Run a layout domain as this store type (repeatable), e.g.
    /// `--map kubelet=unconfined_service_t`. Without it a domain keeps its
    /// type when the store has it, a workload becomes the profile's
    /// workload type, the domain that starts workloads the profile's
    /// runtime type, and any other is declared by the module.
    #[arg(long = "map", value_name = "DOMAIN=TYPE", value_parser = parse_map)]
    pub maps: Vec<(String, String)>,
}

/// A `--map` value that is not `DOMAIN=TYPE` with both sides named.
#[derive(Debug, thiserror::Error)]
#[error("expected DOMAIN=TYPE")]
struct MapArgError;

fn parse_map(text: &str) -> Result<(String, String), MapArgError> {
    match text.split_once('=') {
        Some((domain, store_type)) if !domain.is_empty() && !store_type.is_empty() => {
            Ok((domain.to_owned(), store_type.to_owned()))
        }
        _ => Err(MapArgError),
    }
}

impl StoreArgs {
    pub fn options(&self, includes: Vec<PathBuf>, secilc: Option<PathBuf>) -> store::ModuleOptions {
        store::ModuleOptions {
            secilc,
            // This binary serves libsepol's compiler process (`sepol`).
            helper: std::env::current_exe().ok(),
            profile: match self.profile {
                None | Some(ProfileArg::Auto) => None,
                Some(ProfileArg::Refpolicy) => Some(ProfileName::Refpolicy),
                Some(ProfileArg::ContainerSelinux) => Some(ProfileName::ContainerSelinux),
            },
            maps: self.maps.clone(),
            includes,
        }
    }
}

pub struct Request {
    pub layout: Option<PathBuf>,
    pub out: PathBuf,
    pub includes: Vec<PathBuf>,
    pub secilc: Option<PathBuf>,
    pub store: StoreArgs,
    pub stock_out: Option<PathBuf>,
}

/// Opens the store and parses the layout against it. A store that already
/// holds the layout's module is compiled again without it, since the new
/// module replaces it.
pub fn prepare(
    against: &Path,
    layout: Option<&Path>,
    options: &store::ModuleOptions,
) -> Result<(Baseline, Parsed)> {
    eprintln!(
        "semanifest: reading {} and compiling it as it is…",
        against.display()
    );
    let baseline = Baseline::prepare(against, options, None)?;
    let parsed = super::accept_layout(super::parse_layout_for_store(layout, &baseline)?)?;
    if baseline.store.module(&parsed.layout.module).is_none() {
        return Ok((baseline, parsed));
    }
    eprintln!(
        "semanifest: the store has module `{}` already; compiling it again without it…",
        parsed.layout.module
    );
    let baseline = Baseline::prepare(against, options, Some(&parsed.layout.module))?;
    let parsed = super::accept_layout(super::parse_layout_for_store(layout, &baseline)?)?;
    Ok((baseline, parsed))
}

pub fn run(request: Request) -> Result<u8> {
    let Some(against) = request.store.against.clone() else {
        bail!("--target module needs --against STORE (the policy store to build for)");
    };
    let options = request.store.options(request.includes, request.secilc);
    let (baseline, parsed) = prepare(&against, request.layout.as_deref(), &options)?;
    if let Some(dir) = &request.stock_out {
        for path in baseline.write_stock(dir)? {
            eprintln!("wrote {}", path.display());
        }
    }
    eprintln!(
        "semanifest: building module `{}` for profile {}, compiling store + module…",
        parsed.layout.module,
        baseline.profile.name.as_str()
    );
    let build = store::build(&baseline, &parsed, &options)?;
    let report = &build.report;
    if baseline.verified_earlier() {
        eprintln!(
            "semanifest: the store as it is was compiled and verified by an earlier build \
             (cached by content; SEMANIFEST_CACHE_DIR=off compiles it again)"
        );
    }
    if let Some(why) = report.verification.unverified() {
        eprintln!("semanifest: warning: the prediction is not verified: {why}");
    }
    if !report.proof.is_proven() {
        eprintln!(
            "semanifest: warning: {}",
            report.proof.describe(report.expand_check)
        );
    }
    let written = build.write(&request.out)?;
    super::print_stdout(store::module_report::render_text(&build.report).as_bytes())?;
    for path in written {
        eprintln!("wrote {}", path.display());
    }
    Ok(super::EXIT_OK)
}
