//! `build --target module` and `check --against`: the layout as a module on
//! a store, predicted, checked and proven.
//!
//! 1. [`Baseline::prepare`] opens the store, compiles it as it is with
//!    secilc the way libsemanage would, compares the result with what the
//!    store built itself (byte for byte), and reads the compiled policy back
//!    with setools.
//! 2. [`build`] maps the layout's domains onto the store's, finds the
//!    workload set, chooses `filecon` lines that win against the store's,
//!    renders the module, compiles store + module with every neverallow
//!    checked, proves the merged file contexts with the lookup engine, and
//!    lists who else can still reach each protected type.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::compile::{self, Compiled, Input};
use super::facts::Facts;
use super::filecons::{self, Purpose, Resolution, Siblings, StoreContexts, StoreSpec};
use super::module_report::{
    render_text, DomainMapping, ModuleReport, PathReport, ProvenProtection, Verification,
};
use super::open::{Form, Store};
use super::profile::{Profile, ProfileName};
use super::reach::{self, Protected};
use super::StoreError;
use layout::manifest::{BaseFacts, Parsed};
use layout::model::Layout;
use policy::secilc;
use policy::setools::{self, SetoolsError};
use policy::store_module::{self, FileconLine, StoreTarget, WorkloadSet};
use policy::Violation;
use selabel::FileContexts;

/// How to build against a store.
#[derive(Debug, Clone, Default)]
pub struct ModuleOptions {
    /// Explicit secilc; `None` searches `PATH`.
    pub secilc: Option<PathBuf>,
    /// `None`: detect from the store's names.
    pub profile: Option<ProfileName>,
    /// `DOMAIN=TYPE`: the store type a layout domain (by key) runs as.
    pub maps: Vec<(String, String)>,
    /// Extra CIL compiled in as further modules (held to the protections).
    pub includes: Vec<PathBuf>,
}

/// The store compiled without the module, and what it says.
pub struct Baseline {
    pub store: Store,
    pub secilc: PathBuf,
    /// Keeps the working files alive.
    work: tempfile::TempDir,
    pub inputs: Vec<Input>,
    pub stock: Compiled,
    pub verification: Verification,
    pub facts: Facts,
    pub profile: &'static Profile,
    pub specs: Vec<StoreSpec>,
    pub siblings: Siblings,
    /// A module of the layout's name already in the store, left out of the
    /// baseline (the new one replaces it), with its priority.
    pub replaces: Option<(String, Option<u16>)>,
}

