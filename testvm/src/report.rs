//! Verdicts: every scenario the host and the guests reported, judged and
//! printed as one table, then `N passed, N failed`.
//!
//! Rows come from the host's own scenarios and from each console's `@@R`
//! lines, in that order, with each `@@AVC` line under the scenario it
//! explains. The plan says what each reported name is: a scenario as it
//! reported itself, or a control's run of one, which must fail (the leaky
//! policy's must fail because the pod got through). A chosen scenario that
//! never reported fails as "not reported"; one that ran only because
//! another needs it is not shown. The host's whole-run scenarios are
//! decided here too: boot 1's relabel must change labels, boot 2's must
//! change none, and every denial under the leaky control must get through.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::boots::{self, Judged};
use crate::plan::Plan;
use crate::protocol::{self, Kind, Message};

/// One scenario's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub name: String,
    pub expected: String,
    pub observed: String,
    pub passed: bool,
}

impl Row {
    pub fn new(name: &str, expected: &str, observed: impl Into<String>, passed: bool) -> Self {
        Row {
            name: name.to_owned(),
            expected: expected.to_owned(),
            observed: observed.into(),
            passed,
        }
    }

    /// `RESULT  SCENARIO  EXPECTED  OBSERVED`, columns padded to 6, 46 and
    /// 24 bytes.
    pub fn render(&self) -> String {
        let verdict = if self.passed { "PASS" } else { "FAIL" };
        format!(
            "{}  {}  {}  {}",
            pad(verdict, 6),
            pad(&self.name, 46),
            pad(&self.expected, 24),
            self.observed
        )
    }
}

/// `text` followed by spaces up to `width` bytes (never cut), as printf's
/// `%-Ns` pads.
fn pad(text: &str, width: usize) -> String {
    format!("{text}{}", " ".repeat(width.saturating_sub(text.len())))
}

/// A line of the table: a verdict, or the AVC behind the one above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Row(Row),
    Avc(String),
}

#[derive(Debug, Default)]
pub struct Report {
    pub lines: Vec<Line>,
}

#[derive(Default)]
struct RelabelRun {
    relabelled: String,
    described: String,
}

/// The table line a console message gives as the guest reported it: an
/// AVC, a scenario's row, or a FAIL row under its name for a broken `@@R`
/// line; `None` for the other messages.
fn reported(message: Message<'_>) -> Option<Line> {
    match message {
        Message::Avc { text, .. } => Some(Line::Avc(format!("{}  avc: {text}", pad("", 6)))),
        Message::Result(result) => Some(Line::Row(Row::new(
            result.name,
            result.expected,
            result.observed,
            result.passed,
        ))),
        Message::Malformed {
            kind: Kind::Result,
            line,
        } => Some(Line::Row(Row::new(
            protocol::malformed_name(line).unwrap_or("(unreadable result)"),
            "a complete @@R line",
            format!("broken on the console: {line}"),
            false,
        ))),
        _ => None,
    }
}

