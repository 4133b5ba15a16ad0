//! QEMU: which accelerator, and one boot of the guest under the watchdog.

use std::fs::{self, File};
use std::io::{BufRead as _, BufReader, Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use crate::cli::{Accel, Hang};
use crate::host::say;
use crate::protocol::{self, Message};
use crate::report::Row;
use crate::watchdog::{Limits, Watchdog};

/// Seconds without an RCU grace period before the guest kernel warns of a
/// stall: its maximum, longer than the watchdog's default progress limit
/// (240 s). Under TCG the guest's clock runs on while a loaded host keeps
/// the vCPU thread off the CPU, so the default 21 s measures the host, not
/// the guest; a guest truly stuck is stopped by the progress limit first.
const RCU_STALL_TIMEOUT: u32 = 300;

/// KVM only where it really works. Nested "PVM" KVM (module kvm_pvm)
/// exposes /dev/kvm, but QEMU then fails ("failed to set MSR 0x10a") or
/// hangs after "Probing EDD": TCG there without trying. Elsewhere a short
/// probe boot must reach the initramfs, or TCG.
pub fn choose(accel: Accel, kernel: &Path, initramfs: &Path) -> &'static str {
    match accel {
        Accel::Kvm => return "kvm",
        Accel::Tcg => return "tcg",
        Accel::Auto => {}
    }
    let pvm = Path::new("/sys/module/kvm_pvm").is_dir()
        || fs::read_to_string("/proc/modules")
            .is_ok_and(|m| m.lines().any(|l| l.starts_with("kvm_pvm ")));
    if pvm {
        say("nested PVM KVM (kvm_pvm) detected: using TCG");
        return "tcg";
    }
    let usable = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
        && probe_kvm(kernel, initramfs);
    if usable {
        "kvm"
    } else {
        say("KVM not usable here: using TCG");
        "tcg"
    }
}

/// A KVM boot that must print `@@PROBE` from the initramfs within 30 s.
fn probe_kvm(kernel: &Path, initramfs: &Path) -> bool {
    let child = Command::new("qemu-system-x86_64")
        .args([
            "-accel",
            "kvm",
            "-cpu",
            "host",
            "-m",
            "256",
            "-nodefaults",
            "-no-reboot",
        ])
        .args(["-display", "none", "-serial", "stdio", "-monitor", "none"])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(initramfs)
        .args([
            "-append",
            "console=ttyS0 no_timer_check quiet panic=-1 semanifest.boot=probe",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return false };
    let Some(stdout) = child.stdout.take() else {
        return false;
    };
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let probed = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|line| protocol::parse(&line) == Message::Probe);
        let _ = tx.send(probed);
    });
    let probed = rx.recv_timeout(Duration::from_secs(30)).unwrap_or(false);
    let _ = child.kill();
    let _ = child.wait();
    probed
}

/// What a boot needs.
pub struct Boot<'a> {
    pub number: u32,
    pub accel: &'static str,
    pub cpus: u64,
    pub kernel: &'a Path,
    pub initramfs: &'a Path,
    pub disks: &'a [PathBuf],
    pub work: &'a Path,
    pub limits: Limits,
    pub inject: Option<Hang>,
    /// `enforcing=1` on the kernel command line; otherwise `enforcing=0`
    /// (the suite's init switches to enforcing itself, after its setup).
    pub enforcing: bool,
    /// More kernel command-line words (`systemd.mask=UNIT`).
    pub cmdline: &'a [String],
    /// The disks' writes go to a throwaway overlay (`snapshot=on`): the
    /// next boot starts from the same image.
    pub snapshot: bool,
}

