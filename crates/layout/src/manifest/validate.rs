//! The rules of `docs/manifest.md`, applied to a parsed manifest. Every rule reports
//! through one [`Diagnostic`] code, and all of them run before we give up, so a
//! user sees every problem of a manifest at once.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_saphyr::Spanned;

use super::codes;
use super::raw::{
    Entries, Levels, RawCapacity, RawDomain, RawLayout, RawMount, RawNode, RawPath,
    RawPrivilegedException, RawStore,
};
use super::schema::{self, API_VERSION, KIND};
use super::BaseFacts;
use crate::diag::{Code, Diagnostic, Pos};
use crate::model::capability::{self, Capability, CAPABILITIES};
use crate::model::host::{self, BeyondLabels, HOST_CLASSES};
use crate::model::{
    is_within, Access, AccessLevel, BooleanGrants, Capacity, Domain, HostGrant, Layout, Lifecycle,
    Mount, MountFlag, NodeBoot, Owner, PathRule, PrivilegedException, Propagation, RuntimeUnit,
    Size, StoreOptions, StoreOwner,
};

fn pos(value: &Spanned<String>) -> Pos {
    Pos::of(&value.referenced, value.value.chars().count())
}

fn pos_of<T>(value: &Spanned<T>, width: usize) -> Pos {
    Pos::of(&value.referenced, width)
}

fn flag(value: &Option<Spanned<bool>>) -> bool {
    value.as_ref().is_some_and(|v| v.value)
}

/// Collects diagnostics; rules push into it and keep going.
struct Checker<'a> {
    base: &'a BaseFacts,
    diagnostics: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn error(
        &mut self,
        code: &'static Code,
        pos: Pos,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.diagnostics.push(Diagnostic::error(code, pos, message));
        self.diagnostics.last_mut().expect("just pushed")
    }

    fn warning(&mut self, code: &'static Code, pos: Pos, message: impl Into<String>) {
        self.diagnostics
            .push(Diagnostic::warning(code, pos, message));
    }
}

trait Help {
    fn help(&mut self, text: impl Into<String>);
}

impl Help for Diagnostic {
    fn help(&mut self, text: impl Into<String>) {
        self.help = Some(text.into());
    }
}

/// Validates `raw`; returns the model and the warnings, or every diagnostic
/// (errors and warnings) when any rule failed.
pub(crate) fn validate(
    raw: &RawLayout,
    base: &BaseFacts,
) -> Result<(Layout, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut checker = Checker {
        base,
        diagnostics: Vec::new(),
    };
    let layout = check_layout(raw, &mut checker);
    checker.diagnostics.sort_by_key(|d| d.pos);
    if checker.diagnostics.iter().any(Diagnostic::is_error) {
        Err(checker.diagnostics)
    } else {
        Ok((layout, checker.diagnostics))
    }
}

fn check_layout(raw: &RawLayout, checker: &mut Checker<'_>) -> Layout {
    if raw.api_version.value != API_VERSION {
        checker
            .error(
                &codes::API_VERSION,
                pos(&raw.api_version),
                format!("unsupported apiVersion `{}`", raw.api_version.value),
            )
            .help(format!("this semanifest reads `apiVersion: {API_VERSION}`"));
    }
    if raw.kind.value != KIND {
        checker
            .error(
                &codes::KIND,
                pos(&raw.kind),
                format!("unsupported kind `{}`", raw.kind.value),
            )
            .help(format!("a layout manifest has `kind: {KIND}`"));
    }
    let name = &raw.metadata.name;
    if !is_dns_label(&name.value) {
        checker
            .error(&codes::METADATA_NAME, pos(name), format!("invalid layout name `{}`", name.value))
            .help("use lowercase letters, digits and `-`, starting with a letter (it becomes the CIL module name with `-` → `_`)");
    }

    let domains = check_domains(&raw.spec.domains.value.0, checker);
    let keys: HashMap<&str, usize> = domains
        .iter()
        .enumerate()
        .map(|(i, d)| (d.key.as_str(), i))
        .collect();
    let domain_types: BTreeSet<&str> = domains.iter().map(|d| d.type_name.as_str()).collect();

    let mut paths: Vec<PathRule> = Vec::new();
    let mut seen_paths: HashMap<String, Pos> = HashMap::new();
    for raw_path in &raw.spec.paths {
        let Some(rule) = check_path(raw_path, &keys, &domains, &domain_types, checker) else {
            continue;
        };
        if let Some(first) = seen_paths.get(&rule.path) {
            checker
                .error(
                    &codes::PATH_DUPLICATE,
                    rule.pos,
                    format!("path `{}` is declared twice", rule.path),
                )
                .help(format!(
                    "first declared at line {}; merge the two entries",
                    first.line
                ));
            continue;
        }
        seen_paths.insert(rule.path.clone(), rule.pos);
        paths.push(rule);
    }
    // Parents before children: stable for output, and `rule_for` relies on
    // nothing else.
    paths.sort_by(|a, b| a.path.cmp(&b.path));

    check_shared_types(&paths, checker);
    check_protection(&paths, &domains, checker);
    check_transitions(&paths, &domains, checker);
    check_unused_domains(&paths, &domains, checker);
    check_capacities(&paths, checker);
    let node = check_node(raw.spec.node.as_ref(), checker);
    let store = check_store(raw.spec.store.as_ref(), checker);
    let privileged_exceptions =
        check_privileged_exceptions(&raw.spec.privileged_exceptions, checker);

    Layout {
        name: name.value.clone(),
        module: name.value.replace('-', "_"),
        description: raw.metadata.description.clone(),
        domains,
        paths,
        node,
        store,
        privileged_exceptions,
    }
}

/// `spec.privilegedExceptions`: each a namespace (a DNS label), a workload
/// name (a DNS subdomain) and a reason, each (namespace, name) once.
fn check_privileged_exceptions(
    raw: &[RawPrivilegedException],
    checker: &mut Checker<'_>,
) -> Vec<PrivilegedException> {
    let mut exceptions: Vec<PrivilegedException> = Vec::new();
    for entry in raw {
        let mut valid = true;
        if !is_dns_label(&entry.namespace.value) {
            valid = false;
            checker
                .error(
                    &codes::PRIVILEGED_EXCEPTION,
                    pos(&entry.namespace),
                    format!("invalid namespace `{}`", entry.namespace.value),
                )
                .help("a namespace is a DNS label: lowercase letters, digits and `-`, at most 63 characters");
        }
        if !is_object_name(&entry.name.value) {
            valid = false;
            checker
                .error(
                    &codes::PRIVILEGED_EXCEPTION,
                    pos(&entry.name),
                    format!("invalid workload name `{}`", entry.name.value),
                )
                .help("name the workload as its metadata.name: lowercase letters, digits, `-` and `.`, at most 253 characters");
        }
        if entry.reason.value.trim().is_empty() {
            valid = false;
            checker
                .error(
                    &codes::PRIVILEGED_EXCEPTION,
                    pos_of(&entry.reason, 0),
                    "a privileged exception needs a reason",
                )
                .help("say why the workload must run unconfined; reviews and every note it excuses show it");
        }
        if let Some(first) = exceptions
            .iter()
            .find(|e| e.namespace == entry.namespace.value && e.name == entry.name.value)
        {
            valid = false;
            checker
                .error(
                    &codes::PRIVILEGED_EXCEPTION,
                    pos(&entry.name),
                    format!(
                        "workload `{}/{}` is excepted twice",
                        entry.namespace.value, entry.name.value
                    ),
                )
                .help(format!(
                    "first excepted at line {}; keep one entry",
                    first.pos.line
                ));
        }
        if valid {
            exceptions.push(PrivilegedException {
                namespace: entry.namespace.value.clone(),
                name: entry.name.value.clone(),
                reason: entry.reason.value.trim().to_owned(),
                pos: pos(&entry.name),
            });
        }
    }
    exceptions
}

