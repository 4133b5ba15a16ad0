//! What one `--target module` build decided and proved ([`ModuleReport`]),
//! and its human form (`report.txt`; `report.json` is the same data
//! serialised).

use std::fmt::Write as _;

use serde::Serialize;

use super::filecons::{self, Event, SpecRef};
use super::reach::Reach;

/// How our compilation of the store compares with what the store built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Verification {
    /// policy.33 and file_contexts byte-identical to the store's own.
    Identical { policy_bytes: u64 },
    /// The store has no built policy to compare with (extracted CIL).
    Unavailable,
    /// Something differs; `why` says what and the likely cause.
    Differs { why: String },
}

/// Where a layout domain's store type came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DomainMapping {
    pub key: String,
    pub layout_type: String,
    pub store_type: String,
    /// `store` (the store has the type), `runtime` / `workload` (the
    /// profile's type for that role), `map` (`--map`), `declared` (new).
    pub origin: &'static str,
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
    let _ = writeln!(out, "Module {} from {}", report.module, report.layout);
    let _ = writeln!(out, "Store: {} (profile {})", report.store, report.profile);
    if let Some(replaced) = &report.replaces {
        let _ = writeln!(out, "Replaces the store's {replaced}.");
    }
    let _ = writeln!(out, "Prediction: {}", verification(&report.verification));
    let _ = writeln!(
        out,
        "Neverallows: checked by secilc on store + module{}",
        if report.expand_check {
            "".to_owned()
        } else {
            " (the store's semanage.conf has expand-check=0: semodule would not check them)"
                .to_owned()
        }
    );
    if !report.includes.is_empty() {
        let _ = writeln!(
            out,
            "Compiled in as extra modules: {}",
            report.includes.join(", ")
        );
    }

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
            "store" => "the store's own type",
            "runtime" => "the profile's container runtime domain",
            "workload" => "the profile's workload domain",
            "map" => "--map",
            _ => "not in the store: declared by the module",
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

    let _ = writeln!(out, "\nFile contexts");
    for path in &report.paths {
        let before = path.before.as_deref().unwrap_or("<<none>>");
        let from = path
            .before_spec
            .as_deref()
            .map(|s| format!(" from {s}"))
            .unwrap_or_default();
        if path.lines.is_empty() {
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
        if !path.lines.is_empty() && path.lines.len() > 1 {
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

    let _ = writeln!(out, "\nProtections");
    if report.protections.is_empty() {
        let _ = writeln!(out, "  none (no path is protected)");
    }
    for protection in &report.protections {
        let reach = &protection.reach;
        let _ = writeln!(
            out,
            "  {} ({}), declared at {}: no workload domain can touch it (proven by secilc)",
            reach.paths.join(", "),
            reach.type_name,
            protection.declared_at
        );
        if !reach.granted.is_empty() {
            let _ = writeln!(
                out,
                "      granted by the layout: {}",
                reach.granted.join(", ")
            );
        }
        if !reach.workload_traversal.is_empty() {
            let _ = writeln!(
                out,
                "      workload domains may traverse its directories only (dir getattr open search): {} — {}",
                reach.workload_traversal.join(", "),
                reach.workload_traversal_rules.join("; ")
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
            let mut names: Vec<&str> = group
                .domains
                .iter()
                .take(LISTED)
                .map(String::as_str)
                .collect();
            let more = group.domains.len().saturating_sub(LISTED);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            if names.is_empty() {
                names.push("-");
            }
            let _ = writeln!(
                out,
                "        via {} ({}, {} domains): {}{more}",
                group.via,
                group.access,
                group.domains.len(),
                names.join(", ")
            );
        }
    }
    out
}

fn verification(verification: &Verification) -> String {
    match verification {
        Verification::Identical { policy_bytes } => format!(
            "the store compiled here as libsemanage compiles it is byte-identical to its own policy.kern \
             ({policy_bytes} bytes) and file_contexts, so policy.33 and file_contexts are what semodule will build"
        ),
        Verification::Unavailable => {
            "the store has no built policy to compare with (extracted CIL): policy.33 is what its modules compile to"
                .to_owned()
        }
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
        .filter_map(|e| {
            if let Event::Kept { spec } = e {
                Some(spec)
            } else {
                None
            }
        })
        .collect();
    let first = kept.first()?;
    let examples: Vec<String> = kept.iter().take(3).map(|s| spec(s)).collect();
    let more = kept.len().saturating_sub(3);
    let _ = first;
    Some(format!(
        "kept: {} store spec{} below it still label what {} name{} (the path is not protected): {}{}",
        kept.len(),
        if kept.len() == 1 { "" } else { "s" },
        if kept.len() == 1 { "it" } else { "they" },
        if kept.len() == 1 { "s" } else { "" },
        examples.join("; "),
        if more > 0 { format!("; and {more} more (report.json lists them all)") } else { String::new() }
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
        Event::Shadow { spec: s } => format!("shadow: {} would win over the plain line — resolved", spec(s)),
        Event::Overridden { spec: s } => format!("overridden: {} (an equivalent copy with the layout's type sorts after it)", spec(s)),
        Event::Kept { spec: s } => format!("kept: {} still labels what it names below the path (not protected)", spec(s)),
        Event::Aliased { alias } => format!(
            "aliased: `{}` is an alias of `{}` ({}): lookups below it use `{}`'s specs, so the layout's line would never apply",
            alias.alias, alias.real, alias.at, alias.real
        ),
    }
}
