//! The guest's scenarios: one file each under testvm/scenarios, named by
//! its path (`kubens/restart-keeps-namespace.sh` is the scenario
//! `kubens/restart-keeps-namespace`). A file starts with a header the host
//! reads, `# key: value` lines up to the first line that is not one:
//!
//! ```text
//! # boot: enforcing          the boot that runs it (boots::BOOTS)
//! # expect: TEXT             the EXPECTED column; for a pod, what the check must see:
//!                            deny:TYPE[/TYPE…] (EACCES and the enforcing AVC on that
//!                            type) or allow:OUTPUT (exit 0 and exactly OUTPUT)
//! # pod: LEVEL SRC:DST:rw…   the body is one command run in a pod at that MCS level
//!                            with those hostPath mounts (busybox stage)
//! # needs: NAME…             scenarios that must run first (and do, under --only)
//! # after: PATTERN…          run after these scenarios when they run too
//! # policy: NAME             the policy it runs under (one of its boot's)
//! # selinux: permissive      run in permissive mode (then enforcing again)
//! # control: NAME…           also run in these controls, where it must fail
//! ```
//!
//! A `{runtime}` directory in the path runs the scenario once per OCI
//! runtime (boots::RUNTIMES), named with the runtime in its place. The
//! rest of the file is shell, sourced by the stage's runner
//! (guest/suite, guest/systemd/run), which reports its one result; a pod's
//! body is its command instead.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

use crate::boots::{self, Stage};

/// The path component that stands for each runtime in turn.
pub const RUNTIME: &str = "{runtime}";

const KEYS: [&str; 8] = [
    "boot", "expect", "pod", "needs", "after", "policy", "selinux", "control",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// Its path under testvm/scenarios without `.sh`.
    pub name: String,
    pub boot: u32,
    pub expect: String,
    pub pod: Option<Pod>,
    pub needs: Vec<String>,
    pub after: Vec<String>,
    pub policy: Option<String>,
    pub permissive: bool,
    pub controls: Vec<&'static str>,
}

/// A scenario run inside a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    /// The MCS level, as `s0:c1,c2`.
    pub level: String,
    /// `SOURCE:DESTINATION:ro|rw` bind mounts.
    pub mounts: Vec<String>,
    /// The command the pod's `sh -c` runs.
    pub command: String,
}

impl Scenario {
    /// The file, relative to testvm/scenarios.
    pub fn file(&self) -> String {
        format!("{}.sh", self.name)
    }

    pub fn per_runtime(&self) -> bool {
        self.name.split('/').any(|part| part == RUNTIME)
    }

    /// The name with `runtime` in place of `{runtime}`.
    pub fn name_for(&self, runtime: Option<&str>) -> String {
        match runtime {
            Some(runtime) => self.name.replace(RUNTIME, runtime),
            None => self.name.clone(),
        }
    }
}

/// A header line that cannot be read, or a scenario that does not fit the
/// others: `FILE:LINE: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

fn problem(line: usize, message: impl Into<String>) -> Problem {
    Problem {
        line,
        message: message.into(),
    }
}

/// Every scenario under `dir`, sorted by name; every problem in every
/// file at once, each as `PATH:LINE: message`.
pub fn discover(dir: &Path) -> Result<Vec<Scenario>> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    files.sort();
    let mut scenarios = Vec::new();
    let mut problems = Vec::new();
    for relative in files {
        let path = dir.join(&relative);
        let shown = |line: usize, message: &str| format!("{}:{line}: {message}", path.display());
        let Some(name) = relative.to_str().and_then(|r| r.strip_suffix(".sh")) else {
            if relative.file_name().is_some_and(|n| n == "README.md") {
                continue;
            }
            problems.push(shown(
                1,
                "not a scenario: scenario files are NAME.sh (or README.md)",
            ));
            continue;
        };
        let text =
            fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        match parse(name, &text) {
            Ok(scenario) => scenarios.push(scenario),
            Err(found) => problems.extend(found.iter().map(|p| shown(p.line, &p.message))),
        }
    }
    for (name, found) in check_together(&scenarios) {
        problems.extend(found.iter().map(|p| {
            format!(
                "{}:{}: {}",
                dir.join(format!("{name}.sh")).display(),
                p.line,
                p.message
            )
        }));
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    if scenarios.is_empty() {
        bail!("no scenario in {}", dir.display());
    }
    Ok(scenarios)
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            walk(root, &path, files)?;
        } else {
            files.push(path.strip_prefix(root).unwrap_or(&path).to_owned());
        }
    }
    Ok(())
}

