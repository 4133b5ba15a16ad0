//! File contexts that really win on a distribution's store.
//!
//! A module's `filecon` lines are merged into the store's `file_contexts`
//! and sorted by secilc (regexes before exact specs, then by stem length,
//! length, file type and `strcmp`); libselinux then takes the last spec that
//! matches. Two traps follow. An identical regex in two modules is silently
//! deduplicated by secilc, keeping whichever came first, so module-name order
//! decides with no error (and an identical regex with another file type makes
//! the install fail: "Multiple different specifications"). And any store
//! spec that sorts after ours wins for the keys it matches.
//!
//! So for every layout path this module finds the store's specs that could
//! decide a key of its subtree (their literal stem is the path or lies below
//! it), and chooses lines that win without relying on order:
//! - the plain `PATH(/.*)?` when nothing competes;
//! - otherwise the exact `PATH` (exact specs beat every regex) plus
//!   `PATH/.*`, whose longer stem sorts after every same-stem spec, written
//!   `PATH/(.*)`, `PATH/((.*))`, … when a store spec with that stem must be
//!   outsorted too;
//! - under a protected path, and wherever a store spec still wins for a
//!   probe key, an equivalent copy of that store spec with the layout's type
//!   that sorts right after it (`STEM(REST)` for a regex, `…\/name` for an
//!   exact spec).
//!
//! None of our lines is ever textually identical to a store spec. The
//! result is proven, not argued: every declared path, probe keys below it
//! and a witness key of every overridden store spec are looked up in the
//! merged file (with the store's `.homedirs`, `.local` and substitution
//! files beside it) with our libselinux-exact lookup engine, for every file
//! type.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::StoreError;
use layout::model::{is_within, Layout};
use policy::file_contexts::{self, FileCon};
use policy::plan::{escape_regex, subtree_regex};
use selabel::{FileContexts, FileKind};

/// Entry names below each path that the proof looks up: unlike any name a
/// distribution's policy singles out.
pub(crate) const PROBE_NAME: &str = "semanifest-probe";

/// One spec of the store's own `file_contexts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSpec {
    pub regex: String,
    pub file_type: FileKind,
    /// `None` for `<<none>>`.
    pub context: Option<String>,
    /// 1-based line in the store's `file_contexts`.
    pub line: u32,
}

/// Reads `REGEX [TYPE] CONTEXT` lines (as secilc writes them).
pub(crate) fn parse_specs(text: &str) -> Vec<StoreSpec> {
    let mut specs = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        let (regex, file_type, context) = match fields.as_slice() {
            [regex, context] => (*regex, FileKind::Any, *context),
            [regex, field, context, ..] => match FileKind::from_type_field(field.as_bytes()) {
                Some(file_type) => (*regex, file_type, *context),
                None => continue,
            },
            _ => continue,
        };
        specs.push(StoreSpec {
            regex: regex.to_owned(),
            file_type,
            context: (context != "<<none>>").then(|| context.to_owned()),
            line: u32::try_from(index + 1).unwrap_or(u32::MAX),
        });
    }
    specs
}

/// The lookup modes a spec of `file_type` answers: mode 0 and its own, or
/// every mode for an untyped spec.
fn kinds_of(file_type: FileKind) -> Vec<FileKind> {
    match file_type {
        FileKind::Any => FileKind::ALL.to_vec(),
        kind => vec![FileKind::Any, kind],
    }
}

/// The files beside `file_contexts` that libselinux also reads, as the
/// store has them; carried over unchanged (the module changes none of them).
#[derive(Debug, Clone, Default)]
pub struct Siblings {
    pub homedirs: Option<PathBuf>,
    pub local: Option<PathBuf>,
    pub subs: Option<PathBuf>,
    pub subs_dist: Option<PathBuf>,
}

impl Siblings {
    fn each(&self) -> [(&'static str, Option<&PathBuf>); 4] {
        [
            (".homedirs", self.homedirs.as_ref()),
            (".local", self.local.as_ref()),
            (".subs", self.subs.as_ref()),
            (".subs_dist", self.subs_dist.as_ref()),
        ]
    }

    /// Writes `text` as `dir/file_contexts` with copies of the siblings.
    pub fn write_with(&self, dir: &Path, text: &str) -> Result<PathBuf, StoreError> {
        let out = super::output_dir(dir)?;
        let main = super::write_output(&out, dir, "file_contexts", text.as_bytes())?;
        self.copy_beside(&out, dir)?;
        Ok(main)
    }

    /// Copies the siblings next to `main` (`main.homedirs`, …).
    /// Copies the siblings beside `file_contexts` in the output directory
    /// `out` (at `dir`), removing those the store does not have.
    pub(crate) fn copy_beside(
        &self,
        out: &fsroot::Root,
        dir: &Path,
    ) -> Result<Vec<PathBuf>, StoreError> {
        let mut written = Vec::new();
        for (suffix, source) in self.each() {
            let name = format!("file_contexts{suffix}");
            match source {
                Some(source) => {
                    let bytes = fs::read(source).map_err(|error| StoreError::io(source, error))?;
                    written.push(super::write_output(out, dir, &name, &bytes)?);
                }
                None => super::remove_output(out, dir, &name)?,
            }
        }
        Ok(written)
    }

    /// Aliases of the substitution files (`alias real`), with where they are.
    fn aliases(&self) -> Result<Vec<Alias>, StoreError> {
        let mut aliases = Vec::new();
        for path in [&self.subs, &self.subs_dist].into_iter().flatten() {
            let text = fs::read_to_string(path).map_err(|error| StoreError::io(path, error))?;
            for (index, line) in text.lines().enumerate() {
                let mut fields = line.split_whitespace();
                match (fields.next(), fields.next()) {
                    (Some(alias), Some(real)) if !alias.starts_with('#') => aliases.push(Alias {
                        alias: alias.to_owned(),
                        real: real.to_owned(),
                        at: format!("{}:{}", path.display(), index + 1),
                    }),
                    _ => {}
                }
            }
        }
        Ok(aliases)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Alias {
    pub alias: String,
    pub real: String,
    /// `FILE:LINE`.
    pub at: String,
}

/// Why one of our lines exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Purpose {
    /// `PATH(/.*)?`: the path and its subtree.
    Subtree,
    /// The exact `PATH`, which beats every regex.
    Exact,
    /// `PATH/.*` (possibly with extra groups): the subtree below the path.
    Below,
    /// An equivalent copy of a store spec, sorted after it.
    Override {
        store_regex: String,
        store_line: u32,
    },
}

/// One `filecon` line of the module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    pub regex: String,
    #[serde(serialize_with = "serialize_file_type")]
    pub file_type: FileKind,
    pub purpose: Purpose,
}

fn serialize_file_type<S: serde::Serializer>(
    file_type: &FileKind,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(file_contexts::cil_keyword(*file_type))
}

/// What the store said about one layout path, and what we did about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Event {
    /// A store spec with exactly the regex a naive module would write.
    Collision { spec: SpecRef },
    /// A store spec that would win over the plain line for the path or
    /// generic keys below it.
    Shadow { spec: SpecRef },
    /// A store spec below the path that keeps winning for the keys it names
    /// (the path is not protected): the store's refinement stays.
    Kept { spec: SpecRef },
    /// A store spec below a protected path (or one that won for a probe
    /// key), overridden by an equivalent copy with the layout's type.
    Overridden { spec: SpecRef },
    /// The store's substitution files alias the path elsewhere: libselinux
    /// looks its keys up as the real path's, so the real path is what gets
    /// labelled.
    Aliased { alias: Alias, label: AliasLabel },
    /// The path's type is the base policy's own (`baseType: true`), the
    /// store has it, and the layout does not protect the path: the store's
    /// own specs label it and its subtree, and no line is written.
    LeftToStore { type_name: String },
}