/// A Kubernetes object name: a DNS subdomain (RFC 1123) of at most 253
/// characters.
fn is_object_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 253
        && bytes.first().is_some_and(inner)
        && bytes.last().is_some_and(inner)
        && bytes.iter().all(|b| inner(b) || *b == b'-' || *b == b'.')
}

/// `spec.store`: how the module target treats boolean-only grants.
fn check_store(raw: Option<&RawStore>, checker: &mut Checker<'_>) -> StoreOptions {
    let mut options = StoreOptions::default();
    let Some(value) = raw.and_then(|r| r.boolean_grants.as_ref()) else {
        return options;
    };
    match BooleanGrants::ALL
        .iter()
        .find(|(name, _)| *name == value.value)
    {
        Some((_, grants)) => options.boolean_grants = *grants,
        None => {
            checker
                .error(
                    &codes::BOOLEAN_GRANTS,
                    pos(value),
                    format!("unknown booleanGrants `{}`", value.value),
                )
                .help("one of: always (default), byDefault");
        }
    }
    options
}

/// `spec.node`: runtime unit names, their commands, and kubens.
fn check_node(raw: Option<&RawNode>, checker: &mut Checker<'_>) -> NodeBoot {
    let Some(raw) = raw else {
        return NodeBoot::default();
    };
    let kubens = flag(&raw.kubens);
    let Some(raw_units) = &raw.runtime else {
        return NodeBoot {
            kubens,
            runtime: NodeBoot::default_runtime(),
        };
    };
    let mut runtime = Vec::new();
    let mut seen: HashMap<&str, Pos> = HashMap::new();
    for raw_unit in raw_units {
        let unit = &raw_unit.unit;
        if !is_unit_name(&unit.value) {
            checker
                .error(&codes::NODE_UNIT, pos(unit), format!("invalid unit name `{}`", unit.value))
                .help("a service unit: letters, digits, `:_.-` and at most one `@instance`, ending in `.service`, at most 255 characters");
        } else if NodeBoot::GENERATED_SERVICES.contains(&unit.value.as_str()) {
            checker
                .error(
                    &codes::NODE_UNIT,
                    pos(unit),
                    format!("`{}` is a unit semanifest generates itself", unit.value),
                )
                .help("list the container runtime and kubelet units that must wait for it");
        } else if let Some(first) = seen.get(unit.value.as_str()) {
            checker
                .error(
                    &codes::NODE_UNIT_DUPLICATE,
                    pos(unit),
                    format!("unit `{}` is listed twice", unit.value),
                )
                .help(format!("first listed at line {}", first.line));
        }
        seen.entry(&unit.value).or_insert(pos(unit));
        if let Some(exec) = &raw_unit.exec {
            if !is_exec(&exec.value) {
                checker
                    .error(&codes::NODE_EXEC, pos(exec), format!("invalid command `{}`", exec.value.escape_debug()))
                    .help("an ExecStart= line on one line of printable ASCII: an absolute path, then the arguments");
            }
        } else if kubens {
            checker
                .error(
                    &codes::KUBENS_EXEC,
                    pos(unit),
                    format!("`{}` has no `exec`, which kubens needs", unit.value),
                )
                .help("kubens replaces the unit's command with `kubensenter COMMAND`: write the unit's ExecStart= line as `exec`");
        }
        runtime.push(RuntimeUnit {
            unit: unit.value.clone(),
            exec: raw_unit.exec.as_ref().map(|e| e.value.clone()),
        });
    }
    if kubens && runtime.is_empty() {
        if let Some(flag) = &raw.kubens {
            checker
                .error(&codes::KUBENS_EXEC, pos_of(flag, 4), "kubens is on, but no runtime unit is listed to start in it")
                .help("list the runtime units under `runtime`, or leave `runtime` out for containerd, crio and kubelet");
        }
    }
    NodeBoot { kubens, runtime }
}

/// `NAME.service` or `NAME@INSTANCE.service`, as systemd names services.
fn is_unit_name(text: &str) -> bool {
    let Some(stem) = text.strip_suffix(".service") else {
        return false;
    };
    let valid = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'.' | b'-'))
    };
    text.len() <= schema::UNIT_NAME_MAX
        && match stem.split_once('@') {
            Some((prefix, instance)) => valid(prefix) && valid(instance),
            None => valid(stem),
        }
}

/// An ExecStart= command on one line: an absolute path of at least one
/// name, then the arguments, all printable ASCII.
fn is_exec(text: &str) -> bool {
    let first = text.split(' ').next().unwrap_or_default();
    text.starts_with('/') && first.len() > 1 && text.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

/// `64m`, `1048576`, `20%`: what tmpfs reads as `size=`.
fn is_tmpfs_size(text: &str) -> bool {
    if let Some(percent) = text.strip_suffix('%') {
        return !percent.starts_with('0')
            && percent.parse::<u32>().is_ok_and(|p| (1..=100).contains(&p))
            && percent.bytes().all(|b| b.is_ascii_digit());
    }
    let digits = text
        .strip_suffix(['k', 'm', 'g', 'K', 'M', 'G'])
        .unwrap_or(text);
    !digits.starts_with('0')
        && (1..=16).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
}

fn check_domains(
    entries: &[(Spanned<String>, RawDomain)],
    checker: &mut Checker<'_>,
) -> Vec<Domain> {
    let mut domains = Vec::new();
    let mut by_type: HashMap<String, Pos> = HashMap::new();
    let keys: BTreeSet<&str> = entries.iter().map(|(k, _)| k.value.as_str()).collect();
    for (key, raw) in entries {
        if !is_identifier(&key.value) {
            checker
                .error(
                    &codes::DOMAIN_KEY,
                    pos(key),
                    format!("invalid domain key `{}`", key.value),
                )
                .help("use lowercase letters, digits, `_` and `-`, starting with a letter");
        }
        let type_name = &raw.type_name;
        check_type_name(type_name, checker);
        if let Some(first) = by_type.get(&type_name.value) {
            checker
                .error(
                    &codes::DOMAIN_TYPE_DUPLICATE,
                    pos(type_name),
                    format!("type `{}` already names another domain", type_name.value),
                )
                .help(format!(
                    "first used at line {}; one domain per type",
                    first.line
                ));
        }
        by_type.insert(type_name.value.clone(), pos(type_name));
        let workload = flag(&raw.workload);
        let trusted = flag(&raw.trusted);
        if workload && trusted {
            let at = raw
                .trusted
                .as_ref()
                .map(|t| pos_of(t, 4))
                .unwrap_or(pos(key));
            checker
                .error(
                    &codes::WORKLOAD_TRUSTED,
                    at,
                    format!("workload domain `{}` cannot be trusted", key.value),
                )
                .help("a workload runs untrusted pods; give trust to a separate system domain");
        }
        for target in &raw.transitions {
            if !keys.contains(target.value.as_str()) {
                checker.error(
                    &codes::UNKNOWN_DOMAIN,
                    pos(target),
                    format!("transition to unknown domain `{}`", target.value),
                );
            }
        }
        for target in &raw.connect {
            if !keys.contains(target.value.as_str()) {
                checker.error(
                    &codes::UNKNOWN_DOMAIN,
                    pos(target),
                    format!("connection to unknown domain `{}`", target.value),
                );
            }
        }
        let agent = check_agent(&key.value, raw, checker);
        domains.push(Domain {
            key: key.value.clone(),
            type_name: type_name.value.clone(),
            workload,
            agent: agent.is_agent,
            mcs: workload || agent.mcs,
            trusted,
            in_base: checker.base.types.contains(&type_name.value),
            transitions: Vec::new(),
            connect: Vec::new(),
            host: agent.host,
            capabilities: agent.capabilities,
            pos: pos(key),
        });
    }
    // Resolve transitions once every key is known.
    let index: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.value.as_str(), i))
        .collect();
    for (i, (_, raw)) in entries.iter().enumerate() {
        domains[i].connect = raw
            .connect
            .iter()
            .filter_map(|t| index.get(t.value.as_str()).copied())
            .collect();
        domains[i].transitions = raw
            .transitions
            .iter()
            .filter_map(|t| index.get(t.value.as_str()).copied())
            .collect();
    }
    domains
}

