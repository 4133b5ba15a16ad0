//! The slice of the Kubernetes API that hostPath checks read, as serde
//! structs. Unknown fields are ignored (real manifests carry many); every
//! value a finding may point at is `Spanned` so it keeps its line and column.
//!
//! Parsing is directed by `kind`: a document whose kind is not a workload
//! kind never has its `spec` interpreted, so a `PodSecurityPolicy` whose
//! `spec.volumes` is a list of strings is skipped, not rejected. That needs
//! `kind` to come before `spec`, as it does in every generator we know of
//! (kubectl, Helm, Kustomize sort or emit `kind` first); when `spec` comes
//! first the spec is read as if it were a workload's, and ignored later if
//! the kind turns out to be something else.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_saphyr::{Location, Spanned};

use super::kinds::{PodKind, PodSpecAt, OS_LABELS};

/// `List`, and the typed lists the API returns (`PodList`, `DeploymentList`…),
/// carry their objects in `items`.
pub(crate) fn is_list_kind(kind: &str) -> bool {
    kind == "List" || (kind.len() > 4 && kind.ends_with("List"))
}

/// One object of a YAML stream (a document, or an item of a list).
pub(crate) struct RawObject {
    pub kind: Option<Spanned<String>>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// `spec`, when it may belong to a workload.
    pub spec: Option<Spanned<Spec>>,
    /// Top-level `template` (PodTemplate), when it may belong to one.
    pub template: Option<PodTemplateSpec>,
    /// `items`, when the object may be a list.
    pub items: Option<Vec<Spanned<RawObject>>>,
    /// A top-level `$patch` (a strategic merge patch directive).
    pub patch: Option<Spanned<LenientString>>,
}

/// One operation of a JSON patch (RFC 6902), as kustomize reads them from
/// a patch file: a top-level sequence of these is a patch, not an object.
#[derive(Deserialize)]
pub(crate) struct PatchOperation {
    #[allow(dead_code)]
    pub op: String,
}

/// Union of the spec fields of all workload kinds; which part matters is
/// decided by the kind (see [`PodSpecAt`]).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Spec {
    // Pod.
    pub volumes: Option<Vec<Volume>>,
    pub containers: Option<Vec<Container>>,
    pub init_containers: Option<Vec<Container>>,
    pub ephemeral_containers: Option<Vec<Container>>,
    pub security_context: Option<Spanned<PodSecurityContext>>,
    pub node_selector: Option<NodeSelector>,
    pub affinity: Option<Affinity>,
    // Controllers and Job.
    pub template: Option<PodTemplateSpec>,
    // CronJob.
    pub job_template: Option<JobTemplateSpec>,
    // PersistentVolume.
    pub host_path: Option<HostPathVolumeSource>,
}

#[derive(Deserialize, Default)]
pub(crate) struct PodTemplateSpec {
    /// The pod spec, located so that tools can set its SELinux type.
    pub spec: Option<Box<Spanned<Spec>>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct JobTemplateSpec {
    pub spec: Option<Box<Spec>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Volume {
    pub name: Spanned<String>,
    pub host_path: Option<HostPathVolumeSource>,
}

pub(crate) struct HostPathVolumeSource {
    pub path: Spanned<String>,
    /// Where the `path` key is used. A value used after its key is written
    /// there (`path: /x`, `path: *alias`); one used at the same place came
    /// with its mapping through a merge key or an alias.
    pub path_key: Location,
    pub path_type: Option<Spanned<String>>,
}

impl<'de> Deserialize<'de> for HostPathVolumeSource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HostPathVisitor;
        impl<'de> Visitor<'de> for HostPathVisitor {
            type Value = HostPathVolumeSource;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a hostPath volume source (a mapping with `path`)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut path: Option<(Location, Spanned<String>)> = None;
                let mut path_type = None;
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    match key.value.as_str() {
                        "path" => path = Some((key.referenced, map.next_value()?)),
                        "type" => path_type = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let (path_key, path) = path.ok_or_else(|| de::Error::missing_field("path"))?;
                Ok(HostPathVolumeSource {
                    path,
                    path_key,
                    path_type,
                })
            }
        }
        deserializer.deserialize_map(HostPathVisitor)
    }
}

/// `nodeSelector`, reduced to its OS label. Other entries are not read, so
/// a value of another type there is not this tool's business.
#[derive(Default)]
pub(crate) struct NodeSelector {
    pub os: Option<Spanned<LenientString>>,
}

