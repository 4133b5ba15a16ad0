//! Hang detection for one boot. The console grows in a file; every second
//! the boot loop feeds the new bytes here and asks for a verdict. A boot is
//! hung when the kernel prints a hang sign, when the console is silent for
//! `silence` seconds, when only heartbeats (`@@HB|`) come for `progress`
//! seconds, or when it runs past `timeout`.

use std::time::Duration;

/// The limits, in seconds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub silence: u64,
    pub progress: u64,
    pub timeout: u64,
}

/// Kernel lines that mean the guest is hung; a guest that shows one will
/// not recover in useful time, so it is stopped at once.
pub fn is_hang_sign(line: &str) -> bool {
    [
        "BUG: soft lockup",
        "self-detected stall",
        "detected stalls on CPU",
    ]
    .iter()
    .any(|sign| line.contains(sign))
        || rcu_detected(line)
        || blocked_for_more_than(line)
}

/// `rcu_NAME detected` or `rcu_NAME self-detected`.
fn rcu_detected(line: &str) -> bool {
    line.match_indices("rcu_").any(|(at, _)| {
        let rest = &line[at + 4..];
        let name = rest.bytes().take_while(u8::is_ascii_lowercase).count();
        name > 0
            && (rest[name..].starts_with(" detected") || rest[name..].starts_with(" self-detected"))
    })
}

/// `blocked for more than N seconds`.
fn blocked_for_more_than(line: &str) -> bool {
    line.match_indices("blocked for more than ")
        .any(|(at, sign)| {
            let rest = &line[at + sign.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            digits > 0 && rest[digits..].starts_with(" seconds")
        })
}

/// The state of one boot's watch: times are offsets from the boot's start.
#[derive(Debug)]
pub struct Watchdog {
    limits: Limits,
    last_output: Duration,
    last_progress: Duration,
    sign: Option<String>,
    pending: Vec<u8>,
}

impl Watchdog {
    pub fn new(limits: Limits) -> Self {
        Watchdog {
            limits,
            last_output: Duration::ZERO,
            last_progress: Duration::ZERO,
            sign: None,
            pending: Vec::new(),
        }
    }

    /// Console bytes that arrived by `now`; returns the lines they
    /// completed (without line breaks or a trailing `\r`).
    pub fn feed(&mut self, now: Duration, bytes: &[u8]) -> Vec<String> {
        if bytes.is_empty() {
            return Vec::new();
        }
        self.last_output = now;
        self.pending.extend_from_slice(bytes);
        let mut lines = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.pending.drain(..=end).collect();
            let text = String::from_utf8_lossy(&raw[..end]);
            let line = text.strip_suffix('\r').unwrap_or(&text).to_owned();
            if !line.starts_with("@@HB|") {
                self.last_progress = now;
            }
            if self.sign.is_none() && is_hang_sign(&line) {
                self.sign = Some(line.clone());
            }
            lines.push(line);
        }
        lines
    }

    /// Why the boot counts as hung at `now`, if it does.
    pub fn verdict(&self, now: Duration) -> Option<String> {
        let partial = String::from_utf8_lossy(&self.pending);
        let sign = self
            .sign
            .clone()
            .or_else(|| is_hang_sign(&partial).then(|| partial.trim_end_matches('\r').to_owned()));
        let limits = &self.limits;
        if let Some(sign) = sign {
            Some(format!("kernel reports a hang: {sign}"))
        } else if now.saturating_sub(self.last_output).as_secs() >= limits.silence {
            Some(format!("no console output for {} s", limits.silence))
        } else if now.saturating_sub(self.last_progress).as_secs() >= limits.progress {
            Some(format!(
                "only heartbeats for {} s (the guest is alive but its suite does not advance)",
                limits.progress
            ))
        } else if now.as_secs() >= limits.timeout {
            Some(format!(
                "still running after the {} s boot timeout",
                limits.timeout
            ))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        silence: 40,
        progress: 60,
        timeout: 300,
    };

    fn s(seconds: u64) -> Duration {
        Duration::from_secs(seconds)
    }

    #[test]
    fn hang_signs_as_the_kernel_prints_them() {
        for line in [
            "[   23.1] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [runc:412]",
            "[   40.0] rcu: INFO: rcu_preempt self-detected stall on CPU",
            "[   40.0] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
            "[  242.9] INFO: task runc:init:399 blocked for more than 120 seconds.",
            "rcu_bh detected something",
        ] {
            assert!(is_hang_sign(line), "{line}");
        }
        // Controls: near misses are no hang.
        for line in [
            "[    0.1] rcu: Hierarchical RCU implementation.",
            "blocked for more than a while",
            "rcu_ detected",
            "@@STAGE|12.0 s: enforcing",
        ] {
            assert!(!is_hang_sign(line), "{line}");
        }
    }

    #[test]
    fn a_healthy_boot_is_never_hung() {
        let mut dog = Watchdog::new(LIMITS);
        for t in 0..200 {
            dog.feed(s(t), format!("@@STAGE|{t} s: working\r\n").as_bytes());
            assert_eq!(dog.verdict(s(t)), None, "at {t} s");
        }
    }

    #[test]
    fn the_kernel_sign_stops_the_boot_at_once() {
        let mut dog = Watchdog::new(LIMITS);
        let lines = dog.feed(
            s(5),
            b"@@STAGE|x\r\n<0>watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [semanifest.inject:1]\r\n",
        );
        assert_eq!(lines[0], "@@STAGE|x");
        assert_eq!(
            dog.verdict(s(5)).unwrap(),
            "kernel reports a hang: <0>watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [semanifest.inject:1]"
        );
        // Also from a line not finished yet.
        let mut dog = Watchdog::new(LIMITS);
        dog.feed(s(5), b"[ 9.9] watchdog: BUG: soft lockup - CPU#0");
        assert!(dog
            .verdict(s(5))
            .unwrap()
            .starts_with("kernel reports a hang: [ 9.9]"));
    }

    #[test]
    fn silence_then_heartbeats_only() {
        let mut dog = Watchdog::new(LIMITS);
        dog.feed(s(1), b"@@STAGE|up\n");
        assert_eq!(dog.verdict(s(40)), None);
        assert_eq!(dog.verdict(s(41)).unwrap(), "no console output for 40 s");

        let mut dog = Watchdog::new(LIMITS);
        dog.feed(s(1), b"@@STAGE|up\n");
        for t in (11..=51).step_by(10) {
            dog.feed(s(t), b"@@HB|1.0\n");
            assert_eq!(dog.verdict(s(t)), None, "at {t} s");
        }
        dog.feed(s(61), b"@@HB|2.0\n");
        assert!(dog
            .verdict(s(61))
            .unwrap()
            .starts_with("only heartbeats for 60 s"));
    }

    #[test]
    fn the_ceiling() {
        let limits = Limits {
            silence: 1000,
            progress: 1000,
            timeout: 300,
        };
        let mut dog = Watchdog::new(limits);
        dog.feed(s(299), b"@@STAGE|slow\n");
        assert_eq!(dog.verdict(s(299)), None);
        assert_eq!(
            dog.verdict(s(300)).unwrap(),
            "still running after the 300 s boot timeout"
        );
    }
}