/// What the agent fields of one domain say, once checked.
struct AgentFields {
    is_agent: bool,
    mcs: bool,
    host: Vec<HostGrant>,
    capabilities: Vec<&'static Capability>,
}

/// `agent`, `mcs`, `host` and `capabilities` of one domain: only an agent
/// holds the last three, never as a workload or trusted, and only what the
/// vocabulary admits.
fn check_agent(key: &str, raw: &RawDomain, checker: &mut Checker<'_>) -> AgentFields {
    let is_agent = flag(&raw.agent);
    check_agent_role(key, raw, is_agent, checker);
    let mcs = check_agent_mcs(key, raw, is_agent, checker);
    let host = check_host_grants(key, raw, is_agent, checker);
    let (capabilities, sys_admin) = check_capabilities(key, raw, is_agent, checker);
    check_bpf_sys_admin(key, &host, sys_admin, checker);
    warn_beyond_labels(key, &host, checker);
    AgentFields {
        is_agent,
        mcs,
        host,
        capabilities,
    }
}

/// An agent is neither a workload nor trusted.
fn check_agent_role(key: &str, raw: &RawDomain, is_agent: bool, checker: &mut Checker<'_>) {
    let agent_pos = raw.agent.as_ref().map(|a| pos_of(a, 4));
    let Some(at) = agent_pos.filter(|_| is_agent) else {
        return;
    };
    if flag(&raw.workload) {
        checker
            .error(
                &codes::AGENT_WORKLOAD,
                at,
                format!("domain `{key}` is both a workload and an agent"),
            )
            .help("a workload is a pod with hostPath volumes, MCS-separated and granted no host classes; an agent is a node DaemonSet with its own grants: pick one");
    }
    if flag(&raw.trusted) {
        checker
            .error(
                &codes::AGENT_TRUSTED,
                at,
                format!("agent domain `{key}` cannot be trusted"),
            )
            .help("agents run third-party DaemonSets; grant the paths and host classes it needs instead");
    }
}

/// `mcs`: whether an agent's containers get categories; nothing else may say.
fn check_agent_mcs(key: &str, raw: &RawDomain, is_agent: bool, checker: &mut Checker<'_>) -> bool {
    let Some(mcs) = &raw.mcs else {
        return false;
    };
    if is_agent {
        return mcs.value;
    }
    let why = if flag(&raw.workload) {
        "workloads are always MCS-separated"
    } else {
        "the runtime gives categories only to the containers it starts"
    };
    checker
        .error(
            &codes::AGENT_FIELD,
            pos_of(mcs, 4),
            format!("`mcs` is for agent domains, and `{key}` is none"),
        )
        .help(format!("{why}; remove `mcs`, or add `agent: true`"));
    false
}

/// `host`: the host classes an agent is granted, sorted by class name.
fn check_host_grants(
    key: &str,
    raw: &RawDomain,
    is_agent: bool,
    checker: &mut Checker<'_>,
) -> Vec<HostGrant> {
    let Some(host) = &raw.host else {
        return Vec::new();
    };
    if !is_agent {
        checker
            .error(
                &codes::AGENT_FIELD,
                pos_of(host, 0),
                format!("`host` is for agent domains, and `{key}` is none"),
            )
            .help("add `agent: true` if the runtime starts this domain for a node DaemonSet");
    }
    let mut grants: Vec<HostGrant> = host
        .value
        .0
        .iter()
        .filter_map(|(name, levels)| check_host_grant(name, levels, checker))
        .collect();
    grants.sort_by_key(|grant| grant.class.name);
    grants
}

/// One `class: [levels]` entry of `host`: a known class, at levels it admits.
fn check_host_grant(
    name: &Spanned<String>,
    levels: &Spanned<Levels>,
    checker: &mut Checker<'_>,
) -> Option<HostGrant> {
    let Some(class) = host::class(&name.value) else {
        let known: Vec<&str> = HOST_CLASSES.iter().map(|c| c.name).collect();
        checker
            .error(
                &codes::HOST_CLASS,
                pos(name),
                format!("unknown host class `{}`", name.value),
            )
            .help(format!(
                "host classes: {} (docs/agents.md says what each covers)",
                known.join(", ")
            ));
        return None;
    };
    let mut admitted = true;
    for level in &levels.value.0 {
        if AccessLevel::from_name(level).is_some() && !class.admits(level) {
            admitted = false;
            checker
                .error(
                    &codes::HOST_LEVEL,
                    Pos {
                        width: level.chars().count() as u32,
                        ..Pos::of(&levels.referenced, 0)
                    },
                    format!("host class `{}` does not admit `{level}`", class.name),
                )
                .help(format!(
                    "`{}` admits {}: {}",
                    class.name,
                    class.levels.join(", "),
                    class.summary
                ));
        }
    }
    let access = parse_levels(levels, checker).filter(|_| admitted)?;
    Some(HostGrant {
        class,
        access,
        pos: pos(name),
    })
}

