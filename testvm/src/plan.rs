//! What a run boots and in which order the guests run the scenarios:
//! every scenario expanded into its instances (one per runtime for a
//! `{runtime}` scenario, one more per control it takes part in), those
//! `--only` chose and what they need, ordered per boot, and written for the
//! guests as `plan` (read by guest/suite and guest/systemd/run).
//!
//! Order within a boot: by policy (the boot's order), enforcing before
//! permissive, runtime (the table's order, then none), then name; a
//! scenario always after what it `needs` and what it runs `after`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{bail, Result};

use crate::boots::{self, Control, HostNeeds, Stage, BOOTS, HOST_SCENARIOS, RUNTIMES};
use crate::scenario::{glob, Scenario};

/// What `--only` and `--systemd` ask for.
#[derive(Debug, Default, Clone)]
pub struct Selection {
    /// Empty: every scenario.
    pub patterns: Vec<String>,
    /// Only the scenarios this stage's boots run (and no host scenario).
    pub stage: Option<Stage>,
}

impl Selection {
    /// A pattern matches a name whole, or a leading part of it that ends
    /// before a `/` (`kubens` chooses `kubens/…`).
    fn matches(&self, name: &str) -> bool {
        self.patterns.is_empty()
            || self.patterns.iter().any(|pattern| {
                glob(pattern, name)
                    || name
                        .match_indices('/')
                        .any(|(at, _)| glob(pattern, &name[..at]))
            })
    }
}

/// One run of one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Index into the scenarios.
    pub scenario: usize,
    pub runtime: Option<&'static str>,
    pub control: Option<&'static Control>,
    pub boot: u32,
    /// The name the guest reports it under (`@@R`).
    pub reported: String,
    /// Its row in the table.
    pub row: String,
    pub policy: Option<&'static str>,
    pub permissive: bool,
    /// Reported in the table; false when it runs only because a chosen one
    /// needs it.
    pub selected: bool,
}

#[derive(Debug)]
pub struct Plan<'a> {
    pub scenarios: &'a [Scenario],
    /// The instances that run, boot by boot, each boot's in run order.
    pub instances: Vec<Instance>,
    /// The boots that run, in order.
    pub boots: Vec<u32>,
    /// The host scenarios chosen.
    pub host: Vec<&'static str>,
    by_reported: HashMap<(u32, String), usize>,
}

