//! `semanifest __compile-cil`, the helper process of the `sepol` crate:
//! libsepol's CIL compiler, one parse and resolution for several builds.
//! Its bytes are compared with the real secilc's on the same input, and
//! its refusals carry what secilc prints.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{stderr, tool};

/// A policy of a few lines with one neverallow (secilc's probe's shape),
/// one file context and a rule the optimiser removes (`write` on `t_t`
/// is in the rule on `t_all`).
const POLICY: &str = "\
(class file (read write))
(classorder (file))
(sid kernel)
(sidorder (kernel))
(user t_u)
(role t_r)
(type t_t)
(type t_data_t)
(userrole t_u t_r)
(roletype t_r t_t)
(role object_r)
(roletype object_r t_data_t)
(userrole t_u object_r)
(sensitivity s0)
(sensitivityorder (s0))
(category c0)
(categoryorder (c0))
(sensitivitycategory s0 (c0))
(userlevel t_u (s0))
(userrange t_u ((s0) (s0)))
(sidcontext kernel (t_u t_r t_t ((s0) (s0))))
(filecon \"/data(/.*)?\" any (t_u object_r t_data_t ((s0) (s0))))
(typeattribute t_all)
(typeattributeset t_all (t_t t_data_t))
(allow t_t t_all (file (write)))
(allow t_t t_t (file (read write)))
(neverallow t_t t_data_t (file (read)))
";

const VIOLATION: &str = "(allow t_t t_data_t (file (read)))\n";

/// The line of `POLICY` that holds `text` (1-based).
fn line_of(text: &str) -> usize {
    POLICY.lines().position(|l| l.starts_with(text)).unwrap() + 1
}

fn flags() -> sepol::Flags {
    sepol::Flags {
        policy_version: Some(33),
        optimize: true,
        ..sepol::Flags::default()
    }
}

fn build(dir: &Path, name: &str, check_neverallows: bool) -> sepol::Build {
    sepol::Build {
        policy_out: dir.join(format!("{name}.33")),
        file_contexts_out: dir.join(format!("{name}.fc")),
        check_neverallows,
    }
}

fn helper() -> sepol::Helper {
    sepol::Helper::new(env!("CARGO_BIN_EXE_semanifest"))
}

/// secilc with the same flags: (policy, file_contexts), or its refusal.
fn secilc(
    dir: &Path,
    inputs: &[PathBuf],
    check_neverallows: bool,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (policy, contexts) = (dir.join("secilc.33"), dir.join("secilc.fc"));
    let mut command = Command::new(tool("secilc", "secilc"));
    command
        .args(flags().secilc_args())
        .arg("-o")
        .arg(&policy)
        .arg("-f")
        .arg(&contexts);
    if !check_neverallows {
        command.arg("--disable-neverallow");
    }
    let output = command.args(inputs).output().unwrap();
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok((fs::read(policy).unwrap(), fs::read(contexts).unwrap()))
}

fn written(b: &sepol::Build) -> (Vec<u8>, Vec<u8>) {
    (
        fs::read(&b.policy_out).unwrap(),
        fs::read(&b.file_contexts_out).unwrap(),
    )
}

/// A policy that breaks its neverallow: the checked build is refused
/// with secilc's message (naming the input and line), the other, from the
/// same resolution, writes secilc's `--disable-neverallow` bytes.
#[test]
fn one_resolution_gives_the_refusal_and_the_binary_secilc_gives() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("violating.cil");
    fs::write(&input, format!("{POLICY}{VIOLATION}")).unwrap();
    let builds = vec![
        build(dir.path(), "checked", true),
        build(dir.path(), "as-store", false),
    ];
    let outcomes = helper()
        .compile(&sepol::Request {
            flags: flags(),
            inputs: vec![input.clone()],
            builds: builds.clone(),
            first_suffices: true,
            parse_first: None,
        })
        .unwrap();
    let sepol::Outcome::Refused { output } = &outcomes[0] else {
        panic!("the checked build was not refused: {outcomes:?}");
    };
    let expected = format!(
        "neverallow check failed at {}:{}",
        input.display(),
        line_of("(neverallow")
    );
    assert!(output.contains(&expected), "{output}");
    let secilc_refusal = secilc(dir.path(), std::slice::from_ref(&input), true).unwrap_err();
    assert!(secilc_refusal.contains(&expected), "{secilc_refusal}");
    assert!(
        matches!(outcomes[1], sepol::Outcome::Written { .. }),
        "{outcomes:?}"
    );
    assert_eq!(
        written(&builds[1]),
        secilc(dir.path(), &[input], false).unwrap()
    );
}

