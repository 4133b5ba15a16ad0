//! Layout manifests: YAML text → validated [`Layout`].
//!
//! Invariants: never touches the filesystem (callers hand in the text, see
//! [`read_source`]); never panics on any input; reports positions as 1-based
//! line:column of the offending YAML node. Two phases: the YAML shape
//! (syntax, unknown fields, duplicate keys, wrong types — the first error
//! stops this phase, as the document cannot be read further) and the rules of
//! `docs/manifest.md` (all reported together).

pub mod codes;
mod raw;
pub mod rules;
pub mod schema;
mod validate;

use std::collections::BTreeSet;
use std::path::Path;

pub use raw::layout_schema;

use crate::diag::{Diagnostic, Pos, Report, Source};
use crate::model::host::{StoreFamily, StoreGrants};
use crate::model::Layout;

/// The structured `/var` every node gets unless told otherwise.
pub const DEFAULT_LAYOUT: &str = include_str!("../../../../layouts/structured-var.yaml");
/// How the embedded layout is named in diagnostics.
pub const DEFAULT_LAYOUT_NAME: &str = "<embedded default layout>";

/// Manifests are small; anything larger is a mistake (or an attack on the
/// parser), refused before parsing.
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;

/// What the manifest rules need to know about the base policy.
#[derive(Clone, Debug, Default)]
pub struct BaseFacts {
    /// Every type the base policy declares.
    pub types: BTreeSet<String>,
    /// A layout type the base already has is adopted without `baseType:
    /// true`: true against a distribution's store, where `/var` is `var_t`
    /// already and the module only adds to what the store says.
    pub adopt_existing: bool,
}

/// A successfully compiled manifest and its warnings.
#[derive(Clone, Debug)]
pub struct Parsed {
    pub layout: Layout,
    pub source: Source,
    pub warnings: Vec<Diagnostic>,
}

/// Parses and validates a manifest. On failure the [`Report`] carries every
/// diagnostic of the failing phase.
pub fn parse(source: Source, base: &BaseFacts) -> Result<Parsed, Report> {
    if source.text.len() > MAX_MANIFEST_BYTES {
        let message = format!(
            "manifest is {} bytes; the limit is {MAX_MANIFEST_BYTES}",
            source.text.len()
        );
        return Err(Report {
            diagnostics: vec![Diagnostic::error(
                &codes::TOO_LARGE,
                Pos::default(),
                message,
            )],
            source,
        });
    }
    let options = serde_saphyr::options! {
        strict_booleans: true,
    };
    let raw: raw::RawLayout = match serde_saphyr::from_str_with_options(&source.text, options) {
        Ok(raw) => raw,
        Err(error) => {
            let diagnostic = yaml_diagnostic(&error);
            return Err(Report {
                source,
                diagnostics: vec![diagnostic],
            });
        }
    };
    match validate::validate(&raw, base) {
        Ok((layout, warnings)) => Ok(Parsed {
            layout,
            source,
            warnings,
        }),
        Err(diagnostics) => Err(Report {
            source,
            diagnostics,
        }),
    }
}

/// A parsed layout, held to what a store of `family` can grant: a host
/// class the store refuses (its type for the class's paths is shared with
/// files no agent may read) is an error at the grant, saying why.
pub fn for_store(parsed: Parsed, family: StoreFamily) -> Result<Parsed, Report> {
    let mut diagnostics = Vec::new();
    for domain in &parsed.layout.domains {
        for grant in &domain.host {
            if let StoreGrants::Refused(why) = grant.class.on_store(family) {
                diagnostics.push(
                    Diagnostic::error(
                        &codes::HOST_CLASS_STORE,
                        grant.pos,
                        format!(
                            "host class `{}` of `{}` cannot be granted on a {} store: {why}",
                            grant.class.name,
                            domain.key,
                            family.describe()
                        ),
                    )
                    .with_help(format!(
                        "drop `{}` from `{}` for this store (docs/agents.md says what to do \
                         instead), or build the standalone policy",
                        grant.class.name, domain.key
                    )),
                );
            }
        }
    }
    if diagnostics.is_empty() {
        return Ok(parsed);
    }
    Err(Report {
        source: parsed.source,
        diagnostics,
    })
}

/// The embedded default layout, parsed.
pub fn default_layout(base: &BaseFacts) -> Result<Parsed, Report> {
    parse(Source::new(DEFAULT_LAYOUT_NAME, DEFAULT_LAYOUT), base)
}

/// Reads a manifest file into a [`Source`] named as the user gave it.
pub fn read_source(path: &Path) -> Result<Source, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_owned(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8 {
        path: path.to_owned(),
        offset: e.utf8_error().valid_up_to(),
    })?;
    Ok(Source::new(path.display().to_string(), text))
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not UTF-8 (first invalid byte at offset {offset})", path.display())]
    NotUtf8 {
        path: std::path::PathBuf,
        offset: usize,
    },
}

/// Turns a YAML-layer error into our diagnostic form, keeping its position
/// and dropping the crate's own "at line N, column M" suffix.
fn yaml_diagnostic(error: &serde_saphyr::Error) -> Diagnostic {
    let pos = error
        .location()
        .filter(|l| l.line() > 0)
        .map(|l| Pos::of(&l, 1))
        .unwrap_or_default();
    let mut message = error.without_snippet().to_string();
    if let Some(cut) = message.rfind(" at line ") {
        message.truncate(cut);
    }
    let message = message.replace(", set DuplicateKeyPolicy in Options if acceptable", "");
    let help = if message.starts_with("unknown field") {
        Some("check the spelling against `semanifest layout show`, which prints a complete example")
    } else if message.contains("boolean") {
        Some("write `true` or `false`")
    } else {
        None
    };
    let diagnostic = Diagnostic::error(&codes::YAML, pos, message);
    match help {
        Some(help) => diagnostic.with_help(help),
        None => diagnostic,
    }
}
