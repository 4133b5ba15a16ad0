//! `build --target module` and `check --against`: the layout as a module on
//! a store, predicted, checked and proven.
//!
//! 1. [`Baseline::prepare`] opens the store and reads what it says: from
//!    the policy the store built itself when it has one (the whole store
//!    is compiled beside the rest of the build, the way libsemanage
//!    would, and compared with it byte for byte), else from the store
//!    compiled here.
//! 2. [`build`] decides (domain mapping, workload set, `filecon` lines
//!    that win, store access carried over to re-typed paths), renders the
//!    module, compiles store + module as the store would and proves every
//!    neverallow with a compiler shown to enforce them, proves the merged
//!    file contexts with the lookup engine, and reads the predicted binary
//!    back: who else reaches each protected type, and which store domains
//!    lost access to a re-typed path.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use super::cache::{Cache, Key, KeyBuilder};
use super::carry::{self, Carried, LossInputs, Losses, Retyped};
use super::compile::{self, Compiled, Compiler, Input, Neverallows, StoreViolation};
use super::domains::{map_domains, DomainMapping, Origin};
use super::facts::Facts;
use super::filecons::{self, Purpose, Resolution, Siblings, StoreContexts, StoreSpec};
use super::module_report::{render_text, ModuleReport, PathReport, ProvenProtection, Verification};
use super::open::{Built, Form, Settings, Store};
use super::profile::{Profile, ProfileName};
use super::proof::{self, Proof};
use super::reach::{self, Leftover, Protected, ReachInputs};
use super::workload_set::Workloads;
use super::StoreError;
use layout::manifest::{BaseFacts, Parsed};
use layout::model::host::{StoreFamily, StoreGrants};
use layout::model::{BooleanGrants, Layout};
use policy::kernel_policy::KernelPolicy;
use policy::secilc::{self, FailedNeverallow};
use policy::setools::AllowLine;
use policy::store_module::{self, CopiedRule, FileconLine, HostGrants, StoreTarget};
use policy::Violation;
use selabel::FileContexts;

/// How to build against a store.
#[derive(Debug, Clone, Default)]
pub struct ModuleOptions {
    /// Explicit secilc; `None`: libsepol through `helper` when there is
    /// one and libsepol loads, else the first `secilc` on `PATH`.
    pub secilc: Option<PathBuf>,
    /// The program that serves `sepol::SUBCOMMAND` (the semanifest binary):
    /// libsepol's CIL compiler in a helper process ([`Compiler`]).
    pub helper: Option<PathBuf>,
    /// `None`: detect from the store's names.
    pub profile: Option<ProfileName>,
    /// `DOMAIN=TYPE`: the store type a layout domain (by key) runs as.
    pub maps: Vec<(String, String)>,
    /// Extra CIL compiled in as further modules (held to the protections).
    pub includes: Vec<PathBuf>,
}

/// A compilation that runs beside the rest of the build; joined once,
/// when first asked for, and before its working directory goes away.
struct Background<T> {
    handle: Mutex<Option<JoinHandle<T>>>,
    value: OnceLock<T>,
}

impl<T: Send + 'static> Background<T> {
    fn spawn(work: impl FnOnce() -> T + Send + 'static) -> Self {
        Background {
            handle: Mutex::new(Some(std::thread::spawn(work))),
            value: OnceLock::new(),
        }
    }
}

impl<T> Background<T> {
    fn get(&self) -> Option<&T> {
        if let Some(value) = self.value.get() {
            return Some(value);
        }
        let handle = self.handle.lock().ok()?.take()?;
        let value = handle.join().ok()?;
        Some(self.value.get_or_init(|| value))
    }
}

impl<T> Drop for Background<T> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.get_mut().ok().and_then(Option::take) {
            let _ = handle.join();
        }
    }
}

/// The store compiled as it is, compared with what it built.
struct AsBuilt {
    /// Our compilation (`None` when the cache answered).
    compiled: Option<Result<Compiled, compile::Refused>>,
    verification: Verification,
    /// The cache key of the store's content, to remember what the build
    /// learns about it.
    key: Option<Key>,
}

/// What the cache keeps about a store whose compilation was verified.
#[derive(serde::Serialize, serde::Deserialize)]
struct VerifiedStore {
    policy_bytes: u64,
    /// The store's own neverallows its modules break.
    store_violations: Vec<StoreViolation>,
}

/// A value another thread sends once.
struct Later<T> {
    receiver: Mutex<Option<mpsc::Receiver<T>>>,
    value: OnceLock<Option<T>>,
}

impl<T> Later<T> {
    fn get(&self) -> Option<&T> {
        self.value
            .get_or_init(|| {
                let receiver = self.receiver.lock().ok()?.take()?;
                receiver.recv().ok()
            })
            .as_ref()
    }
}

/// The store without the module, and what it says.
pub struct Baseline {
    pub store: Store,
    pub compiler: Compiler,
    /// The store's modules the build compiles with (the layout's own
    /// module of an earlier build left out).
    pub inputs: Vec<Input>,
    /// Every module of the store, as it is.
    all_inputs: Vec<Input>,
    /// The policy the facts were read from: the store's own `policy.kern`,
    /// or the store compiled here.
    stock_policy: PathBuf,
    /// That policy, read.
    stock_read: KernelPolicy,
    stock_file_contexts: PathBuf,
    /// The store without the layout's module, compiled here, when that
    /// was needed before the build (no built policy, or a module to leave
    /// out); otherwise it is `as_built`.
    stock: Option<Compiled>,
    /// The whole store compiled and compared with what it built, in the
    /// background (or answered by the cache), when it has built a policy.
    as_built: Option<Background<Result<AsBuilt, Arc<StoreError>>>>,
    /// The store's own neverallows its modules break, when an earlier
    /// build verified this store (`None` inside: a cold build).
    verified_earlier: Option<Later<Option<Vec<StoreViolation>>>>,
    cache: Cache,
    pub facts: Facts,
    pub profile: &'static Profile,
    pub specs: Vec<StoreSpec>,
    pub siblings: Siblings,
    /// A module of the layout's name already in the store, left out of the
    /// baseline (the new one replaces it), with its priority.
    pub replaces: Option<(String, Option<u16>)>,
    /// Declared last: dropped after the background compilation is joined.
    work: tempfile::TempDir,
}