/// `capabilities`: the known, grantable ones beyond the default set, in
/// vocabulary order, and where `sys_admin` was named (the BPF rule needs it).
fn check_capabilities(
    key: &str,
    raw: &RawDomain,
    is_agent: bool,
    checker: &mut Checker<'_>,
) -> (Vec<&'static Capability>, Option<Pos>) {
    if let Some(first) = raw.capabilities.first().filter(|_| !is_agent) {
        checker
            .error(
                &codes::AGENT_FIELD,
                pos(first),
                format!("`capabilities` are for agent domains, and `{key}` is none"),
            )
            .help("add `agent: true` if the runtime starts this domain for a node DaemonSet");
    }
    let mut capabilities: Vec<&'static Capability> = Vec::new();
    let mut sys_admin = None;
    for name in &raw.capabilities {
        match capability::capability(&name.value) {
            Some(Capability {
                refused: Some(why), ..
            }) => {
                checker
                    .error(
                        &codes::CAPABILITY,
                        pos(name),
                        format!("no agent may hold `{}`", name.value),
                    )
                    .help(format!(
                        "{why}; such a DaemonSet stays privileged by design"
                    ));
            }
            Some(found) => {
                if found.name == "sys_admin" {
                    sys_admin = Some(pos(name));
                }
                if !found.default && !capabilities.contains(&found) {
                    capabilities.push(found);
                }
            }
            None => {
                let help = match capability::from_kubernetes(&name.value) {
                    Some(known) => format!("write `{}` (SELinux names capabilities in lowercase, without CAP_)", known.name),
                    None => "capabilities are Linux's, by their SELinux names: sys_admin, net_admin, dac_read_search, …".to_owned(),
                };
                checker
                    .error(
                        &codes::CAPABILITY,
                        pos(name),
                        format!("unknown capability `{}`", name.value),
                    )
                    .help(help);
            }
        }
    }
    let order = |c: &&Capability| CAPABILITIES.iter().position(|known| known == *c);
    capabilities.sort_by_key(order);
    (capabilities, sys_admin)
}

/// A BPF loader with `sys_admin` may load tracing programs.
fn check_bpf_sys_admin(
    key: &str,
    host: &[HostGrant],
    sys_admin: Option<Pos>,
    checker: &mut Checker<'_>,
) {
    let loads_bpf = host
        .iter()
        .any(|grant| grant.class.name == "bpf" && grant.includes("write"));
    if let Some(at) = sys_admin.filter(|_| loads_bpf) {
        checker
            .error(
                &codes::AGENT_BPF_SYS_ADMIN,
                at,
                format!("agent `{key}` may load BPF programs and holds `sys_admin`"),
            )
            .help("with sys_admin the kernel lets a BPF loader load tracing programs, which read kernel memory past every label; an eBPF dataplane needs `bpf` and `net_admin`, not `sys_admin`");
    }
}

/// Warns of the host grants whose reach labels do not bound.
fn warn_beyond_labels(key: &str, host: &[HostGrant], checker: &mut Checker<'_>) {
    for grant in host {
        let why = match grant.class.beyond_labels {
            Some(BeyondLabels::RawDisk) => Some((
                &codes::AGENT_RAW_DISK,
                "a disk holds every file of its filesystems whatever their labels, protected paths included: only for a CSI driver you trust with the node's disks",
            )),
            Some(BeyondLabels::RuntimeApi) => Some((
                &codes::AGENT_RUNTIME,
                "the runtime starts containers on request, in any domain it may start and with any host path mounted: the agent holds the runtime's authority",
            )),
            Some(BeyondLabels::RuntimeCode { from }) if grant.includes(from) => Some((
                &codes::AGENT_RUNTIME,
                "the runtime executes what the agent writes here in its own domain: the agent holds the runtime's authority",
            )),
            _ => None,
        };
        if let Some((code, why)) = why {
            checker.warning(
                code,
                grant.pos,
                format!(
                    "agent `{key}` is granted `{}: {}`: {why}",
                    grant.class.name,
                    grant.access.names().join("+")
                ),
            );
        }
    }
}

/// The names a path's rules check against: the domains declared, by key and
/// by type.
struct DomainNames<'a> {
    keys: &'a HashMap<&'a str, usize>,
    domains: &'a [Domain],
    types: &'a BTreeSet<&'a str>,
}

/// One entry of `spec.paths`, each field checked on its own; the rule is
/// returned when its path is usable, whatever else is wrong with it.
fn check_path(
    raw: &RawPath,
    keys: &HashMap<&str, usize>,
    domains: &[Domain],
    domain_types: &BTreeSet<&str>,
    checker: &mut Checker<'_>,
) -> Option<PathRule> {
    let names = DomainNames {
        keys,
        domains,
        types: domain_types,
    };
    let path_pos = pos(&raw.path);
    let path_ok = check_path_text(&raw.path.value, path_pos, checker);
    let in_base = check_path_type(raw, path_pos, &names, checker);
    let mode = check_mode(raw.mode.as_ref(), checker);
    let owner = check_owner(raw.owner.as_ref(), checker);
    let access = check_access(raw.access.as_ref(), &names, checker);
    let lifecycle = check_lifecycle(raw.lifecycle.as_ref(), checker);
    let mount = raw
        .mount
        .as_ref()
        .map(|raw_mount| check_mount(raw, raw_mount, lifecycle, checker))
        .unwrap_or_default();
    let store_owners = check_store_owners(&raw.store_owners, &names, checker);
    let capacity = raw
        .capacity
        .as_ref()
        .and_then(|capacity| check_capacity(&raw.path.value, capacity, checker));

    path_ok.then(|| PathRule {
        path: raw.path.value.clone(),
        type_name: raw.type_name.value.clone(),
        type_in_base: in_base,
        base_type: flag(&raw.base_type),
        description: raw.description.clone(),
        mode,
        owner,
        access,
        protected: flag(&raw.protected),
        host_path: flag(&raw.host_path),
        removable: flag(&raw.removable),
        lifecycle,
        mount,
        capacity,
        pos: path_pos,
        protected_pos: raw
            .protected
            .as_ref()
            .filter(|p| p.value)
            .map(|p| pos_of(p, 4)),
        store_owners,
    })
}

/// `type` and `baseType`: a new file type, or the base policy's on purpose,
/// never a domain's. Returns whether the base policy has the type.
fn check_path_type(
    raw: &RawPath,
    path_pos: Pos,
    names: &DomainNames<'_>,
    checker: &mut Checker<'_>,
) -> bool {
    let type_name = &raw.type_name;
    check_type_name(type_name, checker);
    let declared_base = flag(&raw.base_type);
    let in_base = checker.base.types.contains(&type_name.value);
    if in_base && !declared_base && !checker.base.adopt_existing {
        checker.error(&codes::BASE_TYPE, pos(type_name), format!("`{}` is a type of the base policy", type_name.value)).help(
            "pick a new type for this path, or add `baseType: true` to label it with the base policy's type on purpose",
        );
    } else if declared_base && !in_base {
        let at = raw
            .base_type
            .as_ref()
            .map(|b| pos_of(b, 4))
            .unwrap_or(path_pos);
        checker.error(
            &codes::BASE_TYPE,
            at,
            format!(
                "`baseType: true`, but the base policy has no type `{}`",
                type_name.value
            ),
        );
    }
    if names.types.contains(type_name.value.as_str()) {
        checker
            .error(
                &codes::TYPE_IS_DOMAIN,
                pos(type_name),
                format!(
                    "`{}` is a domain's type and cannot label files",
                    type_name.value
                ),
            )
            .help("file types and process types are separate; name this one e.g. `<name>_var_t`");
    }
    in_base
}

