//! The manifest exactly as written: serde types that mirror the YAML, with a
//! position on every value a rule may point at. No semantics here beyond
//! "this field exists and has this shape"; `validate` does the rest.

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_saphyr::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawLayout {
    pub api_version: Spanned<String>,
    pub kind: Spanned<String>,
    pub metadata: RawMetadata,
    pub spec: RawSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetadata {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub domains: Spanned<Entries<RawDomain>>,
    pub paths: Vec<RawPath>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDomain {
    #[serde(rename = "type")]
    pub type_name: Spanned<String>,
    #[serde(default)]
    pub workload: Option<Spanned<bool>>,
    #[serde(default)]
    pub trusted: Option<Spanned<bool>>,
    /// Domains this one may start (process transition).
    #[serde(default)]
    pub transitions: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawPath {
    pub path: Spanned<String>,
    #[serde(rename = "type")]
    pub type_name: Spanned<String>,
    #[serde(default)]
    pub base_type: Option<Spanned<bool>>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub mode: Option<Spanned<String>>,
    #[serde(default)]
    pub owner: Option<Spanned<String>>,
    #[serde(default)]
    pub access: Option<Spanned<Entries<Spanned<Levels>>>>,
    #[serde(default)]
    pub protected: Option<Spanned<bool>>,
    #[serde(default)]
    pub host_path: Option<Spanned<bool>>,
    #[serde(default)]
    pub removable: Option<Spanned<bool>>,
    #[serde(default)]
    pub lifecycle: Option<Spanned<String>>,
    #[serde(default)]
    pub mount: Option<RawMount>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMount {
    #[serde(default)]
    pub propagation: Option<Spanned<String>>,
    #[serde(default)]
    pub tmpfs: Option<Spanned<bool>>,
}

/// A mapping kept in source order with the position of every key, so rules
/// about keys (an unknown domain in `access`) can point at the key itself.
/// Duplicate keys are rejected by the YAML layer before we see them.
#[derive(Debug)]
pub struct Entries<V>(pub Vec<(Spanned<String>, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for EntriesVisitor<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor(std::marker::PhantomData))
    }
}

/// An access grant as written: one level (`write`) or a list (`[read, exec]`).
#[derive(Debug)]
pub struct Levels(pub Vec<String>);

impl<'de> Deserialize<'de> for Levels {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LevelsVisitor;
        impl<'de> Visitor<'de> for LevelsVisitor {
            type Value = Levels;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an access level (search, read, append, write, exec) or a list of them")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Levels, E> {
                Ok(Levels(vec![v.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Levels, A::Error> {
                let mut levels = Vec::new();
                while let Some(level) = seq.next_element::<String>()? {
                    levels.push(level);
                }
                Ok(Levels(levels))
            }
        }
        deserializer.deserialize_any(LevelsVisitor)
    }
}
