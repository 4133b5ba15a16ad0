//! Which store type each layout domain runs as, and why.

use serde::Serialize;

use super::facts::Facts;
use super::profile::Profile;
use layout::model::Layout;

/// Where a layout domain's store type came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// The store has the layout's type as a process domain.
    Store,
    /// The profile's container runtime domain (the layout domain starts
    /// workloads).
    Runtime,
    /// The profile's workload domain.
    Workload,
    /// `--map DOMAIN=TYPE`.
    Map,
    /// Not in the store: the module declares it.
    Declared,
}

impl Origin {
    /// Why the domain got its type, for the module's comments and reports.
    pub fn describe(self, profile: &Profile) -> String {
        match self {
            Origin::Store => "the store's own type".to_owned(),
            Origin::Runtime => format!(
                "the container runtime's domain in {}",
                profile.name.as_str()
            ),
            Origin::Workload => format!("the workload domain in {}", profile.name.as_str()),
            Origin::Map => "mapped with --map".to_owned(),
            Origin::Declared => "not in the store: declared by the module".to_owned(),
        }
    }
}

/// One layout domain and the store type it runs as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DomainMapping {
    pub key: String,
    pub layout_type: String,
    pub store_type: String,
    pub origin: Origin,
}

/// A layout domain that cannot run as the store type it maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingError(pub String);

/// The store type each layout domain becomes: `--map` first, then the
/// store's own type, then the profile's workload or runtime type, else a
/// new domain the module declares.
pub fn map_domains(
    layout: &Layout,
    facts: &Facts,
    profile: &Profile,
    maps: &[(String, String)],
) -> Result<Vec<DomainMapping>, MappingError> {
    for (key, _) in maps {
        if !layout.domains.iter().any(|d| &d.key == key) {
            return Err(MappingError(format!(
                "--map {key}=…: the layout has no domain `{key}`"
            )));
        }
    }
    let is_domain = |name: &str| facts.is_member(name, profile.domain_attribute);
    let privileged = facts
        .attributes
        .get(profile.privileged_attribute)
        .cloned()
        .unwrap_or_default();
    let mut mappings = Vec::new();
    for domain in &layout.domains {
        let runtime = domain
            .transitions
            .iter()
            .any(|&t| layout.domain(t).workload);
        let mapped = maps.iter().find(|(key, _)| key == &domain.key);
        let (store_type, origin) = if let Some((_, target)) = mapped {
            let resolved = facts.resolve(target).unwrap_or(target).to_owned();
            if !is_domain(&resolved) {
                return Err(MappingError(format!(
                    "--map {}={target}: the store has no domain `{target}`",
                    domain.key
                )));
            }
            (resolved, Origin::Map)
        } else if let Some(resolved) = facts.resolve(&domain.type_name) {
            if !is_domain(resolved) {
                return Err(MappingError(format!(
                    "domain `{}`: the store's `{}` is not a process domain; name another type or pass --map {}=TYPE",
                    domain.key, domain.type_name, domain.key
                )));
            }
            (resolved.to_owned(), Origin::Store)
        } else if domain.workload && is_domain(profile.workload_type) {
            (profile.workload_type.to_owned(), Origin::Workload)
        } else if runtime && is_domain(profile.runtime_type) {
            (profile.runtime_type.to_owned(), Origin::Runtime)
        } else {
            (domain.type_name.clone(), Origin::Declared)
        };
        if domain.workload && privileged.contains(&store_type) {
            return Err(MappingError(format!(
                "workload domain `{}` would run as `{store_type}`, a privileged container domain ({}): nothing can be protected from it",
                domain.key, profile.privileged_attribute
            )));
        }
        mappings.push(DomainMapping {
            key: domain.key.clone(),
            layout_type: domain.type_name.clone(),
            store_type,
            origin,
        });
    }
    Ok(mappings)
}
