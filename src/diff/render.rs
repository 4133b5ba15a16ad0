//! A [`LayoutDiff`] as text for a terminal, as Markdown for a pull-request
//! comment, or as JSON (`docs/diff-json.md`).

use std::fmt::Write;

use super::{Category, LayoutDiff, ManifestChange};

fn heading(category: Category) -> &'static str {
    match category {
        Category::Domain => "Domains",
        Category::Transition => "Transitions",
        Category::Path => "Paths",
        Category::Access => "Access",
        Category::Traversal => "Traversal",
        Category::Protection => "Protections",
        Category::HostPathRoot => "hostPath roots",
        Category::RemovableRoot => "Removable roots",
        Category::Lifecycle => "Lifecycle",
        Category::Mount => "Mounts",
        Category::Capacity => "Capacity",
        Category::Node => "Node boot",
    }
}

/// Changes grouped by category, in category order.
fn groups(diff: &LayoutDiff) -> Vec<(Category, Vec<&ManifestChange>)> {
    let mut out: Vec<(Category, Vec<&ManifestChange>)> = Vec::new();
    for change in &diff.changes {
        match out.last_mut() {
            Some((category, list)) if *category == change.category => list.push(change),
            _ => out.push((change.category, vec![change])),
        }
    }
    out
}

fn security_reasons(diff: &LayoutDiff) -> Vec<&str> {
    diff.changes
        .iter()
        .filter_map(|c| c.security.as_deref())
        .chain(diff.labels.iter().filter_map(|l| l.security.as_deref()))
        .chain(diff.workloads.iter().filter_map(|w| w.security.as_deref()))
        .collect()
}

fn is_empty(diff: &LayoutDiff) -> bool {
    diff.changes.is_empty() && diff.labels.is_empty() && diff.workloads.is_empty()
}

/// For a terminal.
pub fn human(diff: &LayoutDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "semanifest diff {} → {}", diff.old, diff.new);
    if is_empty(diff) {
        out.push_str("\nNo change in meaning.\n");
        return out;
    }
    let reasons = security_reasons(diff);
    if !reasons.is_empty() {
        let _ = writeln!(out, "\nSecurity-relevant ({}):", reasons.len());
        for reason in reasons {
            let _ = writeln!(out, "  ! {reason}");
        }
    }
    for (category, changes) in groups(diff) {
        let _ = writeln!(out, "\n{}:", heading(category));
        for change in changes {
            let mark = if change.is_security_relevant() {
                "!"
            } else {
                " "
            };
            let _ = writeln!(out, "  {mark} {}", change.summary);
        }
    }
    if !diff.labels.is_empty() {
        let _ = writeln!(out, "\nLabels of existing paths:");
        for label in &diff.labels {
            let mark = if label.security.is_some() { "!" } else { " " };
            let scope = match label.scope {
                super::label_changes::Scope::Subtree => " (and below)",
                _ => "",
            };
            let _ = writeln!(
                out,
                "  {mark} {}{scope}: {} → {}",
                label.path, label.old, label.new
            );
        }
    }
    if !diff.workloads.is_empty() {
        let _ = writeln!(out, "\nhostPath volumes that change verdict:");
        for volume in &diff.workloads {
            let mark = if volume.security.is_some() { "!" } else { " " };
            let _ = writeln!(
                out,
                "  {mark} {} volume `{}` ({}) at {}: {} → {}",
                volume.workload,
                volume.volume,
                volume.host_path,
                volume.location,
                volume.old.join(", "),
                volume.new.join(", ")
            );
        }
    }
    let _ = writeln!(
        out,
        "\n{}",
        if diff.security_relevant {
            "Security-relevant: a second review is needed (exit 1)."
        } else {
            "Nothing security-relevant (exit 0)."
        }
    );
    out
}

/// Backticks cannot be escaped inside a Markdown code span; the paths and
/// names here never contain one (manifest rules), but free text might.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// For a pull-request comment (GitHub-flavoured Markdown).
pub fn markdown(diff: &LayoutDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### semanifest diff\n");
    let _ = writeln!(out, "`{}` → `{}`\n", diff.old, diff.new);
    if is_empty(diff) {
        out.push_str("No change in meaning.\n");
        return out;
    }
    let reasons = security_reasons(diff);
    if reasons.is_empty() {
        out.push_str("✅ Nothing security-relevant.\n");
    } else {
        let _ = writeln!(
            out,
            "> [!WARNING]\n> **Security-relevant ({}): a second review is needed.**",
            reasons.len()
        );
        for reason in reasons {
            let _ = writeln!(out, "> - {}", cell(reason));
        }
    }
    for (category, changes) in groups(diff) {
        let _ = writeln!(out, "\n#### {}\n", heading(category));
        out.push_str("| | change | before | after |\n|---|---|---|---|\n");
        for change in changes {
            let mark = if change.is_security_relevant() {
                "⚠️"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "| {mark} | {} | {} | {} |",
                cell(&change.summary),
                cell(change.old.as_deref().unwrap_or("—")),
                cell(change.new.as_deref().unwrap_or("—"))
            );
        }
    }
    if !diff.labels.is_empty() {
        out.push_str(
            "\n#### Labels of existing paths\n\n| | path | before | after |\n|---|---|---|---|\n",
        );
        for label in &diff.labels {
            let mark = if label.security.is_some() {
                "⚠️"
            } else {
                ""
            };
            let scope = match label.scope {
                super::label_changes::Scope::Subtree => " and below",
                _ => "",
            };
            let _ = writeln!(
                out,
                "| {mark} | `{}`{scope} | `{}` | `{}` |",
                label.path, label.old, label.new
            );
        }
    }
    if !diff.workloads.is_empty() {
        out.push_str("\n#### hostPath volumes that change verdict\n\n| | workload | volume | hostPath | before | after |\n|---|---|---|---|---|---|\n");
        for volume in &diff.workloads {
            let mark = if volume.security.is_some() {
                "⚠️"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "| {mark} | {} ({}) | {} | `{}` | {} | {} |",
                cell(&volume.workload),
                cell(&volume.location),
                cell(&volume.volume),
                volume.host_path,
                volume.old.join(", "),
                volume.new.join(", ")
            );
        }
    }
    out
}

/// Machine-readable, following `docs/diff-json.md`.
pub fn json(diff: &LayoutDiff) -> String {
    let mut text = serde_json::to_string_pretty(diff).expect("a diff serialises");
    text.push('\n');
    text
}
