//! Opening a policy store read-only: which modules it holds, how its
//! `semanage.conf` says to compile them, and what it built last time.
//!
//! Three forms are accepted: a root as given to `semodule -p ROOT`
//! (`ROOT/etc/selinux/config` names the policy, its store is
//! `ROOT/var/lib/selinux/NAME`), a store directory itself
//! (`/var/lib/selinux/NAME`, holding `active/modules`), or a directory of
//! CIL files as `semodule -E --cil` writes them (`NAME.cil` per module),
//! with the store's `semanage.conf` and `file_contexts.subs_dist` (and
//! `.subs`, `.local`, `.homedirs`) copied beside them when they are known:
//! without them the compilation settings and path aliases are not.
//!
//! The layout of a store directory is libsemanage's (stable since 2.4):
//! `active/modules/PRIORITY/NAME/cil` holds each module's CIL (bzip2-compressed
//! unless `bzip-blocksize=0`), `active/modules/disabled/NAME` marks a disabled
//! module, the highest priority of a name wins, and modules are compiled in
//! `strcmp` order of their names. Nothing here writes, locks or creates
//! anything: the store is only read.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::StoreError;

/// A CIL module refused beyond this size (decompressed): refpolicy's largest
/// is a few MiB, and a bzip2 bomb must not exhaust memory.
const MAX_MODULE_BYTES: u64 = 256 << 20;

/// Which of the three accepted forms the store was given in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// `semodule -p ROOT`: policy `name` in `store_dir`.
    Root {
        root: PathBuf,
        name: String,
        store_dir: PathBuf,
    },
    /// A store directory (`…/var/lib/selinux/NAME`); `root` when the path
    /// ends in `var/lib/selinux/NAME`, whose `etc/selinux/semanage.conf` is read.
    StoreDir {
        store_dir: PathBuf,
        root: Option<PathBuf>,
    },
    /// A directory of `NAME.cil` files.
    ExtractedCil { dir: PathBuf },
}

/// One active module.
#[derive(Debug, Clone)]
pub struct Module {
    pub name: String,
    /// The priority directory it came from (`None` for extracted CIL).
    pub priority: Option<u16>,
    /// Where its CIL was read.
    pub path: PathBuf,
    pub cil: Vec<u8>,
}

/// How libsemanage compiles this store: `semanage.conf` settings and the
/// store's flag files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The `semanage.conf` read, if any.
    pub conf: Option<PathBuf>,
    pub policy_version: Option<u32>,
    pub handle_unknown: Option<String>,
    pub target_platform: Option<String>,
    pub optimize: bool,
    /// `expand-check`: whether `semodule` checks neverallows at install.
    /// libsemanage's default is on; Debian ships `expand-check=0`.
    pub expand_check: bool,
    /// `active/disable_dontaudit` exists (`semodule -DB`).
    pub disable_dontaudit: bool,
    /// `active/preserve_tunables` exists.
    pub preserve_tunables: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            conf: None,
            policy_version: None,
            handle_unknown: None,
            target_platform: None,
            optimize: false,
            expand_check: true,
            disable_dontaudit: false,
            preserve_tunables: false,
        }
    }
}

/// What the store built last time, to check our prediction against.
#[derive(Debug, Clone, Default)]
pub struct Built {
    /// `active/policy.kern`: the binary `semodule` installed.
    pub policy: Option<PathBuf>,
    /// `active/file_contexts`.
    pub file_contexts: Option<PathBuf>,
    /// `active/file_contexts.homedirs` (generated from users' home directories).
    pub homedirs: Option<PathBuf>,
    /// `active/file_contexts.local` (`semanage fcontext -a`), loaded after
    /// everything else: its regexes beat every module's.
    pub local: Option<PathBuf>,
    /// Local customisations libsemanage applies to the binary after
    /// compiling (`booleans.local`, `ports.local`, …), non-empty ones only.
    pub customisations: Vec<String>,
}

