//! `semanifest relabel`: argument handling and reporting around
//! [`relabel::relabel`].

use std::fmt::Display;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::Context as _;
use clap::Args as ClapArgs;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use relabel::{
    self, Digests, EscapedPath, HardLinkConflict, LabelScope, MountPolicy, ObjectError, Observer,
    RelabelOptions, Relabeling, Summary, WriteMode,
};
use selabel::ParsedContexts;
use serde::Serialize;

use super::{EXIT_FINDINGS, EXIT_OK};

/// Object errors and hard-link warnings printed before the rest are only
/// counted (all of them with --verbose).
const MESSAGE_LIMIT: u64 = 100;

/// Set each object's security.selinux to what the file contexts say.
///
/// Walks every PATH in parallel without following symlinks, opening a FIFO
/// or device, or entering another mount, and writes a label only where it
/// differs. Replaces the full context like `setfiles -F` unless --type-only
/// is given.
///
/// PATHs are paths on this machine, inside the node's root (--root):
/// with --root /sysroot, /sysroot/var/lib/etcd is labelled as the node
/// sees it, /var/lib/etcd, as `setfiles -r /sysroot` does. Every PATH
/// (and --exclude) is resolved from the root without following symlinks:
/// a PATH through a symlink is an error (exit 2), so nobody who controls a
/// directory in the image can redirect the labels outside it.
///
/// Exit status: 0 all objects labelled; 1 some objects could not be
/// labelled (each is reported), or --check found drift; 2 usage error or bad
/// input. A closed standard output (`| head`) does not stop the walk: every
/// object is still labelled, and the run then exits 0.
#[derive(ClapArgs, Debug)]
#[command(group = clap::ArgGroup::new("labels").args(["file_contexts", "layout"]).required(true))]
pub struct Args {
    /// A file_contexts file (with its .homedirs, .local, .subs and
    /// .subs_dist siblings, as libselinux loads them).
    #[arg(long, value_name = "FC")]
    file_contexts: Option<PathBuf>,

    #[command(flatten)]
    layout: super::args::LayoutArg,

    #[command(flatten)]
    root: super::args::RootArg,

    /// Report what would change; write nothing.
    #[arg(long, short = 'n')]
    dry_run: bool,

    /// Write nothing; list every object whose label differs and exit 1 if
    /// there is any.
    #[arg(long, conflicts_with = "dry_run")]
    check: bool,

    /// Replace only the type of an existing label, keeping its user, role
    /// and range (restorecon's default).
    #[arg(long)]
    type_only: bool,

    /// Leave PATH and everything below it alone (repeatable).
    #[arg(long, short = 'e', value_name = "PATH")]
    exclude: Vec<PathBuf>,

    /// Worker threads [default: number of CPUs].
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<NonZeroUsize>,

    /// Print one line per change: path, old label, new label.
    #[arg(long, short = 'v')]
    verbose: bool,

    /// Output format: json prints the summary as one line of JSON on
    /// stdout (change lines then go to stderr); its fields are in
    /// docs/relabel-json.md. `--json` is the same.
    #[command(flatten)]
    format: super::args::FormatArg,

    /// Descend into other mounts below PATH. By default every mount point
    /// (another filesystem, or a bind mount of the same one, found by its
    /// mount id) is skipped and counted.
    #[arg(long)]
    cross_mounts: bool,

    /// Skip the subtree of a directory whose stored digest
    /// (trusted.semanifest.digest) matches the file contexts that decide
    /// every label below it; the directory's own label is still checked.
    /// After a directory's whole subtree has been labelled without error,
    /// exclusion or skipped mount, store its digest (not with --dry-run).
    /// Each operand directory also gets a seal (trusted.semanifest.seal)
    /// over the parsed file contexts and its digest: when every operand's
    /// seal holds, nothing is compiled or walked.
    /// This trusts that labels below were set by the policy at creation and
    /// that nothing relabelled them since: drift detection (--check, and
    /// relabel without this flag) never reads digests.
    ///
    /// A full pass (every object examined, every digest rewritten) is forced
    /// by `semanifest.relabel=full` on the kernel command line, or by the
    /// file --force-full-file, which a pass without errors then removes.
    #[arg(long, conflicts_with_all = ["check", "forget_digests"])]
    skip_unchanged: bool,

    /// With --skip-unchanged: if this file exists, run a full pass and
    /// remove it once the pass had no error.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/etc/semanifest/force-full-relabel",
        requires = "skip_unchanged"
    )]
    force_full_file: PathBuf,

    /// With --skip-unchanged: the kernel command line to look for
    /// `semanifest.relabel=full` in.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/proc/cmdline",
        hide = true,
        requires = "skip_unchanged"
    )]
    kernel_cmdline: PathBuf,

    /// Remove the stored digest (and seal) of every directory walked (relabelling as
    /// usual), so that the next --skip-unchanged run examines everything.
    #[arg(long, conflicts_with_all = ["check", "dry_run"])]
    forget_digests: bool,

    /// Files or directories to relabel, recursively. A PATH that is itself
    /// a symlink labels the link.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

