//! `suggest`: agent domains for the workloads whose hostPaths no domain of
//! the layout fits, written as a layout (the base's text with new domains,
//! paths and grants inserted) and as the manifests with
//! `seLinuxOptions.type` set.
//!
//! Per Linux workload mounting hostPaths (a pod template of any kind;
//! workloads pinned to another OS and PersistentVolumes are left alone):
//! 1. It is judged as `check --k8s` judges it ([`audit_workload`] with
//!    [`HostPathRules`]): no error, nothing to do.
//! 2. Volumes touching a protected path and privileged containers are
//!    never fixed: they stay errors, and the suggestion says why.
//! 3. The other volumes are its needs: each path, `write` unless every
//!    mount of it is `readOnly`. The first domain of the layout that
//!    grants every need (as `check` judges a grant) is chosen.
//! 4. Otherwise a new agent domain of its own, named after the workload,
//!    holds exactly its needs: a host class covering the path (one class
//!    only, at the level the mounts need, with a warning naming it), or
//!    else a layout path — the declared one when the path is declared,
//!    else a new path entry below the deepest declared one (the directory
//!    of a file, socket or device; the new path keeps its parent's grants
//!    to every other domain). A path no class covers and no declared path
//!    holds cannot be granted. The runtime domains (those that start pods)
//!    may start the new domain.
//! 5. The result is proven the way `check` would: the new layout is
//!    validated, the patched manifests parsed again, and every workload
//!    judged against the new layout; what is still an error is reported.
//!
//! One domain per workload, never shared: a domain's grants then read as
//! one workload's volumes, and tightening one workload never loosens
//! another.

mod layout_text;
mod manifest_text;
mod names;

use std::collections::BTreeSet;
use std::sync::Arc;

use layout::diag::{Finding, Severity, Source};
use layout::manifest::{parse, BaseFacts, Parsed};
use layout::model::host::{self, BeyondLabels, HostClass};
use layout::model::{is_within, Layout};
use serde::Serialize;

use crate::audit::{audit_workload, special_file};
use crate::judgement::{DomainChoice, DomainKind, DomainRules, HostPathRules};
use crate::load::parse_source;
use crate::path::NormalPath;
use crate::workload::{HostPathMount, HostPathVolume, Manifests, SourceFile, Workload};
pub use layout_text::LayoutTextError;
use layout_text::{Additions, NewDomain, NewPath};
use manifest_text::{Edit, PatchError};
use names::Names;

/// What `suggest` proposes.
#[derive(Debug)]
pub struct Suggestion {
    /// The new layout: the base's text with the additions.
    pub layout_text: String,
    /// Every input file, patched or not, in input order.
    pub files: Vec<SuggestedFile>,
    /// Every Linux workload mounting hostPaths, in input order.
    pub workloads: Vec<WorkloadSuggestion>,
}

impl Suggestion {
    /// Whether every workload runs in a confined domain that grants its
    /// volumes.
    pub fn all_confined(&self) -> bool {
        self.workloads
            .iter()
            .all(|w| w.status != Status::NotConfined)
    }
}

/// One input file and its text after the suggestion.
#[derive(Debug)]
pub struct SuggestedFile {
    /// The name the file was read under.
    pub name: String,
    pub text: String,
    /// How many workloads of it had their type set.
    pub patched: usize,
}

/// What became of one workload.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSuggestion {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub status: Status,
    /// The domain it runs in after the suggestion, if one was chosen.
    pub domain: Option<ChosenDomain>,
    /// Whether its manifest had `seLinuxOptions.type` set.
    pub patched: bool,
    /// What the domain was given for it (a new domain only).
    pub grants: Vec<GrantMade>,
    pub warnings: Vec<String>,
    /// Why it is not confined and what to do, from `suggest`.
    pub errors: Vec<String>,
    /// What `check --k8s` still reports at error level for it against the
    /// new layout and manifest (`FILE:LINE:COLUMN: message`).
    pub remaining: Vec<String>,
}

