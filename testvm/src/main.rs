//! The VM suite's host side (`testvm/run`): checks the host commands,
//! fetches Debian's kernel into a verified cache, builds the project and
//! its policies, builds an initramfs and an ext4 /var image, boots three
//! times under a watchdog, then boots Debian's systemd twice (module
//! systemd), reads the guest's `@@` results from the serial console and
//! decides every verdict. The guest side is testvm/guest.
//!
//! Exit status: 0 only when every scenario passed; 1 when one failed, a
//! boot hung or never reported, or the harness could not run; 2 on usage
//! errors or a missing host command.

mod assets;
mod cli;
mod host;
mod project;
mod protocol;
mod qemu;
mod report;
mod systemd;
mod watchdog;
mod watchdog_test;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Parser as _;

use crate::assets::{disk, initramfs, kernel, refpolicy};
use crate::host::say;
use crate::report::Report;
use crate::watchdog::Limits;

/// Where everything lives: the repository, testvm/, its cache and the
/// run's scratch directory (`cache/run`, emptied at the start).
pub struct Paths {
    pub repo: PathBuf,
    pub testvm: PathBuf,
    pub cache: PathBuf,
    pub work: PathBuf,
}

impl Paths {
    fn new() -> Self {
        let testvm = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let repo = testvm.parent().unwrap_or(Path::new("/")).to_owned();
        let cache = testvm.join("cache");
        let work = cache.join("run");
        Paths {
            repo,
            testvm,
            cache,
            work,
        }
    }
}

fn main() -> ExitCode {
    host::start_clock();
    let args = cli::Args::parse();
    if args.list_packages {
        for package in host::packages() {
            println!("{package}");
        }
        return ExitCode::SUCCESS;
    }
    let missing = host::missing_commands();
    if !missing.is_empty() {
        for command in missing {
            eprintln!("testvm/run: missing host command: {command}");
        }
        eprintln!("testvm/run: install them with scripts/install-deps (it installs .ci/packages)");
        return ExitCode::from(2);
    }
    let paths = Paths::new();
    let result = if args.watchdog_test {
        watchdog_test::run(&paths)
    } else if let Some(rounds) = args.boot_bench {
        systemd::bench(&args, &paths, rounds)
    } else if args.systemd {
        systemd::run(&args, &paths)
    } else {
        suite(&args, &paths)
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("testvm/run: {error:#}");
            ExitCode::from(1)
        }
    }
}

/// Empties (or creates) the run's scratch directory.
pub(crate) fn fresh_dir(work: &Path) -> Result<()> {
    if work.exists() {
        fs::remove_dir_all(work).with_context(|| format!("cannot empty {}", work.display()))?;
    }
    fs::create_dir_all(work).with_context(|| format!("cannot create {}", work.display()))
}

/// The whole suite; `Ok(true)` when every scenario passed.
fn suite(args: &cli::Args, paths: &Paths) -> Result<bool> {
    let Paths {
        repo,
        testvm,
        cache,
        work,
    } = paths;
    fresh_dir(work)?;

    kernel::ensure(cache, args.rebuild)?;
    let semanifest = project::build(repo, work)?;
    let (policy, leaky_row) = project::policies(testvm, work, &semanifest)?;
    let mut host_rows = vec![leaky_row];
    let refpolicy = refpolicy::ensure(repo, cache, work, &semanifest)?;
    let (package, modules) = kernel::manifest_package_and_modules(cache)?;
    let image = kernel::image(cache);
    let initramfs = initramfs::build(
        work,
        &initramfs::Inputs {
            testvm,
            cache,
            semanifest: &semanifest,
            policy: &policy,
            refpolicy: &refpolicy,
            modules: &modules,
        },
    )?;
    disk::build(work)?;
    // After the initramfs: a KVM probe boots it.
    let accel = qemu::choose(args.accel, &image, &initramfs);
    say(format!(
        "booting (accel={accel}, kernel {package}, {} vCPU)",
        args.cpus
    ));
    let limits = Limits {
        silence: args.silence_limit,
        progress: args.progress_limit,
        timeout: args.boot_timeout,
    };
    let disks = [work.join("var.img"), work.join("node-var.img")];
    for number in 1..=3 {
        let boot = qemu::Boot {
            number,
            accel,
            cpus: args.cpus,
            kernel: &image,
            initramfs: &initramfs,
            disks: &disks,
            work,
            limits,
            // One boot only, so the others show the run still reports.
            inject: args.inject_hang.filter(|_| number == 1),
            enforcing: false,
            cmdline: &[],
            snapshot: false,
        };
        host_rows.extend(boot.run()?);
    }
    let consoles = (1..=3)
        .map(|n| fs::read_to_string(work.join(format!("console-{n}.log"))).unwrap_or_default())
        .collect::<Vec<_>>();
    let mut report = Report::judge(&host_rows, &consoles);
    report.extend(systemd::stage(args, paths, &semanifest, Some(accel))?);
    systemd::finish(&report, work)
}
