//! Argument parsing and dispatch. One file per subcommand.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod lookup;
mod relabel;

/// Exit code for usage errors and bad input (manifest, file_contexts, YAML).
pub const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser)]
#[command(name = "semanifest", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Lookup(lookup::LookupArgs),
    Relabel(relabel::RelabelArgs),
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Lookup(args) => lookup::main(args),
        Command::Relabel(args) => relabel::run(args),
    }
}
