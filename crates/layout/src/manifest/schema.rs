//! The syntax of single values of a layout manifest, for its JSON Schema
//! (draft 2020-12, derived from the parser's raw types by
//! [`layout_schema`](super::layout_schema)): the header constants, the
//! patterns, and the schema of each kind of value that `raw` names in its
//! `schema_with` attributes. The enums come from the lists `validate`
//! matches against, and each pattern is tested to accept exactly the
//! strings `validate` accepts (see the tests at the end of `validate`).
//!
//! What a schema cannot say — rules across fields or entries (duplicate
//! paths, unknown domain keys, a workload granted a protected path, types
//! shared with different rules, names of the base policy) — stays with
//! `semanifest layout validate`. `docs/layout-schema.md` lists both sides.

use schemars::{json_schema, Schema, SchemaGenerator};
use serde_json::Value;

use crate::model::capability::CAPABILITIES;
use crate::model::host::HOST_CLASSES;
use crate::model::{BooleanGrants, Capacity, Lifecycle, MountFlag, Propagation};

/// The `apiVersion` this semanifest reads.
pub(crate) const API_VERSION: &str = "semanifest.io/v1";
/// The `kind` of a layout manifest.
pub(crate) const KIND: &str = "Layout";

/// Where the schema says it lives; editors key their caches on it.
pub(crate) const SCHEMA_ID: &str = "https://semanifest.io/schemas/layout-v1.json";

/// `metadata.name`: a DNS label of at most 63 characters.
pub(crate) const LAYOUT_NAME_PATTERN: &str = "^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$";
/// A domain key (`spec.domains`, `access`, `transitions`).
pub(crate) const DOMAIN_KEY_PATTERN: &str = "^[a-z][a-z0-9_-]*$";
/// A SELinux type name as this project writes them.
pub(crate) const TYPE_NAME_PATTERN: &str = "^[a-z][a-z0-9_]*_t$";
/// A Kubernetes object name (`metadata.name` of a workload): a DNS
/// subdomain of at most 253 characters.
pub(crate) const OBJECT_NAME_PATTERN: &str = r"^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$";
/// A reason: some text that is not only whitespace.
pub(crate) const REASON_PATTERN: &str = r"\S";
/// An octal mode of three or four digits.
pub(crate) const MODE_PATTERN: &str = "^[0-7]{3,4}$";
/// A user name, or numeric `uid:gid` (each at most 10 digits; values above
/// 2^32-1 are refused by `validate` only).
pub(crate) const OWNER_PATTERN: &str =
    r"^(?:[a-z_][a-z0-9_-]{0,31}|\+?[0-9]{1,10}:\+?[0-9]{1,10})$";
/// A service unit's name (`containerd.service`, `kubelet@main.service`);
/// at most [`UNIT_NAME_MAX`] characters, as systemd allows.
pub(crate) const UNIT_NAME_PATTERN: &str = r"^[A-Za-z0-9:_.-]+(?:@[A-Za-z0-9:_.-]+)?\.service$";
pub(crate) const UNIT_NAME_MAX: usize = 255;
/// An ExecStart= command: an absolute path, then arguments; printable
/// ASCII on one line.
pub(crate) const EXEC_PATTERN: &str = r"^/[\x21-\x7e]+(?: [\x20-\x7e]*)?$";
/// A tmpfs size: bytes with an optional k/m/g suffix (no leading zero), or
/// a percentage of RAM from 1 to 100.
pub(crate) const TMPFS_SIZE_PATTERN: &str = r"^(?:[1-9][0-9]{0,15}[kmgKMG]?|(?:[1-9][0-9]?|100)%)$";
/// A capacity's byte limit: bytes, or a number with a binary or decimal
/// suffix (no leading zero; at most 16 digits).
pub(crate) const CAPACITY_SIZE_PATTERN: &str = r"^[1-9][0-9]{0,15}(?:[KMGTP]i|[kMGTP])?$";
/// The largest explicit project ID: 2^32 - 2 (2^32 - 1 is the kernel's
/// "no ID").
pub(crate) const PROJECT_MAX: u64 = u32::MAX as u64 - 1;

/// An absolute normalised path of printable ASCII without spaces or `"`:
/// components are never empty, `.` or `..`, and there is no trailing `/`.
/// (`\x21\x23-\x2d\x30-\x7e` is printable ASCII less `"`, `.` and `/`; with
/// `\x2e` it includes `.`.)
pub(crate) const PATH_PATTERN: &str = concat!(
    r"^(?:/(?:[\x21\x23-\x2d\x30-\x7e][\x21\x23-\x2e\x30-\x7e]*",
    r"|\.[\x21\x23-\x2d\x30-\x7e][\x21\x23-\x2e\x30-\x7e]*",
    r"|\.\.[\x21\x23-\x2e\x30-\x7e]+))+$"
);

pub(super) fn api_version(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "const": API_VERSION })
}

pub(super) fn kind(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "const": KIND })
}

pub(super) fn layout_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": LAYOUT_NAME_PATTERN })
}

/// A namespace is a DNS label, as a layout name is.
pub(super) fn namespace(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": LAYOUT_NAME_PATTERN })
}

pub(super) fn object_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": OBJECT_NAME_PATTERN })
}

pub(super) fn reason(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": REASON_PATTERN })
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

pub(super) fn type_names(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "string", "pattern": TYPE_NAME_PATTERN },
        "uniqueItems": true,
    })
}

pub(super) fn boolean_grants(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = BooleanGrants::ALL.iter().map(|(name, _)| *name).collect();
    json_schema!({ "type": "string", "enum": names })
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

pub(super) fn domain_key() -> Value {
    serde_json::json!({ "type": "string", "pattern": DOMAIN_KEY_PATTERN })
}

pub(super) fn domain_keys(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "array", "items": domain_key() })
}

pub(super) fn lifecycle(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = Lifecycle::ALL.iter().map(|(name, _)| *name).collect();
    json_schema!({ "type": "string", "enum": names })
}

pub(super) fn propagation(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = Propagation::ALL.iter().map(|(name, _)| *name).collect();
    json_schema!({ "type": "string", "enum": names })
}

pub(super) fn capacity_size(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": CAPACITY_SIZE_PATTERN })
}

pub(super) fn capacity_count(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer", "minimum": 1 })
}

pub(super) fn project_id(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "integer",
        "minimum": 1,
        "maximum": PROJECT_MAX,
        "description": format!(
            "Without it: derived from the path, in [{}, {}).",
            Capacity::DERIVED_BASE,
            2 * u64::from(Capacity::DERIVED_BASE)
        ),
    })
}

pub(super) fn mount_options(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = MountFlag::ALL.iter().map(|(name, _)| *name).collect();
    json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": names },
        "uniqueItems": true,
    })
}

/// A host class name (`spec.domains.*.host`); which levels each admits is
/// `validate`'s to say.
pub(super) fn host_class() -> Value {
    let names: Vec<&str> = HOST_CLASSES.iter().map(|class| class.name).collect();
    serde_json::json!({ "type": "string", "enum": names })
}

/// The capabilities an agent may be granted (refused ones are left out).
pub(super) fn capabilities(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = CAPABILITIES
        .iter()
        .filter(|c| c.refused.is_none())
        .map(|c| c.name)
        .collect();
    json_schema!({ "type": "array", "items": { "type": "string", "enum": names } })
}
