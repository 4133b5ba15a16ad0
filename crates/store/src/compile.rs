//! Compiling a store's modules the way libsemanage does, with the real
//! secilc or libsepol's CIL compiler in-process (the library secilc is a
//! front end of; [`Compiler`]): same module order (`strcmp` of names), same settings (policy
//! version, handle-unknown, target, dontaudit, tunables, optimisation), and
//! the same split of the file contexts into `file_contexts` and the home
//! directory template. Neverallows are checked as the store checks them
//! (`expand-check`) for the prediction, and always for the proof.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::open::{Form, Settings, Store};
use super::StoreError;
use policy::secilc::{self, Flags, Invocation, NeverallowProbe, SecilcOutput};

/// What compiles CIL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compiler {
    /// The `secilc` command: one process, one parse and resolution, per
    /// binary.
    Secilc(PathBuf),
    /// libsepol's CIL compiler (`sepol::library`) in a helper process
    /// (`sepol::Helper`: the semanifest binary): store + module parsed and
    /// resolved once for the checked and the as-store binary.
    Libsepol {
        helper: sepol::Helper,
        library: PathBuf,
    },
}

impl Compiler {
    /// libsepol through `helper` when it can be loaded and no secilc was
    /// asked for; else the explicit secilc, or the first on `PATH`.
    pub fn choose(secilc: Option<&Path>, helper: Option<&Path>) -> Result<Compiler, StoreError> {
        if secilc.is_none() {
            if let Some(helper) = helper {
                match sepol::library() {
                    Ok(library) => {
                        return Ok(Compiler::Libsepol {
                            helper: sepol::Helper::new(helper),
                            library,
                        })
                    }
                    Err(why) => tracing::debug!("compiling with secilc: {why}"),
                }
            }
        }
        Ok(Compiler::Secilc(secilc::locate(secilc)?))
    }

    /// `secilc` or `libsepol`: what the report says proved.
    pub fn name(&self) -> &'static str {
        match self {
            Compiler::Secilc(_) => "secilc",
            Compiler::Libsepol { .. } => "libsepol",
        }
    }

    /// The compiler and where it is, for messages.
    pub fn describe(&self) -> String {
        match self {
            Compiler::Secilc(path) => format!("secilc ({})", path.display()),
            Compiler::Libsepol { library, .. } => {
                format!(
                    "libsepol's CIL compiler, as secilc runs it ({})",
                    library.display()
                )
            }
        }
    }

    /// The programs whose identity keys the cache.
    pub(crate) fn programs(&self) -> Vec<PathBuf> {
        match self {
            Compiler::Secilc(path) => {
                let mut programs = vec![path.clone()];
                programs.extend(super::cache::libsepol());
                programs
            }
            Compiler::Libsepol { helper, library } => {
                vec![helper.program().to_owned(), library.clone()]
            }
        }
    }

    /// Whether this compiler enforces neverallows at all (a policy of a
    /// few lines, twice: see [`NeverallowProbe`]).
    pub(crate) fn probe_neverallows(&self, dir: &Path) -> Result<NeverallowProbe, StoreError> {
        match self {
            Compiler::Secilc(path) => Ok(secilc::probe_neverallows(path, dir)?),
            Compiler::Libsepol { helper, .. } => {
                secilc::probe_neverallows_with(dir, |input, policy_out, file_contexts_out| {
                    let request = sepol::Request {
                        inputs: vec![input.to_owned()],
                        builds: vec![sepol::Build {
                            policy_out: policy_out.to_owned(),
                            file_contexts_out: file_contexts_out.to_owned(),
                            check_neverallows: true,
                        }],
                        ..sepol::Request::default()
                    };
                    let outcome = helper.compile(&request)?.remove(0);
                    Ok::<_, StoreError>(match outcome {
                        sepol::Outcome::Written { output } => SecilcOutput {
                            success: true,
                            output,
                        },
                        sepol::Outcome::Refused { output } => SecilcOutput {
                            success: false,
                            output,
                        },
                        sepol::Outcome::Skipped => SecilcOutput {
                            success: false,
                            output: String::new(),
                        },
                    })
                })
            }
        }
    }
}

