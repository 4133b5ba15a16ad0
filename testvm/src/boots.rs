//! The suite's boots, its controls and its host-side scenarios: the one
//! table every other module reads. A guest scenario names its boot here
//! (`# boot:` in its header, testvm/scenarios), and may take part in a
//! control (`# control:`); `testvm/run --only` boots only what the chosen
//! scenarios need.

/// Which guest a boot starts: the two stages share the kernel only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// A busybox initramfs (guest/suite) that loads the policy itself,
    /// with an ext4 `/var` and the OCI runtimes.
    Busybox,
    /// Debian 12's own systemd as PID 1 (guest/systemd), enforcing from
    /// the start, from a root built by `semanifest build --install-root`.
    Systemd,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Busybox => "busybox",
            Stage::Systemd => "systemd",
        }
    }
}

/// One boot of the suite.
#[derive(Debug)]
pub struct Boot {
    /// `semanifest.boot=N` on the kernel command line, `console-N.log`,
    /// `boot-N/…` rows; boots run in this order.
    pub number: u32,
    /// What scenarios name in `# boot:`.
    pub name: &'static str,
    pub stage: Stage,
    /// Runs on the disk this earlier boot left, which must therefore boot
    /// first whenever this one does.
    pub continues: Option<u32>,
    /// The policies its scenarios may ask for (`# policy:`), in the order
    /// the boot loads them; the first is loaded before any scenario runs.
    /// Empty where the guest loads its policy itself (systemd).
    pub policies: &'static [&'static str],
    /// Makes pods through containerd's CRI: the image gets `cri-run`
    /// (testvm/cri) and the container image (assets::oci_image).
    pub cri: bool,
    /// An environment variable naming an input only some machines have;
    /// unset, the boot is skipped and the run says so.
    pub requires: Option<&'static str>,
    pub about: &'static str,
}

/// Where boot 7 finds the Fedora targeted store: a `.tar.zst` of a root
/// for `semodule -p`, or that root.
pub const FEDORA_STORE_ENV: &str = "SEMANIFEST_FEDORA_STORE";

pub const BOOTS: [Boot; 7] = [
    Boot {
        number: 1,
        name: "enforcing",
        stage: Stage::Busybox,
        continues: None,
        policies: &["semanifest"],
        cri: false,
        requires: None,
        about: "the layout's policy, /var relabelled, enforcing; pods through crun and runc; the node runtime on an empty disk",
    },
    Boot {
        number: 2,
        name: "reboot",
        stage: Stage::Busybox,
        continues: Some(1),
        policies: &["semanifest", "leaky"],
        cri: false,
        requires: None,
        about: "the same disk again: the relabel changes nothing; then the leaky control policy",
    },
    Boot {
        number: 3,
        name: "refpolicy",
        stage: Stage::Busybox,
        continues: None,
        policies: &["refpolicy-stock", "refpolicy-module", "refpolicy-no-owner"],
        cri: false,
        requires: None,
        about: "Debian's refpolicy store as shipped, then with the layout's module, then with the module built without its store owners",
    },
    Boot {
        number: 4,
        name: "systemd",
        stage: Stage::Systemd,
        continues: None,
        policies: &[],
        cri: false,
        requires: None,
        about: "Debian 12's systemd as PID 1, enforcing, the layout's units installed; containerd and etcd start",
    },
    Boot {
        number: 5,
        name: "systemd-control",
        stage: Stage::Systemd,
        continues: None,
        policies: &[],
        cri: false,
        requires: None,
        about: "the same image with the layout's units masked and the relabel failing",
    },
    Boot {
        number: 6,
        name: "cri",
        stage: Stage::Systemd,
        continues: None,
        policies: &[],
        cri: true,
        requires: None,
        about: "the same image: pods made through containerd's CRI as kubelet makes them, etcd serving through its API",
    },
    Boot {
        number: 7,
        name: "fedora",
        stage: Stage::Busybox,
        continues: None,
        policies: &["fedora-module", "fedora-no-owner"],
        cri: false,
        requires: Some(FEDORA_STORE_ENV),
        about: "Fedora's targeted store with container-selinux and the layout's module, then the module built without its store owners",
    },
];

/// The OCI runtimes a `{runtime}` scenario runs under, in this order; the
/// first is also the runtime of a pod scenario without `{runtime}`.
pub const RUNTIMES: [&str; 2] = ["crun", "runc"];

/// How a control judges what its boot reported for a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// A denial must get through: the guest's check fails with `ALLOWED`.
    Leaks,
    /// The scenario must be reported, and fail.
    Fails,
}

