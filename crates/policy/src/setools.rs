//! Reading a compiled policy back with setools (`seinfo`, `sesearch`):
//! independent of our own CIL generation, so what it reports is what the
//! kernel would load, `--include`d files and a store's modules included.
//!
//! Every query of a run goes to one setools process (Python, the
//! interpreter the `sesearch` command runs with) that loads each policy
//! once: a command would load the policy and start Python again for each
//! query, and sesearch's own rule filter matches every rule against a
//! regex, where the session compares names (one pass over the rules). Its
//! answers are the commands' output, byte for byte (the tests compare
//! them); a query it does not know, or a session that cannot start, runs
//! the command itself.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

/// A setools program could not run, or failed.
#[derive(Debug, thiserror::Error)]
#[error("`{tool}` failed ({detail}); install setools (`apt-get install setools`)")]
pub struct SetoolsError {
    pub tool: &'static str,
    pub detail: String,
}

/// What `tool` (`seinfo` or `sesearch`) prints with `args` on `policy`:
/// answered by the run's setools session when it can, else by the command.
pub fn run(tool: &'static str, args: &[&str], policy: &Path) -> Result<String, SetoolsError> {
    match session_query(tool, args, policy) {
        Answer::Out(text) => Ok(text),
        Answer::Failed(detail) => Err(SetoolsError { tool, detail }),
        Answer::Unavailable => run_command(tool, args, policy),
    }
}

/// The Python program of the session.
const SESSION: &str = include_str!("setools_session.py");

/// The run's setools session: started at the first query, kept until the
/// process exits (it ends when its standard input closes). `None` inside
/// once it could not start or broke: the commands answer from then on.
static SESSION_PROCESS: Mutex<Option<Option<Session>>> = Mutex::new(None);

