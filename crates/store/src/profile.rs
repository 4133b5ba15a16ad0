//! Named profiles: the names a distribution's container policy uses for the
//! things a layout speaks of. refpolicy (Debian, Ubuntu: its `container`
//! module) and container-selinux (Fedora, RHEL, RHCOS: the `container`
//! module on top of the targeted policy) agree on the workload type
//! (`container_t`) and on the attribute of every container domain
//! (`container_domain`), and differ in the runtime's domain and in what
//! marks a privileged container.

use super::facts::Facts;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProfileName {
    Refpolicy,
    ContainerSelinux,
}

impl ProfileName {
    pub(crate) const ALL: [ProfileName; 2] =
        [ProfileName::Refpolicy, ProfileName::ContainerSelinux];

    pub fn as_str(self) -> &'static str {
        match self {
            ProfileName::Refpolicy => "refpolicy",
            ProfileName::ContainerSelinux => "container-selinux",
        }
    }
}

/// What a profile names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: ProfileName,
    /// Attributes every new file type gets (refpolicy's `files_type()`).
    pub file_type_attributes: &'static [&'static str],
    /// Attribute every process domain holds (`domain_type()`).
    pub domain_attribute: &'static str,
    /// The role new domains are authorised for.
    pub domain_role: &'static str,
    /// Attribute of every container domain: the workload set starts here.
    pub workload_attribute: &'static str,
    /// Members of the workload attribute that are privileged containers
    /// (unconfined by design), taken out of the workload set.
    pub privileged_attribute: &'static str,
    /// The store's type for hostPath pods.
    pub workload_type: &'static str,
    /// The container runtime's domain (containerd, CRI-O, runc run in it).
    pub runtime_type: &'static str,
    /// The module that declares them (for `optional` blocks and messages).
    pub container_module: &'static str,
}

pub(crate) const REFPOLICY: Profile = Profile {
    name: ProfileName::Refpolicy,
    file_type_attributes: &["file_type", "non_security_file_type", "non_auth_file_type"],
    domain_attribute: "domain",
    domain_role: "system_r",
    workload_attribute: "container_domain",
    privileged_attribute: "privileged_container_domain",
    workload_type: "container_t",
    runtime_type: "container_engine_t",
    container_module: "container",
};

pub(crate) const CONTAINER_SELINUX: Profile = Profile {
    name: ProfileName::ContainerSelinux,
    file_type_attributes: &["file_type", "non_security_file_type", "non_auth_file_type"],
    domain_attribute: "domain",
    domain_role: "system_r",
    workload_attribute: "container_domain",
    // Privileged containers run as spc_t, outside container_domain; any
    // container domain made unconfined is privileged all the same.
    privileged_attribute: "unconfined_domain_type",
    workload_type: "container_t",
    runtime_type: "container_runtime_t",
    container_module: "container",
};

/// Why no profile was picked for a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoProfile {
    /// Each profile, with the names the store lacks for it.
    NoneFits(Vec<(ProfileName, Vec<String>)>),
    SeveralFit,
}

impl std::fmt::Display for NoProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoProfile::NoneFits(lacking) => {
                for (i, (name, missing)) in lacking.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{} lacks {}", name.as_str(), missing.join(", "))?;
                }
                Ok(())
            }
            NoProfile::SeveralFit => f.write_str("several profiles fit; pass --profile"),
        }
    }
}

impl Profile {
    pub(crate) fn named(name: ProfileName) -> &'static Profile {
        match name {
            ProfileName::Refpolicy => &REFPOLICY,
            ProfileName::ContainerSelinux => &CONTAINER_SELINUX,
        }
    }

    /// The names this profile needs from a store that it lacks.
    pub(crate) fn missing(&self, facts: &Facts) -> Vec<String> {
        let mut missing = Vec::new();
        let attributes = self.file_type_attributes.iter().chain([
            &self.domain_attribute,
            &self.workload_attribute,
            &self.privileged_attribute,
        ]);
        for attribute in attributes {
            if !facts.declares_attribute(attribute) {
                missing.push(format!("attribute {attribute}"));
            }
        }
        for domain in [self.workload_type, self.runtime_type] {
            if !facts.is_member(domain, self.domain_attribute) {
                missing.push(format!("domain {domain}"));
            }
        }
        missing
    }

    /// The profile whose names the store has; an error when none or
    /// several fit.
    pub(crate) fn detect(facts: &Facts) -> Result<&'static Profile, NoProfile> {
        let fitting: Vec<&'static Profile> = ProfileName::ALL
            .iter()
            .map(|&name| Profile::named(name))
            .filter(|profile| profile.missing(facts).is_empty())
            .collect();
        match fitting.as_slice() {
            [one] => Ok(one),
            [] => Err(NoProfile::NoneFits(
                ProfileName::ALL
                    .iter()
                    .map(|&name| (name, Profile::named(name).missing(facts)))
                    .collect(),
            )),
            _ => Err(NoProfile::SeveralFit),
        }
    }
}
