//! The boolean conditions of conditional rules, read from `sesearch`'s
//! `[ EXPRESSION ]:True` suffix: whether a rule is on with the store's
//! boolean defaults, and the same condition in CIL (a rule the module
//! copies keeps its condition).
//!
//! setools prints the kernel's postfix expression in infix and may leave
//! out parentheses that mixed operators need (`( c && b || a )` for
//! `(a || b) && c`), so only unambiguous forms are read: one boolean, `!`,
//! and chains of one associative operator. Anything else is kept as text
//! and is neither evaluated nor copied.

use std::collections::BTreeMap;

use serde::Serialize;

/// A rule's condition: the expression, and which branch the rule is in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Condition {
    /// As sesearch prints it (`domain_can_mmap_files`, `a && b`).
    pub expression: String,
    /// The rule is in the `true` branch (`:True`); `false` for `:False`.
    pub when: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expression {
    Boolean(String),
    Not(Box<Expression>),
    /// One associative operator over two or more operands.
    Chain(Operator, Vec<Expression>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    And,
    Or,
    Xor,
    Eq,
    Neq,
}

impl Operator {
    fn parse(token: &str) -> Option<Operator> {
        Some(match token {
            "&&" => Operator::And,
            "||" => Operator::Or,
            "^" => Operator::Xor,
            "==" => Operator::Eq,
            "!=" => Operator::Neq,
            _ => return None,
        })
    }

    fn cil(self) -> &'static str {
        match self {
            Operator::And => "and",
            Operator::Or => "or",
            Operator::Xor => "xor",
            Operator::Eq => "eq",
            Operator::Neq => "neq",
        }
    }

    /// `a == b == c` depends on grouping; the others do not.
    fn associative(self) -> bool {
        !matches!(self, Operator::Eq | Operator::Neq)
    }

    fn apply(self, left: bool, right: bool) -> bool {
        match self {
            Operator::And => left && right,
            Operator::Or => left || right,
            Operator::Xor => left ^ right,
            Operator::Eq => left == right,
            Operator::Neq => left != right,
        }
    }
}

impl Condition {
    /// Reads sesearch's suffix: `EXPRESSION ]:True` without the `[`.
    pub fn new(expression: &str, when: bool) -> Condition {
        Condition {
            expression: expression.split_whitespace().collect::<Vec<_>>().join(" "),
            when,
        }
    }

    fn parsed(&self) -> Option<Expression> {
        let tokens: Vec<&str> = self.expression.split_whitespace().collect();
        let mut position = 0;
        let expression = parse_chain(&tokens, &mut position)?;
        (position == tokens.len()).then_some(expression)
    }

    /// The booleans the expression names, in order of appearance.
    pub fn booleans(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for token in self.expression.split_whitespace() {
            let is_name = token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
            if is_name && !names.contains(&token) {
                names.push(token);
            }
        }
        names
    }

    /// Whether the rule is on with these boolean states; `None` when the
    /// expression is not one this module reads or names an unknown boolean.
    pub fn active(&self, states: &BTreeMap<String, bool>) -> Option<bool> {
        evaluate(&self.parsed()?, states).map(|value| value == self.when)
    }

    /// The CIL `booleanif` expression, and the branch (`true`/`false`).
    pub fn cil(&self) -> Option<(String, &'static str)> {
        let branch = if self.when { "true" } else { "false" };
        Some((cil(&self.parsed()?), branch))
    }

    /// One spelling per meaning, to compare the condition of a rule the
    /// module copied with the store's: setools prints the same expression
    /// differently depending on how it was built (`a && b && c`,
    /// `( a && b && c )`).
    pub fn canonical(&self) -> String {
        let text = match self.parsed() {
            Some(expression) => canonical(&expression),
            None => self.expression.clone(),
        };
        format!("{}:{text}", self.when)
    }

    /// `a && b` (`:True`) or `! ( a && b )` for a rule in the false branch.
    pub fn describe(&self) -> String {
        if self.when {
            self.expression.clone()
        } else {
            format!("! ( {} )", self.expression)
        }
    }
}

/// `term (op term)*` with one operator throughout.
fn parse_chain(tokens: &[&str], position: &mut usize) -> Option<Expression> {
    let first = parse_term(tokens, position)?;
    let mut operator: Option<Operator> = None;
    let mut operands = vec![first];
    while let Some(next) = tokens.get(*position).and_then(|t| Operator::parse(t)) {
        match operator {
            Some(seen) if seen != next => return None,
            _ => operator = Some(next),
        }
        *position += 1;
        operands.push(parse_term(tokens, position)?);
    }
    match operator {
        None => operands.pop(),
        Some(operator) if !operator.associative() && operands.len() > 2 => None,
        Some(operator) => Some(Expression::Chain(operator, operands)),
    }
}

