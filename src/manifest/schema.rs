//! The JSON Schema (draft 2020-12) of a layout manifest, derived from the
//! parser's raw types (`raw`, `#[derive(JsonSchema)]`). The functions here
//! give the schemas of single values: the enums come from the lists
//! `validate` matches against, and each pattern is tested to accept exactly
//! the strings `validate` accepts (see the tests at the end of `validate`).
//!
//! What a schema cannot say — rules across fields or entries (duplicate
//! paths, unknown domain keys, a workload granted a protected path, types
//! shared with different rules, names of the base policy) — stays with
//! `semanifest layout validate`. `docs/layout-schema.md` lists both sides.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

use super::raw::{Levels, RawDomain, RawLayout};
use super::validate::{API_VERSION, KIND};
use crate::model::{Access, Lifecycle, Propagation};

/// Where the schema says it lives; editors key their caches on it.
pub const SCHEMA_ID: &str = "https://semanifest.io/schemas/layout-v1.json";

/// `metadata.name`: a DNS label of at most 63 characters.
pub const LAYOUT_NAME_PATTERN: &str = "^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$";
/// A domain key (`spec.domains`, `access`, `transitions`).
pub const DOMAIN_KEY_PATTERN: &str = "^[a-z][a-z0-9_-]*$";
/// A SELinux type name as this project writes them.
pub const TYPE_NAME_PATTERN: &str = "^[a-z][a-z0-9_]*_t$";
/// An octal mode of three or four digits.
pub const MODE_PATTERN: &str = "^[0-7]{3,4}$";
/// A user name, or numeric `uid:gid` (each at most 10 digits; values above
/// 2^32-1 are refused by `validate` only).
pub const OWNER_PATTERN: &str = r"^(?:[a-z_][a-z0-9_-]{0,31}|\+?[0-9]{1,10}:\+?[0-9]{1,10})$";
/// A service unit's name (`containerd.service`, `kubelet@main.service`);
/// at most [`UNIT_NAME_MAX`] characters, as systemd allows.
pub const UNIT_NAME_PATTERN: &str = r"^[A-Za-z0-9:_.-]+(?:@[A-Za-z0-9:_.-]+)?\.service$";
pub const UNIT_NAME_MAX: usize = 255;
/// An ExecStart= command: an absolute path, then arguments; printable
/// ASCII on one line.
pub const EXEC_PATTERN: &str = r"^/[\x21-\x7e]+(?: [\x20-\x7e]*)?$";
/// A tmpfs size: bytes with an optional k/m/g suffix (no leading zero), or
/// a percentage of RAM from 1 to 100.
pub const TMPFS_SIZE_PATTERN: &str = r"^(?:[1-9][0-9]{0,15}[kmgKMG]?|(?:[1-9][0-9]?|100)%)$";
/// An absolute normalised path of printable ASCII without spaces or `"`:
/// components are never empty, `.` or `..`, and there is no trailing `/`.
/// (`\x21\x23-\x2d\x30-\x7e` is printable ASCII less `"`, `.` and `/`; with
/// `\x2e` it includes `.`.)
pub const PATH_PATTERN: &str = concat!(
    r"^(?:/(?:[\x21\x23-\x2d\x30-\x7e][\x21\x23-\x2e\x30-\x7e]*",
    r"|\.[\x21\x23-\x2d\x30-\x7e][\x21\x23-\x2e\x30-\x7e]*",
    r"|\.\.[\x21\x23-\x2e\x30-\x7e]+))+$"
);

/// The whole schema, as `semanifest layout schema` prints it.
pub fn layout_schema() -> Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<RawLayout>();
    schema.insert("$id".to_owned(), Value::from(SCHEMA_ID));
    let mut value = schema.to_value();
    fix_defaults(&mut value);
    value
}

/// The derive gives every `#[serde(default)]` option `"default": null`,
/// which editors would offer and which fails the field's own type. Absent
/// means `false` for a flag and `persistent` for a lifecycle; other
/// defaults are dropped.
fn fix_defaults(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
                let lifecycles = Value::from(
                    Lifecycle::ALL
                        .iter()
                        .map(|(name, _)| *name)
                        .collect::<Vec<_>>(),
                );
                if map.get("type") == Some(&Value::from("boolean")) {
                    map.insert("default".to_owned(), Value::from(false));
                } else if map.get("enum") == Some(&lifecycles) {
                    map.insert(
                        "default".to_owned(),
                        Value::from(Lifecycle::default().as_str()),
                    );
                }
            }
            map.values_mut().for_each(fix_defaults);
        }
        Value::Array(items) => items.iter_mut().for_each(fix_defaults),
        _ => {}
    }
}

pub(super) fn api_version(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "const": API_VERSION })
}

pub(super) fn kind(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "const": KIND })
}

pub(super) fn layout_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": LAYOUT_NAME_PATTERN })
}

pub(super) fn text(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string" })
}

pub(super) fn flag(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "boolean" })
}

pub(super) fn type_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": TYPE_NAME_PATTERN })
}

pub(super) fn path(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": PATH_PATTERN })
}

pub(super) fn mode(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": MODE_PATTERN })
}

pub(super) fn unit_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": UNIT_NAME_PATTERN, "maxLength": UNIT_NAME_MAX })
}

pub(super) fn exec(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": EXEC_PATTERN })
}

pub(super) fn tmpfs_size(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": TMPFS_SIZE_PATTERN })
}

pub(super) fn owner(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": OWNER_PATTERN })
}

fn domain_key() -> Value {
    serde_json::json!({ "type": "string", "pattern": DOMAIN_KEY_PATTERN })
}

pub(super) fn domain_keys(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "array", "items": domain_key() })
}

pub(super) fn domains(generator: &mut SchemaGenerator) -> Schema {
    let domain = generator.subschema_for::<RawDomain>();
    json_schema!({
        "type": "object",
        "propertyNames": domain_key(),
        "additionalProperties": domain,
    })
}

pub(super) fn access(generator: &mut SchemaGenerator) -> Schema {
    let levels = generator.subschema_for::<Levels>();
    json_schema!({
        "type": "object",
        "propertyNames": domain_key(),
        "additionalProperties": levels,
    })
}

pub(super) fn lifecycle(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = Lifecycle::ALL.iter().map(|(name, _)| *name).collect();
    json_schema!({ "type": "string", "enum": names })
}

pub(super) fn propagation(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = Propagation::ALL.iter().map(|(name, _)| *name).collect();
    json_schema!({ "type": "string", "enum": names })
}

impl JsonSchema for Levels {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Levels".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let level = serde_json::json!({ "type": "string", "enum": Access::LEVELS });
        json_schema!({
            "description": "An access level, or a non-empty list of them ([read, exec]).",
            "anyOf": [level, { "type": "array", "items": level, "minItems": 1 }],
        })
    }
}
