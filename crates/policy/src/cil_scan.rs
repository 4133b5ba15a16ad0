//! A tolerant scan of CIL text: just enough to list declarations and
//! `filecon` paths, in our own base policy and in a distribution's modules.
//!
//! It understands comments, strings and nesting; it never fails and never
//! evaluates anything (no blocks, macros or `in` are expanded). Callers use
//! it for facts a wrong answer cannot make unsafe: which module declares a
//! name (to choose `optional` blocks) and which module wrote a `filecon`
//! (to name it in a report). What the policy *means* always comes from
//! secilc and setools.

use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Open,
    Close,
    Atom(&'a str),
    /// A quoted string, without its quotes; never a declaration's keyword or name.
    Quoted(&'a str),
}

/// CIL tokens: parentheses, atoms and quoted strings; `;` comments skipped.
struct Tokens<'a> {
    rest: &'a str,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        Tokens { rest: text }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        loop {
            self.rest = self.rest.trim_start();
            let first = self.rest.chars().next()?;
            match first {
                ';' => {
                    let end = self.rest.find('\n').unwrap_or(self.rest.len());
                    self.rest = &self.rest[end..];
                }
                '(' => {
                    self.rest = &self.rest[1..];
                    return Some(Token::Open);
                }
                ')' => {
                    self.rest = &self.rest[1..];
                    return Some(Token::Close);
                }
                '"' => {
                    // An unterminated string swallows the rest, as secilc would reject it.
                    let (content, end) = match self.rest[1..].find('"') {
                        Some(i) => (&self.rest[1..i + 1], i + 2),
                        None => (&self.rest[1..], self.rest.len()),
                    };
                    self.rest = &self.rest[end..];
                    return Some(Token::Quoted(content));
                }
                _ => {
                    let end = self
                        .rest
                        .find(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ';' | '"'))
                        .unwrap_or(self.rest.len());
                    let atom = &self.rest[..end];
                    self.rest = &self.rest[end..];
                    return Some(Token::Atom(atom));
                }
            }
        }
    }
}

/// Names declared by `(KEYWORD NAME)` anywhere in `cil`, at any depth.
pub fn declarations<'a>(cil: &'a str, keyword: &str) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    let tokens: Vec<Token<'a>> = Tokens::new(cil).collect();
    for window in tokens.windows(4) {
        if let [Token::Open, Token::Atom(head), Token::Atom(name), Token::Close] = window {
            if *head == keyword {
                names.insert(*name);
            }
        }
    }
    names
}

/// What one pass over a module finds (see [`scan`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scanned<'a> {
    /// Names declared by `(type NAME)`.
    pub types: BTreeSet<&'a str>,
    /// Names declared by `(typeattribute NAME)`.
    pub attributes: BTreeSet<&'a str>,
    /// The path regex of every `(filecon "REGEX" …)`, in order.
    pub filecons: Vec<&'a str>,
}

/// [`declarations`] of `type` and `typeattribute` and [`filecon_paths`]
/// in one pass: a store's modules are megabytes of CIL.
pub fn scan(cil: &str) -> Scanned<'_> {
    let mut scanned = Scanned::default();
    // The last four tokens, oldest first.
    let mut last: [Option<Token<'_>>; 4] = [None; 4];
    for token in Tokens::new(cil) {
        last.rotate_left(1);
        last[3] = Some(token);
        match last {
            [Some(Token::Open), Some(Token::Atom(head)), Some(Token::Atom(name)), Some(Token::Close)] => {
                match head {
                    "type" => {
                        scanned.types.insert(name);
                    }
                    "typeattribute" => {
                        scanned.attributes.insert(name);
                    }
                    _ => {}
                }
            }
            [_, Some(Token::Open), Some(Token::Atom("filecon")), Some(Token::Quoted(path))] => {
                scanned.filecons.push(path);
            }
            _ => {}
        }
    }
    scanned
}

/// The path regex of every `(filecon "REGEX" …)`, in order.
pub fn filecon_paths(cil: &str) -> Vec<&str> {
    let tokens: Vec<Token<'_>> = Tokens::new(cil).collect();
    tokens
        .windows(3)
        .filter_map(|window| match window {
            [Token::Open, Token::Atom("filecon"), Token::Quoted(path)] => Some(*path),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_declarations_and_ignores_comments_strings_and_lookalikes() {
        let cil = r#"
            ; (type commented_t)
            (type a_t) ;; (type trailing_t)
            (block b (type nested_t))
            (typeattribute attr)
            (typeattributeset attr (a_t))
            (roletype object_r a_t)
            (filecon "/(type quoted_t)" any ())
            (type
                spread_t)
            (type two_t extra)
        "#;
        assert_eq!(
            declarations(cil, "type"),
            BTreeSet::from(["a_t", "nested_t", "spread_t"])
        );
        assert_eq!(declarations(cil, "typeattribute"), BTreeSet::from(["attr"]));
        assert_eq!(filecon_paths(cil), ["/(type quoted_t)"]);
        assert_eq!(
            scan(cil),
            Scanned {
                types: declarations(cil, "type"),
                attributes: declarations(cil, "typeattribute"),
                filecons: filecon_paths(cil),
            }
        );
    }

    #[test]
    fn malformed_text_yields_what_it_can_without_panicking() {
        assert!(declarations("(type", "type").is_empty());
        assert!(declarations("\"(type x_t)", "type").is_empty());
        assert_eq!(
            declarations("(type x_t))) (", "type"),
            BTreeSet::from(["x_t"])
        );
        assert!(declarations("", "type").is_empty());
        assert_eq!(filecon_paths("(filecon \"/unterminated"), ["/unterminated"]);
        for text in [
            "(type",
            "\"(type x_t)",
            "(type x_t))) (",
            "",
            "(filecon \"/u",
        ] {
            let scanned = scan(text);
            assert_eq!(scanned.types, declarations(text, "type"));
            assert_eq!(scanned.filecons, filecon_paths(text));
        }
    }
}
