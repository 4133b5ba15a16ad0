//! Argument parsing and dispatch. One file per subcommand; each returns the
//! process exit code, and errors are printed once, here.

mod build;
mod build_module;
mod check;
mod check_store;
mod completions;
mod diff;
mod layout;
mod lookup;
mod man;
mod relabel;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Everything went as asked.
pub const EXIT_OK: u8 = 0;
/// The command ran but found problems (unlabelled objects, findings, drift).
pub const EXIT_FINDINGS: u8 = 1;
/// Usage errors and bad input (manifest, file_contexts, YAML, missing tools).
pub const EXIT_BAD_INPUT: u8 = 2;

const AFTER_HELP: &str = "\
Examples:
  semanifest build --out out/                 compile the embedded default layout
  semanifest build --layout node.yaml --out out/ --install-root /sysroot
  semanifest layout show > node.yaml          start a layout from the default
  semanifest diff git:main:node.yaml node.yaml what a layout change means
  semanifest man relabel | man -l -           the manual page of a command

Exit codes: 0 success, 1 findings or objects that could not be labelled,
2 usage errors or bad input.";

/// Compile a declarative /var layout into SELinux policy and labels,
/// relabel trees fast, and check layouts, policy and workloads in CI.
#[derive(Parser)]
#[command(name = "semanifest", version, after_help = AFTER_HELP)]
pub struct Cli {
    /// More logging on stderr (once: info, twice: debug); RUST_LOG overrides.
    #[arg(long, global = true, action = clap::ArgAction::Count)]
    verbose_log: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Build(build::Args),
    Check(check::Args),
    Completions(completions::Args),
    Diff(diff::Args),
    /// Print, validate and describe layout manifests.
    ///
    /// A layout manifest (YAML, `kind: Layout`) says which directory of
    /// /var belongs to which process domain. Start from the default with
    /// `semanifest layout show > node.yaml`, check edits with
    /// `semanifest layout validate node.yaml`, and let an editor complete
    /// and check them with `semanifest layout schema`.
    #[command(subcommand)]
    Layout(layout::Command),
    Lookup(lookup::LookupArgs),
    Man(man::Args),
    Relabel(relabel::RelabelArgs),
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose_log);
    let result = match cli.command {
        Command::Build(args) => build::run(args),
        Command::Check(args) => check::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Layout(command) => layout::run(command),
        Command::Man(args) => man::run(args),
        Command::Lookup(args) => return lookup::main(args),
        Command::Relabel(args) => return relabel::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("semanifest: error: {error:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn init_tracing(verbosity: u8) {
    let default = match verbosity {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Writes `bytes` to standard output; a closed pipe (`| head`) is not an
/// error.
pub fn print_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(error.into()),
        _ => Ok(()),
    }
}

/// Writes `bytes` to `path` (mode 0644) through a temporary sibling and a
/// rename, creating the parent directories: for `--install-root` trees.
pub fn install_file(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let parent = path.parent().context("an install path has a parent")?;
    std::fs::create_dir_all(parent)
        .with_context(|| format!("{}: cannot create", parent.display()))?;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".semanifest-tmp");
    let tmp = path.with_file_name(name);
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .mode(0o644)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().with_context(|| format!("{}: cannot write", path.display()))
}

/// Loads `--layout FILE`, or the embedded default layout without one.
/// Prints warnings; on errors prints every diagnostic and returns `Err(2)`.
pub fn load_layout(path: Option<&std::path::Path>) -> Result<semanifest::manifest::Parsed, u8> {
    load_layout_with(path, &semanifest::policy::base_facts())
}

/// [`load_layout`] against another base (a policy store's types).
pub fn load_layout_with(
    path: Option<&std::path::Path>,
    base: &semanifest::manifest::BaseFacts,
) -> Result<semanifest::manifest::Parsed, u8> {
    use semanifest::manifest;
    let parsed = match path {
        None => manifest::default_layout(base),
        Some(path) => match manifest::read_source(path) {
            Ok(source) => manifest::parse(source, base),
            Err(error) => {
                eprintln!("semanifest: error: {error}");
                return Err(EXIT_BAD_INPUT);
            }
        },
    };
    match parsed {
        Ok(parsed) => {
            for warning in &parsed.warnings {
                eprint!("{}", warning.render(&parsed.source));
            }
            Ok(parsed)
        }
        Err(report) => {
            eprintln!("{report}");
            Err(EXIT_BAD_INPUT)
        }
    }
}

/// The file_contexts a layout compiles to (base policy + module), loaded
/// into the lookup engine without running secilc.
pub fn layout_file_contexts(
    path: &std::path::Path,
) -> Result<semanifest::fcontext::FileContexts, u8> {
    let parsed = load_layout(Some(path))?;
    let text = semanifest::policy::file_contexts_text(&parsed.layout);
    semanifest::fcontext::FileContexts::from_text(&parsed.source.name, text.as_bytes()).map_err(
        |error| {
            eprintln!("semanifest: error: {error}");
            EXIT_BAD_INPUT
        },
    )
}
