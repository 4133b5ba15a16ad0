//! The vocabulary of host classes (`layout::model::host`) against its
//! contract, `docs/agents.md`: every class has its row, and each column of
//! the row says exactly what the table holds.

use layout::model::capability::CAPABILITIES;
use layout::model::host::{Grant, HostClass, Scope, StoreGrants, HOST_CLASSES};

fn docs() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/agents.md"))
        .expect("docs/agents.md")
}

/// The cells of the table row of `class` (without the outer pipes).
fn row(docs: &str, class: &str) -> Vec<String> {
    let line = docs
        .lines()
        .find(|line| line.starts_with(&format!("| `{class}` |")))
        .unwrap_or_else(|| panic!("docs/agents.md has no row for `{class}`"));
    line.trim_matches('|')
        .split(" | ")
        .map(|cell| cell.trim().to_owned())
        .collect()
}

fn host_paths(class: &HostClass) -> String {
    if class.paths.is_empty() {
        return "(an operation)".to_owned();
    }
    class
        .paths
        .iter()
        .map(|host| match host.scope {
            Scope::Subtree => format!("`{}/…`", host.path),
            Scope::Exact => format!("`{}`", host.path),
            Scope::NamePrefix => format!("`{}*`", host.path),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn types(grants: &[Grant]) -> String {
    let mut cells: Vec<String> = Vec::new();
    for grant in grants {
        let cell = match grant {
            Grant::Files(t) | Grant::Device(t, _) | Grant::Mount(t) | Grant::MountContext(t) => {
                format!("`{t}`")
            }
            Grant::Socket { socket, server } => format!("`{socket}`, served by `{server}`"),
            Grant::Processes => "every domain".to_owned(),
            Grant::System { target, .. } => format!("`{target}`"),
            Grant::OnSelf { .. } => continue,
        };
        if !cells.contains(&cell) {
            cells.push(cell);
        }
    }
    cells.join(", ")
}

fn store(class: &HostClass, grants: StoreGrants) -> String {
    if let StoreGrants::Refused(_) = grants {
        return "refused".to_owned();
    }
    match class.store_types(grants) {
        Some(grants) => types(grants),
        None => "declared".to_owned(),
    }
}

#[test]
fn docs_list_every_class_as_the_table_holds_it() {
    let docs = docs();
    for class in HOST_CLASSES {
        let cells = row(&docs, class.name);
        let expected = [
            format!("`{}`", class.name),
            host_paths(class),
            class.levels.join(", "),
            types(class.standalone),
            store(class, class.refpolicy),
            store(class, class.container_selinux),
        ];
        assert_eq!(&cells[..6], &expected, "the row of `{}`", class.name);
    }
    // Control: no row for a class the table lacks.
    let rows = docs
        .lines()
        .filter(|line| line.starts_with("| `") && line.matches(" | ").count() == 6)
        .count();
    assert_eq!(rows, HOST_CLASSES.len());
}

#[test]
fn docs_list_every_refused_capability_with_its_reason() {
    let docs = docs();
    for capability in CAPABILITIES {
        let line = docs
            .lines()
            .filter(|line| line.matches(" | ").count() == 1)
            .find(|line| line.starts_with(&format!("| `{}` |", capability.name)));
        match capability.refused {
            Some(why) => assert_eq!(
                line,
                Some(format!("| `{}` | {why} |", capability.name).as_str())
            ),
            None => assert!(line.is_none(), "{} is not refused", capability.name),
        }
    }
    let defaults: Vec<&str> = CAPABILITIES
        .iter()
        .filter(|c| c.default)
        .map(|c| c.name)
        .collect();
    let listed = docs.replace('\n', " ");
    assert!(
        listed.contains(&format!("(`{}`)", defaults.join(" "))),
        "docs/agents.md lists the default set: {defaults:?}"
    );
}
