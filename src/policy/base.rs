//! The hand-written base policy (`policy/*.cil`), embedded in the binary.
//!
//! Invariants:
//! - [`BASE_POLICY`] lists the files in the order secilc must read them
//!   (file-name order); the text is exactly the committed file.
//! - [`base_types`] and [`base_attributes`] are read from that same text, so
//!   the compiler's idea of "a type the base defines" cannot drift from the
//!   policy. The scan understands CIL's comments, strings and nesting; it
//!   never fails, it only reports the declarations it sees.

use std::collections::BTreeSet;

/// The base policy files, `(file name, contents)`, in compilation order.
pub const BASE_POLICY: &[(&str, &str)] = &[
    (
        "00-classes.cil",
        include_str!("../../policy/00-classes.cil"),
    ),
    ("10-mls.cil", include_str!("../../policy/10-mls.cil")),
    ("20-core.cil", include_str!("../../policy/20-core.cil")),
    (
        "30-domains.cil",
        include_str!("../../policy/30-domains.cil"),
    ),
    (
        "40-oci-runtime.cil",
        include_str!("../../policy/40-oci-runtime.cil"),
    ),
];

/// Every type the base policy declares with `(type NAME)`.
pub fn base_types() -> BTreeSet<&'static str> {
    declared_in_base("type")
}

/// Every attribute the base policy declares with `(typeattribute NAME)`.
pub fn base_attributes() -> BTreeSet<&'static str> {
    declared_in_base("typeattribute")
}

fn declared_in_base(keyword: &str) -> BTreeSet<&'static str> {
    BASE_POLICY
        .iter()
        .flat_map(|(_, text)| declarations(text, keyword))
        .collect()
}

/// Names declared by `(KEYWORD NAME)` anywhere in `cil`, at any depth.
fn declarations<'a>(cil: &'a str, keyword: &str) -> BTreeSet<&'a str> {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Open,
    Close,
    Atom(&'a str),
    /// A quoted string; never a declaration's keyword or name.
    Quoted,
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
                    let end = self.rest[1..].find('"').map_or(self.rest.len(), |i| i + 2);
                    self.rest = &self.rest[end..];
                    return Some(Token::Quoted);
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
    }

    #[test]
    fn base_policy_is_listed_in_file_name_order() {
        let names: Vec<&str> = BASE_POLICY.iter().map(|(name, _)| *name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn base_defines_the_names_the_generated_module_relies_on() {
        let types = base_types();
        for name in [
            "kernel_t",
            "init_t",
            "containerd_t",
            "kubelet_t",
            "container_t",
            "container_file_t",
            "os_file_t",
            "unlabeled_t",
            "null_device_t",
        ] {
            assert!(types.contains(name), "{name} missing from {types:?}");
        }
        let attributes = base_attributes();
        for name in [
            "domain",
            "file_type",
            "semanifest_trusted",
            "semanifest_workload",
            "semanifest_process",
        ] {
            assert!(
                attributes.contains(name),
                "{name} missing from {attributes:?}"
            );
        }
        assert!(types.is_disjoint(&attributes));
    }
}
