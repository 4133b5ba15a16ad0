//! `semanifest completions`: shell completion scripts generated from the
//! clap definitions (`clap_complete`), printed or installed into an image.

use std::path::PathBuf;

use anyhow::Result;
use clap::{CommandFactory, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    const ALL: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

    /// Where a distribution's packages put the script, below the root.
    fn install_path(self) -> &'static str {
        match self {
            Shell::Bash => "usr/share/bash-completion/completions/semanifest",
            Shell::Zsh => "usr/share/zsh/vendor-completions/_semanifest",
            Shell::Fish => "usr/share/fish/vendor_completions.d/semanifest.fish",
        }
    }

    fn generator(self) -> clap_complete::Shell {
        match self {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        }
    }
}

const AFTER_HELP: &str = "\
Examples:
  source <(semanifest completions bash)            try it in this shell
  semanifest completions zsh > ~/.zfunc/_semanifest
  semanifest completions --install-root /sysroot   all three, into an image:
      /usr/share/bash-completion/completions/semanifest
      /usr/share/zsh/vendor-completions/_semanifest
      /usr/share/fish/vendor_completions.d/semanifest.fish";

/// Print or install shell completions (bash, zsh, fish).
///
/// The scripts are generated from the same definitions as `--help`, so
/// they complete every subcommand, option and value this binary accepts.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The shell to print the script for; with --install-root, the shells
    /// to install (default: all three).
    #[arg(value_enum, required_unless_present = "install_root")]
    shell: Option<Shell>,
    /// Write the scripts into ROOT's standard completion directories (an
    /// image being built) instead of printing one.
    #[arg(long, value_name = "ROOT")]
    install_root: Option<PathBuf>,
}

/// The completion script for `shell`.
pub fn script(shell: Shell) -> Vec<u8> {
    let mut command = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell.generator(), &mut command, "semanifest", &mut out);
    out
}

pub fn run(args: Args) -> Result<u8> {
    match (&args.install_root, args.shell) {
        (None, Some(shell)) => super::print_stdout(&script(shell))?,
        (Some(root), shell) => {
            let shells = match shell {
                Some(shell) => vec![shell],
                None => Shell::ALL.to_vec(),
            };
            let tree = super::output_root(root)?;
            for shell in shells {
                let path = root.join(shell.install_path());
                let key = format!("/{}", shell.install_path());
                tree.write_file(key.as_bytes(), &script(shell), 0o644)?;
                eprintln!("semanifest: wrote {}", path.display());
            }
        }
        (None, None) => unreachable!("clap requires a shell without --install-root"),
    }
    Ok(super::EXIT_OK)
}
