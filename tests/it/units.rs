//! The systemd units that boot a layout, judged by systemd itself: unit
//! names against the real `systemd-escape`, every generated unit through
//! `systemd-analyze verify` in an image root made of Debian's own units,
//! the enablement symlinks against `systemctl --root enable` and `preset`,
//! and the text against goldens (`tests/data/units/<layout>/`, the image
//! tree; regenerate with `SEMANIFEST_BLESS=1 cargo test --test it units::` and
//! review the diff).

use crate::support::fc_oracle;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{data, run, semanifest, stderr, tool};
use fsroot::Root;
use layout::diag::Source;
use layout::manifest::{self, Parsed};
use selabel::FileKind;
use units::{self, Image, UnitSet, UnitsOptions, UNIT_DIR};

/// The default layout and every layout under tests/data/layouts, with the
/// file each was read from (None for the embedded one).
fn layouts() -> Vec<(String, Option<PathBuf>, Parsed)> {
    let base = policy::base_facts();
    let mut layouts = vec![(
        "structured-var".to_owned(),
        None,
        manifest::default_layout(&base).expect("the default layout is valid"),
    )];
    let mut files: Vec<PathBuf> = fs::read_dir(data("layouts"))
        .expect("tests/data/layouts")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let source = Source::new(name.clone(), fs::read_to_string(&path).unwrap());
        let parsed = manifest::parse(source, &base).unwrap_or_else(|report| panic!("{report}"));
        layouts.push((name, Some(path), parsed));
    }
    assert!(
        layouts.iter().any(|(_, _, p)| p.layout.node.kubens),
        "a layout with kubens"
    );
    layouts
}

fn render(parsed: &Parsed, image: &Image) -> UnitSet {
    units::render(
        &parsed.layout,
        image,
        &UnitsOptions {
            policy_name: "semanifest",
            layout_text: &parsed.source.text,
        },
    )
    .unwrap_or_else(|error| panic!("{}: {error}", parsed.source.name))
}

/// A root like Debian's: `var/run` a symlink to `/run`.
fn debian_like_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    fs::create_dir_all(root.path().join("var")).unwrap();
    fs::create_dir_all(root.path().join("run")).unwrap();
    symlink("/run", root.path().join("var/run")).unwrap();
    root
}

/// Every case with a golden: each layout for an unknown image, and the
/// default layout for a Debian-like image.
fn cases() -> Vec<(String, Parsed, Image)> {
    let mut cases: Vec<(String, Parsed, Image)> = layouts()
        .into_iter()
        .map(|(name, _, parsed)| (name, parsed, Image::unknown()))
        .collect();
    let debian = debian_like_root();
    let parsed = cases[0].1.clone();
    let image = Image::inspect(&Root::open(debian.path()).unwrap(), &parsed.layout).unwrap();
    cases.push(("structured-var-on-debian".to_owned(), parsed, image));
    cases
}

/// The set as files: image path → text, with `links` and `notices` as two
/// more files. The layout's own copy is checked against its source, not
/// kept twice.
fn as_files(set: &UnitSet, parsed: &Parsed) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for file in &set.files {
        if file.path == units::LAYOUT_FILE {
            assert_eq!(file.text, parsed.source.text);
            assert!(!file.executable);
            continue;
        }
        let executable = file.path.starts_with(units::LIB_DIR);
        assert_eq!(file.executable, executable, "{}", file.path);
        files.insert(
            file.path.trim_start_matches('/').to_owned(),
            file.text.clone(),
        );
    }
    let links: String = set
        .links
        .iter()
        .map(|l| format!("{} -> {}\n", l.path, l.target))
        .collect();
    files.insert("links".to_owned(), links);
    let notices: String = set.notices.iter().map(|n| format!("{n}\n")).collect();
    files.insert("notices".to_owned(), notices);
    files
}

fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let kind = fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_dir() {
                walk(base, &path, out);
            } else if kind.is_file() {
                let relative = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(relative, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.is_dir() {
        walk(dir, dir, &mut out);
    }
    out
}

#[test]
fn units_match_goldens() {
    let bless = std::env::var_os("SEMANIFEST_BLESS").is_some();
    for (name, parsed, image) in cases() {
        let actual: BTreeMap<String, Vec<u8>> = as_files(&render(&parsed, &image), &parsed)
            .into_iter()
            .map(|(path, text)| (path, text.into_bytes()))
            .collect();
        let dir = data("units").join(&name);
        if bless {
            let _ = fs::remove_dir_all(&dir);
            for (path, text) in &actual {
                let file = dir.join(path);
                fs::create_dir_all(file.parent().unwrap()).unwrap();
                fs::write(file, text).unwrap();
            }
            continue;
        }
        let expected = read_tree(&dir);
        assert_eq!(
            expected.keys().collect::<Vec<_>>(),
            actual.keys().collect::<Vec<_>>(),
            "{name}: the set of files differs from tests/data/units/{name}; if intended, run \
             SEMANIFEST_BLESS=1 cargo test --release --test it units::"
        );
        for (path, text) in &actual {
            assert!(
                &expected[path] == text,
                "tests/data/units/{name}/{path} differs; if intended, run SEMANIFEST_BLESS=1 \
                 cargo test --release --test it units::"
            );
        }
    }
}

/// Paths with every character a layout path may have, and names at
/// systemd's length limit, escaped by us and by `systemd-escape` in one
/// call.
#[test]
fn unit_names_are_systemd_escapes() {
    let printable: String = (0x21u8..0x7f)
        .map(char::from)
        .filter(|c| *c != '"' && *c != '/')
        .collect();
    let mut paths = vec![
        "/var/run".to_owned(),
        "/var/lib/a-b".to_owned(),
        "/.hidden/.x".to_owned(),
        "/var/lib/node-local/.cache:x_y".to_owned(),
        format!("/var/{printable}"),
        format!("/{printable}"),
        format!("/var/{}", "a".repeat(245)),
        format!("/{}/{}", "b".repeat(120), "c".repeat(120)),
    ];
    // Every printable character alone (but `.`: `/.` is no layout path),
    // first and inside a name.
    for c in printable.chars() {
        if c != '.' {
            paths.push(format!("/{c}"));
        }
        paths.push(format!("/var/x{c}y"));
    }
    let ours: Vec<String> = paths
        .iter()
        .map(|p| units::unit_name(p, "mount").unwrap_or_else(|e| panic!("{p}: {e}")))
        .collect();
    let output = run(Command::new(tool("systemd-escape", "systemd"))
        .args(["--path", "--suffix=mount", "--"])
        .args(&paths));
    assert!(output.status.success(), "{}", stderr(&output));
    // One line, the names separated by spaces (an escaped name has none).
    let theirs: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(ours.len(), theirs.len());
    for ((path, ours), theirs) in paths.iter().zip(&ours).zip(&theirs) {
        assert_eq!(ours, theirs, "{path}");
    }
    // One past the limit we refuse. systemd-escape prints the name (it
    // checks the path only), but no unit file can carry it: it is longer
    // than a file name may be.
    let long = format!("/var/{}", "a".repeat(246));
    assert!(matches!(
        units::unit_name(&long, "mount"),
        Err(units::UnitPathError::TooLong { length: 256, .. })
    ));
    let output = run(Command::new(tool("systemd-escape", "systemd"))
        .args(["--path", "--suffix=mount", "--"])
        .arg(&long));
    let name = String::from_utf8(output.stdout).unwrap();
    assert_eq!(name.trim_end().len(), 256, "{name}");
    let dir = tempfile::tempdir().unwrap();
    let error = fs::write(dir.path().join(name.trim_end()), "").unwrap_err();
    assert_eq!(error.raw_os_error(), Some(36), "ENAMETOOLONG: {error}");
}

/// An image root for `systemd-analyze verify --root`: Debian's own units
/// (this machine's systemd package, the one the VM boots), stub runtime
/// units and stub executables for every command the units name.
fn verify_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let units = root.path().join("usr/lib/systemd");
    fs::create_dir_all(&units).unwrap();
    let output = run(Command::new("cp")
        .arg("-a")
        .arg("/usr/lib/systemd/system")
        .arg(&units));
    assert!(output.status.success(), "{}", stderr(&output));
    for (unit, exec) in [
        ("containerd.service", "/usr/bin/containerd"),
        ("crio.service", "/usr/bin/crio"),
        ("kubelet.service", "/usr/bin/kubelet"),
    ] {
        fs::write(
            units.join("system").join(unit),
            format!("[Unit]\nDescription=stub {unit}\n\n[Service]\nExecStart={exec}\n"),
        )
        .unwrap();
    }
    for exec in [
        "usr/bin/semanifest",
        "usr/bin/containerd",
        "usr/bin/crio",
        "usr/bin/kubelet",
    ] {
        let path = root.path().join(exec);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::copy("/usr/bin/true", &path).unwrap();
    }
    root
}