impl Baseline {
    /// Opens and compiles the store. `exclude` leaves out a module of that
    /// name (an older version of the layout's own module).
    pub fn prepare(
        path: &Path,
        options: &ModuleOptions,
        exclude: Option<&str>,
    ) -> Result<Baseline, StoreError> {
        let store = Store::open(path)?;
        tracing::debug!("store read: {} modules", store.modules.len());
        let secilc = secilc::locate(options.secilc.as_deref())?;
        let work = tempfile::Builder::new()
            .prefix("semanifest-store-")
            .tempdir()
            .map_err(|e| StoreError::io(Path::new("temporary directory"), e))?;
        let all_inputs = compile::module_inputs(&store, &work.path().join("modules"))?;
        let as_built = match compile::compile(
            &secilc,
            &store.settings,
            &all_inputs,
            &work.path().join("store"),
        )? {
            Ok(compiled) => compiled,
            Err(refused) => {
                return Err(StoreError::StockRefused {
                    output: refused.output,
                })
            }
        };
        let verification = verify(&store, &as_built)?;
        tracing::debug!("store compiled and verified: {verification:?}");
        let replaced = exclude
            .and_then(|name| store.module(name))
            .map(|m| (m.name.clone(), m.priority));
        let (inputs, stock) = match &replaced {
            None => (all_inputs, as_built),
            Some((name, priority)) => {
                if priority.is_some_and(|p| p > 400) {
                    return Err(StoreError::Shadowed {
                        name: name.clone(),
                        priority: priority.unwrap_or_default(),
                    });
                }
                let inputs: Vec<Input> = all_inputs
                    .into_iter()
                    .filter(|input| &input.name != name)
                    .collect();
                let stock = match compile::compile(
                    &secilc,
                    &store.settings,
                    &inputs,
                    &work.path().join("stock"),
                )? {
                    Ok(compiled) => compiled,
                    Err(refused) => {
                        return Err(StoreError::StockRefused {
                            output: refused.output,
                        })
                    }
                };
                (inputs, stock)
            }
        };
        let mut facts = Facts::read(&store, &stock.policy)?;
        tracing::debug!("facts read: {} types", facts.types.len());
        if let Some((name, _)) = &replaced {
            facts.providers.retain(|_, module| module != name);
            for modules in facts.filecon_modules.values_mut() {
                modules.remove(name);
            }
        }
        let profile = match options.profile {
            Some(name) => {
                let profile = Profile::named(name);
                let missing = profile.missing(&facts);
                if !missing.is_empty() {
                    return Err(StoreError::Profile(format!(
                        "profile {} does not fit this store: it lacks {}",
                        name.as_str(),
                        missing.join(", ")
                    )));
                }
                profile
            }
            None => Profile::detect(&facts).map_err(|why| {
                StoreError::Profile(format!(
                    "cannot tell which profile the store follows ({why}); pass --profile"
                ))
            })?,
        };
        let text = fs::read_to_string(&stock.file_contexts)
            .map_err(|e| StoreError::io(&stock.file_contexts, e))?;
        let specs = filecons::parse_specs(&text);
        let siblings = siblings(&store);
        Ok(Baseline {
            store,
            secilc,
            work,
            inputs,
            stock,
            verification,
            facts,
            profile,
            specs,
            siblings,
            replaces: replaced,
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

    pub fn work_dir(&self) -> &Path {
        self.work.path()
    }

    /// The stock file contexts (with the store's siblings), for lookups.
    pub(crate) fn stock_contexts(&self) -> Result<FileContexts, StoreError> {
        let dir = self.work.path().join("stock-lookup");
        let text = fs::read_to_string(&self.stock.file_contexts)
            .map_err(|e| StoreError::io(&self.stock.file_contexts, e))?;
        let main = self.siblings.write_with(&dir, &text)?;
        FileContexts::load(&main).map_err(|e| StoreError::FileContexts(e.to_string()))
    }

    /// Writes the stock store's predicted `policy.33` and `file_contexts`
    /// (with siblings) into `dir`.
    pub fn write_stock(&self, dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
        write_outputs(dir, &self.stock, &self.siblings)
    }
}

fn verify(store: &Store, built: &Compiled) -> Result<Verification, StoreError> {
    let Some(policy) = &store.built.policy else {
        return Ok(Verification::Unavailable);
    };
    let mut problems = Vec::new();
    if !compile::same_bytes(policy, &built.policy)? {
        problems.push(format!("policy.33 differs from {}", policy.display()));
    }
    if let Some(contexts) = &store.built.file_contexts {
        if !compile::same_bytes(contexts, &built.file_contexts)? {
            problems.push(format!("file_contexts differs from {}", contexts.display()));
        }
    }
    if problems.is_empty() {
        let bytes = fs::metadata(policy)
            .map_err(|e| StoreError::io(policy, e))?
            .len();
        return Ok(Verification::Identical {
            policy_bytes: bytes,
        });
    }
    let cause = if store.built.customisations.is_empty() {
        "the store was built by another libsepol version or with other settings".to_owned()
    } else {
        format!(
            "libsemanage applies the store's local customisations ({}) to the binary after compiling the modules",
            store.built.customisations.join(", ")
        )
    };
    Ok(Verification::Differs {
        why: format!("{}; likely because {cause}", problems.join(" and ")),
    })
}

/// The files libselinux reads beside the store's `file_contexts`.
fn siblings(store: &Store) -> Siblings {
    let store_dir = match &store.form {
        Form::Root { store_dir, .. } | Form::StoreDir { store_dir, .. } => Some(store_dir.clone()),
        Form::ExtractedCil { .. } => None,
    };
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
        _ => None,
    };
    let existing = |path: PathBuf| path.is_file().then_some(path);
    Siblings {
        homedirs: store.built.homedirs.clone(),
        local: store.built.local.clone(),
        subs: store_dir.and_then(|dir| existing(dir.join("active/file_contexts.subs"))),
        subs_dist: installed.and_then(|dir| existing(dir.join("file_contexts.subs_dist"))),
    }
}

fn write_outputs(
    dir: &Path,
    compiled: &Compiled,
    siblings: &Siblings,
) -> Result<Vec<PathBuf>, StoreError> {
    fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let policy = dir.join("policy.33");
    fs::copy(&compiled.policy, &policy).map_err(|e| StoreError::io(&compiled.policy, e))?;
    let contexts = dir.join("file_contexts");
    fs::copy(&compiled.file_contexts, &contexts)
        .map_err(|e| StoreError::io(&compiled.file_contexts, e))?;
    // A stale compiled sibling would be read instead of the new text.
    for stale in [
        "file_contexts.bin",
        "file_contexts.local.bin",
        "file_contexts.homedirs.bin",
    ] {
        let _ = fs::remove_file(dir.join(stale));
    }
    let mut written = vec![policy, contexts.clone()];
    written.extend(siblings.copy_beside(&contexts)?);
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
        fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        let module = dir.join(format!("{}.cil", self.module_name));
        fs::write(&module, &self.module_cil).map_err(|e| StoreError::io(&module, e))?;
        let mut written = vec![module];
        written.extend(write_outputs(dir, &self.predicted, &self.siblings)?);
        let text = dir.join("report.txt");
        fs::write(&text, render_text(&self.report)).map_err(|e| StoreError::io(&text, e))?;
        let json = dir.join("report.json");
        let body = serde_json::to_string_pretty(&self.report)
            .map_err(|e| StoreError::io(&json, std::io::Error::other(e)))?;
        fs::write(&json, body + "\n").map_err(|e| StoreError::io(&json, e))?;
        written.extend([text, json]);
        Ok(written)
    }
}

/// Why a build against a store failed.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A layout domain cannot be mapped, or maps somewhere it must not.
    #[error("{0}")]
    Mapping(String),
    #[error(transparent)]
    Filecons(#[from] filecons::FileconError),
    #[error("template error (a bug in semanifest): {0}")]
    Template(#[from] minijinja::Error),
    /// secilc refused store + module; `violations` are the protections it
    /// proved broken, at the manifest lines that declared them.
    #[error(
        "secilc rejected store + module{}\n\nsecilc said:\n{output}",
        policy::describe_violations(violations)
    )]
    Rejected {
        violations: Vec<Violation>,
        output: String,
    },
    /// The merged file contexts do not give the layout's types.
    #[error("the predicted file_contexts do not give the layout's labels:\n{}", .0.join("\n"))]
    NotProven(Vec<String>),
}

