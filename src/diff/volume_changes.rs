//! hostPath verdicts before and after: the Kubernetes audit (`k8s::audit`)
//! run against each layout's [`HostPathRules`], compared volume by volume.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use k8s::{audit, HostPathRules, Manifests};
use layout::diag::{Finding, Location};
use layout::manifest::Parsed;

/// One hostPath volume whose verdict changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct VolumeChange {
    /// `Kind/name` of the workload.
    pub workload: String,
    /// The volume's name.
    pub volume: String,
    /// `hostPath.path` as written.
    pub host_path: String,
    /// Where the `path:` value is written, `FILE:LINE:COLUMN`.
    pub location: String,
    /// The findings against the old layout (`severity rule-id`), or `ok`.
    pub old: Vec<String>,
    /// The findings against the new layout.
    pub new: Vec<String>,
    /// Present when the new layout admits what the old one refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<String>,
}

fn verdicts(manifests: &Manifests, rules: &HostPathRules) -> BTreeMap<Location, Vec<String>> {
    let mut by_location: BTreeMap<Location, Vec<String>> = BTreeMap::new();
    for Finding {
        rule,
        severity,
        location,
        ..
    } in audit(manifests, rules)
    {
        if let Some(location) = location {
            let entry = by_location.entry(location).or_default();
            entry.push(format!("{severity} {}", rule.id));
            entry.sort();
            entry.dedup();
        }
    }
    by_location
}

fn errors(verdict: &[String]) -> usize {
    verdict.iter().filter(|v| v.starts_with("error ")).count()
}

pub(crate) fn changes(old: &Parsed, new: &Parsed, manifests: &Manifests) -> Vec<VolumeChange> {
    let before = verdicts(manifests, &HostPathRules::of(old));
    let after = verdicts(manifests, &HostPathRules::of(new));
    let mut out = Vec::new();
    for workload in &manifests.workloads {
        for volume in &workload.host_path_volumes {
            let location = workload.source.location(volume.path.position);
            let ok = || vec!["ok".to_owned()];
            let was = before.get(&location).cloned().unwrap_or_else(ok);
            let is = after.get(&location).cloned().unwrap_or_else(ok);
            if was == is {
                continue;
            }
            let name = workload.display_name();
            let security = (errors(&is) < errors(&was)).then(|| {
                format!(
                    "the new layout admits hostPath `{}` of {name}, which the old one refused",
                    volume.path.value
                )
            });
            out.push(VolumeChange {
                workload: name,
                volume: volume.name.clone(),
                host_path: volume.path.value.clone(),
                location: location.to_string(),
                old: was,
                new: is,
                security,
            });
        }
    }
    out
}