impl WorkloadSuggestion {
    /// `DaemonSet logging/fluent-bit`.
    pub fn display(&self) -> String {
        let name = self.name.as_deref().unwrap_or("(unnamed)");
        match &self.namespace {
            Some(namespace) => format!("{} {namespace}/{name}", self.kind),
            None => format!("{} {name}", self.kind),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    /// Its domain already grants every volume: nothing changed.
    Fits,
    /// It runs in a domain (existing or new) that grants every volume.
    Confined,
    /// Some of it stays an error (see `errors` and `remaining`).
    NotConfined,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChosenDomain {
    pub key: String,
    pub selinux_type: String,
    /// Added by this suggestion.
    pub new: bool,
}

/// One grant a new domain was given for a volume.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantMade {
    pub volume: String,
    pub host_path: String,
    /// `read` or `write`.
    pub level: &'static str,
    /// The host class granted, or else…
    pub host_class: Option<&'static str>,
    /// …the layout path granted,
    pub layout_path: Option<String>,
    /// declared by this suggestion.
    pub new_path: bool,
}

/// Why no suggestion could be made at all.
#[derive(Debug, thiserror::Error)]
pub enum SuggestError {
    #[error(transparent)]
    LayoutText(#[from] LayoutTextError),
    #[error("the suggested layout does not validate (please report this): {0}")]
    InvalidResult(String),
}

/// A volume the workload needs granted.
struct Need<'w> {
    volume: &'w HostPathVolume,
    path: NormalPath,
    write: bool,
}

impl Need<'_> {
    fn level(&self) -> &'static str {
        if self.write {
            "write"
        } else {
            "read"
        }
    }
}

/// The suggestion for `manifests` (read from `sources`) against `base`.
pub fn suggest(
    base: &Parsed,
    facts: &BaseFacts,
    manifests: &Manifests,
    sources: &[Arc<SourceFile>],
) -> Result<Suggestion, SuggestError> {
    let rules = HostPathRules::of(base);
    let layout = &base.layout;
    let mut names = Names::new(layout, &facts.types);
    let mut additions = Additions::default();
    let mut reports = Vec::new();
    // Per workload reported: its index in `manifests.workloads` and the
    // type to set, if any.
    let mut patches: Vec<(usize, Option<String>)> = Vec::new();
    for (index, workload) in manifests.workloads.iter().enumerate() {
        let planned = plan_workload(workload, &rules, layout, &mut names, &mut additions);
        if let Some((report, selinux_type)) = planned {
            reports.push(report);
            patches.push((index, selinux_type));
        }
    }
    let_runtimes_start_new_domains(layout, &mut additions, &mut reports);
    let (layout_text, suggested) = render_layout(base, facts, &additions)?;
    let new_rules = HostPathRules::of(&suggested);
    let files = sources
        .iter()
        .map(|source| patch_and_rejudge(source, manifests, &patches, &mut reports, &new_rules))
        .collect();
    attach_layout_warnings(&suggested, &mut reports);
    Ok(Suggestion {
        layout_text,
        files,
        workloads: reports,
    })
}