fn parse_term(tokens: &[&str], position: &mut usize) -> Option<Expression> {
    let token = *tokens.get(*position)?;
    *position += 1;
    match token {
        "!" => Some(Expression::Not(Box::new(parse_term(tokens, position)?))),
        "(" => {
            let inner = parse_chain(tokens, position)?;
            (tokens.get(*position) == Some(&")")).then(|| *position += 1)?;
            Some(inner)
        }
        _ if Operator::parse(token).is_some() || token == ")" => None,
        name => Some(Expression::Boolean(name.to_owned())),
    }
}

fn evaluate(expression: &Expression, states: &BTreeMap<String, bool>) -> Option<bool> {
    match expression {
        Expression::Boolean(name) => states.get(name).copied(),
        Expression::Not(inner) => evaluate(inner, states).map(|value| !value),
        Expression::Chain(operator, operands) => {
            let mut values = operands.iter().map(|o| evaluate(o, states));
            let first = values.next()??;
            values.try_fold(first, |left, right| Some(operator.apply(left, right?)))
        }
    }
}

/// Chains flattened and their operands sorted (every operator here is
/// commutative, and `&&`, `||`, `^` are associative).
fn canonical(expression: &Expression) -> String {
    match expression {
        Expression::Boolean(name) => name.clone(),
        Expression::Not(inner) => format!("!({})", canonical(inner)),
        Expression::Chain(operator, operands) => {
            let mut flat: Vec<String> = Vec::new();
            for operand in operands {
                match operand {
                    Expression::Chain(inner, more)
                        if inner == operator && operator.associative() =>
                    {
                        flat.extend(more.iter().map(canonical))
                    }
                    other => flat.push(canonical(other)),
                }
            }
            flat.sort();
            format!("{}({})", operator.cil(), flat.join(","))
        }
    }
}

fn cil(expression: &Expression) -> String {
    match expression {
        Expression::Boolean(name) => name.clone(),
        Expression::Not(inner) => format!("(not {})", cil(inner)),
        // CIL's operators take two operands: fold to the right.
        Expression::Chain(operator, operands) => {
            let mut text = cil(&operands[operands.len() - 1]);
            for operand in operands[..operands.len() - 1].iter().rev() {
                text = format!("({} {} {text})", operator.cil(), cil(operand));
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(pairs: &[(&str, bool)]) -> BTreeMap<String, bool> {
        pairs.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect()
    }

    #[test]
    fn reads_what_setools_prints_unambiguously() {
        let on = states(&[("a", true), ("b", false), ("c", true)]);
        assert_eq!(Condition::new("a", true).active(&on), Some(true));
        assert_eq!(Condition::new("b", true).active(&on), Some(false));
        assert_eq!(Condition::new("b", false).active(&on), Some(true));
        assert_eq!(Condition::new("a && c", true).active(&on), Some(true));
        assert_eq!(
            Condition::new("( a && b && c )", true).active(&on),
            Some(false)
        );
        assert_eq!(Condition::new("b || c", true).active(&on), Some(true));
        assert_eq!(Condition::new("! b", true).active(&on), Some(true));
        assert_eq!(Condition::new("nosuch", true).active(&on), None);
        // Mixed operators may have lost their parentheses: not read.
        assert_eq!(Condition::new("( c && b || a )", true).active(&on), None);
        assert_eq!(Condition::new("a == b == c", true).active(&on), None);
    }

    #[test]
    fn writes_cil_expressions() {
        assert_eq!(
            Condition::new("a", true).cil(),
            Some(("a".to_owned(), "true"))
        );
        assert_eq!(
            Condition::new("a && b && c", false).cil(),
            Some(("(and a (and b c))".to_owned(), "false"))
        );
        assert_eq!(
            Condition::new("! a", true).cil(),
            Some(("(not a)".to_owned(), "true"))
        );
        assert_eq!(Condition::new("a && b || c", true).cil(), None);
        assert_eq!(Condition::new("a && b", true).booleans(), ["a", "b"]);
        assert_eq!(
            Condition::new("( b && a && c )", true).canonical(),
            Condition::new("c && a && b", true).canonical()
        );
        assert_ne!(
            Condition::new("a", true).canonical(),
            Condition::new("a", false).canonical()
        );
    }
}
