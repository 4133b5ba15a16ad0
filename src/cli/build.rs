//! `semanifest build`: layout → CIL module, file_contexts, policy.33.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use semanifest::policy::{self, BuildError, BuildOptions};

const AFTER_HELP: &str = "\
Writes into OUT:
  <module>.cil     the generated module (one commented block per path)
  base.cil         the embedded base policy it compiles against
  file_contexts    the labels every path of the layout must carry
  policy.33        the binary policy, compiled by secilc

Every `protected: true` path becomes a neverallow, so secilc proves over the
whole policy (including --include files) that no other domain can touch it.

Examples:
  semanifest build --out out/
  semanifest build --layout worker.yaml --out out/ --include site.cil
  semanifest build --out out/ --install-root /sysroot   # then boot /sysroot";

#[derive(Clone, Copy, ValueEnum)]
pub enum Target {
    /// Base policy + module compiled into a complete policy.33.
    Standalone,
}

/// Compile a layout into SELinux policy and file_contexts.
#[derive(ClapArgs)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The layout manifest; without it, the embedded default layout.
    #[arg(long, value_name = "FILE")]
    layout: Option<PathBuf>,
    /// Directory to write the outputs to (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// What to produce.
    #[arg(long, value_enum, default_value = "standalone")]
    target: Target,
    /// Extra CIL compiled with the policy; held to the layout's neverallows.
    #[arg(long = "include", value_name = "FILE.cil")]
    includes: Vec<PathBuf>,
    /// Also install into ROOT/etc/selinux/NAME (config, policy, file_contexts).
    #[arg(long, value_name = "ROOT")]
    install_root: Option<PathBuf>,
    /// Policy name under /etc/selinux with --install-root.
    #[arg(long, value_name = "NAME", default_value = "semanifest")]
    policy_name: String,
    /// The secilc to run (default: `secilc` on PATH).
    #[arg(long, value_name = "PATH")]
    secilc: Option<PathBuf>,
    /// Do not check neverallows. Only for deliberately leaky test controls:
    /// the resulting policy proves nothing.
    #[arg(long, hide = true)]
    unsafe_disable_neverallow: bool,
}

pub fn run(args: Args) -> Result<u8> {
    let parsed = match super::load_layout(args.layout.as_deref()) {
        Ok(parsed) => parsed,
        Err(code) => return Ok(code),
    };
    let Target::Standalone = args.target;
    let options = BuildOptions {
        out_dir: args.out,
        secilc: args.secilc,
        includes: args.includes,
        install_root: args.install_root,
        policy_name: args.policy_name,
        disable_neverallow: args.unsafe_disable_neverallow,
    };
    match policy::build(&parsed, &options) {
        Ok(output) => {
            for path in [&output.module_cil, &output.base_cil, &output.file_contexts, &output.policy]
                .into_iter()
                .chain(&output.installed)
            {
                eprintln!("wrote {}", path.display());
            }
            Ok(super::EXIT_OK)
        }
        Err(error @ BuildError::Rejected { .. }) => {
            eprintln!("semanifest: error: {error}");
            Ok(super::EXIT_BAD_INPUT)
        }
        Err(error) => Err(error.into()),
    }
}