/// What becomes of one workload: its report and the type to set on it,
/// or `None` when it is not reported (pinned to another OS, no hostPath,
/// or an unmovable volume that judges clean). A new domain it needs is
/// added to `additions`.
fn plan_workload(
    workload: &Workload,
    rules: &HostPathRules,
    layout: &Layout,
    names: &mut Names,
    additions: &mut Additions,
) -> Option<(WorkloadSuggestion, Option<String>)> {
    if workload.pinned_os.is_some() || workload.host_path_volumes.is_empty() {
        return None;
    }
    let mut report = blank_report(workload);
    let current = current_domain(workload, rules);
    let before = errors_of(&audit_workload(workload, rules));
    if let Some(why) = unmovable(workload) {
        if before.is_empty() {
            return None;
        }
        report.errors.push(why.to_owned());
        return Some((report, None));
    }
    if before.is_empty() {
        report.domain = current.map(|d| chosen(d, false));
        return Some((report, None));
    }
    let needs = needs(workload, rules, &mut report.errors);
    if needs.is_empty() {
        return Some((report, None));
    }
    let fits = |domain: &DomainRules| {
        needs.iter().all(|need| {
            domain.judge(&need.path).admits(!need.write)
                && !(domain.kind == DomainKind::Workload && special_file(need.volume).is_some())
        })
    };
    let existing = current
        .filter(|d| fits(d))
        .or_else(|| rules.domains.iter().find(|d| fits(d)));
    let selinux_type = match existing {
        Some(domain) => {
            report.domain = Some(chosen(domain, false));
            domain.selinux_type.clone()
        }
        None => match new_domain(workload, &needs, layout, names, additions, &mut report) {
            Some(domain) => domain,
            None => return Some((report, None)),
        },
    };
    let unchanged = current.is_some_and(|d| d.selinux_type == selinux_type);
    Some((report, (!unchanged).then_some(selinux_type)))
}

/// Why the workload's volumes cannot be moved by giving it a domain: a
/// PersistentVolume's path, and volumes no container mounts, are judged
/// as the pod domain's whatever type a pod runs as.
fn unmovable(workload: &Workload) -> Option<&'static str> {
    if workload.selinux_spots.is_none() {
        Some(
            "a PersistentVolume gives its host path to every pod that claims it, judged as \
             the pod domain's: suggest moves workloads into domains, not volumes; move the \
             path below a hostPath root of the layout",
        )
    } else if workload
        .host_path_volumes
        .iter()
        .all(|v| v.mounts.is_empty())
    {
        Some(
            "no container mounts its hostPath volumes, so they are judged as the pod \
             domain's whatever its type: drop them, or move them below a hostPath root",
        )
    } else {
        None
    }
}

/// The report of a workload before anything is decided for it.
fn blank_report(workload: &Workload) -> WorkloadSuggestion {
    WorkloadSuggestion {
        file: workload.source.name().to_owned(),
        line: workload.kind.position.line,
        column: workload.kind.position.column,
        kind: workload.kind.value.clone(),
        namespace: workload.namespace.clone(),
        name: workload.name.clone(),
        status: Status::Fits,
        domain: None,
        patched: false,
        grants: Vec::new(),
        warnings: Vec::new(),
        errors: Vec::new(),
        remaining: Vec::new(),
    }
}

/// Adds every new domain to the `transitions` of each runtime domain (one
/// that starts pods); when the layout has none, warns the workloads given
/// a new domain.
fn let_runtimes_start_new_domains(
    layout: &Layout,
    additions: &mut Additions,
    reports: &mut [WorkloadSuggestion],
) {
    if additions.domains.is_empty() {
        return;
    }
    let runtimes: Vec<usize> = layout
        .domains
        .iter()
        .enumerate()
        .filter(|(_, d)| !d.is_container())
        .filter(|(_, d)| {
            d.transitions
                .iter()
                .any(|t| layout.domains[*t].is_container())
        })
        .map(|(i, _)| i)
        .collect();
    for domain in &additions.domains {
        if runtimes.is_empty() {
            for report in reports
                .iter_mut()
                .filter(|r| r.domain.as_ref().is_some_and(|d| d.key == domain.key))
            {
                report.warnings.push(format!(
                    "no domain of the layout starts pods (`transitions`); add `{}` to the \
                     container runtime's",
                    domain.key
                ));
            }
        }
        for runtime in &runtimes {
            additions.transitions.push((*runtime, domain.key.clone()));
        }
    }
}