impl<'de> Deserialize<'de> for NodeSelector {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SelectorVisitor;
        impl<'de> Visitor<'de> for SelectorVisitor {
            type Value = NodeSelector;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a nodeSelector mapping")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(NodeSelector::default())
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut selector = NodeSelector::default();
                while let Some(key) = map.next_key::<LenientString>()? {
                    match key.0.as_deref() {
                        Some(label) if OS_LABELS.contains(&label) && selector.os.is_none() => {
                            selector.os = Some(map.next_value()?);
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(selector)
            }
        }
        deserializer.deserialize_any(SelectorVisitor)
    }
}

/// `affinity`, reduced to required node affinity.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Affinity {
    pub node_affinity: Option<NodeAffinity>,
}

#[derive(Deserialize)]
pub(crate) struct NodeAffinity {
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    pub required: Option<RequiredNodeSelector>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequiredNodeSelector {
    /// ORed: a node must match one term.
    pub node_selector_terms: Option<Vec<NodeSelectorTerm>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeSelectorTerm {
    /// ANDed within the term.
    pub match_expressions: Option<Vec<NodeSelectorRequirement>>,
}

#[derive(Deserialize)]
pub(crate) struct NodeSelectorRequirement {
    pub key: Option<LenientString>,
    pub operator: Option<LenientString>,
    pub values: Option<Vec<Spanned<LenientString>>>,
}

/// A scalar read as a string when it is one; any other value (a number, a
/// boolean, null, a collection) is accepted and read as `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LenientString(pub Option<String>);

impl<'de> Deserialize<'de> for LenientString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LenientVisitor;
        impl<'de> Visitor<'de> for LenientVisitor {
            type Value = LenientString;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LenientString(Some(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(LenientString(Some(v)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LenientString(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LenientString(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LenientString(None))
            }
            fn visit_i128<E: de::Error>(self, _: i128) -> Result<Self::Value, E> {
                Ok(LenientString(None))
            }
            fn visit_u128<E: de::Error>(self, _: u128) -> Result<Self::Value, E> {
                Ok(LenientString(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LenientString(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LenientString(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LenientString(None))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LenientString(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LenientString(None))
            }
        }
        deserializer.deserialize_any(LenientVisitor)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Container {
    pub name: Spanned<String>,
    pub volume_mounts: Option<Vec<VolumeMount>>,
    pub security_context: Option<SecurityContext>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VolumeMount {
    pub name: String,
    pub mount_path: Spanned<String>,
    pub read_only: Option<Spanned<bool>>,
    pub mount_propagation: Option<String>,
    pub sub_path: Option<Spanned<String>>,
    pub sub_path_expr: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SecurityContext {
    pub privileged: Option<Spanned<bool>>,
    pub se_linux_options: Option<Spanned<SeLinuxOptions>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSecurityContext {
    pub se_linux_options: Option<Spanned<SeLinuxOptions>>,
}

#[derive(Deserialize)]
pub(crate) struct SeLinuxOptions {
    #[serde(rename = "type")]
    pub selinux_type: Option<Spanned<String>>,
}

#[derive(Deserialize)]
struct ObjectMeta {
    name: Option<String>,
    namespace: Option<String>,
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RawObjectVisitor)
    }
}

struct RawObjectVisitor;

impl<'de> Visitor<'de> for RawObjectVisitor {
    type Value = RawObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object (a mapping with `kind`)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject, A::Error> {
        let mut object = RawObject {
            kind: None,
            name: None,
            namespace: None,
            spec: None,
            template: None,
            items: None,
            patch: None,
        };
        // Whether the fields below may matter, as far as the kind read so far
        // tells. `None`: kind not seen yet, so read them in case.
        let workload = |object: &RawObject| {
            object
                .kind
                .as_ref()
                .map(|k| PodKind::named(&k.value).map(|k| k.spec_at))
        };
        let list = |object: &RawObject| object.kind.as_ref().map(|k| is_list_kind(&k.value));
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "kind" => {
                    if object.kind.is_some() {
                        return Err(de::Error::duplicate_field("kind"));
                    }
                    object.kind = Some(map.next_value()?);
                }
                "metadata" => {
                    // `metadata: null` is allowed; any other shape is invalid.
                    if let Some(meta) = map.next_value::<Option<ObjectMeta>>()? {
                        object.name = meta.name;
                        object.namespace = meta.namespace;
                    }
                }
                "spec" => match workload(&object) {
                    Some(None) => {
                        map.next_value::<IgnoredAny>()?;
                    }
                    Some(Some(_)) | None => object.spec = map.next_value()?,
                },
                "template" => match workload(&object) {
                    Some(Some(PodSpecAt::Template)) | None => object.template = map.next_value()?,
                    Some(_) => {
                        map.next_value::<IgnoredAny>()?;
                    }
                },
                "items" => match list(&object) {
                    Some(true) | None => object.items = map.next_value()?,
                    Some(false) => {
                        map.next_value::<IgnoredAny>()?;
                    }
                },
                "$patch" => object.patch = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(object)
    }
}
