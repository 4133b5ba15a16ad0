//! Argument parsing and dispatch. One file per subcommand, each with the
//! same shape: `pub fn run(args) -> anyhow::Result<u8>`, `Ok` carrying the
//! exit code. Errors are returned, never printed by a subcommand: [`exit`]
//! prints each once, as `semanifest: error: …` (a layout's diagnostics as
//! rendered), and exits 2. A closed standard output (`| head`) ends the
//! run quietly with exit 0, as ripgrep does.

mod admission;
mod apply;
mod args;
mod build;
mod build_module;
mod check;
mod check_store;
mod completions;
mod df;
mod diff;
mod layout;
mod lookup;
mod man;
mod prune;
mod relabel;
mod rm;
mod suggest;
mod units;

use std::path::Path;
use std::process::ExitCode;

use ::layout::diag::Report;
use ::layout::manifest::{self, BaseFacts, Parsed};
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
    Admission(admission::Args),
    Apply(apply::Args),
    Build(build::Args),
    Check(check::Args),
    Completions(completions::Args),
    Df(df::Args),
    Diff(diff::Args),
    /// Print, validate and describe layout manifests.
    ///
    /// A layout manifest (YAML, `kind: Layout`) says which directory of
    /// /var belongs to which process domain. Start from the default with
    /// `semanifest layout show > node.yaml`, check edits with
    /// `semanifest layout validate node.yaml`, and let an editor complete
    /// and check them with `semanifest layout schema`.
    #[command(subcommand)]
    Layout(layout::LayoutCommand),
    Lookup(lookup::Args),
    Man(man::Args),
    Prune(prune::Args),
    Relabel(relabel::Args),
    Rm(rm::Args),
    Suggest(suggest::Args),
    Units(units::Args),
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose_log);
    let result = match cli.command {
        Command::Admission(args) => admission::run(args),
        Command::Apply(args) => apply::run(args),
        Command::Build(args) => build::run(args),
        Command::Check(args) => check::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Df(args) => df::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Layout(command) => layout::run(command),
        Command::Man(args) => man::run(args),
        Command::Lookup(args) => lookup::run(args),
        Command::Prune(args) => prune::run(args),
        Command::Relabel(args) => relabel::run(args),
        Command::Rm(args) => rm::run(args),
        Command::Suggest(args) => suggest::run(args),
        Command::Units(args) => units::run(args),
    };
    exit(result)
}

/// The one way out: the exit code, or the error printed once and exit 2;
/// a closed standard output is no error.
fn exit(result: anyhow::Result<u8>) -> ExitCode {
    let error = match result {
        Ok(code) => return ExitCode::from(code),
        Err(error) => error,
    };
    if is_broken_pipe(&error) {
        return ExitCode::from(EXIT_OK);
    }
    match error.downcast_ref::<Errors>() {
        Some(Errors(errors)) => errors.iter().for_each(print_error),
        None => print_error(&error),
    }
    ExitCode::from(EXIT_BAD_INPUT)
}

fn print_error(error: &anyhow::Error) {
    match error.downcast_ref::<Report>() {
        Some(report) => eprintln!("{report}"),
        None => eprintln!("semanifest: error: {}", describe(error)),
    }
}

/// The error and its causes, `: `-separated; a cause whose text the
/// message already holds (library errors that spell out their I/O error)
/// is not said twice.
fn describe(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// Whether standard output was closed under us (`| head`): the reader has
/// what it wanted.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|error| error.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Independent errors met in one run (phases of `check` that could not
/// run, both layouts of `diff`), each printed by [`exit`].
#[derive(Debug)]
pub struct Errors(pub Vec<anyhow::Error>);

impl std::fmt::Display for Errors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let errors: Vec<String> = self.0.iter().map(describe).collect();
        f.write_str(&errors.join("\n"))
    }
}

impl std::error::Error for Errors {}