struct Session {
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

enum Answer {
    Out(String),
    Failed(String),
    /// No session, or a query it does not answer.
    Unavailable,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Reply {
    Out(String),
    /// The query, which the command answers instead.
    Unsupported(#[allow(dead_code)] String),
    Error(String),
}

impl Session {
    /// Starts the session with the interpreter `sesearch` runs with.
    fn start() -> Option<Session> {
        let python = setools_python()?;
        let mut child = Command::new(&python)
            .args(["-c", SESSION])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let input = child.stdin.take()?;
        let output = BufReader::new(child.stdout.take()?);
        Some(Session {
            _child: child,
            input,
            output,
        })
    }

    fn ask(&mut self, tool: &str, args: &[&str], policy: &Path) -> std::io::Result<Reply> {
        let request = serde_json::json!({
            "tool": tool,
            "args": args,
            "policy": policy.to_str().ok_or(std::io::ErrorKind::InvalidInput)?,
        });
        writeln!(self.input, "{request}")?;
        self.input.flush()?;
        let mut line = String::new();
        if self.output.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        serde_json::from_str(&line).map_err(std::io::Error::other)
    }
}

fn session_query(tool: &str, args: &[&str], policy: &Path) -> Answer {
    let Ok(mut guard) = SESSION_PROCESS.lock() else {
        return Answer::Unavailable;
    };
    let Some(session) = guard.get_or_insert_with(Session::start) else {
        return Answer::Unavailable;
    };
    match session.ask(tool, args, policy) {
        Ok(Reply::Out(text)) => Answer::Out(text),
        Ok(Reply::Error(detail)) => Answer::Failed(detail),
        Ok(Reply::Unsupported(_)) => Answer::Unavailable,
        Err(_) => {
            // A broken session: the commands take over.
            *guard = Some(None);
            Answer::Unavailable
        }
    }
}

/// The Python interpreter the `sesearch` on `PATH` runs with (its `#!`
/// line), which has the setools it ships with.
fn setools_python() -> Option<PathBuf> {
    let sesearch = std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("sesearch"))
        .find(|path| path.is_file())?;
    let mut first = String::new();
    BufReader::new(std::fs::File::open(sesearch).ok()?)
        .read_line(&mut first)
        .ok()?;
    let mut words = first.strip_prefix("#!")?.split_whitespace();
    let mut interpreter = words.next()?;
    if interpreter.ends_with("/env") {
        interpreter = words.next()?;
    }
    interpreter
        .contains("python")
        .then(|| PathBuf::from(interpreter))
}

/// Runs the command `tool` with `args` on `policy`; its standard output.
pub fn run_command(
    tool: &'static str,
    args: &[&str],
    policy: &Path,
) -> Result<String, SetoolsError> {
    let output = Command::new(tool)
        .arg(policy)
        .args(args)
        .output()
        .map_err(|error| SetoolsError {
            tool,
            detail: error.to_string(),
        })?;
    if !output.status.success() {
        return Err(SetoolsError {
            tool,
            detail: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// One `allow` line of `sesearch` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowLine {
    pub source: String,
    pub target: String,
    pub class: String,
    pub perms: BTreeSet<String>,
    /// `Some(boolean expression)` for a conditional rule.
    pub condition: Option<String>,
    /// Whether a conditional rule is in the expression's true branch
    /// (`:True`) or its false one (`:False`); true for the others.
    pub when: bool,
    pub text: String,
}

/// Parses `allow SOURCE TARGET:CLASS PERMS; [ COND ]:BRANCH` lines.
pub fn allow_lines(text: &str) -> Vec<AllowLine> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("allow ")?;
            let (rule, tail) = rest.split_once(';')?;
            let mut fields = rule.splitn(3, ' ');
            let source = fields.next()?.to_owned();
            let (target, class) = fields.next()?.split_once(':')?;
            let perms = fields
                .next()?
                .split_whitespace()
                .filter(|p| !matches!(*p, "{" | "}"))
                .map(str::to_owned)
                .collect();
            let conditional = tail
                .trim()
                .strip_prefix('[')
                .and_then(|c| c.rsplit_once(']'));
            let condition = conditional.map(|(c, _)| c.trim().to_owned());
            let when = conditional.is_none_or(|(_, branch)| branch.trim() != ":False");
            Some(AllowLine {
                source,
                target: target.to_owned(),
                class: class.to_owned(),
                perms,
                condition,
                when,
                text: line.trim().to_owned(),
            })
        })
        .collect()
}

/// `(source, target)` type pairs of `allow` lines, attributes expanded and
/// `self` resolved.
pub fn allow_pairs(
    lines: &[AllowLine],
    attributes: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<(String, String)> {
    let expand = |name: &str| -> Vec<String> {
        match attributes.get(name) {
            Some(members) => members.iter().cloned().collect(),
            None => vec![name.to_owned()],
        }
    };
    let mut pairs = Vec::new();
    for line in lines {
        for source in expand(&line.source) {
            if line.target == "self" {
                pairs.push((source.clone(), source));
                continue;
            }
            for target in expand(&line.target) {
                pairs.push((source.clone(), target));
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian's policy (package selinux-policy-default, in `.ci/packages`).
    const DEBIAN_POLICY: &str = "/etc/selinux/default/policy/policy.33";

    #[test]
    fn the_session_answers_as_the_commands_do() {
        let policy = Path::new(DEBIAN_POLICY);
        assert!(
            policy.is_file(),
            "{DEBIAN_POLICY} missing: apt-get install selinux-policy-default"
        );
        let classes = "dir,file,lnk_file,chr_file,blk_file,sock_file,fifo_file";
        let queries: [(&'static str, &[&str]); 7] = [
            ("seinfo", &["-x", "-t", "-a", "-c", "--common", "-b"]),
            ("seinfo", &["-x", "-a"]),
            ("seinfo", &["-a", "-x"]),
            ("sesearch", &["-A"]),
            (
                "sesearch",
                &["-A", "-c", "process", "-p", "transition,dyntransition"],
            ),
            (
                "sesearch",
                &[
                    "-A",
                    "-rt",
                    "-t",
                    "^(var_log_t|var_lib_t|shadow_t)$",
                    "-c",
                    classes,
                ],
            ),
            (
                "sesearch",
                &["-A", "-rt", "-t", "^(no_such_t)$", "-c", classes],
            ),
        ];
        for (tool, args) in queries {
            let Answer::Out(answered) = session_query(tool, args, policy) else {
                panic!("the session did not answer {tool} {args:?}");
            };
            let command = run_command(tool, args, policy).unwrap();
            assert!(command.lines().count() > 0 || args.contains(&"^(no_such_t)$"));
            assert_eq!(answered, command, "{tool} {args:?}");
        }
        // Control: a form it does not know is left to the command.
        assert!(matches!(
            session_query("sesearch", &["-A", "-s", "init_t"], policy),
            Answer::Unavailable
        ));
        assert!(run("sesearch", &["-A", "-s", "init_t"], policy)
            .unwrap()
            .contains("allow init_t "));
    }

    /// The session reads the allow rules without walking the name-based
    /// type transitions (it stops at the first, and takes the conditional
    /// rules from the conditionals): on a policy with both, after
    /// unconditional rules, it answers `sesearch -A` as the command does.
    #[test]
    fn the_session_reads_allow_rules_around_name_based_transitions() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("p.cil");
        std::fs::write(
            &input,
            "(class file (read write))\n(classorder (file))\n(class process (transition))\n\
             (classorder (unordered process))\n(sid kernel)\n(sidorder (kernel))\n\
             (user u)\n(role r)\n(type a_t)\n(type b_t)\n(type c_t)\n(userrole u r)\n\
             (roletype r a_t)\n(sensitivity s0)\n(sensitivityorder (s0))\n(category c0)\n\
             (categoryorder (c0))\n(sensitivitycategory s0 (c0))\n(userlevel u (s0))\n\
             (userrange u ((s0) (s0)))\n(sidcontext kernel (u r a_t ((s0) (s0))))\n\
             (allow a_t b_t (file (read)))\n(allow b_t c_t (file (write)))\n\
             (typetransition a_t b_t file \"one\" c_t)\n(typetransition a_t c_t file \"two\" b_t)\n\
             (boolean on true)\n(boolean off false)\n\
             (booleanif on (true (allow a_t c_t (file (write)))))\n\
             (booleanif off (true (allow c_t a_t (file (read)))) (false (allow c_t b_t (file (read)))))\n",
        )
        .unwrap();
        let policy = dir.path().join("policy.33");
        let compiled = crate::secilc::run(&crate::secilc::Invocation {
            secilc: &crate::secilc::locate(None).unwrap(),
            inputs: vec![input],
            policy_out: &policy,
            file_contexts_out: &dir.path().join("file_contexts"),
            disable_neverallow: false,
            flags: crate::secilc::standalone_flags(),
        })
        .unwrap();
        assert!(compiled.success, "{}", compiled.output);
        let command = run_command("sesearch", &["-A"], &policy).unwrap();
        // Control: the policy has what the shortcut steps around.
        assert_eq!(command.lines().count(), 5, "{command}");
        assert_eq!(command.matches("]:").count(), 3, "{command}");
        let transitions = run_command("sesearch", &["-T"], &policy).unwrap();
        let named = |name: &str| {
            transitions
                .lines()
                .any(|l| l.ends_with(&format!(" {name};")))
        };
        assert!(named("one") && named("two"), "{transitions}");
        let Answer::Out(answered) = session_query("sesearch", &["-A"], &policy) else {
            panic!("the session did not answer");
        };
        assert_eq!(answered, command);
    }

    #[test]
    fn reads_conditional_allow_lines() {
        let lines = allow_lines(
            "allow a_t b_t:process { sigchld transition };\nallow c_t d_t:process transition; [ some_bool ]:True\nallow e_t f_t:file read; [ a && b ]:False\n",
        );
        assert_eq!(lines.len(), 3);
        assert!(lines[0].when && lines[1].when && !lines[2].when);
        assert_eq!(lines[2].condition.as_deref(), Some("a && b"));
        assert_eq!(
            lines[0].perms,
            BTreeSet::from(["sigchld".into(), "transition".into()])
        );
        assert_eq!(lines[1].condition.as_deref(), Some("some_bool"));
        assert_eq!(
            (
                lines[1].source.as_str(),
                lines[1].target.as_str(),
                lines[1].class.as_str()
            ),
            ("c_t", "d_t", "process")
        );
    }
}