/// An opened store.
#[derive(Debug, Clone)]
pub struct Store {
    /// The path as the user gave it.
    pub origin: PathBuf,
    pub form: Form,
    pub settings: Settings,
    /// Active modules: highest priority per name, disabled ones left out,
    /// in `strcmp` order of their names (libsemanage's compile order).
    pub modules: Vec<Module>,
    pub built: Built,
    /// What this form of the store does not say, for reports: an
    /// extracted-CIL directory without `semanage.conf` or
    /// `file_contexts.subs_dist` beside its modules.
    pub unknowns: Vec<String>,
}

/// Customisation files that libsemanage merges into the binary after
/// compiling the modules; a non-empty one makes the binary differ from what
/// the modules alone compile to.
const CUSTOMISATIONS: &[&str] = &[
    "booleans.local",
    "ports.local",
    "interfaces.local",
    "nodes.local",
    "users.local",
    "users_extra.local",
    "ibpkeys.local",
    "ibendports.local",
];

impl Store {
    /// Opens `path` in whichever form it is, reading every active module.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let metadata = fs::metadata(path).map_err(|error| StoreError::io(path, error))?;
        if !metadata.is_dir() {
            return Err(StoreError::NotAStore {
                path: path.to_owned(),
                why: "not a directory".to_owned(),
            });
        }
        let form = detect(path)?;
        let (settings, modules, built) = match &form {
            Form::Root {
                root, store_dir, ..
            } => {
                let settings = read_settings(Some(root), store_dir)?;
                (
                    settings,
                    read_store_modules(store_dir)?,
                    read_built(store_dir),
                )
            }
            Form::StoreDir { store_dir, root } => {
                let settings = read_settings(root.as_deref(), store_dir)?;
                (
                    settings,
                    read_store_modules(store_dir)?,
                    read_built(store_dir),
                )
            }
            Form::ExtractedCil { dir } => {
                let conf = dir.join("semanage.conf");
                let settings = if conf.is_file() {
                    read_conf(&conf, Settings::default())?
                } else {
                    Settings::default()
                };
                (settings, read_extracted(dir)?, Built::default())
            }
        };
        let unknowns = match &form {
            Form::ExtractedCil { dir } => extracted_unknowns(dir),
            _ => Vec::new(),
        };
        if modules.is_empty() {
            return Err(StoreError::NotAStore {
                path: path.to_owned(),
                why: "it holds no active module".to_owned(),
            });
        }
        Ok(Store {
            origin: path.to_owned(),
            form,
            settings,
            modules,
            built,
            unknowns,
        })
    }

    /// The module named `name`, if active.
    pub fn module(&self, name: &str) -> Option<&Module> {
        self.modules.iter().find(|m| m.name == name)
    }

    /// One line that says what the store is, for reports.
    pub(crate) fn describe(&self) -> String {
        match &self.form {
            Form::Root {
                root,
                name,
                store_dir,
            } => format!(
                "policy `{name}` of root {} (store {}, {} active modules)",
                root.display(),
                store_dir.display(),
                self.modules.len()
            ),
            Form::StoreDir { store_dir, .. } => {
                format!(
                    "store {} ({} active modules)",
                    store_dir.display(),
                    self.modules.len()
                )
            }
            Form::ExtractedCil { dir } => {
                format!(
                    "extracted CIL in {} ({} modules)",
                    dir.display(),
                    self.modules.len()
                )
            }
        }
    }
}

