//! The helper process's side: one [`Request`] on stdin, its outcomes as
//! JSON on stdout.

use std::io::{BufRead, Read, Write};

use crate::ffi::{self, Db};
use crate::{Build, Flags, Outcome, Request};

/// Serves one request from stdin. Returns the process's exit code: 0 when
/// every outcome was written to stdout (refusals included).
pub fn serve() -> i32 {
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    let request: Request = match stdin
        .read_line(&mut line)
        .map_err(|e| e.to_string())
        .and_then(|_| serde_json::from_str(&line).map_err(|e| e.to_string()))
    {
        Ok(request) => request,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "unreadable request: {error}");
            return 2;
        }
    };
    let mut go = || {
        let mut line = String::new();
        stdin.read_line(&mut line).is_ok() && line.as_bytes() == crate::GO
    };
    match run(&request, &mut go) {
        Ok(outcomes) => {
            let mut stdout = std::io::stdout().lock();
            match serde_json::to_writer(&mut stdout, &outcomes) {
                Ok(()) => 0,
                Err(error) => {
                    let _ = writeln!(std::io::stderr(), "cannot write the outcomes: {error}");
                    1
                }
            }
        }
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "{error}");
            1
        }
    }
}

/// `go` waits for the caller to let the helper read past
/// [`Request::parse_first`]; `false`: it gave up, and nothing is built.
fn run(request: &Request, go: &mut dyn FnMut() -> bool) -> Result<Vec<Outcome>, String> {
    let Some((first, others)) = request.builds.split_first() else {
        return Ok(Vec::new());
    };
    let mut db = Db::new()?;
    if let Some(refused) = prepare(&mut db, request, go)? {
        return Ok(vec![
            Outcome::Refused { output: refused };
            request.builds.len()
        ]);
    }
    // Each other build in a fork, with its own copy of the resolved database.
    let mut children = Vec::with_capacity(others.len());
    for build in others {
        let (reader, mut writer) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        match ffi::fork() {
            Some(0) => {
                drop(reader);
                // The child never returns into the parent's code (a panic
                // unwinding into `serve` would answer as the parent).
                let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let outcome = build_one(&mut db, &request.flags, build);
                    serde_json::to_writer(&mut writer, &outcome).is_ok()
                }));
                ffi::exit_child(if matches!(built, Ok(true)) { 0 } else { 1 });
            }
            Some(pid) => {
                drop(writer);
                children.push((pid, reader));
            }
            None => {
                return Err(format!("fork: {}", std::io::Error::last_os_error()));
            }
        }
    }
    let first_outcome = build_one(&mut db, &request.flags, first);
    let stop_others = request.first_suffices && matches!(first_outcome, Outcome::Written { .. });
    let mut outcomes = vec![first_outcome];
    for (pid, mut reader) in children {
        if stop_others {
            ffi::kill(pid);
            let _ = ffi::wait(pid);
            outcomes.push(Outcome::Skipped);
            continue;
        }
        let mut answer = Vec::new();
        let _ = reader.read_to_end(&mut answer);
        let status = ffi::wait(pid);
        let outcome = match (serde_json::from_slice::<Outcome>(&answer), status) {
            (Ok(outcome), Ok(0)) => outcome,
            (_, Err(signal)) => Outcome::Refused {
                output: format!("the build was stopped by signal {signal}\n"),
            },
            (_, Ok(code)) => Outcome::Refused {
                output: format!("the build exited {code} without an outcome\n"),
            },
        };
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// Settings, parsing and resolution, as secilc does them; `Some(output)`
/// when libsepol refused the inputs; an error when the caller gave up.
fn prepare(
    db: &mut Db,
    request: &Request,
    go: &mut dyn FnMut() -> bool,
) -> Result<Option<String>, String> {
    let flags = &request.flags;
    db.set_disable_dontaudit(flags.disable_dontaudit);
    db.set_preserve_tunables(flags.preserve_tunables);
    if let Some(handle) = &flags.handle_unknown {
        let value = match handle.to_ascii_lowercase().as_str() {
            "deny" => 0,
            "reject" => 2,
            "allow" => 4,
            other => return Ok(Some(format!("unknown handle-unknown value: {other}\n"))),
        };
        if !db.set_handle_unknown(value) {
            return Ok(Some(ffi::take_log()));
        }
    }
    db.set_mls(match flags.mls {
        None => -1,
        Some(on) => on.into(),
    });
    match flags.target_platform.as_deref() {
        None | Some("selinux") => db.set_target_platform(0),
        Some("xen") => db.set_target_platform(1),
        Some(other) => return Ok(Some(format!("Unknown target: {other}\n"))),
    }
    if let Some(version) = flags.policy_version {
        db.set_policy_version(version as i32);
    }
    for (index, input) in request.inputs.iter().enumerate() {
        if request.parse_first == Some(index) && !go() {
            return Err("the caller gave up before the last inputs".to_owned());
        }
        let data = match std::fs::read(input) {
            Ok(data) => data,
            Err(error) => {
                return Ok(Some(format!(
                    "Could not open file: {}: {error}\n",
                    input.display()
                )));
            }
        };
        // secilc skips an empty file.
        if data.is_empty() {
            continue;
        }
        let name = input.to_string_lossy();
        if !db.add_file(&name, &data) {
            return Ok(Some(format!("{}Failure adding {name}\n", ffi::take_log())));
        }
    }
    if !db.compile() {
        return Ok(Some(format!(
            "{}Failed to compile cildb\n",
            ffi::take_log()
        )));
    }
    Ok(None)
}

/// One binary from the resolved database.
fn build_one(db: &mut Db, flags: &Flags, build: &Build) -> Outcome {
    db.set_disable_neverallow(!build.check_neverallows);
    let refused = |what: &str| Outcome::Refused {
        output: format!("{}{what}\n", ffi::log_so_far()),
    };
    let Some(mut policy) = db.build() else {
        return refused("Failed to build policydb");
    };
    if flags.optimize && !policy.optimize() {
        return refused("Failed to optimize policydb");
    }
    if let Err(error) = policy.write(&build.policy_out) {
        return refused(&error);
    }
    let Some(contexts) = db.file_contexts() else {
        return refused("Failed to get file context data");
    };
    if let Err(error) = std::fs::write(&build.file_contexts_out, contexts) {
        return refused(&format!(
            "Failed to write {}: {error}",
            build.file_contexts_out.display()
        ));
    }
    Outcome::Written {
        output: ffi::log_so_far(),
    }
}
