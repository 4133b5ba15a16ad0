//! Writing new domains, paths and grants into a layout's text: inserted
//! where a person would write them (after the last domain, after the last
//! path, first inside an entry's `access:` or `transitions:`), everything
//! else of the text kept byte for byte. Works on block-style `domains:`
//! and `paths:` (as every layout of this project writes them); a layout
//! that writes either as one flow collection is refused.

use layout::diag::Pos;
use layout::model::Layout;

/// What `suggest` adds to a layout.
#[derive(Debug, Default)]
pub(super) struct Additions {
    pub domains: Vec<NewDomain>,
    pub paths: Vec<NewPath>,
    /// An existing path (index in the layout's paths) granted to a domain
    /// (key) at a level.
    pub grants: Vec<(usize, String, &'static str)>,
    /// A domain key added to an existing domain's `transitions` (index).
    pub transitions: Vec<(usize, String)>,
}

#[derive(Debug)]
pub(super) struct NewDomain {
    pub key: String,
    pub type_name: String,
    /// The workload it was made for (`DaemonSet logging/fluent-bit`).
    pub origin: String,
    /// Host classes and levels.
    pub host: Vec<(&'static str, &'static str)>,
}

#[derive(Debug)]
pub(super) struct NewPath {
    pub path: String,
    pub type_name: String,
    /// The workloads it was made for.
    pub origins: Vec<String>,
    /// Domain keys and levels as the manifest writes them (`write`,
    /// `[read, exec]`).
    pub access: Vec<(String, String)>,
}

struct Line<'a> {
    /// Byte offset of its first character.
    start: usize,
    /// Byte offset past its line break (or the end of the text).
    end: usize,
    text: &'a str,
}

impl Line<'_> {
    fn indent(&self) -> usize {
        self.text.len() - self.text.trim_start_matches(' ').len()
    }

    /// Holds a YAML node (not blank, not only a comment).
    fn is_content(&self) -> bool {
        let trimmed = self.text.trim();
        !trimmed.is_empty() && !trimmed.starts_with('#')
    }

    /// The line without a trailing comment (a `#` after a space).
    fn code(&self) -> &str {
        match self.text.find(" #") {
            Some(at) => &self.text[..at],
            None => self.text,
        }
    }
}

fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in text.split_inclusive('\n') {
        let body = piece.strip_suffix('\n').unwrap_or(piece);
        let body = body.strip_suffix('\r').unwrap_or(body);
        out.push(Line {
            start,
            end: start + piece.len(),
            text: body,
        });
        start += piece.len();
    }
    out
}

