//! The arguments several subcommands share, declared once so that they
//! read and behave alike everywhere (`#[command(flatten)]`).

use std::path::PathBuf;

use clap::ValueEnum;
use serde::Serialize;

/// `--layout FILE`.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct LayoutArg {
    /// The layout manifest (YAML). Without it, a command that needs a
    /// layout uses the embedded default (`semanifest layout show`).
    #[arg(long = "layout", id = "layout", value_name = "FILE")]
    pub path: Option<PathBuf>,
}

/// How a command prints its results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text for people.
    #[default]
    Human,
    /// One JSON report on standard output.
    Json,
}

/// `--format human|json`; `--json`, the older spelling, is a hidden alias.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct FormatArg {
    /// Output format: json prints one JSON report on standard output, whose
    /// fields the command's page in docs/ describes (docs/apply-json.md for
    /// apply).
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// The same as --format json.
    #[arg(long, hide = true, conflicts_with = "format")]
    json: bool,
}

impl FormatArg {
    pub fn is_json(self) -> bool {
        self.json || self.format == Format::Json
    }
}

/// `--root DIR`: where the node's root filesystem is, for every command
/// that works on a node's tree.
#[derive(Clone, Debug, clap::Args)]
pub struct RootArg {
    /// The node's root directory (an image being built, or / on the node):
    /// the layout's `/var/lib/etcd` is DIR/var/lib/etcd. DIR is opened
    /// once and nothing below it is reached through a symlink.
    #[arg(long = "root", id = "root", value_name = "DIR", default_value = "/")]
    pub dir: PathBuf,
}

/// A JSON report, the version of its format first: a consumer checks it
/// before reading on. It changes when a field is removed or changes
/// meaning; fields are only ever added within one version.
#[derive(Serialize)]
pub struct Versioned<'a, T: Serialize> {
    pub version: u32,
    #[serde(flatten)]
    pub report: &'a T,
}
