//! The systemd stage: Debian 12's own systemd as PID 1, enforcing, from a
//! root built the golden-image way (assets::systemd_image). Its boots
//! (boots::BOOTS) boot the same image, each on a throwaway overlay: as
//! built, and for the control `layout-units-off` an image where the
//! layout's units do not do their work (apply and the mount units masked
//! on the kernel command line, the relabel failing through a drop-in),
//! where the scenarios that take part in it must fail. The suite runs the
//! stage after the busybox one; `testvm/run --systemd` runs it alone.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::assets::{kernel, systemd_image};
use crate::boots::{self, Stage};
use crate::cli::Args;
use crate::host::{self, say};
use crate::plan::Plan;
use crate::report::{Report, Row};
use crate::watchdog::Limits;
use crate::{qemu, Booted, Paths};

/// The control whose boot gets the control image and the masks.
const LAYOUT_UNITS_OFF: &str = "layout-units-off";
/// Failing, not masked, in the control.
const RELABEL_UNIT: &str = "semanifest-relabel.service";

fn control_boot() -> u32 {
    boots::control(LAYOUT_UNITS_OFF).map_or(0, |control| control.boot)
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

/// Builds the image (and the control's, when its boot runs) and boots
/// the stage's boots of the plan. `accel`: the busybox stage's choice, or
/// `None` to choose here.
pub fn stage(
    args: &Args,
    paths: &Paths,
    plan: &Plan<'_>,
    semanifest: &Path,
    accel: Option<&'static str>,
) -> Result<Booted> {
    let control = plan.runs(control_boot());
    let (image, guest) = prepare(args, paths, plan, semanifest, accel, control)?;
    let work = &paths.work;
    let mut booted = Booted {
        rows: Vec::new(),
        consoles: Vec::new(),
        accel: guest.accel,
    };
    for number in plan.boots.iter().copied() {
        if boots::boot(number).stage != Stage::Systemd {
            continue;
        }
        let rows = match &image.control_disk {
            Some(control_disk) if number == control_boot() => {
                let masks: Vec<String> = image
                    .layout_units
                    .iter()
                    .filter(|unit| *unit != RELABEL_UNIT)
                    .map(|unit| format!("systemd.mask={unit}"))
                    .collect();
                say(format!(
                    "control: {RELABEL_UNIT} fails, {}",
                    masks.join(" ")
                ));
                guest.boot(number, control_disk, &masks, true)?
            }
            _ => guest.boot(number, &image.disk, &[], true)?,
        };
        booted.rows.extend(rows);
        booted.consoles.push((number, console(work, number)));
    }
    Ok(booted)
}

/// The image, its initramfs and the accelerator (`accel`, or chosen
/// here); the control image too when `control`.
fn prepare<'a>(
    args: &'a Args,
    paths: &'a Paths,
    plan: &Plan<'_>,
    semanifest: &Path,
    accel: Option<&'static str>,
    control: bool,
) -> Result<(systemd_image::Image, Guest<'a>)> {
    let Paths {
        testvm,
        cache,
        work,
        ..
    } = paths;
    let (package, modules) = kernel::manifest_package_and_modules(cache)?;
    let kernel_image = kernel::image(cache);
    let image = systemd_image::build(
        cache,
        work,
        testvm,
        semanifest,
        &plan.guest_text(Stage::Systemd),
        control,
    )?;
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

/// `testvm/run --boot-bench N`: N rounds of a cold and a warm boot of the
/// image as built (the first systemd boot of `plan`, console-N.log);
/// `Ok(true)` when every boot's scenarios passed.
pub fn bench(args: &Args, paths: &Paths, plan: &Plan<'_>, rounds: u64) -> Result<bool> {
    let number = plan
        .boots
        .iter()
        .copied()
        .find(|&n| boots::boot(n).stage == Stage::Systemd && n != control_boot())
        .context("no boot of the systemd stage to time")?;
    crate::fresh_dir(&paths.work)?;
    kernel::ensure(&paths.cache, args.rebuild)?;
    let semanifest = crate::project::build(&paths.repo, &paths.work)?;
    let (image, guest) = prepare(args, paths, plan, &semanifest, None, false)?;
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
        // Cold, then warm: the same boot twice, on the same disk.
        for which in [0, 1] {
            let started = Instant::now();
            let rows = guest.boot(number, &disk, &[], false)?;
            let wall = started.elapsed().as_secs_f64();
            let console = console(work, number);
            let reached = test_target_reached(&console);
            let report = Report::judge(plan, &rows, &[(number, console)]);
            for row in report.rows().filter(|row| !row.passed) {
                all_passed = false;
                failures.push(format!(
                    "round {round} {}: FAIL {}: {}",
                    ["cold", "warm"][which],
                    row.name,
                    row.observed
                ));
            }
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
