//! The closed vocabulary of what an agent domain may be granted outside the
//! layout's own paths: kernel filesystems, devices by class, the container
//! runtime's socket, CNI configuration and plugins, kernel modules, the
//! machine ID, mounts.
//!
//! [`HOST_CLASSES`] is the one table every consumer reads: the manifest
//! validates `host:` grants against it (names, admitted levels), the policy
//! renders each class's [`Grant`]s for its target (the standalone base
//! policy's types, or a store's), and the Kubernetes checks map a hostPath
//! volume to the classes that cover it ([`classes_for`]). `docs/agents.md`
//! is its prose contract; a test keeps the two in step.
//!
//! Invariants: names are unique and sorted; every class admits at least
//! one level and every level it admits is an access level of the manifest;
//! host paths are absolute and normalised; a class grants the same kinds
//! of things on every target (only the type names differ), or is refused
//! on a store, saying why.

use super::is_within;

/// What a class is about, for documentation and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// Kernel filesystems (`/sys`, `/proc`, cgroup, bpf): labelled by the
    /// kernel (genfscon), never by file contexts.
    KernelFilesystem,
    /// Device nodes under `/dev`, one class of devices each.
    Device,
    /// The container runtime's sockets and the files other node software
    /// shares under `/run`.
    Runtime,
    /// CNI network configuration and plugin binaries.
    Cni,
    /// Kernel modules and their metadata, read-only.
    KernelModules,
    /// The files that say which node this is (the machine ID), read-only.
    /// Not `KernelModules` or `Cni`, the other OS files: those are trees a
    /// package owns, these are single files of the node's own identity;
    /// keeping them apart keeps a class of `/etc` from growing into `/etc`.
    HostIdentity,
    /// An operation rather than a place: mounting filesystems.
    Mount,
}

impl Group {
    pub fn describe(self) -> &'static str {
        match self {
            Group::KernelFilesystem => "kernel filesystem",
            Group::Device => "devices",
            Group::Runtime => "runtime directory under /run",
            Group::Cni => "CNI",
            Group::KernelModules => "kernel modules",
            Group::HostIdentity => "host identity",
            Group::Mount => "mounts",
        }
    }
}

/// How a host path covers the paths a hostPath volume may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The path and everything below it.
    Subtree,
    /// The path itself only (a socket, a device node, a lock file).
    Exact,
    /// Every name in the path's directory that starts with its last
    /// component (`/dev/nvme` covers `/dev/nvme0n1`), and nothing below.
    NamePrefix,
}

/// What the object at a host path is: the hostPath volume `type:` that
/// names it (`Directory`, `Socket`, `CharDevice`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    Directory,
    File,
    Socket,
    CharDevice,
    BlockDevice,
}

impl ObjectKind {
    /// The hostPath volume type that checks for this kind of object.
    pub fn host_path_type(self) -> &'static str {
        match self {
            ObjectKind::Directory => "Directory",
            ObjectKind::File => "File",
            ObjectKind::Socket => "Socket",
            ObjectKind::CharDevice => "CharDevice",
            ObjectKind::BlockDevice => "BlockDevice",
        }
    }
}

/// A path on the host that a class covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPath {
    pub path: &'static str,
    pub scope: Scope,
    pub kind: ObjectKind,
}

impl HostPath {
    /// How specific it is: where several classes cover a path, only those
    /// whose covering host path is the most specific decide
    /// ([`classes_for`]). Longer host paths are more specific; at one
    /// length an exact path beats a name prefix, which beats a subtree.
    pub fn specificity(&self) -> (usize, u8) {
        let rank = match self.scope {
            Scope::Exact => 2,
            Scope::NamePrefix => 1,
            Scope::Subtree => 0,
        };
        (self.path.len(), rank)
    }

    /// Whether a hostPath volume naming `path` (absolute, normalised) is
    /// this host path or lies within what it covers.
    pub fn covers(&self, path: &str) -> bool {
        match self.scope {
            Scope::Subtree => is_within(path, self.path),
            Scope::Exact => path == self.path,
            Scope::NamePrefix => {
                let (dir, prefix) = self.path.rsplit_once('/').unwrap_or(("", self.path));
                path.rsplit_once('/')
                    .is_some_and(|(parent, name)| parent == dir && name.starts_with(prefix))
            }
        }
    }
}

