//! `semanifest prune`: argument handling and reporting around
//! [`node::prune`].

use std::num::NonZeroUsize;

use clap::Args as ClapArgs;
use fsroot::Root;
use layout::model::Lifecycle;
use node::{self, PruneOptions, Selection};

use super::{EXIT_FINDINGS, EXIT_OK};

/// The version of the JSON report (docs/prune-json.md).
const JSON_VERSION: u32 = 1;

const AFTER_HELP: &str = "\
Lifecycles (the layout's `lifecycle:`): persistent paths are never pruned
unless named as a PATH; cache paths (containerd state, overlays) are pruned
with --lifecycle cache, for example on upgrade or when corrupt; ephemeral
paths are empty at every boot (--lifecycle ephemeral).

Below a pruned path, a declared path with the same lifecycle that is not
protected is emptied too (and kept); any other declared path is kept whole.

A pruned path may be a mount point, and so may a directory on its way,
when the mount is a filesystem mounted at its own root (a disk, a volume,
a tmpfs), a directory bound onto itself, or the layout's own mount; a
bind mount of another directory there is refused before anything changes
(exit 2), since pruning through it would empty that directory. An entry
labelled with a protected type of the layout (other than the pruned
path's own) is never moved or deleted.

On a full filesystem (no room for the trash, or for an entry's name in
it), entries are deleted where they are, with the same checks; the report
says how many went so and why.

Exit codes: 0 everything selected was emptied (or, with --dry-run, could
be counted); objects that could not be deleted from the trash (an
immutable file, a mount placed in it) are warnings: they are no longer in
the path, and the next prune or apply tries again; 1 something is left in
a pruned path (each is reported: a mount point below, a symlink or file
where the layout's paths lead, a protected label, a foreign
.semanifest-trash, permissions, a read-only filesystem); 2 usage errors or
bad input (layout, a PATH that is not a declared path or is relative, a
root that cannot be opened, a mount that may not be pruned through:
nothing was changed).

Examples:
  semanifest prune --lifecycle cache           on upgrade: containerd state, overlays
  semanifest prune /var/lib/containerd         a corrupt containerd; etcd untouched
  semanifest prune --lifecycle ephemeral --root /sysroot --format json";

/// Empty declared directories by lifecycle or by name.
///
/// Empties the selected declared paths under DIR and keeps each directory
/// itself with its mode, owner and label. Never follows a symlink, never
/// crosses a mount (a mount below is an error that names it, and nothing
/// under it is touched), never enters another declared path with a
/// different lifecycle, nor a protected one that was not selected. Each
/// entry first moves into a hidden trash directory inside the pruned path
/// (`.semanifest-trash`, on the same filesystem) and is deleted only then,
/// so an interrupted prune loses nothing outside the trash; the next
/// `prune` or `apply` empties it.
#[derive(ClapArgs, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(flatten)]
    layout: super::args::LayoutArg,
    #[command(flatten)]
    root: super::args::RootArg,
    /// Empty every declared path with this lifecycle: `ephemeral` or
    /// `cache` (repeatable). Persistent paths are pruned only when named.
    #[arg(
        long,
        value_name = "LIFECYCLE",
        value_parser = parse_lifecycle,
        required_unless_present = "paths",
        conflicts_with = "paths"
    )]
    lifecycle: Vec<Lifecycle>,
    /// Declared paths to empty, as the layout writes them
    /// (`/var/lib/containerd`), whatever their lifecycle.
    #[arg(value_name = "PATH")]
    paths: Vec<String>,
    /// Change nothing; report what would be removed.
    #[arg(long, short = 'n')]
    dry_run: bool,
    #[command(flatten)]
    format: super::args::FormatArg,
    /// Deletion threads (default: the number of CPUs).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<NonZeroUsize>,
    /// A layout path (or an ancestor of one) the image holds as a symlink
    /// out of the layout, such as Debian's /var/run -> /run (repeatable):
    /// selected paths at or below it are left alone and reported, as
    /// `apply --keep-symlink` keeps them. Any other symlink is an error.
    #[arg(long, value_name = "PATH")]
    keep_symlink: Vec<String>,
}

/// Why a `--lifecycle` value is refused.
#[derive(Debug, thiserror::Error)]
enum LifecycleArgError {
    #[error("persistent paths are never pruned by lifecycle; name them as PATH operands")]
    Persistent,
    #[error("unknown lifecycle `{0}` (expected `cache` or `ephemeral`)")]
    Unknown(String),
}

fn parse_lifecycle(value: &str) -> Result<Lifecycle, LifecycleArgError> {
    match value {
        "cache" => Ok(Lifecycle::Cache),
        "ephemeral" => Ok(Lifecycle::Ephemeral),
        "persistent" => Err(LifecycleArgError::Persistent),
        other => Err(LifecycleArgError::Unknown(other.to_owned())),
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let parsed = super::load_layout(args.layout.path.as_deref())?;
    let selection = if args.paths.is_empty() {
        Selection::Lifecycles(args.lifecycle.clone())
    } else {
        Selection::Paths(args.paths.clone())
    };
    node::unknown_keep(&parsed.layout, &args.keep_symlink)?;
    let root = Root::open(&args.root.dir)?;
    let options = PruneOptions {
        dry_run: args.dry_run,
        jobs: args.jobs,
        keep_symlinks: args.keep_symlink.clone(),
    };
    let report = node::prune(&parsed.layout, &root, &selection, &options)?;
    super::print_problems("error", &report.errors);
    super::print_problems("warning", &report.warnings);
    if args.format.is_json() {
        super::print_json(JSON_VERSION, &report)?;
    } else {
        super::print_stdout(report.lines().as_bytes())?;
    }
    if let Selection::Lifecycles(lifecycles) = &selection {
        if report.targets.is_empty() {
            let names: Vec<&str> = lifecycles.iter().map(Lifecycle::as_str).collect();
            eprintln!(
                "semanifest: note: no declared path has lifecycle {}",
                names.join(" or ")
            );
        }
    }
    eprintln!("{}", report.summary());
    Ok(if report.errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_FINDINGS
    })
}