/// Why the additions cannot be written into the layout's text.
#[derive(Debug, thiserror::Error)]
pub enum LayoutTextError {
    #[error("the layout declares no {0}")]
    NoEntries(&'static str),
    #[error("no {0} line (please report this)")]
    NoLine(&'static str),
    #[error("spec.domains is a flow mapping; write it in block style to add domains")]
    FlowDomains,
    #[error("spec.paths is not a block sequence; write it in block style to add paths")]
    FlowPaths,
    #[error("the entry of {0} is not a block sequence item")]
    FlowEntry(String),
    #[error("cannot add `{key}` to the {field} of {at}")]
    NoPlace {
        key: String,
        field: &'static str,
        at: String,
    },
}

/// `text` with `additions` written in.
pub(super) fn render(
    text: &str,
    layout: &Layout,
    additions: &Additions,
) -> Result<String, LayoutTextError> {
    let lines = lines(text);
    let mut inserts: Vec<(usize, String)> = Vec::new();
    insert_domains(text, &lines, layout, &additions.domains, &mut inserts)?;
    insert_paths(text, &lines, layout, &additions.paths, &mut inserts)?;
    insert_grants(&lines, layout, &additions.grants, &mut inserts)?;
    insert_transitions(&lines, layout, &additions.transitions, &mut inserts)?;
    Ok(apply(text, &inserts))
}

/// The index in the text's lines of the line at `pos`.
fn line_index(pos: Pos) -> Option<usize> {
    usize::try_from(pos.line).ok()?.checked_sub(1)
}

/// The new domains, as one block after the layout's last domain, at the
/// indent of its first.
fn insert_domains(
    text: &str,
    lines: &[Line<'_>],
    layout: &Layout,
    domains: &[NewDomain],
    inserts: &mut Vec<(usize, String)>,
) -> Result<(), LayoutTextError> {
    if domains.is_empty() {
        return Ok(());
    }
    let first = layout
        .domains
        .first()
        .ok_or(LayoutTextError::NoEntries("domains"))?;
    let at = line_index(first.pos)
        .filter(|i| *i < lines.len())
        .ok_or(LayoutTextError::NoLine("domain"))?;
    let key_indent = usize::try_from(first.pos.column)
        .unwrap_or(1)
        .saturating_sub(1);
    if lines[at].indent() != key_indent {
        return Err(LayoutTextError::FlowDomains);
    }
    let last = block_end(lines, at, |line| line.indent() >= key_indent);
    let pad = " ".repeat(key_indent);
    let mut block = String::new();
    for domain in domains {
        block.push_str(&format!("{pad}# suggested for {}\n", domain.origin));
        block.push_str(&format!("{pad}{}:\n", domain.key));
        block.push_str(&format!("{pad}  type: {}\n", domain.type_name));
        block.push_str(&format!("{pad}  agent: true\n"));
        if !domain.host.is_empty() {
            block.push_str(&format!("{pad}  host: {}\n", flow_mapping(&domain.host)));
        }
    }
    let at = after_line(text, &lines[last], inserts);
    inserts.push((at, block));
    Ok(())
}

/// `{ key: level, … }`: how the layout writes `host:` and `access:`.
fn flow_mapping<K: std::fmt::Display, V: std::fmt::Display>(pairs: &[(K, V)]) -> String {
    let items: Vec<String> = pairs
        .iter()
        .map(|(key, level)| format!("{key}: {level}"))
        .collect();
    format!("{{ {} }}", items.join(", "))
}

/// The new paths, as one block after the layout's last path entry, at the
/// indent of its dashes.
fn insert_paths(
    text: &str,
    lines: &[Line<'_>],
    layout: &Layout,
    paths: &[NewPath],
    inserts: &mut Vec<(usize, String)>,
) -> Result<(), LayoutTextError> {
    if paths.is_empty() {
        return Ok(());
    }
    let first = layout
        .paths
        .iter()
        .min_by_key(|p| (p.pos.line, p.pos.column))
        .ok_or(LayoutTextError::NoEntries("paths"))?;
    let at = line_index(first.pos).ok_or(LayoutTextError::NoLine("path"))?;
    let dash = entry_start(lines, at).ok_or(LayoutTextError::FlowPaths)?;
    let dash_indent = lines[dash].indent();
    let last = block_end(lines, dash, |line| {
        line.indent() > dash_indent
            || (line.indent() == dash_indent && line.text.trim_start().starts_with('-'))
    });
    let pad = " ".repeat(dash_indent);
    let mut block = String::new();
    for path in paths {
        block.push('\n');
        for origin in &path.origins {
            block.push_str(&format!("{pad}# suggested for {origin}\n"));
        }
        block.push_str(&format!("{pad}- path: {}\n", path.path));
        block.push_str(&format!("{pad}  type: {}\n", path.type_name));
        block.push_str(&format!("{pad}  access: {}\n", flow_mapping(&path.access)));
    }
    let at = after_line(text, &lines[last], inserts);
    inserts.push((at, block));
    Ok(())
}

/// Each grant of an existing path, first in its entry's `access`.
fn insert_grants(
    lines: &[Line<'_>],
    layout: &Layout,
    grants: &[(usize, String, &'static str)],
    inserts: &mut Vec<(usize, String)>,
) -> Result<(), LayoutTextError> {
    for (index, key, level) in grants {
        let rule = &layout.paths[*index];
        let at = line_index(rule.pos).ok_or(LayoutTextError::NoLine("path"))?;
        let dash = entry_start(lines, at)
            .ok_or_else(|| LayoutTextError::FlowEntry(rule.path.to_string()))?;
        let indent = lines[dash].indent();
        let last = block_end(lines, dash, |line| line.indent() > indent);
        let entry = dash..=last;
        inserts.push(
            add_to_collection(
                lines,
                entry,
                "access",
                &format!("{key}: {level}"),
                Collection::Mapping,
            )
            .ok_or_else(|| LayoutTextError::NoPlace {
                key: key.clone(),
                field: "access",
                at: rule.path.to_string(),
            })?,
        );
    }
    Ok(())
}

/// Each new domain an existing domain may start, first in its
/// `transitions`.
fn insert_transitions(
    lines: &[Line<'_>],
    layout: &Layout,
    transitions: &[(usize, String)],
    inserts: &mut Vec<(usize, String)>,
) -> Result<(), LayoutTextError> {
    for (index, key) in transitions {
        let domain = &layout.domains[*index];
        let at = line_index(domain.pos).ok_or(LayoutTextError::NoLine("domain"))?;
        let indent = lines[at].indent();
        let last = block_end(lines, at, |line| line.indent() > indent);
        inserts.push(
            add_to_collection(lines, at..=last, "transitions", key, Collection::Sequence)
                .ok_or_else(|| LayoutTextError::NoPlace {
                    key: key.clone(),
                    field: "transitions",
                    at: format!("`{}`", domain.key),
                })?,
        );
    }
    Ok(())
}

/// `text` with `inserts` made: back to front, and at one offset in the
/// order they were decided.
fn apply(text: &str, inserts: &[(usize, String)]) -> String {
    let mut out = text.to_owned();
    let mut order: Vec<usize> = (0..inserts.len()).collect();
    order.sort_by_key(|i| (std::cmp::Reverse(inserts[*i].0), std::cmp::Reverse(*i)));
    for i in order {
        let (at, insert) = &inserts[i];
        out.insert_str(*at, insert);
    }
    out
}

/// The offset just past `line`; a text without a final line break gets one
/// inserted first.
fn after_line(text: &str, line: &Line<'_>, inserts: &mut Vec<(usize, String)>) -> usize {
    if line.end == text.len() && !text.ends_with('\n') {
        inserts.push((line.end, "\n".to_owned()));
    }
    line.end
}

/// The last content line of the block starting at line `first`: the lines
/// after it belong while `belongs` holds for each content line.
fn block_end(lines: &[Line<'_>], first: usize, belongs: impl Fn(&Line<'_>) -> bool) -> usize {
    let mut last = first;
    for (index, line) in lines.iter().enumerate().skip(first + 1) {
        if !line.is_content() {
            continue;
        }
        if !belongs(line) {
            break;
        }
        last = index;
    }
    last
}

/// The line of the `- ` that starts the sequence item holding line `at`.
fn entry_start(lines: &[Line<'_>], at: usize) -> Option<usize> {
    (0..=at.min(lines.len().checked_sub(1)?))
        .rev()
        .take(64)
        .find(|i| lines[*i].text.trim_start().starts_with("- "))
}

#[derive(Clone, Copy)]
enum Collection {
    Mapping,
    Sequence,
}

/// The insertion that adds `item` first to the collection under `key` in
/// the entry spanning `range` (a block mapping item or a domain): inside
/// its `{`/`[`, or as a line of its block, or a new `key:` when the entry
/// has none.
fn add_to_collection(
    lines: &[Line<'_>],
    range: std::ops::RangeInclusive<usize>,
    key: &str,
    item: &str,
    kind: Collection,
) -> Option<(usize, String)> {
    let (open, close) = match kind {
        Collection::Mapping => ('{', '}'),
        Collection::Sequence => ('[', ']'),
    };
    let first = *range.start();
    let pattern = format!("{key}:");
    for index in range.clone() {
        let line = &lines[index];
        let code = line.code();
        let Some(found) = code
            .match_indices(&pattern)
            .map(|(at, _)| at)
            .find(|at| *at == 0 || matches!(code.as_bytes()[at - 1], b' ' | b'{' | b',' | b'-'))
        else {
            continue;
        };
        let rest = &code[found + pattern.len()..];
        let value = rest.trim_start();
        if value.starts_with(open) {
            // A flow collection: the item goes last, before its closing
            // bracket when that is on the same line, else first.
            let open_at = found + pattern.len() + (rest.len() - value.len());
            let empty = value[1..].trim_start().starts_with(close);
            if empty {
                return Some((line.start + open_at + 1, format!(" {item} ")));
            }
            if let Some(close_at) = closing(code, open_at, open, close) {
                let before = code[..close_at].trim_end().len();
                return Some((line.start + before, format!(", {item}")));
            }
            let insert = match kind {
                Collection::Mapping => format!(" {item},"),
                Collection::Sequence => format!("{item}, "),
            };
            return Some((line.start + open_at + 1, insert));
        }
        if !value.is_empty() {
            return None;
        }
        // A block collection: a line like its first.
        let next = lines[index + 1..=*range.end()]
            .iter()
            .find(|l| l.is_content())?;
        let pad = " ".repeat(next.indent());
        let insert = match kind {
            Collection::Mapping => format!("{pad}{item}\n"),
            Collection::Sequence => format!("{pad}- {item}\n"),
        };
        return Some((next.start, insert));
    }
    // No such key: write one.
    let head = &lines[first];
    let code = head.code();
    let whole = match kind {
        Collection::Mapping => format!("{key}: {{ {item} }}"),
        Collection::Sequence => format!("{key}: [{item}]"),
    };
    if let Some(brace) = code.find('{') {
        return Some((head.start + brace + 1, format!(" {whole},")));
    }
    // A block mapping: its keys are indented past the head's key or dash.
    Some((
        head.end,
        format!("{}{whole}\n", " ".repeat(head.indent() + 2)),
    ))
}

/// The offset of the bracket closing the one at `open_at` in `code`, if
/// it is there (quotes are not expected in keys and levels).
fn closing(code: &str, open_at: usize, open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    for (at, c) in code[open_at..].char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(open_at + at);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use layout::diag::Source;
    use layout::manifest::{parse, BaseFacts};

    const LAYOUT: &str = "\
apiVersion: semanifest.io/v1
kind: Layout
metadata: { name: t }
spec:
  domains:
    # the runtime
    containerd: { type: containerd_t, transitions: [pods] }
    pods: { type: container_t, workload: true }
    kubelet:
      type: kubelet_t
  paths:
    - path: /var
      type: var_t

    - path: /var/mnt # the root
      type: var_mnt_t
      access: { pods: write }
      hostPath: true
    - { path: /var/lib, type: var_lib_t }
    # trailing comment
";

    #[test]
    fn additions_are_written_where_a_person_would() {
        let parsed = parse(Source::new("t.yaml", LAYOUT), &BaseFacts::default()).unwrap();
        let additions = Additions {
            domains: vec![NewDomain {
                key: "agent".to_owned(),
                type_name: "agent_t".to_owned(),
                origin: "DaemonSet ns/agent".to_owned(),
                host: vec![("sysfs", "read")],
            }],
            paths: vec![NewPath {
                path: "/var/mnt/agent".to_owned(),
                type_name: "var_mnt_agent_t".to_owned(),
                origins: vec!["DaemonSet ns/agent".to_owned()],
                access: vec![
                    ("pods".to_owned(), "write".to_owned()),
                    ("agent".to_owned(), "write".to_owned()),
                ],
            }],
            grants: vec![
                (1, "agent".to_owned(), "read"),
                (0, "agent".to_owned(), "read"),
                (2, "agent".to_owned(), "read"),
            ],
            transitions: vec![(0, "agent".to_owned())],
        };
        let paths: Vec<&str> = parsed
            .layout
            .paths
            .iter()
            .map(|p| p.path.as_str())
            .collect();
        assert_eq!(paths, ["/var", "/var/lib", "/var/mnt"]);
        let out = render(LAYOUT, &parsed.layout, &additions).unwrap();
        let expected = "\
apiVersion: semanifest.io/v1
kind: Layout
metadata: { name: t }
spec:
  domains:
    # the runtime
    containerd: { type: containerd_t, transitions: [pods, agent] }
    pods: { type: container_t, workload: true }
    kubelet:
      type: kubelet_t
    # suggested for DaemonSet ns/agent
    agent:
      type: agent_t
      agent: true
      host: { sysfs: read }
  paths:
    - path: /var
      access: { agent: read }
      type: var_t

    - path: /var/mnt # the root
      type: var_mnt_t
      access: { pods: write, agent: read }
      hostPath: true
    - { access: { agent: read }, path: /var/lib, type: var_lib_t }

    # suggested for DaemonSet ns/agent
    - path: /var/mnt/agent
      type: var_mnt_agent_t
      access: { pods: write, agent: write }
    # trailing comment
";
        assert_eq!(out, expected);
        parse(Source::new("t.yaml", out), &BaseFacts::default()).unwrap();
    }
}
