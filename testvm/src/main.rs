//! The VM suite's host side (`testvm/run`): reads the scenarios
//! (testvm/scenarios, module scenario) and the boots they run in (module
//! boots), plans what to boot for those chosen (module plan), checks the
//! host commands, fetches Debian's kernel into a verified cache, builds the
//! project and its policies, builds the busybox stage's initramfs and ext4
//! /var images and boots them under a watchdog, then Debian's systemd
//! (module systemd), reads the guests' `@@` results from the serial
//! console and decides every verdict. The guest side is testvm/guest.
//!
//! Exit status: 0 only when every scenario passed; 1 when one failed, a
//! boot hung or never reported, or the harness could not run; 2 on usage
//! errors, a scenario file that cannot be read, or a missing host command.

mod assets;
mod boots;
mod cli;
mod host;
mod plan;
mod project;
mod protocol;
mod qemu;
mod report;
mod scenario;
mod systemd;
mod watchdog;
mod watchdog_test;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Parser as _;

use crate::assets::{disk, fedora, initramfs, kernel, refpolicy, store_module};
use crate::boots::Stage;
use crate::host::say;
use crate::plan::Plan;
use crate::report::{Report, Row};
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
    let paths = Paths::new();
    if args.watchdog_test {
        return exit(watchdog_test::run(&paths));
    }
    // The scenarios and the plan first: a mistake in a header, or a
    // pattern that matches nothing, is a usage error that boots nothing.
    let scenarios = match scenario::discover(&paths.testvm.join("scenarios")) {
        Ok(scenarios) => scenarios,
        Err(error) => {
            eprintln!("testvm/run: {error:#}");
            return ExitCode::from(2);
        }
    };
    let selection = plan::Selection {
        patterns: args.only.clone(),
        stage: (args.systemd || args.boot_bench.is_some()).then_some(boots::Stage::Systemd),
    };
    if args.list {
        print!("{}", plan::list(&scenarios, &selection));
        println!();
        print!("{}", plan::list_boots());
        return ExitCode::SUCCESS;
    }
    let mut plan = match plan::Plan::new(&scenarios, &selection) {
        Ok(plan) => plan,
        Err(error) => {
            eprintln!("testvm/run: {error:#}");
            return ExitCode::from(2);
        }
    };
    for boot in &boots::BOOTS {
        let Some(variable) = boot.requires else {
            continue;
        };
        if plan.runs(boot.number) && std::env::var_os(variable).is_none_or(|v| v.is_empty()) {
            let skipped = plan.skip_boot(boot.number);
            say(format!(
                "SKIPPED boot {} ({}) and its {skipped} scenario runs: {variable} is unset",
                boot.number, boot.name
            ));
        }
    }
    let missing = host::missing_commands();
    if !missing.is_empty() {
        for command in missing {
            eprintln!("testvm/run: missing host command: {command}");
        }
        eprintln!("testvm/run: install them with scripts/install-deps (it installs .ci/packages)");
        return ExitCode::from(2);
    }
    exit(match args.boot_bench {
        Some(rounds) => systemd::bench(&args, &paths, &plan, rounds),
        None => suite(&args, &paths, &plan),
    })
}