/// The device node class of a [`Grant::Device`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceClass {
    Char,
    Block,
}

impl DeviceClass {
    /// The SELinux object class.
    pub fn class(self) -> &'static str {
        match self {
            DeviceClass::Char => "chr_file",
            DeviceClass::Block => "blk_file",
        }
    }
}

/// One thing a class grants, in a target's names. The access level the
/// layout grants decides the permissions of file and device grants; the
/// other kinds say their permissions themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Directories, files and symlinks of this type, at the granted level
    /// (the manifest's `read`, `write`, `exec`).
    Files(&'static str),
    /// Device nodes of this type: read, or read and write.
    Device(&'static str, DeviceClass),
    /// Connecting to a stream socket of type `socket` (and searching its
    /// directory) that a process of domain `server` listens on.
    Socket {
        socket: &'static str,
        server: &'static str,
    },
    /// The `/proc/PID` entries of every process (their type is the
    /// process's own domain): read, as `ps` and node monitors do.
    Processes,
    /// Permissions on the domain itself (its own BPF objects, tun queues,
    /// the kernel log), given from `from` up.
    OnSelf {
        class: &'static str,
        perms: &'static str,
        from: &'static str,
    },
    /// Mounting, remounting and unmounting filesystems of this type.
    Mount(&'static str),
    /// Mounting a filesystem with `context=` this type (a pod's volume
    /// labelled for the pod), from the type it would otherwise have.
    MountContext(&'static str),
    /// `system` permissions on a process type (reading the kernel log is
    /// a `syslog_read` on the kernel's).
    System {
        target: &'static str,
        perms: &'static str,
    },
}

/// What a class grants on a distribution's store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreGrants {
    /// The store's own types.
    Types(&'static [Grant]),
    /// The store names these paths with the base policy's types: the
    /// standalone grants hold as they are.
    AsStandalone,
    /// The store has no type for these paths alone (it labels them with a
    /// type it shares with others, such as `etc_t`): the module declares
    /// the standalone file types itself and labels the class's paths with
    /// them.
    Declared,
    /// The class is refused on this store, for the reason given: the
    /// store's type for its paths is shared with files no agent may read,
    /// and relabelling them would take them from the store's own domains.
    /// The manifest refuses the grant against such a store; the module
    /// grants nothing for it.
    Refused(&'static str),
}

/// A distribution policy a module is built for: whose names a class's
/// store grants are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreFamily {
    /// refpolicy (Debian, Ubuntu).
    Refpolicy,
    /// targeted with container-selinux (Fedora, RHEL, CoreOS).
    ContainerSelinux,
}

impl StoreFamily {
    pub fn describe(self) -> &'static str {
        match self {
            StoreFamily::Refpolicy => "refpolicy",
            StoreFamily::ContainerSelinux => "container-selinux",
        }
    }
}

/// One class of the vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostClass {
    /// The key in a domain's `host:` map.
    pub name: &'static str,
    pub group: Group,
    /// What it is, in one line.
    pub summary: &'static str,
    /// The host paths a hostPath volume would name for it. Empty for an
    /// operation (`mount`).
    pub paths: &'static [HostPath],
    /// The access levels a layout may grant, by manifest name.
    pub levels: &'static [&'static str],
    /// What it grants in the standalone policy: types of the base policy.
    pub standalone: &'static [Grant],
    pub refpolicy: StoreGrants,
    pub container_selinux: StoreGrants,
    /// Granting it hands the agent more than its labels say: raw disks
    /// (the filesystems protected paths live on) or the container
    /// runtime's authority. The manifest warns and says why.
    pub beyond_labels: Option<BeyondLabels>,
}

