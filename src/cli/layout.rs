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
    /// with every error as FILE:LINE:COL and the offending line. A valid
    /// layout's capacities are explained: each limit in bytes and in the
    /// 1 KiB blocks the filesystem counts, and each project ID with where
    /// it comes from.
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
            for (rule, capacity) in parsed.layout.capacities() {
                eprintln!("  {}", explain_capacity(&rule.path, capacity));
            }
            for rule in parsed
                .layout
                .paths
                .iter()
                .filter(|r| !r.mount.options.is_empty())
            {
                let flags: Vec<&str> = rule.mount.options.iter().map(|f| f.as_str()).collect();
                let how = if rule.mount.tmpfs {
                    "its tmpfs mounted"
                } else {
                    "bound onto itself and remounted"
                };
                eprintln!("  {}: {how} {} at boot", rule.path, flags.join(","));
            }
            Ok(super::EXIT_OK)
        }
    }
}

/// One line per capacity: what the filesystem will hold the path to.
fn explain_capacity(path: &str, capacity: &layout::model::Capacity) -> String {
    use layout::model::human_bytes;
    let limit = match &capacity.limit {
        Some(limit) => format!(
            "at most {} = {} bytes ({}, {} blocks of 1 KiB)",
            limit.text,
            limit.bytes,
            human_bytes(limit.bytes),
            limit.kib()
        ),
        None => "bytes counted, not limited".to_owned(),
    };
    let inodes = match capacity.inodes {
        Some(inodes) => format!("at most {inodes} objects"),
        None => "objects counted, not limited".to_owned(),
    };
    let origin = if capacity.project_pinned {
        "set by `project:`"
    } else {
        "derived from the path"
    };
    format!(
        "{path}: capacity {limit}; {inodes}; project {} ({origin})",
        capacity.project
    )
}
