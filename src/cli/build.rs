//! `semanifest build`: layout → CIL module, file_contexts, policy.33.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::{Args as ClapArgs, ValueEnum};

use super::args::Format;
use layout::diag::Report;
use policy::build_json::{self, BuildErrorReport};
use policy::{self, BuildError, BuildOptions};

const AFTER_HELP: &str = "\
Standalone (the default) writes into OUT:
  <module>.cil     the generated module (one commented block per path)
  base.cil         the embedded base policy it compiles against
  file_contexts    the labels every path of the layout must carry
  policy.33        the binary policy, compiled by secilc

Every `protected: true` path becomes a neverallow, so secilc proves over the
whole policy (including --include files) that no other domain can touch it.

With --format json, standard output gets one JSON report, also when the build
fails: the files written, or each error with its kind; a broken protection is
a `neverallow` error with the protected path, its type and the rules that
grant it (docs/build-json.md). The exit code is the same either way.

With --target module --against STORE (a distribution's policy store, read
only: a `semodule -p` ROOT, /var/lib/selinux/NAME, or a directory of CIL from
`semodule -E --cil`), OUT gets:
  <module>.cil     the layout as a module for the store: `semodule -X 400 -i`
  policy.33        what the store builds with the module in (predicted by
                   compiling store + module with libsepol, as secilc does,
                   neverallows checked; --secilc PATH runs that secilc)
  file_contexts    likewise, with the store's .homedirs/.local/.subs beside it
  report.txt       what the module changes: domains, labels before and after,
  report.json      file-context collisions resolved, protections and every
                   other domain that can still reach a protected type

Examples:
  semanifest build --out out/
  semanifest build --layout worker.yaml --out out/ --include site.cil
  semanifest build --out out/ --install-root /sysroot   # policy, units, binary; boot /sysroot
  semanifest build --out out/ --install-root /sysroot --no-install-binary   # packaged
  semanifest build --out out/ --include site.cil --format json   # errors for machines
  semanifest build --target module --against / --out out/   # this host's policy
  semanifest build --target module --against /var/lib/selinux/default --out out/ \\
      --stock-out stock/ --profile refpolicy";

#[derive(Clone, Copy, ValueEnum)]
pub enum BuildTarget {
    /// Base policy + module compiled into a complete policy.33.
    Standalone,
    /// One module for an existing policy store (needs --against).
    Module,
}