impl Report {
    /// Judges the host's rows and the consoles (`(boot, text)`, in boot
    /// order) against the plan. Only the boots given are judged.
    pub fn judge(plan: &Plan<'_>, host: &[Row], consoles: &[(u32, String)]) -> Report {
        let mut lines: Vec<Line> = host.iter().cloned().map(Line::Row).collect();
        let mut relabels: BTreeMap<String, RelabelRun> = BTreeMap::new();
        let mut leaked = 0usize;
        let mut seen: HashSet<(u32, String)> = HashSet::new();
        for (boot, console) in consoles {
            let boot = *boot;
            let mut hidden: HashSet<&str> = HashSet::new();
            for line in console.lines() {
                let message = protocol::parse(line);
                match message {
                    Message::Relabel(relabel) => {
                        relabels.insert(
                            relabel.boot.to_owned(),
                            RelabelRun {
                                relabelled: relabel.relabelled.to_owned(),
                                described: format!(
                                    "{} of {} objects relabelled in {} s",
                                    relabel.relabelled, relabel.examined, relabel.seconds
                                ),
                            },
                        );
                    }
                    Message::Result(ref result) => {
                        seen.insert((boot, result.name.to_owned()));
                        let Some(instance) = plan.instance(boot, result.name) else {
                            // Not planned: shown as reported, never dropped.
                            lines.extend(reported(message));
                            continue;
                        };
                        let row = match instance.control.map(|c| c.judged) {
                            // The denial must have failed because the pod
                            // got through, not because something broke.
                            Some(Judged::Leaks) => {
                                let leak = !result.passed && result.observed.starts_with("ALLOWED");
                                leaked += usize::from(leak);
                                Row::new(&instance.row, "ALLOWED (leak)", result.observed, leak)
                            }
                            Some(Judged::Fails) => Row::new(
                                &instance.row,
                                "FAIL",
                                format!(
                                    "{}: {}",
                                    if result.passed { "PASS" } else { "FAIL" },
                                    result.observed
                                ),
                                !result.passed,
                            ),
                            None => Row::new(
                                &instance.row,
                                result.expected,
                                result.observed,
                                result.passed,
                            ),
                        };
                        if instance.selected {
                            lines.push(Line::Row(row));
                        } else {
                            hidden.insert(result.name);
                        }
                    }
                    Message::Avc { name, .. } if hidden.contains(name) => {}
                    Message::Malformed {
                        kind: Kind::Result,
                        line,
                    } => {
                        if let Some(name) = protocol::malformed_name(line) {
                            seen.insert((boot, name.to_owned()));
                        }
                        lines.extend(reported(message));
                    }
                    message => lines.extend(reported(message)),
                }
            }
        }
        let judged: HashSet<u32> = consoles.iter().map(|(boot, _)| *boot).collect();
        for instance in &plan.instances {
            if instance.selected
                && judged.contains(&instance.boot)
                && !seen.contains(&(instance.boot, instance.reported.clone()))
            {
                let expected = match instance.control.map(|c| c.judged) {
                    Some(Judged::Leaks) => "ALLOWED (leak)",
                    Some(Judged::Fails) => "FAIL",
                    None => plan.scenarios[instance.scenario].expect.as_str(),
                };
                lines.push(Line::Row(Row::new(
                    &instance.row,
                    expected,
                    "not reported",
                    false,
                )));
            }
        }
        // The relabel rows, each from the boot the table gives it.
        for (name, expected, good) in [
            (
                boots::BOOT_1_LABELS,
                "relabelled > 0",
                labels_something as fn(&str) -> bool,
            ),
            (
                boots::BOOT_2_CHANGES_NOTHING,
                "relabelled = 0",
                |n: &str| n == "0",
            ),
        ] {
            let boot = boots::HOST_SCENARIOS.iter().find_map(|h| match h.needs {
                boots::HostNeeds::Boot(n) if h.name == name => Some(n.to_string()),
                _ => None,
            });
            if plan.host_chosen(name) {
                let run = boot.and_then(|b| relabels.remove(&b));
                lines.push(Line::Row(relabel_row(name, expected, run, good)));
            }
        }
        if plan.host_chosen(boots::LEAKY_BREAKS_DENIALS) {
            let planned = plan
                .instances
                .iter()
                .filter(|i| i.control.is_some_and(|c| c.judged == Judged::Leaks))
                .count();
            lines.push(Line::Row(Row::new(
                boots::LEAKY_BREAKS_DENIALS,
                "every denial fails",
                format!("{leaked} of {planned} denial checks failed"),
                planned > 0 && leaked == planned,
            )));
        }
        Report { lines }
    }

    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.lines.iter().filter_map(|line| match line {
            Line::Row(row) => Some(row),
            Line::Avc(_) => None,
        })
    }

    pub fn passed(&self) -> usize {
        self.rows().filter(|row| row.passed).count()
    }

    pub fn failed(&self) -> usize {
        self.rows().filter(|row| !row.passed).count()
    }

    /// The table as printed: a blank line, the header, every line, a blank
    /// line and `N passed, N failed`.
    pub fn render(&self) -> String {
        let mut text = format!(
            "\n{}  {}  {}  OBSERVED\n",
            pad("RESULT", 6),
            pad("SCENARIO", 46),
            pad("EXPECTED", 24)
        );
        for line in &self.lines {
            match line {
                Line::Row(row) => text.push_str(&row.render()),
                Line::Avc(avc) => text.push_str(avc),
            }
            text.push('\n');
        }
        text.push_str(&format!(
            "\n{} passed, {} failed\n",
            self.passed(),
            self.failed()
        ));
        text
    }
}