/// How an aliased layout path gets its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AliasLabel {
    /// The store's lines for the real path already give the layout's type
    /// (`/var/run` → `/run`, `var_run_t`): no line is written.
    ByStore,
    /// The module's lines are written for the real path (`/var/mnt` →
    /// `/mnt`): the real path gets the layout's type too.
    ByModule,
}

/// A store spec as reports name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecRef {
    pub regex: String,
    pub file_type: &'static str,
    /// The context, `<<none>>` for none.
    pub context: String,
    /// The modules whose CIL has this `filecon`.
    pub modules: Vec<String>,
    pub line: u32,
}

/// The lines chosen for one layout path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct PathLines {
    pub path: String,
    pub type_name: String,
    pub lines: Vec<Line>,
    pub events: Vec<Event>,
    /// What the merged file gives the path (as a directory).
    pub merged: Option<String>,
}

impl PathLines {
    /// A layout path's lines and events; what the merged file gives it is
    /// read after the compilation.
    fn of(rule: &layout::model::PathRule, lines: Vec<Line>, events: Vec<Event>) -> Self {
        PathLines {
            path: rule.path.clone(),
            type_name: rule.type_name.clone(),
            lines,
            events,
            merged: None,
        }
    }
}

/// A key the proof looks up, and the context it must get.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    pub path: String,
    pub key: String,
    #[serde(skip)]
    pub kinds: Vec<FileKind>,
    pub expected: String,
}