impl Errors {
    /// Errors known only by their message.
    pub fn of_messages(messages: impl IntoIterator<Item = impl ToString>) -> Self {
        Errors(
            messages
                .into_iter()
                .map(|message| anyhow::Error::msg(message.to_string()))
                .collect(),
        )
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

/// Prints `report` as pretty JSON with its format's `version` first.
pub fn print_json<T: serde::Serialize>(version: u32, report: &T) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let json = serde_json::to_string_pretty(&args::Versioned { version, report })
        .context("rendering the report")?;
    print_stdout(format!("{json}\n").as_bytes())?;
    Ok(())
}

/// Prints each of `problems` on stderr as `semanifest: KIND: problem`,
/// the form every node command reports what it skipped or refused.
pub fn print_problems<T: std::fmt::Display>(kind: &str, problems: &[T]) {
    for problem in problems {
        eprintln!("semanifest: {kind}: {problem}");
    }
}

/// Writes `bytes` to standard output. A closed pipe (`| head`) is an
/// error that [`exit`] turns into a quiet exit 0.
pub fn print_stdout(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// The directory `dir` (made if missing, as an output directory is) opened
/// as a root to write beneath with [`fsroot::Root::write_file`].
pub fn output_root(dir: &Path) -> anyhow::Result<fsroot::Root> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    Ok(fsroot::Root::open(dir)?)
}

/// Reads and parses `--layout FILE`, or the embedded default layout,
/// against `base`. `Err` when the file cannot be read; `Ok(Err(report))`
/// for a layout that breaks the manifest rules (`check` reports those as
/// findings).
pub fn parse_layout(
    path: Option<&Path>,
    base: &BaseFacts,
) -> anyhow::Result<Result<Parsed, Report>> {
    Ok(match path {
        None => manifest::default_layout(base),
        Some(path) => manifest::parse(manifest::read_source(path)?, base),
    })
}

/// [`parse_layout`] against a policy store: its types, and only the host
/// classes its distribution policy can grant.
pub fn parse_layout_for_store(
    path: Option<&Path>,
    baseline: &store::Baseline,
) -> anyhow::Result<Result<Parsed, Report>> {
    Ok(parse_layout(path, &baseline.base_facts())?
        .and_then(|parsed| manifest::for_store(parsed, baseline.family())))
}

/// A parsed layout with its warnings printed; an invalid one is the error
/// (its diagnostics are printed by [`exit`]).
pub fn accept_layout(parsed: Result<Parsed, Report>) -> anyhow::Result<Parsed> {
    let parsed = parsed?;
    for warning in &parsed.warnings {
        eprint!("{}", warning.render(&parsed.source));
    }
    Ok(parsed)
}

/// Loads `--layout FILE`, or the embedded default layout, against the
/// standalone base policy.
pub fn load_layout(path: Option<&Path>) -> anyhow::Result<Parsed> {
    load_layout_with(path, &policy::base_facts())
}

/// [`load_layout`] against another base (a policy store's types).
pub fn load_layout_with(path: Option<&Path>, base: &BaseFacts) -> anyhow::Result<Parsed> {
    accept_layout(parse_layout(path, base)?)
}

/// The file contexts of a parsed layout (base policy + module), loaded
/// into the lookup engine without running secilc.
pub fn contexts_of(parsed: &::layout::manifest::Parsed) -> anyhow::Result<selabel::FileContexts> {
    let text = policy::file_contexts_text(&parsed.layout);
    Ok(selabel::FileContexts::from_text(
        &parsed.source.name,
        text.as_bytes(),
    )?)
}

/// The file_contexts a layout compiles to (base policy + module), loaded
/// into the lookup engine without running secilc.
pub fn layout_file_contexts(path: &Path) -> anyhow::Result<selabel::FileContexts> {
    Ok(layout_parsed_contexts(path)?.compile()?)
}

/// The file contexts a layout file compiles to, parsed, not compiled.
pub fn layout_parsed_contexts(path: &Path) -> anyhow::Result<selabel::ParsedContexts> {
    let parsed = load_layout(Some(path))?;
    let text = policy::file_contexts_text(&parsed.layout);
    Ok(selabel::ParsedContexts::from_text(
        &parsed.source.name,
        text.as_bytes(),
    )?)
}