/// `systemd-analyze verify --root=ROOT UNIT...`: (success, output).
fn verify(root: &Path, names: &[String]) -> (bool, String) {
    let output = run(Command::new(tool("systemd-analyze", "systemd"))
        .arg("verify")
        .arg(format!("--root={}", root.display()))
        .args(names));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    (output.status.success(), text)
}

/// The units of a set by name, with the units its drop-ins extend.
fn unit_names(set: &UnitSet) -> Vec<String> {
    let mut names: Vec<String> = set
        .files
        .iter()
        .filter_map(|f| f.path.strip_prefix(&format!("{UNIT_DIR}/")))
        .map(|rest| rest.split(".d/").next().unwrap().to_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `systemd-analyze verify` (252) cannot load a unit whose name has a `:`
/// (valid for systemd, and what `systemd-escape` makes of a `:` in a path):
/// it fails with "Couldn't process aliases" even on a one-line tmpfs mount
/// unit. Such a mount unit is verified as a copy for the same path with
/// `:` → `_`, which checks everything but the `:`.
fn verifiable(set: &UnitSet) -> UnitSet {
    let mut set = set.clone();
    for file in &mut set.files {
        let Some(name) = file.path.strip_prefix(&format!("{UNIT_DIR}/")) else {
            continue;
        };
        if !name.contains(':') {
            continue;
        }
        assert!(name.ends_with(".mount"), "{name}");
        let place = file
            .text
            .lines()
            .find_map(|line| line.strip_prefix("Where="))
            .unwrap()
            .to_owned();
        file.text = file.text.replace(&place, &place.replace(':', "_"));
        file.path = file.path.replace(':', "_");
        for link in &mut set.links {
            link.path = link.path.replace(':', "_");
            link.target = link.target.replace(':', "_");
        }
    }
    set
}

#[test]
fn systemd_analyze_verify_passes_on_every_unit() {
    for (name, parsed, image) in cases() {
        let set = verifiable(&render(&parsed, &image));
        let root = verify_root();
        units::install(&set, root.path(), true).unwrap();
        let names = unit_names(&set);
        assert!(names.iter().any(|n| n == "semanifest-relabel.service"));
        let (ok, output) = verify(root.path(), &names);
        assert!(ok && output.is_empty(), "{name}: {names:?}\n{output}");
    }
}

/// Control: the same verification fails on what the units must avoid — a
/// `%` systemd would expand, a name that is not the path's escape, a
/// command the image lacks — so its silence above means something. (A `%`
/// before a character that is no specifier, or at the end, passes
/// silently: the doubling is checked by the goldens and by the mount unit
/// of a path with `%v` in `kubens-node`, whose name no longer matches
/// `Where=` if systemd expands it.)
#[test]
fn control_verify_rejects_broken_units() {
    let parsed = layouts().remove(0).2;
    let set = render(&parsed, &Image::unknown());
    let mount = set
        .file(&format!("{UNIT_DIR}/var-run.mount"))
        .expect("the default layout mounts /var/run")
        .text
        .clone();
    assert!(mount.contains("size=20%%"), "{mount}");
    let breakages = [
        ("var-run.mount", mount.replace("size=20%%", "size=20%z")),
        ("var-run2.mount", mount.clone()),
        (
            "semanifest-relabel.service",
            set.file(&format!("{UNIT_DIR}/semanifest-relabel.service"))
                .unwrap()
                .text
                .replace("/usr/bin/semanifest", "/usr/bin/semanifest-missing"),
        ),
    ];
    for (unit, text) in breakages {
        let root = verify_root();
        units::install(&set, root.path(), true).unwrap();
        fs::write(root.path().join("usr/lib/systemd/system").join(unit), text).unwrap();
        let (ok, output) = verify(root.path(), &[unit.to_owned()]);
        assert!(!ok || !output.is_empty(), "verify accepted a broken {unit}");
    }
    // A `%` left single in a path makes the name no longer match.
    let parsed = layouts()
        .into_iter()
        .find(|(name, _, _)| name == "kubens-node")
        .unwrap()
        .2;
    let set = render(&parsed, &Image::unknown());
    let unit = "var-lib-odd\\x25v\\x2ddir.mount";
    let root = verify_root();
    units::install(&set, root.path(), true).unwrap();
    assert_eq!(
        verify(root.path(), &[unit.to_owned()]),
        (true, String::new())
    );
    let file = root.path().join("usr/lib/systemd/system").join(unit);
    fs::write(
        &file,
        fs::read_to_string(&file).unwrap().replace("%%v", "%v"),
    )
    .unwrap();
    let (ok, output) = verify(root.path(), &[unit.to_owned()]);
    assert!(
        !ok && output.contains("Where= setting doesn't match unit name"),
        "{output}"
    );
}

/// Symlinks under ROOT/etc: path → target.
fn links_under(root: &Path) -> BTreeMap<String, String> {
    let mut links = BTreeMap::new();
    let etc = root.join("etc");
    let mut stack = vec![etc];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let relative = format!("/{}", path.strip_prefix(root).unwrap().display());
                let target = fs::read_link(&path).unwrap().display().to_string();
                links.insert(relative, target);
            } else if meta.is_dir() {
                stack.push(path);
            }
        }
    }
    links
}