/// The kernel command-line option that forces a full pass.
const FULL_OPTION: &str = "semanifest.relabel=full";

/// Why a --skip-unchanged run must be a full pass, if it must.
fn forced_full(args: &Args) -> anyhow::Result<Option<String>> {
    if !args.skip_unchanged {
        return Ok(None);
    }
    let shown = |path: &Path| EscapedPath(path.as_os_str().as_encoded_bytes()).to_string();
    match std::fs::read(&args.kernel_cmdline) {
        Ok(cmdline) => {
            let words = cmdline.split(|byte| byte.is_ascii_whitespace());
            if words.into_iter().any(|word| word == FULL_OPTION.as_bytes()) {
                return Ok(Some(format!(
                    "{FULL_OPTION} in {}",
                    shown(&args.kernel_cmdline)
                )));
            }
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(error).with_context(|| format!("reading {}", shown(&args.kernel_cmdline)))
        }
    }
    match std::fs::symlink_metadata(&args.force_full_file) {
        Ok(_) => Ok(Some(format!("{} exists", shown(&args.force_full_file)))),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| shown(&args.force_full_file)),
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let args = &args;
    let contexts = load_contexts(args)?;
    let forced = forced_full(args)?;
    if let Some(reason) = &forced {
        eprintln!("semanifest: full pass ({reason}): no digest is trusted, all are rewritten");
    }
    let options = RelabelOptions {
        write: if args.dry_run || args.check {
            WriteMode::DryRun
        } else {
            WriteMode::Write
        },
        scope: if args.type_only {
            LabelScope::TypeOnly
        } else {
            LabelScope::Full
        },
        mounts: if args.cross_mounts {
            MountPolicy::CrossMounts
        } else {
            MountPolicy::SameFilesystem
        },
        alternate_root: (args.root.dir != Path::new("/"))
            .then(|| absolute(&args.root.dir))
            .transpose()?,
        excludes: args
            .exclude
            .iter()
            .map(|path| absolute(path))
            .collect::<anyhow::Result<_>>()?,
        jobs: args.jobs,
        digests: if forced.is_some() {
            Digests::Refresh
        } else if args.skip_unchanged {
            Digests::Skip
        } else if args.forget_digests {
            Digests::Forget
        } else {
            Digests::Ignore
        },
        specs_digest: args.skip_unchanged.then(|| contexts.digest()),
    };

    let reporter = Reporter::new(args);
    // Operands sealed by an earlier pass with these very file contexts:
    // nothing to compile or walk.
    let sealed = relabel::sealed(&args.paths, &options)?;
    let summary = match sealed {
        Some(summary) => summary,
        None => {
            let labels = contexts.compile()?;
            relabel::relabel(&labels, &args.paths, &options, &reporter)?
        }
    };
    reporter.finish(&summary, args)?;

    // The forced pass is done: the next one may skip again.
    if forced.is_some() && summary.errors == 0 && !args.dry_run {
        match std::fs::remove_file(&args.force_full_file) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => {
                let path = EscapedPath(args.force_full_file.as_os_str().as_encoded_bytes());
                return Err(error).with_context(|| format!("removing {path}"));
            }
        }
    }

    let drift = args.check && summary.relabelled > 0;
    Ok(if summary.errors > 0 || drift {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    })
}

fn load_contexts(args: &Args) -> anyhow::Result<ParsedContexts> {
    if let Some(layout) = &args.layout.path {
        return super::layout_parsed_contexts(layout);
    }
    let path = args
        .file_contexts
        .as_deref()
        .context("one of --file-contexts or --layout is required")?;
    Ok(ParsedContexts::load(path)?)
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path)
        .with_context(|| format!("{}", EscapedPath(path.as_os_str().as_encoded_bytes())))
}

/// Prints events as they arrive from the worker threads.
struct Reporter {
    /// Where change lines go: stdout, or stderr when stdout carries JSON.
    changes: Option<Mutex<Box<dyn Write + Send>>>,
    /// Standard output was closed under us (`| head`): change lines are no
    /// longer written, and the run ends quietly once the walk is done.
    stdout_closed: AtomicBool,
    changes_to_stdout: bool,
    check: bool,
    verbose: bool,
    messages: AtomicU64,
    bar: Option<ProgressBar>,
}