fn detect(path: &Path) -> Result<Form, StoreError> {
    if path.join("active/modules").is_dir() {
        return Ok(Form::StoreDir {
            store_dir: path.to_owned(),
            root: root_of_store_dir(path),
        });
    }
    let config = path.join("etc/selinux/config");
    if config.is_file() || path.join("var/lib/selinux").is_dir() {
        let name = policy_name(path, &config)?;
        let store_root = store_root(path)?;
        let store_dir = path.join(store_root.trim_start_matches('/')).join(&name);
        if !store_dir.join("active/modules").is_dir() {
            return Err(StoreError::NotAStore {
                path: path.to_owned(),
                why: format!(
                    "policy `{name}` has no store at {} (no active/modules)",
                    store_dir.display()
                ),
            });
        }
        return Ok(Form::Root {
            root: path.to_owned(),
            name,
            store_dir,
        });
    }
    let has_cil = fs::read_dir(path)
        .map_err(|error| StoreError::io(path, error))?
        .filter_map(Result::ok)
        .any(|entry| entry.path().extension().is_some_and(|ext| ext == "cil"));
    if has_cil {
        return Ok(Form::ExtractedCil {
            dir: path.to_owned(),
        });
    }
    Err(StoreError::NotAStore {
        path: path.to_owned(),
        why: "expected a root with etc/selinux/config (as for `semodule -p ROOT`), a store directory with \
              active/modules (/var/lib/selinux/NAME), or a directory of .cil files (`semodule -E --cil`)"
            .to_owned(),
    })
}

/// `ROOT` of a store directory `ROOT/var/lib/selinux/NAME`.
fn root_of_store_dir(store_dir: &Path) -> Option<PathBuf> {
    let selinux = store_dir.parent()?;
    let lib = selinux.parent()?;
    let var = lib.parent()?;
    let names = (selinux.file_name()?, lib.file_name()?, var.file_name()?);
    (names == ("selinux".as_ref(), "lib".as_ref(), "var".as_ref()))
        .then(|| var.parent().map(Path::to_owned))?
}

/// `SELINUXTYPE` of `ROOT/etc/selinux/config`; without a config, the one
/// store under `ROOT/var/lib/selinux`.
fn policy_name(root: &Path, config: &Path) -> Result<String, StoreError> {
    if config.is_file() {
        let text = fs::read_to_string(config).map_err(|error| StoreError::io(config, error))?;
        let name = text
            .lines()
            .filter_map(|line| line.trim().strip_prefix("SELINUXTYPE="))
            .next_back()
            .map(|value| value.trim().trim_matches('"').to_owned());
        return match name {
            Some(name) if is_plain_name(&name) => Ok(name),
            Some(name) => Err(StoreError::NotAStore {
                path: config.to_owned(),
                why: format!("SELINUXTYPE `{name}` is not a plain policy name"),
            }),
            None => Err(StoreError::NotAStore {
                path: config.to_owned(),
                why: "no SELINUXTYPE= line".to_owned(),
            }),
        };
    }
    let stores = root.join("var/lib/selinux");
    let names: Vec<String> = fs::read_dir(&stores)
        .map_err(|error| StoreError::io(&stores, error))?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("active/modules").is_dir())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    match names.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(StoreError::NotAStore {
            path: root.to_owned(),
            why: format!(
                "no etc/selinux/config to name the policy, and {} stores under var/lib/selinux; \
                 pass the store directory itself",
                names.len()
            ),
        }),
    }
}

fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && name != ".."
}

/// `store-root` of the root's `semanage.conf` (default `/var/lib/selinux`).
fn store_root(root: &Path) -> Result<String, StoreError> {
    let conf = root.join("etc/selinux/semanage.conf");
    if !conf.is_file() {
        return Ok("/var/lib/selinux".to_owned());
    }
    let text = fs::read_to_string(&conf).map_err(|error| StoreError::io(&conf, error))?;
    Ok(conf_entries(&text)
        .into_iter()
        .filter(|(key, _)| key == "store-root")
        .map(|(_, value)| value)
        .next_back()
        .unwrap_or_else(|| "/var/lib/selinux".to_owned()))
}