/// `mode`: an octal string.
fn check_mode(raw: Option<&Spanned<String>>, checker: &mut Checker<'_>) -> Option<u32> {
    let mode = raw?;
    let parsed = parse_mode(&mode.value);
    if parsed.is_none() {
        checker
            .error(
                &codes::MODE,
                pos(mode),
                format!("invalid mode `{}`", mode.value),
            )
            .help("write the octal mode as a quoted string, e.g. mode: \"0750\"");
    }
    parsed
}

/// `owner`: a user name or `uid:gid`.
fn check_owner(raw: Option<&Spanned<String>>, checker: &mut Checker<'_>) -> Option<Owner> {
    let owner = raw?;
    let parsed = parse_owner(&owner.value);
    if parsed.is_none() {
        checker
            .error(
                &codes::OWNER,
                pos(owner),
                format!("invalid owner `{}`", owner.value),
            )
            .help("use a user name (`etcd`) or numeric `uid:gid` (`1000:1000`)");
    }
    parsed
}

/// `access`: levels per declared domain, by the domain's index.
fn check_access(
    raw: Option<&Spanned<Entries<Spanned<Levels>>>>,
    names: &DomainNames<'_>,
    checker: &mut Checker<'_>,
) -> BTreeMap<usize, Access> {
    let mut access = BTreeMap::new();
    let Some(entries) = raw else {
        return access;
    };
    for (key, levels) in &entries.value.0 {
        let Some(&domain) = names.keys.get(key.value.as_str()) else {
            let known: Vec<&str> = names.domains.iter().map(|d| d.key.as_str()).collect();
            checker
                .error(
                    &codes::UNKNOWN_DOMAIN,
                    pos(key),
                    format!("access for unknown domain `{}`", key.value),
                )
                .help(format!(
                    "declare it under spec.domains (known: {})",
                    known.join(", ")
                ));
            continue;
        };
        if let Some(grant) = parse_levels(levels, checker) {
            access.insert(domain, grant);
        }
    }
    access
}

/// `lifecycle`: persistent unless it says otherwise.
fn check_lifecycle(raw: Option<&Spanned<String>>, checker: &mut Checker<'_>) -> Lifecycle {
    let Some(value) = raw else {
        return Lifecycle::Persistent;
    };
    match Lifecycle::ALL.iter().find(|(name, _)| *name == value.value) {
        Some((_, lifecycle)) => *lifecycle,
        None => {
            checker
                .error(
                    &codes::LIFECYCLE,
                    pos(value),
                    format!("unknown lifecycle `{}`", value.value),
                )
                .help("one of: persistent (default), ephemeral, cache");
            Lifecycle::Persistent
        }
    }
}

/// `mount`: tmpfs and its size, propagation, and the bind-mount flags.
fn check_mount(
    raw: &RawPath,
    raw_mount: &RawMount,
    lifecycle: Lifecycle,
    checker: &mut Checker<'_>,
) -> Mount {
    let mut mount = Mount {
        tmpfs: flag(&raw_mount.tmpfs),
        ..Mount::default()
    };
    mount.propagation = raw_mount
        .propagation
        .as_ref()
        .and_then(|value| check_propagation(value, checker));
    if let Some(size) = &raw_mount.size {
        mount.size = check_tmpfs_size(&raw.path.value, size, mount.tmpfs, checker);
    }
    mount.options = check_mount_options(raw_mount.options.iter().flatten(), checker);
    if mount.tmpfs && lifecycle == Lifecycle::Persistent {
        let at = raw_mount
            .tmpfs
            .as_ref()
            .map(|t| pos_of(t, 4))
            .unwrap_or(pos(&raw.path));
        checker.warning(
            &codes::TMPFS_PERSISTENT,
            at,
            format!(
                "`{}` is a tmpfs, so its content is lost at every boot; declare `lifecycle: ephemeral`",
                raw.path.value
            ),
        );
    }
    mount
}

fn check_propagation(value: &Spanned<String>, checker: &mut Checker<'_>) -> Option<Propagation> {
    let found = Propagation::ALL
        .iter()
        .find(|(name, _)| *name == value.value)
        .map(|(_, p)| *p);
    if found.is_none() {
        checker
            .error(
                &codes::PROPAGATION,
                pos(value),
                format!("unknown propagation `{}`", value.value),
            )
            .help("one of: private, rprivate, shared, rshared, slave, rslave");
    }
    found
}

/// `size`: only a tmpfs has one.
fn check_tmpfs_size(
    path: &str,
    size: &Spanned<String>,
    tmpfs: bool,
    checker: &mut Checker<'_>,
) -> Option<String> {
    if !is_tmpfs_size(&size.value) {
        checker
            .error(
                &codes::TMPFS_SIZE,
                pos(size),
                format!("invalid tmpfs size `{}`", size.value),
            )
            .help("bytes with an optional k, m or g suffix (`64m`), or a percentage of RAM from 1 to 100 (`20%`)");
        None
    } else if !tmpfs {
        checker
            .error(
                &codes::TMPFS_SIZE,
                pos(size),
                format!("`size` is a tmpfs's size, but `{path}` is not a tmpfs"),
            )
            .help("add `tmpfs: true`, or remove `size`");
        None
    } else {
        Some(size.value.clone())
    }
}

/// `options`: known flags, each once, sorted.
fn check_mount_options<'a>(
    options: impl Iterator<Item = &'a Spanned<String>>,
    checker: &mut Checker<'_>,
) -> Vec<MountFlag> {
    let mut flags = Vec::new();
    for option in options {
        match MountFlag::ALL
            .iter()
            .find(|(name, _)| *name == option.value)
        {
            Some((_, flag)) if flags.contains(flag) => {
                checker.error(
                    &codes::MOUNT_OPTION,
                    pos(option),
                    format!("mount option `{}` is listed twice", option.value),
                );
            }
            Some((_, flag)) => flags.push(*flag),
            None => {
                checker
                    .error(
                        &codes::MOUNT_OPTION,
                        pos(option),
                        format!("unknown mount option `{}`", option.value),
                    )
                    .help("one of: nodev, nosuid, noexec (the flags a bind mount of the path onto itself can carry)");
            }
        }
    }
    flags.sort();
    flags
}

/// `storeOwners`: the store's own domains, each once, none of the layout's.
fn check_store_owners(
    raw: &[Spanned<String>],
    names: &DomainNames<'_>,
    checker: &mut Checker<'_>,
) -> Vec<StoreOwner> {
    let mut store_owners: Vec<StoreOwner> = Vec::new();
    for owner in raw {
        check_type_name(owner, checker);
        if store_owners.iter().any(|o| o.type_name == owner.value) {
            checker
                .error(
                    &codes::STORE_OWNER,
                    pos(owner),
                    format!("store owner `{}` is named twice", owner.value),
                )
                .help("name each store domain once");
            continue;
        }
        if names.types.contains(owner.value.as_str()) {
            checker
                .error(
                    &codes::STORE_OWNER,
                    pos(owner),
                    format!("`{}` is a layout domain's type", owner.value),
                )
                .help("grant layout domains with `access`; `storeOwners` names the store's own domains (auditd_t)");
            continue;
        }
        store_owners.push(StoreOwner {
            type_name: owner.value.clone(),
            pos: pos(owner),
        });
    }
    store_owners
}

