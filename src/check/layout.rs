//! Layout findings: every manifest rule of `docs/manifest.md` (reported by
//! `manifest`), and the file_contexts hazards a manifest can hide — a path
//! whose own spec never wins, overlapping specs ordered only by string
//! comparison, a path the base policy already labels otherwise — plus a note
//! for paths reachable only through bind mounts.

use crate::check::rules;
use layout::diag::{Finding, Pos, Rule};
use layout::manifest::Parsed;
use layout::model::{is_within, Layout};
use policy::file_contexts::{self, FileCon};
use policy::{self, plan};
use selabel::{FileContexts, FileKind};

fn finding(parsed: &Parsed, rule: &'static Rule, pos: Pos, message: String) -> Finding {
    Finding::in_source(rule, &parsed.source, pos, message)
}

/// The hazards of the layout's file_contexts, found with the lookup engine.
pub(crate) fn hazards(parsed: &Parsed) -> Vec<Finding> {
    let layout = &parsed.layout;
    let mut findings = Vec::new();
    let text = policy::file_contexts_text(layout);
    let Ok(contexts) = FileContexts::from_text(&parsed.source.name, text.as_bytes()) else {
        // The compiler writes only specs the engine reads; anything else is a
        // bug that the build step reports through secilc.
        return findings;
    };
    for rule in &layout.paths {
        let expected = rule.context();
        for (probe, kind) in [
            (rule.path.clone(), FileKind::Dir),
            (format!("{}/x", rule.path), FileKind::File),
        ] {
            let got = contexts.lookup(probe.as_bytes(), kind);
            if got != Some(expected.as_str()) {
                findings.push(finding(
                    parsed,
                    &rules::FC_SHADOWED,
                    rule.pos,
                    format!(
                        "`{}` is labelled {} instead of `{}`: another spec wins over this path's",
                        probe,
                        got.map_or("<<none>>".to_owned(), |c| format!("`{c}`")),
                        expected
                    ),
                ));
                break;
            }
        }
    }
    findings.extend(order_ties(parsed));
    findings.extend(base_overlaps(parsed, layout));
    findings.extend(below_protected(parsed, layout));
    findings
}

fn all_specs(layout: &Layout) -> Vec<FileCon> {
    let mut specs = policy::base_filecons();
    specs.extend(layout.paths.iter().map(|rule| FileCon {
        regex: plan::subtree_regex(&rule.path),
        file_type: FileKind::Any,
        context: Some(rule.context()),
    }));
    specs
}

/// Pairs of specs that both match some path and that secilc orders only by
/// `strcmp`: which one wins is an accident of spelling.
fn order_ties(parsed: &Parsed) -> Vec<Finding> {
    let specs = all_specs(&parsed.layout);
    let mut findings = Vec::new();
    for (i, a) in specs.iter().enumerate() {
        for b in &specs[i + 1..] {
            if !file_contexts::ordered_by_strcmp_only(a, b) {
                continue;
            }
            let Some(path) = common_match(a, b) else {
                continue;
            };
            let owner = parsed.layout.paths.iter().find(|r| {
                plan::subtree_regex(&r.path) == a.regex || plan::subtree_regex(&r.path) == b.regex
            });
            let pos = owner.map(|r| r.pos).unwrap_or_default();
            findings.push(finding(
                parsed,
                &rules::FC_ORDER,
                pos,
                format!(
                    "specs `{}` and `{}` both match `{path}` and are ordered only by string comparison",
                    a.regex, b.regex
                ),
            ));
        }
    }
    findings
}

/// A path both specs match, among a few probes built from their stems.
fn common_match(a: &FileCon, b: &FileCon) -> Option<String> {
    let single = |spec: &FileCon| {
        let line = format!("{}\tsystem_u:object_r:probe_t:s0\n", spec.regex);
        FileContexts::from_text("probe", line.as_bytes()).ok()
    };
    let (fa, fb) = (single(a)?, single(b)?);
    let mut probes = Vec::new();
    for spec in [a, b] {
        let stem = file_contexts::literal_stem(&spec.regex);
        for suffix in ["", "/x", "x", "/x/y"] {
            probes.push(format!("{stem}{suffix}"));
        }
    }
    probes.into_iter().find(|p| {
        fa.lookup(p.as_bytes(), FileKind::Any).is_some()
            && fb.lookup(p.as_bytes(), FileKind::Any).is_some()
    })
}

/// Layout paths that a specific base spec (not the `/.*` catch-all) already
/// labels, with another context.
fn base_overlaps(parsed: &Parsed, layout: &Layout) -> Vec<Finding> {
    // `<<none>>` becomes a visible marker so "no label" and "no match" differ.
    let mut text = String::new();
    for spec in policy::base_filecons() {
        if file_contexts::literal_stem(&spec.regex).len() <= 1 {
            continue;
        }
        let context = spec
            .context
            .unwrap_or_else(|| "system_u:object_r:no_label_t:s0".to_owned());
        text.push_str(&format!("{}\t{context}\n", spec.regex));
    }
    let Ok(base) = FileContexts::from_text("base policy", text.as_bytes()) else {
        return Vec::new();
    };
    layout
        .paths
        .iter()
        .filter_map(|rule| {
            let got = base.lookup(rule.path.as_bytes(), FileKind::Any)?;
            let got = if got.contains(":no_label_t:") {
                "<<none>>"
            } else {
                got
            };
            (got != rule.context()).then(|| {
                finding(
                    parsed,
                    &rules::FC_BASE_OVERLAP,
                    rule.pos,
                    format!(
                        "the base policy labels `{}` as `{got}`; the layout relabels it `{}`",
                        rule.path,
                        rule.context()
                    ),
                )
            })
        })
        .collect()
}

/// Paths granted to a domain but below a protected path it may not cross:
/// reachable only through bind mounts, by design. Noted so it stays visible.
/// Granted paths below a protected path (notes; target-independent).
pub(crate) fn below_protected_notes(parsed: &Parsed) -> Vec<Finding> {
    below_protected(parsed, &parsed.layout)
}

fn below_protected(parsed: &Parsed, layout: &Layout) -> Vec<Finding> {
    let mut findings = Vec::new();
    for rule in layout.paths.iter().filter(|r| !r.protected) {
        let Some(guard) = layout
            .protected()
            .filter(|p| p.path != rule.path && is_within(&rule.path, &p.path))
            .max_by_key(|p| p.path.len())
        else {
            continue;
        };
        let blocked: Vec<&str> = rule
            .access
            .keys()
            .filter(|d| !guard.access.contains_key(d) && !layout.domain(**d).trusted)
            .map(|&d| layout.domain(d).key.as_str())
            .collect();
        if !blocked.is_empty() {
            findings.push(finding(
                parsed,
                &rules::BELOW_PROTECTED,
                rule.pos,
                format!(
                    "`{}` lies below protected `{}`: {} reach it only through bind mounts made by a runtime or trusted domain",
                    rule.path,
                    guard.path,
                    blocked.join(", ")
                ),
            ));
        }
    }
    findings
}
