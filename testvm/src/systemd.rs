//! The systemd stage: Debian 12's own systemd as PID 1, enforcing, from a
//! root built the golden-image way (assets::systemd_image). Two boots of
//! the same image, each on a throwaway overlay: as built, where every
//! scenario must pass, and a control where the layout's units do not do
//! their work (apply and the mount units masked on the kernel command
//! line, the relabel failing through a drop-in), where the scenarios that
//! claim that work must fail. The suite runs the stage after its own
//! boots; `testvm/run --systemd` runs it alone.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

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
    let semanifest = alone(args, paths)?;
    let report = stage(args, paths, &semanifest, None)?;
    finish(&report, &paths.work)
}

/// What the suite did before the stage, when it runs alone: an empty
/// scratch directory, the kernel cache, the binary.
fn alone(args: &Args, paths: &Paths) -> Result<PathBuf> {
    crate::fresh_dir(&paths.work)?;
    kernel::ensure(&paths.cache, args.rebuild)?;
    project::build(&paths.repo, &paths.work)
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
    let (image, guest) = prepare(args, paths, semanifest, accel)?;
    let work = &paths.work;
    let masks: Vec<String> = image
        .layout_units
        .iter()
        .filter(|unit| *unit != RELABEL_UNIT)
        .map(|unit| format!("systemd.mask={unit}"))
        .collect();
    let boot = |number, disk: &Path, cmdline: &[String]| guest.boot(number, disk, cmdline, true);
    let built = boot(BOOT, &image.disk, &[])?;
    let mut report = Report::scenarios(&built, &[console(work, BOOT)]);
    say(format!(
        "control: {RELABEL_UNIT} fails, {}",
        masks.join(" ")
    ));
    let masked = boot(CONTROL_BOOT, &image.control_disk, &masks)?;
    report.extend(Report::control(
        &masked,
        &console(work, CONTROL_BOOT),
        CONTROL_PREFIX,
        &CONTROL_MUST_FAIL,
    ));
    Ok(report)
}

/// The image, its initramfs and the accelerator (`accel`, or chosen
/// here).
fn prepare<'a>(
    args: &'a Args,
    paths: &'a Paths,
    semanifest: &Path,
    accel: Option<&'static str>,
) -> Result<(systemd_image::Image, Guest<'a>)> {
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
    let guest = Guest {
        args,
        accel,
        kernel: kernel_image,
        initramfs,
        work,
    };
    Ok((image, guest))
}

/// What every boot of the stage shares.
struct Guest<'a> {
    args: &'a Args,
    accel: &'static str,
    kernel: PathBuf,
    initramfs: PathBuf,
    work: &'a Path,
}

impl Guest<'_> {
    /// One enforcing boot of `disk`; `snapshot`: on a throwaway overlay.
    fn boot(
        &self,
        number: u32,
        disk: &Path,
        cmdline: &[String],
        snapshot: bool,
    ) -> Result<Vec<Row>> {
        let args = self.args;
        qemu::Boot {
            number,
            accel: self.accel,
            cpus: args.cpus,
            kernel: &self.kernel,
            initramfs: &self.initramfs,
            disks: &[disk.to_owned()],
            work: self.work,
            limits: Limits {
                silence: args.silence_limit,
                progress: args.progress_limit,
                timeout: args.boot_timeout,
            },
            inject: None,
            enforcing: true,
            cmdline,
            snapshot,
        }
        .run()
    }
}

fn console(work: &Path, number: u32) -> String {
    fs::read_to_string(work.join(format!("console-{number}.log"))).unwrap_or_default()
}

/// Seconds since the guest's kernel started when the test unit began: the
/// `@@STAGE|S s: test.target reached` line.
fn test_target_reached(console: &str) -> Option<f64> {
    console.lines().find_map(|line| {
        let text = line.strip_prefix("@@STAGE|")?;
        let (seconds, rest) = text.split_once(" s: ")?;
        rest.starts_with("test.target reached")
            .then(|| seconds.parse().ok())
            .flatten()
    })
}

/// `testvm/run --boot-bench N`; `Ok(true)` when every boot's scenarios
/// passed.
pub fn bench(args: &Args, paths: &Paths, rounds: u64) -> Result<bool> {
    let semanifest = alone(args, paths)?;
    let (image, guest) = prepare(args, paths, &semanifest, None)?;
    let work = &paths.work;
    let disk = work.join("bench.img");
    let mut all_passed = true;
    let mut failures = Vec::new();
    let mut table = vec![(
        String::from("round"),
        [String::from("cold"), String::from("warm")],
    )];
    let mut samples: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
    for round in 1..=rounds {
        host::output(
            Command::new("cp")
                .arg("--sparse=always")
                .arg(&image.disk)
                .arg(&disk),
            "cp (a fresh copy of root.img)",
        )?;
        if let Err(error) = fs::write("/proc/sys/vm/drop_caches", "3\n") {
            say(format!(
                "the page cache was not dropped ({error}): the cold boot is not cold"
            ));
        }
        let mut cells = [String::new(), String::new()];
        // Cold, then warm; numbered as the stage's boots (console-4.log, console-5.log).
        for (which, number) in [(0, BOOT), (1, BOOT + 1)] {
            let started = Instant::now();
            let rows = guest.boot(number, &disk, &[], false)?;
            let wall = started.elapsed().as_secs_f64();
            let console = console(work, number);
            let report = Report::scenarios(&rows, std::slice::from_ref(&console));
            for row in report.rows().filter(|row| !row.passed) {
                all_passed = false;
                failures.push(format!(
                    "round {round} {}: FAIL {}: {}",
                    ["cold", "warm"][which],
                    row.name,
                    row.observed
                ));
            }
            let reached = test_target_reached(&console);
            cells[which] = format!(
                "{} s to test.target, {wall:.1} s wall",
                reached.map_or("?".into(), |s| format!("{s:.2}")),
            );
            if let Some(reached) = reached {
                samples[which].push((reached, wall));
            }
        }
        table.push((round.to_string(), cells));
    }
    println!();
    for (round, [cold, warm]) in &table {
        println!("{round:<7}{cold:<42}{warm}");
    }
    for failure in &failures {
        println!("{failure}");
    }
    let median = |values: &mut Vec<f64>| -> String {
        values.sort_by(f64::total_cmp);
        values
            .get(values.len() / 2)
            .map_or("?".into(), |v| format!("{v:.2}"))
    };
    for (name, sample) in ["cold", "warm"].iter().zip(&samples) {
        let (mut reached, mut wall): (Vec<f64>, Vec<f64>) = sample.iter().copied().unzip();
        println!(
            "{name}: median {} s to test.target, {} s wall ({} boots, {} vCPU, accel={})",
            median(&mut reached),
            median(&mut wall),
            sample.len(),
            args.cpus,
            guest.accel
        );
    }
    println!("total time: {} s", host::elapsed());
    Ok(all_passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_to_test_target_is_the_stage_line_of_the_test_unit() {
        let console = "@@STAGE|1.97 s: initramfs\n[ 2.6] systemd[1]: x\n@@STAGE|8.71 s: test.target reached (enforce=1, ...)\n@@STAGE|9.5 s: test.target reached again\n";
        assert_eq!(test_target_reached(console), Some(8.71));
        assert_eq!(test_target_reached("@@STAGE|1.0 s: initramfs\n"), None);
        assert_eq!(
            test_target_reached("@@STAGE|x s: test.target reached\n"),
            None
        );
    }
}
