//! `semanifest lookup`: print the context libselinux 3.4 would give paths.

use std::ffi::OsString;
use std::io::{BufRead as _, BufWriter, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use clap::{Args as ClapArgs, ValueEnum};
use selabel::{FileContexts, FileKind};

/// Print the SELinux context of each PATH, as libselinux 3.4's
/// `selabel_lookup` would compute it, without libselinux.
///
/// One line per path, in input order: `PATH<TAB>CONTEXT`, PATH byte for byte
/// as given. `<<none>>` means no label (libselinux answers ENOENT: no spec
/// matches, or the winning spec says `<<none>>`).
///
/// FC is read with its siblings as libselinux does: FC.homedirs, FC.local,
/// FC.subs, FC.subs_dist, and FC.bin when it is at least as new as FC.
///
/// Examples:
///
///   $ semanifest lookup --file-contexts /etc/selinux/default/contexts/files/file_contexts \
///       --mode dir /var/log /proc/1
///   /var/log        system_u:object_r:var_log_t:s0
///   /proc/1 <<none>>
///
///   $ find /var -xdev | semanifest lookup --file-contexts out/file_contexts --from -
///
/// Exit status: 0 on success, also when standard output is closed early
/// (`| head`); 2 for a bad file_contexts (the message names FILE:LINE), a
/// path containing a newline, or an unreadable --from.
#[derive(ClapArgs, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// file_contexts to read (libselinux format).
    #[arg(
        long,
        value_name = "FC",
        required_unless_present = "layout",
        conflicts_with = "layout"
    )]
    file_contexts: Option<PathBuf>,

    #[command(flatten)]
    layout: super::args::LayoutArg,

    /// File type to look up for; without it, type-specific specs match too
    /// (`selabel_lookup` mode 0).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,

    /// Read newline-separated paths from FILE (`-` for standard input), after
    /// any PATH arguments.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,

    /// Paths to look up (any bytes but NUL and newline).
    #[arg(value_name = "PATH")]
    paths: Vec<OsString>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModeArg {
    Dir,
    File,
    Symlink,
    Chr,
    Blk,
    Fifo,
    Sock,
}

impl From<ModeArg> for FileKind {
    fn from(mode: ModeArg) -> Self {
        match mode {
            ModeArg::Dir => FileKind::Dir,
            ModeArg::File => FileKind::File,
            ModeArg::Symlink => FileKind::Symlink,
            ModeArg::Chr => FileKind::CharDev,
            ModeArg::Blk => FileKind::BlockDev,
            ModeArg::Fifo => FileKind::Fifo,
            ModeArg::Sock => FileKind::Socket,
        }
    }
}

fn bad_path(path: &[u8]) -> anyhow::Error {
    anyhow::anyhow!(
        "path {:?} contains a NUL or a newline (output lines would be ambiguous)",
        String::from_utf8_lossy(path)
    )
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    // Check every argument before printing anything.
    if let Some(path) = args
        .paths
        .iter()
        .map(|path| path.as_bytes())
        .find(|path| path.contains(&b'\n'))
    {
        return Err(bad_path(path));
    }
    let contexts = match (&args.file_contexts, &args.layout.path) {
        (Some(path), _) => FileContexts::load(path)?,
        (None, Some(layout)) => super::layout_file_contexts(layout)?,
        (None, None) => bail!("one of --file-contexts or --layout is required"),
    };
    let kind = args.mode.map_or(FileKind::Any, FileKind::from);

    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut print = |path: &[u8]| -> anyhow::Result<()> {
        let context = contexts.lookup(path, kind).unwrap_or("<<none>>");
        out.write_all(path)?;
        out.write_all(b"\t")?;
        out.write_all(context.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(())
    };
    for path in &args.paths {
        print(path.as_bytes())?;
    }
    if let Some(from) = &args.from {
        let mut reader: Box<dyn std::io::BufRead> = if from.as_os_str() == "-" {
            Box::new(std::io::stdin().lock())
        } else {
            let file = std::fs::File::open(from)
                .with_context(|| format!("cannot open {}", from.display()))?;
            Box::new(std::io::BufReader::new(file))
        };
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = reader
                .read_until(b'\n', &mut line)
                .with_context(|| format!("cannot read {}", from.display()))?;
            if read == 0 {
                break;
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            if line.contains(&0) {
                return Err(bad_path(&line));
            }
            print(&line)?;
        }
    }
    out.flush()?;
    Ok(super::EXIT_OK)
}