fn exit(result: Result<bool>) -> ExitCode {
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

/// The boots the plan needs, the host's scenarios it chose, and the
/// verdicts; `Ok(true)` when every scenario passed.
fn suite(args: &cli::Args, paths: &Paths, plan: &Plan<'_>) -> Result<bool> {
    let Paths { repo, work, .. } = paths;
    fresh_dir(work)?;
    say(format!(
        "{} scenario runs ({} reported), boots {}",
        plan.instances.len(),
        plan.instances.iter().filter(|i| i.selected).count(),
        if plan.boots.is_empty() {
            "none".to_owned()
        } else {
            plan.boots
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        }
    ));
    if !plan.boots.is_empty() {
        kernel::ensure(&paths.cache, args.rebuild)?;
    }
    let semanifest = project::build(repo, work)?;
    let mut host_rows = Vec::new();
    if plan.host_chosen(boots::LEAKY_CIL_REJECTED) {
        host_rows.push(project::leaky_rejected(&paths.testvm, work, &semanifest)?);
    }
    let mut consoles = Vec::new();
    let mut accel = None;
    if plan.runs_stage(Stage::Busybox) {
        let chosen = busybox_stage(args, paths, plan, &semanifest)?;
        host_rows.extend(chosen.rows);
        consoles.extend(chosen.consoles);
        accel = Some(chosen.accel);
    }
    if plan.runs_stage(Stage::Systemd) {
        let stage = systemd::stage(args, paths, plan, &semanifest, accel)?;
        host_rows.extend(stage.rows);
        consoles.extend(stage.consoles);
    }
    let report = Report::judge(plan, &host_rows, &consoles);
    systemd::finish(&report, work)
}

/// What the boots of a stage leave for the verdicts.
pub struct Booted {
    /// The host's rows about the boots themselves (`boot-N/no-hang`, …).
    pub rows: Vec<Row>,
    /// `(boot, console)` of every boot, in order.
    pub consoles: Vec<(u32, String)>,
    pub accel: &'static str,
}

/// The busybox stage: the policies, the distributions' stores (when boot
/// 3 or 7 runs), the initramfs with the plan, the disks, and its boots in order
/// on the same disks.
fn busybox_stage(
    args: &cli::Args,
    paths: &Paths,
    plan: &Plan<'_>,
    semanifest: &Path,
) -> Result<Booted> {
    let Paths {
        repo,
        testvm,
        cache,
        work,
    } = paths;
    let policy = project::policies(testvm, work, semanifest)?;
    let mut prediction_rows = Vec::new();
    let refpolicy = if plan.runs(3) {
        let dir = refpolicy::ensure(repo, cache, work, semanifest)?;
        if plan.host_chosen(boots::REFPOLICY_PREDICTION) {
            prediction_rows.push(store_module::prediction_row(
                boots::REFPOLICY_PREDICTION,
                &dir.join("module"),
            ));
        }
        Some(dir)
    } else {
        None
    };
    // main skipped boot 7 when the variable is unset.
    let fedora = match std::env::var_os(boots::FEDORA_STORE_ENV) {
        Some(source) if plan.runs(7) => {
            let dir = fedora::ensure(Path::new(&source), cache, work, semanifest)?;
            if plan.host_chosen(boots::FEDORA_PREDICTION) {
                prediction_rows.push(store_module::prediction_row(
                    boots::FEDORA_PREDICTION,
                    &dir.join("module"),
                ));
            }
            Some(dir)
        }
        _ => None,
    };
    let (package, modules) = kernel::manifest_package_and_modules(cache)?;
    let image = kernel::image(cache);
    let initramfs = initramfs::build(
        work,
        &initramfs::Inputs {
            testvm,
            cache,
            semanifest,
            policy: &policy,
            refpolicy: refpolicy.as_deref(),
            fedora: fedora.as_deref(),
            modules: &modules,
            plan: &plan.guest_text(Stage::Busybox),
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
    let disks: Vec<PathBuf> = ["var.img", "node-var.img"]
        .into_iter()
        .chain(disk::CAPACITY_DISKS)
        .map(|name| work.join(name))
        .collect();
    let mut booted = Booted {
        rows: prediction_rows,
        consoles: Vec::new(),
        accel,
    };
    let first = plan.boots.first().copied();
    for number in plan.boots.iter().copied() {
        if boots::boot(number).stage != Stage::Busybox {
            continue;
        }
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
            inject: args.inject_hang.filter(|_| Some(number) == first),
            enforcing: false,
            cmdline: &[],
            snapshot: false,
        };
        booted.rows.extend(boot.run()?);
        let console =
            fs::read_to_string(work.join(format!("console-{number}.log"))).unwrap_or_default();
        booted.consoles.push((number, console));
    }
    Ok(booted)
}