fn layout_args(path: &Option<PathBuf>) -> Vec<String> {
    match path {
        Some(path) => vec!["--layout".to_owned(), path.display().to_string()],
        None => Vec::new(),
    }
}

#[test]
fn build_enables_as_systemctl_enable_and_preset_do() {
    let systemctl = tool("systemctl", "systemd");
    for (name, path, parsed) in layouts() {
        let set = render(&parsed, &Image::unknown());
        let enabled = set.enabled();
        assert!(!enabled.is_empty(), "{name}");

        let built = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let output = run(semanifest()
            .arg("build")
            .args(layout_args(&path))
            .arg("--out")
            .arg(out.path())
            .arg("--install-root")
            .arg(built.path()));
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let ours = links_under(built.path());
        let expected: BTreeMap<String, String> = set
            .links
            .iter()
            .map(|l| (l.path.clone(), l.target.clone()))
            .collect();
        assert_eq!(ours, expected, "{name}");

        for verb in ["enable", "preset"] {
            let root = tempfile::tempdir().unwrap();
            let output = run(semanifest()
                .arg("units")
                .args(layout_args(&path))
                .arg("--out")
                .arg(root.path()));
            assert!(output.status.success(), "{name}: {}", stderr(&output));
            assert!(
                links_under(root.path()).is_empty(),
                "units --out enables nothing"
            );
            let output = run(Command::new(&systemctl)
                .arg(format!("--root={}", root.path().display()))
                .arg(verb)
                .args(&enabled));
            assert!(
                output.status.success(),
                "{name}: systemctl {verb}: {}",
                stderr(&output)
            );
            assert_eq!(links_under(root.path()), ours, "{name}: systemctl {verb}");
        }
    }
}

#[test]
fn units_out_writes_the_files_build_installs() {
    for (name, path, _) in layouts() {
        let built = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let output = run(semanifest()
            .arg("build")
            .args(layout_args(&path))
            .arg("--out")
            .arg(out.path())
            .arg("--install-root")
            .arg(built.path()));
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let units_dir = tempfile::tempdir().unwrap();
        let output = run(semanifest()
            .arg("units")
            .args(layout_args(&path))
            .arg("--out")
            .arg(units_dir.path()));
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let mut installed = read_tree(built.path());
        installed.retain(|path, _| !path.starts_with("etc/") && path != "usr/bin/semanifest");
        assert_eq!(installed, read_tree(units_dir.path()), "{name}");
        for script in ["kubensenter", "kubens"] {
            let file = units_dir.path().join("usr/lib/semanifest").join(script);
            if file.exists() {
                let mode = fs::metadata(&file).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o755, "{}", file.display());
            }
        }
    }
}