impl Baseline {
    /// Opens the store and reads it. `exclude` leaves out a module of that
    /// name (an older version of the layout's own module).
    pub fn prepare(
        path: &Path,
        options: &ModuleOptions,
        exclude: Option<&str>,
    ) -> Result<Baseline, StoreError> {
        let store = Store::open(path)?;
        tracing::debug!("store read: {} modules", store.modules.len());
        let compiler = Compiler::choose(options.secilc.as_deref(), options.helper.as_deref())?;
        let work = tempfile::Builder::new()
            .prefix("semanifest-store-")
            .tempdir()
            .map_err(|e| StoreError::io(Path::new("temporary directory"), e))?;
        let all_inputs = compile::module_inputs(&store, &work.path().join("modules"))?;
        let replaces = exclude
            .and_then(|name| store.module(name))
            .map(|m| (m.name.clone(), m.priority));
        if let Some((name, Some(priority))) = &replaces {
            if *priority > 400 {
                return Err(StoreError::Shadowed {
                    name: name.clone(),
                    priority: *priority,
                });
            }
        }
        let inputs: Vec<Input> = all_inputs
            .iter()
            .filter(|input| {
                replaces
                    .as_ref()
                    .is_none_or(|(name, _)| &input.name != name)
            })
            .cloned()
            .collect();

        let built = match (&store.built.policy, &store.built.file_contexts) {
            (Some(policy), Some(contexts)) => Some((policy.clone(), contexts.clone())),
            _ => None,
        };
        let cache = Cache::from_env();
        let (as_built, verified_earlier) = match &built {
            None => (None, None),
            Some(_) => {
                let (sender, receiver) = mpsc::channel();
                let check = CheckAsBuilt {
                    compiler: compiler.clone(),
                    store_built: store.built.clone(),
                    settings: store.settings.clone(),
                    inputs: all_inputs.clone(),
                    work: work.path().to_owned(),
                    cache: cache.clone(),
                };
                (
                    Some(Background::spawn(move || check.run(&sender))),
                    Some(Later {
                        receiver: Mutex::new(Some(receiver)),
                        value: OnceLock::new(),
                    }),
                )
            }
        };
        let (stock, stock_policy, stock_file_contexts) = match (&built, &replaces) {
            (Some((policy, contexts)), None) => (None, policy.clone(), contexts.clone()),
            _ => {
                let compiled =
                    compile_stock(&compiler, &store, &inputs, &work.path().join("stock"))?;
                let (policy, contexts) = (compiled.policy.clone(), compiled.file_contexts.clone());
                (Some(compiled), policy, contexts)
            }
        };

        let stock_read = KernelPolicy::read(&stock_policy)?;
        let mut facts = Facts::read(&store, &stock_read);
        tracing::debug!("facts read: {} types", facts.types.len());
        if let Some((name, _)) = &replaces {
            facts.providers.retain(|_, module| module != name);
            for modules in facts.filecon_modules.values_mut() {
                modules.remove(name);
            }
        }
        let profile = choose_profile(&facts, options.profile)?;
        let text = fs::read_to_string(&stock_file_contexts)
            .map_err(|e| StoreError::io(&stock_file_contexts, e))?;
        let specs = filecons::parse_specs(&text);
        let siblings = siblings(&store);
        Ok(Baseline {
            store,
            compiler,
            inputs,
            all_inputs,
            stock_policy,
            stock_read,
            stock_file_contexts,
            stock,
            as_built,
            verified_earlier,
            cache,
            facts,
            profile,
            specs,
            siblings,
            replaces,
            work,
        })
    }

    /// What the manifest rules need: the store's types (aliases included),
    /// adopted rather than refused.
    pub fn base_facts(&self) -> BaseFacts {
        let mut types: BTreeSet<String> = self.facts.types.keys().cloned().collect();
        types.extend(self.facts.aliases.keys().cloned());
        BaseFacts {
            types,
            adopt_existing: true,
        }
    }

    /// The distribution policy family the store's profile belongs to:
    /// what its host classes grant ([`layout::manifest::for_store`]).
    pub fn family(&self) -> StoreFamily {
        match self.profile.name {
            ProfileName::Refpolicy => StoreFamily::Refpolicy,
            ProfileName::ContainerSelinux => StoreFamily::ContainerSelinux,
        }
    }

    pub fn work_dir(&self) -> &Path {
        self.work.path()
    }

    /// The policy the store's facts come from.
    pub fn stock_policy(&self) -> &Path {
        &self.stock_policy
    }

    /// The stock file contexts (with the store's siblings), for lookups.
    pub fn stock_contexts(&self) -> Result<FileContexts, StoreError> {
        let dir = self.work.path().join("stock-lookup");
        let text = fs::read_to_string(&self.stock_file_contexts)
            .map_err(|e| StoreError::io(&self.stock_file_contexts, e))?;
        let main = self.siblings.write_with(&dir, &text)?;
        FileContexts::load(&main).map_err(|e| StoreError::FileContexts(e.to_string()))
    }

    /// How our compilation of the store compares with what it built
    /// itself (waits for the background compilation).
    pub fn verification(&self) -> Result<Verification, StoreError> {
        let Some(as_built) = &self.as_built else {
            return Ok(Verification::Unavailable {
                why: unavailable_because(&self.store),
            });
        };
        match as_built.get() {
            Some(Ok(checked)) => Ok(checked.verification.clone()),
            Some(Err(error)) => Err(StoreError::AsIs(Arc::clone(error))),
            None => Err(StoreError::Stopped("the compilation of the store as it is")),
        }
    }

    /// Whether the store as it is was answered from the cache (waits
    /// for the background check).
    pub fn verified_earlier(&self) -> bool {
        matches!(
            self.as_built.as_ref().and_then(Background::get),
            Some(Ok(AsBuilt { compiled: None, .. }))
        )
    }

    /// The store's own neverallows its modules break, when an earlier
    /// build verified this store (waits for the cache's answer only).
    fn earlier_violations(&self) -> Option<Vec<StoreViolation>> {
        self.verified_earlier
            .as_ref()
            .and_then(Later::get)
            .cloned()
            .flatten()
    }

    /// Keeps what a cold build learnt about the store (its own broken
    /// neverallows) in the cache, once the store as it is was verified
    /// (waits for that compilation).
    fn remember(&self, store_violations: &[StoreViolation]) {
        let Some(Some(Ok(AsBuilt {
            compiled: Some(_),
            verification: Verification::Identical { policy_bytes },
            key: Some(key),
        }))) = self.as_built.as_ref().map(Background::get)
        else {
            return;
        };
        self.cache.put(
            "as-built",
            key,
            &VerifiedStore {
                policy_bytes: *policy_bytes,
                store_violations: store_violations.to_vec(),
            },
        );
    }

    /// Writes the stock store's predicted `policy.33` and `file_contexts`
    /// (with siblings) into `dir`.
    pub fn write_stock(&self, dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
        if let Some(stock) = &self.stock {
            return write_outputs(dir, stock, &self.siblings);
        }
        match self.as_built.as_ref().and_then(Background::get) {
            Some(Ok(AsBuilt {
                compiled: Some(Ok(compiled)),
                ..
            })) => write_outputs(dir, compiled, &self.siblings),
            Some(Ok(AsBuilt {
                compiled: Some(Err(refused)),
                ..
            })) => Err(StoreError::StockRefused {
                output: refused.output.clone(),
                hint: None,
            }),
            // The cache answered: compile it now, for its outputs.
            Some(Ok(AsBuilt { compiled: None, .. })) => {
                let compiled = compile_stock(
                    &self.compiler,
                    &self.store,
                    &self.all_inputs,
                    &self.work.path().join("stock-out"),
                )?;
                write_outputs(dir, &compiled, &self.siblings)
            }
            Some(Err(error)) => Err(StoreError::AsIs(Arc::clone(error))),
            None => Err(StoreError::Stopped("the compilation of the store as it is")),
        }
    }
}

/// The background check of the store as it is: answered by the cache
/// when an earlier build verified the same store content (what it learnt
/// is sent at once), else compiled as the store compiles it and compared
/// byte for byte with what the store built. The build that follows
/// remembers a verified store in the cache ([`Baseline::remember`]).
struct CheckAsBuilt {
    compiler: Compiler,
    store_built: Built,
    settings: Settings,
    inputs: Vec<Input>,
    work: PathBuf,
    cache: Cache,
}

impl CheckAsBuilt {
    fn key(&self) -> std::io::Result<Key> {
        let mut key = KeyBuilder::new("as-built");
        for program in self.compiler.programs() {
            key.program(&program);
        }
        // What compiles it, not where `semanage.conf` is: a copy of the
        // store is the same store.
        key.text(&format!(
            "{:?} expand-check={}",
            compile::flags(&self.settings),
            self.settings.expand_check
        ));
        let (Some(policy), Some(contexts)) =
            (&self.store_built.policy, &self.store_built.file_contexts)
        else {
            return Err(std::io::ErrorKind::NotFound.into());
        };
        key.file(policy)?.file(contexts)?;
        for input in &self.inputs {
            key.text(&input.name).file(&input.path)?;
        }
        Ok(key.finish())
    }

