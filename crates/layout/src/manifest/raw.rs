//! The manifest exactly as written: serde types that mirror the YAML, with a
//! position on every value a rule may point at. No semantics here beyond
//! "this field exists and has this shape"; `validate` does the rest.
//!
//! The same types derive the JSON Schema (`semanifest layout schema`): field
//! names, required fields and unknown-field refusal come from the serde
//! attributes, descriptions from the doc comments below, and value syntax
//! (patterns, enums) from `schema`, whose patterns are tested to agree with
//! `validate`; [`layout_schema`] is the result.

use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_saphyr::Spanned;

use super::schema::{self, domain_key, SCHEMA_ID};
use crate::model::{AccessLevel, Lifecycle};

/// A semanifest layout manifest: which directory of a node's /var belongs
/// to whom, compiled into SELinux policy and file contexts.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "semanifest layout manifest")]
pub(crate) struct RawLayout {
    /// The manifest format version.
    #[schemars(schema_with = "schema::api_version")]
    pub api_version: Spanned<String>,
    /// Always `Layout`.
    #[schemars(schema_with = "schema::kind")]
    pub kind: Spanned<String>,
    pub metadata: RawMetadata,
    pub spec: RawSpec,
}

/// What the layout is called.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMetadata {
    /// The layout's name, a DNS label (`structured-var`); the CIL module is
    /// named after it with `-` replaced by `_`.
    #[schemars(schema_with = "schema::layout_name")]
    pub name: Spanned<String>,
    /// Free text, carried into the module's header comment.
    #[serde(default)]
    #[schemars(schema_with = "schema::text")]
    pub description: Option<String>,
}

/// The domains and the paths of the layout.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSpec {
    /// The process domains the layout speaks of, by key (`etcd`, `pods`);
    /// `access` and `transitions` refer to these keys.
    #[schemars(schema_with = "domains")]
    pub domains: Spanned<Entries<RawDomain>>,
    /// The paths of the layout; each rule covers its subtree except deeper
    /// paths the manifest names.
    pub paths: Vec<RawPath>,
    /// How a node's systemd boots the layout (the units `semanifest units`
    /// and `build --install-root` write).
    #[serde(default)]
    pub node: Option<RawNode>,
    /// How the layout is built as one module for a distribution's policy
    /// store (`build --target module`, `check --against`); the standalone
    /// policy ignores it.
    #[serde(default)]
    pub store: Option<RawStore>,
    /// Workloads accepted as privileged (`privileged: true`, unconfined):
    /// `check --k8s` reports them as notes with the reason instead of
    /// errors. Their protected paths stay errors.
    #[serde(default, rename = "privilegedExceptions")]
    pub privileged_exceptions: Vec<RawPrivilegedException>,
}

/// A workload the layout accepts as privileged, by namespace and name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPrivilegedException {
    /// The workload's `metadata.namespace` (a manifest without one is
    /// matched as `default`).
    #[schemars(schema_with = "schema::namespace")]
    pub namespace: Spanned<String>,
    /// The workload's `metadata.name` (the DaemonSet, Deployment, Pod…).
    #[schemars(schema_with = "schema::object_name")]
    pub name: Spanned<String>,
    /// Why it must run unconfined: shown beside every note it excuses.
    #[schemars(schema_with = "schema::reason")]
    pub reason: Spanned<String>,
}

/// Settings for `--target module`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawStore {
    /// Whether a grant only a boolean gives counts as access to a protected
    /// path: `always` (default: `setsebool` can turn it on) or `byDefault`
    /// (only when the store's default turns it on; one off by default is
    /// reported, not refused).
    #[serde(default)]
    #[schemars(schema_with = "schema::boolean_grants")]
    pub boolean_grants: Option<Spanned<String>>,
}

/// How a node's systemd boots the layout.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNode {
    /// Start the runtime units inside one mount namespace pinned at
    /// /run/kubens/mnt (kubens.service), so the mounts they make stay out
    /// of the host's mount table; disabling kubens.service starts them on
    /// the host again.
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub kubens: Option<Spanned<bool>>,
    /// The container runtime and kubelet units: each starts only once the
    /// layout is placed and /var labelled (a failure keeps it from
    /// starting), and with kubens inside the namespace. Without this list:
    /// containerd.service, crio.service and kubelet.service with their
    /// packages' commands.
    #[serde(default)]
    pub runtime: Option<Vec<RawRuntimeUnit>>,
}