/// Debian's `/var/run` is a symlink to `/run`: no mount unit (systemd
/// refuses one), the relabel unit labels /run too, and file_contexts gets
/// the equivalence that makes libselinux and semanifest answer for /run as
/// for /var/run.
#[test]
fn a_declared_path_held_as_a_symlink_gets_an_equivalence_not_a_mount() {
    for (link, form) in [("/run", "absolute"), ("../run", "relative")] {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("var")).unwrap();
        fs::create_dir_all(root.path().join("run")).unwrap();
        symlink(link, root.path().join("var/run")).unwrap();
        let out = tempfile::tempdir().unwrap();
        let output = run(semanifest()
            .arg("build")
            .arg("--out")
            .arg(out.path())
            .arg("--install-root")
            .arg(root.path()));
        assert!(output.status.success(), "{form}: {}", stderr(&output));
        let message = stderr(&output);
        assert!(
            message.contains(
                "semanifest: note: /var/run: the image holds it as a symlink to /run, so it \
                 gets no mount unit"
            ),
            "{form}: {message}"
        );
        let unit_dir = root.path().join("usr/lib/systemd/system");
        assert!(!unit_dir.join("var-run.mount").exists(), "{form}");
        assert!(unit_dir.join("var-mnt.mount").exists(), "{form}");
        let relabel = fs::read_to_string(unit_dir.join("semanifest-relabel.service")).unwrap();
        assert!(
            relabel.contains("contexts/files/file_contexts /var /run\n"),
            "{relabel}"
        );
        assert_eq!(
            fs::read_link(root.path().join("var/run")).unwrap(),
            Path::new(link),
            "the image is left as it was"
        );

        let fc = root
            .path()
            .join("etc/selinux/semanifest/contexts/files/file_contexts");
        let subs = fs::read_to_string(fc.with_file_name("file_contexts.subs_dist")).unwrap();
        assert!(subs.lines().any(|l| l == "/run /var/run"), "{subs}");
        let libselinux = fc_oracle::LibSelinux::open(&fc).unwrap();
        for key in ["/run", "/run/lock/subsys"] {
            let label = fc_oracle::Answer::Label("system_u:object_r:var_run_t:s0".to_owned());
            assert_eq!(
                libselinux.lookup(key.as_bytes(), FileKind::Dir),
                label,
                "{key}"
            );
            let output = run(semanifest()
                .args(["lookup", "--file-contexts"])
                .arg(&fc)
                .arg(key));
            assert_eq!(
                String::from_utf8_lossy(&output.stdout),
                format!("{key}\tsystem_u:object_r:var_run_t:s0\n")
            );
        }
        // Control: without the equivalence /run is the base policy's.
        fs::remove_file(fc.with_file_name("file_contexts.subs_dist")).unwrap();
        let libselinux = fc_oracle::LibSelinux::open(&fc).unwrap();
        assert_eq!(
            libselinux.lookup(b"/run", FileKind::Dir),
            fc_oracle::Answer::Label("system_u:object_r:os_file_t:s0".to_owned())
        );
    }
}

/// Control for the above: a root that holds /var/run as a directory gets
/// the mount unit and no equivalence, and a rebuild removes an earlier
/// build's equivalence.
#[test]
fn control_a_declared_directory_gets_its_mount() {
    let root = debian_like_root();
    let out = tempfile::tempdir().unwrap();
    let build = |root: &Path| {
        run(semanifest()
            .arg("build")
            .arg("--out")
            .arg(out.path())
            .arg("--install-root")
            .arg(root))
    };
    assert!(build(root.path()).status.success());
    let subs = root
        .path()
        .join("etc/selinux/semanifest/contexts/files/file_contexts.subs_dist");
    assert!(subs.exists());
    fs::remove_file(root.path().join("var/run")).unwrap();
    fs::create_dir(root.path().join("var/run")).unwrap();
    let output = build(root.path());
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("note:"), "{}", stderr(&output));
    assert!(root
        .path()
        .join("usr/lib/systemd/system/var-run.mount")
        .exists());
    assert!(!subs.exists(), "the earlier equivalence is gone");
}