fn labels_something(relabelled: &str) -> bool {
    relabelled.parse::<f64>().is_ok_and(|n| n > 0.0)
}

fn relabel_row(
    name: &str,
    expected: &str,
    run: Option<RelabelRun>,
    good: impl Fn(&str) -> bool,
) -> Row {
    match run {
        Some(run) => {
            let passed = good(&run.relabelled);
            Row::new(name, expected, run.described, passed)
        }
        None => Row::new(name, expected, "no report", false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Selection;
    use crate::scenario::{parse, Scenario};

    fn console(lines: &[&str]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn scenarios() -> Vec<Scenario> {
        [
            ("relabel/boot-1/etcd-data-label", "# boot: enforcing\n# expect: etcd_var_t\ntrue\n"),
            (
                "{runtime}/etcd-read",
                "# boot: enforcing\n# pod: s0:c1,c2 /var:/host/var:rw\n# expect: deny:etcd_var_t\n# control: leaky\ncat /host/var/lib/etcd/db\n",
            ),
            (
                "{runtime}/pods-write",
                "# boot: enforcing\n# pod: s0:c1,c2 /var:/host/var:rw\n# expect: allow:ok\nsh -c \"echo ok\"\n",
            ),
            ("units/a", "# boot: systemd\n# expect: x\n# control: layout-units-off\ntrue\n"),
            ("units/b", "# boot: systemd\n# expect: x\n# control: layout-units-off\ntrue\n"),
            ("units/c", "# boot: systemd\n# expect: x\ntrue\n"),
        ]
        .iter()
        .map(|(name, text)| parse(name, text).unwrap())
        .collect()
    }

    fn only(patterns: &[&str]) -> Selection {
        Selection {
            patterns: patterns.iter().map(|p| p.to_string()).collect(),
            stage: None,
        }
    }

    fn healthy() -> Vec<(u32, String)> {
        vec![
            (
                1,
                console(&[
                    "[    0.5] Linux version 6.1.0",
                    "@@STAGE|1.0 s: initramfs",
                    "@@RELABEL|1|512|530|0.08|410",
                    "@@R|crun/etcd-read|denied|EACCES + AVC|PASS",
                    "@@AVC|crun/etcd-read|avc:  denied { read } for comm=\"cat\"",
                    "@@R|crun/pods-write|allowed|allowed: ok|PASS",
                    "@@R|runc/etcd-read|denied|EACCES + AVC|PASS",
                    "@@R|runc/pods-write|allowed|allowed: ok|PASS",
                    "@@HB|12.0",
                    "@@R|relabel/boot-1/etcd-data-label|system_u:object_r:etcd_var_t:s0|a -> b|PASS",
                    "@@END|1|5",
                ]),
            ),
            (
                2,
                console(&[
                    "@@RELABEL|2|0|530|0.05|300",
                    "@@R|leaky-control/crun/etcd-read|denied|ALLOWED: etcd-db-v1|FAIL",
                    "@@R|leaky-control/runc/etcd-read|denied|ALLOWED: etcd-db-v1|FAIL",
                    "@@END|2|2",
                ]),
            ),
        ]
    }

    fn row<'a>(report: &'a Report, name: &str) -> &'a Row {
        report
            .rows()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no row {name}"))
    }

    #[test]
    fn a_healthy_run_passes_with_the_table_as_before() {
        let scenarios = scenarios();
        let plan = Plan::new(&scenarios, &Selection::default()).unwrap();
        let host = [Row::new(
            "control/leaky-cil-rejected-by-build",
            "build fails (neverallow)",
            "rejected, neverallow on: etcd_var_t",
            true,
        )];
        // The systemd boots are not judged: no console of theirs given.
        let report = Report::judge(&plan, &host, &healthy());
        assert_eq!(
            (report.passed(), report.failed()),
            (11, 0),
            "{}",
            report.render()
        );
        let text = report.render();
        // The exact layout of the bash harness's printf/awk table.
        assert!(text.starts_with(
            "\nRESULT  SCENARIO                                        EXPECTED                  OBSERVED\n\
             PASS    control/leaky-cil-rejected-by-build             build fails (neverallow)  rejected, neverallow on: etcd_var_t\n"
        ), "{text}");
        assert!(text.contains(
            "PASS    crun/etcd-read                                  denied                    EACCES + AVC\n        avc: avc:  denied { read } for comm=\"cat\"\n"
        ), "{text}");
        assert!(text.contains("PASS    leaky-control/crun/etcd-read                    ALLOWED (leak)            ALLOWED: etcd-db-v1\n"), "{text}");
        assert!(text.contains("PASS    relabel/boot-1-labels-the-disk                  relabelled > 0            512 of 530 objects relabelled in 0.08 s\n"), "{text}");
        assert!(text.contains("PASS    relabel/boot-2-nothing-to-change                relabelled = 0            0 of 530 objects relabelled in 0.05 s\n"), "{text}");
        assert!(text.contains("PASS    control/leaky-policy-breaks-denials             every denial fails        2 of 2 denial checks failed\n"), "{text}");
        assert!(text.ends_with("\n11 passed, 0 failed\n"), "{text}");
    }

    #[test]
    fn a_leak_must_be_an_allowed_failure() {
        let scenarios = scenarios();
        let plan = Plan::new(&scenarios, &Selection::default()).unwrap();
        let mut consoles = healthy();
        // The denial held under the leaky policy (PASS), and one failed
        // for another reason than ALLOWED: neither proves the control.
        consoles[1].1 = console(&[
            "@@RELABEL|2|0|530|0.05|300",
            "@@R|leaky-control/crun/etcd-read|denied|EACCES + AVC|PASS",
            "@@R|leaky-control/runc/etcd-read|denied|ls: error|FAIL",
        ]);
        let report = Report::judge(&plan, &[], &consoles);
        assert!(!row(&report, "leaky-control/crun/etcd-read").passed);
        assert!(!row(&report, "leaky-control/runc/etcd-read").passed);
        let control = row(&report, "control/leaky-policy-breaks-denials");
        assert_eq!(control.observed, "0 of 2 denial checks failed");
        assert!(!control.passed);
        // One that never reported counts against it too, as not reported.
        consoles[1].1 = console(&["@@R|leaky-control/crun/etcd-read|denied|ALLOWED: x|FAIL"]);
        let report = Report::judge(&plan, &[], &consoles);
        let missing = row(&report, "leaky-control/runc/etcd-read");
        assert_eq!(
            (
                missing.expected.as_str(),
                missing.observed.as_str(),
                missing.passed
            ),
            ("ALLOWED (leak)", "not reported", false)
        );
        assert_eq!(
            row(&report, "control/leaky-policy-breaks-denials").observed,
            "1 of 2 denial checks failed"
        );
        // No boot at all proves nothing either.
        let report = Report::judge(&plan, &[], &[]);
        assert!(!row(&report, "control/leaky-policy-breaks-denials").passed);
        assert_eq!(report.failed(), 3);
    }

    #[test]
    fn relabel_verdicts() {
        let scenarios = scenarios();
        let plan = Plan::new(&scenarios, &only(&["relabel/boot-*-*"])).unwrap();
        let report = Report::judge(
            &plan,
            &[],
            &[(
                1,
                console(&["@@RELABEL|1|0|530|0.08|410", "@@RELABEL|2|3|530|0.05|300"]),
            )],
        );
        assert!(!row(&report, "relabel/boot-1-labels-the-disk").passed);
        assert!(!row(&report, "relabel/boot-2-nothing-to-change").passed);
        let report = Report::judge(&plan, &[], &[(1, console(&["@@RELABEL|1|12"]))]);
        assert_eq!(
            row(&report, "relabel/boot-1-labels-the-disk").observed,
            "no report"
        );
    }

    #[test]
    fn broken_lines_fail_by_name_and_a_dead_guest_leaves_a_partial_one() {
        let scenarios = scenarios();
        let plan = Plan::new(&scenarios, &only(&["*/etcd-read"])).unwrap();
        // A kernel message broke one line; the guest then died mid-line
        // (no line break at the end of the console).
        let consoles = vec![(
            1,
            "@@R|crun/etcd-read|denied|EACC[   12.3] audit: type=1400\n@@R|runc/etcd-read|den"
                .to_owned(),
        )];
        let report = Report::judge(&plan, &[], &consoles);
        let broken = row(&report, "crun/etcd-read");
        assert!(!broken.passed);
        assert!(broken.observed.contains("audit: type=1400"), "{broken:?}");
        let partial = row(&report, "runc/etcd-read");
        assert!(!partial.passed);
        assert_eq!(
            partial.observed,
            "broken on the console: @@R|runc/etcd-read|den"
        );
        // Each once: a broken line is not also "not reported".
        assert!(
            report.render().ends_with("\n0 passed, 2 failed\n"),
            "{}",
            report.render()
        );
    }

    #[test]
    fn a_control_row_passes_only_on_a_reported_failure() {
        let scenarios = scenarios();
        let plan = Plan::new(&scenarios, &only(&["units"])).unwrap();
        let boot5 = console(&[
            "@@R|units/a|x|missing: /var/lib/etcd|FAIL",
            "@@R|units/b|x|all there|PASS",
            "@@END|5|2",
        ]);
        let boot4 = console(&["@@R|units/a|x|ok|PASS", "@@R|units/c|x|ok|PASS"]);
        let report = Report::judge(&plan, &[], &[(4, boot4), (5, boot5)]);
        let verdicts: Vec<(&str, bool, &str)> = report
            .rows()
            .map(|r| (r.name.as_str(), r.passed, r.observed.as_str()))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("units/a", true, "ok"),
                ("units/c", true, "ok"),
                (
                    "control/layout-units-off/units/a",
                    true,
                    "FAIL: missing: /var/lib/etcd"
                ),
                ("control/layout-units-off/units/b", false, "PASS: all there"),
                // Chosen, in a judged boot, never reported.
                ("units/b", false, "not reported"),
            ]
        );
    }

    #[test]
    fn what_runs_only_because_it_is_needed_is_not_shown() {
        let scenarios: Vec<Scenario> = [
            ("a", "# boot: enforcing\n# expect: e\ntrue\n"),
            ("b", "# boot: enforcing\n# expect: e\n# needs: a\ntrue\n"),
        ]
        .iter()
        .map(|(name, text)| parse(name, text).unwrap())
        .collect();
        let plan = Plan::new(&scenarios, &only(&["b"])).unwrap();
        let boot = console(&[
            "@@R|a|e|broken|FAIL",
            "@@AVC|a|denied { read }",
            "@@R|b|e|fine|PASS",
            "@@R|unplanned|e|shown as reported|PASS",
        ]);
        let report = Report::judge(&plan, &[], &[(1, boot)]);
        let text = report.render();
        assert!(
            !text.contains("broken") && !text.contains("denied"),
            "{text}"
        );
        let names: Vec<&str> = report.rows().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["b", "unplanned"]);
    }

    #[test]
    fn padding_counts_bytes_and_never_cuts() {
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(pad("abcdef", 4), "abcdef");
        assert_eq!(pad("→", 4), "→ ");
    }
}
