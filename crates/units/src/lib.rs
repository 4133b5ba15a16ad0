//! Boot units from the layout: what a node's systemd runs so that `/var`
//! is placed, labelled and mounted before the container runtime and
//! kubelet start, and (with `spec.node.kubens`) the mount namespace they
//! share.
//!
//! Model → text, nothing else: [`render`] turns a [`Layout`] (and what an
//! [`Image`] holds at its paths) into a [`UnitSet`] — files relative to the
//! image root and the symlinks that enable them, as `systemctl --root
//! enable` makes them; [`install`] writes a set beneath a root through
//! `fsroot`. Unit names come from paths as `systemd-escape --path` makes
//! them ([`unit_name`]).
//!
//! Invariants: same layout and image, same bytes; every value reaches a
//! unit file through `text::UnitText::set` (`%` literal, no line breaks);
//! a path that a unit setting would read otherwise than written is an
//! error, never a unit.

mod image;
mod install;
mod systemd_escape;
mod text;

use layout::model::{is_within, Layout, Lifecycle, MountFlag, NodeBoot, Propagation};

pub use image::{Held, Image, ImageError};
pub use install::{install, install_binary, InstallError, Written};
pub use systemd_escape::{check_writable, unit_name, UnitPathError, UNIT_NAME_MAX};
use text::TextError;

use text::UnitText;

/// The image's own units: vendor units, owned by the image, under `/usr`.
pub const UNIT_DIR: &str = "/usr/lib/systemd/system";
/// Where `systemctl enable` puts its symlinks.
pub(crate) const ENABLE_DIR: &str = "/etc/systemd/system";
/// The preset that enables the same units (`systemctl preset`), for
/// pipelines that enable units that way.
pub(crate) const PRESET_FILE: &str = "/usr/lib/systemd/system-preset/50-semanifest.preset";
/// The layout and the kubens helpers.
pub const LIB_DIR: &str = "/usr/lib/semanifest";
/// The layout the apply unit places, as the build read it.
pub const LAYOUT_FILE: &str = "/usr/lib/semanifest/layout.yaml";
pub const KUBENSENTER: &str = "/usr/lib/semanifest/kubensenter";
pub const KUBENS_HELPER: &str = "/usr/lib/semanifest/kubens";
/// The semanifest the units run: `build --install-root` installs the
/// running binary here unless the image provides it otherwise (a package,
/// `--no-install-binary`).
pub(crate) const SEMANIFEST: &str = "/usr/bin/semanifest";
/// Where kubens pins its namespace unless `$KUBENSMNT` says otherwise.
pub(crate) const KUBENSMNT: &str = "/run/kubens/mnt";
/// What kubens.service publishes for the runtime units while active.
pub(crate) const KUBENS_ENV: &str = "/run/kubens/env";

pub(crate) const APPLY_SERVICE: &str = NodeBoot::GENERATED_SERVICES[0];
pub(crate) const RELABEL_SERVICE: &str = NodeBoot::GENERATED_SERVICES[1];
pub(crate) const KUBENS_SERVICE: &str = NodeBoot::GENERATED_SERVICES[2];

/// The drop-in that orders a runtime unit after the labels.
pub(crate) const LABELS_DROPIN: &str = "50-semanifest.conf";
/// The drop-in that starts a runtime unit inside kubens. Named to sort
/// after the packages' own drop-ins (kubeadm's `10-kubeadm.conf` resets
/// `ExecStart=` too), so its command is the one that runs.
pub(crate) const KUBENS_DROPIN: &str = "90-semanifest-kubens.conf";

const KUBENSENTER_SCRIPT: &str = include_str!("kubensenter.sh");
const KUBENS_SCRIPT: &str = include_str!("kubens.sh");

/// What the units need besides the layout.
#[derive(Debug, Clone, Copy)]
pub struct UnitsOptions<'a> {
    /// The policy under `/etc/selinux/` whose file_contexts the relabel
    /// unit reads.
    pub policy_name: &'a str,
    /// The manifest as written, installed as [`LAYOUT_FILE`].
    pub layout_text: &'a str,
}

/// One file of the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Absolute in the image (`/usr/lib/systemd/system/var-run.mount`).
    pub path: String,
    pub text: String,
    /// Mode 0755 rather than 0644.
    pub executable: bool,
}

/// An enablement symlink, as `systemctl enable` writes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Link {
    /// `/etc/systemd/system/local-fs.target.wants/var-run.mount`.
    pub path: String,
    /// `/usr/lib/systemd/system/var-run.mount`.
    pub target: String,
}