impl<'a> Plan<'a> {
    pub fn new(scenarios: &'a [Scenario], selection: &Selection) -> Result<Plan<'a>> {
        let mut all = expand(scenarios);
        for instance in &mut all {
            let scenario = &scenarios[instance.scenario];
            instance.selected = selection
                .stage
                .is_none_or(|stage| boots::boot(instance.boot).stage == stage)
                && (selection.matches(&scenario.name) || selection.matches(&instance.row));
        }
        let host: Vec<&'static str> = HOST_SCENARIOS
            .iter()
            .filter(|host| selection.stage.is_none() && selection.matches(host.name))
            .map(|host| host.name)
            .collect();
        if host.is_empty() && !all.iter().any(|i| i.selected) {
            bail!(
                "no scenario matches {}; `testvm/run --list` lists them",
                selection.patterns.join(", ")
            );
        }

        // What runs: the chosen, what they need, what the host's need.
        let index: HashMap<(usize, Option<&str>, Option<&str>), usize> = all
            .iter()
            .enumerate()
            .map(|(i, inst)| {
                (
                    (inst.scenario, inst.runtime, inst.control.map(|c| c.name)),
                    i,
                )
            })
            .collect();
        let mut runs: Vec<bool> = all.iter().map(|i| i.selected).collect();
        let mut boots_needed = BTreeSet::new();
        for name in &host {
            let Some(spec) = HOST_SCENARIOS.iter().find(|h| h.name == *name) else {
                continue;
            };
            match spec.needs {
                HostNeeds::Nothing => {}
                HostNeeds::Boot(number) => {
                    boots_needed.insert(number);
                }
                HostNeeds::Control(control) => {
                    for (i, instance) in all.iter().enumerate() {
                        if instance.control.is_some_and(|c| c.name == control) {
                            runs[i] = true;
                        }
                    }
                }
            }
        }
        let mut work: Vec<usize> = (0..all.len()).filter(|&i| runs[i]).collect();
        while let Some(i) = work.pop() {
            for j in needed(scenarios, &all, &index, i) {
                if !runs[j] {
                    runs[j] = true;
                    work.push(j);
                }
            }
        }
        for (i, instance) in all.iter().enumerate() {
            if runs[i] {
                boots_needed.insert(instance.boot);
            }
        }
        let mut more: Vec<u32> = boots_needed.iter().copied().collect();
        while let Some(number) = more.pop() {
            if let Some(earlier) = boots::boot(number).continues {
                if boots_needed.insert(earlier) {
                    more.push(earlier);
                }
            }
        }

        let mut instances = Vec::new();
        for &number in &boots_needed {
            let in_boot: Vec<usize> = (0..all.len())
                .filter(|&i| runs[i] && all[i].boot == number)
                .collect();
            for i in order(scenarios, &all, &index, &in_boot)? {
                instances.push(all[i].clone());
            }
        }
        let by_reported = instances
            .iter()
            .enumerate()
            .map(|(i, inst)| ((inst.boot, inst.reported.clone()), i))
            .collect();
        Ok(Plan {
            scenarios,
            instances,
            boots: boots_needed.into_iter().collect(),
            host,
            by_reported,
        })
    }

    /// Takes boot `number` and its scenario runs out of the plan (an input
    /// it requires is missing); returns how many runs it took out. A boot
    /// another one continues is never skipped alone.
    pub fn skip_boot(&mut self, number: u32) -> usize {
        assert!(
            BOOTS.iter().all(|boot| boot.continues != Some(number)),
            "boot {number} is continued by another"
        );
        let before = self.instances.len();
        self.instances.retain(|instance| instance.boot != number);
        self.boots.retain(|&boot| boot != number);
        self.host.retain(|name| {
            HOST_SCENARIOS
                .iter()
                .all(|host| host.name != *name || host.needs != HostNeeds::Boot(number))
        });
        self.by_reported = self
            .instances
            .iter()
            .enumerate()
            .map(|(i, inst)| ((inst.boot, inst.reported.clone()), i))
            .collect();
        before - self.instances.len()
    }

    pub fn runs(&self, boot: u32) -> bool {
        self.boots.contains(&boot)
    }

    pub fn runs_stage(&self, stage: Stage) -> bool {
        self.boots.iter().any(|&n| boots::boot(n).stage == stage)
    }

    pub fn host_chosen(&self, name: &str) -> bool {
        self.host.contains(&name)
    }

    /// The instance boot `boot` reports as `name`.
    pub fn instance(&self, boot: u32, name: &str) -> Option<&Instance> {
        self.by_reported
            .get(&(boot, name.to_owned()))
            .map(|&i| &self.instances[i])
    }

    /// The guests' plan for the boots of `stage`: a line per instance (and
    /// one to start each boot), fields separated by blanks, the last one
    /// running to the end of the line:
    ///
    /// ```text
    /// BOOT start POLICY
    /// BOOT run NAME POLICY MODE RUNTIME - - FILE EXPECTED…
    /// BOOT check NAME POLICY MODE RUNTIME LEVEL MOUNTS EXPECT COMMAND…
    /// ```
    ///
    /// (the same fields for both, so that one `read` takes either), `-`
    /// for no policy, runtime or mount; MOUNTS joined by `,`. The
    /// consecutive checks of one pod (same policy, mode, runtime, level and
    /// mounts) run in one pod.
    pub fn guest_text(&self, stage: Stage) -> String {
        let mut text = String::from(
            "# Written by testvm/run (testvm/src/plan.rs): the scenarios each boot runs, in order.\n",
        );
        for &number in &self.boots {
            let boot = boots::boot(number);
            if boot.stage != stage {
                continue;
            }
            text.push_str(&format!(
                "{number} start {}\n",
                boot.policies.first().copied().unwrap_or("-")
            ));
            for instance in self.instances.iter().filter(|i| i.boot == number) {
                let scenario = &self.scenarios[instance.scenario];
                let policy = instance.policy.unwrap_or("-");
                let mode = if instance.permissive {
                    "permissive"
                } else {
                    "enforcing"
                };
                let line = match &scenario.pod {
                    Some(pod) => format!(
                        "{number} check {} {policy} {mode} {} {} {} {} {}",
                        instance.reported,
                        instance.runtime.unwrap_or(RUNTIMES[0]),
                        pod.level,
                        if pod.mounts.is_empty() {
                            "-".to_owned()
                        } else {
                            pod.mounts.join(",")
                        },
                        scenario.expect,
                        pod.command
                    ),
                    None => format!(
                        "{number} run {} {policy} {mode} {} - - {} {}",
                        instance.reported,
                        instance.runtime.unwrap_or("-"),
                        scenario.file(),
                        scenario.expect
                    ),
                };
                text.push_str(line.trim_end());
                text.push('\n');
            }
        }
        text
    }
}

/// Every instance of every scenario, none chosen yet.
fn expand(scenarios: &[Scenario]) -> Vec<Instance> {
    let mut all = Vec::new();
    for (index, scenario) in scenarios.iter().enumerate() {
        let runtimes: Vec<Option<&'static str>> = if scenario.per_runtime() {
            RUNTIMES.iter().map(|&r| Some(r)).collect()
        } else {
            vec![None]
        };
        let boot = boots::boot(scenario.boot);
        let policy = scenario
            .policy
            .as_deref()
            .and_then(|p| boot.policies.iter().copied().find(|&q| q == p))
            .or(boot.policies.first().copied());
        let variants = std::iter::once(None).chain(
            scenario
                .controls
                .iter()
                .filter_map(|name| boots::control(name))
                .map(Some),
        );
        for control in variants {
            for &runtime in &runtimes {
                let name = scenario.name_for(runtime);
                let instance = match control {
                    None => Instance {
                        scenario: index,
                        runtime,
                        control,
                        boot: scenario.boot,
                        reported: name.clone(),
                        row: name,
                        policy,
                        permissive: scenario.permissive,
                        selected: false,
                    },
                    Some(control) => Instance {
                        scenario: index,
                        runtime,
                        control: Some(control),
                        boot: control.boot,
                        reported: format!("{}{name}", control.guest_prefix),
                        row: format!("{}{name}", control.row_prefix),
                        policy: control
                            .policy
                            .or_else(|| boots::boot(control.boot).policies.first().copied()),
                        permissive: false,
                        selected: false,
                    },
                };
                all.push(instance);
            }
        }
    }
    all
}