impl Boot<'_> {
    fn console(&self) -> PathBuf {
        self.work.join(format!("console-{}.log", self.number))
    }

    fn launch(&self) -> Result<Child> {
        let cpu = if self.accel == "kvm" { "host" } else { "max" };
        // no_timer_check and the RCU stall timeout: see docs/vm.md ("The
        // timer check panics a loaded host's guest", "RCU stall warnings
        // measure the host").
        let mut append = format!(
            "console=ttyS0 security=selinux enforcing={} mitigations=off no_timer_check rcupdate.rcu_cpu_stall_timeout={RCU_STALL_TIMEOUT} quiet panic=-1 semanifest.boot={}",
            u8::from(self.enforcing),
            self.number
        );
        if let Some(hang) = self.inject {
            append.push_str(&format!(" semanifest.inject={}", hang.name()));
        }
        for word in self.cmdline {
            append.push(' ');
            append.push_str(word);
        }
        File::create(self.console())?;
        let mut command = Command::new("qemu-system-x86_64");
        command
            .args(["-accel", self.accel, "-cpu", cpu])
            .args([
                "-smp",
                &self.cpus.to_string(),
                "-m",
                "1024",
                "-nodefaults",
                "-no-reboot",
            ])
            .args(["-display", "none", "-monitor", "none"])
            .arg("-serial")
            .arg(format!("file:{}", self.console().display()))
            .arg("-kernel")
            .arg(self.kernel)
            .arg("-initrd")
            .arg(self.initramfs)
            .arg("-append")
            .arg(append);
        for disk in self.disks {
            command.arg("-drive").arg(format!(
                "file={},format=raw,if=virtio,cache=unsafe{}",
                disk.display(),
                if self.snapshot { ",snapshot=on" } else { "" }
            ));
        }
        let log = File::create(self.work.join(format!("qemu-{}.log", self.number)))?;
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start qemu-system-x86_64; run scripts/install-deps (package qemu-system-x86)")
    }

    /// Boots, streams progress lines as they come, stops a hung guest, and
    /// returns the host's rows for this boot (`boot-N/no-hang`, and
    /// `boot-N/reported` or `boot-N/results-intact` when those fail). The
    /// console stays in `console-N.log`, line breaks without `\r`.
    pub fn run(&self) -> Result<Vec<Row>> {
        let n = self.number;
        say(format!("boot {n}"));
        let started = Instant::now();
        let mut qemu = self.launch()?;
        let mut console = File::open(self.console())?;
        let mut dog = Watchdog::new(self.limits);
        let mut offset = 0u64;
        let mut hang = None;
        loop {
            let exited = qemu.try_wait()?.is_some();
            let mut bytes = Vec::new();
            console.seek(SeekFrom::Start(offset))?;
            console.read_to_end(&mut bytes)?;
            offset += bytes.len() as u64;
            for line in dog.feed(started.elapsed(), &bytes) {
                stream(&line);
            }
            if exited {
                break;
            }
            if let Some(why) = dog.verdict(started.elapsed()) {
                hang = Some(why);
                let _ = qemu.kill();
                break;
            }
            thread::sleep(Duration::from_secs(1));
        }
        let _ = qemu.wait();
        let took = started.elapsed().as_secs();
        let text = String::from_utf8_lossy(&fs::read(self.console())?).replace("\r\n", "\n");
        fs::write(self.console(), &text)?;
        Ok(self.verdicts(&text, hang, took))
    }

    fn verdicts(&self, console: &str, hang: Option<String>, took: u64) -> Vec<Row> {
        let n = self.number;
        if let Some(hang) = hang {
            eprintln!("boot {n} hung after {took} s: {hang}; stopped. Last 50 console lines:");
            let lines: Vec<&str> = console
                .lines()
                .filter(|l| protocol::parse(l) != Message::Heartbeat)
                .collect();
            eprint_tail(&lines, 50);
            return vec![Row::new(
                &format!("boot-{n}/no-hang"),
                "no hang",
                hang,
                false,
            )];
        }
        let boot = n.to_string();
        let end = console
            .lines()
            .find_map(|line| match protocol::parse(line) {
                Message::End { boot: b, results } if b == boot => Some(results),
                _ => None,
            });
        let Some(promised) = end else {
            eprintln!("boot {n} never reported (after {took} s); last 50 console lines:");
            eprint_tail(&console.lines().collect::<Vec<_>>(), 50);
            let qemu_log =
                fs::read_to_string(self.work.join(format!("qemu-{n}.log"))).unwrap_or_default();
            if !qemu_log.is_empty() {
                eprint!("qemu said:\n{qemu_log}");
            }
            return vec![Row::new(
                &format!("boot-{n}/reported"),
                "@@END",
                "no report",
                false,
            )];
        };
        let mut rows = Vec::new();
        // Kernel messages share the console: a result line they broke
        // would otherwise just go missing.
        let reported = console.lines().filter(|l| l.starts_with("@@R|")).count() as u64;
        if reported != promised {
            rows.push(Row::new(
                &format!("boot-{n}/results-intact"),
                &format!("{promised} result lines"),
                format!("{reported} readable"),
                false,
            ));
        }
        rows.push(Row::new(
            &format!("boot-{n}/no-hang"),
            "no hang",
            format!("finished in {took} s"),
            true,
        ));
        say(format!("boot {n} done in {took} s"));
        rows
    }
}

/// Progress for the person watching: stages, fatal errors and relabel
/// passes, indented.
fn stream(line: &str) {
    match protocol::parse(line) {
        Message::Stage(text) => println!("    {text}"),
        Message::Fatal(text) => println!("    FATAL: {text}"),
        Message::Relabel(r) => println!(
            "    relabel /var: {} of {} objects relabelled in {} s",
            r.relabelled, r.examined, r.seconds
        ),
        _ => {}
    }
}

fn eprint_tail(lines: &[&str], count: usize) {
    for line in &lines[lines.len().saturating_sub(count)..] {
        eprintln!("{line}");
    }
}
