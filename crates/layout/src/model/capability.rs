//! Linux capabilities an agent domain may hold beyond the default set every
//! confined process has, and those no agent may hold because SELinux could
//! no longer confine it.
//!
//! A capability is a kernel check before the MAC check, never instead of
//! it: `sys_admin` lets an agent call mount(2), and the policy still
//! decides which directories it may mount on. The capabilities refused
//! here are the ones that step around the policy itself.

/// The SELinux class that holds a capability's permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CapabilityClass {
    /// `capability` (and `cap_userns` inside a user namespace).
    Capability,
    /// `capability2` (and `cap2_userns`).
    Capability2,
}

impl CapabilityClass {
    /// The class checked in the initial user namespace.
    pub fn class(self) -> &'static str {
        match self {
            CapabilityClass::Capability => "capability",
            CapabilityClass::Capability2 => "capability2",
        }
    }

    /// The class checked inside a user namespace the process made.
    pub fn userns_class(self) -> &'static str {
        match self {
            CapabilityClass::Capability => "cap_userns",
            CapabilityClass::Capability2 => "cap2_userns",
        }
    }
}

/// One capability, by its SELinux permission name (`sys_admin`; Kubernetes
/// writes `SYS_ADMIN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capability {
    pub name: &'static str,
    pub class: CapabilityClass,
    /// Held by every confined process already (the default set of an OCI
    /// container): naming it grants nothing more.
    pub default: bool,
    /// Why no agent may hold it, when it may not.
    pub refused: Option<&'static str>,
}

impl Capability {
    /// The Kubernetes spelling (`securityContext.capabilities.add`).
    pub fn kubernetes_name(&self) -> String {
        self.name.to_ascii_uppercase()
    }
}

const fn cap(name: &'static str) -> Capability {
    Capability {
        name,
        class: CapabilityClass::Capability,
        default: false,
        refused: None,
    }
}

const fn cap2(name: &'static str) -> Capability {
    Capability {
        name,
        class: CapabilityClass::Capability2,
        default: false,
        refused: None,
    }
}

const fn default(name: &'static str) -> Capability {
    Capability {
        default: true,
        ..cap(name)
    }
}

const fn refused(capability: Capability, why: &'static str) -> Capability {
    Capability {
        refused: Some(why),
        ..capability
    }
}

/// Every capability of Linux 6.1, in the kernel's order.
pub static CAPABILITIES: &[Capability] = &[
    default("chown"),
    default("dac_override"),
    cap("dac_read_search"),
    default("fowner"),
    default("fsetid"),
    default("kill"),
    default("setgid"),
    default("setuid"),
    default("setpcap"),
    cap("linux_immutable"),
    default("net_bind_service"),
    cap("net_broadcast"),
    cap("net_admin"),
    default("net_raw"),
    cap("ipc_lock"),
    cap("ipc_owner"),
    refused(
        cap("sys_module"),
        "loading a kernel module runs code in the kernel, where no policy applies",
    ),
    refused(
        cap("sys_rawio"),
        "raw I/O ports and memory reach every byte of the node past the policy",
    ),
    default("sys_chroot"),
    cap("sys_ptrace"),
    cap("sys_pacct"),
    cap("sys_admin"),
    refused(
        cap("sys_boot"),
        "rebooting the node or loading a new kernel leaves the policy behind",
    ),
    cap("sys_nice"),
    cap("sys_resource"),
    cap("sys_time"),
    cap("sys_tty_config"),
    cap("mknod"),
    cap("lease"),
    default("audit_write"),
    refused(
        cap("audit_control"),
        "changing the audit rules can silence the record of denials",
    ),
    default("setfcap"),
    refused(
        cap2("mac_override"),
        "overriding mandatory access control is what the policy exists to refuse",
    ),
    refused(
        cap2("mac_admin"),
        "setting labels the policy does not know defeats the labels",
    ),
    cap2("syslog"),
    cap2("wake_alarm"),
    cap2("block_suspend"),
    refused(
        cap2("audit_read"),
        "the audit stream carries what the protected audit log holds",
    ),
    refused(
        cap2("perfmon"),
        "tracing programs read kernel memory, and with it every file's cached contents",
    ),
    cap2("bpf"),
    cap2("checkpoint_restore"),
];

/// The capability of that SELinux name.
pub fn capability(name: &str) -> Option<&'static Capability> {
    CAPABILITIES.iter().find(|c| c.name == name)
}

/// The capability a Kubernetes manifest names (`SYS_ADMIN`, `CAP_SYS_ADMIN`).
pub fn from_kubernetes(name: &str) -> Option<&'static Capability> {
    let name = name.strip_prefix("CAP_").unwrap_or(name);
    CAPABILITIES
        .iter()
        .find(|c| c.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_kubernetes_spellings_map_back() {
        let mut names: Vec<&str> = CAPABILITIES.iter().map(|c| c.name).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        assert_eq!(count, 41, "Linux 6.1 has 41 capabilities");
        assert_eq!(
            from_kubernetes("SYS_ADMIN").map(|c| c.name),
            Some("sys_admin")
        );
        assert_eq!(from_kubernetes("CAP_BPF").map(|c| c.name), Some("bpf"));
        assert_eq!(
            capability("sys_admin").unwrap().kubernetes_name(),
            "SYS_ADMIN"
        );
        assert!(from_kubernetes("SYS_EVERYTHING").is_none());
        assert!(CAPABILITIES
            .iter()
            .all(|c| !(c.default && c.refused.is_some())));
    }
}