/// The new layout's text (the base's when nothing is added) and the
/// layout parsed from it, proving it validates.
fn render_layout(
    base: &Parsed,
    facts: &BaseFacts,
    additions: &Additions,
) -> Result<(String, Parsed), SuggestError> {
    let layout_text = if additions.domains.is_empty()
        && additions.paths.is_empty()
        && additions.grants.is_empty()
    {
        base.source.text.clone()
    } else {
        layout_text::render(&base.source.text, &base.layout, additions)?
    };
    let suggested = parse(
        Source::new(base.source.name.clone(), layout_text.clone()),
        facts,
    )
    .map_err(|report| {
        SuggestError::InvalidResult(
            report
                .diagnostics
                .iter()
                .map(|d| d.to_finding(&report.source).message)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    Ok((layout_text, suggested))
}

/// Patches `source`'s workloads with the types planned for them, reads
/// the file again and judges each reported workload anew against
/// `new_rules`, settling its status.
fn patch_and_rejudge(
    source: &Arc<SourceFile>,
    manifests: &Manifests,
    patches: &[(usize, Option<String>)],
    reports: &mut [WorkloadSuggestion],
    new_rules: &HostPathRules,
) -> SuggestedFile {
    let mut edits: Vec<Edit> = Vec::new();
    let mut patched = 0;
    let in_file: Vec<usize> = manifests
        .workloads
        .iter()
        .enumerate()
        .filter(|(_, w)| Arc::ptr_eq(&w.source, source))
        .map(|(i, _)| i)
        .collect();
    let file_reports: Vec<usize> = (0..patches.len())
        .filter(|r| in_file.contains(&patches[*r].0))
        .collect();
    for &r in &file_reports {
        let (index, selinux_type) = &patches[r];
        let Some(selinux_type) = selinux_type else {
            continue;
        };
        match type_edits(&manifests.workloads[*index], selinux_type) {
            Ok(more) => {
                edits.extend(more);
                patched += 1;
                reports[r].patched = true;
            }
            Err(why) => reports[r].errors.push(why.to_string()),
        }
    }
    let text = if edits.is_empty() {
        source.text().to_owned()
    } else {
        manifest_text::apply(source.text(), edits)
    };
    let again = parse_source(Arc::new(SourceFile::new(
        source.name().to_owned(),
        text.clone(),
    )));
    for &r in &file_reports {
        let (index, _) = patches[r];
        let position = in_file.iter().position(|i| *i == index);
        let Some(workload) = position.and_then(|p| again.workloads.get(p)) else {
            reports[r].errors.push(
                "the patched manifest no longer holds the workload (please report this)".to_owned(),
            );
            continue;
        };
        let report = &mut reports[r];
        report.remaining = errors_of(&audit_workload(workload, new_rules));
        report.status = if !report.remaining.is_empty() || !report.errors.is_empty() {
            Status::NotConfined
        } else if report.patched || report.domain.as_ref().is_some_and(|d| d.new) {
            Status::Confined
        } else {
            Status::Fits
        };
    }
    SuggestedFile {
        name: source.name().to_owned(),
        text,
        patched,
    }
}

/// Gives each new domain's workload the new layout's warnings that name
/// the domain.
fn attach_layout_warnings(suggested: &Parsed, reports: &mut [WorkloadSuggestion]) {
    for warning in &suggested.warnings {
        let finding = warning.to_finding(&suggested.source);
        if let Some(report) = reports.iter_mut().find(|r| {
            r.domain
                .as_ref()
                .is_some_and(|d| d.new && finding.message.contains(&format!("`{}`", d.key)))
        }) {
            report.warnings.push(format!("layout: {}", finding.message));
        }
    }
}

fn chosen(domain: &DomainRules, new: bool) -> ChosenDomain {
    ChosenDomain {
        key: domain.key.clone(),
        selinux_type: domain.selinux_type.clone(),
        new,
    }
}

/// `FILE:LINE:COLUMN: message` of each error.
fn errors_of(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| match &f.location {
            Some(location) => format!("{location}: {}", f.message),
            None => f.message.clone(),
        })
        .collect()
}

/// The mounts `check` judges by their domain: all but those of privileged
/// containers the layout accepts.
fn judged<'w>(
    workload: &Workload,
    volume: &'w HostPathVolume,
    rules: &HostPathRules,
) -> Vec<&'w HostPathMount> {
    let accepted = rules
        .privileged_exception(workload.namespace.as_deref(), workload.name.as_deref())
        .is_some();
    volume
        .mounts
        .iter()
        .filter(|m| !(accepted && m.privileged.as_ref().is_some_and(|p| p.value)))
        .collect()
}

