//! Splitting a YAML stream into its documents before parsing any of them,
//! so that one bad document cannot hide the others.
//!
//! A document boundary is a line that starts, in column 1, with `---` or
//! `...` followed by a space, a tab or the end of the line. YAML forbids
//! those two markers at the start of a line inside any scalar (block or
//! quoted), so a marker found this way is one for every conforming parser,
//! whatever the document above it holds, including a syntax error. Anchors
//! never cross documents, so each piece parses alone exactly as it would
//! within the stream.

/// One document's text and the 0-based line it starts on in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Document<'a> {
    pub first_line: u32,
    pub text: &'a str,
}

/// What a line is, for splitting.
#[derive(PartialEq, Eq)]
enum LineKind {
    Start,
    End,
    /// Blank, a comment, or a directive (`%YAML`): belongs to the next
    /// document until one has begun.
    Prefix,
    Content,
}

fn classify(line: &str, first: bool) -> LineKind {
    let line = if first {
        line.strip_prefix('\u{feff}').unwrap_or(line)
    } else {
        line
    };
    let line = line.trim_end_matches(['\n', '\r']);
    let marker = |m: &str| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    };
    if marker("---") {
        LineKind::Start
    } else if marker("...") {
        LineKind::End
    } else if line.trim().is_empty() || line.trim_start().starts_with('#') || line.starts_with('%')
    {
        LineKind::Prefix
    } else {
        LineKind::Content
    }
}

/// The documents of `text`, in order. Pieces holding only comments and
/// blank lines are dropped; every other byte of `text` is in exactly one
/// piece.
pub(crate) fn documents<'a>(text: &'a str) -> Vec<Document<'a>> {
    let mut documents = Vec::new();
    let mut start_byte = 0;
    let mut start_line = 0u32;
    // Whether the current piece has begun a document (content or `---`).
    let mut begun = false;
    let mut has_content = false;
    let mut offset = 0;
    let push = |documents: &mut Vec<Document<'a>>,
                from: usize,
                to: usize,
                line: u32,
                has_content: bool| {
        if has_content {
            documents.push(Document {
                first_line: line,
                text: &text[from..to],
            });
        }
    };
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        let end = offset + line.len();
        match classify(line, index == 0) {
            LineKind::Start => {
                if begun {
                    push(&mut documents, start_byte, offset, start_line, has_content);
                    start_byte = offset;
                    start_line = index;
                }
                begun = true;
                has_content = true;
            }
            LineKind::End => {
                push(&mut documents, start_byte, end, start_line, has_content);
                start_byte = end;
                start_line = index.saturating_add(1);
                begun = false;
                has_content = false;
            }
            LineKind::Prefix => {}
            LineKind::Content => {
                begun = true;
                has_content = true;
            }
        }
        offset = end;
    }
    push(
        &mut documents,
        start_byte,
        text.len(),
        start_line,
        has_content,
    );
    documents
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Vec<(u32, &str)> {
        documents(text)
            .into_iter()
            .map(|d| (d.first_line, d.text))
            .collect()
    }

    #[test]
    fn splits_at_markers_in_column_one_only() {
        let text = "a: 1\n---\nb: |\n  ---\n  text\n--- # c\nc: [\n---\nd: 4\n";
        assert_eq!(
            pieces(text),
            [
                (0, "a: 1\n"),
                (1, "---\nb: |\n  ---\n  text\n"),
                (5, "--- # c\nc: [\n"),
                (7, "---\nd: 4\n"),
            ]
        );
        // Every byte is kept, so positions stay exact.
        let joined: String = pieces(text).iter().map(|(_, t)| *t).collect();
        assert_eq!(joined, text);
    }

    #[test]
    fn markers_need_a_separator() {
        // `---x` and `...x` are plain scalars, not markers.
        assert_eq!(pieces("---x: 1\n...y: 2\n"), [(0, "---x: 1\n...y: 2\n")]);
    }

    #[test]
    fn comments_and_directives_go_with_the_next_document() {
        let text = "# header\n%YAML 1.2\n---\na: 1\n...\n%YAML 1.2\n---\nb: 2\n";
        assert_eq!(
            pieces(text),
            [
                (0, "# header\n%YAML 1.2\n---\na: 1\n...\n"),
                (5, "%YAML 1.2\n---\nb: 2\n"),
            ]
        );
    }

    #[test]
    fn empty_pieces_are_dropped_but_explicit_documents_kept() {
        assert_eq!(
            pieces("---\n---\n# only a comment\n"),
            [(0, "---\n"), (1, "---\n# only a comment\n")]
        );
        assert_eq!(pieces("# nothing\n\n"), []);
        assert_eq!(pieces(""), []);
    }

    #[test]
    fn crlf_bom_and_no_final_newline() {
        assert_eq!(
            pieces("\u{feff}---\r\na: 1\r\n---\r\nb: 2"),
            [(0, "\u{feff}---\r\na: 1\r\n"), (2, "---\r\nb: 2")]
        );
    }
}
