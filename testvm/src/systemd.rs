//! The systemd stage: Debian 12's own systemd as PID 1, enforcing, from a
//! root built the golden-image way (assets::systemd_image). Two boots of
//! the same image, each on a throwaway overlay: as built, where every
//! scenario must pass, and a control where the layout's units do not do
//! their work (apply and the mount units masked on the kernel command
//! line, the relabel failing through a drop-in), where the scenarios that
//! claim that work must fail. The suite runs the stage after its own
//! boots; `testvm/run --systemd` runs it alone.

use std::fs;
use std::path::Path;

use anyhow::Result;

use crate::assets::{kernel, systemd_image};
use crate::cli::Args;
use crate::host::{self, say};
use crate::report::{Report, Row};
use crate::watchdog::Limits;
use crate::{project, qemu, Paths};

/// The stage's boots are numbered after the suite's three.
const BOOT: u32 = 4;
const CONTROL_BOOT: u32 = 5;

/// What the control boot must fail: each is something only the layout's
/// units do.
const CONTROL_MUST_FAIL: [&str; 4] = [
    "units/apply-made-the-tree",
    "units/tmpfs-mount-labelled",
    "units/relabel-before-runtime",
    // The runtime units require the relabel, which fails there. (A masked
    // requirement would not do: systemd's boot transaction starts them
    // anyway, though a later manual restart is refused.)
    "units/runtime-waits-for-the-layout",
];
const CONTROL_PREFIX: &str = "control/layout-units-off";
/// Failing, not masked, in the control.
const RELABEL_UNIT: &str = "semanifest-relabel.service";

/// `testvm/run --systemd`: the stage alone; `Ok(true)` when every
/// scenario passed.
pub fn run(args: &Args, paths: &Paths) -> Result<bool> {
    crate::fresh_dir(&paths.work)?;
    kernel::ensure(&paths.cache, args.rebuild)?;
    let semanifest = project::build(&paths.repo, &paths.work)?;
    let report = stage(args, paths, &semanifest, None)?;
    finish(&report, &paths.work)
}

/// Writes `results.json`, prints the table and the total time.
pub fn finish(report: &Report, work: &Path) -> Result<bool> {
    fs::write(
        work.join("results.json"),
        serde_json::to_string_pretty(&report.rows().collect::<Vec<&Row>>())?,
    )?;
    print!("{}", report.render());
    println!("total time: {} s", host::elapsed());
    Ok(report.failed() == 0)
}

/// Builds the image and its initramfs and boots both ways; the rows of
/// both boots. `accel`: the suite's choice, or `None` to choose here.
pub fn stage(
    args: &Args,
    paths: &Paths,
    semanifest: &Path,
    accel: Option<&'static str>,
) -> Result<Report> {
    let Paths {
        testvm,
        cache,
        work,
        ..
    } = paths;
    let (package, modules) = kernel::manifest_package_and_modules(cache)?;
    let kernel_image = kernel::image(cache);
    let image = systemd_image::build(cache, work, testvm, semanifest)?;
    let initramfs = systemd_image::initramfs(work, testvm, cache, &modules)?;
    let accel = accel.unwrap_or_else(|| qemu::choose(args.accel, &kernel_image, &initramfs));
    say(format!(
        "booting systemd, enforcing (accel={accel}, kernel {package}, {} vCPU)",
        args.cpus
    ));
    let masks: Vec<String> = image
        .layout_units
        .iter()
        .filter(|unit| *unit != RELABEL_UNIT)
        .map(|unit| format!("systemd.mask={unit}"))
        .collect();
    let boot = |number, disk: &Path, cmdline: &[String]| -> Result<Vec<Row>> {
        qemu::Boot {
            number,
            accel,
            cpus: args.cpus,
            kernel: &kernel_image,
            initramfs: &initramfs,
            disks: &[disk.to_owned()],
            work,
            limits: Limits {
                silence: args.silence_limit,
                progress: args.progress_limit,
                timeout: args.boot_timeout,
            },
            inject: None,
            enforcing: true,
            cmdline,
            snapshot: true,
        }
        .run()
    };
    let console = |number: u32| {
        fs::read_to_string(work.join(format!("console-{number}.log"))).unwrap_or_default()
    };
    let built = boot(BOOT, &image.disk, &[])?;
    let mut report = Report::scenarios(&built, &[console(BOOT)]);
    say(format!(
        "control: {RELABEL_UNIT} fails, {}",
        masks.join(" ")
    ));
    let masked = boot(CONTROL_BOOT, &image.control_disk, &masks)?;
    report.extend(Report::control(
        &masked,
        &console(CONTROL_BOOT),
        CONTROL_PREFIX,
        &CONTROL_MUST_FAIL,
    ));
    Ok(report)
}
