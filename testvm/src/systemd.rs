//! `testvm/run --systemd`: one boot of Debian 12's own systemd as PID 1,
//! from a root built the golden-image way (assets::systemd_image), in
//! permissive mode; the test unit reports the boot units' scenarios with
//! the `@@` protocol, the table is the reported rows and the boot's own.

use std::fs;

use anyhow::Result;

use crate::assets::{kernel, systemd_image};
use crate::cli::Args;
use crate::host::{self, say};
use crate::report::{Report, Row};
use crate::watchdog::Limits;
use crate::{project, qemu, Paths};

/// The stage; `Ok(true)` when every scenario passed.
pub fn run(args: &Args, paths: &Paths) -> Result<bool> {
    let Paths {
        repo,
        testvm,
        cache,
        work,
    } = paths;
    crate::fresh_dir(work)?;
    kernel::ensure(cache, args.rebuild)?;
    let semanifest = project::build(repo, work)?;
    let (package, modules) = kernel::manifest_package_and_modules(cache)?;
    let image = kernel::image(cache);
    let root = systemd_image::build(cache, work, testvm, &semanifest)?;
    let initramfs = systemd_image::initramfs(work, testvm, cache, &modules)?;
    let accel = qemu::choose(args.accel, &image, &initramfs);
    say(format!(
        "booting systemd (accel={accel}, kernel {package}, {} vCPU)",
        args.cpus
    ));
    let disks = [root];
    let boot = qemu::Boot {
        number: 1,
        accel,
        cpus: args.cpus,
        kernel: &image,
        initramfs: &initramfs,
        disks: &disks,
        work,
        limits: Limits {
            silence: args.silence_limit,
            progress: args.progress_limit,
            timeout: args.boot_timeout,
        },
        inject: None,
    };
    let host_rows = boot.run()?;
    let console = fs::read_to_string(work.join("console-1.log")).unwrap_or_default();
    let report = Report::scenarios(&host_rows, &[console]);
    fs::write(
        work.join("results.json"),
        serde_json::to_string_pretty(&report.rows().collect::<Vec<&Row>>())?,
    )?;
    print!("{}", report.render());
    println!("total time: {} s", host::elapsed());
    Ok(report.failed() == 0)
}
