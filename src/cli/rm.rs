//! `semanifest rm`: argument handling and reporting around
//! [`node::remove`].

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use fsroot::Root;
use node::{self, RemoveOptions, RemoveReport};

use super::{EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK};

/// The version of the JSON report (docs/rm-json.md).
const JSON_VERSION: u32 = 1;

const AFTER_HELP: &str = "\
Exit codes: 0 everything named was removed; 1 some objects could not be
removed (each is reported; a PATH that does not exist is one); 2 refused or
bad input: a PATH outside a removable root, the root itself, a relative
PATH, `..`, a symlink on the way, a mount point, a bind mount of another
directory on the removable root, a protected label, a directory without
-r (then nothing at all was removed), or objects inside a tree kept for
their label or a mount (the rest of the tree was removed).

Examples:
  semanifest rm -r /var/mnt/scratch            on the node, the default layout
  semanifest rm --root /sysroot /var/mnt/x/file
  semanifest rm -r --dry-run --bytes /var/mnt/cache   how much would go
  semanifest rm -r --dry-run --format json /var/mnt/a /var/mnt/b";

/// Remove files and trees strictly below a removable root of the layout.
///
/// Each PATH is a layout path (`/var/mnt/x`) taken below DIR; a PATH that
/// already starts with DIR has it stripped first, as `relabel --root`
/// does. A relative PATH is refused. The removable root may be a mount
/// point (a filesystem at its own root, or bound onto itself), never a
/// bind mount of another directory. Only objects strictly below a
/// `removable: true` root (`/var/mnt` in the default layout) are removed,
/// never the root itself. Every level
/// is resolved from the removable root with `openat2` and
/// RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS and
/// RESOLVE_NO_XDEV: a symlink on the way, a mount point, `..`, and an
/// object labelled with a protected type (a hard link to an etcd file) are
/// refused, also when another process swaps directories for symlinks
/// while the removal runs. A PATH that is a symlink is unlinked, never
/// followed. Every PATH is checked before anything is removed; if one is
/// refused, nothing is removed. Trees are deleted in parallel.
#[derive(ClapArgs, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(flatten)]
    layout: super::args::LayoutArg,
    #[command(flatten)]
    root: super::args::RootArg,
    /// Remove directories and everything below them.
    #[arg(long, short = 'r', visible_short_alias = 'R')]
    recursive: bool,
    /// Check and count everything; remove nothing.
    #[arg(long, short = 'n')]
    dry_run: bool,
    #[command(flatten)]
    format: super::args::FormatArg,
    /// Also add up the bytes freed. Costs one `statx` per object (about a
    /// tenth more time on a tmpfs), so it is off unless asked for.
    #[arg(long)]
    bytes: bool,
    /// Worker threads for trees [default: number of CPUs].
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<NonZeroUsize>,
    /// What to remove.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let parsed = super::load_layout(args.layout.path.as_deref())?;
    let root = Root::open(&args.root.dir)?;
    let operands: Vec<&Path> = args.paths.iter().map(PathBuf::as_path).collect();
    let options = RemoveOptions {
        recursive: args.recursive,
        dry_run: args.dry_run,
        jobs: args.jobs,
        count_bytes: args.bytes,
    };
    let report = node::remove(&parsed.layout, &root, &operands, options)?;
    super::print_problems("refused", &report.refused);
    super::print_problems("error", &report.errors);
    if args.format.is_json() {
        super::print_json(JSON_VERSION, &report)?;
    } else {
        let verb = if report.dry_run {
            "would remove"
        } else {
            "removed"
        };
        let mut text = String::new();
        for done in &report.operands {
            let how = if done.complete {
                verb
            } else {
                "partly removed"
            };
            text.push_str(&format!(
                "{how} {} ({}, {} objects{})\n",
                done.path,
                done.kind,
                done.objects,
                bytes_part(done.bytes, "")
            ));
        }
        super::print_stdout(text.as_bytes())?;
    }
    eprintln!("{}", summary(&report));
    Ok(if report.refusals() {
        EXIT_BAD_INPUT
    } else if report.failures() {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    })
}

fn summary(report: &RemoveReport) -> String {
    let (removed, freed) = if report.dry_run {
        ("would be removed", " would be freed")
    } else {
        ("removed", " freed")
    };
    let mut line = format!(
        "rm: {} objects {removed}{}",
        report.objects,
        bytes_part(report.bytes, freed)
    );
    if report.refused_total > 0 {
        line.push_str(&format!(", {} refused", report.refused_total));
        if report.objects == 0 && report.operands.is_empty() {
            line.push_str(" (nothing was removed)");
        }
    }
    if report.errors_total > 0 {
        line.push_str(&format!(", {} could not be removed", report.errors_total));
    }
    line.push_str(&format!(" in {:.2} s", report.seconds));
    line
}

/// `, B bytes` and what became of them, when bytes were counted (`--bytes`).
fn bytes_part(bytes: Option<u64>, what: &str) -> String {
    bytes.map_or_else(String::new, |bytes| format!(", {bytes} bytes{what}"))
}
