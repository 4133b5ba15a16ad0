//! The command line: the options `testvm/run` has always taken.

use clap::{Parser, ValueEnum};

/// VM suite: boots Debian's kernel in SELinux enforcing mode with the policy
/// `semanifest build` compiles from the embedded default layout, and proves
/// that hostPath pods run by crun and runc stay out of etcd's data and the
/// other protected parts of /var.
///
/// Exit status: 0 only when every scenario passed; 1 when one failed, a
/// boot hung or never reported; 2 on usage errors or a missing host command.
#[derive(Parser, Debug)]
#[command(name = "testvm/run", bin_name = "testvm/run")]
pub struct Args {
    /// Fetch the kernel package again, even when the cache verifies.
    #[arg(long)]
    pub rebuild: bool,
    /// The accelerator: KVM only where a probe boot works (auto).
    #[arg(long, value_enum, default_value = "auto")]
    pub accel: Accel,
    /// Virtual CPUs (see testvm/README.md, "Why one virtual CPU").
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u64).range(1..))]
    pub cpus: u64,
    /// Hard ceiling per boot, in seconds; the watchdog normally acts far
    /// earlier.
    #[arg(long = "timeout", value_name = "S", default_value = "600", value_parser = clap::value_parser!(u64).range(1..))]
    pub boot_timeout: u64,
    /// No console output at all for S seconds: hung.
    #[arg(long = "silence", value_name = "S", default_value = "120", value_parser = clap::value_parser!(u64).range(1..))]
    pub silence_limit: u64,
    /// Only heartbeats for S seconds: stuck.
    #[arg(long = "progress", value_name = "S", default_value = "240", value_parser = clap::value_parser!(u64).range(1..))]
    pub progress_limit: u64,
    /// Make boot 1 hang this way (the watchdog must stop it).
    #[arg(long, value_enum, value_name = "KIND")]
    pub inject_hang: Option<Hang>,
    /// Print the Debian packages the host commands come from, and exit.
    #[arg(long, conflicts_with = "watchdog_test")]
    pub list_packages: bool,
    /// Inject each kind of hang into its own run (short limits): each must
    /// be stopped early with exit 1 and a boot-1/no-hang FAIL naming it.
    #[arg(long, conflicts_with = "inject_hang")]
    pub watchdog_test: bool,
    /// Run only the scenarios whose name matches PATTERN, and what they
    /// need; boot only the boots they run in. A shell pattern (`*` matches
    /// across `/`, `?` one character) against the whole name, or a leading
    /// part of it up to a `/`: `--only kubens`, `--only '*/etcd-mount/*'`,
    /// `--only crun/var-mount/read-etcd-file`. Repeat it to choose more.
    /// `--list` shows the names.
    #[arg(long, value_name = "PATTERN", conflicts_with = "watchdog_test")]
    pub only: Vec<String>,
    /// List the scenarios (those `--only` chooses) with their boot, and
    /// the boots, then exit.
    #[arg(long, conflicts_with_all = ["watchdog_test", "boot_bench"])]
    pub list: bool,
    /// Only the suite's last stage: boot Debian 12's own systemd as PID 1,
    /// enforcing, from a debootstrapped root with the layout installed by
    /// `semanifest build --install-root`, then again with the layout's
    /// units masked (the control), and report the boot units' and kubens'
    /// scenarios. With `--only`, only the chosen among them.
    #[arg(long, conflicts_with_all = ["watchdog_test", "inject_hang"])]
    pub systemd: bool,
    /// Measure the systemd stage's boot time: build its image once, then N
    /// rounds of a cold boot (a fresh copy of the image, the host's page
    /// cache dropped: apply makes the tree, the relabel walks /var) and a
    /// warm one (the same disk again). Prints the seconds to test.target.
    #[arg(long, value_name = "N", conflicts_with_all = ["watchdog_test", "inject_hang", "systemd", "only"], value_parser = clap::value_parser!(u64).range(1..))]
    pub boot_bench: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Accel {
    Auto,
    Kvm,
    Tcg,
}

/// The ways a guest can hang, on demand (`semanifest.inject=` for the
/// guest's suite).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Hang {
    /// The guest prints a kernel soft-lockup line, then nothing more.
    Lockup,
    /// The console goes quiet for good.
    Silence,
    /// Heartbeats go on, the suite never advances.
    Stuck,
}

impl Hang {
    pub const ALL: [Hang; 3] = [Hang::Lockup, Hang::Silence, Hang::Stuck];

    pub fn name(self) -> &'static str {
        match self {
            Hang::Lockup => "lockup",
            Hang::Silence => "silence",
            Hang::Stuck => "stuck",
        }
    }
}