/// How a class reaches past the file labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BeyondLabels {
    /// Raw block devices: a disk holds every file of its filesystems,
    /// whatever their labels, protected paths included.
    RawDisk,
    /// The runtime starts containers on request (in any domain it may
    /// start, with any host path mounted).
    RuntimeApi,
    /// The runtime executes what the agent writes here, in its own domain.
    RuntimeCode {
        /// The level from which it applies (`write`).
        from: &'static str,
    },
}

impl HostClass {
    /// The types `store` (one of this class's store grants) grants;
    /// `None` where the module declares the standalone types itself;
    /// nothing where the store refuses the class.
    pub fn store_types(&self, store: StoreGrants) -> Option<&'static [Grant]> {
        match store {
            StoreGrants::Types(grants) => Some(grants),
            StoreGrants::AsStandalone => Some(self.standalone),
            StoreGrants::Declared => None,
            StoreGrants::Refused(_) => Some(&[]),
        }
    }

    /// What it grants on a store of `family`.
    pub fn on_store(&self, family: StoreFamily) -> StoreGrants {
        match family {
            StoreFamily::Refpolicy => self.refpolicy,
            StoreFamily::ContainerSelinux => self.container_selinux,
        }
    }

    /// Whether the layout may grant `level` (a manifest level name).
    pub fn admits(&self, level: &str) -> bool {
        self.levels.contains(&level)
    }

    /// The host paths of this class that cover `path`.
    pub fn covering<'a>(&self, path: &'a str) -> impl Iterator<Item = &'static HostPath> + 'a {
        let paths: &'static [HostPath] = self.paths;
        paths.iter().filter(move |host| host.covers(path))
    }
}

const DIR: ObjectKind = ObjectKind::Directory;

const fn subtree(path: &'static str) -> HostPath {
    HostPath {
        path,
        scope: Scope::Subtree,
        kind: DIR,
    }
}

const fn exact(path: &'static str, kind: ObjectKind) -> HostPath {
    HostPath {
        path,
        scope: Scope::Exact,
        kind,
    }
}

const fn names(path: &'static str, kind: ObjectKind) -> HostPath {
    HostPath {
        path,
        scope: Scope::NamePrefix,
        kind,
    }
}

/// Every device class also covers a hostPath of `/dev` itself: such a
/// volume reaches only the device classes the domain holds.
const DEV: HostPath = exact("/dev", DIR);

const READ: &[&str] = &["read"];
const WRITE: &[&str] = &["write"];
const READ_WRITE: &[&str] = &["read", "write"];

/// Why `machine-id` is refused on refpolicy's stores (Debian, Ubuntu).
const MACHINE_ID_ON_REFPOLICY: &str = "refpolicy labels /etc/machine-id `etc_t`, the type of most of /etc \
     (the kubeconfigs and the cluster's PKI under /etc/kubernetes too): a grant on `etc_t` would read \
     them all, and relabelling the file would take it from every store domain that reads it as \
     `etc_t` (systemd, journald, D-Bus)";