/// The one domain every judged mount runs in now, if they share one.
fn current_domain<'r>(workload: &Workload, rules: &'r HostPathRules) -> Option<&'r DomainRules> {
    let mut found: Option<&DomainRules> = None;
    for volume in &workload.host_path_volumes {
        for mount in judged(workload, volume, rules) {
            let selinux_type = mount.selinux_type.as_ref().map(|t| t.value.as_str());
            let DomainChoice::Domain(domain) = rules.domain_for(selinux_type) else {
                return None;
            };
            match found {
                Some(seen) if seen.selinux_type != domain.selinux_type => return None,
                _ => found = Some(domain),
            }
        }
    }
    found
}

/// The volumes a domain could grant, with the reasons the others cannot
/// be and the privileged containers added to `errors`.
fn needs<'w>(
    workload: &'w Workload,
    rules: &HostPathRules,
    errors: &mut Vec<String>,
) -> Vec<Need<'w>> {
    let mut needs = Vec::new();
    let mut privileged: Vec<String> = Vec::new();
    for volume in &workload.host_path_volumes {
        let mounts = judged(workload, volume, rules);
        if mounts.is_empty() {
            continue;
        }
        for mount in &mounts {
            if mount.privileged.as_ref().is_some_and(|p| p.value)
                && !privileged.contains(&mount.container)
            {
                privileged.push(mount.container.clone());
            }
        }
        let Ok(path) = NormalPath::parse(&volume.path.value) else {
            errors.push(format!(
                "hostPath volume `{}`: `{}` is not a path a domain can be granted",
                volume.name, volume.path.value
            ));
            continue;
        };
        if let Some(protection) = rules.protection(&path) {
            let how = if let Some(equal) = protection.equal {
                format!("is the protected path `{}`", equal.path)
            } else if let Some(inside) = protection.inside.first() {
                format!("lies inside the protected path `{}`", inside.path)
            } else {
                let below: Vec<String> = protection
                    .below
                    .iter()
                    .map(|p| format!("`{}`", p.path))
                    .collect();
                format!(
                    "contains the protected path{} {}",
                    if below.len() == 1 { "" } else { "s" },
                    below.join(", ")
                )
            };
            errors.push(format!(
                "hostPath volume `{}`: `{path}` {how}: no domain is ever granted it; mount only \
                 the unprotected paths below it that the workload uses, or drop the volume",
                volume.name
            ));
            continue;
        }
        needs.push(Need {
            volume,
            write: mounts.iter().any(|m| !m.is_read_only()),
            path,
        });
    }
    for container in privileged {
        errors.push(format!(
            "container `{container}` is privileged: SELinux does not confine a privileged \
             container whatever its type, so suggest leaves it an error; once the domain's \
             grants are all it needs, drop `privileged: true` (granting the domain the \
             capabilities it uses), or name the workload in the layout's \
             `privilegedExceptions` with the reason"
        ));
    }
    needs
}

/// What a new domain is granted for a need.
enum Target {
    Class(&'static HostClass, &'static str),
    /// An existing layout path (index), or a new one to declare below it.
    Path {
        dir: String,
        declared: usize,
        level: &'static str,
    },
}

/// Why a volume cannot be granted to a new domain.
#[derive(Debug, thiserror::Error)]
enum Unconfinable {
    #[error(
        "hostPath volume `{volume}`: host class `{class}` covers `{path}` but admits only \
         `read`: mount it `readOnly: true`"
    )]
    ReadOnlyClass {
        volume: String,
        class: &'static str,
        path: String,
    },
    #[error(
        "hostPath volume `{volume}`: `{path}` is covered by host classes {classes}: mount the \
         device nodes the workload uses rather than the whole directory"
    )]
    SeveralClasses {
        volume: String,
        path: String,
        classes: String,
    },
    #[error(
        "hostPath volume `{volume}`: `{path}` is in no host class and below no path the layout \
         declares; suggest declares new paths only below declared ones: declare a parent in the \
         layout, or drop the volume"
    )]
    OutsideLayout { volume: String, path: String },
}