    fn run(
        self,
        sender: &mpsc::Sender<Option<Vec<StoreViolation>>>,
    ) -> Result<AsBuilt, Arc<StoreError>> {
        let key = self.key().ok().filter(|_| self.cache.is_on());
        let earlier = key
            .as_ref()
            .and_then(|key| self.cache.get::<VerifiedStore>("as-built", key));
        let _ = sender.send(earlier.as_ref().map(|e| e.store_violations.clone()));
        if let Some(entry) = earlier {
            tracing::debug!("store as it is: verified earlier (cache)");
            return Ok(AsBuilt {
                compiled: None,
                verification: Verification::Identical {
                    policy_bytes: entry.policy_bytes,
                },
                key,
            });
        }
        let compiled = compile::compile(
            &self.compiler,
            &self.settings,
            &self.inputs,
            &self.work.join("as-built"),
            Neverallows::AsStore,
        )
        .map_err(Arc::new)?;
        let verification = match &compiled {
            Ok(compiled) => verify(&self.store_built, compiled).map_err(Arc::new)?,
            Err(refused) => Verification::Differs {
                why: format!(
                    "the CIL compiler cannot compile the store as it is: {}",
                    refused.output.trim()
                ),
            },
        };
        Ok(AsBuilt {
            compiled: Some(compiled),
            verification,
            key,
        })
    }
}

fn compile_stock(
    compiler: &Compiler,
    store: &Store,
    inputs: &[Input],
    out: &Path,
) -> Result<Compiled, StoreError> {
    compile::compile(compiler, &store.settings, inputs, out, Neverallows::AsStore)?.map_err(
        |refused| {
            let hint = (!store.unknowns.is_empty()).then(|| store.unknowns.join("; "));
            StoreError::StockRefused {
                output: refused.output,
                hint,
            }
        },
    )
}

fn choose_profile(
    facts: &Facts,
    wanted: Option<ProfileName>,
) -> Result<&'static Profile, StoreError> {
    match wanted {
        Some(name) => {
            let profile = Profile::named(name);
            let missing = profile.missing(facts);
            if !missing.is_empty() {
                return Err(StoreError::Profile(format!(
                    "profile {} does not fit this store: it lacks {}",
                    name.as_str(),
                    missing.join(", ")
                )));
            }
            Ok(profile)
        }
        None => Profile::detect(facts).map_err(|why| {
            StoreError::Profile(format!(
                "cannot tell which profile the store follows ({why}); pass --profile"
            ))
        }),
    }
}

/// Why a store form has nothing to verify the prediction against.
fn unavailable_because(store: &Store) -> String {
    match &store.form {
        Form::ExtractedCil { .. } => {
            let mut why = vec!["extracted CIL holds no policy.kern to compare with".to_owned()];
            why.extend(store.unknowns.iter().cloned());
            why.join("; ")
        }
        _ => "the store has no active/policy.kern and file_contexts to compare with (never built?)"
            .to_owned(),
    }
}

/// Compares our compilation of the store with what it built.
fn verify(store_built: &Built, ours: &Compiled) -> Result<Verification, StoreError> {
    let (Some(policy), Some(contexts)) = (&store_built.policy, &store_built.file_contexts) else {
        return Ok(Verification::Unavailable {
            why: "the store has no active/policy.kern and file_contexts to compare with".to_owned(),
        });
    };
    let mut problems = Vec::new();
    if !compile::same_bytes(policy, &ours.policy)? {
        problems.push(format!("policy.33 differs from {}", policy.display()));
    }
    if !compile::same_bytes(contexts, &ours.file_contexts)? {
        problems.push(format!("file_contexts differs from {}", contexts.display()));
    }
    if problems.is_empty() {
        let bytes = fs::metadata(policy)
            .map_err(|e| StoreError::io(policy, e))?
            .len();
        return Ok(Verification::Identical {
            policy_bytes: bytes,
        });
    }
    let cause = if store_built.customisations.is_empty() {
        "the store was built by another libsepol version or with other settings".to_owned()
    } else {
        format!(
            "libsemanage applies the store's local customisations ({}) to the binary after compiling the modules",
            store_built.customisations.join(", ")
        )
    };
    Ok(Verification::Differs {
        why: format!("{}; likely because {cause}", problems.join(" and ")),
    })
}

/// The files libselinux reads beside the store's `file_contexts`.
fn siblings(store: &Store) -> Siblings {
    let existing = |path: PathBuf| path.is_file().then_some(path);
    let installed = match &store.form {
        Form::Root { root, name, .. } => {
            Some(root.join("etc/selinux").join(name).join("contexts/files"))
        }
        Form::StoreDir {
            root: Some(root),
            store_dir,
        } => store_dir
            .file_name()
            .map(|name| root.join("etc/selinux").join(name).join("contexts/files")),
        Form::StoreDir { root: None, .. } => None,
        // `semodule -E --cil` extracts modules only: the files copied
        // beside them are read as the installed ones.
        Form::ExtractedCil { dir } => Some(dir.clone()),
    };
    let local_subs = match &store.form {
        Form::Root { store_dir, .. } | Form::StoreDir { store_dir, .. } => {
            existing(store_dir.join("active/file_contexts.subs"))
        }
        Form::ExtractedCil { dir } => existing(dir.join("file_contexts.subs")),
    };
    let beside_extracted = |name: &str| match &store.form {
        Form::ExtractedCil { dir } => existing(dir.join(name)),
        _ => None,
    };
    Siblings {
        homedirs: store
            .built
            .homedirs
            .clone()
            .or_else(|| beside_extracted("file_contexts.homedirs")),
        local: store
            .built
            .local
            .clone()
            .or_else(|| beside_extracted("file_contexts.local")),
        subs: local_subs,
        subs_dist: installed.and_then(|dir| existing(dir.join("file_contexts.subs_dist"))),
    }
}

fn write_outputs(
    dir: &Path,
    compiled: &Compiled,
    siblings: &Siblings,
) -> Result<Vec<PathBuf>, StoreError> {
    let out = super::output_dir(dir)?;
    let mut written = Vec::new();
    for (name, built) in [
        ("policy.33", &compiled.policy),
        ("file_contexts", &compiled.file_contexts),
    ] {
        let bytes = fs::read(built).map_err(|e| StoreError::io(built, e))?;
        written.push(super::write_output(&out, dir, name, &bytes)?);
    }
    // A stale compiled sibling would be read instead of the new text.
    for stale in [
        "file_contexts.bin",
        "file_contexts.local.bin",
        "file_contexts.homedirs.bin",
    ] {
        super::remove_output(&out, dir, stale)?;
    }
    written.extend(siblings.copy_beside(&out, dir)?);
    Ok(written)
}

/// A successful build.
pub struct ModuleBuild {
    pub module_name: String,
    pub module_cil: String,
    pub predicted: Compiled,
    pub report: ModuleReport,
    pub siblings: Siblings,
}