/// A control: scenarios run again where what they prove is switched off,
/// so that they must fail. A scenario takes part with `# control: NAME`:
/// that line is the one place the list is kept.
#[derive(Debug, PartialEq, Eq)]
pub struct Control {
    pub name: &'static str,
    pub boot: u32,
    /// The policy its scenarios run under, in `boot`.
    pub policy: Option<&'static str>,
    /// Put before the scenario's name by the guest (`@@R` lines).
    pub guest_prefix: &'static str,
    /// Put before the scenario's name in the table.
    pub row_prefix: &'static str,
    pub judged: Judged,
    pub about: &'static str,
}

pub const CONTROLS: [Control; 2] = [
    Control {
        name: "leaky",
        boot: 2,
        policy: Some("leaky"),
        guest_prefix: "leaky-control/",
        row_prefix: "leaky-control/",
        judged: Judged::Leaks,
        about: "the policy with testvm/leaky.cil compiled in, neverallow checking off: every denial must get through",
    },
    Control {
        name: "layout-units-off",
        boot: 5,
        policy: None,
        guest_prefix: "",
        row_prefix: "control/layout-units-off/",
        judged: Judged::Fails,
        about: "apply and the layout's mount units masked, the relabel failing: what only they do must fail",
    },
];

/// What a host-side scenario needs run before it can be judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostNeeds {
    /// Nothing booted: the host decides it alone.
    Nothing,
    /// This boot's own reports (its `@@RELABEL` line).
    Boot(u32),
    /// Every scenario of this control.
    Control(&'static str),
}

/// A scenario the host decides, from its own work or from a whole boot
/// (report.rs and project.rs judge them).
#[derive(Debug)]
pub struct HostScenario {
    pub name: &'static str,
    pub needs: HostNeeds,
}

pub const LEAKY_CIL_REJECTED: &str = "control/leaky-cil-rejected-by-build";
pub const BOOT_1_LABELS: &str = "relabel/boot-1-labels-the-disk";
pub const BOOT_2_CHANGES_NOTHING: &str = "relabel/boot-2-nothing-to-change";
pub const LEAKY_BREAKS_DENIALS: &str = "control/leaky-policy-breaks-denials";

pub const REFPOLICY_PREDICTION: &str = "refpolicy/semodule-installs-the-prediction";
pub const FEDORA_PREDICTION: &str = "fedora/semodule-installs-the-prediction";

pub const HOST_SCENARIOS: [HostScenario; 6] = [
    HostScenario {
        name: LEAKY_CIL_REJECTED,
        needs: HostNeeds::Nothing,
    },
    HostScenario {
        name: BOOT_1_LABELS,
        needs: HostNeeds::Boot(1),
    },
    HostScenario {
        name: BOOT_2_CHANGES_NOTHING,
        needs: HostNeeds::Boot(2),
    },
    HostScenario {
        name: LEAKY_BREAKS_DENIALS,
        needs: HostNeeds::Control("leaky"),
    },
    // The store boots boot what semodule installed: it must be what the
    // build predicted.
    HostScenario {
        name: REFPOLICY_PREDICTION,
        needs: HostNeeds::Boot(3),
    },
    HostScenario {
        name: FEDORA_PREDICTION,
        needs: HostNeeds::Boot(7),
    },
];

pub fn boot(number: u32) -> &'static Boot {
    BOOTS
        .iter()
        .find(|boot| boot.number == number)
        .unwrap_or_else(|| panic!("no boot {number} in BOOTS"))
}

pub fn boot_named(name: &str) -> Option<&'static Boot> {
    BOOTS.iter().find(|boot| boot.name == name)
}

pub fn control(name: &str) -> Option<&'static Control> {
    CONTROLS.iter().find(|control| control.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        for (i, boot) in BOOTS.iter().enumerate() {
            assert_eq!(boot.number as usize, i + 1, "numbered in order");
            if let Some(earlier) = boot.continues {
                assert!(earlier < boot.number);
                assert_eq!(self::boot(earlier).stage, boot.stage);
            }
            assert_eq!(
                boot.policies.is_empty(),
                boot.stage == Stage::Systemd,
                "{}",
                boot.name
            );
        }
        for control in &CONTROLS {
            let boot = boot(control.boot);
            if let Some(policy) = control.policy {
                assert!(boot.policies.contains(&policy), "{}", control.name);
            }
        }
        for host in &HOST_SCENARIOS {
            match host.needs {
                HostNeeds::Boot(n) => assert!(BOOTS.iter().any(|b| b.number == n)),
                HostNeeds::Control(name) => assert!(control(name).is_some()),
                HostNeeds::Nothing => {}
            }
        }
    }
}
