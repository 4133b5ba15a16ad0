//! The workload set every protection holds against: the store's container
//! domains that are not privileged, the layout's workloads, and every
//! domain any of them can transition to (through the store's rules or the
//! layout's).

use std::collections::{BTreeMap, BTreeSet};

use super::facts::Facts;
use super::profile::Profile;
use layout::model::Layout;
use policy::store_module::WorkloadSet;

/// The set, both as its members and as the module writes it.
#[derive(Debug, Clone)]
pub struct Workloads {
    /// Every member.
    pub members: BTreeSet<String>,
    /// `container_domain minus privileged`, plus the members outside it.
    pub set: WorkloadSet,
}

impl Workloads {
    /// `domain_types`: layout domain type → store type.
    pub fn find(
        layout: &Layout,
        facts: &Facts,
        profile: &Profile,
        domain_types: &BTreeMap<String, String>,
    ) -> Workloads {
        let containers = unprivileged_containers(facts, profile);
        let mut starts = containers.clone();
        // The layout's workloads and agents: the runtime starts both, and
        // neither may touch a protected path.
        starts.extend(
            layout
                .domains
                .iter()
                .filter(|d| d.is_container())
                .map(|d| domain_types[&d.type_name].clone()),
        );
        let mut transitions = facts.clone();
        for domain in &layout.domains {
            let from = &domain_types[&domain.type_name];
            for &next in &domain.transitions {
                let to = &domain_types[&layout.domain(next).type_name];
                if from != to {
                    transitions
                        .transitions
                        .entry(from.clone())
                        .or_default()
                        .insert(to.clone());
                }
            }
        }
        let members = transitions.transition_closure(starts);
        let outside_attribute = members.difference(&containers).cloned().collect();
        Workloads {
            set: WorkloadSet {
                attribute: Some((
                    profile.workload_attribute.to_owned(),
                    profile.privileged_attribute.to_owned(),
                )),
                types: outside_attribute,
            },
            members,
        }
    }

    /// How the report names the set's definition.
    pub fn expression(profile: &Profile) -> String {
        format!(
            "{} minus {}",
            profile.workload_attribute, profile.privileged_attribute
        )
    }
}

/// Members of the workload attribute that are not privileged.
fn unprivileged_containers(facts: &Facts, profile: &Profile) -> BTreeSet<String> {
    let mut members = facts
        .attributes
        .get(profile.workload_attribute)
        .cloned()
        .unwrap_or_default();
    for privileged in facts
        .attributes
        .get(profile.privileged_attribute)
        .into_iter()
        .flatten()
    {
        members.remove(privileged);
    }
    members
}