/// A policy that keeps its neverallow: the checked build is the binary,
/// secilc's bytes; the other build is stopped as not needed. Control:
/// without `first_suffices` it runs, and writes the same bytes.
#[test]
fn an_accepted_checked_build_is_the_binary_and_the_other_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("clean.cil");
    fs::write(&input, POLICY).unwrap();
    let builds = vec![
        build(dir.path(), "checked", true),
        build(dir.path(), "as-store", false),
    ];
    let request = |first_suffices| sepol::Request {
        flags: flags(),
        inputs: vec![input.clone()],
        builds: builds.clone(),
        first_suffices,
        parse_first: None,
    };
    let outcomes = helper().compile(&request(true)).unwrap();
    assert!(
        matches!(outcomes[0], sepol::Outcome::Written { .. }),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1], sepol::Outcome::Skipped);
    let ours = written(&builds[0]);
    assert_eq!(
        ours,
        secilc(dir.path(), std::slice::from_ref(&input), true).unwrap()
    );
    // The optimisation ran: the duplicate rule is gone, as secilc --optimize.
    let unoptimised = {
        let (policy, contexts) = (dir.path().join("plain.33"), dir.path().join("plain.fc"));
        let status = Command::new(tool("secilc", "secilc"))
            .args(["--policyvers=33", "-o"])
            .arg(&policy)
            .arg("-f")
            .arg(&contexts)
            .arg(&input)
            .status()
            .unwrap();
        assert!(status.success());
        fs::read(policy).unwrap()
    };
    assert_ne!(ours.0, unoptimised);

    // Control: both run when the second is wanted anyway.
    let outcomes = helper().compile(&request(false)).unwrap();
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, sepol::Outcome::Written { .. })),
        "{outcomes:?}"
    );
    assert_eq!(written(&builds[1]), ours);
}

/// What secilc refuses before any build: every build is refused with
/// the message naming the file (and line); a missing input is named; an
/// unreadable request is an error of the helper (exit 2), not a refusal.
#[test]
fn refusals_before_the_builds_name_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.cil");
    fs::write(
        &broken,
        format!("{POLICY}(allow t_t nowhere_t (file (read)))\n"),
    )
    .unwrap();
    let unbalanced = dir.path().join("unbalanced.cil");
    fs::write(&unbalanced, "(type a_t)\n(allow a_t\n").unwrap();
    let missing = dir.path().join("missing.cil");
    for (input, says) in [
        (
            &broken,
            format!("{}:{}", broken.display(), POLICY.lines().count() + 1),
        ),
        (
            &unbalanced,
            format!(
                "without matching close at line 3 of {}",
                unbalanced.display()
            ),
        ),
        (
            &missing,
            format!("Could not open file: {}", missing.display()),
        ),
    ] {
        let builds = vec![build(dir.path(), "a", true), build(dir.path(), "b", false)];
        let outcomes = helper()
            .compile(&sepol::Request {
                flags: flags(),
                inputs: vec![input.clone()],
                builds: builds.clone(),
                first_suffices: false,
                parse_first: None,
            })
            .unwrap();
        for outcome in &outcomes {
            let sepol::Outcome::Refused { output } = outcome else {
                panic!("{} was not refused: {outcome:?}", input.display());
            };
            assert!(output.contains(&says), "{says}: {output}");
        }
        assert!(!builds[0].policy_out.exists());
    }
    // Control: the same helper compiles the policy without the bad rule.
    let clean = dir.path().join("clean.cil");
    fs::write(&clean, POLICY).unwrap();
    let outcomes = helper()
        .compile(&sepol::Request {
            flags: flags(),
            inputs: vec![clean],
            builds: vec![build(dir.path(), "c", true)],
            first_suffices: false,
            parse_first: None,
        })
        .unwrap();
    assert!(
        matches!(outcomes[0], sepol::Outcome::Written { .. }),
        "{outcomes:?}"
    );

    let mut child = Command::new(env!("CARGO_BIN_EXE_semanifest"))
        .arg(sepol::SUBCOMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"{not json").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("unreadable request"),
        "{}",
        stderr(&output)
    );
    assert!(output.stdout.is_empty());
}

/// Started before its last input is written, the helper parses the
/// others, waits, then reads it: the same bytes as secilc's of the whole.
/// Control: dropped unfinished, the helper is stopped and builds nothing.
#[test]
fn a_helper_started_early_reads_the_last_input_when_let_go() {
    let dir = tempfile::tempdir().unwrap();
    let (first, last) = (dir.path().join("a.cil"), dir.path().join("b.cil"));
    let (policy, rule) = POLICY.rsplit_once("(allow t_t t_t").unwrap();
    fs::write(&first, policy).unwrap();
    let builds = vec![build(dir.path(), "early", true)];
    let request = sepol::Request {
        flags: flags(),
        inputs: vec![first.clone(), last.clone()],
        builds: builds.clone(),
        first_suffices: false,
        parse_first: Some(1),
    };
    let started = helper().start(&request).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    fs::write(&last, format!("(allow t_t t_t{rule}")).unwrap();
    let outcomes = started.finish().unwrap();
    assert!(
        matches!(outcomes[0], sepol::Outcome::Written { .. }),
        "{outcomes:?}"
    );
    assert_eq!(
        written(&builds[0]),
        secilc(dir.path(), &[first.clone(), last.clone()], true).unwrap()
    );

    fs::remove_file(&builds[0].policy_out).unwrap();
    let started = helper().start(&request).unwrap();
    drop(started);
    assert!(!builds[0].policy_out.exists());
}