/// One file: its header and body.
pub fn parse(name: &str, text: &str) -> Result<Scenario, Vec<Problem>> {
    let mut problems = Vec::new();
    if let Some(bad) = name.split('/').find(|part| !valid_component(part)) {
        problems.push(problem(
            1,
            format!("the name's component `{bad}` is not lower-case letters, digits, `_`, `.` and `-` (or `{RUNTIME}`)"),
        ));
    }
    if name.matches(RUNTIME).count() > 1 {
        problems.push(problem(
            1,
            format!("`{RUNTIME}` more than once in the name"),
        ));
    }
    let mut fields: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    let mut body_start = 0;
    for (index, line) in text.lines().enumerate() {
        let Some((key, value)) = header_line(line) else {
            body_start = index;
            break;
        };
        body_start = index + 1;
        if !KEYS.contains(&key) {
            problems.push(problem(
                index + 1,
                format!("unknown header key `{key}` (known: {}); a comment right after the header needs a `#` line before it", KEYS.join(", ")),
            ));
        } else if fields.contains_key(key) {
            problems.push(problem(index + 1, format!("`{key}` given twice")));
        } else {
            fields.insert(key, (index + 1, value));
        }
    }
    let body: Vec<&str> = text
        .lines()
        .skip(body_start)
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    // Where a missing line or the body is reported: the first body line.
    let end = (body_start + 1).min(text.lines().count().max(1));
    let get = |key: &str| fields.get(key).copied();
    let words = |key: &str| -> Vec<String> {
        get(key).map_or_else(Vec::new, |(_, v)| {
            v.split_whitespace().map(str::to_owned).collect()
        })
    };

    let boot = match get("boot") {
        None => {
            problems.push(problem(end, "no `# boot:` line in the header"));
            None
        }
        Some((line, value)) => match boots::boot_named(value) {
            Some(boot) => Some(boot),
            None => {
                let known: Vec<&str> = boots::BOOTS.iter().map(|b| b.name).collect();
                problems.push(problem(
                    line,
                    format!("no boot `{value}` (boots: {})", known.join(", ")),
                ));
                None
            }
        },
    };
    let expect = match get("expect") {
        Some((_, value)) => value.to_owned(),
        None => {
            problems.push(problem(end, "no `# expect:` line in the header"));
            String::new()
        }
    };
    let stage = boot.map(|b| b.stage);

    let pod = get("pod").and_then(|(line, value)| {
        let mut parts = value.split_whitespace();
        let level = parts.next().unwrap_or("");
        let mounts: Vec<String> = parts.map(str::to_owned).collect();
        if !level.starts_with("s0") {
            problems.push(problem(
                line,
                format!("`pod: LEVEL MOUNT…`: `{level}` is not an MCS level such as s0:c1,c2"),
            ));
        }
        for mount in &mounts {
            if !valid_mount(mount) {
                problems.push(problem(
                    line,
                    format!("`{mount}` is not SOURCE:DESTINATION:ro|rw with absolute paths"),
                ));
            }
        }
        if stage == Some(Stage::Systemd) {
            problems.push(problem(line, "pods run in the busybox stage only"));
        }
        match body[..] {
            [command] => Some(Pod {
                level: level.to_owned(),
                mounts,
                command: command.to_owned(),
            }),
            _ => {
                problems.push(problem(
                    end,
                    format!(
                        "a pod scenario's body is its one command line ({} found)",
                        body.len()
                    ),
                ));
                None
            }
        }
    });
    if pod.is_none() && get("pod").is_none() && body.is_empty() {
        problems.push(problem(end, "no commands after the header"));
    }
    if get("pod").is_some() {
        let (kind, rest) = expect.split_once(':').unwrap_or(("", ""));
        if !matches!(kind, "deny" | "allow") || expect.contains(char::is_whitespace) {
            problems.push(problem(
                get("expect").map_or(end, |(line, _)| line),
                "a pod's `expect:` is deny:TYPE[/TYPE…] or allow:OUTPUT, without blanks",
            ));
        } else if kind == "deny" && rest.is_empty() {
            problems.push(problem(
                get("expect").map_or(end, |(l, _)| l),
                "deny: names the type the AVC must be on",
            ));
        }
    }

    let policy = get("policy").map(|(line, value)| {
        if let Some(boot) = boot {
            if !boot.policies.contains(&value) {
                problems.push(problem(
                    line,
                    format!(
                        "boot `{}` loads no policy `{value}` (its policies: {})",
                        boot.name,
                        if boot.policies.is_empty() {
                            "none".into()
                        } else {
                            boot.policies.join(", ")
                        }
                    ),
                ));
            }
        }
        value.to_owned()
    });
    let permissive = match get("selinux") {
        None | Some((_, "enforcing")) => false,
        Some((_, "permissive")) => true,
        Some((line, other)) => {
            problems.push(problem(
                line,
                format!("`selinux: {other}`: enforcing or permissive"),
            ));
            false
        }
    };
    let mut controls = Vec::new();
    for name in words("control") {
        let line = get("control").map_or(end, |(l, _)| l);
        match boots::control(&name) {
            None => {
                let known: Vec<&str> = boots::CONTROLS.iter().map(|c| c.name).collect();
                problems.push(problem(
                    line,
                    format!("no control `{name}` (controls: {})", known.join(", ")),
                ));
            }
            Some(control) => {
                if stage.is_some_and(|s| s != boots::boot(control.boot).stage) {
                    problems.push(problem(
                        line,
                        format!("control `{name}` boots another stage"),
                    ));
                }
                if control.judged == boots::Judged::Leaks && !expect.starts_with("deny:") {
                    problems.push(problem(
                        line,
                        format!("control `{name}` takes denials only (expect: deny:…)"),
                    ));
                }
                controls.push(control.name);
            }
        }
    }
    let needs = words("needs");
    let after = words("after");
    if name.contains(RUNTIME) && stage == Some(Stage::Systemd) {
        problems.push(problem(
            1,
            format!("`{RUNTIME}`: the systemd stage has no OCI runtime of its own"),
        ));
    }
    for need in &needs {
        if need.contains(RUNTIME) && !name.contains(RUNTIME) {
            problems.push(problem(
                get("needs").map_or(end, |(l, _)| l),
                format!("`{need}`: only a `{RUNTIME}` scenario can need one"),
            ));
        }
    }

    match (problems.is_empty(), boot) {
        (true, Some(boot)) => Ok(Scenario {
            name: name.to_owned(),
            boot: boot.number,
            expect,
            pod,
            needs,
            after,
            policy,
            permissive,
            controls,
        }),
        _ => Err(problems),
    }
}

