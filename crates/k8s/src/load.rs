//! Reading Kubernetes YAML: [`parse_source`] turns one file's text into
//! [`Manifests`] without touching the filesystem, one document at a time
//! ([`super::stream`]), so a document that cannot be read is reported on
//! its own and the others are still read.

use std::sync::Arc;

use serde::de::IgnoredAny;
use serde_saphyr::{Budget, DuplicateKeyPolicy, MessageFormatter, Spanned, UserMessageFormatter};

use super::api::{self, is_list_kind, RawObject, Spec};
use super::kinds::{PodKind, PodSpecAt, OS_LABELS};
use super::stream;
use super::workload::{
    ContainerKind, ContainerSpot, HostPathMount, HostPathVolume, InvalidDocument, Invalidity,
    Manifests, PatchKind, PathOrigin, SelinuxSpots, SkippedObject, SourceFile, Sourced, TypeSpot,
    Workload,
};
use layout::diag::Pos;

/// YAML options shared by every Kubernetes input.
fn yaml_options(strict: bool) -> serde_saphyr::Options {
    let mut budget = Budget::default();
    // The defaults suit one config file; a rendered chart's workload runs to
    // many more nodes. These grow only linearly with the document size; the
    // nesting and alias limits that stop YAML bombs stay at their defaults.
    budget.max_nodes = 1 << 24;
    budget.max_events = 1 << 26;
    serde_saphyr::options! {
        // `readOnly: yes` is true to the API server's YAML 1.1 decoder but a
        // string elsewhere; refuse the spelling instead of guessing.
        strict_booleans: strict,
        // A second `path:` could hide the first from a reviewer.
        duplicate_keys: if strict { DuplicateKeyPolicy::Error } else { DuplicateKeyPolicy::LastWins },
        with_snippet: false,
        budget: Some(budget),
    }
}

/// Parses one file's text (any number of YAML documents). `name` is how
/// positions will name the file.
pub fn parse_str(name: &str, text: &str) -> Manifests {
    parse_source(Arc::new(SourceFile::new(name.to_owned(), text.to_owned())))
}

/// [`parse_str`] on an already shared source. Never fails: a document that
/// cannot be read lands in [`Manifests::invalid`].
pub fn parse_source(source: Arc<SourceFile>) -> Manifests {
    let mut manifests = Manifests::default();
    for document in stream::documents(source.text()) {
        let doc = Doc {
            source: &source,
            line_offset: document.first_line,
        };
        match serde_saphyr::from_multiple_with_options::<Spanned<RawObject>>(
            document.text,
            yaml_options(true),
        ) {
            Ok(objects) => {
                for object in objects {
                    doc.collect(object, &mut manifests);
                }
            }
            Err(error) => {
                if let Some(patch) = doc.json_patch(document.text) {
                    manifests.skipped.push(patch);
                    continue;
                }
                match doc.objects_not_read(document.text) {
                    Some(skipped) => manifests.skipped.extend(skipped),
                    None => manifests.invalid.push(doc.invalid(document.text, &error)),
                }
            }
        }
    }
    manifests
}

/// One document of a source: positions from the parser are relative to
/// the document and are shifted by `line_offset` here.
struct Doc<'a> {
    source: &'a Arc<SourceFile>,
    line_offset: u32,
}

