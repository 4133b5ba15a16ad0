//! Verdicts: every scenario the host and the guests reported, judged and
//! printed as one table, then `N passed, N failed`.
//!
//! Rows come from the host's own scenarios and from each console's `@@R`
//! lines, in that order, with each `@@AVC` line under the scenario it
//! explains. Three rows are decided here from the whole run: boot 1's
//! relabel must change labels, boot 2's must change none, and under the
//! leaky control policy every denial check must fail because the pod got
//! through.

use serde::{Deserialize, Serialize};

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

/// Where the leaky control's scenarios are named, and what they expect
/// under the sound policy.
const LEAKY_PREFIX: &str = "leaky-control/";

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
    /// Judges the host's rows and the consoles' lines (boot 1 first).
    pub fn judge(host: &[Row], consoles: &[String]) -> Report {
        let mut lines: Vec<Line> = host.iter().cloned().map(Line::Row).collect();
        let mut relabels: [Option<RelabelRun>; 2] = [None, None];
        let (mut leak_total, mut leak_failed) = (0u32, 0u32);
        for line in consoles.iter().flat_map(|console| console.lines()) {
            match protocol::parse(line) {
                Message::Relabel(relabel) => {
                    let run = RelabelRun {
                        relabelled: relabel.relabelled.to_owned(),
                        described: format!(
                            "{} of {} objects relabelled in {} s",
                            relabel.relabelled, relabel.examined, relabel.seconds
                        ),
                    };
                    match relabel.boot {
                        "1" => relabels[0] = Some(run),
                        "2" => relabels[1] = Some(run),
                        _ => {}
                    }
                }
                Message::Result(result)
                    if result.name.starts_with(LEAKY_PREFIX) && result.expected == "denied" =>
                {
                    // Under the leaky policy every denial check must fail,
                    // and fail because the pod got through, not because
                    // something broke.
                    leak_total += 1;
                    let leaked = !result.passed && result.observed.starts_with("ALLOWED");
                    leak_failed += u32::from(leaked);
                    lines.push(Line::Row(Row::new(
                        result.name,
                        "ALLOWED (leak)",
                        result.observed,
                        leaked,
                    )));
                }
                message => lines.extend(reported(message)),
            }
        }
        let [boot1, boot2] = relabels;
        lines.push(Line::Row(relabel_row(
            "relabel/boot-1-labels-the-disk",
            "relabelled > 0",
            boot1,
            |relabelled| relabelled.parse::<f64>().is_ok_and(|n| n > 0.0),
        )));
        lines.push(Line::Row(relabel_row(
            "relabel/boot-2-nothing-to-change",
            "relabelled = 0",
            boot2,
            |relabelled| relabelled == "0",
        )));
        lines.push(Line::Row(Row::new(
            "control/leaky-policy-breaks-denials",
            "every denial fails",
            format!("{leak_failed} of {leak_total} denial checks failed"),
            leak_total > 0 && leak_failed == leak_total,
        )));
        Report { lines }
    }

    /// The `--systemd` stage's table: the host's rows, then each console's
    /// `@@R` lines as reported (a broken one fails under its name), with
    /// their `@@AVC` lines; none of the suite's whole-run rows.
    pub fn scenarios(host: &[Row], consoles: &[String]) -> Report {
        let mut lines: Vec<Line> = host.iter().cloned().map(Line::Row).collect();
        let reported_lines = consoles
            .iter()
            .flat_map(|console| console.lines())
            .filter_map(|line| reported(protocol::parse(line)));
        lines.extend(reported_lines);
        Report { lines }
    }

    /// A control boot's table: for each scenario in `must_fail`, a row
    /// `PREFIX/NAME` that passes only when the guest reported the scenario
    /// and it failed. The boot's other results are not judged.
    pub fn control(host: &[Row], console: &str, prefix: &str, must_fail: &[&str]) -> Report {
        let mut lines: Vec<Line> = host.iter().cloned().map(Line::Row).collect();
        for name in must_fail {
            let reported = console
                .lines()
                .find_map(|line| match protocol::parse(line) {
                    Message::Result(result) if result.name == *name => Some(result),
                    _ => None,
                });
            let row_name = format!("{prefix}/{name}");
            lines.push(Line::Row(match reported {
                Some(result) => Row::new(
                    &row_name,
                    "FAIL",
                    format!(
                        "{}: {}",
                        if result.passed { "PASS" } else { "FAIL" },
                        result.observed
                    ),
                    !result.passed,
                ),
                None => Row::new(&row_name, "FAIL", "not reported", false),
            }));
        }
        Report { lines }
    }

    /// Appends `other`'s lines.
    pub fn extend(&mut self, other: Report) {
        self.lines.extend(other.lines);
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

    fn console(lines: &[&str]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn healthy() -> Vec<String> {
        vec![
            console(&[
                "[    0.5] Linux version 6.1.0",
                "@@STAGE|1.0 s: initramfs",
                "@@RELABEL|1|512|530|0.08|410",
                "@@R|relabel/boot-1/etcd-data-label|system_u:object_r:etcd_var_t:s0|a -> b|PASS",
                "@@R|pod/crun/etcd-read|denied|EACCES + AVC|PASS",
                "@@AVC|pod/crun/etcd-read|avc:  denied { read } for comm=\"cat\"",
                "@@HB|12.0",
                "@@END|1|2",
            ]),
            console(&[
                "@@RELABEL|2|0|530|0.05|300",
                "@@R|leaky-control/crun/etcd-read|denied|ALLOWED: etcd-db-v1|FAIL",
                "@@R|leaky-control/crun/etcd-list|denied|ALLOWED: member|FAIL",
                "@@END|2|2",
            ]),
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
        let host = [Row::new(
            "control/leaky-cil-rejected-by-build",
            "build fails (neverallow)",
            "rejected, neverallow on: etcd_var_t",
            true,
        )];
        let report = Report::judge(&host, &healthy());
        assert_eq!(
            (report.passed(), report.failed()),
            (8, 0),
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
            "PASS    pod/crun/etcd-read                              denied                    EACCES + AVC\n        avc: avc:  denied { read } for comm=\"cat\"\n"
        ), "{text}");
        assert!(text.contains("PASS    leaky-control/crun/etcd-read                    ALLOWED (leak)            ALLOWED: etcd-db-v1\n"), "{text}");
        assert!(text.contains("PASS    relabel/boot-1-labels-the-disk                  relabelled > 0            512 of 530 objects relabelled in 0.08 s\n"), "{text}");
        assert!(text.contains("PASS    relabel/boot-2-nothing-to-change                relabelled = 0            0 of 530 objects relabelled in 0.05 s\n"), "{text}");
        assert!(text.contains("PASS    control/leaky-policy-breaks-denials             every denial fails        2 of 2 denial checks failed\n"), "{text}");
        assert!(text.ends_with("\n8 passed, 0 failed\n"), "{text}");
    }

    #[test]
    fn a_leak_must_be_an_allowed_failure() {
        let mut consoles = healthy();
        // The denial held under the leaky policy (PASS), and one failed
        // for another reason than ALLOWED: neither proves the control.
        consoles[1] = console(&[
            "@@RELABEL|2|0|530|0.05|300",
            "@@R|leaky-control/crun/etcd-read|denied|EACCES + AVC|PASS",
            "@@R|leaky-control/crun/etcd-list|denied|ls: error|FAIL",
            "@@R|leaky-control/crun/pods-write|allowed|ok|PASS",
        ]);
        let report = Report::judge(&[], &consoles);
        assert!(!row(&report, "leaky-control/crun/etcd-read").passed);
        assert!(!row(&report, "leaky-control/crun/etcd-list").passed);
        assert!(
            row(&report, "leaky-control/crun/pods-write").passed,
            "not a denial: as reported"
        );
        let control = row(&report, "control/leaky-policy-breaks-denials");
        assert_eq!(control.observed, "0 of 2 denial checks failed");
        assert!(!control.passed);
        // No denial checks at all proves nothing either.
        let report = Report::judge(&[], &[]);
        assert!(!row(&report, "control/leaky-policy-breaks-denials").passed);
        assert_eq!(report.failed(), 3);
    }

    #[test]
    fn relabel_verdicts() {
        let report = Report::judge(
            &[],
            &[console(&[
                "@@RELABEL|1|0|530|0.08|410",
                "@@RELABEL|2|3|530|0.05|300",
            ])],
        );
        assert!(!row(&report, "relabel/boot-1-labels-the-disk").passed);
        assert!(!row(&report, "relabel/boot-2-nothing-to-change").passed);
        let report = Report::judge(&[], &[console(&["@@RELABEL|1|12"])]);
        assert_eq!(
            row(&report, "relabel/boot-1-labels-the-disk").observed,
            "no report"
        );
    }

    #[test]
    fn broken_lines_fail_by_name_and_a_dead_guest_leaves_a_partial_one() {
        // A kernel message broke one line; the guest then died mid-line
        // (no line break at the end of the console).
        let consoles = vec![
            "@@R|pod/runc/etcd-read|denied|EACC[   12.3] audit: type=1400\n@@R|pod/runc/etcd-list|den".to_owned(),
        ];
        let report = Report::judge(&[], &consoles);
        let broken = row(&report, "pod/runc/etcd-read");
        assert!(!broken.passed);
        assert!(broken.observed.contains("audit: type=1400"), "{broken:?}");
        let partial = row(&report, "pod/runc/etcd-list");
        assert!(!partial.passed);
        assert_eq!(
            partial.observed,
            "broken on the console: @@R|pod/runc/etcd-list|den"
        );
        assert!(report.render().ends_with("\n0 passed, 5 failed\n"));
    }

    #[test]
    fn the_systemd_table_is_the_reported_rows_only() {
        let host = [Row::new(
            "boot-1/no-hang",
            "no hang",
            "finished in 9 s",
            true,
        )];
        let boot = console(&[
            "[    1.0] systemd[1]: Successfully loaded SELinux policy",
            "@@R|units/apply-made-the-tree|26 dirs labelled|26 of 26 as declared|PASS",
            "@@R|units/var-run-tmpfs-labelled|tmpfs x|/var/run -> /run, ext2/ext3, y|FAIL",
            "@@AVC|units/var-run-tmpfs-labelled|denied { read }",
            "@@R|units/relabel-before-runt",
            "@@END|1|3",
        ]);
        let report = Report::scenarios(&host, &[boot]);
        let names: Vec<&str> = report.rows().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "boot-1/no-hang",
                "units/apply-made-the-tree",
                "units/var-run-tmpfs-labelled",
                "units/relabel-before-runt",
            ]
        );
        assert_eq!((report.passed(), report.failed()), (2, 2));
        let text = report.render();
        assert!(text.contains("avc: denied { read }"), "{text}");
        assert!(!text.contains("relabel/boot-1"), "{text}");
        assert!(text.ends_with("\n2 passed, 2 failed\n"), "{text}");
    }

    #[test]
    fn a_control_row_passes_only_on_a_reported_failure() {
        let boot = console(&[
            "@@R|units/a|x|missing: /var/lib/etcd|FAIL",
            "@@R|units/b|x|all there|PASS",
            "@@R|units/c|x|not judged|FAIL",
            "@@END|5|3",
        ]);
        let report = Report::control(
            &[],
            &boot,
            "control/masked",
            &["units/a", "units/b", "units/d"],
        );
        let verdicts: Vec<(&str, bool, &str)> = report
            .rows()
            .map(|r| (r.name.as_str(), r.passed, r.observed.as_str()))
            .collect();
        assert_eq!(
            verdicts,
            [
                (
                    "control/masked/units/a",
                    true,
                    "FAIL: missing: /var/lib/etcd"
                ),
                ("control/masked/units/b", false, "PASS: all there"),
                ("control/masked/units/d", false, "not reported"),
            ]
        );
    }

    #[test]
    fn padding_counts_bytes_and_never_cuts() {
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(pad("abcdef", 4), "abcdef");
        assert_eq!(pad("→", 4), "→ ");
    }
}
