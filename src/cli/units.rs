//! `semanifest units`: the systemd units that boot a layout on a node,
//! written as a tree to copy onto an image; and the install step `build
//! --install-root` shares.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args as ClapArgs;
use fsroot::Root;
use layout::manifest::Parsed;
use units::{self, Image, UnitSet, UnitsOptions};

const AFTER_HELP: &str = "\
DIR receives, as paths of the image root:
  usr/lib/systemd/system/semanifest-apply.service     semanifest apply at boot
  usr/lib/systemd/system/semanifest-relabel.service   relabel --type-only --skip-unchanged /var
  usr/lib/systemd/system/<path>.mount                 one per mount: in the layout
  usr/lib/systemd/system/<runtime>.service.d/*.conf   the runtime requires both
  usr/lib/systemd/system/kubens.service               with spec.node.kubens
  usr/lib/semanifest/layout.yaml                      the layout apply places
  usr/lib/semanifest/kubensenter, kubens              kubens helpers
  usr/lib/systemd/system-preset/50-semanifest.preset  what to enable

Copy DIR onto the image and enable with `systemctl --root=IMAGE preset
UNIT...`; `semanifest build --install-root IMAGE` does all of it, policy
included, and enables with the same symlinks.

Examples:
  semanifest units --out units/
  semanifest units --layout node.yaml --image /sysroot --out units/";

/// Write the systemd units that boot a layout on a node.
///
/// The units place the layout (semanifest apply) and relabel /var before
/// the container runtime and kubelet start, which require both; mount
/// every `mount:` of the layout (a tmpfs with the path's label, or the
/// directory bound onto itself with its propagation); and with
/// `spec.node.kubens`, start the runtime units in one mount namespace of
/// their own.
#[derive(ClapArgs)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(flatten)]
    layout: super::args::LayoutArg,
    /// Directory to write the units into, as a tree of the image root
    /// (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The image the units are for (read only): a layout path it holds as
    /// a symlink gets no mount unit, and an equivalence in the policy's
    /// file_contexts.subs_dist instead. Without it, each mount unit skips
    /// itself at boot when its path is a symlink.
    // `--root`, its older name, stays a hidden alias: everywhere else
    // `--root` is the node's root directory, a tree the command changes.
    #[arg(long, alias = "root", value_name = "IMAGE")]
    image: Option<PathBuf>,
    /// The policy under /etc/selinux whose file_contexts the relabel unit
    /// reads.
    #[arg(long, value_name = "NAME", default_value = "semanifest")]
    policy_name: String,
}

pub fn run(args: Args) -> Result<u8> {
    let parsed = super::load_layout(args.layout.path.as_deref())?;
    let set = render(&parsed, args.image.as_deref(), &args.policy_name)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("{}: cannot create", args.out.display()))?;
    write(&set, &args.out, false)?;
    Ok(super::EXIT_OK)
}

/// The units of `parsed` for the image at `image` (unknown without one).
pub fn render(parsed: &Parsed, image: Option<&Path>, policy_name: &str) -> Result<UnitSet> {
    let image = match image {
        Some(root) => Image::inspect(&open_image_root(root)?, &parsed.layout)?,
        None => Image::unknown(),
    };
    let options = UnitsOptions {
        policy_name,
        layout_text: &parsed.source.text,
    };
    Ok(units::render(&parsed.layout, &image, &options)?)
}

/// Opens the image root of `build --install-root` and `units --root`; the
/// bare ENOENT of a mistyped or unmounted root would not say which path.
fn open_image_root(root: &Path) -> Result<Root> {
    Root::open(root).map_err(|error| match &error {
        fsroot::Error::Io { error: io, .. } if io.kind() == std::io::ErrorKind::NotFound => {
            anyhow::anyhow!(
                "{}: the image root does not exist; create it, or name the root directory \
                 of the image to install into (a mounted /sysroot)",
                root.display()
            )
        }
        _ => error.into(),
    })
}

/// Writes `set` beneath `out`, enabled with `enable`; prints what it wrote
/// and every notice.
/// Installs the units under `out`; the files and links written.
pub fn write(set: &UnitSet, out: &Path, enable: bool) -> Result<Vec<PathBuf>> {
    let written = units::install(set, out, enable)?;
    let paths: Vec<_> = written.files.into_iter().chain(written.links).collect();
    for path in &paths {
        eprintln!("wrote {}", path.display());
    }
    for notice in &set.notices {
        eprintln!("semanifest: note: {notice}");
    }
    Ok(paths)
}