#[test]
fn symlinks_that_cannot_be_an_equivalence_are_errors() {
    for (target, message) in [
        ("/var/lib/run", "which overlaps the layout's `/var`"),
        ("/", "which semanifest cannot name"),
        ("/a b", "which semanifest cannot name"),
    ] {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("var")).unwrap();
        symlink(target, root.path().join("var/run")).unwrap();
        let out = tempfile::tempdir().unwrap();
        let output = run(semanifest()
            .arg("units")
            .arg("--image")
            .arg(root.path())
            .arg("--out")
            .arg(out.path()));
        assert_eq!(output.status.code(), Some(2), "{target}");
        let text = stderr(&output);
        let named = format!("{}/var/run: a symlink to", root.path().display());
        assert!(
            text.contains(&named) && text.contains(message),
            "{target}: {text}"
        );
        assert!(
            read_tree(out.path()).is_empty(),
            "{target}: nothing written"
        );
    }
}

/// Every file beneath `dir` with its mode and bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        for entry in fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let bytes = if meta.is_file() {
                fs::read(&path).unwrap()
            } else {
                Vec::new()
            };
            if meta.is_dir() {
                stack.push(path.clone());
            }
            out.insert(path, (meta.permissions().mode(), bytes));
        }
    }
    out
}

/// A symlink on the way into the image is never followed: the sentinel
/// tree it points at comes out byte for byte, mode for mode, unchanged.
#[test]
fn install_follows_no_symlink_in_the_image() {
    let sentinel = tempfile::tempdir().unwrap();
    fs::create_dir_all(sentinel.path().join("system/etcd")).unwrap();
    fs::write(sentinel.path().join("system/etcd/member"), "cluster state").unwrap();
    fs::write(sentinel.path().join("system/var-run.mount"), "not ours").unwrap();
    let before = snapshot(sentinel.path());
    for (link, named) in [
        ("usr/lib/systemd", "usr/lib/systemd"),
        ("etc/systemd", "etc/systemd"),
    ] {
        let root = tempfile::tempdir().unwrap();
        let at = root.path().join(link);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(sentinel.path(), &at).unwrap();
        let out = tempfile::tempdir().unwrap();
        let output = run(semanifest()
            .arg("build")
            .arg("--out")
            .arg(out.path())
            .arg("--install-root")
            .arg(root.path()));
        assert_eq!(output.status.code(), Some(2), "{link}");
        let expected = format!("{}/{named}: a symlink is in the way", root.path().display());
        assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
        assert_eq!(snapshot(sentinel.path()), before, "{link}");
    }
    // Control: the same build into a root without the symlink writes the
    // units.
    let root = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = run(semanifest()
        .arg("build")
        .arg("--out")
        .arg(out.path())
        .arg("--install-root")
        .arg(root.path()));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(root
        .path()
        .join("usr/lib/systemd/system/var-run.mount")
        .is_file());
}

fn build_into(root: &Path, extra: &[&str]) -> std::process::Output {
    let out = tempfile::tempdir().unwrap();
    run(semanifest()
        .arg("build")
        .arg("--out")
        .arg(out.path())
        .arg("--install-root")
        .arg(root)
        .args(extra))
}