/// The grant a new domain needs for `need`, or why none can be made.
fn target(need: &Need<'_>, layout: &Layout) -> Result<Target, Unconfinable> {
    let path = need.path.as_str();
    let classes = host::classes_for(path);
    match classes.as_slice() {
        [] => {}
        [(class, _)] => {
            let level = if !need.write && class.admits("read") {
                "read"
            } else if class.admits("write") {
                "write"
            } else {
                return Err(Unconfinable::ReadOnlyClass {
                    volume: need.volume.name.clone(),
                    class: class.name,
                    path: path.to_owned(),
                });
            };
            return Ok(Target::Class(class, level));
        }
        several => {
            let names: Vec<String> = several
                .iter()
                .map(|(c, _)| format!("`{}`", c.name))
                .collect();
            return Err(Unconfinable::SeveralClasses {
                volume: need.volume.name.clone(),
                path: path.to_owned(),
                classes: names.join(", "),
            });
        }
    }
    // A file, socket or device is granted through its directory.
    let is_file = need.volume.path_type.as_ref().is_some_and(|t| {
        matches!(
            t.value.as_str(),
            "File" | "FileOrCreate" | "Socket" | "CharDevice" | "BlockDevice"
        )
    });
    let dir = if is_file {
        path.rsplit_once('/').map_or(
            "/",
            |(parent, _)| if parent.is_empty() { "/" } else { parent },
        )
    } else {
        path
    };
    let declared = layout
        .paths
        .iter()
        .enumerate()
        .filter(|(_, rule)| is_within(dir, &rule.path))
        .max_by_key(|(_, rule)| rule.path.len());
    match declared {
        Some((index, rule)) if !rule.protected => Ok(Target::Path {
            dir: dir.to_owned(),
            declared: index,
            level: need.level(),
        }),
        _ => Err(Unconfinable::OutsideLayout {
            volume: need.volume.name.clone(),
            path: path.to_owned(),
        }),
    }
}

