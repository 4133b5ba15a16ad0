//! `semanifest apply`: argument handling and reporting around
//! [`node::apply`].

use clap::Args as ClapArgs;
use fsroot::Root;
use node::{self, ApplyMode, CapacityMode};

use super::{EXIT_FINDINGS, EXIT_OK};

/// The version of the JSON report (docs/apply-json.md).
const JSON_VERSION: u32 = 1;

const AFTER_HELP: &str = "\
Capacities: a path with `capacity:` gets its project ID on the directory
(with the inherit flag, so new objects take it) and on every object below,
and the filesystem is told its limits. Its filesystem must enforce project
quotas (ext4 made with `-O quota,project`, or XFS, mounted `prjquota`);
otherwise apply changes nothing at all and exits 2, naming the mount and
the option it needs.

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
capacity on a filesystem without project quotas, a mount that may not be
acted through: nothing was changed).

Examples:
  semanifest apply                             place the default layout on /
  semanifest apply --layout node.yaml --root /sysroot
  semanifest apply --check --format json       drift, as JSON, exit 1 if any
  semanifest apply --capacity tag-only         project IDs without limits";

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
    /// What to do about `capacity:` paths: `enforce` sets project IDs,
    /// inherit flags and limits (the filesystem must enforce project
    /// quotas); `tag-only` sets project IDs and inherit flags without
    /// limits, for a filesystem whose quotas are turned on later (XFS
    /// counts the tags at its next `prjquota` mount); `skip` leaves them
    /// alone (an image root).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = Capacity::Enforce)]
    capacity: Capacity,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Capacity {
    Enforce,
    TagOnly,
    Skip,
}

impl From<Capacity> for CapacityMode {
    fn from(capacity: Capacity) -> Self {
        match capacity {
            Capacity::Enforce => CapacityMode::Enforce,
            Capacity::TagOnly => CapacityMode::TagOnly,
            Capacity::Skip => CapacityMode::Skip,
        }
    }
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
    let report = node::apply_with(
        &parsed.layout,
        &contexts,
        &root,
        mode,
        &args.keep_symlink,
        args.capacity.into(),
    )?;
    for kept in &report.kept {
        eprintln!(
            "semanifest: note: {}: a symlink to {}, kept as the image holds it (never followed)",
            kept.path, kept.target
        );
    }
    for capacity in &report.capacities {
        if capacity.untaggable > 0 {
            eprintln!(
                "semanifest: note: {}: {} symlinks, FIFOs, sockets or devices keep their project ID: \
                 this kernel tags an object only through an open file (file_setattr needs Linux 6.17), \
                 and those are never opened; objects created from now on inherit the project",
                capacity.path, capacity.untaggable
            );
        }
        if capacity.mounts > 0 {
            eprintln!(
                "semanifest: note: {}: {} mount points below were not entered (not tagged)",
                capacity.path, capacity.mounts
            );
        }
    }
    super::print_problems("error", &report.errors);
    super::print_problems("warning", &report.warnings);
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
    let capacities: u64 = report.capacities.iter().map(|c| c.objects).sum();
    let outcome = match report.warnings.len() {
        0 => outcome,
        n => format!("{outcome}, {n} warnings"),
    };
    eprintln!(
        "apply: {} directories: {outcome}{}{} in {:.2} s",
        report.directories,
        match report.skipped {
            0 => String::new(),
            skipped => format!(", {skipped} skipped below a failure"),
        },
        match report.capacities.len() {
            0 => String::new(),
            n => format!("; {n} capacities, {capacities} objects examined"),
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
