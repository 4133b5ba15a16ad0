//! `semanifest apply`: argument handling and reporting around
//! [`node::apply`].

use clap::Args as ClapArgs;
use fsroot::Root;
use node::{self, ApplyMode};

use super::{EXIT_FINDINGS, EXIT_OK};

/// The version of the JSON report (docs/apply-json.md).
const JSON_VERSION: u32 = 1;

const AFTER_HELP: &str = "\
A declared directory may be a mount point, and so may a directory on its
way, when the mount is a filesystem mounted at its own root (a disk, a
volume, a tmpfs), a directory bound onto itself, or the layout's own
mount (a tmpfs where it declares one); a bind mount of another directory
there is refused before anything changes (exit 2), since apply would
chown, chmod and label that directory instead.

Exit codes: 0 placed (or nothing to change), warnings included: what
could not be deleted from a trash a prune left (an immutable file, a
mount placed in it) is reported and tried again at the next run, but
never stops the boot; 1 some directories could not be placed (each is
reported), or --check found drift; 2 usage errors or bad input (layout,
an owner missing from ROOT/etc/passwd, a root that cannot be opened, a
mount that may not be acted through: nothing was changed).

Examples:
  semanifest apply                             place the default layout on /
  semanifest apply --layout node.yaml --root /sysroot
  semanifest apply --check --format json       drift, as JSON, exit 1 if any";

/// Make every declared directory exist with its mode, owner and label.
///
/// For every path of the layout and each of its ancestors below /, makes
/// sure a directory exists under DIR with the declared mode and owner and
/// the label the file contexts give it. A missing directory is born with
/// everything right: it is made under a temporary name, set up, and
/// renamed into place. Drift is repaired and each repair reported; a
/// second run changes nothing. Symlinks are never followed, nothing in
/// the way is ever deleted or replaced (an error names it), and nothing is
/// done through a bind mount of another directory. A trash left by an
/// interrupted `prune` is emptied; what cannot be deleted from it is a
/// warning.
#[derive(ClapArgs, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(flatten)]
    layout: super::args::LayoutArg,
    #[command(flatten)]
    root: super::args::RootArg,
    /// Change nothing; report drift and exit 1 if there is any.
    #[arg(long, conflicts_with = "dry_run")]
    check: bool,
    /// Change nothing; report what would change.
    #[arg(long, short = 'n')]
    dry_run: bool,
    #[command(flatten)]
    format: super::args::FormatArg,
    /// A layout path (or an ancestor of one) the image holds as a symlink
    /// out of the layout, such as Debian's /var/run → /run: kept and
    /// reported, never followed, not an error. The boot units pass it for
    /// every such path they found in the image (repeatable).
    #[arg(long, value_name = "PATH")]
    keep_symlink: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let parsed = super::load_layout(args.layout.path.as_deref())?;
    let contexts = super::contexts_of(&parsed)?;
    let mode = if args.check {
        ApplyMode::Check
    } else if args.dry_run {
        ApplyMode::DryRun
    } else {
        ApplyMode::Write
    };
    node::unknown_keep(&parsed.layout, &args.keep_symlink)?;
    let root = Root::open(&args.root.dir)?;
    let report = node::apply_keeping(&parsed.layout, &contexts, &root, mode, &args.keep_symlink)?;
    for kept in &report.kept {
        eprintln!(
            "semanifest: note: {}: a symlink to {}, kept as the image holds it (never followed)",
            kept.path, kept.target
        );
    }
    for error in &report.errors {
        eprintln!("semanifest: error: {error}");
    }
    for warning in &report.warnings {
        eprintln!("semanifest: warning: {warning}");
    }
    if args.format.is_json() {
        super::print_json(JSON_VERSION, &report)?;
    } else {
        let mut text = String::new();
        for change in &report.changes {
            text.push_str(&change.line(mode));
            text.push('\n');
        }
        super::print_stdout(text.as_bytes())?;
    }
    let outcome = if report.changes.is_empty() && report.errors.is_empty() {
        "nothing to change".to_owned()
    } else {
        format!(
            "{} created, {} repaired, {} unchanged, {} errors",
            report.created,
            report.repaired,
            report.unchanged,
            report.errors.len()
        )
    };
    let outcome = match report.warnings.len() {
        0 => outcome,
        n => format!("{outcome}, {n} warnings"),
    };
    eprintln!(
        "apply: {} directories: {outcome}{} in {:.2} s",
        report.directories,
        match report.skipped {
            0 => String::new(),
            skipped => format!(", {skipped} skipped below a failure"),
        },
        report.seconds
    );
    Ok(
        if !report.errors.is_empty() || (mode == ApplyMode::Check && report.drift()) {
            EXIT_FINDINGS
        } else {
            EXIT_OK
        },
    )
}
