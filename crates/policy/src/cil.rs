//! Renders a [`ModulePlan`] into CIL text with the templates in `templates/`.
//!
//! Escaping is structural: the formatter refuses any interpolated value that
//! could break out of a CIL token or string (quotes, whitespace, `;`, control
//! characters), and free text can only be printed through the `comment`
//! filter. A template cannot forget to escape.

use minijinja::value::{Serde, Value};
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior};

use super::plan::ModulePlan;

const MODULE_TEMPLATE: &str = include_str!("../../../templates/module.cil.j2");
const STORE_MODULE_TEMPLATE: &str = include_str!("../../../templates/store-module.cil.j2");

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .build()
            .expect("default syntax is valid"),
    );
    env.set_formatter(|out, _state, value| {
        if value.is_safe() {
            return out
                .write_str(value.as_str().unwrap_or_default())
                .map_err(Error::from);
        }
        let text = value.to_string();
        if let Some(bad) = text
            .chars()
            .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | ';'))
        {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("refusing to print {text:?} into CIL: it contains {bad:?}"),
            ));
        }
        out.write_str(&text).map_err(Error::from)
    });
    env.add_filter("comment", |text: String| -> Value {
        Value::from_safe_string(comment_lines(&text))
    });
    env.add_template("module.cil", MODULE_TEMPLATE)
        .expect("the module template parses");
    env.add_template("store-module.cil", STORE_MODULE_TEMPLATE)
        .expect("the store module template parses");
    env
}

/// The module's CIL text. Deterministic: the same plan gives the same bytes.
pub(crate) fn render_module(plan: &ModulePlan) -> Result<String, Error> {
    let context = minijinja::context! {
        levels => Serde(super::access::standalone_levels()),
        ..Serde(plan)
    };
    render_template("module.cil", &context)
}

/// Renders one of the templates with `value`, ending in a newline.
pub(super) fn render_template<T: serde::Serialize>(name: &str, value: &T) -> Result<String, Error> {
    let env = environment();
    let mut text = env.get_template(name)?.render(Serde(value))?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Free text as the body of `;; ` comment lines: control characters become
/// spaces, lines are wrapped at 76 columns, and every line after the first
/// starts with `;; ` so nothing can be read as CIL.
fn comment_lines(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in clean.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > 76 {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines.join("\n;; ")
}

#[cfg(test)]
mod tests {
    use super::comment_lines;

    #[test]
    fn comments_cannot_escape_into_cil() {
        assert_eq!(comment_lines("a\n(allow x y)"), "a (allow x y)");
        let long = "word ".repeat(30);
        assert!(comment_lines(&long)
            .lines()
            .skip(1)
            .all(|l| l.starts_with(";; ")));
    }
}
