//! `semanifest layout`: show and validate layout manifests.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum Command {
    /// Print the embedded default layout (a complete, commented example).
    Show,
    /// Validate a layout manifest and print its diagnostics.
    ///
    /// Exit 0 when the layout is valid (warnings are printed), 2 otherwise,
    /// with every error as FILE:LINE:COL and the offending line.
    Validate {
        /// The manifest to validate.
        layout: PathBuf,
    },
}

pub fn run(command: Command) -> Result<u8> {
    match command {
        Command::Show => {
            print!("{}", semanifest::manifest::DEFAULT_LAYOUT);
            Ok(super::EXIT_OK)
        }
        Command::Validate { layout } => match super::load_layout(Some(&layout)) {
            Ok(parsed) => {
                eprintln!(
                    "{}: valid layout `{}` ({} paths, {} domains)",
                    parsed.source.name,
                    parsed.layout.name,
                    parsed.layout.paths.len(),
                    parsed.layout.domains.len()
                );
                Ok(super::EXIT_OK)
            }
            Err(code) => Ok(code),
        },
    }
}
