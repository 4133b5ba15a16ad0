//! What one `--target module` build decided and proved ([`ModuleReport`]),
//! and its human form (`report.txt`; `report.json` is the same data
//! serialised).

use std::fmt::Write as _;

use serde::Serialize;

use super::carry::Losses;
use super::filecons::{self, AliasLabel, Event, SpecRef};
use super::grade::describe_permissions;
use super::proof::Proof;
use super::reach::Reach;

pub use super::domains::{DomainMapping, Origin};

/// How our compilation of the store compares with what the store built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Verification {
    /// policy.33 and file_contexts byte-identical to the store's own.
    Identical { policy_bytes: u64 },
    /// Nothing to compare with; `why` says what is not known.
    Unavailable { why: String },
    /// Something differs; `why` says what and the likely cause.
    Differs { why: String },
}

impl Verification {
    /// Why the prediction is not verified, if it is not.
    pub fn unverified(&self) -> Option<&str> {
        match self {
            Verification::Identical { .. } => None,
            Verification::Unavailable { why } | Verification::Differs { why } => Some(why),
        }
    }
}

/// A protection secilc proved, and who else may still reach the type.
#[derive(Debug, Clone, Serialize)]
pub struct ProvenProtection {
    pub reach: Reach,
    /// `FILE:LINE:COL` of the `protected: true`.
    pub declared_at: String,
}