/// One of the store's neverallows that its own modules break.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreViolation {
    /// `MODULE.cil:LINE` of the neverallow (the module's CIL as the store
    /// holds it); an `--include` file or extracted CIL by its own name.
    pub at: String,
    /// `(neverallow SOURCE TARGET …)`, first two names.
    pub neverallow: String,
    /// How many rules break it.
    pub rules: usize,
}

impl StoreViolation {
    /// The file (as `at` names it) and line of the neverallow.
    pub(crate) fn location(&self) -> Option<(&str, usize)> {
        let (file, line) = self.at.rsplit_once(':')?;
        Some((file, line.parse().ok()?))
    }
}

/// A module to compile: its name (which orders it) and its CIL file.
#[derive(Debug, Clone)]
pub struct Input {
    pub name: String,
    pub path: PathBuf,
}

/// Where each active module of `store` can be read as a CIL file: the
/// extracted files themselves, or decompressed copies in `dir`.
pub(crate) fn module_inputs(store: &Store, dir: &Path) -> Result<Vec<Input>, StoreError> {
    if let Form::ExtractedCil { .. } = store.form {
        return Ok(store
            .modules
            .iter()
            .map(|m| Input {
                name: m.name.clone(),
                path: m.path.clone(),
            })
            .collect());
    }
    fs::create_dir_all(dir).map_err(|error| StoreError::io(dir, error))?;
    store
        .modules
        .iter()
        .map(|module| {
            // Module names are directory names in the store: plain, but not trusted.
            let file = dir.join(format!("{}.cil", module.name.replace('/', "_")));
            fs::write(&file, &module.cil).map_err(|error| StoreError::io(&file, error))?;
            Ok(Input {
                name: module.name.clone(),
                path: file,
            })
        })
        .collect()
}

/// The secilc flags libsemanage would use for this store.
pub(crate) fn flags(settings: &Settings) -> Flags {
    Flags {
        mls: None,
        policy_version: settings.policy_version,
        handle_unknown: settings.handle_unknown.clone(),
        target_platform: settings.target_platform.clone(),
        disable_dontaudit: settings.disable_dontaudit,
        preserve_tunables: settings.preserve_tunables,
        optimize: settings.optimize,
    }
}

/// One compilation's results, in its own directory.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub policy: PathBuf,
    /// `file_contexts` as the store installs it (template lines split off).
    pub file_contexts: PathBuf,
    /// The lines libsemanage moves to `homedir_template`.
    pub homedir_template: String,
}

/// secilc refused the modules; `output` is what it said.
#[derive(Debug, Clone)]
pub(crate) struct Refused {
    pub output: String,
}

/// Which neverallows a compilation checks. The binary is the same either
/// way; only whether secilc refuses differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Neverallows {
    /// As libsemanage does for the store: only with `expand-check` on.
    AsStore,
    /// Every one, whatever the store says (a proof).
    Checked,
}

/// Compiles `inputs` (sorted here by name, as libsemanage does) into
/// `out_dir/policy.33` and `out_dir/file_contexts`, with the store's
/// settings (optimisation included) and `neverallows` checked as asked.
pub(crate) fn compile(
    compiler: &Compiler,
    settings: &Settings,
    inputs: &[Input],
    out_dir: &Path,
    neverallows: Neverallows,
) -> Result<Result<Compiled, Refused>, StoreError> {
    let target = Target::new(out_dir)?;
    let disable_neverallow = neverallows == Neverallows::AsStore && !settings.expand_check;
    match compiler {
        Compiler::Secilc(path) => {
            let outcome = secilc::run(&Invocation {
                secilc: path,
                inputs: in_order(inputs),
                policy_out: &target.policy,
                file_contexts_out: &target.all_contexts,
                disable_neverallow,
                flags: flags(settings),
            })?;
            if outcome.success {
                target.finish().map(Ok)
            } else {
                Ok(Err(Refused {
                    output: outcome.output,
                }))
            }
        }
        Compiler::Libsepol { helper, .. } => {
            let request = sepol::Request {
                flags: flags(settings),
                inputs: in_order(inputs),
                builds: vec![target.build(!disable_neverallow)],
                ..sepol::Request::default()
            };
            let outcome = helper.compile(&request)?.remove(0);
            target.outcome(outcome)
        }
    }
}