impl Reporter {
    fn new(args: &Args) -> Self {
        let changes: Option<Box<dyn Write + Send>> = if !(args.verbose || args.check) {
            None
        } else if args.format.is_json() {
            Some(Box::new(io::stderr()))
        } else {
            Some(Box::new(BufWriter::new(io::stdout())))
        };
        let changes_to_stdout = !args.format.is_json();
        let bar = io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {human_pos} objects ({per_sec}) {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        Self {
            changes: changes.map(Mutex::new),
            stdout_closed: AtomicBool::new(false),
            changes_to_stdout,
            check: args.check,
            verbose: args.verbose,
            messages: AtomicU64::new(0),
            bar,
        }
    }

    /// Remembers a closed standard output.
    fn note_write(&self, written: &io::Result<()>) {
        if let Err(error) = written {
            if self.changes_to_stdout && error.kind() == io::ErrorKind::BrokenPipe {
                self.stdout_closed.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Prints to stderr without tearing the progress bar.
    fn message(&self, line: impl Display) {
        let shown = self.messages.fetch_add(1, Ordering::Relaxed);
        if shown >= MESSAGE_LIMIT && !self.verbose {
            return;
        }
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self, summary: &Summary, args: &Args) -> anyhow::Result<()> {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if let Some(changes) = &self.changes {
            let mut out = changes.lock().unwrap_or_else(|poison| poison.into_inner());
            if !self.stdout_closed.load(Ordering::Relaxed) {
                let flushed = out.flush();
                self.note_write(&flushed);
                if !self.stdout_closed.load(Ordering::Relaxed) {
                    flushed.context("writing the change list")?;
                }
            }
        }
        let messages = self.messages.load(Ordering::Relaxed);
        if messages > MESSAGE_LIMIT && !self.verbose {
            eprintln!(
                "semanifest: {} more errors and warnings not shown (use --verbose)",
                messages - MESSAGE_LIMIT
            );
        }
        eprintln!("{}", HumanSummary { summary, args });
        if self.stdout_closed.load(Ordering::Relaxed) {
            // The exit path ends the run quietly on a broken pipe.
            return Err(io::Error::from(io::ErrorKind::BrokenPipe).into());
        }
        if args.format.is_json() {
            let mode = if args.check {
                JsonMode::Check
            } else if args.dry_run {
                JsonMode::DryRun
            } else {
                JsonMode::Write
            };
            let json = serde_json::to_string(&JsonSummary {
                version: JSON_VERSION,
                mode,
                summary,
            })?;
            writeln!(io::stdout(), "{json}").context("writing the JSON summary")?;
        }
        Ok(())
    }
}

impl Observer for Reporter {
    fn changed(&self, change: &Relabeling<'_>) {
        let Some(changes) = &self.changes else {
            return;
        };
        let found = change
            .found
            .map(|label| EscapedPath(label).to_string())
            .unwrap_or_else(|| "<no label>".to_owned());
        let path = change.path;
        let line = if self.check {
            format!("drift {path}: found {found}, expected {}", change.expected)
        } else if change.written {
            format!("relabelled {path} from {found} to {}", change.expected)
        } else {
            format!("would relabel {path} from {found} to {}", change.expected)
        };
        if self.stdout_closed.load(Ordering::Relaxed) {
            return;
        }
        let mut out = changes.lock().unwrap_or_else(|poison| poison.into_inner());
        // A closed stdout must not abort the walk; the summary still counts.
        let written = match &self.bar {
            Some(bar) => bar.suspend(|| writeln!(out, "{line}")),
            None => writeln!(out, "{line}"),
        };
        self.note_write(&written);
    }

    fn failed(&self, error: &ObjectError) {
        self.message(format_args!("semanifest: error: {error}"));
    }

    fn hard_link_conflict(&self, conflict: &HardLinkConflict<'_>) {
        self.message(format_args!(
            "semanifest: warning: {} is a hard link whose other link was labelled {} first; \
             keeping it (its own spec says {})",
            conflict.path, conflict.kept, conflict.wanted
        ));
    }

    fn progress(&self, examined: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(examined);
        }
    }
}

struct HumanSummary<'a> {
    summary: &'a Summary,
    args: &'a Args,
}

impl Display for HumanSummary<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.summary;
        let changed = if self.args.check {
            "drifted"
        } else if self.args.dry_run {
            "would relabel"
        } else {
            "relabelled"
        };
        write!(
            f,
            "examined {}, {changed} {}, unchanged {}, errors {}",
            s.examined, s.relabelled, s.unchanged, s.errors
        )?;
        let extras = [
            (s.no_label, "without a label"),
            (s.hard_link_conflicts, "hard-link conflicts"),
            (s.vanished, "vanished"),
            (s.mounts_skipped, "mount points skipped"),
            (s.excluded, "excluded"),
            (s.skipped, "unchanged subtrees skipped"),
            (s.sealed, "sealed operands (nothing compiled)"),
        ];
        for (count, what) in extras {
            if count != 0 {
                write!(f, ", {what} {count}")?;
            }
        }
        write!(f, " in {:.2} s", s.seconds)
    }
}

/// What the run did with the labels (docs/relabel-json.md).
#[derive(Clone, Copy, Serialize)]
#[serde(rename_all = "kebab-case")]
enum JsonMode {
    Write,
    DryRun,
    Check,
}

/// The version of the JSON summary (docs/relabel-json.md).
const JSON_VERSION: u32 = 1;

#[derive(Serialize)]
struct JsonSummary<'a> {
    version: u32,
    mode: JsonMode,
    #[serde(flatten)]
    summary: &'a Summary,
}
