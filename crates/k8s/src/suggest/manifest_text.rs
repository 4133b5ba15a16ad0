//! Setting `seLinuxOptions.type` in a manifest's text, at the spots the
//! parser located ([`TypeSpot`]): a value is replaced, missing keys are
//! written at the start of the deepest mapping present. Nothing else of
//! the file changes.

use layout::diag::Pos;

use layout::diag::Location;

use crate::workload::{SourceFile, TypeSpot};

/// A change to a text: `remove` bytes at `at` replaced by `insert`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Edit {
    pub at: usize,
    pub remove: usize,
    pub insert: String,
}

/// Why `seLinuxOptions.type` cannot be written into a manifest's text;
/// the user sets it by hand there.
#[derive(Debug, thiserror::Error)]
pub(super) enum PatchError {
    #[error("the workload has no pod template")]
    NoPodTemplate,
    #[error(
        "{at}: its securityContext comes through a YAML alias or merge key; set \
         `seLinuxOptions.type: {selinux_type}` there by hand"
    )]
    Aliased { at: Location, selinux_type: String },
    #[error(
        "{at}: the mapping does not start its own line; set \
         `seLinuxOptions.type: {selinux_type}` by hand"
    )]
    NotOnItsOwnLine { at: Location, selinux_type: String },
    #[error("{at}: the parser's position is not in the file")]
    Unplaceable { at: Location },
}

/// The edit that makes `spot` say `selinux_type`, or why it cannot be
/// made.
pub(super) fn type_edit(
    source: &SourceFile,
    spot: &TypeSpot,
    selinux_type: &str,
) -> Result<Edit, PatchError> {
    match spot {
        TypeSpot::Value(pos) => {
            let at = offset(source, *pos)?;
            let end = source
                .offset(pos.line, pos.column.saturating_add(pos.width))
                .ok_or_else(|| unplaceable(source, *pos))?;
            // A quoted value stays quoted (JSON needs it).
            let insert = match source.text()[at..].chars().next() {
                Some(quote @ ('"' | '\'')) => format!("{quote}{selinux_type}{quote}"),
                _ => selinux_type.to_owned(),
            };
            Ok(Edit {
                at,
                remove: end - at,
                insert,
            })
        }
        TypeSpot::Aliased { at } => Err(PatchError::Aliased {
            at: source.location(*at),
            selinux_type: selinux_type.to_owned(),
        }),
        TypeSpot::Insert { at, missing } => {
            let start = offset(source, *at)?;
            let text = source.text();
            let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
            if text[start..].starts_with('{') {
                // A flow mapping: the keys go first inside its braces,
                // quoted when its keys are (a JSON manifest).
                let json = text[start + 1..].trim_start().starts_with('"');
                let quote = |word: &str| {
                    if json {
                        format!("\"{word}\"")
                    } else {
                        word.to_owned()
                    }
                };
                let mut value = format!("{{{}: {}}}", quote("type"), quote(selinux_type));
                for key in missing.iter().rev().skip(1) {
                    value = format!("{{{}: {value}}}", quote(key));
                }
                let inner = value[1..value.len() - 1].to_owned();
                let empty = text[start + 1..].trim_start().starts_with('}');
                return Ok(Edit {
                    at: start + 1,
                    remove: 0,
                    insert: if empty { inner } else { format!("{inner}, ") },
                });
            }
            if !text[line_start..start].chars().all(|c| c == ' ') {
                return Err(PatchError::NotOnItsOwnLine {
                    at: source.location(*at),
                    selinux_type: selinux_type.to_owned(),
                });
            }
            let indent = start - line_start;
            let mut insert = String::new();
            for (depth, key) in missing.iter().enumerate() {
                let pad = " ".repeat(indent + 2 * depth);
                if depth + 1 == missing.len() {
                    insert.push_str(&format!("{pad}{key}: {selinux_type}\n"));
                } else {
                    insert.push_str(&format!("{pad}{key}:\n"));
                }
            }
            Ok(Edit {
                at: line_start,
                remove: 0,
                insert,
            })
        }
    }
}

fn offset(source: &SourceFile, pos: Pos) -> Result<usize, PatchError> {
    source
        .offset(pos.line, pos.column)
        .ok_or_else(|| unplaceable(source, pos))
}

fn unplaceable(source: &SourceFile, pos: Pos) -> PatchError {
    PatchError::Unplaceable {
        at: source.location(pos),
    }
}

/// `text` with `edits` (none overlapping) applied.
pub(super) fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| e.at);
    let mut out = String::with_capacity(text.len() + 256);
    let mut from = 0;
    for edit in edits {
        out.push_str(&text[from..edit.at]);
        out.push_str(&edit.insert);
        from = edit.at + edit.remove;
    }
    out.push_str(&text[from..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_str;

    fn set_type(yaml: &str, selinux_type: &str) -> String {
        let manifests = parse_str("f.yaml", yaml);
        let workload = &manifests.workloads[0];
        let spots = workload.selinux_spots.as_ref().expect("pod spec");
        let mut edits = vec![type_edit(&workload.source, &spots.pod, selinux_type).unwrap()];
        for container in &spots.containers {
            edits.push(type_edit(&workload.source, &container.spot, selinux_type).unwrap());
        }
        apply(yaml, edits)
    }

    #[test]
    fn the_type_lands_at_the_pod_and_at_containers_with_their_own_options() {
        let before = "\
kind: DaemonSet  # a comment stays
spec:
  template:
    spec:
      # the pod spec
      hostPID: true
      containers:
        - name: a
          securityContext:
            seLinuxOptions: {level: s0}
        - name: b
          securityContext:
            seLinuxOptions:
              type: \"spc_t\"
";
        let after = "\
kind: DaemonSet  # a comment stays
spec:
  template:
    spec:
      # the pod spec
      securityContext:
        seLinuxOptions:
          type: agent_t
      hostPID: true
      containers:
        - name: a
          securityContext:
            seLinuxOptions: {type: agent_t, level: s0}
        - name: b
          securityContext:
            seLinuxOptions:
              type: \"agent_t\"
";
        assert_eq!(set_type(before, "agent_t"), after);
        let json = "{\"kind\": \"Pod\", \"spec\": {\"containers\": [], \"securityContext\": {\"seLinuxOptions\": {\"type\": \"spc_t\"}}}}\n";
        assert_eq!(set_type(json, "x_t"), json.replace("spc_t", "x_t"));
        assert_eq!(
            set_type("{\"kind\": \"Pod\", \"spec\": {\"containers\": []}}", "x_t"),
            "{\"kind\": \"Pod\", \"spec\": {\"securityContext\": {\"seLinuxOptions\": {\"type\": \"x_t\"}}, \"containers\": []}}"
        );
        assert_eq!(
            set_type("kind: Pod\nspec: {securityContext: {}}\n", "x_t"),
            "kind: Pod\nspec: {securityContext: {seLinuxOptions: {type: x_t}}}\n"
        );
        assert_eq!(
            set_type(
                "kind: Pod\nspec:\n  securityContext:\n    runAsUser: 1\n",
                "x_t"
            ),
            "kind: Pod\nspec:\n  securityContext:\n    seLinuxOptions:\n      type: x_t\n    runAsUser: 1\n"
        );
    }
}