/// Store + module compiled twice at once: every neverallow checked (the
/// proof) and as the store compiles it (the binary). `as_store` is `None`
/// when the checked build was accepted: its binary is the same bytes. With
/// libsepol the two share one parse and resolution.
pub(crate) struct Both {
    pub checked: Result<Compiled, Refused>,
    pub as_store: Option<Result<Compiled, Refused>>,
}

pub(crate) fn compile_both(
    compiler: &Compiler,
    settings: &Settings,
    inputs: &[Input],
    checked_dir: &Path,
    as_store_dir: &Path,
    started: Option<sepol::Started>,
) -> Result<Both, StoreError> {
    let Compiler::Libsepol { helper, .. } = compiler else {
        let (checked, as_store) = std::thread::scope(|scope| {
            let as_store = scope.spawn(|| {
                compile(
                    compiler,
                    settings,
                    inputs,
                    as_store_dir,
                    Neverallows::AsStore,
                )
            });
            let checked = compile(
                compiler,
                settings,
                inputs,
                checked_dir,
                Neverallows::Checked,
            );
            (checked, as_store.join())
        });
        let as_store =
            as_store.map_err(|_| StoreError::Stopped("the compilation of store + module"))?;
        let checked = checked?;
        return Ok(Both {
            as_store: if checked.is_ok() {
                None
            } else {
                Some(as_store?)
            },
            checked,
        });
    };
    let checked_target = Target::new(checked_dir)?;
    let as_store_target = Target::new(as_store_dir)?;
    let outcomes = match started {
        Some(started) => started.finish()?,
        None => helper.compile(&both_request(
            settings,
            inputs,
            &checked_target,
            &as_store_target,
            None,
        ))?,
    };
    let mut outcomes = outcomes.into_iter();
    let (Some(checked), Some(as_store)) = (outcomes.next(), outcomes.next()) else {
        return Err(StoreError::Stopped("the compilation of store + module"));
    };
    let checked = checked_target.outcome(checked)?;
    let as_store = match as_store {
        sepol::Outcome::Skipped => None,
        outcome => Some(as_store_target.outcome(outcome)?),
    };
    Ok(Both { checked, as_store })
}

/// [`compile_both`]'s request to libsepol; with `pending`, one of
/// `inputs` not written yet, parsed only once the request is let go.
fn both_request(
    settings: &Settings,
    inputs: &[Input],
    checked: &Target,
    as_store: &Target,
    pending: Option<&Path>,
) -> sepol::Request {
    let inputs = in_order(inputs);
    let parse_first = pending.and_then(|pending| inputs.iter().position(|path| path == pending));
    sepol::Request {
        flags: flags(settings),
        inputs,
        builds: vec![checked.build(true), as_store.build(settings.expand_check)],
        first_suffices: true,
        parse_first,
    }
}

/// [`compile_both`] started before `pending`, one of `inputs`, is written
/// (libsepol only; `None` otherwise): the inputs that sort before it are
/// parsed meanwhile. [`compile_both`] lets it go on.
pub(crate) fn start_both(
    compiler: &Compiler,
    settings: &Settings,
    inputs: &[Input],
    pending: &Path,
    checked_dir: &Path,
    as_store_dir: &Path,
) -> Result<Option<sepol::Started>, StoreError> {
    let Compiler::Libsepol { helper, .. } = compiler else {
        return Ok(None);
    };
    let request = both_request(
        settings,
        inputs,
        &Target::new(checked_dir)?,
        &Target::new(as_store_dir)?,
        Some(pending),
    );
    Ok(Some(helper.start(&request)?))
}

/// Where one compilation writes: secilc's two files, then `file_contexts`
/// split as libsemanage splits it.
struct Target {
    dir: PathBuf,
    policy: PathBuf,
    all_contexts: PathBuf,
}

impl Target {
    fn new(dir: &Path) -> Result<Target, StoreError> {
        fs::create_dir_all(dir).map_err(|error| StoreError::io(dir, error))?;
        Ok(Target {
            dir: dir.to_owned(),
            policy: dir.join("policy.33"),
            all_contexts: dir.join("file_contexts.all"),
        })
    }