/// `# key: value`, a lower-case key.
fn header_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("# ")?;
    let (key, value) = rest.split_once(':')?;
    let is_key = !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
    is_key.then(|| (key, value.trim()))
}

fn valid_component(part: &str) -> bool {
    part == RUNTIME
        || (!part.is_empty()
            && !part.starts_with('.')
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b)))
}

fn valid_mount(mount: &str) -> bool {
    let parts: Vec<&str> = mount.split(':').collect();
    matches!(parts[..], [source, dest, "ro" | "rw"]
        if source.starts_with('/') && dest.starts_with('/') && !mount.contains(','))
}

/// What only the whole set can tell: needs that name no scenario or a
/// later boot, patterns in `after:` that match nothing in the boot.
/// By scenario name, with the header line as well as it is known (1).
fn check_together(scenarios: &[Scenario]) -> Vec<(String, Vec<Problem>)> {
    let mut all = Vec::new();
    for scenario in scenarios {
        let mut problems = Vec::new();
        for need in &scenario.needs {
            match scenarios.iter().find(|s| s.name == *need) {
                None => problems.push(problem(1, format!("needs `{need}`, which is no scenario"))),
                Some(needed) => {
                    let (mine, theirs) = (boots::boot(scenario.boot), boots::boot(needed.boot));
                    if theirs.stage != mine.stage || theirs.number > mine.number {
                        problems.push(problem(
                            1,
                            format!(
                                "needs `{need}`, which runs in boot {} ({}), not before this one",
                                theirs.number, theirs.name
                            ),
                        ));
                    }
                    for control in &scenario.controls {
                        if !needed.controls.contains(control) {
                            problems.push(problem(
                                1,
                                format!("in control `{control}`, it needs `{need}`, which is not"),
                            ));
                        }
                    }
                }
            }
        }
        for pattern in &scenario.after {
            let matched = scenarios.iter().any(|s| {
                s.boot == scenario.boot && s.name != scenario.name && glob(pattern, &s.name)
            });
            if !matched {
                problems.push(problem(
                    1,
                    format!(
                        "after `{pattern}`: no other scenario of boot {} matches",
                        scenario.boot
                    ),
                ));
            }
        }
        if !problems.is_empty() {
            all.push((scenario.name.clone(), problems));
        }
    }
    all
}

