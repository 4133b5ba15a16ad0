//! `semanifest layout`: show, validate and describe layout manifests.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum LayoutCommand {
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
    /// Print the JSON Schema (draft 2020-12) of layout manifests.
    ///
    /// Generated from the types the parser reads, with descriptions and
    /// enums, for editors: save it next to your manifests and start each
    /// manifest with a yaml-language-server modeline,
    ///
    ///   semanifest layout schema > layout.schema.json
    ///
    ///   # yaml-language-server: $schema=./layout.schema.json
    ///
    /// The schema checks each value's shape and syntax; rules across
    /// entries (unknown domain keys, protected paths granted to workloads,
    /// duplicate paths) are checked by `semanifest layout validate` only.
    Schema,
}

pub fn run(command: LayoutCommand) -> Result<u8> {
    match command {
        LayoutCommand::Show => {
            super::print_stdout(layout::manifest::DEFAULT_LAYOUT.as_bytes())?;
            Ok(super::EXIT_OK)
        }
        LayoutCommand::Schema => {
            let schema = layout::manifest::layout_schema();
            super::print_stdout(
                format!("{}\n", serde_json::to_string_pretty(&schema)?).as_bytes(),
            )?;
            Ok(super::EXIT_OK)
        }
        LayoutCommand::Validate { layout } => {
            let parsed = super::load_layout(Some(&layout))?;
            eprintln!(
                "{}: valid layout `{}` ({} paths, {} domains)",
                parsed.source.name,
                parsed.layout.name,
                parsed.layout.paths.len(),
                parsed.layout.domains.len()
            );
            Ok(super::EXIT_OK)
        }
    }
}