    fn build(&self, check_neverallows: bool) -> sepol::Build {
        sepol::Build {
            policy_out: self.policy.clone(),
            file_contexts_out: self.all_contexts.clone(),
            check_neverallows,
        }
    }

    /// What libsepol's build into this target came to.
    fn outcome(self, outcome: sepol::Outcome) -> Result<Result<Compiled, Refused>, StoreError> {
        match outcome {
            sepol::Outcome::Written { .. } => self.finish().map(Ok),
            sepol::Outcome::Refused { output } => Ok(Err(Refused { output })),
            sepol::Outcome::Skipped => Ok(Err(Refused {
                output: "not built: another build sufficed".to_owned(),
            })),
        }
    }

    fn finish(self) -> Result<Compiled, StoreError> {
        let text = fs::read(&self.all_contexts)
            .map_err(|error| StoreError::io(&self.all_contexts, error))?;
        let (main, template) = split_file_contexts(&text);
        let file_contexts = self.dir.join("file_contexts");
        fs::write(&file_contexts, main).map_err(|error| StoreError::io(&file_contexts, error))?;
        let _ = fs::remove_file(&self.all_contexts);
        Ok(Compiled {
            policy: self.policy,
            file_contexts,
            homedir_template: String::from_utf8_lossy(&template).into_owned(),
        })
    }
}

/// `inputs`, with each neverallow of `broken` voided in a copy written
/// into `dir`: its permissions become `(and P (not P))`, the empty set.
/// It still names the attributes it named, so secilc keeps exactly the
/// same attributes and writes the same binary (the tests compare it with
/// what `semodule` installs), but it can no longer fail: store + module
/// then compile with every other neverallow checked, the prediction and
/// the proof in one compilation. `None` when one of them is not a plain
/// `(neverallow SOURCE TARGET (CLASS (PERMS…)))` alone on its line.
pub(crate) fn void_neverallows(
    inputs: &[Input],
    broken: &[StoreViolation],
    dir: &Path,
) -> Result<Option<Vec<Input>>, StoreError> {
    let mut lines: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for violation in broken {
        let Some((file, line)) = violation.location() else {
            return Ok(None);
        };
        // A module not compiled here (one the build replaces) needs nothing.
        if let Some(index) = inputs.iter().position(|input| input_is(input, file)) {
            lines.entry(index).or_default().insert(line);
        }
    }
    if lines.is_empty() {
        return Ok(Some(inputs.to_vec()));
    }
    fs::create_dir_all(dir).map_err(|error| StoreError::io(dir, error))?;
    let mut voided = inputs.to_vec();
    for (index, numbers) in lines {
        let input = &inputs[index];
        let text = fs::read_to_string(&input.path).map_err(|e| StoreError::io(&input.path, e))?;
        let mut out = String::with_capacity(text.len() + 64 * numbers.len());
        for (number, line) in text.split_inclusive('\n').enumerate() {
            if numbers.contains(&(number + 1)) {
                let Some(void) = void_line(line) else {
                    return Ok(None);
                };
                out.push_str(&void);
            } else {
                out.push_str(line);
            }
        }
        let copy_dir = dir.join(index.to_string());
        fs::create_dir_all(&copy_dir).map_err(|error| StoreError::io(&copy_dir, error))?;
        let file = copy_dir.join(format!("{}.cil", input.name.replace('/', "_")));
        fs::write(&file, out).map_err(|error| StoreError::io(&file, error))?;
        voided[index].path = file;
    }
    Ok(Some(voided))
}

/// Whether `file` (as a violation names it) is `input`'s file.
pub(crate) fn input_is(input: &Input, file: &str) -> bool {
    input.path.as_os_str() == file || input.path.file_name().is_some_and(|name| name == file)
}

