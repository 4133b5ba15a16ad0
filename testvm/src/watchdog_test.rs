//! `testvm/run --watchdog-test` (testvm/watchdog-test): proves the
//! watchdog. Each way a guest can hang (a kernel soft-lockup line, a
//! silent console, heartbeats with no progress) is injected into boot 1 of
//! its own run, with short limits, and must end that run early with exit 1
//! and a `boot-1/no-hang` FAIL naming the cause. The control is the plain
//! suite, which passes the same boots (`boot-N/no-hang` PASS); boot 2 of
//! each run here shows a run still reports after a hang. Each run boots
//! only boots 1 and 2 (`--only` a boot-2 scenario, which needs boot 1's
//! disk): the other boots have nothing to show here.

use std::fs::{self, File};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::cli::Hang;
use crate::report::Row;
use crate::Paths;

/// Short limits so the three cases stay cheap; each is still far above
/// the longest quiet stretch of a healthy guest (heartbeats every 10 s).
const LIMITS: [&str; 6] = ["--silence", "40", "--progress", "60", "--timeout", "300"];
/// A scenario of boot 2, so that boots 1 and 2 run and nothing else.
const ONLY: [&str; 2] = ["--only", "relabel/boot-2/etcd-data-label"];

/// Whether `observed` names the injected cause, as the limits above make
/// the watchdog say it.
fn names_the_cause(hang: Hang, observed: &str) -> bool {
    match hang {
        Hang::Lockup => {
            observed.starts_with("kernel reports a hang: ") && observed.contains("BUG: soft lockup")
        }
        Hang::Silence => observed == "no console output for 40 s",
        Hang::Stuck => observed.starts_with("only heartbeats for 60 s"),
    }
}

/// What the cause should look like, for a failure message.
fn expected(hang: Hang) -> &'static str {
    match hang {
        Hang::Lockup => "kernel reports a hang: ... BUG: soft lockup",
        Hang::Silence => "no console output for 40 s",
        Hang::Stuck => "only heartbeats for 60 s",
    }
}

pub fn run(paths: &Paths) -> Result<bool> {
    let exe = std::env::current_exe().context("cannot find the running harness")?;
    fs::create_dir_all(&paths.cache)?;
    let mut all_passed = true;
    for hang in Hang::ALL {
        let kind = hang.name();
        let log = paths.cache.join(format!("watchdog-{kind}.log"));
        let output = File::create(&log)?;
        let started = Instant::now();
        let status = Command::new(&exe)
            .args(LIMITS)
            .args(ONLY)
            .args(["--inject-hang", kind])
            .stdout(output.try_clone()?)
            .stderr(output)
            .status()
            .context("cannot run the harness")?;
        let took = started.elapsed().as_secs();
        let rows: Vec<Row> = fs::read(paths.work.join("results.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let verdict = rows
            .iter()
            .find(|r| r.name == "boot-1/no-hang" && !r.passed);
        match verdict {
            Some(row) if status.code() == Some(1) && names_the_cause(hang, &row.observed) => {
                let rendered = row.render();
                let rest = rendered.split_once("no-hang").map_or("", |(_, rest)| rest);
                println!("PASS  watchdog/{kind}  stopped with exit 1 after {took} s: {rest}");
            }
            _ => {
                all_passed = false;
                println!(
                    "FAIL  watchdog/{kind}  exit {} after {took} s; expected a boot-1/no-hang FAIL matching '{}'",
                    status.code().map_or("by signal".to_owned(), |c| c.to_string()),
                    expected(hang)
                );
                let text = fs::read_to_string(&log).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                for line in &lines[lines.len().saturating_sub(40)..] {
                    println!("{line}");
                }
            }
        }
    }
    Ok(all_passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_boots_1_and_2_only() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let scenarios = crate::scenario::discover(&dir).unwrap();
        let selection = crate::plan::Selection {
            patterns: vec![ONLY[1].to_owned()],
            stage: None,
        };
        let plan = crate::plan::Plan::new(&scenarios, &selection).unwrap();
        assert_eq!(plan.boots, [1, 2]);
    }

    #[test]
    fn each_cause_is_recognised_and_not_another() {
        let lockup = "kernel reports a hang: <0>watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [semanifest.inject:1]";
        let silence = "no console output for 40 s";
        let stuck = "only heartbeats for 60 s (the guest is alive but its suite does not advance)";
        assert!(names_the_cause(Hang::Lockup, lockup));
        assert!(names_the_cause(Hang::Silence, silence));
        assert!(names_the_cause(Hang::Stuck, stuck));
        for (hang, other) in [
            (Hang::Lockup, silence),
            (Hang::Silence, stuck),
            (Hang::Stuck, lockup),
        ] {
            assert!(!names_the_cause(hang, other), "{hang:?} {other}");
        }
        assert!(!names_the_cause(
            Hang::Silence,
            "no console output for 120 s"
        ));
    }
}