impl ModuleBuild {
    /// Writes `<module>.cil`, `policy.33`, `file_contexts` (+ siblings),
    /// `report.txt` and `report.json` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
        let out = super::output_dir(dir)?;
        let module = format!("{}.cil", self.module_name);
        let mut written = vec![super::write_output(
            &out,
            dir,
            &module,
            self.module_cil.as_bytes(),
        )?];
        written.extend(write_outputs(dir, &self.predicted, &self.siblings)?);
        let text = render_text(&self.report);
        written.push(super::write_output(
            &out,
            dir,
            "report.txt",
            text.as_bytes(),
        )?);
        let json = dir.join("report.json");
        let body = serde_json::to_string_pretty(&self.report)
            .map_err(|e| StoreError::io(&json, std::io::Error::other(e)))?;
        written.push(super::write_output(
            &out,
            dir,
            "report.json",
            (body + "\n").as_bytes(),
        )?);
        Ok(written)
    }
}

/// Why a build against a store failed.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A layout domain or store owner cannot be mapped, or maps somewhere
    /// it must not.
    #[error("{0}")]
    Mapping(String),
    #[error(transparent)]
    Filecons(#[from] filecons::FileconError),
    #[error("template error (a bug in semanifest): {0}")]
    Template(#[from] minijinja::Error),
    /// The CIL compiler (libsepol, or the secilc given) refused store +
    /// module; `violations` are the protections it proved broken, at the
    /// manifest lines that declared them.
    #[error(
        "the CIL compiler rejected store + module{}{}\n\nit said:\n{output}",
        policy::describe_violations(violations),
        hint.as_deref().map(|h| format!("\n  = help: {h}")).unwrap_or_default()
    )]
    Rejected {
        violations: Vec<Violation>,
        /// What to change, when the violations say.
        hint: Option<String>,
        output: String,
    },
    /// The merged file contexts do not give the layout's types.
    #[error("the predicted file_contexts do not give the layout's labels:\n{}", .0.join("\n"))]
    NotProven(Vec<String>),
}

/// A host class the store refuses is an error here too, not a grant left
/// out: callers that skipped [`layout::manifest::for_store`] (which says
/// it at the grant's line) still get no module.
fn refuse_classes_the_store_refuses(
    family: StoreFamily,
    layout: &Layout,
) -> Result<(), ModuleError> {
    for domain in &layout.domains {
        for grant in &domain.host {
            if let StoreGrants::Refused(why) = grant.class.on_store(family) {
                return Err(ModuleError::Mapping(format!(
                    "host class `{}` of `{}` cannot be granted on a {} store: {why}",
                    grant.class.name,
                    domain.key,
                    family.describe()
                )));
            }
        }
    }
    Ok(())
}

/// What the build decided before rendering the module.
struct Decisions {
    domains: Vec<DomainMapping>,
    domain_types: BTreeMap<String, String>,
    declared: BTreeSet<String>,
    workloads: Workloads,
    adopted: BTreeSet<String>,
    resolution: Resolution,
    paths: Vec<PathReport>,
    retyped: Vec<Retyped>,
    carried: Carried,
    /// The stock policy's rules on the old types of re-typed paths.
    stock_rules: Vec<AllowLine>,
}