/// Adds a new agent domain for `workload` holding `needs`; its type, or
/// `None` when no need can be granted.
fn new_domain(
    workload: &Workload,
    needs: &[Need<'_>],
    layout: &Layout,
    names: &mut Names,
    additions: &mut Additions,
    report: &mut WorkloadSuggestion,
) -> Option<String> {
    let targets: Vec<(&Need<'_>, Target)> = needs
        .iter()
        .filter_map(|need| match target(need, layout) {
            Ok(target) => Some((need, target)),
            Err(why) => {
                report.errors.push(why.to_string());
                None
            }
        })
        .collect();
    if targets.is_empty() {
        return None;
    }
    let origin = report.display();
    let (key, type_name) = names.domain(workload.name.as_deref().unwrap_or(&workload.kind.value));
    let mut host: Vec<(&'static str, &'static str)> = Vec::new();
    for (need, target) in &targets {
        let grant = match *target {
            Target::Class(class, level) => {
                hold_at_least(&mut host, class.name, level);
                report.warnings.push(class_warning(need, class, level));
                GrantMade {
                    volume: need.volume.name.clone(),
                    host_path: need.path.to_string(),
                    level,
                    host_class: Some(class.name),
                    layout_path: None,
                    new_path: false,
                }
            }
            Target::Path {
                ref dir,
                declared,
                level,
            } => {
                let new_path = layout.paths[declared].path != *dir;
                if new_path {
                    add_new_path(
                        additions, names, layout, declared, dir, &key, level, &origin,
                    );
                } else {
                    grant_declared(additions, declared, &key, level);
                }
                GrantMade {
                    volume: need.volume.name.clone(),
                    host_path: need.path.to_string(),
                    level,
                    host_class: None,
                    layout_path: Some(dir.clone()),
                    new_path,
                }
            }
        };
        report.grants.push(grant);
    }
    additions.domains.push(NewDomain {
        key: key.clone(),
        type_name: type_name.clone(),
        origin,
        host,
    });
    report.domain = Some(ChosenDomain {
        key,
        selinux_type: type_name.clone(),
        new: true,
    });
    Some(type_name)
}

/// Holds host class `class` at `level` in `host`, raising a `read` it
/// holds already.
fn hold_at_least(
    host: &mut Vec<(&'static str, &'static str)>,
    class: &'static str,
    level: &'static str,
) {
    match host.iter_mut().find(|(name, _)| *name == class) {
        Some((_, held)) if *held == "read" => *held = level,
        Some(_) => {}
        None => host.push((class, level)),
    }
}

/// The warning that a host class is granted for `need`, with what the
/// class holds beyond its labels.
fn class_warning(need: &Need<'_>, class: &HostClass, level: &'static str) -> String {
    let mut warning = format!(
        "grants host class `{}` ({}) at `{level}` for hostPath volume `{}` (`{}`)",
        class.name,
        class.group.describe(),
        need.volume.name,
        need.path
    );
    match class.beyond_labels {
        Some(BeyondLabels::RawDisk) => warning
            .push_str(": a disk holds every file of its filesystems, protected paths included"),
        Some(BeyondLabels::RuntimeApi) => warning.push_str(
            ": the runtime's API starts containers with any host path, so the domain holds \
             the runtime's authority",
        ),
        Some(BeyondLabels::RuntimeCode { from }) if level == from => {
            warning.push_str(": the runtime runs what the domain writes there")
        }
        _ => {}
    }
    warning
}

/// Grants the declared path `declared` to the domain `key` at `level`,
/// raising a `read` grant this suggestion made already.
fn grant_declared(additions: &mut Additions, declared: usize, key: &str, level: &'static str) {
    match additions
        .grants
        .iter_mut()
        .find(|(i, k, _)| *i == declared && k == key)
    {
        Some((_, _, held)) if *held == "read" => *held = level,
        Some(_) => {}
        None => additions.grants.push((declared, key.to_owned(), level)),
    }
}

/// Declares `dir` below the declared path `parent` (or adds `key` to it
/// when another workload declared it already), keeping the parent's
/// grants to every other domain.
#[allow(clippy::too_many_arguments)]
fn add_new_path(
    additions: &mut Additions,
    names: &mut Names,
    layout: &Layout,
    parent: usize,
    dir: &str,
    key: &str,
    level: &'static str,
    origin: &str,
) {
    if let Some(existing) = additions.paths.iter_mut().find(|p| p.path == dir) {
        match existing.access.iter_mut().find(|(k, _)| k == key) {
            Some((_, held)) if held == "read" => *held = level.to_owned(),
            Some(_) => {}
            None => existing.access.push((key.to_owned(), level.to_owned())),
        }
        if !existing.origins.iter().any(|o| o == origin) {
            existing.origins.push(origin.to_owned());
        }
        return;
    }
    let mut access: Vec<(String, String)> = layout.paths[parent]
        .access
        .iter()
        .map(|(domain, access)| {
            let names = access.names();
            let written = match names.as_slice() {
                [one] => (*one).to_owned(),
                many => format!("[{}]", many.join(", ")),
            };
            (layout.domains[*domain].key.clone(), written)
        })
        .collect();
    access.push((key.to_owned(), level.to_owned()));
    additions.paths.push(NewPath {
        path: dir.to_owned(),
        type_name: names.path_type(dir),
        origins: vec![origin.to_owned()],
        access,
    });
}

/// The edits that set `selinux_type` on the pod template and on each
/// container mounting a hostPath that has `seLinuxOptions` of its own.
fn type_edits(workload: &Workload, selinux_type: &str) -> Result<Vec<Edit>, PatchError> {
    let spots = workload
        .selinux_spots
        .as_ref()
        .ok_or(PatchError::NoPodTemplate)?;
    let mut edits = vec![manifest_text::type_edit(
        &workload.source,
        &spots.pod,
        selinux_type,
    )?];
    let mounting: BTreeSet<(&str, &'static str)> = workload
        .host_path_volumes
        .iter()
        .flat_map(|v| &v.mounts)
        .map(|m| (m.container.as_str(), m.container_kind.as_str()))
        .collect();
    for container in &spots.containers {
        if mounting.contains(&(
            container.container.as_str(),
            container.container_kind.as_str(),
        )) {
            edits.push(manifest_text::type_edit(
                &workload.source,
                &container.spot,
                selinux_type,
            )?);
        }
    }
    Ok(edits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_str;
    use layout::manifest::default_layout;

    fn run(yaml: &str) -> Suggestion {
        // The base policy's type the default layout adopts.
        let facts = BaseFacts {
            types: ["container_file_t".to_owned()].into(),
            adopt_existing: false,
        };
        let base = default_layout(&facts).unwrap();
        let manifests = parse_str("m.yaml", yaml);
        let sources: Vec<Arc<SourceFile>> = manifests
            .workloads
            .first()
            .map(|w| Arc::clone(&w.source))
            .into_iter()
            .collect();
        suggest(&base, &facts, &manifests, &sources).unwrap()
    }

    fn pod(name: &str, path: &str, read_only: bool) -> String {
        format!(
            "kind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: c\n    \
             volumeMounts: [{{name: v, mountPath: /v, readOnly: {read_only}}}]\n  volumes:\n  \
             - {{name: v, hostPath: {{path: {path}}}}}\n"
        )
    }

    #[test]
    fn two_workloads_share_a_new_path_but_never_a_domain() {
        let yaml = [
            pod("etcd", "/var/lib/docker/containers", true),
            pod("etcd", "/var/lib/docker/containers/x", false),
            pod("shipper", "/var/lib/docker/containers", false),
        ]
        .join("---\n");
        let suggestion = run(&yaml);
        let domains: Vec<(String, bool)> = suggestion
            .workloads
            .iter()
            .map(|w| {
                let domain = w.domain.as_ref().unwrap();
                (domain.selinux_type.clone(), w.status == Status::Confined)
            })
            .collect();
        assert_eq!(
            domains,
            [
                ("etcd_2_t".to_owned(), true),
                ("etcd_3_t".to_owned(), true),
                ("shipper_t".to_owned(), true),
            ]
        );
        let text = &suggestion.layout_text;
        assert_eq!(
            text.matches("- path: /var/lib/docker/containers\n").count(),
            1
        );
        assert!(
            text.contains("access: { etcd-2: read, shipper: write }"),
            "{text}"
        );
        assert!(text.contains("# suggested for Pod etcd\n    # suggested for Pod shipper\n"));
        assert!(text.contains("transitions: [pods, csi, cni, log-reader, monitor, device-plugin, etcd-2, etcd-3, shipper]"));
    }

    #[test]
    fn persistent_volumes_and_unmounted_volumes_are_reported_not_moved() {
        let suggestion = run(
            "kind: PersistentVolume\nmetadata: {name: pv}\nspec: {hostPath: {path: /srv}}\n---\n\
             kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n  \
             volumes: [{name: v, hostPath: {path: /srv}}]\n",
        );
        let statuses: Vec<(&str, Status, usize)> = suggestion
            .workloads
            .iter()
            .map(|w| (w.kind.as_str(), w.status, w.remaining.len()))
            .collect();
        assert_eq!(
            statuses,
            [
                ("PersistentVolume", Status::NotConfined, 1),
                ("Pod", Status::NotConfined, 1)
            ]
        );
        assert_eq!(suggestion.files[0].patched, 0);
    }
}
