//! `semanifest man`: manual pages generated from the clap definitions
//! (`clap_mangen`), one per command: semanifest(1), semanifest-build(1),
//! semanifest-layout-validate(1), …

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::CommandFactory;

const AFTER_HELP: &str = "\
Examples:
  semanifest man relabel | man -l -              read one page now
  semanifest man layout validate | man -l -
  semanifest man --out share/man/man1            every page, as files
  semanifest man --install-root /sysroot         every page, into an image's
                                                 /usr/share/man/man1";

/// Print or write the manual pages (one per command).
///
/// Each page is generated from the same definitions as `--help`. Without
/// --out or --install-root, prints the page of COMMAND (default: the
/// top-level page) as roff on standard output.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The command whose page to print, e.g. `relabel` or `layout validate`.
    #[arg(value_name = "COMMAND", conflicts_with_all = ["out", "install_root"])]
    command: Vec<String>,
    /// Write every page into DIR as NAME.1.
    #[arg(long, value_name = "DIR", conflicts_with = "install_root")]
    out: Option<PathBuf>,
    /// Write every page into ROOT/usr/share/man/man1 (an image being built).
    #[arg(long, value_name = "ROOT")]
    install_root: Option<PathBuf>,
}

/// Every page: (file name, roff), the top-level page first.
pub fn pages() -> Result<Vec<(String, Vec<u8>)>> {
    fn walk(command: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
        let man = clap_mangen::Man::new(command.clone()).manual("semanifest manual");
        let mut roff = Vec::new();
        man.render(&mut roff)?;
        pages.push((man.get_filename(), roff));
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, pages)?;
        }
        Ok(())
    }
    let mut command = super::Cli::command().disable_help_subcommand(true);
    command.build();
    let mut pages = Vec::new();
    walk(&command, &mut pages)?;
    Ok(pages)
}

pub fn run(args: Args) -> Result<u8> {
    let pages = pages()?;
    let (root, below) = match (&args.out, &args.install_root) {
        (Some(out), _) => (out.clone(), ""),
        (None, Some(root)) => (root.clone(), "/usr/share/man/man1"),
        (None, None) => {
            let name = std::iter::once("semanifest")
                .chain(args.command.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("-");
            let file = format!("{name}.1");
            let Some((_, roff)) = pages.iter().find(|(page, _)| *page == file) else {
                let known: Vec<&str> = pages
                    .iter()
                    .map(|(page, _)| page.trim_end_matches(".1"))
                    .collect();
                bail!(
                    "no manual page for `{}`; pages: {}",
                    args.command.join(" "),
                    known.join(", ")
                );
            };
            super::print_stdout(roff)?;
            return Ok(super::EXIT_OK);
        }
    };
    let tree = super::output_root(&root)?;
    for (name, roff) in &pages {
        tree.write_file(format!("{below}/{name}").as_bytes(), roff, 0o644)?;
    }
    let dir = match below {
        "" => root,
        below => root.join(below.trim_start_matches('/')),
    };
    eprintln!(
        "semanifest: wrote {} manual pages to {}",
        pages.len(),
        dir.display()
    );
    Ok(super::EXIT_OK)
}
