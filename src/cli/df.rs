//! `semanifest df`: each capacity path's use against its limits, from
//! [`node::quota::usage`].

use clap::Args as ClapArgs;
use fsroot::Root;
use layout::model::human_bytes;
use node::quota::{self, Usage};
use serde::Serialize;

use super::{EXIT_FINDINGS, EXIT_OK};

const AFTER_HELP: &str = "\
Each path of the layout with `capacity:` is a filesystem project; the
filesystem counts the bytes and objects below it, as `df` counts a whole
filesystem. USE% is against the limit; AVAIL is what the filesystem itself
has left, which a limit does not reserve. A limit marked `*` is not yet
the layout's: `semanifest apply` sets it. Reading a project's quota
takes CAP_SYS_ADMIN (the kernel's rule), so df runs as root.

Exit codes: 0 every path read; 1 some could not be (each is reported); 2
usage errors or bad input.

Examples:
  semanifest df                               the embedded layout's capacities on /
  semanifest df --layout node.yaml --root /sysroot
  semanifest df --format json | jq '.paths[] | select(.used_bytes > 0)'";

/// Show each capacity path's use against its limits, like df.
///
/// Reads the filesystem's project quota of every `capacity:` path of the
/// layout: the bytes and objects used, the hard limits, and the
/// filesystem's own size and free space. Writes nothing.
#[derive(ClapArgs, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(flatten)]
    layout: super::args::LayoutArg,
    #[command(flatten)]
    root: super::args::RootArg,
    #[command(flatten)]
    format: super::args::FormatArg,
}

/// The version of the JSON report (docs/df-json.md).
const JSON_VERSION: u32 = 1;

/// `--format json`.
#[derive(Serialize)]
struct DfJson<'a> {
    /// The layout's name.
    layout: &'a str,
    paths: Vec<Usage>,
    errors: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let parsed = super::load_layout(args.layout.path.as_deref())?;
    let root = Root::open(&args.root.dir)?;
    let mut paths = Vec::new();
    let mut errors = Vec::new();
    for result in quota::usage(&root, &parsed.layout) {
        match result {
            Ok(usage) => paths.push(usage),
            Err(error) => errors.push(error.to_string()),
        }
    }
    if args.format.is_json() {
        let json = DfJson {
            layout: &parsed.layout.name,
            paths,
            errors: errors.clone(),
        };
        super::print_json(JSON_VERSION, &json)?;
    } else {
        if parsed.layout.capacities().next().is_none() {
            eprintln!(
                "semanifest: note: the layout `{}` has no `capacity:` paths",
                parsed.layout.name
            );
        }
        if !paths.is_empty() {
            super::print_stdout(table(&paths).as_bytes())?;
        }
    }
    super::print_problems("error", &errors);
    Ok(if errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_FINDINGS
    })
}

fn percent(used: u64, limit: Option<u64>) -> String {
    match limit {
        Some(limit) if limit > 0 => format!("{}%", (used as f64 * 100.0 / limit as f64).ceil()),
        _ => "-".to_owned(),
    }
}

fn table(paths: &[Usage]) -> String {
    let header = [
        "PATH",
        "PROJECT",
        "USED",
        "LIMIT",
        "USE%",
        "IUSED",
        "ILIMIT",
        "IUSE%",
        "AVAIL",
        "MOUNTED ON",
    ];
    let mut rows: Vec<[String; 10]> = vec![header.map(str::to_owned)];
    let mut pending = false;
    for usage in paths {
        let mut differs = |live: Option<u64>, wanted: Option<u64>| {
            if live != wanted {
                pending = true;
                "*"
            } else {
                ""
            }
        };
        let limit_mark = differs(usage.limit_bytes, usage.layout_limits.bytes);
        let inode_mark = differs(usage.limit_inodes, usage.layout_limits.inodes);
        rows.push([
            usage.path.clone(),
            usage.project.to_string(),
            human_bytes(usage.used_bytes),
            format!(
                "{}{limit_mark}",
                usage.limit_bytes.map_or("-".to_owned(), human_bytes)
            ),
            percent(usage.used_bytes, usage.limit_bytes),
            usage.used_inodes.to_string(),
            format!(
                "{}{inode_mark}",
                usage.limit_inodes.map_or("-".to_owned(), |n| n.to_string())
            ),
            percent(usage.used_inodes, usage.limit_inodes),
            human_bytes(usage.available_bytes),
            usage.mount.clone(),
        ]);
    }
    let widths: Vec<usize> = (0..10)
        .map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in &rows {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            // Names to the left, numbers to the right, as df does.
            if column == 0 || column == 9 {
                line.push_str(&format!("{cell:<width$}  ", width = widths[column]));
            } else {
                line.push_str(&format!("{cell:>width$}  ", width = widths[column]));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    if pending {
        text.push_str("* not yet the layout's limit: `semanifest apply` sets it\n");
    }
    text
}