/// Builds the layout's module against `baseline`.
pub fn build(
    baseline: &Baseline,
    parsed: &Parsed,
    options: &ModuleOptions,
) -> Result<ModuleBuild, ModuleError> {
    let layout = &parsed.layout;
    refuse_classes_the_store_refuses(baseline.family(), layout)?;
    let pending = pending(baseline, parsed, options)?;
    let decisions = decide(baseline, parsed, options)?;
    let module_cil = render(baseline, parsed, &decisions)?;
    tracing::debug!("module rendered");
    let compiled = compile_and_prove(baseline, parsed, &module_cil, options, pending)?;
    tracing::debug!("store + module compiled");
    // Two independent readers of the predicted outputs, side by side.
    let (proven, read_back) = std::thread::scope(|scope| {
        let proven = scope.spawn(|| {
            let proven = prove_file_contexts(baseline, &decisions.resolution, &compiled.predicted);
            tracing::debug!("file contexts proven");
            proven
        });
        let read_back = read_back(baseline, parsed, &decisions, &compiled);
        tracing::debug!("predicted policy read back");
        (proven.join(), read_back)
    });
    if let Some(store_violations) = &compiled.learnt {
        baseline.remember(store_violations);
    }
    proven.map_err(|_| StoreError::Stopped("the proof of the file contexts"))??;
    let read_back = read_back?;
    let report = ModuleReport {
        module: layout.module.clone(),
        layout: parsed.source.name.clone(),
        store: baseline.store.describe(),
        profile: baseline.profile.name.as_str(),
        verification: baseline.verification()?,
        expand_check: baseline.store.settings.expand_check,
        proof: compiled.proof,
        boolean_grants: layout.store.boolean_grants.as_str(),
        replaces: baseline
            .replaces
            .as_ref()
            .map(|(name, priority)| match priority {
                Some(p) => format!("{name} (priority {p})"),
                None => name.clone(),
            }),
        new_types: layout
            .paths
            .iter()
            .filter(|r| !decisions.adopted.contains(&r.type_name))
            .map(|r| r.type_name.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .chain(decisions.declared.iter().cloned())
            .collect(),
        domains: decisions.domains,
        adopted_types: decisions.adopted.into_iter().collect(),
        workload_set: decisions.workloads.members.into_iter().collect(),
        workload_expression: Some(Workloads::expression(baseline.profile)),
        paths: decisions.paths,
        protections: read_back.protections,
        retyped: read_back.losses,
        proven_keys: decisions.resolution.probes.len(),
        includes: options
            .includes
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    };
    Ok(ModuleBuild {
        module_name: layout.module.clone(),
        module_cil,
        predicted: compiled.predicted,
        report,
        siblings: baseline.siblings.clone(),
    })
}

/// Step 1: domains, the workload set, adopted types, file contexts that
/// win, and the store access carried over to re-typed paths.
fn decide(
    baseline: &Baseline,
    parsed: &Parsed,
    options: &ModuleOptions,
) -> Result<Decisions, ModuleError> {
    let layout = &parsed.layout;
    let facts = &baseline.facts;
    let profile = baseline.profile;
    let domains = map_domains(layout, facts, profile, &options.maps)
        .map_err(|e| ModuleError::Mapping(e.0))?;
    let domain_types: BTreeMap<String, String> = domains
        .iter()
        .map(|d| (d.layout_type.clone(), d.store_type.clone()))
        .collect();
    let declared: BTreeSet<String> = domains
        .iter()
        .filter(|d| d.origin == Origin::Declared)
        .map(|d| d.store_type.clone())
        .collect();
    let workloads = Workloads::find(layout, facts, profile, &domain_types);
    let adopted = adopted_types(parsed, facts)?;
    check_store_owners(parsed, facts, profile, &workloads)?;

    let contexts = StoreContexts {
        specs: &baseline.specs,
        siblings: &baseline.siblings,
        modules: &facts.filecon_modules,
    };
    let stock = baseline.stock_contexts()?;
    let resolution = filecons::resolve(
        layout,
        &contexts,
        &stock,
        &adopted,
        &baseline.work_dir().join("resolve"),
    )?;
    tracing::debug!("file contexts resolved");
    let paths = path_reports(layout, &resolution, &stock, facts);

    let retyped = carry::retyped(layout, &adopted, &resolution.probes, &stock);
    let old_types: BTreeSet<&str> = retyped
        .iter()
        .flat_map(|r| r.old_types.iter().map(String::as_str))
        .collect();
    let stock_rules = if old_types.is_empty() {
        Vec::new()
    } else {
        let old_types: Vec<&str> = old_types.into_iter().collect();
        reach::rules_on(&baseline.stock_read, &old_types)
    };
    let carried = carry::carry(&retyped, &stock_rules, facts, profile.file_type_attributes);
    tracing::debug!("{} store rules carried over", carried.rules.len());
    Ok(Decisions {
        domains,
        domain_types,
        declared,
        workloads,
        adopted,
        resolution,
        paths,
        retyped,
        carried,
        stock_rules,
    })
}

/// Layout file types the store already has: adopted, and checked to be
/// file types there.
fn adopted_types(parsed: &Parsed, facts: &Facts) -> Result<BTreeSet<String>, ModuleError> {
    let layout = &parsed.layout;
    let adopted: BTreeSet<String> = layout
        .paths
        .iter()
        .filter(|r| facts.resolve(&r.type_name).is_some())
        .map(|r| r.type_name.clone())
        .collect();
    for rule in &layout.paths {
        if adopted.contains(&rule.type_name) && !facts.is_member(&rule.type_name, "file_type") {
            return Err(ModuleError::Mapping(format!(
                "{}: type `{}` of `{}` is the store's, but not a file type there",
                location(parsed, rule.pos),
                rule.type_name,
                rule.path
            )));
        }
    }
    Ok(adopted)
}

/// Every store owner is a store domain, and none is a workload.
fn check_store_owners(
    parsed: &Parsed,
    facts: &Facts,
    profile: &Profile,
    workloads: &Workloads,
) -> Result<(), ModuleError> {
    for rule in &parsed.layout.paths {
        for owner in &rule.store_owners {
            let at = location(parsed, owner.pos);
            if !facts.is_member(&owner.type_name, profile.domain_attribute) {
                return Err(ModuleError::Mapping(format!(
                    "{at}: store owner `{}` of `{}` is not a process domain of this store",
                    owner.type_name, rule.path
                )));
            }
            if workloads.members.contains(&owner.type_name) {
                return Err(ModuleError::Mapping(format!(
                    "{at}: store owner `{}` of `{}` is in the workload set: a workload cannot own a path",
                    owner.type_name, rule.path
                )));
            }
        }
    }
    Ok(())
}

/// Step 2: the module's CIL.
fn render(
    baseline: &Baseline,
    parsed: &Parsed,
    decisions: &Decisions,
) -> Result<String, ModuleError> {
    let layout = &parsed.layout;
    let facts = &baseline.facts;
    let profile = baseline.profile;
    let copied: Vec<CopiedRule> =
        decisions
            .carried
            .rules
            .iter()
            .map(|rule| CopiedRule {
                source: rule.source.clone(),
                target: rule.target.clone(),
                class: rule.class.clone(),
                perms: rule.perms.iter().cloned().collect(),
                condition: rule.condition.as_ref().and_then(|c| c.cil()).map(
                    |(expression, branch)| {
                        (
                            expression.split_whitespace().map(str::to_owned).collect(),
                            branch,
                        )
                    },
                ),
            })
            .collect();

    let mut referenced: BTreeSet<String> = decisions.domain_types.values().cloned().collect();
    referenced.extend(decisions.workloads.set.types.iter().cloned());
    referenced.extend([
        profile.workload_attribute.to_owned(),
        profile.privileged_attribute.to_owned(),
    ]);
    referenced.extend(decisions.adopted.iter().cloned());
    referenced.extend(profile.file_type_attributes.iter().map(|a| (*a).to_owned()));
    let host_names = store_module::host_grant_names(layout, host_grants(profile));
    referenced.extend(host_names.iter().cloned());
    for rule in &decisions.carried.rules {
        referenced.insert(rule.source.clone());
        if let Some(condition) = &rule.condition {
            referenced.extend(condition.booleans().into_iter().map(str::to_owned));
        }
    }
    let providers: BTreeMap<String, String> = referenced
        .iter()
        .filter(|name| !decisions.declared.contains(*name))
        .filter_map(|name| {
            facts
                .optional_provider(name)
                .map(|module| (name.clone(), module.to_owned()))
        })
        .collect();
    // A host class's store type the store lacks altogether (a trimmed
    // store): its grants go in an optional block that stays out, as for a
    // removed module, instead of failing the whole module.
    let mut providers = providers;
    let declared_host = store_module::declared_host_types(layout, host_grants(profile));
    for name in host_names {
        if facts.resolve(&name).is_none()
            && !facts.declares_attribute(&name)
            && !declared_host.contains(&name)
            && !decisions.declared.contains(&name)
            && !decisions.domain_types.contains_key(&name)
        {
            providers.insert(name, ABSENT.to_owned());
        }
    }

    let target = StoreTarget {
        profile: profile.name.as_str().to_owned(),
        domain_types: decisions.domain_types.clone(),
        domain_origins: decisions
            .domains
            .iter()
            .map(|d| (d.key.clone(), d.origin.describe(profile)))
            .collect(),
        declared_domains: decisions.declared.clone(),
        adopted_types: decisions.adopted.clone(),
        file_type_attributes: profile
            .file_type_attributes
            .iter()
            .map(|a| (*a).to_owned())
            .collect(),
        domain_attribute: profile.domain_attribute.to_owned(),
        domain_role: profile.domain_role.to_owned(),
        providers,
        workload: decisions.workloads.set.clone(),
        filecons: decisions
            .resolution
            .paths
            .iter()
            .map(|p| p.lines.iter().map(line_for_cil).collect())
            .collect(),
        store_notes: decisions.paths.iter().map(store_note).collect(),
        classes: facts.classes.clone(),
        copied,
        host_grants: host_grants(profile),
        agent_attributes: vec![profile.workload_attribute.to_owned()],
        runtime_type: profile.runtime_type.to_owned(),
    };
    Ok(store_module::render(layout, &parsed.source.name, &target)?)
}

/// The provider named for a host class's type the store does not have.
const ABSENT: &str = "(none: not in this store)";

/// Which of the host classes' store grants a profile's names are.
fn host_grants(profile: &Profile) -> HostGrants {
    match profile.name {
        ProfileName::Refpolicy => HostGrants::Refpolicy,
        ProfileName::ContainerSelinux => HostGrants::ContainerSelinux,
    }
}

/// What step 3 compiled and proved.
struct CompiledModule {
    predicted: Compiled,
    proof: Proof,
    /// The layout's neverallows the compiler found broken, tolerated for now
    /// (`booleanGrants: byDefault`): the read-back decides.
    tolerated: Vec<FailedNeverallow>,
    /// What a cold build learnt about the store as it is (the neverallows
    /// its own modules break), kept once the store's verification is in:
    /// remembered after the read-back, so the build does not wait for
    /// the verification before it.
    learnt: Option<Vec<StoreViolation>>,
}

impl CompiledModule {
    /// The binary with its proof: not run (`not_run` says why: nothing is
    /// tolerated then) or proven, naming the store's violations and the
    /// layout's neverallows broken only by boolean-guarded rules.
    fn new(
        compiler: &Compiler,
        predicted: Compiled,
        not_run: Option<String>,
        store_violations: Vec<StoreViolation>,
        tolerated: Vec<FailedNeverallow>,
    ) -> Self {
        match not_run {
            Some(why) => CompiledModule {
                predicted,
                proof: Proof::NotRun { why },
                tolerated: Vec::new(),
                learnt: None,
            },
            None => CompiledModule {
                predicted,
                proof: Proof::Proven {
                    by: compiler.name().to_owned(),
                    store_violations,
                    boolean_only: tolerated.iter().map(|f| f.target.clone()).collect(),
                },
                tolerated,
                learnt: None,
            },
        }
    }

    fn learnt(self, store_violations: Vec<StoreViolation>) -> Self {
        CompiledModule {
            learnt: Some(store_violations),
            ..self
        }
    }
}

/// Step 3: store + module (+ includes) compiled as the store compiles it
/// (the prediction), every neverallow checked (the proof, by a compiler the
/// probe showed to enforce them), side by side.
fn compile_and_prove(
    baseline: &Baseline,
    parsed: &Parsed,
    module_cil: &str,
    options: &ModuleOptions,
    pending: Pending,
) -> Result<CompiledModule, ModuleError> {
    let Pending {
        work,
        inputs,
        module_path,
        started,
    } = pending;
    fs::write(&module_path, module_cil).map_err(|e| StoreError::io(&module_path, e))?;
    if baseline.store.settings.expand_check {
        return compile_checking_as_store(baseline, parsed, &inputs, &module_path, &work);
    }
    let known = match baseline.compiler {
        // libsepol resolves store + module once for both builds: nothing
        // to void, cold or warm.
        Compiler::Libsepol { .. } => None,
        Compiler::Secilc(_) => baseline.earlier_violations(),
    };
    match known {
        Some(known) => compile_with_store_violations_voided(
            baseline,
            parsed,
            &inputs,
            &module_path,
            &work,
            known,
        ),
        None => compile_both_ways(
            baseline,
            parsed,
            &inputs,
            &module_path,
            options,
            &work,
            started,
        ),
    }
}

/// `expand-check=0` (with libsepol always, with secilc on a store not
/// verified before): store + module built twice at once — with every
/// neverallow checked and nothing voided (the proof: the compiler lists
/// every neverallow it finds broken with the rules that break it, so the
/// store's own are told from the layout's and from those only the new
/// files break), and as the store compiles it (the binary, when the
/// checked build is refused; otherwise both are the same bytes).
fn compile_both_ways(
    baseline: &Baseline,
    parsed: &Parsed,
    inputs: &[Input],
    module_path: &Path,
    options: &ModuleOptions,
    work: &Path,
    started: Option<sepol::Started>,
) -> Result<CompiledModule, ModuleError> {
    let (not_run, both) = beside_probe(baseline, work, || {
        compile::compile_both(
            &baseline.compiler,
            &baseline.store.settings,
            inputs,
            &work.join("out"),
            &work.join("as-store"),
            started,
        )
    })?;
    let compile::Both { checked, as_store } = both?;
    let refused = match checked {
        Ok(predicted) => {
            return Ok(CompiledModule::new(
                &baseline.compiler,
                predicted,
                not_run,
                Vec::new(),
                Vec::new(),
            )
            .learnt(Vec::new()));
        }
        Err(refused) => refused,
    };
    let mut added: Vec<&Path> = vec![module_path];
    added.extend(options.includes.iter().map(PathBuf::as_path));
    let failures = proof::split_cold_failures(&refused.output, module_path, inputs, &added);
    if failures.is_empty() {
        // Not a neverallow: the store refuses it too.
        return Err(rejected(parsed, &[], &refused.output));
    }
    let tolerate = parsed.layout.store.boolean_grants == BooleanGrants::ByDefault;
    if !failures.ours.is_empty() && !tolerate && not_run.is_none() {
        baseline.remember(&failures.store_own);
        let output = proof::blocks_of(&refused.output, |at| {
            Path::new(secilc::file_of(at)) == module_path
        });
        return Err(rejected(parsed, &failures.ours, &output));
    }
    let predicted = match as_store {
        Some(Ok(predicted)) => predicted,
        Some(Err(refused)) => return Err(rejected(parsed, &[], &refused.output)),
        None => return Err(StoreError::Stopped("the compilation of store + module").into()),
    };
    let learnt = failures.store_own.clone();
    Ok(CompiledModule::new(
        &baseline.compiler,
        predicted,
        not_run,
        all_store_violations(failures.store_own, failures.newly_broken),
        failures.ours,
    )
    .learnt(learnt))
}

/// Store + module as step 3 compiles them, known before the module is
/// decided.
struct Pending {
    work: PathBuf,
    /// The store's modules, the layout's module and the includes.
    inputs: Vec<Input>,
    /// Where the layout's module is written once rendered.
    module_path: PathBuf,
    /// libsepol's compilation of them, started where the build compiles
    /// with it in one go (`expand-check=0`): the store's modules that sort
    /// before the layout's are parsed while it is decided.
    started: Option<sepol::Started>,
}

fn pending(
    baseline: &Baseline,
    parsed: &Parsed,
    options: &ModuleOptions,
) -> Result<Pending, ModuleError> {
    let layout = &parsed.layout;
    let work = baseline.work_dir().join("predicted");
    fs::create_dir_all(&work).map_err(|e| StoreError::io(&work, e))?;
    let module_path = work.join(format!("{}.cil", layout.module));
    let mut inputs = baseline.inputs.clone();
    inputs.push(Input {
        name: layout.module.clone(),
        path: module_path.clone(),
    });
    for include in &options.includes {
        if !include.is_file() {
            return Err(StoreError::io(include, std::io::ErrorKind::NotFound.into()).into());
        }
        let name = include
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("include")
            .to_owned();
        inputs.push(Input {
            name,
            path: include.clone(),
        });
    }
    let started = if baseline.store.settings.expand_check {
        None
    } else {
        compile::start_both(
            &baseline.compiler,
            &baseline.store.settings,
            &inputs,
            &module_path,
            &work.join("out"),
            &work.join("as-store"),
        )?
    };
    Ok(Pending {
        work,
        inputs,
        module_path,
        started,
    })
}

/// Runs `compile` with the probe beside it: whether this compiler
/// enforces neverallows at all (`Some(why)` when the proof cannot run).
fn beside_probe<T: Send>(
    baseline: &Baseline,
    work: &Path,
    compile: impl FnOnce() -> T + Send,
) -> Result<(Option<String>, T), ModuleError> {
    let (probe, compiled) = std::thread::scope(|scope| {
        let probe = scope.spawn(|| baseline.compiler.probe_neverallows(&work.join("probe")));
        let compiled = compile();
        (probe.join(), compiled)
    });
    let probe = probe.map_err(|_| StoreError::Stopped("the neverallow probe"))??;
    Ok((
        proof::probe_failure(&probe, &baseline.compiler.describe()),
        compiled,
    ))
}

/// `expand-check` on: the prediction checks every neverallow itself, so
/// one compilation as the store compiles it is the proof too.
fn compile_checking_as_store(
    baseline: &Baseline,
    parsed: &Parsed,
    inputs: &[Input],
    module_path: &Path,
    work: &Path,
) -> Result<CompiledModule, ModuleError> {
    let settings = &baseline.store.settings;
    let (not_run, predicted) = beside_probe(baseline, work, || {
        compile::compile(
            &baseline.compiler,
            settings,
            inputs,
            &work.join("out"),
            Neverallows::AsStore,
        )
    })?;
    let predicted = match predicted? {
        Ok(compiled) => compiled,
        Err(refused) => {
            return Err(refused_with_expand_check(
                baseline,
                parsed,
                &refused,
                module_path,
                inputs,
            ))
        }
    };
    Ok(CompiledModule::new(
        &baseline.compiler,
        predicted,
        not_run,
        Vec::new(),
        Vec::new(),
    )
    .learnt(Vec::new()))
}

/// `expand-check=0`, a store an earlier build verified: the store's own
/// neverallows that its modules break are voided (the binary stays the
/// same), so one compilation with every other neverallow checked is both
/// the prediction and the proof.
fn compile_with_store_violations_voided(
    baseline: &Baseline,
    parsed: &Parsed,
    inputs: &[Input],
    module_path: &Path,
    work: &Path,
    known: Vec<StoreViolation>,
) -> Result<CompiledModule, ModuleError> {
    let voided = compile::void_neverallows(inputs, &known, &work.join("voided"))?;
    let checking = voided.as_deref().unwrap_or(inputs);
    let (not_run, checked) = beside_probe(baseline, work, || {
        compile::compile(
            &baseline.compiler,
            &baseline.store.settings,
            checking,
            &work.join("out"),
            Neverallows::Checked,
        )
    })?;
    let (predicted, ours, store_violations) = match checked? {
        Ok(compiled) => (compiled, Vec::new(), Vec::new()),
        Err(refused) => {
            let failed = Failed {
                refused: &refused,
                module_path,
                checking,
                proof_runs: not_run.is_none(),
            };
            recompile_as_store(baseline, parsed, inputs, work, &failed)?
        }
    };
    Ok(CompiledModule::new(
        &baseline.compiler,
        predicted,
        not_run,
        all_store_violations(known, store_violations),
        ours,
    ))
}

/// A checking compilation of store + module that secilc refused.
struct Failed<'a> {
    refused: &'a compile::Refused,
    module_path: &'a Path,
    /// The inputs it compiled (the store's violations voided).
    checking: &'a [Input],
    /// Whether the secilc probe showed the proof can run.
    proof_runs: bool,
}