/// The vocabulary, sorted by name.
pub static HOST_CLASSES: &[HostClass] = &[
    HostClass {
        name: "block-devices",
        group: Group::Device,
        summary: "block device nodes (disks, partitions, loop and device-mapper devices), as CSI node plugins format and mount them",
        paths: &[
            DEV,
            subtree("/dev/disk"),
            subtree("/dev/mapper"),
            names("/dev/dm-", ObjectKind::BlockDevice),
            names("/dev/loop", ObjectKind::BlockDevice),
            names("/dev/nvme", ObjectKind::BlockDevice),
            names("/dev/sd", ObjectKind::BlockDevice),
            names("/dev/vd", ObjectKind::BlockDevice),
            names("/dev/xvd", ObjectKind::BlockDevice),
        ],
        levels: READ_WRITE,
        standalone: &[Grant::Device("fixed_disk_device_t", DeviceClass::Block)],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: Some(BeyondLabels::RawDisk),
    },
    HostClass {
        name: "bpf",
        group: Group::KernelFilesystem,
        summary: "the BPF filesystem (/sys/fs/bpf) and the domain's own BPF maps and programs, as eBPF dataplanes (Cilium, Calico eBPF) pin them",
        paths: &[subtree("/sys/fs/bpf")],
        levels: READ_WRITE,
        standalone: &[
            Grant::Files("bpf_t"),
            Grant::OnSelf { class: "bpf", perms: "map_read", from: "read" },
            Grant::OnSelf {
                class: "bpf",
                perms: "map_create map_write prog_load prog_run",
                from: "write",
            },
        ],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: None,
    },
    HostClass {
        name: "cgroup",
        group: Group::KernelFilesystem,
        summary: "the cgroup filesystem (/sys/fs/cgroup), read: resource use per pod and container, as cAdvisor and node monitors read it",
        paths: &[subtree("/sys/fs/cgroup")],
        levels: READ,
        standalone: &[Grant::Files("cgroup_t")],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: None,
    },
    HostClass {
        name: "cni-bin",
        group: Group::Cni,
        summary: "the CNI plugin binaries (/opt/cni/bin) that the container runtime runs to set up pod networks",
        paths: &[subtree("/opt/cni")],
        levels: &["read", "exec", "write"],
        standalone: &[Grant::Files("cni_bin_t")],
        refpolicy: StoreGrants::Declared,
        container_selinux: StoreGrants::Declared,
        beyond_labels: Some(BeyondLabels::RuntimeCode { from: "write" }),
    },
    HostClass {
        name: "cni-config",
        group: Group::Cni,
        summary: "the CNI network configuration (/etc/cni/net.d) the container runtime reads",
        paths: &[subtree("/etc/cni")],
        levels: READ_WRITE,
        standalone: &[Grant::Files("cni_conf_t")],
        refpolicy: StoreGrants::Declared,
        container_selinux: StoreGrants::Declared,
        beyond_labels: None,
    },
    HostClass {
        name: "container-runtime",
        group: Group::Runtime,
        summary: "the container runtime's API socket (containerd, CRI-O), as monitors and log shippers ask it for pod metadata",
        paths: &[
            subtree("/run/containerd"),
            exact("/run/containerd/containerd.sock", ObjectKind::Socket),
            subtree("/run/crio"),
            exact("/run/crio/crio.sock", ObjectKind::Socket),
            subtree("/var/run/containerd"),
            exact("/var/run/containerd/containerd.sock", ObjectKind::Socket),
            subtree("/var/run/crio"),
            exact("/var/run/crio/crio.sock", ObjectKind::Socket),
        ],
        levels: WRITE,
        standalone: &[Grant::Socket {
            socket: "runtime_run_t",
            server: "containerd_t",
        }],
        refpolicy: StoreGrants::Types(&[Grant::Socket {
            socket: "container_runtime_t",
            server: "container_engine_t",
        }]),
        container_selinux: StoreGrants::Types(&[Grant::Socket {
            socket: "container_var_run_t",
            server: "container_runtime_t",
        }]),
        beyond_labels: Some(BeyondLabels::RuntimeApi),
    },
    HostClass {
        name: "fuse",
        group: Group::Device,
        summary: "/dev/fuse and mounting FUSE filesystems, as FUSE-based CSI drivers serve volumes",
        paths: &[DEV, exact("/dev/fuse", ObjectKind::CharDevice)],
        levels: WRITE,
        standalone: &[
            Grant::Device("fuse_device_t", DeviceClass::Char),
            Grant::Mount("fusefs_t"),
        ],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: None,
    },
    HostClass {
        name: "gpu",
        group: Group::Device,
        summary: "GPU device nodes (/dev/nvidia*, /dev/dri), as GPU device plugins and their workloads open them",
        paths: &[
            DEV,
            subtree("/dev/dri"),
            names("/dev/nvidia", ObjectKind::CharDevice),
        ],
        levels: WRITE,
        standalone: &[Grant::Device("gpu_device_t", DeviceClass::Char)],
        refpolicy: StoreGrants::Types(&[
            Grant::Device("xserver_misc_device_t", DeviceClass::Char),
            Grant::Device("dri_device_t", DeviceClass::Char),
        ]),
        container_selinux: StoreGrants::Types(&[
            Grant::Device("xserver_misc_device_t", DeviceClass::Char),
            Grant::Device("dri_device_t", DeviceClass::Char),
        ]),
        beyond_labels: None,
    },
    HostClass {
        name: "kernel-modules",
        group: Group::KernelModules,
        summary: "the kernel modules tree (/lib/modules), read: which modules and kernel configuration the node has (loading one stays privileged)",
        paths: &[subtree("/lib/modules"), subtree("/usr/lib/modules")],
        levels: READ,
        standalone: &[Grant::Files("modules_object_t")],
        refpolicy: StoreGrants::Types(&[
            Grant::Files("modules_object_t"),
            Grant::Files("modules_dep_t"),
        ]),
        container_selinux: StoreGrants::Types(&[
            Grant::Files("modules_object_t"),
            Grant::Files("modules_dep_t"),
        ]),
        beyond_labels: None,
    },
    HostClass {
        name: "kmsg",
        group: Group::Device,
        summary: "the kernel log (/dev/kmsg), read, as node-problem-detector and log shippers follow it",
        paths: &[DEV, exact("/dev/kmsg", ObjectKind::CharDevice)],
        levels: READ,
        standalone: &[
            Grant::Device("kmsg_device_t", DeviceClass::Char),
            Grant::System {
                target: "kernel_t",
                perms: "syslog_read",
            },
            Grant::OnSelf { class: "capability2", perms: "syslog", from: "read" },
        ],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: None,
    },
    HostClass {
        name: "kvm",
        group: Group::Device,
        summary: "/dev/kvm, as virtual machine agents (KubeVirt) run guests",
        paths: &[DEV, exact("/dev/kvm", ObjectKind::CharDevice)],
        levels: WRITE,
        standalone: &[Grant::Device("kvm_device_t", DeviceClass::Char)],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: None,
    },
    // One file, read only: the ID names the node and is no secret. Its
    // own type in the base policy (an exact `--` spec) and on
    // container-selinux (which lets every domain read it already); refused
    // on refpolicy, whose type for it is most of /etc's.
    HostClass {
        name: "machine-id",
        group: Group::HostIdentity,
        summary: "the machine ID (/etc/machine-id), read, as log shippers find the node's journal and monitors name the node",
        paths: &[exact("/etc/machine-id", ObjectKind::File)],
        levels: READ,
        standalone: &[Grant::Files("machineid_t")],
        refpolicy: StoreGrants::Refused(MACHINE_ID_ON_REFPOLICY),
        container_selinux: StoreGrants::Types(&[Grant::Files("machineid_t")]),
        beyond_labels: None,
    },
    HostClass {
        name: "mount",
        group: Group::Mount,
        summary: "mounting, remounting and unmounting filesystems on the paths the domain may write (ext4, XFS, tmpfs, NFS, bind mounts), with a pod's context= or not, as CSI node plugins publish volumes",
        paths: &[],
        levels: WRITE,
        standalone: &[
            Grant::Mount("fs_t"),
            Grant::Mount("tmpfs_t"),
            Grant::Mount("nfs_t"),
            Grant::MountContext("container_file_t"),
        ],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: None,
    },
    HostClass {
        name: "net-sysctl",
        group: Group::KernelFilesystem,
        summary: "the network sysctls (/proc/sys/net), as CNI agents enable forwarding and tune interfaces (not the kernel's other sysctls)",
        paths: &[subtree("/proc/sys/net")],
        levels: READ_WRITE,
        standalone: &[Grant::Files("sysctl_net_t")],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: None,
    },
    HostClass {
        name: "proc",
        group: Group::KernelFilesystem,
        summary: "/proc, read: kernel statistics, sysctls and every process's /proc/PID (mounts, status, environment), as node monitors read them",
        paths: &[subtree("/proc")],
        levels: READ,
        standalone: &[
            Grant::Files("proc_t"),
            Grant::Files("sysctl_t"),
            Grant::Files("sysctl_net_t"),
            Grant::Processes,
        ],
        refpolicy: StoreGrants::Types(&[
            Grant::Files("proc_t"),
            Grant::Files("proc_net_t"),
            Grant::Files("sysctl_type"),
            Grant::Processes,
        ]),
        container_selinux: StoreGrants::Types(&[
            Grant::Files("proc_t"),
            Grant::Files("proc_net_t"),
            Grant::Files("sysctl_type"),
            Grant::Processes,
        ]),
        beyond_labels: None,
    },
    HostClass {
        name: "sysfs",
        group: Group::KernelFilesystem,
        summary: "/sys, read: devices, buses and network interfaces as the kernel shows them (not the cgroup and BPF filesystems mounted below it)",
        paths: &[subtree("/sys")],
        levels: READ,
        standalone: &[Grant::Files("sysfs_t")],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: None,
    },
    HostClass {
        name: "tun",
        group: Group::Device,
        summary: "/dev/net/tun and tun/tap queues of the domain's own, as overlay and VPN network agents make interfaces",
        paths: &[DEV, exact("/dev/net/tun", ObjectKind::CharDevice)],
        levels: WRITE,
        standalone: &[
            Grant::Device("tun_tap_device_t", DeviceClass::Char),
            Grant::OnSelf { class: "tun_socket", perms: "create attach_queue", from: "write" },
        ],
        refpolicy: StoreGrants::AsStandalone,
        container_selinux: StoreGrants::AsStandalone,
        beyond_labels: None,
    },
    HostClass {
        name: "xtables-lock",
        group: Group::Runtime,
        summary: "the iptables lock file (/run/xtables.lock) that kube-proxy and CNI agents take before changing rules",
        paths: &[
            exact("/run/xtables.lock", ObjectKind::File),
            exact("/var/run/xtables.lock", ObjectKind::File),
        ],
        levels: WRITE,
        standalone: &[Grant::Files("xtables_lock_t")],
        refpolicy: StoreGrants::Types(&[Grant::Files("iptables_runtime_t")]),
        container_selinux: StoreGrants::Types(&[Grant::Files("iptables_var_run_t")]),
        beyond_labels: None,
    },
];