/// `capacity:`: the sizes and the project ID of one path.
fn check_capacity(
    path: &str,
    raw: &Spanned<RawCapacity>,
    checker: &mut Checker<'_>,
) -> Option<Capacity> {
    let mut ok = true;
    let limit = match &raw.value.limit {
        None => None,
        Some(text) => match parse_size(&text.value) {
            Some(bytes) => Some(Size {
                text: text.value.clone(),
                bytes,
            }),
            None => {
                checker
                    .error(
                        &codes::CAPACITY_LIMIT,
                        pos(text),
                        format!("invalid capacity limit `{}`", text.value),
                    )
                    .help("bytes, or a number with a suffix: Ki, Mi, Gi, Ti, Pi (powers of 1024) or k, M, G, T, P (powers of 1000), e.g. `20Gi`");
                ok = false;
                None
            }
        },
    };
    let inodes = raw.value.inodes.as_ref().map(|inodes| {
        if inodes.value == 0 {
            checker
                .error(
                    &codes::CAPACITY_INODES,
                    pos_of(inodes, 1),
                    "an inode limit of 0 would refuse every object, the directory's own included",
                )
                .help("leave `inodes` out for no limit on the number of objects");
            ok = false;
        }
        inodes.value
    });
    let (project, project_pinned) = match &raw.value.project {
        None => (Capacity::derived_project(path), false),
        Some(project) => {
            if !(1..=schema::PROJECT_MAX).contains(&project.value) {
                checker
                    .error(
                        &codes::CAPACITY_PROJECT,
                        pos_of(project, project.value.to_string().len()),
                        format!("project ID {} is out of range", project.value),
                    )
                    .help(format!(
                        "a project ID is from 1 to {} (0 is every filesystem's default project)",
                        schema::PROJECT_MAX
                    ));
                ok = false;
            }
            (u32::try_from(project.value).unwrap_or(0), true)
        }
    };
    ok.then(|| Capacity {
        limit,
        inodes,
        project,
        project_pinned,
        pos: Pos::of(&raw.referenced, 0),
    })
}

/// `20Gi`, `500M`, `1048576`: bytes, at most what 64 bits hold.
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit): (&str, u64) = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("Pi", 1 << 50),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
        ("P", 1_000_000_000_000_000),
    ]
    .iter()
    .find_map(|(suffix, unit)| text.strip_suffix(suffix).map(|digits| (digits, *unit)))
    .unwrap_or((text, 1));
    let valid = !digits.starts_with('0')
        && (1..=16).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit());
    let bytes = digits.parse::<u64>().ok()?.checked_mul(unit)?;
    valid.then_some(bytes)
}

/// Capacities across paths: one project ID per path, and none on a tmpfs
/// (or below one), which holds no project quotas semanifest sets.
fn check_capacities(paths: &[PathRule], checker: &mut Checker<'_>) {
    let mut seen: HashMap<u32, &PathRule> = HashMap::new();
    for rule in paths {
        let Some(capacity) = &rule.capacity else {
            continue;
        };
        if let Some(tmpfs) = paths
            .iter()
            .find(|other| other.mount.tmpfs && is_within(&rule.path, &other.path))
        {
            checker
                .error(
                    &codes::CAPACITY_TMPFS,
                    capacity.pos,
                    format!(
                        "`{}` is on the tmpfs at `{}`, which holds no project quotas",
                        rule.path, tmpfs.path
                    ),
                )
                .help("a tmpfs is bounded by its `size`; a capacity is for ext4 and XFS");
        }
        if let Some(first) = seen.get(&capacity.project) {
            let how = |c: &Capacity| if c.project_pinned { "set" } else { "derived" };
            let first_capacity = first.capacity.as_ref().map(how).unwrap_or("derived");
            checker
                .error(
                    &codes::CAPACITY_PROJECT,
                    capacity.pos,
                    format!(
                        "`{}` and `{}` would share project ID {} ({} for `{}`, {} here)",
                        rule.path, first.path, capacity.project, first_capacity, first.path, how(capacity)
                    ),
                )
                .help("a project is counted as one: give one of them `project:` with an ID of its own");
            continue;
        }
        seen.insert(capacity.project, rule);
    }
}

/// Absolute, normalised, printable ASCII without whitespace or `"`.
/// Returns whether the path is usable for the later, structural rules.
fn check_path_text(path: &str, at: Pos, checker: &mut Checker<'_>) -> bool {
    if !path.starts_with('/') {
        checker
            .error(
                &codes::PATH_RELATIVE,
                at,
                format!("path `{path}` is relative"),
            )
            .help("layout paths are absolute, e.g. `/var/lib/etcd`");
        return false;
    }
    if path == "/" {
        checker
            .error(&codes::PATH_ROOT, at, "the layout cannot label `/` itself")
            .help("a layout describes subtrees such as `/var`");
        return false;
    }
    if let Some(bad) = path.chars().find(|c| !c.is_ascii() || c.is_ascii_control()) {
        checker
            .error(
                &codes::PATH_CHARACTER,
                at,
                format!(
                    "path `{}` contains {}",
                    path.escape_debug(),
                    describe_char(bad)
                ),
            )
            .help("file_contexts are ASCII-only; libselinux refuses the whole file otherwise");
        return false;
    }
    if let Some(bad) = path.chars().find(|c| c.is_whitespace() || *c == '"') {
        checker
            .error(
                &codes::PATH_CHARACTER,
                at,
                format!("path `{path}` contains {}", describe_char(bad)),
            )
            .help(
                "file_contexts cannot carry whitespace or quotes in a path; rename the directory",
            );
        return false;
    }
    let normalised = normalise(path);
    if normalised.as_deref() != Some(path) {
        checker
            .error(
                &codes::PATH_NOT_NORMALISED,
                at,
                format!("path `{path}` is not normalised"),
            )
            .help(match normalised {
                Some(n) => format!("write `{n}`"),
                None => "remove the `..` components; layout paths never climb".to_owned(),
            });
        return false;
    }
    true
}

fn describe_char(c: char) -> String {
    match c {
        ' ' => "a space".to_owned(),
        '"' => "a double quote".to_owned(),
        c if c.is_ascii_control() || c.is_whitespace() => format!("the control character {:?}", c),
        c => format!("the non-ASCII character `{c}` (U+{:04X})", c as u32),
    }
}

/// Lexical normalisation of an absolute path: collapses `//`, drops `.` and a
/// trailing `/`. `None` when the path has a `..` component (never resolved
/// lexically: with symlinks `a/..` is not `.`).
pub(crate) fn normalise(path: &str) -> Option<String> {
    let mut out = String::with_capacity(path.len());
    for component in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
        if component == ".." {
            return None;
        }
        out.push('/');
        out.push_str(component);
    }
    if out.is_empty() {
        out.push('/');
    }
    Some(out)
}

fn parse_mode(text: &str) -> Option<u32> {
    let valid = (3..=4).contains(&text.len()) && text.bytes().all(|b| (b'0'..=b'7').contains(&b));
    valid.then(|| u32::from_str_radix(text, 8).ok()).flatten()
}