/// A probe that got another answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub probe: Probe,
    pub kind: FileKind,
    pub got: Option<String>,
    /// The spec that decided: `FILE:LINE: REGEX`.
    pub winner: Option<selabel::SpecOrigin>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` ({:?}) resolves to {} instead of {} (layout path `{}`)",
            self.probe.key,
            self.kind,
            self.got.as_deref().unwrap_or("<<none>>"),
            self.probe.expected,
            self.probe.path
        )?;
        if let Some(winner) = &self.winner {
            write!(
                f,
                ": `{}` at {}:{} wins",
                winner.regex, winner.file, winner.line
            )?;
        }
        Ok(())
    }
}

/// File contexts the module cannot win against.
/// Why a store spec has no equivalent copy that sorts right after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoEquivalent {
    #[error("a quantifier right after its literal stem")]
    QuantifierAfterStem,
    #[error("a top-level `|`")]
    TopLevelAlternation,
    #[error("no `/` past its first component to escape")]
    NothingToEscape,
    #[error("its escaped copy exists already")]
    CopyExists,
    #[error("the copy would not sort after it")]
    SortsBefore,
}

#[derive(Debug, thiserror::Error)]
pub enum Unresolvable {
    #[error(
        "{mismatch}; that file is the store's local customisation (`semanage fcontext`), which beats every \
         module: remove the entry with `semanage fcontext -d '{regex}'` or give it the layout's type"
    )]
    Local {
        mismatch: Box<Mismatch>,
        regex: String,
    },
    #[error(
        "store spec `{regex}` (line {line}) under `{path}` cannot be overridden by an equivalent spec that \
         sorts after it ({why}); name the path it labels in the layout"
    )]
    NoEquivalent {
        path: String,
        regex: String,
        line: u32,
        why: NoEquivalent,
    },
    #[error("the file contexts do not converge: {mismatch}")]
    NoProgress { mismatch: Box<Mismatch> },
    #[error(
        "`{path}` is an alias of `{}` ({}): libselinux looks its keys up as `{}`'s, and {why}; {fix}",
        alias.real, alias.at, alias.real
    )]
    Alias {
        path: String,
        alias: Box<Alias>,
        why: String,
        fix: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum FileconError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Unresolvable(#[from] Unresolvable),
    #[error("merged file_contexts cannot be loaded: {0}")]
    Load(#[from] selabel::LoadError),
}

/// What the resolution decided for the whole layout.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Resolution {
    pub paths: Vec<PathLines>,
    pub probes: Vec<Probe>,
}

impl Resolution {
    /// Every line of the module with its path index, in layout order.
    pub(crate) fn filecons(&self, layout: &Layout) -> Vec<FileCon> {
        self.paths
            .iter()
            .zip(&layout.paths)
            .flat_map(|(lines, rule)| {
                lines.lines.iter().map(move |line| FileCon {
                    regex: line.regex.clone(),
                    file_type: line.file_type,
                    context: Some(rule.context()),
                })
            })
            .collect()
    }
}

/// The store's view: its specs and what names them.
pub(crate) struct StoreContexts<'a> {
    pub specs: &'a [StoreSpec],
    pub siblings: &'a Siblings,
    /// Regex → modules that wrote it.
    pub modules: &'a BTreeMap<String, BTreeSet<String>>,
}

impl StoreContexts<'_> {
    fn spec_ref(&self, index: usize) -> SpecRef {
        let spec = &self.specs[index];
        SpecRef {
            regex: spec.regex.clone(),
            file_type: file_contexts::cil_keyword(spec.file_type),
            context: spec
                .context
                .clone()
                .unwrap_or_else(|| "<<none>>".to_owned()),
            modules: self
                .modules
                .get(&spec.regex)
                .map(|m| m.iter().cloned().collect())
                .unwrap_or_default(),
            line: spec.line,
        }
    }

    fn as_filecon(&self, index: usize) -> FileCon {
        let spec = &self.specs[index];
        FileCon {
            regex: spec.regex.clone(),
            file_type: spec.file_type,
            context: spec.context.clone(),
        }
    }

    fn find(&self, regex: &str, mode: u32) -> Option<usize> {
        self.specs
            .iter()
            .position(|spec| spec.regex == regex && spec.file_type.selabel_mode() == mode)
    }
}

/// How one path is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathForm {
    /// `PATH(/.*)?`
    Plain,
    /// exact `PATH` + `PATH/` + `(`×n `.*` `)`×n
    Split { groups: usize },
}

#[derive(Debug, Clone)]
struct PathState {
    form: PathForm,
    /// The exact line for the path, escaped so no store exact spec equals
    /// it; `None` when it cannot be (the store's exact specs decide the path).
    exact: Option<String>,
    overrides: BTreeSet<usize>,
    aliased: Option<(Alias, AliasLabel)>,
    shadows: BTreeSet<usize>,
    /// [`left_to_store`]: no line, no probe.
    by_store: bool,
}

/// Whether the store, not the module, labels `rule`'s path: the layout
/// gives it the base policy's own type (`baseType: true`: container
/// content, as the standalone base labels it), does not protect it, and
/// the store has that type, so the store's own container policy labels
/// that content its way (container-selinux and refpolicy's container module
/// each label containerd's snapshots and sandboxes themselves).
pub(crate) fn left_to_store(
    rule: &layout::model::PathRule,
    store_types: &BTreeSet<String>,
) -> bool {
    rule.base_type && !rule.protected && store_types.contains(&rule.type_name)
}

/// Whether a path's events say it was [`left_to_store`].
pub(crate) fn left_to_store_in(events: &[Event]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::LeftToStore { .. }))
}

/// Chooses the module's lines for every layout path against the store's
/// specs, and proves them on the merged file in `work_dir`. `stock` is the
/// store's file contexts with its siblings: what an alias rewrites a path
/// to, and what the store gives it. `store_types` are the layout's file
/// types the store has: a path [`left_to_store`] gets no line.
pub(crate) fn resolve(
    layout: &Layout,
    store: &StoreContexts<'_>,
    stock: &FileContexts,
    store_types: &BTreeSet<String>,
    work_dir: &Path,
) -> Result<Resolution, FileconError> {
    let (labels, aliased) = follow_aliases(layout, store, stock)?;
    let mut states: Vec<PathState> = layout
        .paths
        .iter()
        .zip(&aliased)
        .enumerate()
        .map(|(index, (rule, aliased))| PathState {
            form: PathForm::Plain,
            exact: exact_line(&labels[index], store.specs),
            overrides: BTreeSet::new(),
            aliased: aliased.clone(),
            shadows: BTreeSet::new(),
            by_store: left_to_store(rule, store_types),
        })
        .collect();
    let owned: Vec<Vec<usize>> = (0..layout.paths.len())
        .map(|index| owned_specs(&labels, index, store.specs))
        .collect();
    let labels = &labels[..];

    // Identical text or a same-stem spec that sorts after the plain line:
    // the plain line cannot be trusted to win.
    for (index, rule) in layout.paths.iter().enumerate() {
        let plain = FileCon {
            regex: subtree_regex(&labels[index]),
            file_type: FileKind::Any,
            context: None,
        };
        let context = rule.context();
        for &spec in &owned[index] {
            let theirs = store.as_filecon(spec);
            let same_stem = file_contexts::literal_stem(&theirs.regex) == labels[index];
            let other_context = theirs.context.as_deref() != Some(context.as_str());
            if theirs.regex == plain.regex
                || (same_stem
                    && other_context
                    && file_contexts::compare(&theirs, &plain) == Ordering::Greater)
            {
                states[index].form = PathForm::Split { groups: 0 };
                states[index].shadows.insert(spec);
            }
        }
    }

    let mut protected_done = false;
    for _round in 0..16 {
        avoid_identical_text(labels, store, &mut states);
        let resolution = assemble(layout, labels, store, &states, &owned);
        let merged = merged_text(store, &resolution.filecons(layout));
        let contexts = load(work_dir, store.siblings, &merged)?;
        let mismatches = prove(&contexts, &resolution.probes);
        tracing::debug!(
            "file contexts round {_round}: {} mismatches",
            mismatches.len()
        );
        if mismatches.is_empty() {
            if !protected_done {
                protected_done = true;
                if add_protected_overrides(layout, labels, store, &mut states, &owned)? {
                    continue;
                }
            }
            return Ok(with_merged_labels(resolution, &contexts));
        }
        let mut progressed = false;
        for mismatch in mismatches {
            tracing::debug!("file contexts: {mismatch}");
            progressed |= react(layout, labels, store, &mut states, &owned, mismatch)?;
        }
        if !progressed {
            unreachable!("react either progresses or returns an error");
        }
    }
    let resolution = assemble(layout, labels, store, &states, &owned);
    let merged = merged_text(store, &resolution.filecons(layout));
    let contexts = load(work_dir, store.siblings, &merged)?;
    let mismatch = prove(&contexts, &resolution.probes).into_iter().next();
    match mismatch {
        Some(mismatch) => Err(Unresolvable::NoProgress {
            mismatch: Box::new(mismatch),
        }
        .into()),
        None => Ok(with_merged_labels(resolution, &contexts)),
    }
}

/// Records what the merged file gives each path (as a directory).
fn with_merged_labels(mut resolution: Resolution, merged: &FileContexts) -> Resolution {
    for path in &mut resolution.paths {
        path.merged = merged
            .lookup(path.path.as_bytes(), FileKind::Dir)
            .map(str::to_owned);
    }
    resolution
}

/// A `PATH/.*` line must never read like a store spec: secilc would keep
/// only one of the two (and libselinux refuses the pair at install), so
/// one more group is added until the text is new.
fn avoid_identical_text(labels: &[String], store: &StoreContexts<'_>, states: &mut [PathState]) {
    for (label, state) in labels.iter().zip(states.iter_mut()) {
        if let PathForm::Split { groups } = &mut state.form {
            while store
                .specs
                .iter()
                .any(|spec| spec.regex == below_regex(label, *groups))
            {
                *groups += 1;
            }
        }
    }
}

/// Turns one failed probe into a change of plan.
fn react(
    layout: &Layout,
    labels: &[String],
    store: &StoreContexts<'_>,
    states: &mut [PathState],
    owned: &[Vec<usize>],
    mismatch: Mismatch,
) -> Result<bool, FileconError> {
    let Some(index) = layout
        .paths
        .iter()
        .position(|rule| rule.path == mismatch.probe.path)
    else {
        return Err(Unresolvable::NoProgress {
            mismatch: Box::new(mismatch),
        }
        .into());
    };
    let Some(winner) = mismatch.winner.clone() else {
        return Err(Unresolvable::NoProgress {
            mismatch: Box::new(mismatch),
        }
        .into());
    };
    if !winner.file.ends_with("file_contexts") {
        let regex = winner.regex.clone();
        return Err(Unresolvable::Local {
            mismatch: Box::new(mismatch),
            regex,
        }
        .into());
    }
    let Some(spec) = store.find(&winner.regex, winner.mode) else {
        // One of our own lines decided with the wrong context: a bug.
        return Err(Unresolvable::NoProgress {
            mismatch: Box::new(mismatch),
        }
        .into());
    };
    let path = &labels[index];
    let theirs = store.as_filecon(spec);
    let stem = file_contexts::literal_stem(&theirs.regex);
    let is_regex = file_contexts::has_meta(&theirs.regex);
    let state = &mut states[index];
    state.shadows.insert(spec);
    let below = format!("{path}/");
    match state.form {
        PathForm::Plain if stem == *path || stem == below => {
            state.form = PathForm::Split { groups: 0 };
            return Ok(true);
        }
        PathForm::Split { groups } if is_regex && stem == below => {
            let mut groups = groups + 1;
            while file_contexts::compare(&below_line(path, groups), &theirs) != Ordering::Greater {
                groups += 1;
            }
            state.form = PathForm::Split { groups };
            return Ok(true);
        }
        _ => {}
    }
    // Only a spec of the path's own area may be overridden with its type.
    if owned[index].contains(&spec) && !state.overrides.contains(&spec) {
        override_line(store, spec, &layout.paths[index].path)?;
        state.overrides.insert(spec);
        return Ok(true);
    }
    Err(Unresolvable::NoProgress {
        mismatch: Box::new(mismatch),
    }
    .into())
}

/// Under a protected path, every store spec of another context that could
/// still win for some key gets an override. Returns whether any was added.
fn add_protected_overrides(
    layout: &Layout,
    labels: &[String],
    store: &StoreContexts<'_>,
    states: &mut [PathState],
    owned: &[Vec<usize>],
) -> Result<bool, Unresolvable> {
    let mut added = false;
    for (index, rule) in layout.paths.iter().enumerate() {
        let by_store = matches!(states[index].aliased, Some((_, AliasLabel::ByStore)));
        if !rule.protected || by_store {
            continue;
        }
        let context = rule.context();
        let ours = subtree_line(&labels[index], states[index].form);
        for &spec in &owned[index] {
            let theirs = store.as_filecon(spec);
            if theirs.context.as_deref() == Some(context.as_str()) {
                continue;
            }
            let wins_some = !file_contexts::has_meta(&theirs.regex)
                || file_contexts::compare(&theirs, &ours) == Ordering::Greater;
            if wins_some && !states[index].overrides.contains(&spec) {
                override_line(store, spec, &rule.path)?;
                states[index].overrides.insert(spec);
                added = true;
            }
        }
    }
    Ok(added)
}

/// The store specs whose literal stem is the label of path `index` or lies
/// below it, and not below a deeper layout path's label (those belong to
/// it).
fn owned_specs(labels: &[String], index: usize, specs: &[StoreSpec]) -> Vec<usize> {
    let path = labels[index].as_str();
    let deeper: Vec<&str> = labels
        .iter()
        .map(String::as_str)
        .filter(|other| *other != path && is_within(other, path))
        .collect();
    let below = format!("{path}/");
    specs
        .iter()
        .enumerate()
        .filter(|(_, spec)| {
            let stem = file_contexts::literal_stem(&spec.regex);
            let mine = stem == path || stem.starts_with(&below);
            let theirs = deeper
                .iter()
                .any(|d| stem == *d || stem.starts_with(&format!("{d}/")));
            mine && !theirs
        })
        .map(|(index, _)| index)
        .collect()
}

/// What each layout path is labelled as: the path itself, or the real
/// path the store's substitution files rewrite it to; and how an aliased
/// path gets its type.
#[allow(clippy::type_complexity)]
fn follow_aliases(
    layout: &Layout,
    store: &StoreContexts<'_>,
    stock: &FileContexts,
) -> Result<(Vec<String>, Vec<Option<(Alias, AliasLabel)>>), FileconError> {
    let written = store.siblings.aliases()?;
    let mut labels = Vec::new();
    let mut aliased = Vec::new();
    for rule in &layout.paths {
        let Some(real) = stock
            .substituted(rule.path.as_bytes())
            .and_then(|real| String::from_utf8(real).ok())
            .filter(|real| *real != rule.path)
        else {
            labels.push(rule.path.clone());
            aliased.push(None);
            continue;
        };
        let alias = written
            .iter()
            .find(|a| is_within(&rule.path, &a.alias) && is_within(&real, &a.real))
            .cloned()
            .unwrap_or_else(|| Alias {
                alias: rule.path.clone(),
                real: real.clone(),
                at: "the store's substitution files".to_owned(),
            });
        let refuse = |why: String, fix: String| Unresolvable::Alias {
            path: rule.path.clone(),
            alias: Box::new(alias.clone()),
            why,
            fix,
        };
        if real == "/" || !real.starts_with('/') {
            return Err(refuse(
                format!("labelling `{real}` would label the whole tree"),
                format!("declare the paths below `{}` instead", rule.path),
            )
            .into());
        }
        if let Some(other) = layout
            .paths
            .iter()
            .find(|o| o.path == real && o.type_name != rule.type_name)
        {
            return Err(refuse(
                format!(
                    "the layout declares `{real}` itself with type `{}`",
                    other.type_name
                ),
                format!(
                    "declare only one of `{}` and `{real}`, or give them one type",
                    rule.path
                ),
            )
            .into());
        }
        let label = if labelled_by_store(stock, rule) {
            AliasLabel::ByStore
        } else {
            AliasLabel::ByModule
        };
        labels.push(real);
        aliased.push(Some((alias, label)));
    }
    Ok((labels, aliased))
}

/// Whether the store's own lines give an aliased path the layout's
/// context (as a directory), and nothing else below it (`<<none>>`, the
/// store leaving what is below alone, counts as nothing else).
fn labelled_by_store(stock: &FileContexts, rule: &layout::model::PathRule) -> bool {
    let context = rule.context();
    if stock.lookup(rule.path.as_bytes(), FileKind::Dir) != Some(context.as_str()) {
        return false;
    }
    let below = format!("{}/{PROBE_NAME}", rule.path);
    FileKind::ALL.iter().all(|&kind| {
        stock
            .lookup(below.as_bytes(), kind)
            .is_none_or(|got| got == context)
    })
}

/// The exact line for `path`: the path escaped, with its last `/` written
/// `\/` when a store exact spec already reads the same (identical text
/// would collide; `\` sorts after `/`, so ours comes later). `None` when
/// that is impossible: libselinux takes a spec's first component (up to
/// the second `/`) as a literal filter, so only a later `/` may be escaped.
fn exact_line(path: &str, specs: &[StoreSpec]) -> Option<String> {
    let plain = escape_regex(path);
    let clashes = specs.iter().any(|spec| {
        !file_contexts::has_meta(&spec.regex) && file_contexts::literal_stem(&spec.regex) == path
    });
    if !clashes {
        return Some(plain);
    }
    let cut = escapable_slash(&plain)?;
    Some(format!("{}\\{}", &plain[..cut], &plain[cut..]))
}

/// The last unescaped `/` of an exact spec that may be written `\/`: not
/// the leading one, nor the one that ends the first component.
fn escapable_slash(regex: &str) -> Option<usize> {
    let bytes = regex.as_bytes();
    let first_after_lead = (1..bytes.len()).find(|&i| bytes[i] == b'/')?;
    (first_after_lead + 1..bytes.len())
        .rev()
        .find(|&i| bytes[i] == b'/' && bytes[i - 1] != b'\\')
}

fn below_regex(path: &str, groups: usize) -> String {
    format!(
        "{}/{}.*{}",
        escape_regex(path),
        "(".repeat(groups),
        ")".repeat(groups)
    )
}

fn below_line(path: &str, groups: usize) -> FileCon {
    FileCon {
        regex: below_regex(path, groups),
        file_type: FileKind::Any,
        context: None,
    }
}

/// The line that covers the subtree below the path in a form.
fn subtree_line(path: &str, form: PathForm) -> FileCon {
    match form {
        PathForm::Plain => FileCon {
            regex: subtree_regex(path),
            file_type: FileKind::Any,
            context: None,
        },
        PathForm::Split { groups } => below_line(path, groups),
    }
}

/// An equivalent copy of store spec `index` that sorts right after it.
fn override_line(
    store: &StoreContexts<'_>,
    index: usize,
    path: &str,
) -> Result<Line, Unresolvable> {
    let spec = &store.specs[index];
    let no_equivalent = |why| Unresolvable::NoEquivalent {
        path: path.to_owned(),
        regex: spec.regex.clone(),
        line: spec.line,
        why,
    };
    let mut regex = if file_contexts::has_meta(&spec.regex) {
        let cut = raw_stem_len(&spec.regex);
        let rest = &spec.regex[cut..];
        if rest.starts_with(['?', '*', '+', '{']) {
            return Err(no_equivalent(NoEquivalent::QuantifierAfterStem));
        }
        if has_top_level_alternation(rest) {
            return Err(no_equivalent(NoEquivalent::TopLevelAlternation));
        }
        format!("{}({rest})", &spec.regex[..cut])
    } else {
        let Some(cut) = escapable_slash(&spec.regex) else {
            return Err(no_equivalent(NoEquivalent::NothingToEscape));
        };
        format!("{}\\{}", &spec.regex[..cut], &spec.regex[cut..])
    };
    // Never the text of another store spec.
    while store.specs.iter().any(|other| other.regex == regex) {
        let cut = raw_stem_len(&regex);
        if cut == regex.len() {
            return Err(no_equivalent(NoEquivalent::CopyExists));
        }
        regex = format!("{}({})", &regex[..cut], &regex[cut..]);
    }
    let line = FileCon {
        regex: regex.clone(),
        file_type: spec.file_type,
        context: None,
    };
    if file_contexts::compare(&line, &store.as_filecon(index)) != Ordering::Greater {
        return Err(no_equivalent(NoEquivalent::SortsBefore));
    }
    Ok(Line {
        regex,
        file_type: spec.file_type,
        purpose: Purpose::Override {
            store_regex: spec.regex.clone(),
            store_line: spec.line,
        },
    })
}

/// Bytes of `regex` before its first unescaped metacharacter.
fn raw_stem_len(regex: &str) -> usize {
    let bytes = regex.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'.' | b'^' | b'$' | b'?' | b'*' | b'+' | b'|' | b'[' | b'(' | b'{' => return i,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Whether `|` appears outside every group and class.
fn has_top_level_alternation(regex: &str) -> bool {
    let bytes = regex.as_bytes();
    let (mut depth, mut in_class, mut i) = (0usize, false, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'[' if !in_class => {
                in_class = true;
                // `[]…]` and `[^]…]`: a leading `]` is a literal.
                if bytes.get(i + 1) == Some(&b'^') {
                    i += 1;
                }
                if bytes.get(i + 1) == Some(&b']') {
                    i += 1;
                }
            }
            b']' if in_class => in_class = false,
            b'(' if !in_class => depth += 1,
            b')' if !in_class => depth = depth.saturating_sub(1),
            b'|' if !in_class && depth == 0 => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// Lines and probes for the current plan.
fn assemble(
    layout: &Layout,
    labels: &[String],
    store: &StoreContexts<'_>,
    states: &[PathState],
    owned: &[Vec<usize>],
) -> Resolution {
    let mut resolution = Resolution::default();
    for (index, ((rule, state), owned)) in layout.paths.iter().zip(states).zip(owned).enumerate() {
        let label = &labels[index];
        let mut lines = Vec::new();
        let mut events = Vec::new();
        if state.by_store {
            events.push(Event::LeftToStore {
                type_name: rule.type_name.clone(),
            });
            resolution.paths.push(PathLines::of(rule, lines, events));
            continue;
        }
        if let Some((alias, how)) = &state.aliased {
            events.push(Event::Aliased {
                alias: alias.clone(),
                label: *how,
            });
            if *how == AliasLabel::ByStore {
                resolution.probes.push(Probe {
                    path: rule.path.clone(),
                    key: rule.path.clone(),
                    kinds: vec![FileKind::Dir],
                    expected: rule.context(),
                });
                resolution.paths.push(PathLines::of(rule, lines, events));
                continue;
            }
        }
        match state.form {
            PathForm::Plain => lines.push(Line {
                regex: subtree_regex(label),
                file_type: FileKind::Any,
                purpose: Purpose::Subtree,
            }),
            PathForm::Split { groups } => {
                if let Some(exact) = &state.exact {
                    lines.push(Line {
                        regex: exact.clone(),
                        file_type: FileKind::Any,
                        purpose: Purpose::Exact,
                    });
                }
                lines.push(Line {
                    regex: below_regex(label, groups),
                    file_type: FileKind::Any,
                    purpose: Purpose::Below,
                });
            }
        }
        for &spec in &state.overrides {
            if let Ok(line) = override_line(store, spec, &rule.path) {
                lines.push(line);
            }
        }
        let plain = subtree_regex(label);
        let ours = subtree_line(label, state.form);
        let context = rule.context();
        for &spec in owned {
            let theirs = store.as_filecon(spec);
            let event = if theirs.regex == plain {
                Event::Collision {
                    spec: store.spec_ref(spec),
                }
            } else if state.overrides.contains(&spec) {
                Event::Overridden {
                    spec: store.spec_ref(spec),
                }
            } else if state.shadows.contains(&spec) {
                Event::Shadow {
                    spec: store.spec_ref(spec),
                }
            } else if theirs.context.as_deref() != Some(context.as_str())
                && (!file_contexts::has_meta(&theirs.regex)
                    || file_contexts::compare(&theirs, &ours) == Ordering::Greater)
            {
                Event::Kept {
                    spec: store.spec_ref(spec),
                }
            } else {
                continue;
            };
            events.push(event);
        }
        resolution
            .probes
            .extend(probes(layout, &rule.path, label, state, store));
        resolution.paths.push(PathLines::of(rule, lines, events));
    }
    resolution
}

/// The keys proven for one path: the path, generic names below it, and a
/// witness of every store spec it overrides. Each key must get the context
/// of the layout path that covers it. Keys are the layout's (an aliased
/// path's are looked up through the alias, as on the node); a witness of
/// a spec under the real path `label` is moved under the path.
fn probes(
    layout: &Layout,
    path: &str,
    label: &str,
    state: &PathState,
    store: &StoreContexts<'_>,
) -> Vec<Probe> {
    let mut probes = Vec::new();
    let mut push = |key: String, kinds: Vec<FileKind>| {
        let Some(rule) = layout.rule_for(&key) else {
            return;
        };
        if rule.path != path {
            return; // below a deeper layout path: proven there
        }
        if !probes
            .iter()
            .any(|p: &Probe| p.key == key && p.kinds == kinds)
        {
            probes.push(Probe {
                path: path.to_owned(),
                key,
                kinds,
                expected: rule.context(),
            });
        }
    };
    push(path.to_owned(), FileKind::ALL.to_vec());
    push(format!("{path}/{PROBE_NAME}"), FileKind::ALL.to_vec());
    push(
        format!("{path}/{PROBE_NAME}/{PROBE_NAME}"),
        FileKind::ALL.to_vec(),
    );
    for &spec in &state.overrides {
        let spec = &store.specs[spec];
        if let Some(key) = witness(&spec.regex, spec.file_type) {
            let key = match key.strip_prefix(label) {
                Some(rest) if label != path => format!("{path}{rest}"),
                _ => key,
            };
            push(key, kinds_of(spec.file_type));
        }
    }
    probes
}

/// The store's specs plus ours, in secilc's order.
fn merged_text(store: &StoreContexts<'_>, ours: &[FileCon]) -> String {
    let mut all: Vec<FileCon> = (0..store.specs.len())
        .map(|i| store.as_filecon(i))
        .collect();
    all.extend(ours.iter().cloned());
    file_contexts::render(all)
}

fn load(work_dir: &Path, siblings: &Siblings, text: &str) -> Result<FileContexts, FileconError> {
    let main = siblings.write_with(work_dir, text)?;
    Ok(FileContexts::load(&main)?)
}

/// Looks up every probe for each of its kinds.
pub(crate) fn prove(contexts: &FileContexts, probes: &[Probe]) -> Vec<Mismatch> {
    let mut mismatches = Vec::new();
    for probe in probes {
        for &kind in &probe.kinds {
            let got = contexts.lookup(probe.key.as_bytes(), kind);
            if got != Some(probe.expected.as_str()) {
                mismatches.push(Mismatch {
                    probe: probe.clone(),
                    kind,
                    got: got.map(str::to_owned),
                    winner: contexts.winner(probe.key.as_bytes(), kind).cloned(),
                });
                break;
            }
        }
    }
    mismatches
}

/// A key `regex` matches (as libselinux reads it), built from the regex's
/// shape: literals as written, the first fitting printable byte of a class,
/// each repetition at its minimum (or once). `None` when no candidate is
/// confirmed by the lookup engine itself.
pub(crate) fn witness(regex: &str, file_type: FileKind) -> Option<String> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .dot_matches_new_line(true)
        .build()
        .parse(regex)
        .ok()?;
    let check = FileContexts::from_text(
        "witness",
        format!("{regex}\tsystem_u:object_r:witness_t:s0\n").as_bytes(),
    )
    .ok()?;
    let kind = kinds_of(file_type).pop().unwrap_or(FileKind::Any);
    for at_least_once in [false, true] {
        let mut bytes = Vec::new();
        generate(&hir, at_least_once, &mut bytes);
        let Ok(key) = String::from_utf8(bytes) else {
            continue;
        };
        if check.lookup(key.as_bytes(), kind).is_some()
            && !key.contains("//")
            && !key.ends_with('/')
        {
            return Some(key);
        }
    }
    None
}

fn generate(hir: &regex_syntax::hir::Hir, at_least_once: bool, out: &mut Vec<u8>) {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(literal) => out.extend_from_slice(&literal.0),
        HirKind::Class(class) => {
            let fits = |byte: u8| match class {
                Class::Bytes(bytes) => bytes
                    .ranges()
                    .iter()
                    .any(|r| r.start() <= byte && byte <= r.end()),
                Class::Unicode(chars) => chars
                    .ranges()
                    .iter()
                    .any(|r| r.start() <= byte as char && byte as char <= r.end()),
            };
            let preferred = b"abcdefghijklmnopqrstuvwxyz0123456789._-ABCDEFGHIJKLMNOPQRSTUVWXYZ";
            let byte = preferred
                .iter()
                .copied()
                .find(|&b| fits(b))
                .or_else(|| (0x21u8..0x7f).find(|&b| b != b'/' && fits(b)))
                .or_else(|| (0x01u8..=0xff).find(|&b| fits(b)));
            out.extend(byte);
        }
        HirKind::Repetition(repetition) => {
            let times = if at_least_once {
                repetition.min.max(1)
            } else {
                repetition.min
            };
            for _ in 0..times.min(4) {
                generate(&repetition.sub, at_least_once, out);
            }
        }
        HirKind::Capture(capture) => generate(&capture.sub, at_least_once, out),
        HirKind::Concat(items) => items
            .iter()
            .for_each(|item| generate(item, at_least_once, out)),
        HirKind::Alternation(branches) => {
            if let Some(first) = branches.first() {
                generate(first, at_least_once, out);
            }
        }
    }
}

/// What the stock store gives `key` (as a directory), and which spec decides.
pub(crate) fn stock_label(
    contexts: &FileContexts,
    key: &str,
) -> (Option<String>, Option<selabel::SpecOrigin>) {
    let kind = FileKind::Dir;
    (
        contexts.lookup(key.as_bytes(), kind).map(str::to_owned),
        contexts.winner(key.as_bytes(), kind).cloned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(regex: &str, context: &str) -> StoreSpec {
        StoreSpec {
            regex: regex.into(),
            file_type: FileKind::Any,
            context: Some(context.into()),
            line: 1,
        }
    }

    #[test]
    fn parses_secilc_lines() {
        let specs =
            parse_specs("/var(/.*)?\tsystem_u:object_r:var_t:s0\n/run\t-d\tctx\n/x\t<<none>>\n");
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[1].file_type, FileKind::Dir);
        assert_eq!(specs[2].context, None);
        assert_eq!(specs[2].line, 3);
    }

    #[test]
    fn exact_line_escapes_only_on_a_clash() {
        assert_eq!(
            exact_line("/var/lib/etcd", &[spec("/var/lib/etcd(/.*)?", "c")]).as_deref(),
            Some("/var/lib/etcd")
        );
        assert_eq!(
            exact_line("/var/lib/etcd", &[spec("/var/lib/etcd", "c")]).as_deref(),
            Some("/var/lib\\/etcd")
        );
        assert_eq!(exact_line("/var/log", &[spec("/var/log", "c")]), None);
    }

    #[test]
    fn top_level_alternation_is_seen_outside_groups_and_classes() {
        assert!(has_top_level_alternation("a|b"));
        assert!(!has_top_level_alternation("(a|b)"));
        assert!(!has_top_level_alternation("[|]x"));
        assert!(!has_top_level_alternation("\\|x"));
        assert!(!has_top_level_alternation("[]|]x"));
    }

    #[test]
    fn below_lines_outsort_same_stem_specs() {
        let theirs = FileCon {
            regex: "/var/lib/x/.*".into(),
            file_type: FileKind::Any,
            context: None,
        };
        assert_eq!(
            file_contexts::compare(&below_line("/var/lib/x", 0), &theirs),
            Ordering::Equal
        );
        assert_eq!(
            file_contexts::compare(&below_line("/var/lib/x", 1), &theirs),
            Ordering::Greater
        );
        assert_eq!(below_regex("/var/a.b", 2), "/var/a\\.b/((.*))");
    }

    fn layout() -> Layout {
        let yaml = "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata: { name: t }\nspec:\n  domains:\n    etcd: { type: etcd_t }\n  paths:\n    - path: /var/lib/etcd\n      type: etcd_var_t\n      access: { etcd: write }\n      protected: true\n    - path: /var/lib/cni\n      type: cni_var_t\n      access: { etcd: read }\n";
        layout::manifest::parse(
            layout::diag::Source::new("t.yaml", yaml),
            &Default::default(),
        )
        .unwrap()
        .layout
    }

    fn resolve_against(
        specs: &[StoreSpec],
        siblings: &Siblings,
    ) -> Result<Resolution, FileconError> {
        let dir = tempfile::tempdir().unwrap();
        let modules = BTreeMap::new();
        let store = StoreContexts {
            specs,
            siblings,
            modules: &modules,
        };
        let stock = load(
            &dir.path().join("stock"),
            siblings,
            &merged_text(&store, &[]),
        )
        .unwrap();
        resolve(&layout(), &store, &stock, &BTreeSet::new(), dir.path())
    }

    fn base_specs() -> Vec<StoreSpec> {
        vec![
            spec("/.*", "system_u:object_r:default_t:s0"),
            spec("/var/lib(/.*)?", "system_u:object_r:var_lib_t:s0"),
        ]
    }

    #[test]
    fn plain_lines_when_nothing_competes() {
        let resolution = resolve_against(&base_specs(), &Siblings::default()).unwrap();
        let regexes: Vec<&str> = resolution.paths[1]
            .lines
            .iter()
            .map(|l| l.regex.as_str())
            .collect();
        assert_eq!(regexes, ["/var/lib/etcd(/.*)?"]);
        assert!(resolution.paths.iter().all(|p| p.events.is_empty()));
    }

    #[test]
    fn identical_and_same_stem_specs_are_outsorted() {
        let mut specs = base_specs();
        specs.push(spec(
            "/var/lib/etcd(/.*)?",
            "system_u:object_r:container_file_t:s0",
        ));
        specs.push(spec(
            "/var/lib/etcd/.*",
            "system_u:object_r:container_file_t:s0",
        ));
        specs.push(spec(
            "/var/lib/cni/.+",
            "system_u:object_r:container_var_lib_t:s0",
        ));
        let resolution = resolve_against(&specs, &Siblings::default()).unwrap();
        let etcd = &resolution.paths[1];
        let regexes: Vec<&str> = etcd.lines.iter().map(|l| l.regex.as_str()).collect();
        assert_eq!(regexes, ["/var/lib/etcd", "/var/lib/etcd/(.*)"]);
        assert!(matches!(etcd.events[0], Event::Collision { .. }));
        let cni: Vec<&str> = resolution.paths[0]
            .lines
            .iter()
            .map(|l| l.regex.as_str())
            .collect();
        assert_eq!(cni, ["/var/lib/cni", "/var/lib/cni/(.*)"]);
    }

    #[test]
    fn deeper_specs_are_overridden_only_under_protected_paths() {
        let mut specs = base_specs();
        specs.push(spec(
            "/var/lib/etcd/member/[^/]+/wal(/.*)?",
            "system_u:object_r:other_t:s0",
        ));
        specs.push(spec(
            "/var/lib/etcd/member/lock",
            "system_u:object_r:other_t:s0",
        ));
        specs.push(spec(
            "/var/lib/cni/cache(/.*)?",
            "system_u:object_r:other_t:s0",
        ));
        let resolution = resolve_against(&specs, &Siblings::default()).unwrap();
        let etcd: Vec<&str> = resolution.paths[1]
            .lines
            .iter()
            .map(|l| l.regex.as_str())
            .collect();
        assert_eq!(
            etcd,
            [
                "/var/lib/etcd(/.*)?",
                "/var/lib/etcd/member/([^/]+/wal(/.*)?)",
                "/var/lib/etcd/member\\/lock"
            ]
        );
        assert!(resolution
            .probes
            .iter()
            .any(|p| p.key == "/var/lib/etcd/member/a/wal"));
        assert!(resolution
            .probes
            .iter()
            .any(|p| p.key == "/var/lib/etcd/member/lock"));
        assert!(matches!(
            resolution.paths[0].events[..],
            [Event::Kept { .. }]
        ));
    }

    #[test]
    fn local_customisations_and_aliases_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("file_contexts.local");
        fs::write(
            &local,
            "/var/lib/etcd(/.*)?\tsystem_u:object_r:container_file_t:s0\n",
        )
        .unwrap();
        let siblings = Siblings {
            local: Some(local),
            ..Siblings::default()
        };
        let error = resolve_against(&base_specs(), &siblings).unwrap_err();
        assert!(
            matches!(
                error,
                FileconError::Unresolvable(Unresolvable::Local { .. })
            ),
            "{error}"
        );

        let subs = dir.path().join("file_contexts.subs_dist");
        fs::write(&subs, "# comment\n/var/lib/cni /run/cni\n").unwrap();
        let siblings = Siblings {
            subs_dist: Some(subs),
            ..Siblings::default()
        };
        // The store does not label /run/cni as the layout does: the module
        // labels it, and the layout's key reaches the line through the alias.
        let resolution = resolve_against(&base_specs(), &siblings).unwrap();
        let lines: Vec<&str> = resolution.paths[0]
            .lines
            .iter()
            .map(|l| l.regex.as_str())
            .collect();
        assert_eq!(lines, ["/run/cni(/.*)?"]);
        assert!(matches!(
            resolution.paths[0].events[..],
            [Event::Aliased {
                label: AliasLabel::ByModule,
                ..
            }]
        ));
        assert!(resolution
            .probes
            .iter()
            .any(|p| p.key == "/var/lib/cni/semanifest-probe"));
        // It does: no line.
        let mut specs = base_specs();
        specs.push(spec("/run/cni(/.*)?", "system_u:object_r:cni_var_t:s0"));
        let resolution = resolve_against(&specs, &siblings).unwrap();
        assert!(resolution.paths[0].lines.is_empty());
        assert!(matches!(
            resolution.paths[0].events[..],
            [Event::Aliased {
                label: AliasLabel::ByStore,
                ..
            }]
        ));
        // An alias onto another declared path with another type is refused.
        fs::write(
            siblings.subs_dist.as_ref().unwrap(),
            "/var/lib/cni /var/lib/etcd\n",
        )
        .unwrap();
        let error = resolve_against(&base_specs(), &siblings).unwrap_err();
        assert!(
            matches!(
                error,
                FileconError::Unresolvable(Unresolvable::Alias { .. })
            ),
            "{error}"
        );
    }

    #[test]
    fn witnesses_match_their_spec() {
        assert_eq!(
            witness("/var/lib/containerd/[^/]+/snapshots(/.*)?", FileKind::Any).as_deref(),
            Some("/var/lib/containerd/a/snapshots")
        );
        assert_eq!(
            witness("/var/lib/etcd/member", FileKind::Any).as_deref(),
            Some("/var/lib/etcd/member")
        );
        assert_eq!(
            witness("/var/log/.*\\.log", FileKind::File).as_deref(),
            Some("/var/log/.log")
        );
    }
}