/// The class of that name.
pub fn class(name: &str) -> Option<&'static HostClass> {
    HOST_CLASSES.iter().find(|class| class.name == name)
}

/// The classes whose host paths cover a hostPath volume naming `path`
/// (absolute, normalised), each with its most specific covering host
/// path; only the classes with the most specific match of all (`/sys/fs/bpf`
/// is `bpf`, not `sysfs`; `/dev` is every device class).
pub fn classes_for(path: &str) -> Vec<(&'static HostClass, &'static HostPath)> {
    let mut found: Vec<(&'static HostClass, &'static HostPath)> = HOST_CLASSES
        .iter()
        .filter_map(|class| {
            class
                .covering(path)
                .max_by_key(|host| host.specificity())
                .map(|host| (class, host))
        })
        .collect();
    let best = found.iter().map(|(_, host)| host.specificity()).max();
    found.retain(|(_, host)| Some(host.specificity()) == best);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::AccessLevel;

    /// Absolute, no empty, `.` or `..` component, no trailing `/`.
    fn normalised(path: &str) -> bool {
        path.strip_prefix('/').is_some_and(|rest| {
            rest.split('/')
                .all(|c| !c.is_empty() && c != "." && c != "..")
        })
    }

    #[test]
    fn the_table_keeps_its_invariants() {
        let names: Vec<&str> = HOST_CLASSES.iter().map(|c| c.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "sorted and unique");
        for class in HOST_CLASSES {
            assert!(!class.levels.is_empty(), "{}", class.name);
            for level in class.levels {
                assert!(
                    AccessLevel::from_name(level).is_some(),
                    "{}: {level}",
                    class.name
                );
            }
            for host in class.paths {
                assert!(normalised(host.path), "{}: {}", class.name, host.path);
            }
            let same_shape = |grants: &[Grant]| -> Vec<std::mem::Discriminant<Grant>> {
                let mut kinds: Vec<_> = grants.iter().map(std::mem::discriminant).collect();
                kinds.dedup();
                kinds
            };
            for store in [class.refpolicy, class.container_selinux] {
                if let StoreGrants::Refused(why) = store {
                    assert!(!why.is_empty(), "{}: refused without a reason", class.name);
                    continue;
                }
                if let Some(grants) = class.store_types(store) {
                    assert_eq!(
                        same_shape(grants),
                        same_shape(class.standalone),
                        "{}: a store grants other kinds of things",
                        class.name
                    );
                }
            }
            for grant in class.standalone {
                if let Grant::OnSelf { from, .. } = grant {
                    assert!(class.admits(from), "{}: {from}", class.name);
                }
            }
        }
    }

    #[test]
    fn a_host_path_covers_what_its_scope_says() {
        let sd = names("/dev/sd", ObjectKind::BlockDevice);
        assert!(sd.covers("/dev/sda") && sd.covers("/dev/sdb1"));
        assert!(!sd.covers("/dev/sd/x") && !sd.covers("/dev/disk") && !sd.covers("/devx/sda"));
        let sys = subtree("/sys");
        assert!(sys.covers("/sys") && sys.covers("/sys/fs/bpf") && !sys.covers("/sysx"));
        let sock = exact("/run/crio/crio.sock", ObjectKind::Socket);
        assert!(sock.covers("/run/crio/crio.sock") && !sock.covers("/run/crio"));
    }

    #[test]
    fn a_hostpath_maps_to_its_most_specific_classes() {
        let names =
            |path: &str| -> Vec<&str> { classes_for(path).iter().map(|(c, _)| c.name).collect() };
        assert_eq!(names("/sys"), ["sysfs"]);
        assert_eq!(names("/proc/sys/net/ipv4"), ["net-sysctl"]);
        assert_eq!(names("/proc/sys"), ["proc"]);
        assert_eq!(names("/sys/fs/bpf"), ["bpf"]);
        assert_eq!(names("/sys/fs/bpf/tc"), ["bpf"]);
        assert_eq!(names("/sys/fs"), ["sysfs"]);
        assert_eq!(names("/dev/fuse"), ["fuse"]);
        assert_eq!(names("/dev/nvme0n1"), ["block-devices"]);
        assert_eq!(names("/dev/nvidia-uvm"), ["gpu"]);
        assert_eq!(
            names("/dev"),
            ["block-devices", "fuse", "gpu", "kmsg", "kvm", "tun"]
        );
        assert_eq!(
            names("/run/containerd/containerd.sock"),
            ["container-runtime"]
        );
        assert_eq!(names("/var/run/crio"), ["container-runtime"]);
        assert_eq!(names("/etc/cni/net.d"), ["cni-config"]);
        assert_eq!(names("/opt/cni/bin"), ["cni-bin"]);
        assert_eq!(names("/usr/lib/modules"), ["kernel-modules"]);
        assert_eq!(names("/etc/machine-id"), ["machine-id"]);
        // Controls: what no class covers.
        assert!(names("/dev/mem").is_empty());
        assert!(names("/etc").is_empty());
        assert!(names("/var/lib/etcd").is_empty());
        assert!(names("/run").is_empty());
    }

    #[test]
    fn machine_id_covers_the_machine_id_file_alone() {
        let class = class("machine-id").unwrap();
        assert_eq!(class.levels, ["read"]);
        assert!(class.covering("/etc/machine-id").next().is_some());
        // Controls: the rest of /etc, its siblings and what lies below it.
        for other in [
            "/etc",
            "/etc/hostname",
            "/etc/machine-idx",
            "/etc/machine-id/x",
            "/etc/machine",
            "/run/machine-id",
            "/var/lib/dbus/machine-id",
        ] {
            assert!(class.covering(other).next().is_none(), "{other}");
            assert!(classes_for(other)
                .iter()
                .all(|(c, _)| c.name != "machine-id"));
        }
        // A grant on refpolicy's `etc_t` would read all of /etc: refused.
        assert!(matches!(class.refpolicy, StoreGrants::Refused(_)));
        assert_eq!(class.store_types(class.refpolicy), Some(&[][..]));
    }
}