/// Builds the layout's module against `baseline`.
pub fn build(
    baseline: &Baseline,
    parsed: &Parsed,
    options: &ModuleOptions,
) -> Result<ModuleBuild, ModuleError> {
    let layout = &parsed.layout;
    let facts = &baseline.facts;
    let profile = baseline.profile;
    let domains = map_domains(layout, facts, profile, &options.maps)?;
    let domain_types: BTreeMap<String, String> = domains
        .iter()
        .map(|d| (d.layout_type.clone(), d.store_type.clone()))
        .collect();
    let declared: BTreeSet<String> = domains
        .iter()
        .filter(|d| d.origin == "declared")
        .map(|d| d.store_type.clone())
        .collect();

    // The workload set: container domains that are not privileged, the
    // layout's workloads, and everything any of them can transition to
    // (through the store's rules or the layout's).
    let mut starts: BTreeSet<String> = facts
        .attributes
        .get(profile.workload_attribute)
        .cloned()
        .unwrap_or_default();
    for privileged in facts
        .attributes
        .get(profile.privileged_attribute)
        .into_iter()
        .flatten()
    {
        starts.remove(privileged);
    }
    let layout_workloads: BTreeSet<String> = layout
        .workload_domains()
        .map(|(_, d)| domain_types[&d.type_name].clone())
        .collect();
    starts.extend(layout_workloads.iter().cloned());
    let mut closure_facts = facts.clone();
    for domain in &layout.domains {
        for &next in &domain.transitions {
            let (from, to) = (
                &domain_types[&domain.type_name],
                &domain_types[&layout.domain(next).type_name],
            );
            if from != to {
                closure_facts
                    .transitions
                    .entry(from.clone())
                    .or_default()
                    .insert(to.clone());
            }
        }
    }
    let workload_members = closure_facts.transition_closure(starts.iter().cloned());
    let from_attribute: BTreeSet<String> = {
        let mut members = facts
            .attributes
            .get(profile.workload_attribute)
            .cloned()
            .unwrap_or_default();
        for privileged in facts
            .attributes
            .get(profile.privileged_attribute)
            .into_iter()
            .flatten()
        {
            members.remove(privileged);
        }
        members
    };
    let explicit: BTreeSet<String> = workload_members
        .difference(&from_attribute)
        .cloned()
        .collect();
    let workload = WorkloadSet {
        attribute: Some((
            profile.workload_attribute.to_owned(),
            profile.privileged_attribute.to_owned(),
        )),
        types: explicit,
    };

    // File contexts that win.
    let contexts = StoreContexts {
        specs: &baseline.specs,
        siblings: &baseline.siblings,
        modules: &facts.filecon_modules,
    };
    tracing::debug!("resolving file contexts");
    let resolution = filecons::resolve(layout, &contexts, &baseline.work_dir().join("resolve"))?;
    tracing::debug!("file contexts resolved");
    let stock = baseline.stock_contexts()?;
    let paths = path_reports(layout, &resolution, &stock, facts);

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

    let mut referenced: BTreeSet<String> = domain_types.values().cloned().collect();
    referenced.extend(workload.types.iter().cloned());
    referenced.extend([
        profile.workload_attribute.to_owned(),
        profile.privileged_attribute.to_owned(),
    ]);
    referenced.extend(adopted.iter().cloned());
    referenced.extend(profile.file_type_attributes.iter().map(|a| (*a).to_owned()));
    let providers: BTreeMap<String, String> = referenced
        .iter()
        .filter(|name| !declared.contains(*name))
        .filter_map(|name| {
            facts
                .optional_provider(name)
                .map(|module| (name.clone(), module.to_owned()))
        })
        .collect();

    let target = StoreTarget {
        store: baseline.store.describe(),
        profile: profile.name.as_str().to_owned(),
        domain_types: domain_types.clone(),
        domain_origins: domains
            .iter()
            .map(|d| (d.key.clone(), describe_origin(d, profile)))
            .collect(),
        declared_domains: declared.clone(),
        adopted_types: adopted.clone(),
        file_type_attributes: profile
            .file_type_attributes
            .iter()
            .map(|a| (*a).to_owned())
            .collect(),
        domain_attribute: profile.domain_attribute.to_owned(),
        domain_role: profile.domain_role.to_owned(),
        providers,
        workload: workload.clone(),
        filecons: resolution
            .paths
            .iter()
            .map(|p| p.lines.iter().map(line_for_cil).collect())
            .collect(),
        store_notes: paths.iter().map(store_note).collect(),
        classes: facts.classes.clone(),
    };
    let module_cil = store_module::render(layout, &parsed.source.name, &target)?;
    tracing::debug!("module rendered");

    // Store + module (+ includes), every neverallow checked.
    let work = baseline.work_dir().join("predicted");
    fs::create_dir_all(&work).map_err(|e| StoreError::io(&work, e))?;
    let module_path = work.join(format!("{}.cil", layout.module));
    fs::write(&module_path, &module_cil).map_err(|e| StoreError::io(&module_path, e))?;
    let mut inputs = baseline.inputs.clone();
    inputs.push(Input {
        name: layout.module.clone(),
        path: module_path,
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
    let predicted = match compile::compile(
        &baseline.secilc,
        &baseline.store.settings,
        &inputs,
        &work.join("out"),
    )? {
        Ok(compiled) => compiled,
        Err(refused) => return Err(rejected(parsed, &refused.output)),
    };

    tracing::debug!("store + module compiled");
    // The proof, on the real merged file.
    let text = fs::read_to_string(&predicted.file_contexts)
        .map_err(|e| StoreError::io(&predicted.file_contexts, e))?;
    let main = baseline.siblings.write_with(&work.join("proof"), &text)?;
    let merged = FileContexts::load(&main).map_err(|e| StoreError::FileContexts(e.to_string()))?;
    let mismatches = filecons::prove(&merged, &resolution.probes);
    if !mismatches.is_empty() {
        return Err(ModuleError::NotProven(
            mismatches.iter().map(ToString::to_string).collect(),
        ));
    }
    let proven_keys = resolution.probes.len();

    tracing::debug!("proven");
    // Who else reaches each protected type: the predicted policy's
    // attributes and its rules on protected types, read in parallel.
    let protected_types: BTreeSet<&str> =
        layout.protected().map(|r| r.type_name.as_str()).collect();
    let protected_types: Vec<&str> = protected_types.into_iter().collect();
    let (attributes, rules_text) = std::thread::scope(|scope| {
        let attributes = scope.spawn(|| setools::run("seinfo", &["-x", "-a"], &predicted.policy));
        let rules = (!protected_types.is_empty())
            .then(|| scope.spawn(|| reach::query(&predicted.policy, &protected_types)));
        (attributes.join(), rules.map(|r| r.join()))
    });
    let mut predicted_facts = Facts::default();
    let panicked = |tool| {
        StoreError::from(SetoolsError {
            tool,
            detail: "panicked".into(),
        })
    };
    let attributes = attributes.map_err(|_| panicked("seinfo"))?;
    predicted_facts.parse_attributes(&attributes.map_err(StoreError::from)?);
    let rules_text = match rules_text {
        None => String::new(),
        Some(joined) => joined.map_err(|_| panicked("sesearch"))??,
    };
    let mut protected: Vec<Protected<'_>> = Vec::new();
    let mut declared_at: BTreeMap<&str, String> = BTreeMap::new();
    for rule in layout.protected() {
        if let Some(item) = protected.iter_mut().find(|p| p.type_name == rule.type_name) {
            item.paths.push(rule.path.clone());
            continue;
        }
        declared_at.insert(
            &rule.type_name,
            location(parsed, rule.protected_pos.unwrap_or(rule.pos)),
        );
        protected.push(Protected {
            type_name: &rule.type_name,
            paths: vec![rule.path.clone()],
            granted: rule
                .access
                .keys()
                .map(|&d| domain_types[&layout.domain(d).type_name].clone())
                .collect(),
        });
    }
    let reaches = reach::reach(&rules_text, &predicted_facts, &workload_members, &protected);
    tracing::debug!("reach computed");
    let protections = reaches
        .into_iter()
        .map(|reach| ProvenProtection {
            declared_at: declared_at
                .get(reach.type_name.as_str())
                .cloned()
                .unwrap_or_default(),
            reach,
        })
        .collect();

    let report = ModuleReport {
        module: layout.module.clone(),
        layout: parsed.source.name.clone(),
        store: baseline.store.describe(),
        profile: profile.name.as_str(),
        verification: baseline.verification.clone(),
        expand_check: baseline.store.settings.expand_check,
        replaces: baseline
            .replaces
            .as_ref()
            .map(|(name, priority)| match priority {
                Some(p) => format!("{name} (priority {p})"),
                None => name.clone(),
            }),
        domains,
        new_types: layout
            .paths
            .iter()
            .filter(|r| !adopted.contains(&r.type_name))
            .map(|r| r.type_name.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .chain(declared.iter().cloned())
            .collect(),
        adopted_types: adopted.into_iter().collect(),
        workload_set: workload_members.into_iter().collect(),
        workload_expression: Some(format!(
            "{} minus {}",
            profile.workload_attribute, profile.privileged_attribute
        )),
        paths,
        protections,
        proven_keys,
        includes: options
            .includes
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    };
    Ok(ModuleBuild {
        module_name: layout.module.clone(),
        module_cil,
        predicted,
        report,
        siblings: baseline.siblings.clone(),
    })
}

fn location(parsed: &Parsed, pos: layout::diag::Pos) -> String {
    format!("{}:{}:{}", parsed.source.name, pos.line, pos.column)
}

fn describe_origin(mapping: &DomainMapping, profile: &Profile) -> String {
    match mapping.origin {
        "store" => "the store's own type".to_owned(),
        "runtime" => format!(
            "the container runtime's domain in {}",
            profile.name.as_str()
        ),
        "workload" => format!("the workload domain in {}", profile.name.as_str()),
        "map" => "mapped with --map".to_owned(),
        _ => "not in the store: declared here".to_owned(),
    }
}

/// The store type each layout domain becomes.
fn map_domains(
    layout: &Layout,
    facts: &Facts,
    profile: &Profile,
    maps: &[(String, String)],
) -> Result<Vec<DomainMapping>, ModuleError> {
    for (key, _) in maps {
        if !layout.domains.iter().any(|d| &d.key == key) {
            return Err(ModuleError::Mapping(format!(
                "--map {key}=…: the layout has no domain `{key}`"
            )));
        }
    }
    let is_domain = |name: &str| facts.is_member(name, profile.domain_attribute);
    let privileged = facts
        .attributes
        .get(profile.privileged_attribute)
        .cloned()
        .unwrap_or_default();
    let mut mappings = Vec::new();
    for (index, domain) in layout.domains.iter().enumerate() {
        let runtime = domain
            .transitions
            .iter()
            .any(|&t| layout.domain(t).workload);
        let (store_type, origin) = if let Some((_, target)) =
            maps.iter().find(|(key, _)| key == &domain.key)
        {
            let resolved = facts.resolve(target).unwrap_or(target).to_owned();
            if !is_domain(&resolved) {
                return Err(ModuleError::Mapping(format!(
                    "--map {}={target}: the store has no domain `{target}`",
                    domain.key
                )));
            }
            (resolved, "map")
        } else if let Some(resolved) = facts.resolve(&domain.type_name) {
            if !is_domain(resolved) {
                return Err(ModuleError::Mapping(format!(
                    "domain `{}`: the store's `{}` is not a process domain; name another type or pass --map {}=TYPE",
                    domain.key, domain.type_name, domain.key
                )));
            }
            (resolved.to_owned(), "store")
        } else if domain.workload && is_domain(profile.workload_type) {
            (profile.workload_type.to_owned(), "workload")
        } else if runtime && is_domain(profile.runtime_type) {
            (profile.runtime_type.to_owned(), "runtime")
        } else {
            (domain.type_name.clone(), "declared")
        };
        if domain.workload && privileged.contains(&store_type) {
            return Err(ModuleError::Mapping(format!(
                "workload domain `{}` would run as `{store_type}`, a privileged container domain ({}): nothing can be protected from it",
                domain.key, profile.privileged_attribute
            )));
        }
        let _ = index;
        mappings.push(DomainMapping {
            key: domain.key.clone(),
            layout_type: domain.type_name.clone(),
            store_type,
            origin,
        });
    }
    Ok(mappings)
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
            PathReport {
                path: rule.path.clone(),
                type_name: rule.type_name.clone(),
                before,
                before_spec,
                after: rule.context(),
                lines: lines.lines.clone(),
                events: lines.events.clone(),
            }
        })
        .collect()
}

fn store_note(path: &PathReport) -> Option<String> {
    let before = path.before.as_deref().unwrap_or("<<none>>");
    if before == path.after {
        return Some(format!("already {before}"));
    }
    Some(match &path.before_spec {
        Some(spec) => format!("was {before} from {spec}"),
        None => format!("was {before}"),
    })
}

/// secilc refused store + module: neverallow failures of our protections
/// point at the manifest line that declared them.
fn rejected(parsed: &Parsed, output: &str) -> ModuleError {
    let workload = format!("{}_workload", parsed.layout.module);
    let violations = secilc::violated_neverallows(output)
        .into_iter()
        .filter(|broken| broken.subject == workload)
        .filter_map(|broken| {
            let rule = parsed
                .layout
                .paths
                .iter()
                .find(|r| r.protected && r.type_name == broken.target)?;
            Some(Violation {
                path: rule.path.clone(),
                type_name: broken.target,
                declared_at: location(parsed, rule.protected_pos.unwrap_or(rule.pos)),
                location: layout::diag::Location::at(
                    &parsed.source.name,
                    rule.protected_pos.unwrap_or(rule.pos),
                ),
                offending: broken.offending,
            })
        })
        .collect();
    ModuleError::Rejected {
        violations,
        output: output.to_owned(),
    }
}