/// Compile a layout into SELinux policy and file_contexts.
#[derive(ClapArgs)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(flatten)]
    layout: super::args::LayoutArg,
    /// Directory to write the outputs to (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// What to produce.
    #[arg(
        long,
        value_enum,
        default_value = "standalone",
        requires_if("module", "against")
    )]
    target: BuildTarget,
    /// Output format: `wrote PATH` lines and errors go to standard error
    /// either way; json also prints a report on standard output
    /// (docs/build-json.md; the standalone target only).
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// Extra CIL compiled with the policy; held to the layout's neverallows.
    #[arg(long = "include", value_name = "FILE.cil")]
    includes: Vec<PathBuf>,
    /// Also install into the image at ROOT: the policy under
    /// ROOT/etc/selinux/NAME (config, policy, file_contexts), the units
    /// that boot the layout under ROOT/usr/lib/systemd/system, enabled
    /// (see `semanifest units`), and this semanifest binary as
    /// ROOT/usr/bin/semanifest, which the units run.
    #[arg(long, value_name = "ROOT")]
    install_root: Option<PathBuf>,
    /// With --install-root: do not install this binary as
    /// ROOT/usr/bin/semanifest (the image provides it otherwise, e.g. from
    /// a package).
    #[arg(long, requires = "install_root")]
    no_install_binary: bool,
    /// Policy name under /etc/selinux with --install-root.
    #[arg(long, value_name = "NAME", default_value = "semanifest")]
    policy_name: String,
    /// The secilc to run (default: `secilc` on PATH; with --target module,
    /// libsepol's compiler in a helper process, as secilc calls it, unless
    /// this is given or libsepol.so.2 cannot be loaded).
    #[arg(long, value_name = "PATH")]
    secilc: Option<PathBuf>,
    /// Do not check neverallows. Only for deliberately leaky test controls:
    /// the resulting policy proves nothing.
    #[arg(long, hide = true)]
    unsafe_disable_neverallow: bool,
    #[command(flatten)]
    store: super::build_module::StoreArgs,
    /// With --target module: also write the store's own policy.33 and
    /// file_contexts, as predicted without the module, into DIR (the
    /// control for a before/after test).
    #[arg(long, value_name = "DIR", requires = "against")]
    stock_out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<u8> {
    // What clap cannot declare: conflicts with one value of --target.
    if let BuildTarget::Module = args.target {
        if args.install_root.is_some() || args.unsafe_disable_neverallow {
            bail!("--install-root is for the standalone target; install a module with `semodule -X 400 -i`");
        }
        if args.format == Format::Json {
            bail!("--format json is for the standalone target; --target module writes OUT/report.json");
        }
        return super::build_module::run(super::build_module::Request {
            layout: args.layout.path,
            out: args.out,
            includes: args.includes,
            secilc: args.secilc,
            store: args.store,
            stock_out: args.stock_out,
        });
    }
    if args.store.against.is_some() {
        bail!("--against and --stock-out need --target module");
    }
    let format = args.format;
    let result = standalone(args);
    if format == Format::Json {
        let (written, errors) = match &result {
            Ok(written) => (written.as_slice(), Vec::new()),
            Err(error) => (&[][..], error_reports(error)),
        };
        super::print_stdout(build_json::render(written, &errors).as_bytes())?;
    }
    result.map(|_| super::EXIT_OK)
}

/// The errors of a failed build as the JSON report lists them.
fn error_reports(error: &anyhow::Error) -> Vec<BuildErrorReport> {
    if let Some(report) = error.downcast_ref::<Report>() {
        return BuildErrorReport::of_layout(report);
    }
    if let Some(build) = error.downcast_ref::<BuildError>() {
        return BuildErrorReport::of_build_error(build);
    }
    vec![BuildErrorReport::other(format!("{error:#}"))]
}

/// Builds the standalone policy; the paths written.
fn standalone(args: Args) -> Result<Vec<PathBuf>> {
    let parsed = super::load_layout(args.layout.path.as_deref())?;
    // The image is read before anything is written into it.
    let units = match &args.install_root {
        Some(root) => Some(super::units::render(
            &parsed,
            Some(root),
            &args.policy_name,
        )?),
        None => None,
    };
    // This binary, read once, before anything is written: what the image's
    // units run.
    let binary = match &args.install_root {
        Some(_) if !args.no_install_binary => Some(running_binary()?),
        _ => None,
    };
    let options = BuildOptions {
        out_dir: args.out,
        secilc: args.secilc,
        includes: args.includes,
        install_root: args.install_root.clone(),
        policy_name: args.policy_name.clone(),
        disable_neverallow: args.unsafe_disable_neverallow,
    };
    let output = policy::build(&parsed, &options)?;
    let mut written: Vec<PathBuf> = [
        output.module_cil,
        output.base_cil,
        output.file_contexts,
        output.policy,
    ]
    .into_iter()
    .chain(output.installed)
    .collect();
    for path in &written {
        eprintln!("wrote {}", path.display());
    }
    if let (Some(root), Some(units)) = (&args.install_root, &units) {
        written.extend(super::units::write(units, root, true)?);
    }
    if let (Some(root), Some(binary)) = (&args.install_root, &binary) {
        let path = units::install_binary(root, binary)?;
        eprintln!("wrote {}", path.display());
        written.push(path);
    }
    Ok(written)
}

/// The bytes of the running semanifest.
fn running_binary() -> Result<Vec<u8>> {
    let exe = std::env::current_exe().context("cannot find the running semanifest binary")?;
    std::fs::read(&exe).with_context(|| format!("{}: cannot read", exe.display()))
}