impl Doc<'_> {
    fn position(&self, location: &serde_saphyr::Location) -> Pos {
        let width = usize::try_from(location.span().len()).unwrap_or(usize::MAX);
        let pos = Pos::of(location, width);
        Pos {
            line: pos.line.saturating_add(self.line_offset),
            ..pos
        }
    }

    fn sourced<T>(&self, spanned: Spanned<T>) -> Sourced<T> {
        Sourced {
            position: self.position(&spanned.referenced),
            value: spanned.value,
        }
    }

    /// A document whose `spec` comes before its `kind` is read as if it
    /// were a workload's (see `api`); when that fails and the kind turns
    /// out not to be one, the failure was ours, not the document's: it is a
    /// skipped object like any other of its kind.
    fn objects_not_read(&self, text: &str) -> Option<Vec<SkippedObject>> {
        #[derive(serde::Deserialize)]
        struct KindOnly {
            kind: Option<Spanned<String>>,
        }
        let objects: Vec<Spanned<KindOnly>> =
            serde_saphyr::from_multiple_with_options(text, yaml_options(true)).ok()?;
        let mut skipped = Vec::new();
        for object in objects {
            let kind = object.value.kind?;
            if PodKind::named(&kind.value).is_some() || is_list_kind(&kind.value) {
                return None;
            }
            skipped.push(SkippedObject {
                source: Arc::clone(self.source),
                kind: Some(self.sourced(kind)),
                position: self.position(&object.referenced),
                patch: None,
            });
        }
        Some(skipped)
    }

    /// A document that is a kustomize JSON patch file (a non-empty
    /// sequence of `op` mappings) is skipped, not invalid.
    fn json_patch(&self, text: &str) -> Option<SkippedObject> {
        let documents: Vec<Spanned<Vec<api::PatchOperation>>> =
            serde_saphyr::from_multiple_with_options(text, yaml_options(false)).ok()?;
        let [operations] = documents.as_slice() else {
            return None;
        };
        if operations.value.is_empty() {
            return None;
        }
        Some(SkippedObject {
            source: Arc::clone(self.source),
            kind: None,
            position: self.position(&operations.referenced),
            patch: Some(PatchKind::JsonPatch),
        })
    }

    fn invalid(&self, text: &str, error: &serde_saphyr::Error) -> InvalidDocument {
        let position = error
            .location()
            .filter(|l| l.line() > 0)
            .map(|l| self.position(&l))
            .unwrap_or(Pos {
                line: self.line_offset.saturating_add(1),
                column: 1,
                width: 0,
            });
        // The position is reported separately; take the bare message, with
        // control characters (from the input) made visible.
        let message: String = UserMessageFormatter
            .format_message(error.without_snippet())
            .chars()
            .flat_map(|c| {
                let escaped: Vec<char> = if c.is_control() {
                    c.escape_default().collect()
                } else {
                    vec![c]
                };
                escaped
            })
            .collect();
        // An unrendered template is not the YAML it will become, whether or
        // not its braces happen to parse as flow mappings; size limits say
        // nothing about templating.
        let template =
            template_line(text).filter(|_| !matches!(error, serde_saphyr::Error::Budget { .. }));
        let invalidity = match template {
            Some(line) => Invalidity::Templated {
                template_line: line.saturating_add(self.line_offset),
            },
            // Is it YAML at all? Read it again with nothing but YAML's own
            // rules: if that works, the document broke a rule of ours (a
            // shape, a duplicate key, a `yes`), not the syntax.
            None if serde_saphyr::from_multiple_with_options::<IgnoredAny>(
                text,
                yaml_options(false),
            )
            .is_ok() =>
            {
                Invalidity::NotAnObject
            }
            None => Invalidity::NotYaml,
        };
        InvalidDocument {
            source: Arc::clone(self.source),
            position,
            message,
            invalidity,
        }
    }

    fn collect(&self, object: Spanned<RawObject>, out: &mut Manifests) {
        let position = self.position(&object.referenced);
        let RawObject {
            kind,
            name,
            namespace,
            spec,
            template,
            items,
            patch,
        } = object.value;
        if patch.is_some() {
            out.skipped.push(SkippedObject {
                source: Arc::clone(self.source),
                kind: kind.map(|k| self.sourced(k)),
                position,
                patch: Some(PatchKind::StrategicMerge),
            });
            return;
        }
        let Some(kind) = kind.map(|k| self.sourced(k)) else {
            out.skipped.push(SkippedObject {
                source: Arc::clone(self.source),
                kind: None,
                position,
                patch: None,
            });
            return;
        };
        if is_list_kind(&kind.value) {
            for item in items.into_iter().flatten() {
                self.collect(item, out);
            }
            return;
        }
        let Some(spec_at) = PodKind::named(&kind.value).map(|k| k.spec_at) else {
            out.skipped.push(SkippedObject {
                source: Arc::clone(self.source),
                kind: Some(kind),
                position,
                patch: None,
            });
            return;
        };
        if spec_at == PodSpecAt::Absent {
            let host_path_volumes = spec
                .and_then(|s| s.value.host_path)
                .map(|host_path| {
                    let (path, path_origin) = self.path_value(host_path.path, &host_path.path_key);
                    HostPathVolume {
                        name: name.clone().unwrap_or_default(),
                        path,
                        path_origin,
                        path_type: host_path.path_type.map(|t| self.sourced(t)),
                        mounts: Vec::new(),
                    }
                })
                .into_iter()
                .collect();
            out.workloads.push(Workload {
                source: Arc::clone(self.source),
                kind,
                name,
                namespace,
                host_path_volumes,
                pinned_os: None,
                selinux_spots: None,
            });
            return;
        }
        let pod = match spec_at {
            PodSpecAt::Spec => spec,
            PodSpecAt::SpecTemplate => spec
                .and_then(|s| s.value.template)
                .and_then(|t| t.spec.map(|b| *b)),
            PodSpecAt::JobTemplate => spec
                .and_then(|s| s.value.job_template)
                .and_then(|j| j.spec)
                .and_then(|s| s.template)
                .and_then(|t| t.spec.map(|b| *b)),
            PodSpecAt::Template => template.and_then(|t| t.spec.map(|b| *b)),
            PodSpecAt::Absent => None,
        };
        let (host_path_volumes, pinned_os, selinux_spots) = match pod {
            Some(pod) => {
                let spots = self.selinux_spots(&pod);
                let mut pod = pod.value;
                let pinned_os = self.pinned_os(&mut pod);
                (self.host_path_volumes(pod), pinned_os, Some(spots))
            }
            None => (Vec::new(), None, None),
        };
        out.workloads.push(Workload {
            source: Arc::clone(self.source),
            kind,
            name,
            namespace,
            host_path_volumes,
            pinned_os,
            selinux_spots,
        });
    }

    /// Where the pod's and its containers' `seLinuxOptions.type` are
    /// written, or would be.
    fn selinux_spots(&self, pod: &Spanned<Spec>) -> SelinuxSpots {
        const POD_KEYS: [&str; 3] = ["securityContext", "seLinuxOptions", "type"];
        let options_spot = |options: &Spanned<api::SeLinuxOptions>, depth: usize| match &options
            .value
            .selinux_type
        {
            Some(t) if t.referenced == t.defined => TypeSpot::Value(self.position(&t.referenced)),
            Some(t) => TypeSpot::Aliased {
                at: self.position(&t.referenced),
            },
            None => self.insert_spot(options, &POD_KEYS[depth..]),
        };
        let pod_spot = match &pod.value.security_context {
            None => self.insert_spot(pod, &POD_KEYS),
            Some(context) => match &context.value.se_linux_options {
                None => self.insert_spot(context, &POD_KEYS[1..]),
                Some(options) => options_spot(options, 2),
            },
        };
        let containers = [
            (ContainerKind::Init, &pod.value.init_containers),
            (ContainerKind::Regular, &pod.value.containers),
            (ContainerKind::Ephemeral, &pod.value.ephemeral_containers),
        ]
        .into_iter()
        .flat_map(|(kind, list)| list.iter().flatten().map(move |c| (kind, c)))
        .filter_map(|(container_kind, container)| {
            let options = container
                .security_context
                .as_ref()?
                .se_linux_options
                .as_ref()?;
            Some(ContainerSpot {
                container: container.name.value.clone(),
                container_kind,
                spot: options_spot(options, 2),
            })
        })
        .collect();
        SelinuxSpots {
            pod: pod_spot,
            containers,
        }
    }

    /// The spot at the start of `mapping`, unless it came through an alias
    /// or a merge key.
    fn insert_spot<T>(&self, mapping: &Spanned<T>, missing: &'static [&'static str]) -> TypeSpot {
        let at = self.position(&mapping.referenced);
        if mapping.referenced != mapping.defined {
            TypeSpot::Aliased { at }
        } else {
            TypeSpot::Insert { at, missing }
        }
    }

    /// The non-Linux OS the pod spec pins, located at the value that pins
    /// it: `nodeSelector`, or required node affinity whose every term
    /// excludes Linux on the OS label (`In` without `linux`, `NotIn` with it).
    fn pinned_os(&self, pod: &mut Spec) -> Option<Sourced<String>> {
        if let Some(os) = pod.node_selector.take().and_then(|s| s.os) {
            return match os.value.0.clone() {
                Some(value) if value != "linux" => {
                    Some(self.sourced(Spanned::new(value, os.referenced, os.defined)))
                }
                _ => None,
            };
        }
        let terms = pod
            .affinity
            .take()
            .and_then(|a| a.node_affinity)
            .and_then(|n| n.required)
            .and_then(|r| r.node_selector_terms)?;
        let mut first_pin = None;
        for term in &terms {
            let pin = term
                .match_expressions
                .iter()
                .flatten()
                .find_map(|requirement| {
                    let key = requirement.key.as_ref()?.0.as_deref()?;
                    if !OS_LABELS.contains(&key) {
                        return None;
                    }
                    let values = requirement.values.as_deref().unwrap_or_default();
                    let names: Vec<Option<&str>> =
                        values.iter().map(|v| v.value.0.as_deref()).collect();
                    match requirement.operator.as_ref()?.0.as_deref()? {
                        "In" if !values.is_empty() && !names.contains(&Some("linux")) => {
                            values.first()
                        }
                        "NotIn" => values
                            .iter()
                            .find(|v| v.value.0.as_deref() == Some("linux")),
                        _ => None,
                    }
                });
            match pin {
                Some(value) => {
                    first_pin.get_or_insert(value);
                }
                // One term that admits Linux is enough to run here.
                None => return None,
            }
        }
        let pin = first_pin?;
        let os = match pin.value.0.as_deref() {
            // `NotIn: [linux]` pins "not Linux"; say so.
            Some("linux") => "not linux".to_owned(),
            Some(value) => value.to_owned(),
            None => return None,
        };
        Some(Sourced {
            value: os,
            position: self.position(&pin.referenced),
        })
    }

    fn host_path_volumes(&self, pod: Spec) -> Vec<HostPathVolume> {
        let pod_selinux_type = pod
            .security_context
            .and_then(|sc| sc.value.se_linux_options)
            .and_then(|options| options.value.selinux_type);
        let containers: Vec<(ContainerKind, api::Container)> = [
            (ContainerKind::Init, pod.init_containers),
            (ContainerKind::Regular, pod.containers),
            (ContainerKind::Ephemeral, pod.ephemeral_containers),
        ]
        .into_iter()
        .flat_map(|(kind, list)| list.into_iter().flatten().map(move |c| (kind, c)))
        .collect();

        let mut volumes = Vec::new();
        for volume in pod.volumes.into_iter().flatten() {
            let Some(host_path) = volume.host_path else {
                continue;
            };
            let name = volume.name.value;
            let mut mounts = Vec::new();
            for (container_kind, container) in &containers {
                let (privileged, container_selinux) = match &container.security_context {
                    Some(sc) => (
                        sc.privileged.clone(),
                        sc.se_linux_options.as_ref().map(|o| &o.value),
                    ),
                    None => (None, None),
                };
                // The kubelet replaces the pod's seLinuxOptions with the
                // container's as a whole, not field by field.
                let selinux_type = match container_selinux {
                    Some(options) => options.selinux_type.clone(),
                    None => pod_selinux_type.clone(),
                };
                for mount in container.volume_mounts.iter().flatten() {
                    if mount.name != name {
                        continue;
                    }
                    mounts.push(HostPathMount {
                        container: container.name.value.clone(),
                        container_kind: *container_kind,
                        mount_path: self.sourced(mount.mount_path.clone()),
                        read_only: mount.read_only.clone().map(|r| self.sourced(r)),
                        mount_propagation: mount.mount_propagation.clone(),
                        sub_path: mount.sub_path.clone().map(|s| self.sourced(s)),
                        sub_path_expr: mount.sub_path_expr.clone(),
                        privileged: privileged.clone().map(|p| self.sourced(p)),
                        selinux_type: selinux_type.clone().map(|t| self.sourced(t)),
                    });
                }
            }
            let (path, path_origin) = self.path_value(host_path.path, &host_path.path_key);
            volumes.push(HostPathVolume {
                name,
                path,
                path_origin,
                path_type: host_path.path_type.map(|t| self.sourced(t)),
                mounts,
            });
        }
        volumes
    }

    /// Locates a `path:` value. A value used after its key was written
    /// there, possibly as an alias (`path: *p`); one used where its key is
    /// came with the mapping holding both, through `<<:` or an alias, and
    /// is reported where that mapping writes it.
    fn path_value(
        &self,
        path: Spanned<String>,
        key: &serde_saphyr::Location,
    ) -> (Sourced<String>, Option<PathOrigin>) {
        let used = (path.referenced.line(), path.referenced.column());
        let written_after_key = used > (key.line(), key.column());
        let known = |l: &serde_saphyr::Location| l.line() > 0;
        let same = path.referenced == path.defined || !known(&path.defined);
        let (at, origin) = if written_after_key || same {
            let origin = (!same).then(|| PathOrigin::Anchor(self.position(&path.defined)));
            (self.position(&path.referenced), origin)
        } else {
            (
                self.position(&path.defined),
                Some(PathOrigin::Merged(self.position(&path.referenced))),
            )
        };
        (
            Sourced {
                value: path.value,
                position: at,
            },
            origin,
        )
    }
}