/// A runtime unit.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRuntimeUnit {
    /// The unit's name (`containerd.service`).
    #[schemars(schema_with = "schema::unit_name")]
    pub unit: Spanned<String>,
    /// The unit's command, as its ExecStart= line writes it (an absolute
    /// path, then the arguments; `$VAR` expands from the unit's
    /// environment). kubens starts it through kubensenter, so it is needed
    /// with `kubens: true`.
    #[serde(default)]
    #[schemars(schema_with = "schema::exec")]
    pub exec: Option<Spanned<String>>,
}

/// A process domain.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDomain {
    /// The domain's SELinux process type (`etcd_t`); declared by the module
    /// unless the base policy has it.
    #[serde(rename = "type")]
    #[schemars(schema_with = "schema::type_name")]
    pub type_name: Spanned<String>,
    /// MCS-separated hostPath pods: never trusted, never granted a protected
    /// path, never able to transition into a domain that is.
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub workload: Option<Spanned<bool>>,
    /// A node agent (CSI node plugin, CNI agent, log reader, monitor,
    /// device plugin): a pod the container runtime starts in this domain
    /// (`seLinuxOptions.type`), confined to what the layout grants it:
    /// never trusted, never granted a protected path.
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub agent: Option<Spanned<bool>>,
    /// Keep the agent's containers apart by MCS categories, as pods are
    /// (agents only; default false: an agent reads and writes across pods,
    /// and is held to its own categories on container images alone).
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub mcs: Option<Spanned<bool>>,
    /// May touch everything (relabel, backup): left out of every neverallow.
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub trusted: Option<Spanned<bool>>,
    /// Domains this one may start (process transition), by key.
    #[serde(default)]
    #[schemars(schema_with = "schema::domain_keys")]
    pub transitions: Vec<Spanned<String>>,
    /// Domains whose unix stream sockets this one may connect to, by key
    /// (kubelet to a CSI plugin's socket, a device plugin to kubelet's);
    /// the socket files themselves are reached through the paths granted.
    #[serde(default)]
    #[schemars(schema_with = "schema::domain_keys")]
    pub connect: Vec<Spanned<String>>,
    /// Host paths outside the layout, by class (agents only): kernel
    /// filesystems, devices, the runtime's socket, CNI files, kernel
    /// modules, mounts; each class admits the levels its documentation
    /// lists (`sysfs: read`, `block-devices: write`).
    #[serde(default)]
    #[schemars(schema_with = "host")]
    pub host: Option<Spanned<Entries<Spanned<Levels>>>>,
    /// Linux capabilities beyond the default set of a container (agents
    /// only), by their SELinux names (`sys_admin`, `net_admin`); those that
    /// would step around the policy are refused.
    #[serde(default)]
    #[schemars(schema_with = "schema::capabilities")]
    pub capabilities: Vec<Spanned<String>>,
}

/// One path and the rule for its subtree.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RawPath {
    /// Absolute, normalised path (`/var/lib/etcd`): printable ASCII without
    /// spaces or quotes, no `.` or `..` components, no trailing `/`.
    #[schemars(schema_with = "schema::path")]
    pub path: Spanned<String>,
    /// The file type that labels the subtree (`etcd_var_t`).
    #[serde(rename = "type")]
    #[schemars(schema_with = "schema::type_name")]
    pub type_name: Spanned<String>,
    /// The type is the base policy's own and is used on purpose.
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub base_type: Option<Spanned<bool>>,
    /// Free text, carried into the module as a comment.
    #[serde(default)]
    #[schemars(schema_with = "schema::text")]
    pub description: Option<String>,
    /// Octal mode as a quoted string (`"0750"`).
    #[serde(default)]
    #[schemars(schema_with = "schema::mode")]
    pub mode: Option<Spanned<String>>,
    /// A user name (`etcd`) or numeric `uid:gid` (`1000:1000`).
    #[serde(default)]
    #[schemars(schema_with = "schema::owner")]
    pub owner: Option<Spanned<String>>,
    /// What each domain (by key) may do here: one level or a list of them.
    /// `write` includes `read` and `append`, which include `search`; `exec`
    /// combines with any of them.
    #[serde(default)]
    #[schemars(schema_with = "access")]
    pub access: Option<Spanned<Entries<Spanned<Levels>>>>,
    /// Nobody but the domains granted here, ever: compiled to a neverallow
    /// that secilc proves over the whole policy.
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub protected: Option<Spanned<bool>>,
    /// A root that Kubernetes hostPath volumes may use.
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub host_path: Option<Spanned<bool>>,
    /// Its content may be deleted by node cleanup.
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub removable: Option<Spanned<bool>>,
    /// How long the content lives: `persistent` (default), `ephemeral`
    /// (lost at boot) or `cache` (may be dropped at any time).
    #[serde(default)]
    #[schemars(schema_with = "schema::lifecycle")]
    pub lifecycle: Option<Spanned<String>>,
    /// How the path is mounted.
    #[serde(default)]
    pub mount: Option<RawMount>,
    /// Store domains that own the path on a distribution's policy
    /// (`auditd_t` for /var/log/audit): with `--target module` each keeps,
    /// on the path's type, every access the store gave it on the path's old
    /// type, also when the path is protected. The standalone policy ignores
    /// them.
    #[serde(default)]
    #[schemars(schema_with = "schema::type_names")]
    pub store_owners: Vec<Spanned<String>>,
    /// A project quota on the subtree (ext4 with `-O quota,project`
    /// mounted `prjquota`, or XFS mounted `prjquota`): `semanifest apply`
    /// tags every object below with the path's project ID and sets the
    /// limits; `semanifest df` shows the use.
    #[serde(default)]
    #[schemars(schema_with = "capacity")]
    pub capacity: Option<Spanned<RawCapacity>>,
}