/// Everything one build decided and proved.
#[derive(Debug, Clone, Serialize)]
pub struct ModuleReport {
    pub module: String,
    pub layout: String,
    pub store: String,
    pub profile: &'static str,
    pub verification: Verification,
    pub expand_check: bool,
    /// Whether secilc proved the layout's neverallows.
    pub proof: Proof,
    /// The layout's `spec.store.booleanGrants`.
    pub boolean_grants: &'static str,
    pub replaces: Option<String>,
    pub domains: Vec<DomainMapping>,
    /// Types the module declares.
    pub new_types: Vec<String>,
    /// Layout types the store already has.
    pub adopted_types: Vec<String>,
    pub workload_set: Vec<String>,
    pub workload_expression: Option<String>,
    pub paths: Vec<PathReport>,
    pub protections: Vec<ProvenProtection>,
    /// Per new type: the store types it replaces, the store access carried
    /// over, and every store domain that lost access.
    pub retyped: Vec<Losses>,
    /// Keys looked up in the predicted file contexts (all matched).
    pub proven_keys: usize,
    pub includes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PathReport {
    pub path: String,
    pub type_name: String,
    /// The label the stock store gives the path (as a directory).
    pub before: Option<String>,
    /// The spec that decides it, `REGEX (module M)`.
    pub before_spec: Option<String>,
    pub after: String,
    pub lines: Vec<filecons::Line>,
    pub events: Vec<Event>,
}

/// Domains listed per group before "and N more".
const LISTED: usize = 12;

pub fn render_text(report: &ModuleReport) -> String {
    let mut out = String::new();
    header(&mut out, report);
    domains(&mut out, report);
    file_contexts(&mut out, report);
    protections(&mut out, report);
    retyped(&mut out, report);
    out
}

fn header(out: &mut String, report: &ModuleReport) {
    let _ = writeln!(out, "Module {} from {}", report.module, report.layout);
    let _ = writeln!(out, "Store: {} (profile {})", report.store, report.profile);
    if let Some(replaced) = &report.replaces {
        let _ = writeln!(out, "Replaces the store's {replaced}.");
    }
    let _ = writeln!(out, "Prediction: {}", verification(&report.verification));
    let _ = writeln!(
        out,
        "Neverallows: {}",
        report.proof.describe(report.expand_check)
    );
    if !report.expand_check {
        let _ = writeln!(
            out,
            "  (the store's semanage.conf has expand-check=0: semodule checks no neverallow at install; \
             the layout's are checked here all the same)"
        );
    }
    if !report.includes.is_empty() {
        let _ = writeln!(
            out,
            "Compiled in as extra modules: {}",
            report.includes.join(", ")
        );
    }
}

fn domains(out: &mut String, report: &ModuleReport) {
    let _ = writeln!(out, "\nDomains");
    let key_width = report
        .domains
        .iter()
        .map(|d| d.key.len())
        .max()
        .unwrap_or(0);
    let type_width = report
        .domains
        .iter()
        .map(|d| d.layout_type.len())
        .max()
        .unwrap_or(0);
    for domain in &report.domains {
        let why = match domain.origin {
            Origin::Store => "the store's own type",
            Origin::Runtime => "the profile's container runtime domain",
            Origin::Workload => "the profile's workload domain",
            Origin::Map => "--map",
            Origin::Declared => "not in the store: declared by the module",
        };
        let _ = writeln!(
            out,
            "  {:key_width$}  {:type_width$}  → {} ({why})",
            domain.key, domain.layout_type, domain.store_type
        );
    }
    if !report.new_types.is_empty() {
        let _ = writeln!(out, "New types: {}", report.new_types.join(", "));
    }
    if !report.adopted_types.is_empty() {
        let _ = writeln!(
            out,
            "Store types the layout labels with (its grants add to what the store allows on every file of these types): {}",
            report.adopted_types.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "Workload set ({}; plus everything it can transition to): {}",
        report
            .workload_expression
            .as_deref()
            .unwrap_or("the layout's workloads"),
        report.workload_set.join(", ")
    );
}

fn file_contexts(out: &mut String, report: &ModuleReport) {
    let _ = writeln!(out, "\nFile contexts");
    for path in &report.paths {
        let before = path.before.as_deref().unwrap_or("<<none>>");
        let from = path
            .before_spec
            .as_deref()
            .map(|s| format!(" from {s}"))
            .unwrap_or_default();
        if path.lines.is_empty() && before != path.after {
            let _ = writeln!(
                out,
                "  {}: {before}{from}; no line written (the path itself: {}, from the lines above it):",
                path.path, path.after
            );
        } else if path.lines.is_empty() {
            let _ = writeln!(out, "  {}: {before}{from}; no line written:", path.path);
        } else if before == path.after {
            let _ = writeln!(out, "  {}: {} (unchanged)", path.path, path.after);
        } else {
            let _ = writeln!(out, "  {}: {before}{from} → {}", path.path, path.after);
        }
        for event in path
            .events
            .iter()
            .filter(|e| !matches!(e, Event::Kept { .. }))
        {
            let _ = writeln!(out, "      {}", describe_event(event));
        }
        if let Some(summary) = kept_summary(&path.events) {
            let _ = writeln!(out, "      {summary}");
        }
        if path.lines.len() > 1 {
            let lines: Vec<String> = path
                .lines
                .iter()
                .map(|l| format!("`{}`", l.regex))
                .collect();
            let _ = writeln!(out, "      written as {}", lines.join(", "));
        }
    }
    let _ = writeln!(
        out,
        "  {} keys proven in the predicted file_contexts: every path, probe names below it and a witness of every \
         overridden store spec, for every file type",
        report.proven_keys
    );
}

fn protections(out: &mut String, report: &ModuleReport) {
    let _ = writeln!(out, "\nProtections");
    if report.protections.is_empty() {
        let _ = writeln!(out, "  none (no path is protected)");
    }
    let proven = match &report.proof {
        Proof::Proven { by, .. } => format!("proven by {by}"),
        Proof::NotRun { .. } => "NOT PROVEN: the proof did not run".to_owned(),
    };
    for protection in &report.protections {
        let reach = &protection.reach;
        let _ = writeln!(
            out,
            "  {} ({}), declared at {}: no workload domain can read, change, name or relabel its data ({proven})",
            reach.paths.join(", "),
            reach.type_name,
            protection.declared_at
        );
        if !reach.granted.is_empty() {
            let _ = writeln!(
                out,
                "      granted by the layout or owned: {}",
                reach.granted.join(", ")
            );
        }
        for leftover in &reach.workload {
            let _ = writeln!(
                out,
                "      workload domains {}: {} — {}",
                leftover.leftover.describe(),
                leftover.domains.join(", "),
                rules(&leftover.rules)
            );
        }
        if reach.domains == 0 {
            let _ = writeln!(out, "      no other domain can reach it");
            continue;
        }
        let _ = writeln!(
            out,
            "      still reachable by {} other domains, by the store's design:",
            reach.domains
        );
        for group in &reach.groups {
            let _ = writeln!(
                out,
                "        via {} ({}; {} domain{}): {}",
                group.via,
                group.describe_access(),
                group.domains.len(),
                if group.domains.len() == 1 { "" } else { "s" },
                listed(&group.domains)
            );
        }
    }
}

fn retyped(out: &mut String, report: &ModuleReport) {
    if report.retyped.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nStore domains on re-typed paths");
    for item in &report.retyped {
        let _ = writeln!(
            out,
            "  {} ({}, was {}{}):",
            item.paths.join(", "),
            item.type_name,
            if item.old_types.is_empty() {
                "unlabelled".to_owned()
            } else {
                item.old_types.join(", ")
            },
            if item.protected { "; protected" } else { "" }
        );
        if item.carried_rules > 0 {
            let who = if item.protected {
                format!("its store owners ({}) keep their", item.owners.join(", "))
            } else {
                "every store domain keeps its".to_owned()
            };
            let _ = writeln!(
                out,
                "      {who} access: {} store rule{} copied to {}",
                item.carried_rules,
                if item.carried_rules == 1 { "" } else { "s" },
                item.type_name
            );
        }
        if item.groups.is_empty() {
            let _ = writeln!(out, "      no store domain loses access");
            continue;
        }
        let _ = writeln!(
            out,
            "      {} store domain{} lose access{}:",
            item.domains,
            if item.domains == 1 { "" } else { "s" },
            if item.protected {
                " (the layout protects it from them; name a service in `storeOwners` to keep it)"
            } else {
                ""
            }
        );
        for group in &item.groups {
            let mut access = format!(
                "{}: {}",
                group.grade.as_str(),
                describe_permissions(&group.permissions)
            );
            if let Some(condition) = &group.condition {
                access.push_str(&format!(" while `{}`", condition.describe()));
            }
            if group.workloads > 0 {
                access.push_str(&format!("; {} in the workload set", group.workloads));
            }
            if let Some(why) = &group.uncarried {
                access.push_str(&format!("; not carried over: {why}"));
            }
            let _ = writeln!(
                out,
                "        via {} on {} ({access}): {}",
                group.via,
                group.on,
                listed(&group.domains)
            );
        }
    }
}

/// Rules as sesearch prints them, `;`-separated.
fn rules(rules: &[String]) -> String {
    rules
        .iter()
        .map(|r| r.trim_end_matches(';'))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The first names, then how many more.
fn listed(domains: &[String]) -> String {
    let mut names: Vec<&str> = domains.iter().take(LISTED).map(String::as_str).collect();
    if names.is_empty() {
        names.push("-");
    }
    let more = domains.len().saturating_sub(LISTED);
    if more > 0 {
        format!(
            "{} and {more} more (report.json lists them all)",
            names.join(", ")
        )
    } else {
        names.join(", ")
    }
}

fn verification(verification: &Verification) -> String {
    match verification {
        Verification::Identical { policy_bytes } => format!(
            "the store compiled here as libsemanage compiles it is byte-identical to its own policy.kern \
             ({policy_bytes} bytes) and file_contexts, so policy.33 and file_contexts are what semodule will build"
        ),
        Verification::Unavailable { why } => format!(
            "NOT verified: {why}; policy.33 is what these modules compile to"
        ),
        Verification::Differs { why } => format!("NOT verified: {why}"),
    }
}

fn spec(spec: &SpecRef) -> String {
    let modules = if spec.modules.is_empty() {
        String::new()
    } else {
        format!(", module {}", spec.modules.join(", "))
    };
    let file_type = if spec.file_type == "any" {
        String::new()
    } else {
        format!(" {}", spec.file_type)
    };
    format!(
        "`{}`{file_type} {} (line {}{modules})",
        spec.regex, spec.context, spec.line
    )
}

/// Store specs kept below a path, in one line: how many, and the first few.
pub fn kept_summary(events: &[Event]) -> Option<String> {
    let kept: Vec<&SpecRef> = events
        .iter()
        .filter_map(|e| match e {
            Event::Kept { spec } => Some(spec),
            _ => None,
        })
        .collect();
    if kept.is_empty() {
        return None;
    }
    let examples: Vec<String> = kept.iter().take(3).map(|s| spec(s)).collect();
    let more = kept.len().saturating_sub(3);
    let one = kept.len() == 1;
    Some(format!(
        "kept: {} store spec{} below it still label{} what {} name{} (the path is not protected): {}{}",
        kept.len(),
        if one { "" } else { "s" },
        if one { "s" } else { "" },
        if one { "it" } else { "they" },
        if one { "s" } else { "" },
        examples.join("; "),
        if more > 0 {
            format!("; and {more} more (report.json lists them all)")
        } else {
            String::new()
        }
    ))
}

pub fn describe_event(event: &Event) -> String {
    match event {
        Event::Collision { spec: s } => {
            let already = if s.modules.len() > 1 {
                format!(
                    " (modules {} already write it: secilc kept only one of their lines, silently, by module order)",
                    s.modules.join(", ")
                )
            } else {
                String::new()
            };
            format!(
                "collision: the store has the identical regex {}{already}; a module writing it too would be \
                 deduplicated the same way — resolved",
                spec(s)
            )
        }
        Event::Shadow { spec: s } => format!(
            "shadow: {} would win over the plain line — resolved",
            spec(s)
        ),
        Event::Overridden { spec: s } => format!(
            "overridden: {} (an equivalent copy with the layout's type sorts after it)",
            spec(s)
        ),
        Event::Kept { spec: s } => format!(
            "kept: {} still labels what it names below the path (not protected)",
            spec(s)
        ),
        Event::LeftToStore { type_name } => format!(
            "left to the store: the layout gives it the base policy's own `{type_name}` (`baseType: true`) \
             without protecting it, and the store has that type: its container policy labels that content its \
             way, so no line is written and what lies below the path keeps the store's labels"
        ),
        Event::Aliased { alias, label } => {
            let how = match label {
                AliasLabel::ByStore => format!(
                    "the store already labels `{}` and what lies below it with the layout's type, so no line is written",
                    alias.real
                ),
                AliasLabel::ByModule => format!(
                    "the module labels `{}` instead, and lookups of the path reach those lines through the alias",
                    alias.real
                ),
            };
            format!(
                "aliased: `{}` is an alias of `{}` ({}): libselinux looks its keys up as `{}`'s; {how}",
                alias.alias, alias.real, alias.at, alias.real
            )
        }
    }
}