fn is_type_name(text: &str) -> bool {
    text.len() > 2
        && text.ends_with("_t")
        && text.starts_with(|c: char| c.is_ascii_lowercase())
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn check_type_name(name: &Spanned<String>, checker: &mut Checker<'_>) {
    let text = &name.value;
    if !is_type_name(text) {
        checker
            .error(
                &codes::TYPE_NAME,
                pos(name),
                format!("invalid type name `{text}`"),
            )
            .help("SELinux type names here match [a-z][a-z0-9_]*_t, e.g. `etcd_var_t`");
    }
}

fn parse_levels(levels: &Spanned<Levels>, checker: &mut Checker<'_>) -> Option<Access> {
    let mut access = Access::default();
    let at = Pos::of(&levels.referenced, 0);
    if levels.value.0.is_empty() {
        checker
            .error(&codes::ACCESS_LEVEL, at, "empty access list")
            .help("use search, read, append, write or exec");
        return None;
    }
    let mut ok = true;
    for level in &levels.value.0 {
        match AccessLevel::from_name(level) {
            Some(one) => access = access.union(Access::only(one)),
            None => {
                let other = level.as_str();
                checker
                    .error(
                        &codes::ACCESS_LEVEL,
                        Pos { width: other.len() as u32, ..at },
                        format!("unknown access level `{other}`"),
                    )
                    .help("levels: search, read, append, write (write ⊃ read ⊃ search), plus exec, e.g. [read, exec]");
                ok = false;
            }
        }
    }
    ok.then(|| access.normalised())
}

fn parse_owner(text: &str) -> Option<Owner> {
    if let Some((uid, gid)) = text.split_once(':') {
        return Some(Owner::Ids {
            uid: uid.parse().ok()?,
            gid: gid.parse().ok()?,
        });
    }
    let valid = text.len() <= 32
        && text.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    valid.then(|| Owner::Name(text.to_owned()))
}

fn is_dns_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text.starts_with(|c: char| c.is_ascii_lowercase())
        && !text.ends_with('-')
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn is_identifier(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_lowercase())
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// A type labelling several paths must mean the same thing everywhere: SELinux
/// cannot tell the paths apart once they share a type.
fn check_shared_types(paths: &[PathRule], checker: &mut Checker<'_>) {
    let mut first: HashMap<&str, &PathRule> = HashMap::new();
    for rule in paths {
        let Some(earlier) = first.get(rule.type_name.as_str()) else {
            first.insert(&rule.type_name, rule);
            continue;
        };
        let mut differs = Vec::new();
        if earlier.access != rule.access {
            differs.push("access");
        }
        if earlier.protected != rule.protected {
            differs.push("protection");
        }
        if earlier.lifecycle != rule.lifecycle {
            differs.push("lifecycle");
        }
        let owners = |r: &PathRule| -> BTreeSet<String> {
            r.store_owners.iter().map(|o| o.type_name.clone()).collect()
        };
        if owners(earlier) != owners(rule) {
            differs.push("store owners");
        }
        if !differs.is_empty() {
            checker
                .error(
                    &codes::TYPE_SHARED,
                    rule.pos,
                    format!(
                        "`{}` shares type `{}` with `{}` but their {} differ",
                        rule.path,
                        rule.type_name,
                        earlier.path,
                        differs.join(" and ")
                    ),
                )
                .help("give this path its own type, or make the entries agree");
        }
    }
}

fn check_protection(paths: &[PathRule], domains: &[Domain], checker: &mut Checker<'_>) {
    for rule in paths.iter().filter(|r| r.protected) {
        let at = rule.protected_pos.unwrap_or(rule.pos);
        for &index in rule.access.keys() {
            let domain = &domains[index];
            if domain.workload {
                checker
                    .error(
                        &codes::PROTECTED_WORKLOAD,
                        at,
                        format!("protected path `{}` grants access to workload domain `{}`", rule.path, domain.key),
                    )
                    .help("hostPath pods must never reach protected data; remove the grant or the protection");
            }
            if domain.agent {
                checker
                    .error(
                        &codes::PROTECTED_AGENT,
                        at,
                        format!("protected path `{}` grants access to agent domain `{}`", rule.path, domain.key),
                    )
                    .help("agents run third-party DaemonSets and must never reach protected data; declare the part they need as its own path (e.g. /var/lib/kubelet/plugins), or remove the grant");
            }
        }
        if rule.host_path {
            checker
                .error(
                    &codes::PROTECTED_HOSTPATH,
                    at,
                    format!("protected path `{}` cannot be a hostPath root", rule.path),
                )
                .help("hostPath roots are where pods may mount; keep protected data elsewhere");
        }
        if rule.removable {
            checker
                .error(
                    &codes::PROTECTED_REMOVABLE,
                    at,
                    format!("protected path `{}` cannot be removable", rule.path),
                )
                .help("`semanifest rm` must never delete protected data");
        }
        for root in paths.iter().filter(|r| r.host_path && r.path != rule.path) {
            if is_within(&rule.path, &root.path) {
                checker
                    .error(
                        &codes::PROTECTED_UNDER_HOSTPATH,
                        at,
                        format!(
                            "protected path `{}` is below hostPath root `{}`",
                            rule.path, root.path
                        ),
                    )
                    .help(
                        "a pod mounting the root would reach it; move it out of the hostPath root",
                    );
            }
        }
    }
}

/// A workload or an agent must not reach, through any chain of transitions,
/// a domain that may access a protected path or is trusted.
fn check_transitions(paths: &[PathRule], domains: &[Domain], checker: &mut Checker<'_>) {
    let privileged = |index: usize| -> Option<String> {
        let domain = &domains[index];
        if domain.trusted {
            return Some("is trusted".to_owned());
        }
        paths
            .iter()
            .find(|r| r.protected && r.access.contains_key(&index))
            .map(|r| format!("may access protected path `{}`", r.path))
    };
    for (start, domain) in domains.iter().enumerate().filter(|(_, d)| d.is_container()) {
        let (code, kind) = if domain.workload {
            (&codes::WORKLOAD_TRANSITION, "workload")
        } else {
            (&codes::AGENT_TRANSITION, "agent")
        };
        let mut seen = vec![false; domains.len()];
        let mut stack = vec![(start, vec![start])];
        while let Some((current, chain)) = stack.pop() {
            for &next in &domains[current].transitions {
                if seen[next] {
                    continue;
                }
                seen[next] = true;
                let mut chain = chain.clone();
                chain.push(next);
                if let Some(why) = privileged(next) {
                    let names: Vec<&str> = chain.iter().map(|&i| domains[i].key.as_str()).collect();
                    checker
                        .error(
                            code,
                            domain.pos,
                            format!(
                                "{kind} domain `{}` can reach `{}`, which {why}, through transitions {}",
                                domain.key,
                                domains[next].key,
                                names.join(" → ")
                            ),
                        )
                        .help(format!("{kind}s must never enter a domain that can touch protected data"));
                }
                stack.push((next, chain));
            }
        }
    }
}

fn check_unused_domains(paths: &[PathRule], domains: &[Domain], checker: &mut Checker<'_>) {
    for (index, domain) in domains.iter().enumerate() {
        let used = domain.trusted
            || !domain.host.is_empty()
            || !domain.capabilities.is_empty()
            || !domain.connect.is_empty()
            || paths.iter().any(|r| r.access.contains_key(&index))
            || domains
                .iter()
                .any(|d| d.transitions.contains(&index) || d.connect.contains(&index));
        if !used {
            checker.warning(
                &codes::DOMAIN_UNUSED,
                domain.pos,
                format!("domain `{}` is not granted any path", domain.key),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::schema;
    use proptest::prelude::*;

    /// `check_path_text` alone: true when it reports nothing.
    fn path_ok(path: &str) -> bool {
        let base = BaseFacts::default();
        let mut checker = Checker {
            base: &base,
            diagnostics: Vec::new(),
        };
        check_path_text(path, Pos::default(), &mut checker) && checker.diagnostics.is_empty()
    }

    fn matches(pattern: &str, text: &str) -> bool {
        regex::Regex::new(pattern)
            .expect("schema pattern compiles")
            .is_match(text)
    }

    /// The schema's patterns accept exactly what the rules accept, on the
    /// characters that matter to each (printable ASCII, controls, space,
    /// quote, non-ASCII).
    fn agree(pattern: &str, rule: impl Fn(&str) -> bool, text: &str) -> Result<(), TestCaseError> {
        prop_assert_eq!(
            matches(pattern, text),
            rule(text),
            "{:?} on {:?}",
            pattern,
            text
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn schema_patterns_agree_with_the_rules(
            path in "(/|//|\\.|\\.\\.|[a-z_.+-]|[ \"\t\u{7f}é\x21-\x7e]){0,8}",
            name in "[a-z0-9_:+-]{0,6}(_t)?|[A-Z\\- é]{0,3}",
            long in "[a-z][a-z0-9-]{60,64}",
        ) {
            agree(schema::PATH_PATTERN, path_ok, &path)?;
            agree(schema::PATH_PATTERN, path_ok, &format!("/{path}"))?;
            agree(schema::TYPE_NAME_PATTERN, is_type_name, &name)?;
            agree(schema::DOMAIN_KEY_PATTERN, is_identifier, &name)?;
            agree(schema::LAYOUT_NAME_PATTERN, is_dns_label, &name)?;
            agree(schema::LAYOUT_NAME_PATTERN, is_dns_label, &long)?;
            agree(schema::OBJECT_NAME_PATTERN, is_object_name, &name)?;
            agree(schema::OBJECT_NAME_PATTERN, is_object_name, &long)?;
            agree(schema::MODE_PATTERN, |t| parse_mode(t).is_some(), &name)?;
            agree(schema::OWNER_PATTERN, |t| parse_owner(t).is_some(), &name)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn node_patterns_agree_with_the_rules(
            unit in r"[a-zA-Z0-9@:_. \\-]{0,6}(\.service|\.mount|service)?",
            exec in "[/a-z$ \t\\\\\"\u{7f}é%-]{0,8}",
            size in "[0-9]{0,4}[kmgKMGtTPi%]{0,2}",
        ) {
            agree(schema::UNIT_NAME_PATTERN, is_unit_name, &unit)?;
            agree(schema::EXEC_PATTERN, is_exec, &exec)?;
            agree(schema::EXEC_PATTERN, is_exec, &format!("/{exec}"))?;
            agree(schema::TMPFS_SIZE_PATTERN, is_tmpfs_size, &size)?;
            agree(schema::CAPACITY_SIZE_PATTERN, |t| parse_size(t).is_some(), &size)?;
        }
    }

    #[test]
    fn node_patterns_agree_on_edge_cases() {
        let long = format!("{}.service", "a".repeat(schema::UNIT_NAME_MAX - 8));
        let too_long = format!("a{long}");
        for unit in [
            "containerd.service",
            "kubelet@main.service",
            "a@b@c.service",
            "@x.service",
            "x@.service",
            ".service",
            "x.service.service",
            "x y.service",
            long.as_str(),
        ] {
            assert_eq!(
                matches(schema::UNIT_NAME_PATTERN, unit),
                is_unit_name(unit),
                "{unit:?}"
            );
        }
        assert!(
            matches(schema::UNIT_NAME_PATTERN, &too_long) && !is_unit_name(&too_long),
            "maxLength, not the pattern, bounds the length"
        );
        for exec in [
            "/",
            "/x",
            "/x ",
            "/ x",
            "x",
            "/usr/bin/crio $A ${B}",
            "/x\ty",
            "/x\n",
        ] {
            assert_eq!(
                matches(schema::EXEC_PATTERN, exec),
                is_exec(exec),
                "{exec:?}"
            );
        }
        for size in [
            "1",
            "0",
            "064m",
            "64m",
            "64M",
            "20%",
            "0%",
            "100%",
            "101%",
            "1%",
            "10000000000000000",
            "9999999999999999g",
            "%",
            "m",
        ] {
            assert_eq!(
                matches(schema::TMPFS_SIZE_PATTERN, size),
                is_tmpfs_size(size),
                "{size:?}"
            );
        }
    }

    #[test]
    fn schema_patterns_agree_on_edge_cases() {
        for path in [
            "/var",
            "/",
            "/var/",
            "/var//a",
            "/var/./a",
            "/var/../a",
            "/var/.a",
            "/var/..a",
            "/var/...",
            "/v\"a",
            "/v a",
            "var",
            "/var/lib/node+tools/v1.2",
        ] {
            assert_eq!(
                matches(schema::PATH_PATTERN, path),
                path_ok(path),
                "{path:?}"
            );
        }
        for owner in [
            "etcd",
            "_x",
            "1000:1000",
            "+1:2",
            "1:",
            ":1",
            "Etcd",
            "a234567890123456789012345678901234",
        ] {
            assert_eq!(
                matches(schema::OWNER_PATTERN, owner),
                parse_owner(owner).is_some(),
                "{owner:?}"
            );
        }
        for mode in ["0750", "750", "75", "07500", "0758", "+750"] {
            assert_eq!(
                matches(schema::MODE_PATTERN, mode),
                parse_mode(mode).is_some(),
                "{mode:?}"
            );
        }
        // Control: the same comparison catches a pattern that is too loose.
        assert!(["etcd", "etcd_t"]
            .iter()
            .any(|t| matches("^[a-z_]+$", t) != is_type_name(t)));
    }

    #[test]
    fn capacity_sizes() {
        assert_eq!(parse_size("20Gi"), Some(20 << 30));
        assert_eq!(parse_size("512Mi"), Some(512 << 20));
        assert_eq!(parse_size("1M"), Some(1_000_000));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("8Pi"), Some(8 << 50));
        for bad in [
            "",
            "0",
            "020Gi",
            "1.5Gi",
            "1gi",
            "Gi",
            "1 Gi",
            "9999999999999999Pi",
        ] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
        for size in [
            "1",
            "1Ki",
            "16Mi",
            "1G",
            "0Mi",
            "1Ti",
            "1KiB",
            "10000000000000000",
        ] {
            assert_eq!(
                matches(schema::CAPACITY_SIZE_PATTERN, size),
                parse_size(size).is_some(),
                "{size:?}"
            );
        }
    }

    #[test]
    fn normalise_is_lexical() {
        assert_eq!(normalise("/var//lib/").as_deref(), Some("/var/lib"));
        assert_eq!(normalise("/var/./lib").as_deref(), Some("/var/lib"));
        assert_eq!(normalise("/var/lib/../etcd"), None);
        assert_eq!(normalise("//").as_deref(), Some("/"));
    }
}