type Index<'k> = HashMap<(usize, Option<&'k str>, Option<&'k str>), usize>;

/// The instances instance `i` needs: the same runtime, the same control.
fn needed(scenarios: &[Scenario], all: &[Instance], index: &Index<'_>, i: usize) -> Vec<usize> {
    let instance = &all[i];
    let by_name = |name: &str| scenarios.iter().position(|s| s.name == name);
    scenarios[instance.scenario]
        .needs
        .iter()
        .filter_map(|need| by_name(need))
        .filter_map(|j| {
            let runtime = if scenarios[j].per_runtime() {
                instance.runtime
            } else {
                None
            };
            index
                .get(&(j, runtime, instance.control.map(|c| c.name)))
                .copied()
        })
        .collect()
}

/// Whether instance `from` needs `to`, directly or through what it needs.
fn needs_through(
    scenarios: &[Scenario],
    all: &[Instance],
    index: &Index<'_>,
    from: usize,
    to: usize,
) -> bool {
    let mut seen = BTreeSet::new();
    let mut next = vec![from];
    while let Some(i) = next.pop() {
        for j in needed(scenarios, all, index, i) {
            if j == to {
                return true;
            }
            if seen.insert(j) {
                next.push(j);
            }
        }
    }
    false
}

/// `in_boot` (instances of one boot) in run order.
fn order(
    scenarios: &[Scenario],
    all: &[Instance],
    index: &Index<'_>,
    in_boot: &[usize],
) -> Result<Vec<usize>> {
    let member: BTreeSet<usize> = in_boot.iter().copied().collect();
    let key = |i: usize| {
        let instance = &all[i];
        let boot = boots::boot(instance.boot);
        let policy = instance
            .policy
            .and_then(|p| boot.policies.iter().position(|&q| q == p))
            .unwrap_or(0);
        let runtime = instance
            .runtime
            .and_then(|r| RUNTIMES.iter().position(|&q| q == r))
            .unwrap_or(RUNTIMES.len());
        (
            policy * 2 + usize::from(instance.permissive),
            runtime,
            scenarios[instance.scenario].name.clone(),
            i,
        )
    };
    // before[i]: what must run before i.
    let mut before: BTreeMap<usize, BTreeSet<usize>> =
        in_boot.iter().map(|&i| (i, BTreeSet::new())).collect();
    for &i in in_boot {
        let instance = &all[i];
        let mut first: BTreeSet<usize> = needed(scenarios, all, index, i)
            .into_iter()
            .filter(|j| member.contains(j))
            .collect();
        for pattern in &scenarios[instance.scenario].after {
            for &j in in_boot {
                let other = &all[j];
                let runtimes_meet = other.runtime == instance.runtime
                    || other.runtime.is_none()
                    || instance.runtime.is_none();
                // A pattern never takes in what needs this one, which
                // runs after it anyway (`after: *` then means all the
                // others); a name does, and a cycle is an error.
                let wildcard = pattern.contains(['*', '?']);
                if j != i
                    && other.control.map(|c| c.name) == instance.control.map(|c| c.name)
                    && runtimes_meet
                    && glob(pattern, &scenarios[other.scenario].name)
                    && !(wildcard && needs_through(scenarios, all, index, j, i))
                {
                    first.insert(j);
                }
            }
        }
        before.insert(i, first);
    }
    // What makes consecutive pod scenarios one pod (guest/suite).
    let pod_of = |i: usize| {
        let instance = &all[i];
        scenarios[instance.scenario].pod.as_ref().map(|pod| {
            (
                instance.policy,
                instance.permissive,
                instance.runtime,
                &pod.level,
                &pod.mounts,
            )
        })
    };
    let mut ordered: Vec<usize> = Vec::new();
    let mut done = BTreeSet::new();
    let mut waiting: BTreeSet<_> = in_boot.iter().map(|&i| key(i)).collect();
    while !waiting.is_empty() {
        let is_ready =
            |k: &&(usize, usize, String, usize)| before[&k.3].iter().all(|j| done.contains(j));
        // A pod being filled takes its next check before anything else.
        let pod = ordered.last().and_then(|&last| pod_of(last));
        let ready = waiting
            .iter()
            .filter(is_ready)
            .find(|k| pod.is_some() && pod_of(k.3) == pod)
            .or_else(|| waiting.iter().find(is_ready))
            .cloned();
        let Some(next) = ready else {
            let stuck: Vec<&str> = waiting.iter().map(|k| all[k.3].row.as_str()).collect();
            bail!(
                "these scenarios wait for each other (needs/after): {}",
                stuck.join(", ")
            );
        };
        waiting.remove(&next);
        done.insert(next.3);
        ordered.push(next.3);
    }
    Ok(ordered)
}