/// First line holding `{{`, the mark of an unrendered Helm/Go template.
fn template_line(text: &str) -> Option<u32> {
    text.lines()
        .position(|line| line.contains("{{"))
        .map(|index| u32::try_from(index + 1).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spots(yaml: &str) -> SelinuxSpots {
        let manifests = parse_str("f.yaml", yaml);
        assert!(manifests.invalid.is_empty(), "{:?}", manifests.invalid);
        manifests.workloads[0]
            .selinux_spots
            .clone()
            .expect("a pod spec")
    }

    /// (line, column, missing keys or `None` for a value).
    fn place(spot: &TypeSpot) -> (u32, u32, Option<&'static [&'static str]>) {
        match spot {
            TypeSpot::Value(at) => (at.line, at.column, None),
            TypeSpot::Insert { at, missing } => (at.line, at.column, Some(*missing)),
            TypeSpot::Aliased { at } => (at.line, at.column, Some(&["alias"])),
        }
    }

    #[test]
    fn selinux_type_spots_are_where_an_edit_goes() {
        let daemon_set = "\
---
kind: DaemonSet
spec:
  template:
    spec:
      containers:
        - name: a
          securityContext:
            seLinuxOptions:
              level: s0
";
        let found = spots(daemon_set);
        assert_eq!(
            place(&found.pod),
            (
                6,
                7,
                Some(&["securityContext", "seLinuxOptions", "type"][..])
            )
        );
        assert_eq!(
            place(&found.containers[0].spot),
            (10, 15, Some(&["type"][..]))
        );
        let typed =
            spots("kind: Pod\nspec:\n  securityContext: {seLinuxOptions: {type: \"spc_t\"}}\n");
        assert_eq!(place(&typed.pod), (3, 44, None));
        let TypeSpot::Value(value) = typed.pod else {
            unreachable!()
        };
        assert_eq!(value.width, 7, "the quotes are part of the value");
        let flow = spots("kind: Pod\nspec:\n  securityContext: {}\n");
        assert_eq!(
            place(&flow.pod),
            (3, 20, Some(&["seLinuxOptions", "type"][..]))
        );
        let aliased = spots("kind: Pod\nspec:\n  securityContext: &sc {runAsUser: 1}\n  x: *sc\n");
        assert_eq!(place(&aliased.pod).2, Some(&["seLinuxOptions", "type"][..]));
    }
}
