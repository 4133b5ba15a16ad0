//! The guest's `@@` lines on the serial console (testvm/guest/suite):
//!
//! ```text
//! @@STAGE|text                                         progress
//! @@RELABEL|boot|relabelled|examined|seconds|wall ms   relabel pass
//! @@R|name|expected|observed|PASS|FAIL                 one scenario
//! @@AVC|name|kernel line                               the denial behind a scenario
//! @@END|boot|N                                         the boot finished, after N @@R lines
//! @@HB|uptime                                          heartbeat, every 10 s
//! @@FATAL|text                                         the suite gave up
//! @@PROBE                                              the KVM probe boot got this far
//! ```
//!
//! Kernel messages share the console and can break a line, and a guest
//! can die in the middle of one: a line that starts like a message but does
//! not parse is [`Message::Malformed`], never dropped.

/// One console line, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    Stage(&'a str),
    Fatal(&'a str),
    Relabel(Relabel<'a>),
    Result(ScenarioResult<'a>),
    /// The AVC behind scenario `name`: the rest of the line, `|` included.
    Avc {
        name: &'a str,
        text: &'a str,
    },
    End {
        boot: &'a str,
        results: u64,
    },
    Heartbeat,
    Probe,
    /// An `@@R`, `@@RELABEL` or `@@END` line that does not have its fields.
    Malformed {
        kind: Kind,
        line: &'a str,
    },
    /// Anything else: kernel messages, other `@@` lines.
    Other,
}

/// The messages that carry results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Result,
    Relabel,
    End,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relabel<'a> {
    pub boot: &'a str,
    pub relabelled: &'a str,
    pub examined: &'a str,
    pub seconds: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioResult<'a> {
    pub name: &'a str,
    pub expected: &'a str,
    /// Everything between the expectation and the verdict: an observation
    /// may hold a `|` of its own.
    pub observed: &'a str,
    pub passed: bool,
}

/// Reads one console line (without its line break; a trailing `\r` is
/// ignored).
pub fn parse(line: &str) -> Message<'_> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line == "@@PROBE" || line.starts_with("@@PROBE|") {
        return Message::Probe;
    }
    let Some((tag, rest)) = line.strip_prefix("@@").and_then(|l| l.split_once('|')) else {
        return Message::Other;
    };
    match tag {
        "STAGE" => Message::Stage(rest),
        "FATAL" => Message::Fatal(rest),
        "HB" => Message::Heartbeat,
        "AVC" => match rest.split_once('|') {
            Some((name, text)) => Message::Avc { name, text },
            None => Message::Avc {
                name: rest,
                text: "",
            },
        },
        "R" => scenario(rest).map_or(
            Message::Malformed {
                kind: Kind::Result,
                line,
            },
            Message::Result,
        ),
        "RELABEL" => {
            let fields: Vec<&str> = rest.split('|').collect();
            match fields[..] {
                [boot, relabelled, examined, seconds, _wall_ms, ..] => Message::Relabel(Relabel {
                    boot,
                    relabelled,
                    examined,
                    seconds,
                }),
                _ => Message::Malformed {
                    kind: Kind::Relabel,
                    line,
                },
            }
        }
        "END" => match rest.split_once('|') {
            Some((boot, count)) if count.parse::<u64>().is_ok() => Message::End {
                boot,
                results: count.parse().unwrap_or_default(),
            },
            _ => Message::Malformed {
                kind: Kind::End,
                line,
            },
        },
        _ => Message::Other,
    }
}

/// `name|expected|observed…|PASS` or `…|FAIL`.
fn scenario(rest: &str) -> Option<ScenarioResult<'_>> {
    let (name, rest) = rest.split_once('|')?;
    let (expected, rest) = rest.split_once('|')?;
    let (observed, verdict) = rest.rsplit_once('|')?;
    let passed = match verdict {
        "PASS" => true,
        "FAIL" => false,
        _ => return None,
    };
    (!name.is_empty()).then_some(ScenarioResult {
        name,
        expected,
        observed,
        passed,
    })
}

/// The fields of a line that did not parse, for a report that names it:
/// the scenario name when the line got that far.
pub fn malformed_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("@@R|")?;
    let name = rest.split('|').next()?;
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_kind_of_line() {
        assert_eq!(
            parse("@@STAGE|1.5 s: initramfs"),
            Message::Stage("1.5 s: initramfs")
        );
        assert_eq!(
            parse("@@FATAL|no /dev/vda\r"),
            Message::Fatal("no /dev/vda")
        );
        assert_eq!(parse("@@HB|12.01"), Message::Heartbeat);
        assert_eq!(parse("@@PROBE"), Message::Probe);
        assert_eq!(
            parse("@@R|pod/crun/etcd-read|denied|EACCES + AVC etcd_var_t|PASS"),
            Message::Result(ScenarioResult {
                name: "pod/crun/etcd-read",
                expected: "denied",
                observed: "EACCES + AVC etcd_var_t",
                passed: true
            })
        );
        assert_eq!(
            parse("@@RELABEL|1|512|530|0.08|410"),
            Message::Relabel(Relabel {
                boot: "1",
                relabelled: "512",
                examined: "530",
                seconds: "0.08"
            })
        );
        assert_eq!(
            parse("@@AVC|pod/x|avc:  denied { read } for pid=1 | more"),
            Message::Avc {
                name: "pod/x",
                text: "avc:  denied { read } for pid=1 | more"
            }
        );
        assert_eq!(
            parse("@@END|2|41"),
            Message::End {
                boot: "2",
                results: 41
            }
        );
        assert_eq!(parse("[    1.234] EXT4-fs (vda): mounted"), Message::Other);
        assert_eq!(parse("@@TIME|pod 3 (runc)|2900 ms"), Message::Other);
    }

    #[test]
    fn an_observation_may_hold_a_bar() {
        let Message::Result(result) = parse("@@R|a|b|left|right|FAIL") else {
            panic!("not a result");
        };
        assert_eq!(result.observed, "left|right");
        assert!(!result.passed);
    }

    #[test]
    fn broken_and_partial_lines_are_malformed_not_lost() {
        // A kernel message written into the middle of a result line.
        let broken = "@@R|pod/runc/etcd-read|denied|EACC[   12.345678] audit: type=1400";
        assert_eq!(
            parse(broken),
            Message::Malformed {
                kind: Kind::Result,
                line: broken
            }
        );
        assert_eq!(malformed_name(broken), Some("pod/runc/etcd-read"));
        // A guest that died mid-line: what reached the console.
        for partial in [
            "@@R|",
            "@@R|name",
            "@@R|name|expected",
            "@@R|name|expected|observed|PA",
        ] {
            assert!(
                matches!(
                    parse(partial),
                    Message::Malformed {
                        kind: Kind::Result,
                        ..
                    }
                ),
                "{partial}"
            );
        }
        assert_eq!(malformed_name("@@R|"), None);
        assert!(matches!(
            parse("@@RELABEL|1|512"),
            Message::Malformed {
                kind: Kind::Relabel,
                ..
            }
        ));
        assert!(matches!(
            parse("@@END|1|4x"),
            Message::Malformed {
                kind: Kind::End,
                ..
            }
        ));
        assert!(matches!(
            parse("@@END|1"),
            Message::Malformed {
                kind: Kind::End,
                ..
            }
        ));
        // Not at the start of the line: not a message at all.
        assert_eq!(parse("xx@@R|a|b|c|PASS"), Message::Other);
    }
}