/// `testvm/run --list`: one line per scenario the selection matches: its
/// name, its boot, and how it runs.
pub fn list(scenarios: &[Scenario], selection: &Selection) -> String {
    let mut lines = Vec::new();
    for scenario in scenarios {
        let boot = boots::boot(scenario.boot);
        let names: Vec<String> = if scenario.per_runtime() {
            RUNTIMES
                .iter()
                .map(|r| scenario.name_for(Some(r)))
                .collect()
        } else {
            vec![scenario.name.clone()]
        };
        let stage_ok = selection.stage.is_none_or(|s| s == boot.stage);
        if !stage_ok
            || !(selection.matches(&scenario.name) || names.iter().any(|n| selection.matches(n)))
        {
            continue;
        }
        let mut how = Vec::new();
        if scenario.pod.is_some() {
            how.push("pod".to_owned());
        }
        if scenario.per_runtime() {
            how.push(RUNTIMES.join("+"));
        }
        if let Some(policy) = &scenario.policy {
            how.push(format!("policy {policy}"));
        }
        if scenario.permissive {
            how.push("permissive".to_owned());
        }
        for name in &scenario.controls {
            if let Some(control) = boots::control(name) {
                how.push(format!("control {name} (boot {})", control.boot));
            }
        }
        lines.push((
            scenario.name.clone(),
            format!("{} {}", boot.number, boot.name),
            how.join(", "),
        ));
    }
    if selection.stage.is_none() {
        for host in HOST_SCENARIOS.iter().filter(|h| selection.matches(h.name)) {
            let needs = match host.needs {
                HostNeeds::Nothing => "decided on the host".to_owned(),
                HostNeeds::Boot(n) => format!("decided on the host from boot {n}"),
                HostNeeds::Control(c) => format!("decided on the host from control {c}"),
            };
            lines.push((host.name.to_owned(), "host".to_owned(), needs));
        }
    }
    let width = lines.iter().map(|l| l.0.len()).max().unwrap_or(0);
    let boot_width = lines.iter().map(|l| l.1.len()).max().unwrap_or(0);
    let mut text = String::new();
    for (name, boot, how) in lines {
        text.push_str(format!("{name:width$}  {boot:boot_width$}  {how}").trim_end());
        text.push('\n');
    }
    text
}