/// `key = value` lines of a `semanage.conf`, outside `[section] … [end]`
/// blocks (which configure helper programs), comments dropped.
fn conf_entries(text: &str) -> Vec<(String, String)> {
    let mut entries = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.starts_with('[') {
            in_block = line != "[end]";
            continue;
        }
        if in_block || line.is_empty() {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            entries.push((
                key.trim().to_owned(),
                value.trim().trim_matches('"').to_owned(),
            ));
        }
    }
    entries
}

fn read_settings(root: Option<&Path>, store_dir: &Path) -> Result<Settings, StoreError> {
    let settings = Settings {
        disable_dontaudit: store_dir.join("active/disable_dontaudit").exists(),
        preserve_tunables: store_dir.join("active/preserve_tunables").exists(),
        ..Settings::default()
    };
    match root
        .map(|root| root.join("etc/selinux/semanage.conf"))
        .filter(|conf| conf.is_file())
    {
        Some(conf) => read_conf(&conf, settings),
        None => Ok(settings),
    }
}

/// What an extracted-CIL directory leaves unknown.
fn extracted_unknowns(dir: &Path) -> Vec<String> {
    let mut unknowns = Vec::new();
    if !dir.join("semanage.conf").is_file() {
        unknowns.push(
            "no semanage.conf beside the modules: compiled with libsemanage's defaults \
             (expand-check on, optimize-policy off), which the store may not use"
                .to_owned(),
        );
    }
    if !dir.join("file_contexts.subs_dist").is_file() {
        unknowns.push(
            "no file_contexts.subs_dist beside the modules: the store's path aliases are unknown, \
             so an aliased layout path may be labelled where the node never looks"
                .to_owned(),
        );
    }
    unknowns
}

/// Reads one `semanage.conf` into `settings`.
fn read_conf(conf: &Path, mut settings: Settings) -> Result<Settings, StoreError> {
    let conf = conf.to_owned();
    let text = fs::read_to_string(&conf).map_err(|error| StoreError::io(&conf, error))?;
    for (key, value) in conf_entries(&text) {
        let bad = |why: &str| StoreError::NotAStore {
            path: conf.clone(),
            why: format!("`{key} = {value}`: {why}"),
        };
        let flag = |value: &str| match value {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            _ => Err(bad("expected true/false or 1/0")),
        };
        match key.as_str() {
            "policy-version" => {
                settings.policy_version = Some(value.parse().map_err(|_| bad("not a number"))?)
            }
            "handle-unknown" => match value.as_str() {
                "allow" | "deny" | "reject" => settings.handle_unknown = Some(value.clone()),
                _ => return Err(bad("expected allow, deny or reject")),
            },
            "target-platform" => match value.as_str() {
                "selinux" | "xen" => settings.target_platform = Some(value.clone()),
                _ => return Err(bad("expected selinux or xen")),
            },
            "optimize-policy" => settings.optimize = flag(&value)?,
            "expand-check" => settings.expand_check = flag(&value)?,
            _ => {}
        }
    }
    settings.conf = Some(conf);
    Ok(settings)
}

fn read_built(store_dir: &Path) -> Built {
    let active = store_dir.join("active");
    let existing = |name: &str| Some(active.join(name)).filter(|path| path.is_file());
    let customisations = CUSTOMISATIONS
        .iter()
        .filter(|name| fs::metadata(active.join(name)).is_ok_and(|m| m.len() > 0))
        .map(|name| (*name).to_owned())
        .collect();
    Built {
        policy: existing("policy.kern"),
        file_contexts: existing("file_contexts"),
        homedirs: existing("file_contexts.homedirs"),
        local: existing("file_contexts.local"),
        customisations,
    }
}