/// Everything the units of one layout are made of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitSet {
    /// Sorted by path.
    pub files: Vec<File>,
    /// Sorted by path.
    pub links: Vec<Link>,
    /// What the units do differently because of the image, one sentence
    /// each (a declared path held as a symlink).
    pub notices: Vec<String>,
}

impl UnitSet {
    /// The file at `path`, for tests and callers that show one.
    pub fn file(&self, path: &str) -> Option<&File> {
        self.files.iter().find(|f| f.path == path)
    }

    /// The enabled units, in order.
    pub fn enabled(&self) -> Vec<&str> {
        let mut units: Vec<&str> = self
            .links
            .iter()
            .filter_map(|l| l.target.rsplit('/').next())
            .collect();
        units.sort();
        units.dedup();
        units
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UnitsError {
    #[error(transparent)]
    UnitPath(#[from] UnitPathError),
    #[error(transparent)]
    Text(#[from] TextError),
    #[error("policy name `{0}`: a name under /etc/selinux is letters, digits, `_`, `-` and `.`")]
    PolicyName(String),
}

/// The units of `layout` for an image that holds its paths as `image`
/// says.
pub fn render(
    layout: &Layout,
    image: &Image,
    options: &UnitsOptions<'_>,
) -> Result<UnitSet, UnitsError> {
    let name_ok = !options.policy_name.is_empty()
        && !options.policy_name.starts_with('.')
        && options
            .policy_name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !name_ok {
        return Err(UnitsError::PolicyName(options.policy_name.to_owned()));
    }
    let mut set = Builder {
        header: format!(
            "Generated by semanifest from the layout `{}`; rebuild the image to change it.",
            layout.name
        ),
        ..Builder::default()
    };
    mount_units(layout, image, &mut set)?;
    boot_services(layout, image, options, &mut set)?;
    if layout.node.kubens {
        kubens(layout, &mut set)?;
    }
    set.file(LAYOUT_FILE, options.layout_text.to_owned(), false);
    if !image.held.is_empty() {
        let mut text = format!(
            "# {}\n# Paths the image holds as symlinks, labelled as the layout path each stands for.\n",
            set.header
        );
        for (target, path) in image.equivalences() {
            text.push_str(&format!("{target} {path}\n"));
        }
        set.file(&subs_dist_path(options.policy_name), text, false);
    }
    Ok(set.finish())
}

/// The equivalences of a policy: `TARGET PATH` lines libselinux and
/// `semanifest relabel` apply before looking a path up.
pub(crate) fn subs_dist_path(policy_name: &str) -> String {
    format!("/etc/selinux/{policy_name}/contexts/files/file_contexts.subs_dist")
}

#[derive(Default)]
struct Builder {
    header: String,
    files: Vec<File>,
    /// Unit → the units whose `.wants` it is added to.
    enabled: Vec<(String, Vec<String>)>,
    notices: Vec<String>,
}

impl Builder {
    fn unit_text(&self, purpose: &str) -> UnitText {
        UnitText::new(&[&self.header, purpose])
    }

    fn file(&mut self, path: &str, text: String, executable: bool) {
        self.files.push(File {
            path: path.to_owned(),
            text,
            executable,
        });
    }

    /// A unit under [`UNIT_DIR`], enabled by `wanted_by`, whose text ends
    /// with the `[Install]` section saying so.
    fn unit(
        &mut self,
        name: &str,
        mut text: UnitText,
        wanted_by: &[String],
    ) -> Result<(), UnitsError> {
        if !wanted_by.is_empty() {
            text.section("Install")
                .set("WantedBy", &wanted_by.join(" "));
            self.enabled.push((name.to_owned(), wanted_by.to_vec()));
        }
        let text = text.finish()?;
        self.file(&format!("{UNIT_DIR}/{name}"), text, false);
        Ok(())
    }

    fn dropin(&mut self, unit: &str, name: &str, text: UnitText) -> Result<(), UnitsError> {
        let text = text.finish()?;
        self.file(&format!("{UNIT_DIR}/{unit}.d/{name}"), text, false);
        Ok(())
    }

    fn finish(mut self) -> UnitSet {
        let mut links = Vec::new();
        let mut preset = format!("# {}\n", self.header);
        self.enabled.sort();
        for (unit, wanted_by) in &self.enabled {
            preset.push_str(&format!("enable {unit}\n"));
            for target in wanted_by {
                links.push(Link {
                    path: format!("{ENABLE_DIR}/{target}.wants/{unit}"),
                    target: format!("{UNIT_DIR}/{unit}"),
                });
            }
        }
        if !self.enabled.is_empty() {
            self.file(PRESET_FILE, preset, false);
        }
        self.files.sort_by(|a, b| a.path.cmp(&b.path));
        links.sort();
        UnitSet {
            files: self.files,
            links,
            notices: self.notices,
        }
    }
}

/// A mount unit per `mount:` of the layout: a tmpfs with the path's label,
/// or the directory bound onto itself with the declared propagation.
fn mount_units(layout: &Layout, image: &Image, set: &mut Builder) -> Result<(), UnitsError> {
    let local_fs = ["local-fs.target".to_owned()];
    for rule in &layout.paths {
        let mount = &rule.mount;
        if !mount.any() {
            continue;
        }
        let path = &rule.path;
        if let Some(held) = image.holding(path) {
            set.notices.push(held_notice(rule, held));
            continue;
        }
        check_writable(path)?;
        let name = unit_name(path, "mount")?;
        let propagation = mount.propagation.as_ref().map(Propagation::as_str);
        let (purpose, description) = if mount.tmpfs {
            (
                format!(
                    "{path}: a tmpfs labelled {} (mount: tmpfs: true).",
                    rule.context()
                ),
                format!(
                    "Layout {}: tmpfs on {path} ({})",
                    layout.name, rule.type_name
                ),
            )
        } else {
            let mut how: Vec<&str> = propagation.into_iter().collect();
            how.extend(mount.options.iter().map(MountFlag::as_str));
            let how = how.join(", ");
            let mut declared = Vec::new();
            if let Some(propagation) = propagation {
                declared.push(format!("propagation: {propagation}"));
            }
            if !mount.options.is_empty() {
                declared.push(format!("options: [{}]", flags(mount)));
            }
            (
                format!(
                    "{path}: bound onto itself{} (mount: {}).",
                    match (propagation, mount.options.is_empty()) {
                        (Some(p), true) => format!(" and made {p}"),
                        (Some(p), false) => format!(", made {p} and remounted {}", flags(mount)),
                        (None, _) => format!(" and remounted {}", flags(mount)),
                    },
                    declared.join(", ")
                ),
                format!("Layout {}: {path} bound onto itself, {how}", layout.name),
            )
        };
        let mut text = set.unit_text(&purpose);
        text.section("Unit")
            .set("Description", &description)
            .comment("systemd mounts nothing through a symlink: an image that holds the path as one skips this unit.")
            .set("ConditionPathIsSymbolicLink", &format!("!{path}"))
            .set("Before", "local-fs.target");
        text.section("Mount");
        if mount.tmpfs {
            let mut options = vec![
                format!("context={}", rule.context()),
                format!("mode={:04o}", rule.mode.unwrap_or(0o755)),
            ];
            options.extend(mount.size.as_ref().map(|size| format!("size={size}")));
            options.extend(["nosuid".to_owned(), "nodev".to_owned()]);
            if mount.options.contains(&MountFlag::Noexec) {
                options.push("noexec".to_owned());
            }
            options.extend(propagation.map(str::to_owned));
            text.set("What", "tmpfs")
                .set("Where", path)
                .set("Type", "tmpfs")
                .set("Options", &options.join(","));
        } else {
            // mount(8) binds, then remounts the bind with the flags: one
            // unit, and the flags are on the mount before local-fs.target.
            let mut options = vec!["bind"];
            options.extend(propagation);
            options.extend(mount.options.iter().map(MountFlag::as_str));
            text.set("What", path)
                .set("Where", path)
                .set("Options", &options.join(","));
        }
        set.unit(&name, text, &local_fs)?;
    }
    Ok(())
}

/// `nodev,nosuid,noexec` as the layout lists them.
fn flags(mount: &layout::model::Mount) -> String {
    let names: Vec<&str> = mount.options.iter().map(MountFlag::as_str).collect();
    names.join(",")
}

fn held_notice(rule: &layout::model::PathRule, held: &Held) -> String {
    if held.path == rule.path {
        format!(
            "{}: the image holds it as a symlink to {}, so it gets no mount unit (systemd \
             mounts nothing through a symlink); {} is left as the distribution sets it up, \
             labelled {} through the equivalence `{} {}` in file_contexts.subs_dist, and \
             {RELABEL_SERVICE} relabels it at boot",
            rule.path, held.target, held.target, rule.type_name, held.target, held.path
        )
    } else {
        format!(
            "{}: the image holds {} as a symlink to {}, so it gets no mount unit (systemd \
             mounts nothing through a symlink)",
            rule.path, held.path, held.target
        )
    }
}

/// The top directories of the layout's paths (`/var`): what the relabel
/// unit walks and needs mounted.
fn top_directories(layout: &Layout) -> Vec<String> {
    let mut tops: Vec<String> = layout
        .paths
        .iter()
        .filter_map(|rule| rule.path.split('/').nth(1))
        .map(|name| format!("/{name}"))
        .collect();
    tops.sort();
    tops.dedup();
    tops
}

/// `semanifest-apply.service` and `semanifest-relabel.service`, and the
/// drop-ins that make every runtime unit require both.
fn boot_services(
    layout: &Layout,
    image: &Image,
    options: &UnitsOptions<'_>,
    set: &mut Builder,
) -> Result<(), UnitsError> {
    let tops = top_directories(layout);
    let operands = relabel_operands(&tops, image);
    for path in tops
        .iter()
        .chain(&operands)
        .chain(image.held.iter().map(|held| &held.path))
    {
        check_writable(path)?;
    }
    let runtime: Vec<&str> = layout
        .node
        .runtime
        .iter()
        .map(|u| u.unit.as_str())
        .collect();
    let services = [
        apply_service(layout, image),
        relabel_service(layout, &operands, options),
    ];
    for service in services {
        write_boot_service(set, service, &tops, &runtime)?;
    }
    runtime_dropins(layout, set)
}

/// One of the two boot services, before it is written.
struct BootService {
    name: &'static str,
    description: String,
    purpose: &'static str,
    after: Vec<&'static str>,
    pre: Option<String>,
    exec: String,
}

/// What the relabel unit walks: the top directories, and the targets of
/// held symlinks outside them.
fn relabel_operands(tops: &[String], image: &Image) -> Vec<String> {
    let mut operands = tops.to_vec();
    for held in &image.held {
        if !tops.iter().any(|top| is_within(&held.target, top)) {
            operands.push(held.target.clone());
        }
    }
    operands
}

/// Prunes the ephemeral paths, then places the layout.
fn apply_service(layout: &Layout, image: &Image) -> BootService {
    // Apply keeps what the image holds as symlinks, as the units do.
    let mut exec = format!("{SEMANIFEST} apply --layout {LAYOUT_FILE}");
    for held in &image.held {
        exec.push_str(&format!(" --keep-symlink {}", held.path));
    }
    BootService {
        name: APPLY_SERVICE,
        description: format!(
            "Place the layout {} (directories, modes, owners, labels)",
            layout.name
        ),
        purpose: "Makes every directory of the layout exist with its mode, owner and label.",
        after: vec!["local-fs.target"],
        pre: prune_command(layout, image),
        exec,
    }
}

/// Ephemeral paths that are no tmpfs are emptied before they are placed
/// (a path the image holds as a symlink, or below one, is not the
/// layout's to empty; one below a tmpfs is empty anyway).
fn prune_command(layout: &Layout, image: &Image) -> Option<String> {
    let tmpfs: Vec<&str> = layout
        .paths
        .iter()
        .filter(|rule| rule.mount.tmpfs)
        .map(|rule| rule.path.as_str())
        .collect();
    let ephemeral: Vec<&str> = layout
        .paths
        .iter()
        .filter(|rule| rule.lifecycle == Lifecycle::Ephemeral)
        .map(|rule| rule.path.as_str())
        .filter(|path| !tmpfs.iter().any(|top| is_within(path, top)))
        .filter(|path| !image.held.iter().any(|held| is_within(path, &held.path)))
        .collect();
    // `-`: what a prune cannot empty (an immutable file, a mount placed
    // below) is in the journal, and the boot goes on to apply.
    (!ephemeral.is_empty()).then(|| {
        format!(
            "-{SEMANIFEST} prune --layout {LAYOUT_FILE} {}",
            ephemeral.join(" ")
        )
    })
}

/// Labels what is below the layout's directories, after apply.
fn relabel_service(
    layout: &Layout,
    operands: &[String],
    options: &UnitsOptions<'_>,
) -> BootService {
    let file_contexts = format!(
        "/etc/selinux/{}/contexts/files/file_contexts",
        options.policy_name
    );
    BootService {
        name: RELABEL_SERVICE,
        description: format!(
            "Label {} as the layout {} says",
            operands.join(" "),
            layout.name
        ),
        purpose: "Writes the type of every object below the layout's directories as file_contexts says, skipping the subtrees whose specs did not change since their last full check (their digests match); semanifest.relabel=full on the kernel command line, or the file /etc/semanifest/force-full-relabel (removed after a pass without errors), forces a full pass.",
        after: vec!["local-fs.target", APPLY_SERVICE],
        pre: None,
        exec: format!(
            "{SEMANIFEST} relabel --type-only --skip-unchanged --file-contexts {file_contexts} {}",
            operands.join(" ")
        ),
    }
}

/// A oneshot early-boot unit, ordered before the runtime units and
/// shutdown, wanted by `sysinit.target`.
fn write_boot_service(
    set: &mut Builder,
    service: BootService,
    tops: &[String],
    runtime: &[&str],
) -> Result<(), UnitsError> {
    let mut text = set.unit_text(service.purpose);
    text.section("Unit")
        .set("Description", &service.description)
        .set("DefaultDependencies", "no")
        .set("RequiresMountsFor", &tops.join(" "))
        .set("After", &service.after.join(" "));
    let mut before = runtime.to_vec();
    before.push("shutdown.target");
    text.set("Before", &before.join(" "))
        .set("Conflicts", "shutdown.target")
        .comment("The runtime units require this one, so stopping it would stop them: run the command itself to do it again.")
        .set("RefuseManualStop", "yes");
    text.section("Service")
        .set("Type", "oneshot")
        .set("RemainAfterExit", "yes");
    if let Some(pre) = &service.pre {
        text.comment("Empties the ephemeral paths on disk; what it cannot empty is reported and does not stop the boot.")
            .set("ExecStartPre", pre);
    }
    text.set("ExecStart", &service.exec);
    set.unit(service.name, text, &["sysinit.target".to_owned()])
}

/// A drop-in per runtime unit: it requires both boot services.
fn runtime_dropins(layout: &Layout, set: &mut Builder) -> Result<(), UnitsError> {
    for unit in &layout.node.runtime {
        let mut text = set.unit_text(&format!(
            "{} starts only on a /var the layout placed and labelled: if either service fails, it does not start.",
            unit.unit
        ));
        let both = format!("{APPLY_SERVICE} {RELABEL_SERVICE}");
        text.section("Unit")
            .set("Requires", &both)
            .set("After", &both);
        set.dropin(&unit.unit, LABELS_DROPIN, text)?;
    }
    Ok(())
}

/// `kubens.service`, its helpers, and a drop-in per runtime unit that
/// starts its command through `kubensenter`.
fn kubens(layout: &Layout, set: &mut Builder) -> Result<(), UnitsError> {
    let runtime: Vec<String> = layout.node.runtime.iter().map(|u| u.unit.clone()).collect();
    let mut text = set.unit_text(
        "kubens: one mount namespace for the container runtime and kubelet, so their mounts stay off the host's table.",
    );
    let mut before = runtime.clone();
    before.push("shutdown.target".to_owned());
    text.section("Unit")
        .set(
            "Description",
            "Mount namespace for the container runtime and kubelet (kubens)",
        )
        .set("DefaultDependencies", "no")
        .comment("After the layout's mounts, so the namespace starts as a copy of them.")
        .set("After", "local-fs.target")
        .set("Before", &before.join(" "))
        .set("Conflicts", "shutdown.target");
    text.section("Service")
        .set("Type", "oneshot")
        .set("RemainAfterExit", "yes")
        .comment("Where the namespace is pinned; a drop-in may set another path.")
        .set("Environment", &format!("KUBENSMNT={KUBENSMNT}"))
        .set("ExecStart", &format!("{KUBENS_HELPER} start"))
        .set("ExecStop", &format!("{KUBENS_HELPER} stop"));
    set.unit(KUBENS_SERVICE, text, &runtime)?;

    for unit in &layout.node.runtime {
        let Some(exec) = &unit.exec else {
            // validate refuses kubens without every exec.
            continue;
        };
        let mut text = set.unit_text(&format!(
            "{} starts inside the kubens mount namespace while kubens.service is active; without it, kubensenter starts the command on the host as before.",
            unit.unit
        ));
        text.section("Unit").set("After", KUBENS_SERVICE);
        text.section("Service")
            .comment(&format!(
                "{KUBENS_ENV} sets KUBENSMNT while kubens.service is active."
            ))
            .set("EnvironmentFile", &format!("-{KUBENS_ENV}"))
            .reset("ExecStart")
            .set("ExecStart", &format!("{KUBENSENTER} {exec}"));
        set.dropin(&unit.unit, KUBENS_DROPIN, text)?;
    }
    set.file(KUBENSENTER, KUBENSENTER_SCRIPT.to_owned(), true);
    set.file(KUBENS_HELPER, KUBENS_SCRIPT.to_owned(), true);
    Ok(())
}