/// The boots `--list` describes below the scenarios.
pub fn list_boots() -> String {
    let mut text = String::new();
    for boot in &BOOTS {
        text.push_str(&format!(
            "boot {} {} ({}): {}\n",
            boot.number,
            boot.name,
            boot.stage.name(),
            boot.about
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{parse, Pod};

    fn sc(name: &str, header: &str) -> Scenario {
        let text = format!("{header}\ntrue\n");
        parse(name, &text).unwrap_or_else(|e| panic!("{name}: {e:?}"))
    }

    fn pod(name: &str, header: &str, command: &str) -> Scenario {
        let mut s = parse(name, &format!("{header}\n{command}\n")).unwrap();
        assert!(matches!(s.pod, Some(Pod { .. })));
        s.name = name.into();
        s
    }

    fn catalog() -> Vec<Scenario> {
        vec![
            pod(
                "{runtime}/etcd-mount/read-file",
                "# boot: enforcing\n# pod: s0:c1,c2 /var/lib/etcd:/host/etcd:rw\n# expect: deny:etcd_var_t\n# control: leaky",
                "cat /host/etcd/member/snap/db",
            ),
            pod(
                "{runtime}/mnt-mount/other-pod-writes",
                "# boot: enforcing\n# pod: s0:c3,c4 /var/mnt:/host/mnt:rw\n# expect: allow:x",
                "sh -c \"echo x\"",
            ),
            // Ready after the pod above, sorted before the check below: it
            // waits, the pod stays one.
            pod(
                "{runtime}/mnt-pod-reads",
                "# boot: enforcing\n# pod: s0:c3,c4 /var/mnt:/host/mnt:rw\n# expect: allow:x",
                "cat /host/mnt/x",
            ),
            sc(
                "{runtime}/mnt-file-label",
                "# boot: enforcing\n# expect: labelled\n# needs: {runtime}/mnt-mount/other-pod-writes",
            ),
            sc("node/a", "# boot: enforcing\n# expect: e"),
            sc("node/b", "# boot: enforcing\n# expect: e\n# needs: node/c"),
            sc("node/c", "# boot: enforcing\n# expect: e\n# after: node/a"),
            pod(
                "control/permissive/{runtime}/etcd-mount/read-file",
                "# boot: enforcing\n# pod: s0:c1,c2 /var/lib/etcd:/host/etcd:rw\n# expect: allow:etcd-db-v1\n# selinux: permissive",
                "head -n1 /host/etcd/member/snap/db",
            ),
            sc(
                "reboot/{runtime}/keeps",
                "# boot: reboot\n# expect: kept\n# needs: {runtime}/mnt-mount/other-pod-writes",
            ),
            sc("refpolicy/module", "# boot: refpolicy\n# expect: e\n# policy: refpolicy-module"),
            sc("refpolicy/stock", "# boot: refpolicy\n# expect: e\n# policy: refpolicy-stock"),
            sc("units/a", "# boot: systemd\n# expect: e\n# control: layout-units-off"),
            sc("kubens/restart", "# boot: systemd\n# expect: e\n# after: units/*"),
            sc("selinux/last", "# boot: systemd\n# expect: e\n# after: units/* kubens/*"),
        ]
    }

    fn rows<'p>(plan: &'p Plan<'_>, boot: u32) -> Vec<(&'p str, bool)> {
        plan.instances
            .iter()
            .filter(|i| i.boot == boot)
            .map(|i| (i.row.as_str(), i.selected))
            .collect()
    }

    fn only(patterns: &[&str]) -> Selection {
        Selection {
            patterns: patterns.iter().map(|p| p.to_string()).collect(),
            stage: None,
        }
    }

    #[test]
    fn a_skipped_boot_leaves_the_others_whole() {
        let mut scenarios = catalog();
        scenarios.push(sc(
            "fedora/owner",
            "# boot: fedora\n# expect: e\n# policy: fedora-no-owner",
        ));
        scenarios.push(sc("fedora/first", "# boot: fedora\n# expect: e"));
        let mut plan = Plan::new(&scenarios, &only(&["fedora", "refpolicy"])).unwrap();
        assert_eq!(plan.boots, [3, 7]);
        assert_eq!(
            rows(&plan, 7).iter().map(|r| r.0).collect::<Vec<_>>(),
            ["fedora/first", "fedora/owner"],
            "by the boot's policy order"
        );
        assert!(plan.host_chosen(boots::FEDORA_PREDICTION));
        assert_eq!(plan.skip_boot(7), 2);
        assert_eq!(plan.boots, [3]);
        assert!(!plan.host_chosen(boots::FEDORA_PREDICTION));
        assert!(plan.host_chosen(boots::REFPOLICY_PREDICTION));
        assert!(plan.instance(7, "fedora/first").is_none());
        assert_eq!(plan.instance(3, "refpolicy/stock").unwrap().boot, 3);
        assert!(!plan.guest_text(Stage::Busybox).contains("fedora"));
    }

    #[test]
    fn everything_in_order() {
        let scenarios = catalog();
        let plan = Plan::new(&scenarios, &Selection::default()).unwrap();
        // 7: the host's fedora/semodule-installs-the-prediction needs it.
        assert_eq!(plan.boots, [1, 2, 3, 4, 5, 7]);
        let names = |boot| -> Vec<&str> { rows(&plan, boot).into_iter().map(|r| r.0).collect() };
        assert_eq!(
            names(1),
            [
                // Runtime by runtime; the label check after its pod.
                "crun/etcd-mount/read-file",
                "crun/mnt-mount/other-pod-writes",
                "crun/mnt-pod-reads",
                "crun/mnt-file-label",
                "runc/etcd-mount/read-file",
                "runc/mnt-mount/other-pod-writes",
                "runc/mnt-pod-reads",
                "runc/mnt-file-label",
                "node/a",
                "node/c",
                "node/b",
                // Permissive last.
                "control/permissive/crun/etcd-mount/read-file",
                "control/permissive/runc/etcd-mount/read-file",
            ]
        );
        assert_eq!(
            names(2),
            [
                "reboot/crun/keeps",
                "reboot/runc/keeps",
                "leaky-control/crun/etcd-mount/read-file",
                "leaky-control/runc/etcd-mount/read-file",
            ]
        );
        assert_eq!(names(3), ["refpolicy/stock", "refpolicy/module"]);
        assert_eq!(names(4), ["units/a", "kubens/restart", "selinux/last"]);
        assert_eq!(names(5), ["control/layout-units-off/units/a"]);
        assert!(plan.instances.iter().all(|i| i.selected));
        assert_eq!(plan.host.len(), HOST_SCENARIOS.len());
        let control = plan.instance(5, "units/a").unwrap();
        assert_eq!(control.row, "control/layout-units-off/units/a");
        assert_eq!(
            plan.instance(2, "leaky-control/runc/etcd-mount/read-file")
                .unwrap()
                .policy,
            Some("leaky")
        );
        assert!(plan
            .instance(4, "control/layout-units-off/units/a")
            .is_none());
    }

    #[test]
    fn only_boots_what_the_chosen_need() {
        let scenarios = catalog();
        // A boot-2 scenario needs boot 1 (its disk) and, there, the pod
        // that wrote the file: run, not reported.
        let plan = Plan::new(&scenarios, &only(&["reboot/runc/keeps"])).unwrap();
        assert_eq!(plan.boots, [1, 2]);
        assert_eq!(rows(&plan, 1), [("runc/mnt-mount/other-pod-writes", false)]);
        assert_eq!(rows(&plan, 2), [("reboot/runc/keeps", true)]);
        assert!(plan.host.is_empty());

        // A scenario's name chooses all its instances, controls included.
        let plan = Plan::new(&scenarios, &only(&["units/a"])).unwrap();
        assert_eq!(plan.boots, [4, 5]);
        assert_eq!(rows(&plan, 5), [("control/layout-units-off/units/a", true)]);

        // A directory chooses what is below it; needs come along.
        let plan = Plan::new(&scenarios, &only(&["node/b"])).unwrap();
        assert_eq!(rows(&plan, 1), [("node/c", false), ("node/b", true)]);
        let plan = Plan::new(&scenarios, &only(&["node"])).unwrap();
        assert_eq!(
            rows(&plan, 1),
            [("node/a", true), ("node/c", true), ("node/b", true)]
        );

        // A host scenario brings what it judges.
        let plan = Plan::new(&scenarios, &only(&[boots::LEAKY_BREAKS_DENIALS])).unwrap();
        assert_eq!(plan.boots, [1, 2]);
        assert!(rows(&plan, 1).is_empty());
        assert_eq!(
            rows(&plan, 2),
            [
                ("leaky-control/crun/etcd-mount/read-file", false),
                ("leaky-control/runc/etcd-mount/read-file", false),
            ]
        );
        let plan = Plan::new(&scenarios, &only(&[boots::LEAKY_CIL_REJECTED])).unwrap();
        assert!(plan.boots.is_empty());

        // The stage of --systemd, and a pattern that matches nothing.
        let systemd = Selection {
            patterns: vec![],
            stage: Some(Stage::Systemd),
        };
        let plan = Plan::new(&scenarios, &systemd).unwrap();
        assert_eq!(plan.boots, [4, 5]);
        assert!(plan.host.is_empty());
        let error = Plan::new(&scenarios, &only(&["nothing/*"])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no scenario matches nothing/*; `testvm/run --list` lists them"
        );
    }

    #[test]
    fn one_runtime_of_a_runtime_scenario() {
        let scenarios = catalog();
        let plan = Plan::new(&scenarios, &only(&["crun/mnt-file-label"])).unwrap();
        assert_eq!(
            rows(&plan, 1),
            [
                ("crun/mnt-mount/other-pod-writes", false),
                ("crun/mnt-file-label", true)
            ]
        );
    }

    #[test]
    fn a_cycle_is_an_error() {
        let scenarios = vec![
            sc("a", "# boot: enforcing\n# expect: e\n# after: b"),
            sc("b", "# boot: enforcing\n# expect: e\n# needs: a"),
        ];
        let error = Plan::new(&scenarios, &Selection::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "these scenarios wait for each other (needs/after): a, b"
        );
    }

    /// `after: *` waits for all the others but what needs it: a check that
    /// needs the last scenario runs after it, not into a cycle.
    #[test]
    fn after_all_but_what_needs_it() {
        let scenarios = vec![
            sc(
                "z/last",
                "# boot: cri\n# expect: e\n# needs: a/first\n# after: *",
            ),
            sc("a/first", "# boot: cri\n# expect: e"),
            sc("b/middle", "# boot: cri\n# expect: e"),
            sc("a/check", "# boot: cri\n# expect: e\n# needs: m/through"),
            sc("m/through", "# boot: cri\n# expect: e\n# needs: z/last"),
        ];
        let plan = Plan::new(&scenarios, &Selection::default()).unwrap();
        let order: Vec<&str> = rows(&plan, 6).into_iter().map(|(row, _)| row).collect();
        assert_eq!(
            order,
            ["a/first", "b/middle", "z/last", "m/through", "a/check"]
        );
        // Without the need, `after: *` takes it in: a cycle.
        let scenarios = vec![
            sc("z/last", "# boot: cri\n# expect: e\n# after: *"),
            sc("a/check", "# boot: cri\n# expect: e\n# after: *"),
        ];
        assert!(Plan::new(&scenarios, &Selection::default()).is_err());
    }

    #[test]
    fn the_guests_plan() {
        let scenarios = catalog();
        let plan = Plan::new(&scenarios, &only(&["reboot", "*/etcd-mount/*", "units"])).unwrap();
        let text = plan.guest_text(Stage::Busybox);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "1 start semanifest",
                "1 check crun/etcd-mount/read-file semanifest enforcing crun s0:c1,c2 /var/lib/etcd:/host/etcd:rw deny:etcd_var_t cat /host/etcd/member/snap/db",
                "1 check crun/mnt-mount/other-pod-writes semanifest enforcing crun s0:c3,c4 /var/mnt:/host/mnt:rw allow:x sh -c \"echo x\"",
                "1 check runc/etcd-mount/read-file semanifest enforcing runc s0:c1,c2 /var/lib/etcd:/host/etcd:rw deny:etcd_var_t cat /host/etcd/member/snap/db",
                "1 check runc/mnt-mount/other-pod-writes semanifest enforcing runc s0:c3,c4 /var/mnt:/host/mnt:rw allow:x sh -c \"echo x\"",
                "1 check control/permissive/crun/etcd-mount/read-file semanifest permissive crun s0:c1,c2 /var/lib/etcd:/host/etcd:rw allow:etcd-db-v1 head -n1 /host/etcd/member/snap/db",
                "1 check control/permissive/runc/etcd-mount/read-file semanifest permissive runc s0:c1,c2 /var/lib/etcd:/host/etcd:rw allow:etcd-db-v1 head -n1 /host/etcd/member/snap/db",
                "2 start semanifest",
                "2 run reboot/crun/keeps semanifest enforcing crun - - reboot/{runtime}/keeps.sh kept",
                "2 run reboot/runc/keeps semanifest enforcing runc - - reboot/{runtime}/keeps.sh kept",
                "2 check leaky-control/crun/etcd-mount/read-file leaky enforcing crun s0:c1,c2 /var/lib/etcd:/host/etcd:rw deny:etcd_var_t cat /host/etcd/member/snap/db",
                "2 check leaky-control/runc/etcd-mount/read-file leaky enforcing runc s0:c1,c2 /var/lib/etcd:/host/etcd:rw deny:etcd_var_t cat /host/etcd/member/snap/db",
            ]
        );
        let text = plan.guest_text(Stage::Systemd);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "4 start -",
                "4 run units/a - enforcing - - - units/a.sh e",
                "5 start -",
                "5 run units/a - enforcing - - - units/a.sh e",
            ]
        );
    }

    #[test]
    fn the_repository_plan_runs_each_pod_once() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let scenarios = crate::scenario::discover(&dir).unwrap();
        let plan = Plan::new(&scenarios, &Selection::default()).unwrap();
        assert_eq!(plan.boots, [1, 2, 3, 4, 5, 6, 7]);
        // Under TCG a pod costs seconds: the checks of one pod must not
        // be split by a scenario ordered between them.
        let text = plan.guest_text(Stage::Busybox);
        let mut pods: Vec<String> = Vec::new();
        for line in text.lines().filter(|l| l.contains(" check ")) {
            let f: Vec<&str> = line.split(' ').collect();
            let key = [f[0], f[3], f[4], f[5], f[6], f[7]].join(" ");
            if pods.last() != Some(&key) {
                assert!(!pods.contains(&key), "pod split: {key}\n{text}");
                pods.push(key);
            }
        }
        assert_eq!(pods.len(), 19, "{pods:#?}");
    }

    #[test]
    fn the_list() {
        let scenarios = catalog();
        let text = list(
            &scenarios,
            &only(&["units", "*etcd-mount/read-file", "control/leaky-cil*"]),
        );
        assert_eq!(
            text,
            "{runtime}/etcd-mount/read-file                     1 enforcing  pod, crun+runc, control leaky (boot 2)\n\
             control/permissive/{runtime}/etcd-mount/read-file  1 enforcing  pod, crun+runc, permissive\n\
             units/a                                            4 systemd    control layout-units-off (boot 5)\n\
             control/leaky-cil-rejected-by-build                host         decided on the host\n"
        );
    }
}