/// Every active module of a store directory.
fn read_store_modules(store_dir: &Path) -> Result<Vec<Module>, StoreError> {
    let modules_dir = store_dir.join("active/modules");
    let mut priorities: Vec<(u16, PathBuf)> = Vec::new();
    for entry in fs::read_dir(&modules_dir).map_err(|error| StoreError::io(&modules_dir, error))? {
        let entry = entry.map_err(|error| StoreError::io(&modules_dir, error))?;
        let Some(priority) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u16>().ok())
        else {
            continue; // `disabled`, or anything libsemanage would not read either
        };
        priorities.push((priority, entry.path()));
    }
    // Highest priority first, so the first one seen of a name wins.
    priorities.sort_by_key(|p| std::cmp::Reverse(p.0));
    let disabled = modules_dir.join("disabled");
    let mut modules: Vec<Module> = Vec::new();
    for (priority, dir) in priorities {
        let mut names: Vec<String> = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|error| StoreError::io(&dir, error))? {
            let entry = entry.map_err(|error| StoreError::io(&dir, error))?;
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        for name in names {
            if disabled.join(&name).exists() || modules.iter().any(|m| m.name == name) {
                continue;
            }
            let path = dir.join(&name).join("cil");
            if !path.is_file() {
                return Err(StoreError::NotAStore {
                    path: dir.join(&name),
                    why: "module has no compiled CIL (`cil`); rebuild the store once with `semodule -B`".to_owned(),
                });
            }
            let cil = read_module(&path)?;
            modules.push(Module {
                name,
                priority: Some(priority),
                path,
                cil,
            });
        }
    }
    modules.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(modules)
}

/// A module's CIL, decompressed when it starts with bzip2's magic.
fn read_module(path: &Path) -> Result<Vec<u8>, StoreError> {
    let file = fs::File::open(path).map_err(|error| StoreError::io(path, error))?;
    let mut head = [0u8; 3];
    let compressed = {
        let mut probe = &file;
        let n = probe
            .read(&mut head)
            .map_err(|error| StoreError::io(path, error))?;
        n == 3 && &head == b"BZh"
    };
    let file = fs::File::open(path).map_err(|error| StoreError::io(path, error))?;
    let mut cil = Vec::new();
    let result = if compressed {
        bzip2::read::MultiBzDecoder::new(file)
            .take(MAX_MODULE_BYTES + 1)
            .read_to_end(&mut cil)
    } else {
        file.take(MAX_MODULE_BYTES + 1).read_to_end(&mut cil)
    };
    result.map_err(|error| StoreError::io(path, error))?;
    if cil.len() as u64 > MAX_MODULE_BYTES {
        return Err(StoreError::NotAStore {
            path: path.to_owned(),
            why: format!("module larger than {} MiB", MAX_MODULE_BYTES >> 20),
        });
    }
    Ok(cil)
}

/// `NAME.cil` files of a directory, in `strcmp` order of `NAME`.
fn read_extracted(dir: &Path) -> Result<Vec<Module>, StoreError> {
    let mut modules = Vec::new();
    for entry in fs::read_dir(dir).map_err(|error| StoreError::io(dir, error))? {
        let entry = entry.map_err(|error| StoreError::io(dir, error))?;
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "cil") || !path.is_file() {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        let cil = read_module(&path)?;
        modules.push(Module {
            name,
            priority: None,
            path,
            cil,
        });
    }
    modules.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(modules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semanage_conf_entries_skip_blocks_and_comments() {
        let text = "# c\nexpand-check=0\n[verify kernel]\npath = /x\n[end]\n handle-unknown = deny # why\nmodule-store = direct\n";
        assert_eq!(
            conf_entries(text),
            [
                ("expand-check".to_owned(), "0".to_owned()),
                ("handle-unknown".to_owned(), "deny".to_owned()),
                ("module-store".to_owned(), "direct".to_owned())
            ]
        );
    }

    #[test]
    fn root_of_a_store_directory() {
        assert_eq!(
            root_of_store_dir(Path::new("/x/var/lib/selinux/default")),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            root_of_store_dir(Path::new("/var/lib/selinux/default")),
            Some(PathBuf::from("/"))
        );
        assert_eq!(root_of_store_dir(Path::new("/srv/store")), None);
    }
}