/// secilc refused the checking compilation: on a neverallow the build
/// tolerates (the store's own, which only the new module breaks, or a
/// boolean-only grant with `booleanGrants: byDefault`), store + module are
/// compiled again as the store compiles them, for the binary; any other
/// refusal is the build's failure. Returns the binary, the layout's
/// neverallows tolerated, and the store's newly broken.
#[allow(clippy::type_complexity)]
fn recompile_as_store(
    baseline: &Baseline,
    parsed: &Parsed,
    inputs: &[Input],
    work: &Path,
    failed: &Failed<'_>,
) -> Result<(Compiled, Vec<FailedNeverallow>, Vec<StoreViolation>), ModuleError> {
    let output = &failed.refused.output;
    let (ours, theirs) = proof::split_failures(output, failed.module_path, failed.checking);
    if ours.is_empty() && theirs.is_empty() {
        // Not a neverallow: the store refuses it too.
        return Err(rejected(parsed, &ours, output));
    }
    let tolerate = parsed.layout.store.boolean_grants == BooleanGrants::ByDefault;
    if !ours.is_empty() && !tolerate && failed.proof_runs {
        return Err(rejected(parsed, &ours, output));
    }
    tracing::debug!("neverallows failed; compiling store + module again as the store does");
    match compile::compile(
        &baseline.compiler,
        &baseline.store.settings,
        inputs,
        &work.join("out"),
        Neverallows::AsStore,
    )? {
        Ok(predicted) => Ok((predicted, ours, theirs)),
        Err(refused) => Err(rejected(parsed, &[], &refused.output)),
    }
}