/// The units run /usr/bin/semanifest, so `build --install-root` puts the
/// running binary there (0755, the same bytes) and it runs; with
/// `--no-install-binary` (the control) nothing is at that name.
#[test]
fn build_installs_the_binary_the_units_run() {
    let root = tempfile::tempdir().unwrap();
    let output = build_into(root.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let installed = root.path().join("usr/bin/semanifest");
    assert!(
        stderr(&output).contains(&format!("wrote {}", installed.display())),
        "{}",
        stderr(&output)
    );
    let meta = fs::symlink_metadata(&installed).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o755);
    assert_eq!(
        fs::read(&installed).unwrap(),
        fs::read(env!("CARGO_BIN_EXE_semanifest")).unwrap()
    );
    let version = run(Command::new(&installed).arg("--version"));
    assert!(version.status.success(), "{}", stderr(&version));
    assert!(
        crate::support::stdout(&version).starts_with("semanifest "),
        "{}",
        crate::support::stdout(&version)
    );
    let names: Vec<String> = fs::read_dir(root.path().join("usr/bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["semanifest"], "no temporary left behind");

    let packaged = tempfile::tempdir().unwrap();
    let output = build_into(packaged.path(), &["--no-install-binary"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!packaged.path().join("usr/bin/semanifest").exists());
    assert!(packaged
        .path()
        .join("usr/lib/systemd/system/semanifest-apply.service")
        .is_file());

    let out = tempfile::tempdir().unwrap();
    let output = run(semanifest()
        .arg("build")
        .arg("--out")
        .arg(out.path())
        .arg("--no-install-binary"));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--install-root"),
        "{}",
        stderr(&output)
    );
}

/// A symlink at ROOT/usr/bin pointing out of the image is refused by name
/// and nothing beneath its target changes; a symlink at the binary's own
/// name is replaced, never written through. Control: the same build into a
/// plain root writes the binary (above).
#[test]
fn the_binary_is_installed_through_no_symlink() {
    let sentinel = tempfile::tempdir().unwrap();
    fs::write(sentinel.path().join("semanifest"), "the host's own").unwrap();
    fs::write(sentinel.path().join("sh"), "#!/bin/true\n").unwrap();
    let before = snapshot(sentinel.path());

    let root = tempfile::tempdir().unwrap();
    fs::create_dir(root.path().join("usr")).unwrap();
    symlink(sentinel.path(), root.path().join("usr/bin")).unwrap();
    let output = build_into(root.path(), &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let expected = format!("{}/usr/bin: a symlink is in the way", root.path().display());
    assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
    assert_eq!(snapshot(sentinel.path()), before);

    let root = tempfile::tempdir().unwrap();
    fs::create_dir_all(root.path().join("usr/bin")).unwrap();
    let target = sentinel.path().join("semanifest");
    symlink(&target, root.path().join("usr/bin/semanifest")).unwrap();
    let output = build_into(root.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let installed = root.path().join("usr/bin/semanifest");
    assert!(fs::symlink_metadata(&installed).unwrap().is_file());
    assert_eq!(
        fs::read(&installed).unwrap(),
        fs::read(env!("CARGO_BIN_EXE_semanifest")).unwrap()
    );
    assert_eq!(snapshot(sentinel.path()), before);
}

/// A path a unit setting would read otherwise than written is refused by
/// name; the control with a plain name passes.
#[test]
fn a_path_units_cannot_carry_is_an_error() {
    let layout = |path: &str| {
        format!(
            "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata: {{ name: t }}\nspec:\n  domains:\n    \
             etcd: {{ type: etcd_t }}\n  paths:\n    - path: {path}\n      type: x_var_t\n      \
             access: {{ etcd: write }}\n      mount: {{ propagation: rshared }}\n"
        )
    };
    for (path, ok) in [
        ("/var/a$b", false),
        ("/var/a\\b", false),
        ("/var/a'b", false),
        ("/var/a%b", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("layout.yaml");
        fs::write(&file, layout(path)).unwrap();
        let output = run(semanifest()
            .arg("units")
            .arg("--layout")
            .arg(&file)
            .arg("--out")
            .arg(dir.path().join("out")));
        if ok {
            assert!(output.status.success(), "{path}: {}", stderr(&output));
            continue;
        }
        assert_eq!(output.status.code(), Some(2), "{path}");
        let expected = format!("semanifest: error: `{path}` contains");
        assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
    }
}

/// The apply unit of an image that holds /var/run as a symlink runs
/// `apply --keep-symlink /var/run`: apply reports the link, follows and
/// changes nothing through it, and places the rest. Controls: without the
/// flag the same link is an error, and a kept link pointing into the
/// layout stays one.
#[test]
fn apply_keeps_what_the_image_holds_as_a_symlink() {
    let root = debian_like_root();
    let parsed = layouts().remove(0).2;
    let image = Image::inspect(&Root::open(root.path()).unwrap(), &parsed.layout).unwrap();
    let set = render(&parsed, &image);
    let apply = &set
        .file(&format!("{UNIT_DIR}/semanifest-apply.service"))
        .unwrap()
        .text;
    assert!(
        apply.contains(
            "ExecStart=/usr/bin/semanifest apply --layout /usr/lib/semanifest/layout.yaml \
             --keep-symlink /var/run\n"
        ),
        "{apply}"
    );
    let run_dir = root.path().join("run");
    let before = snapshot(&run_dir);
    let run_mode = fs::metadata(&run_dir).unwrap().permissions().mode();

    let apply = |extra: &[&str]| {
        run(semanifest()
            .arg("apply")
            .arg("--root")
            .arg(root.path())
            .args(extra))
    };
    let output = apply(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let error = format!(
        "semanifest: error: {}/var/run: is a symlink to /run (never followed)",
        root.path().display()
    );
    assert!(stderr(&output).contains(&error), "{}", stderr(&output));

    let output = apply(&["--keep-symlink", "/var/run"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let note = format!(
        "semanifest: note: {}/var/run: a symlink to /run, kept as the image holds it (never followed)",
        root.path().display()
    );
    assert!(stderr(&output).contains(&note), "{}", stderr(&output));
    assert_eq!(
        fs::read_link(root.path().join("var/run")).unwrap(),
        Path::new("/run")
    );
    assert_eq!(
        snapshot(&run_dir),
        before,
        "nothing placed through the link"
    );
    assert_eq!(
        fs::metadata(&run_dir).unwrap().permissions().mode(),
        run_mode
    );
    assert!(
        root.path().join("var/lib/etcd").is_dir(),
        "the rest is placed"
    );

    // A kept link into the layout is still refused.
    fs::remove_file(root.path().join("var/run")).unwrap();
    symlink("/var/lib/run", root.path().join("var/run")).unwrap();
    let output = apply(&["--keep-symlink", "/var/run"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("is a symlink to /var/lib/run, which overlaps the layout's `/var`; not kept"),
        "{}",
        stderr(&output)
    );
    // A path the layout does not have is a usage error.
    let output = apply(&["--keep-symlink", "/srv/x"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--keep-symlink /srv/x: not a path of the layout"));
}

/// An ephemeral path that is no tmpfs is emptied at every boot: the apply
/// unit runs `prune` on it first (systemd accepts the unit). Control: the
/// default layout, whose only ephemeral path is a tmpfs, gets no prune, and
/// neither does a path the image holds as a symlink.
#[test]
fn ephemeral_paths_on_disk_are_pruned_before_apply() {
    let text = manifest::DEFAULT_LAYOUT.replace(
        "  paths:\n",
        "  paths:\n    - path: /var/cache/node\n      type: node_cache_t\n      lifecycle: ephemeral\n\
         \x20   - path: /var/tmp\n      type: node_tmp_t\n      lifecycle: ephemeral\n",
    );
    let source = Source::new("ephemeral", text);
    let parsed = manifest::parse(source, &policy::base_facts()).unwrap_or_else(|r| panic!("{r}"));
    let apply_unit = |set: &UnitSet| {
        set.file(&format!("{UNIT_DIR}/semanifest-apply.service"))
            .expect("apply unit")
            .text
            .clone()
    };
    let set = render(&parsed, &Image::unknown());
    let text = apply_unit(&set);
    assert!(
        text.contains(&format!(
            "ExecStartPre=-/usr/bin/semanifest prune --layout {} /var/cache/node /var/tmp\n",
            units::LAYOUT_FILE
        )),
        "{text}"
    );
    let verifiable_set = verifiable(&set);
    let root = verify_root();
    units::install(&verifiable_set, root.path(), true).unwrap();
    let (ok, output) = verify(root.path(), &unit_names(&verifiable_set));
    assert!(ok && output.is_empty(), "{output}");

    // A path the image holds as a symlink is not pruned.
    let image_root = tempfile::tempdir().unwrap();
    fs::create_dir_all(image_root.path().join("var/cache")).unwrap();
    fs::create_dir_all(image_root.path().join("tmp")).unwrap();
    symlink("/tmp", image_root.path().join("var/tmp")).unwrap();
    let image = Image::inspect(&Root::open(image_root.path()).unwrap(), &parsed.layout).unwrap();
    let text = apply_unit(&render(&parsed, &image));
    assert!(
        text.contains(&format!(
            "ExecStartPre=-/usr/bin/semanifest prune --layout {} /var/cache/node\n",
            units::LAYOUT_FILE
        )),
        "{text}"
    );
    // Control: the default layout's /var/run is a tmpfs.
    let default = layouts().remove(0).2;
    let text = apply_unit(&render(&default, &Image::unknown()));
    assert!(!text.contains("ExecStartPre"), "{text}");
}