/// The line with its one `(neverallow S T (CLASS (PERMS)))` voided.
fn void_line(line: &str) -> Option<String> {
    let start = line.find("(neverallow ")?;
    if line[start + 1..].contains("(neverallow ") {
        return None;
    }
    let end = start + list_end(&line[start..])?;
    let items = list_items(&line[start + 1..end - 1])?;
    let [keyword, source, target, classperms] = items.as_slice() else {
        return None;
    };
    if *keyword != "neverallow" || !classperms.starts_with('(') {
        return None;
    }
    let inner = list_items(&classperms[1..classperms.len() - 1])?;
    let [class, perms] = inner.as_slice() else {
        return None;
    };
    if !perms.starts_with('(') || class.starts_with('(') {
        return None;
    }
    Some(format!(
        "{}(neverallow {source} {target} ({class} (and {perms} (not {perms})))){}",
        &line[..start],
        &line[end..]
    ))
}

/// The length of the list `text` starts with, closing parenthesis included.
fn list_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            '"' | ';' => return None,
            _ => {}
        }
    }
    None
}

/// The items of a list's inside: atoms and whole sub-lists.
fn list_items(text: &str) -> Option<Vec<&str>> {
    let mut items = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let len = if rest.starts_with('(') {
            list_end(rest)?
        } else {
            rest.find(|c: char| c.is_whitespace() || c == '(' || c == ')')
                .unwrap_or(rest.len())
        };
        if len == 0 {
            return None;
        }
        items.push(&rest[..len]);
        rest = rest[len..].trim_start();
    }
    Some(items)
}

/// The input files in libsemanage's order: `strcmp` of the module names.
fn in_order(inputs: &[Input]) -> Vec<PathBuf> {
    let mut ordered: Vec<&Input> = inputs.iter().collect();
    ordered.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    ordered.iter().map(|input| input.path.clone()).collect()
}

/// libsemanage's `semanage_split_fc`: a line that starts with `HOME_DIR` or
/// `HOME_ROOT`, or contains `ROLE` or `USER` anywhere, is a template line
/// for `genhomedircon`; every other line is `file_contexts`.
pub(crate) fn split_file_contexts(text: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut main = Vec::with_capacity(text.len());
    let mut template = Vec::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        let contains = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
        if line.starts_with(b"HOME_DIR")
            || line.starts_with(b"HOME_ROOT")
            || contains(b"ROLE")
            || contains(b"USER")
        {
            template.extend_from_slice(line);
        } else {
            main.extend_from_slice(line);
        }
    }
    (main, template)
}

/// Whether two files hold the same bytes.
pub(crate) fn same_bytes(a: &Path, b: &Path) -> Result<bool, StoreError> {
    let left = fs::read(a).map_err(|error| StoreError::io(a, error))?;
    let right = fs::read(b).map_err(|error| StoreError::io(b, error))?;
    Ok(left == right)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_neverallow_is_voided_in_place_keeping_what_it_names() {
        assert_eq!(
            void_line("(neverallow base_typeattr_1 memory_device_t (chr_file (read write)))\n").as_deref(),
            Some("(neverallow base_typeattr_1 memory_device_t (chr_file (and (read write) (not (read write)))))\n")
        );
        assert_eq!(
            void_line("  (neverallow (not a) b (file (all)))").as_deref(),
            Some("  (neverallow (not a) b (file (and (all) (not (all)))))")
        );
        // Named permission sets, two statements on a line, comments: not voided.
        assert_eq!(void_line("(neverallow a b cps)"), None);
        assert_eq!(
            void_line("(neverallow a b (file (read))) (neverallow a c (file (read)))"),
            None
        );
        assert_eq!(void_line("(neverallow a b (file (read ; x"), None);
        assert_eq!(void_line("(allow a b (file (read)))"), None);
    }

    #[test]
    fn template_lines_are_split_off_like_libsemanage() {
        let text = b"/var(/.*)?\tsystem_u:object_r:var_t:s0\nHOME_DIR/.ssh\tsystem_u:object_r:ssh_home_t:s0\n/run/user/%{USERID}\t-d\tx\n/tmp/ROLE_x\ty\nHOME_ROOT\tz\n/usr\tw";
        let (main, template) = split_file_contexts(text);
        assert_eq!(main, b"/var(/.*)?\tsystem_u:object_r:var_t:s0\n/usr\tw");
        assert_eq!(template, b"HOME_DIR/.ssh\tsystem_u:object_r:ssh_home_t:s0\n/run/user/%{USERID}\t-d\tx\n/tmp/ROLE_x\ty\nHOME_ROOT\tz\n");
    }
}