/// The store's violations known before the build and those the checking
/// compilation found, once each, in file order.
fn all_store_violations(
    known: Vec<StoreViolation>,
    found: Vec<StoreViolation>,
) -> Vec<StoreViolation> {
    let mut all = known;
    all.extend(found);
    all.sort_by(|a, b| {
        a.location()
            .cmp(&b.location())
            .then_with(|| a.at.cmp(&b.at))
    });
    all.dedup();
    all
}

/// The compiler refused store + module on a store with `expand-check` on.
fn refused_with_expand_check(
    baseline: &Baseline,
    parsed: &Parsed,
    refused: &compile::Refused,
    module_path: &Path,
    inputs: &[Input],
) -> ModuleError {
    let (ours, theirs) = proof::split_failures(&refused.output, module_path, inputs);
    let mut error = rejected(parsed, &ours, &refused.output);
    if ours.is_empty() && !theirs.is_empty() {
        if let ModuleError::Rejected { hint, .. } = &mut error {
            let mut text = format!(
                "the store's own neverallows fail ({} of them), and its settings have expand-check on, \
                 so semodule refuses it as well",
                theirs.len()
            );
            for unknown in &baseline.store.unknowns {
                text.push_str("; ");
                text.push_str(unknown);
            }
            *hint = Some(text);
        }
    }
    error
}

/// Step 4: the merged file contexts give every probe key its layout type.
fn prove_file_contexts(
    baseline: &Baseline,
    resolution: &Resolution,
    predicted: &Compiled,
) -> Result<(), ModuleError> {
    let text = fs::read_to_string(&predicted.file_contexts)
        .map_err(|e| StoreError::io(&predicted.file_contexts, e))?;
    let main = baseline
        .siblings
        .write_with(&baseline.work_dir().join("proof-contexts"), &text)?;
    let merged = FileContexts::load(&main).map_err(|e| StoreError::FileContexts(e.to_string()))?;
    let mismatches = filecons::prove(&merged, &resolution.probes);
    if mismatches.is_empty() {
        return Ok(());
    }
    Err(ModuleError::NotProven(
        mismatches.iter().map(ToString::to_string).collect(),
    ))
}

/// What step 5 read back from the predicted binary.
struct ReadBack {
    protections: Vec<ProvenProtection>,
    losses: Vec<Losses>,
}

/// Step 5: the predicted binary's rules on every new type and its
/// attributes, read with setools: who else reaches each protected type,
/// and which store domains lost access to a re-typed path. Neverallows
/// tolerated as boolean-only are confirmed here, or the build fails.
fn read_back(
    baseline: &Baseline,
    parsed: &Parsed,
    decisions: &Decisions,
    compiled: &CompiledModule,
) -> Result<ReadBack, ModuleError> {
    let new_types = read_back_types(parsed, decisions);
    let predicted = read_predicted(&compiled.predicted.policy, &new_types)?;
    tracing::debug!("predicted policy read");
    let reaches = reach::reach(
        &ReachInputs {
            rules: &predicted.rules,
            attributes: &predicted.facts,
            booleans: &baseline.facts.booleans,
            workload_set: &decisions.workloads.members,
            classes: &baseline.facts.classes,
        },
        &protected_types(parsed, &decisions.domain_types),
    );
    tracing::debug!("reaches found");
    confirm_tolerated(parsed, &compiled.tolerated, &reaches)?;
    let losses = carry::losses(
        &LossInputs {
            stock_rules: &decisions.stock_rules,
            stock_facts: &baseline.facts,
            predicted_rules: &predicted.rules,
            predicted_facts: &predicted.facts,
            new_attributes: baseline.profile.file_type_attributes,
            workload_set: &decisions.workloads.members,
            carried: &decisions.carried,
        },
        &decisions.retyped,
    );
    Ok(ReadBack {
        protections: proven_protections(parsed, reaches),
        losses,
    })
}