/// Limits on what a path's subtree may hold.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCapacity {
    /// The most bytes of blocks the subtree may take: bytes, or a number
    /// with a binary (`Ki`, `Mi`, `Gi`, `Ti`, `Pi`) or decimal (`k`, `M`,
    /// `G`, `T`, `P`) suffix, as Kubernetes writes quantities (`20Gi`).
    /// Without it, the use is counted but not limited.
    #[serde(default)]
    #[schemars(schema_with = "schema::capacity_size")]
    pub limit: Option<Spanned<String>>,
    /// The most objects (files, directories, links) the subtree may hold.
    #[serde(default)]
    #[schemars(schema_with = "schema::capacity_count")]
    pub inodes: Option<Spanned<u64>>,
    /// The filesystem project ID, when it must be a given one. Without it,
    /// the ID is derived from the path (see docs/manifest.md), so it never
    /// moves.
    #[serde(default)]
    #[schemars(schema_with = "schema::project_id")]
    pub project: Option<Spanned<u64>>,
}

/// Mount options of a path.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMount {
    /// Mount propagation of the path's mount point.
    #[serde(default)]
    #[schemars(schema_with = "schema::propagation")]
    pub propagation: Option<Spanned<String>>,
    /// A tmpfs is mounted here at boot (declare `lifecycle: ephemeral`),
    /// with the path's type as its context and the path's mode (default
    /// 0755).
    #[serde(default)]
    #[schemars(schema_with = "schema::flag")]
    pub tmpfs: Option<Spanned<bool>>,
    /// The tmpfs's size: bytes with an optional k, m or g suffix, or a
    /// percentage of RAM (`20%`). Without it, the kernel's default (half of
    /// RAM).
    #[serde(default)]
    #[schemars(schema_with = "schema::tmpfs_size")]
    pub size: Option<Spanned<String>>,
    /// Per-mount flags: the path is bound onto itself and remounted with
    /// them before the runtime starts (a tmpfs is mounted with them).
    #[serde(default)]
    #[schemars(schema_with = "schema::mount_options")]
    pub options: Option<Vec<Spanned<String>>>,
}

/// A mapping kept in source order with the position of every key, so rules
/// about keys (an unknown domain in `access`) can point at the key itself.
/// Duplicate keys are rejected by the YAML layer before we see them.
#[derive(Debug)]
pub(crate) struct Entries<V>(pub Vec<(Spanned<String>, V)>);

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
pub(crate) struct Levels(pub Vec<String>);

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

fn domains(generator: &mut SchemaGenerator) -> Schema {
    let domain = generator.subschema_for::<RawDomain>();
    json_schema!({
        "type": "object",
        "propertyNames": domain_key(),
        "additionalProperties": domain,
    })
}

fn capacity(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<RawCapacity>()
}

fn host(generator: &mut SchemaGenerator) -> Schema {
    let levels = generator.subschema_for::<Levels>();
    json_schema!({
        "type": "object",
        "propertyNames": schema::host_class(),
        "additionalProperties": levels,
    })
}

fn access(generator: &mut SchemaGenerator) -> Schema {
    let levels = generator.subschema_for::<Levels>();
    json_schema!({
        "type": "object",
        "propertyNames": domain_key(),
        "additionalProperties": levels,
    })
}

impl JsonSchema for Levels {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Levels".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names = AccessLevel::ALL.map(AccessLevel::name);
        let level = serde_json::json!({ "type": "string", "enum": names });
        json_schema!({
            "description": "An access level, or a non-empty list of them ([read, exec]).",
            "anyOf": [level, { "type": "array", "items": level, "minItems": 1 }],
        })
    }
}