/// A shell-style pattern against all of `text`: `*` any run of characters
/// (`/` included), `?` one character, anything else itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(result: Result<Scenario, Vec<Problem>>) -> Vec<String> {
        result
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|p| format!("{}: {}", p.line, p.message))
            .collect()
    }

    #[test]
    fn a_script_scenario() {
        let text = "# boot: systemd\n# expect: containerd, kubelet active\n# after: units/* selinux/x\n# control: layout-units-off\n#\n# Why: not a header line.\nresult yes ok\n";
        let scenario = parse("units/runtime-waits", text).unwrap();
        assert_eq!(scenario.boot, 4);
        assert_eq!(scenario.expect, "containerd, kubelet active");
        assert_eq!(scenario.after, ["units/*", "selinux/x"]);
        assert_eq!(scenario.controls, ["layout-units-off"]);
        assert_eq!(scenario.pod, None);
        assert!(!scenario.per_runtime());
        assert_eq!(scenario.file(), "units/runtime-waits.sh");
    }

    #[test]
    fn a_pod_scenario_per_runtime() {
        let text = "# boot: enforcing\n# pod: s0:c1,c2 /var:/host/var:rw /var/mnt:/m:ro\n# expect: deny:kubelet_pki_t/kubelet_var_t\n# control: leaky\n\n# What it reads.\ncat /host/var/lib/kubelet/pki/x.pem\n";
        let scenario = parse("{runtime}/var-mount/read-pki", text).unwrap();
        let pod = scenario.pod.clone().unwrap();
        assert_eq!(pod.level, "s0:c1,c2");
        assert_eq!(pod.mounts, ["/var:/host/var:rw", "/var/mnt:/m:ro"]);
        assert_eq!(pod.command, "cat /host/var/lib/kubelet/pki/x.pem");
        assert!(scenario.per_runtime());
        assert_eq!(scenario.name_for(Some("runc")), "runc/var-mount/read-pki");
        assert_eq!(scenario.boot, 1);
    }

    #[test]
    fn every_problem_names_its_line() {
        let text = "# boot: enforcing\n# expect: deny:x\n# bot: reboot\n# pod: c1 /var:/host:rw,x\nsh -c a\nsh -c b\n";
        assert_eq!(
            messages(parse("a/b", text)),
            [
                "3: unknown header key `bot` (known: boot, expect, pod, needs, after, policy, selinux, control); a comment right after the header needs a `#` line before it",
                "4: `pod: LEVEL MOUNT…`: `c1` is not an MCS level such as s0:c1,c2",
                "4: `/var:/host:rw,x` is not SOURCE:DESTINATION:ro|rw with absolute paths",
                "5: a pod scenario's body is its one command line (2 found)",
            ]
        );
        assert_eq!(
            messages(parse("Bad/{runtime}/{runtime}", "# boot: nowhere\n")),
            [
                "1: the name's component `Bad` is not lower-case letters, digits, `_`, `.` and `-` (or `{runtime}`)",
                "1: `{runtime}` more than once in the name",
                "1: no boot `nowhere` (boots: enforcing, reboot, refpolicy, systemd, systemd-control, cri, fedora)",
                "1: no `# expect:` line in the header",
                "1: no commands after the header",
            ]
        );
        assert_eq!(
            messages(parse(
                "x",
                "# boot: systemd\n# expect: e\n# policy: leaky\n# selinux: permissive\n# control: leaky\n# boot: reboot\ntrue\n"
            )),
            [
                "6: `boot` given twice",
                "3: boot `systemd` loads no policy `leaky` (its policies: none)",
                "5: control `leaky` boots another stage",
                "5: control `leaky` takes denials only (expect: deny:…)",
            ]
        );
        assert_eq!(
            messages(parse(
                "{runtime}/x",
                "# boot: enforcing\n# pod: s0 /a:/b:rw\n# expect: allow:two words\ntrue\n"
            )),
            ["3: a pod's `expect:` is deny:TYPE[/TYPE…] or allow:OUTPUT, without blanks"]
        );
        assert_eq!(
            messages(parse(
                "x",
                "# boot: enforcing\n# expect: y\n# needs: {runtime}/a\ntrue\n"
            )),
            ["3: `{runtime}/a`: only a `{runtime}` scenario can need one"]
        );
    }

    #[test]
    fn the_header_ends_at_the_first_other_line() {
        // A prose comment directly under the header is read as a key when
        // it looks like one; after a `#` line it is prose.
        let text = "# boot: reboot\n# expect: e\n#\n# note: prose\ntrue\n";
        assert!(parse("x", text).is_ok());
        let text = "# boot: reboot\n# expect: e\n# note: prose\ntrue\n";
        assert_eq!(messages(parse("x", text)).len(), 1);
    }

    fn scenario(name: &str, boot: u32, needs: &[&str], after: &[&str]) -> Scenario {
        Scenario {
            name: name.into(),
            boot,
            expect: "e".into(),
            pod: None,
            needs: needs.iter().map(|s| s.to_string()).collect(),
            after: after.iter().map(|s| s.to_string()).collect(),
            policy: None,
            permissive: false,
            controls: vec![],
        }
    }

    #[test]
    fn needs_and_after_are_checked_against_the_set() {
        let mut units = scenario("units/a", 4, &["units/b"], &[]);
        units.controls = vec!["layout-units-off"];
        let found = check_together(&[
            scenario("a", 2, &["b", "missing"], &["nothing/*"]),
            scenario("b", 3, &[], &[]),
            scenario("c", 1, &[], &["a"]),
            units,
            scenario("units/b", 4, &["a"], &["units/*"]),
        ]);
        let flat: Vec<String> = found
            .iter()
            .flat_map(|(name, ps)| ps.iter().map(move |p| format!("{name}: {}", p.message)))
            .collect();
        assert_eq!(
            flat,
            [
                "a: needs `b`, which runs in boot 3 (refpolicy), not before this one",
                "a: needs `missing`, which is no scenario",
                "a: after `nothing/*`: no other scenario of boot 2 matches",
                "c: after `a`: no other scenario of boot 1 matches",
                "units/a: in control `layout-units-off`, it needs `units/b`, which is not",
                "units/b: needs `a`, which runs in boot 2 (reboot), not before this one",
            ]
        );
    }

    #[test]
    fn globs() {
        assert!(glob("kubens/*", "kubens/restart-keeps-namespace"));
        assert!(glob("*", "a/b/c"));
        assert!(glob("*/etcd-mount/*", "crun/etcd-mount/read-file"));
        assert!(glob("*etcd*", "leaky-control/runc/etcd-mount/list-dir"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(!glob("kubens", "kubens/x"));
        assert!(!glob("*/x", "x"));
        assert!(glob("a*b*c", "a-b-b-c"));
        assert!(!glob("a*b*c", "a-b-b-d"));
        assert!(glob("", ""));
        assert!(!glob("", "a"));
    }

    #[test]
    fn the_repository_scenarios_read() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let scenarios = discover(&dir).unwrap_or_else(|e| panic!("{e:#}"));
        assert!(scenarios.len() > 50, "{}", scenarios.len());
    }
}