/// The types whose rules are read back: every re-typed path's and every
/// protected one's, once each.
fn read_back_types<'a>(parsed: &'a Parsed, decisions: &'a Decisions) -> Vec<&'a str> {
    decisions
        .retyped
        .iter()
        .map(|r| r.type_name.as_str())
        .chain(parsed.layout.protected().map(|r| r.type_name.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// What setools reads from the predicted binary.
struct Predicted {
    /// Its attributes (and their members).
    facts: Facts,
    /// Its `allow` rules on `types`, attributes included.
    rules: Vec<AllowLine>,
}

/// Reads the predicted binary's attributes and its rules on `types`.
fn read_predicted(policy: &Path, types: &[&str]) -> Result<Predicted, ModuleError> {
    let policy = KernelPolicy::read(policy).map_err(StoreError::from)?;
    Ok(Predicted {
        facts: Facts::attributes_of(&policy),
        rules: reach::rules_on(&policy, types),
    })
}

/// A neverallow tolerated as boolean-only holds only if every grant beyond
/// the protection's exceptions is off by default; otherwise the build fails.
fn confirm_tolerated(
    parsed: &Parsed,
    tolerated: &[FailedNeverallow],
    reaches: &[reach::Reach],
) -> Result<(), ModuleError> {
    let unproven: Vec<FailedNeverallow> = tolerated
        .iter()
        .filter(|failed| {
            reaches.iter().any(|reach| {
                reach.type_name == failed.target
                    && reach
                        .workload
                        .iter()
                        .any(|w| w.leftover == Leftover::Unproven)
            })
        })
        .cloned()
        .collect();
    if unproven.is_empty() {
        return Ok(());
    }
    Err(rejected(parsed, &unproven, ""))
}

/// Each reach, with the manifest line that declared its protection.
fn proven_protections(parsed: &Parsed, reaches: Vec<reach::Reach>) -> Vec<ProvenProtection> {
    let declared_at: BTreeMap<&str, String> = parsed
        .layout
        .protected()
        .map(|r| {
            (
                r.type_name.as_str(),
                location(parsed, r.protected_pos.unwrap_or(r.pos)),
            )
        })
        .collect();
    reaches
        .into_iter()
        .map(|reach| ProvenProtection {
            declared_at: declared_at
                .get(reach.type_name.as_str())
                .cloned()
                .unwrap_or_default(),
            reach,
        })
        .collect()
}

/// Each protected type once, with its paths and who may reach it by the
/// layout's will: its grantees and its store owners.
fn protected_types<'a>(
    parsed: &'a Parsed,
    domain_types: &BTreeMap<String, String>,
) -> Vec<Protected<'a>> {
    let layout = &parsed.layout;
    let mut protected: Vec<Protected<'a>> = Vec::new();
    for rule in layout.protected() {
        if let Some(item) = protected.iter_mut().find(|p| p.type_name == rule.type_name) {
            item.paths.push(rule.path.clone());
            continue;
        }
        let mut granted: BTreeSet<String> = rule
            .access
            .keys()
            .map(|&d| domain_types[&layout.domain(d).type_name].clone())
            .collect();
        granted.extend(rule.store_owners.iter().map(|o| o.type_name.clone()));
        protected.push(Protected {
            type_name: &rule.type_name,
            paths: vec![rule.path.clone()],
            granted,
        });
    }
    protected
}

fn location(parsed: &Parsed, pos: layout::diag::Pos) -> String {
    format!("{}:{}:{}", parsed.source.name, pos.line, pos.column)
}

fn line_for_cil(line: &filecons::Line) -> FileconLine {
    let comment = match &line.purpose {
        Purpose::Subtree => "the path and its subtree".to_owned(),
        Purpose::Exact => "the path itself: an exact spec beats every regex of the store".to_owned(),
        Purpose::Below => {
            "below the path: its longer stem sorts it after every store spec of the path's own stem".to_owned()
        }
        Purpose::Override { store_regex, store_line } => format!(
            "overrides the store's `{store_regex}` (its file_contexts line {store_line}): same keys, sorts right after it"
        ),
    };
    FileconLine {
        regex: line.regex.clone(),
        file_type: policy::file_contexts::cil_keyword(line.file_type).to_owned(),
        comment,
    }
}

fn path_reports(
    layout: &Layout,
    resolution: &Resolution,
    stock: &FileContexts,
    facts: &Facts,
) -> Vec<PathReport> {
    layout
        .paths
        .iter()
        .zip(&resolution.paths)
        .map(|(rule, lines)| {
            let (before, winner) = filecons::stock_label(stock, &rule.path);
            let before_spec = winner.map(|w| {
                let modules = facts
                    .filecon_modules
                    .get(&w.regex)
                    .map(|m| m.iter().cloned().collect::<Vec<_>>().join(", "));
                match modules {
                    Some(modules) if !modules.is_empty() => {
                        format!("`{}` (module {modules})", w.regex)
                    }
                    _ => format!("`{}` ({}:{})", w.regex, w.file, w.line),
                }
            });
            let by_store = filecons::left_to_store_in(&lines.events);
            let after = match &lines.merged {
                Some(merged) if by_store => merged.clone(),
                _ => rule.context(),
            };
            PathReport {
                path: rule.path.clone(),
                type_name: rule.type_name.clone(),
                before,
                before_spec,
                after,
                lines: lines.lines.clone(),
                events: lines.events.clone(),
            }
        })
        .collect()
}

fn store_note(path: &PathReport) -> Option<String> {
    let before = path.before.as_deref().unwrap_or("<<none>>");
    if filecons::left_to_store_in(&path.events) {
        let from = path
            .before_spec
            .as_deref()
            .map(|spec| format!(" from {spec}"))
            .unwrap_or_default();
        return Some(format!(
            "was {before}{from}; left to the store's own specs (the path itself: {}): no line written",
            path.after
        ));
    }
    if before == path.after {
        return Some(format!("already {before}"));
    }
    Some(match &path.before_spec {
        Some(spec) => format!("was {before} from {spec}"),
        None => format!("was {before}"),
    })
}

/// The compiler refused store + module, or broke the layout's neverallows:
/// each points at the manifest line that declared its protection.
fn rejected(parsed: &Parsed, failed: &[FailedNeverallow], output: &str) -> ModuleError {
    let workload = format!("{}_workload", parsed.layout.module);
    let mut conditional_only = !failed.is_empty();
    let violations = failed
        .iter()
        .filter(|broken| broken.subject == workload)
        .filter_map(|broken| {
            let rule = parsed
                .layout
                .paths
                .iter()
                .find(|r| r.protected && r.type_name == broken.target)?;
            if !output.is_empty() && !only_conditional(output, broken) {
                conditional_only = false;
            }
            Some(Violation {
                path: rule.path.clone(),
                type_name: broken.target.clone(),
                declared_at: location(parsed, rule.protected_pos.unwrap_or(rule.pos)),
                location: layout::diag::Location::at(
                    &parsed.source.name,
                    rule.protected_pos.unwrap_or(rule.pos),
                ),
                offending: broken.offending.clone(),
            })
        })
        .collect::<Vec<_>>();
    let hint = (conditional_only && !violations.is_empty() && !output.is_empty()).then(|| {
        "every rule that breaks it sits in a `booleanif`: if grants only a boolean gives, while it \
         is off by default, should not count as access, set `spec.store.booleanGrants: byDefault`"
            .to_owned()
    });
    ModuleError::Rejected {
        violations,
        hint,
        output: if output.is_empty() {
            "(the neverallows broken only by boolean grants include one that is on by default)"
                .to_owned()
        } else {
            output.to_owned()
        },
    }
}

/// Whether every rule the compiler lists against `broken` sits in a `booleanif`.
fn only_conditional(output: &str, broken: &FailedNeverallow) -> bool {
    let marker = "neverallow check failed at ";
    let Some(start) = output.find(&format!("{marker}{}", broken.at)) else {
        return false;
    };
    let block = &output[start + marker.len()..];
    let block = &block[..block.find(marker).unwrap_or(block.len())];
    let count = |prefix: &str| {
        block
            .lines()
            .filter(|line| line.trim_start().starts_with(prefix))
            .count()
    };
    let allows = count("allow at ");
    allows > 0 && count("booleanif at ") >= allows
}
