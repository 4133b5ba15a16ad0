//! What distribution stores do that breaks a naive module target,
//! reproduced on copies of Debian's refpolicy store (each changed the way
//! Fedora's targeted store is), each with a control that shows the test
//! could fail: a store that breaks its own neverallows under
//! `expand-check=0`, grants only a boolean gives (`map` and more), a
//! `file_contexts.subs_dist` alias of a declared path, store services that
//! own a re-typed path (auditd), the extracted-CIL form, and a secilc that
//! does not enforce neverallows.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::fc_oracle::{Answer, LibSelinux};
use crate::support::store::{copy_of, refpolicy_store, semodule_install, store_dir};
use crate::support::{run, run_ok, semanifest, stderr, stdout, tool};
use layout::manifest::DEFAULT_LAYOUT;
use selabel::FileKind;

const MODULE: &str = "structured_var";
const FC: &str = "etc/selinux/default/contexts/files/file_contexts";
const SUBS_DIST: &str = "etc/selinux/default/contexts/files/file_contexts.subs_dist";

/// `build --target module --against STORE --out OUT` with `extra` args.
fn build(store: &Path, out: &Path, extra: &[&str]) -> Output {
    run(semanifest()
        .args(["build", "--target", "module", "--against"])
        .arg(store)
        .arg("--out")
        .arg(out)
        .args(extra))
}

fn built(store: &Path, out: &Path, extra: &[&str]) {
    let output = build(store, out, extra);
    assert!(
        output.status.success(),
        "build failed:\n{}{}",
        stdout(&output),
        stderr(&output)
    );
}

fn report(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(out.join("report.json")).unwrap()).unwrap()
}

/// A copy of Debian's store with `modules` (name, CIL) installed by the
/// real semodule at priority 100, as a distribution's own modules are.
fn store_with(modules: &[(&str, &str)]) -> tempfile::TempDir {
    let copy = copy_of(&refpolicy_store());
    let dir = tempfile::tempdir().unwrap();
    for (name, cil) in modules {
        let path = dir.path().join(format!("{name}.cil"));
        fs::write(&path, cil).unwrap();
        run_ok(
            Command::new(tool("semodule", "policycoreutils"))
                .arg("-n")
                .arg("-p")
                .arg(copy.path())
                .args(["-X", "100", "-i"])
                .arg(&path),
        );
    }
    copy
}

/// The default layout with `extra` after `spec:` (spec-level settings),
/// written into `dir`.
fn layout_with(dir: &Path, extra: &str) -> PathBuf {
    let text = DEFAULT_LAYOUT.replacen("spec:\n", &format!("spec:\n{extra}"), 1);
    let path = dir.join("layout.yaml");
    fs::write(&path, text).unwrap();
    path
}

fn sesearch(policy: &Path, args: &[&str]) -> Vec<String> {
    run_ok(
        Command::new(tool("sesearch", "setools"))
            .arg("-A")
            .args(args)
            .arg(policy),
    )
    .lines()
    .filter(|l| l.starts_with("allow "))
    .map(str::to_owned)
    .collect()
}

fn protection<'a>(report: &'a serde_json::Value, type_name: &str) -> &'a serde_json::Value {
    report["protections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["reach"]["type_name"] == type_name)
        .unwrap_or_else(|| panic!("no protection of {type_name}"))
}

/// A module that breaks the base's `neverallow ~can_write_shadow_passwords
/// shadow_t:file write`, as container-selinux breaks 13 of Fedora's.
const BREAKS_A_BASE_NEVERALLOW: &str = "(type quirk_t)\n(roletype system_r quirk_t)\n\
     (typeattributeset domain (quirk_t))\n(allow quirk_t shadow_t (file (write)))\n";

#[test]
fn a_store_that_breaks_its_own_neverallows_is_honoured_under_expand_check_0() {
    let store = store_with(&[("quirkshadow", BREAKS_A_BASE_NEVERALLOW)]);
    let out = tempfile::tempdir().unwrap();
    built(store.path(), out.path(), &[]);
    let report = report(out.path());
    assert_eq!(report["expand_check"], false);
    assert_eq!(report["proof"]["result"], "proven");
    let violations = report["proof"]["store_violations"].as_array().unwrap();
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert!(violations[0]["neverallow"]
        .as_str()
        .unwrap()
        .contains("shadow_t"));
    let text = fs::read_to_string(out.path().join("report.txt")).unwrap();
    assert!(
        text.contains("the store's own neverallows fail 1 time"),
        "{text}"
    );
    // The prediction is what semodule installs on that store.
    assert_eq!(report["verification"]["result"], "identical");
    let installed = copy_of(store.path());
    semodule_install(
        installed.path(),
        "default",
        &out.path().join(format!("{MODULE}.cil")),
    );
    assert_eq!(
        fs::read(out.path().join("policy.33")).unwrap(),
        fs::read(store_dir(installed.path(), "default").join("active/policy.kern")).unwrap()
    );

    // Control: with expand-check on, semodule refuses the store as it is,
    // and so does the build.
    let conf = store.path().join("etc/selinux/semanage.conf");
    let text = fs::read_to_string(&conf).unwrap();
    fs::write(&conf, text.replace("expand-check=0", "expand-check=1")).unwrap();
    let refused = run(Command::new(tool("semodule", "policycoreutils"))
        .arg("-n")
        .arg("-p")
        .arg(store.path())
        .args(["-X", "400", "-i"])
        .arg(out.path().join(format!("{MODULE}.cil"))));
    assert!(!refused.status.success(), "semodule installed it anyway");
    let output = build(store.path(), &out.path().join("again"), &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("shadow_t"), "{}", stderr(&output));
}

/// The second build against an unchanged store takes what the first
/// verified from the cache (keyed by the store's content): with libsepol
/// (the default) it compiles store + module once for both builds, with
/// `--secilc` once with the store's own broken neverallow voided; either
/// way every output is byte for byte the first build's. Control: a
/// changed store is a miss, and a build without the cache says nothing
/// of it.
#[test]
fn a_second_build_reuses_the_verified_store_and_writes_the_same_bytes() {
    let store = store_with(&[("quirkshadow", BREAKS_A_BASE_NEVERALLOW)]);
    let secilc = tool("secilc", "secilc");
    for compiler in [&[][..], &["--secilc", secilc.to_str().unwrap()][..]] {
        let cache = tempfile::tempdir().unwrap();
        second_build_same_bytes(store.path(), cache.path(), compiler);
    }
}

const EARLIER: &str = "verified by an earlier build";

fn second_build_same_bytes(store: &Path, cache: &Path, compiler: &[&str]) {
    let build_cached = |store: &Path, out: &Path| {
        let output = run(semanifest()
            .env("SEMANIFEST_CACHE_DIR", cache)
            .args(["build", "--target", "module", "--against"])
            .arg(store)
            .arg("--out")
            .arg(out)
            .args(compiler));
        assert!(output.status.success(), "{}", stderr(&output));
        stderr(&output)
    };
    let first = tempfile::tempdir().unwrap();
    assert!(!build_cached(store, first.path()).contains(EARLIER));
    let second = tempfile::tempdir().unwrap();
    assert!(build_cached(store, second.path()).contains(EARLIER));
    // The reports name the store's path, which is another one.
    let mut reports = [report(first.path()), report(second.path())];
    for report in &mut reports {
        report.as_object_mut().unwrap().remove("store");
    }
    assert_eq!(reports[0], reports[1]);
    for name in ["policy.33", "file_contexts", &format!("{MODULE}.cil")] {
        assert_eq!(
            fs::read(first.path().join(name)).unwrap(),
            fs::read(second.path().join(name)).unwrap(),
            "{name} differs ({compiler:?})"
        );
    }
    let report = report(second.path());
    assert_eq!(report["verification"]["result"], "identical");
    // The base's neverallow, named by module and line, not by a
    // temporary copy.
    let at = report["proof"]["store_violations"][0]["at"]
        .as_str()
        .unwrap();
    assert!(at.starts_with("base.cil:"), "{at}");

    // Control: the cache is off, or the store changed: compiled again.
    let off = tempfile::tempdir().unwrap();
    let output = run(semanifest()
        .env("SEMANIFEST_CACHE_DIR", "off")
        .args(["build", "--target", "module", "--against"])
        .arg(store)
        .arg("--out")
        .arg(off.path())
        .args(compiler));
    assert!(!stderr(&output).contains(EARLIER), "{}", stderr(&output));
    let changed = store_with(&[
        ("quirkshadow", BREAKS_A_BASE_NEVERALLOW),
        (
            "quirkother",
            "(type quirk_other_t)\n(roletype object_r quirk_other_t)\n",
        ),
    ]);
    let output = run(semanifest()
        .env("SEMANIFEST_CACHE_DIR", cache)
        .args(["build", "--target", "module", "--against"])
        .arg(changed.path())
        .arg("--out")
        .arg(tempfile::tempdir().unwrap().path())
        .args(compiler));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains(EARLIER), "{}", stderr(&output));
}

/// A cold build compiles store + module with nothing voided: secilc lists
/// every broken neverallow with the rules that break it, so the store's
/// own (broken by a store module) are told from one only an `--include`
/// file breaks, and only the store's own are remembered for later builds.
#[test]
fn a_cold_build_tells_the_stores_own_violations_from_newly_broken_ones() {
    let store = store_with(&[("quirkshadow", BREAKS_A_BASE_NEVERALLOW)]);
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Breaks the base's neverallow on security_t load_policy, which no
    // store module breaks.
    let include = dir.path().join("loader.cil");
    fs::write(
        &include,
        "(type quirk_loader_t)\n(roletype system_r quirk_loader_t)\n\
         (typeattributeset domain (quirk_loader_t))\n\
         (allow quirk_loader_t security_t (security (load_policy)))\n",
    )
    .unwrap();
    let build_cached = |out: &Path, extra: &[&str]| {
        let output = run(semanifest()
            .env("SEMANIFEST_CACHE_DIR", cache.path())
            .args(["build", "--target", "module", "--against"])
            .arg(store.path())
            .arg("--out")
            .arg(out)
            .args(extra));
        assert!(output.status.success(), "{}", stderr(&output));
        report(out)
    };
    let violations = |report: &serde_json::Value| -> Vec<String> {
        report["proof"]["store_violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["neverallow"].as_str().unwrap().to_owned())
            .collect()
    };
    let cold = build_cached(
        &dir.path().join("cold"),
        &["--include", include.to_str().unwrap()],
    );
    let cold = violations(&cold);
    assert_eq!(cold.len(), 2, "{cold:?}");
    assert!(cold.iter().any(|v| v.contains("shadow_t")), "{cold:?}");
    assert!(cold.iter().any(|v| v.contains("security_t")), "{cold:?}");
    // The cache kept the store's own alone: a warm build without the
    // include voids shadow_t's and finds nothing else broken.
    let warm = build_cached(&dir.path().join("warm"), &[]);
    assert_eq!(warm["proof"]["result"], "proven");
    let warm = violations(&warm);
    assert_eq!(warm.len(), 1, "{warm:?}");
    assert!(warm[0].contains("shadow_t"), "{warm:?}");
    // Control: a warm build with the include finds the newly broken one
    // again (it was not voided).
    let again = build_cached(
        &dir.path().join("again"),
        &["--include", include.to_str().unwrap()],
    );
    assert_eq!(violations(&again).len(), 2);
}

#[test]
fn map_under_a_boolean_is_not_access_to_data_and_the_report_says_what_it_is() {
    // Fedora's base: every domain may map every file type while
    // domain_can_mmap_files is on (off by default).
    let store = store_with(&[(
        "quirkmap",
        "(boolean quirk_mmap false)\n\
         (booleanif quirk_mmap (true (allow domain file_type (file (map)))))\n\
         (allow domain file_type (file (execmod)))\n",
    )]);
    let out = tempfile::tempdir().unwrap();
    built(store.path(), out.path(), &[]);
    let report = report(out.path());
    let etcd = protection(&report, "etcd_var_t");
    let leftovers: Vec<&str> = etcd["reach"]["workload"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["leftover"].as_str().unwrap())
        .collect();
    assert_eq!(leftovers, ["traversal", "map"]);
    let groups = etcd["reach"]["groups"].as_array().unwrap();
    let mapping = groups
        .iter()
        .find(|g| g["via"] == "domain → file_type" && !g["condition"].is_null())
        .expect("the boolean's group");
    assert_eq!(mapping["grade"], "map-only");
    assert_eq!(
        mapping["condition"]["condition"]["expression"],
        "quirk_mmap"
    );
    assert_eq!(mapping["condition"]["defaults"]["quirk_mmap"], false);
    assert_eq!(mapping["condition"]["on_by_default"], false);
    // execmod alone is no write (nor anything else).
    let execmod = groups
        .iter()
        .find(|g| g["via"] == "domain → file_type" && g["condition"].is_null())
        .expect("the unconditional group");
    assert_eq!(execmod["grade"], "map-only");
    let text = fs::read_to_string(out.path().join("report.txt")).unwrap();
    assert!(
        text.contains("quirk_mmap off by default; off as shipped"),
        "{text}"
    );
}

/// A grant of `read` only a boolean gives, on by default or not.
fn reads_under_a_boolean(default: bool) -> String {
    format!(
        "(boolean quirk_read {default})\n\
         (booleanif quirk_read (true (allow container_domain file_type (file (read open)))))\n"
    )
}

#[test]
fn a_grant_only_a_boolean_gives_counts_unless_the_layout_says_otherwise() {
    // Control: the same shape as `map` above, with `read`: refused by
    // default, at the manifest line, with what to change.
    let store = store_with(&[("quirkread", &reads_under_a_boolean(false))]);
    let out = tempfile::tempdir().unwrap();
    let output = build(store.path(), out.path(), &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    let at = format!(
        "<embedded default layout>:{}:18: error[neverallow]: protected path `/var/lib/etcd`",
        crate::support::etcd_protected_line()
    );
    assert!(err.contains(&at), "{err}");
    assert!(err.contains("booleanGrants: byDefault"), "{err}");

    // `booleanGrants: byDefault`: off by default, so reported, not refused.
    let dir = tempfile::tempdir().unwrap();
    let layout = layout_with(dir.path(), "  store: { booleanGrants: byDefault }\n");
    let layout_arg = layout.to_str().unwrap();
    built(store.path(), out.path(), &["--layout", layout_arg]);
    let report = report(out.path());
    assert_eq!(report["boolean_grants"], "byDefault");
    let boolean_only = report["proof"]["boolean_only"].as_array().unwrap();
    assert!(
        boolean_only.contains(&"etcd_var_t".into()),
        "{boolean_only:?}"
    );
    let etcd = protection(&report, "etcd_var_t");
    let off = etcd["reach"]["workload"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["leftover"] == "boolean-off")
        .expect("the boolean-off grant is listed");
    assert!(off["domains"]
        .as_array()
        .unwrap()
        .contains(&"container_t".into()));
    assert!(
        off["rules"][0]
            .as_str()
            .unwrap()
            .contains("[ quirk_read ]:True"),
        "{off}"
    );

    // On by default, it is access whatever the layout says.
    let on = store_with(&[("quirkread", &reads_under_a_boolean(true))]);
    let output = build(on.path(), &out.path().join("on"), &["--layout", layout_arg]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("protected path `/var/lib/etcd`"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_path_the_store_aliases_is_labelled_through_the_alias() {
    // Fedora's subs_dist: /var/mnt is looked up as /mnt.
    let store = copy_of(&refpolicy_store());
    let subs = store.path().join(SUBS_DIST);
    let mut text = fs::read_to_string(&subs).unwrap();
    text.push_str("/var/mnt /mnt\n");
    fs::write(&subs, text).unwrap();
    let stock = LibSelinux::open(&store.path().join(FC)).unwrap();
    let var_mnt = Answer::Label("system_u:object_r:var_mnt_t:s0".into());
    assert_ne!(stock.lookup(b"/var/mnt/x", FileKind::File), var_mnt);

    let out = tempfile::tempdir().unwrap();
    built(store.path(), out.path(), &[]);
    let report = report(out.path());
    let path = report["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == "/var/mnt")
        .unwrap();
    assert_eq!(path["events"][0]["kind"], "aliased");
    assert_eq!(path["events"][0]["label"], "by-module");
    assert!(path["lines"][0]["regex"]
        .as_str()
        .unwrap()
        .starts_with("/mnt"));

    // libselinux on what semodule installs: the hostPath root and its
    // content get the layout's type, through the alias.
    let installed = copy_of(store.path());
    semodule_install(
        installed.path(),
        "default",
        &out.path().join(format!("{MODULE}.cil")),
    );
    let merged = LibSelinux::open(&installed.path().join(FC)).unwrap();
    for key in ["/var/mnt", "/var/mnt/data", "/var/mnt/data/file"] {
        for kind in [FileKind::Dir, FileKind::File] {
            assert_eq!(
                merged.lookup(key.as_bytes(), kind),
                var_mnt,
                "{key} {kind:?}"
            );
        }
    }

    // Control: a module that writes `/var/mnt(/.*)?`, as the layout says
    // it, installs without a word and labels nothing.
    let naive = tempfile::tempdir().unwrap();
    let cil = naive.path().join("naivemnt.cil");
    fs::write(
        &cil,
        "(type naive_mnt_t)\n(roletype object_r naive_mnt_t)\n(typeattributeset file_type (naive_mnt_t))\n\
         (filecon \"/var/mnt(/.*)?\" any (system_u object_r naive_mnt_t ((s0) (s0))))\n",
    )
    .unwrap();
    let naive_store = copy_of(store.path());
    semodule_install(naive_store.path(), "default", &cil);
    let naive_fc = LibSelinux::open(&naive_store.path().join(FC)).unwrap();
    assert_ne!(
        naive_fc.lookup(b"/var/mnt/data/file", FileKind::File),
        Answer::Label("system_u:object_r:naive_mnt_t:s0".into())
    );
}

#[test]
fn an_alias_onto_another_declared_path_fails_naming_the_alias() {
    let store = copy_of(&refpolicy_store());
    let subs = store.path().join(SUBS_DIST);
    let mut text = fs::read_to_string(&subs).unwrap();
    text.push_str("/var/mnt /var/lib/cni\n");
    fs::write(&subs, text).unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = build(store.path(), out.path(), &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`/var/mnt` is an alias of `/var/lib/cni`")
            && err.contains("file_contexts.subs_dist:")
            && err.contains("declare only one of"),
        "{err}"
    );
    assert!(!out.path().join("policy.33").exists());
}

#[test]
fn store_owners_keep_their_access_and_every_other_loss_is_named() {
    let root = refpolicy_store();
    let out = tempfile::tempdir().unwrap();
    built(&root, out.path(), &[]);
    let policy = out.path().join("policy.33");
    // auditd keeps appending the audit log on the new type.
    let stock_policy = store_dir(&root, "default").join("active/policy.kern");
    assert!(!sesearch(
        &stock_policy,
        &[
            "-s",
            "auditd_t",
            "-t",
            "auditd_log_t",
            "-c",
            "file",
            "-p",
            "append"
        ]
    )
    .is_empty());
    assert!(!sesearch(
        &policy,
        &[
            "-s",
            "auditd_t",
            "-t",
            "audit_log_t",
            "-c",
            "file",
            "-p",
            "append"
        ]
    )
    .is_empty());
    let report = report(out.path());
    let audit = report["retyped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type_name"] == "audit_log_t")
        .unwrap();
    assert_eq!(audit["owners"], serde_json::json!(["auditd_t"]));
    assert!(audit["carried_rules"].as_u64().unwrap() > 0);
    let lost: Vec<&str> = audit["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["domains"].as_array().unwrap())
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(!lost.contains(&"auditd_t"), "{lost:?}");
    // Unprotected: every domain that read the runtime's logs reads the
    // pods' logs (syslogd, logrotate, … through the store's rules).
    let readers = sesearch(
        &stock_policy,
        &["-t", "container_log_t", "-c", "file", "-p", "read"],
    );
    assert!(!readers.is_empty());
    let pods = report["retyped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type_name"] == "pods_log_t")
        .unwrap();
    assert_eq!(pods["groups"], serde_json::json!([]));
    for rule in &readers {
        let source = rule.split_whitespace().nth(1).unwrap();
        assert!(
            !sesearch(
                &policy,
                &["-s", source, "-t", "pods_log_t", "-c", "file", "-p", "read"]
            )
            .is_empty(),
            "{source} no longer reads /var/log/pods"
        );
    }

    // Control: without the owner, auditd loses the audit log, and the
    // report and check --against name it.
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("layout.yaml");
    fs::write(
        &layout,
        DEFAULT_LAYOUT.replace("      storeOwners: [auditd_t]\n", ""),
    )
    .unwrap();
    let without = dir.path().join("out");
    built(&root, &without, &["--layout", layout.to_str().unwrap()]);
    assert!(sesearch(
        &without.join("policy.33"),
        &[
            "-s",
            "auditd_t",
            "-t",
            "audit_log_t",
            "-c",
            "file",
            "-p",
            "append"
        ]
    )
    .is_empty());
    let text = fs::read_to_string(without.join("report.txt")).unwrap();
    let section = &text[text.find("Store domains on re-typed paths").unwrap()..];
    assert!(section.contains("auditd_t"), "{section}");
    let output = run(semanifest()
        .args(["check", "--format", "json", "--layout"])
        .arg(&layout)
        .arg("--against")
        .arg(&root));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let check: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let lost = check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["rule"] == "store-access-lost"
                && f["message"].as_str().unwrap().contains("/var/log/audit")
        })
        .expect("store-access-lost for /var/log/audit");
    assert!(
        lost["message"].as_str().unwrap().contains("auditd_t"),
        "{lost}"
    );
}

/// `semodule -E --cil`'s form of a store, optionally with the files that
/// say how it is compiled and aliased.
fn extracted(root: &Path, with_settings: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for module in store::Store::open(root).unwrap().modules {
        fs::write(dir.path().join(format!("{}.cil", module.name)), &module.cil).unwrap();
    }
    if with_settings {
        fs::copy(
            root.join("etc/selinux/semanage.conf"),
            dir.path().join("semanage.conf"),
        )
        .unwrap();
        fs::copy(
            root.join(SUBS_DIST),
            dir.path().join("file_contexts.subs_dist"),
        )
        .unwrap();
    }
    dir
}

#[test]
fn an_extracted_store_gives_the_same_module_or_says_why_it_cannot() {
    let root = refpolicy_store();
    let from_root = tempfile::tempdir().unwrap();
    built(&root, from_root.path(), &[]);
    let with = extracted(&root, true);
    let from_cil = tempfile::tempdir().unwrap();
    built(with.path(), from_cil.path(), &[]);
    for file in [
        format!("{MODULE}.cil"),
        "policy.33".into(),
        "file_contexts".into(),
    ] {
        assert!(
            fs::read(from_root.path().join(&file)).unwrap()
                == fs::read(from_cil.path().join(&file)).unwrap(),
            "{file} differs between the store and its extracted CIL"
        );
    }
    let report = report(from_cil.path());
    assert_eq!(report["verification"]["result"], "unavailable");

    // Control: without them the aliases are unknown (a line for /var/run
    // that no lookup reaches), and stderr and JSON say so and why.
    let bare = extracted(&root, false);
    let out = tempfile::tempdir().unwrap();
    let output = build(bare.path(), out.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_ne!(
        fs::read(from_root.path().join(format!("{MODULE}.cil"))).unwrap(),
        fs::read(out.path().join(format!("{MODULE}.cil"))).unwrap()
    );
    let err = stderr(&output);
    assert!(err.contains("the prediction is not verified"), "{err}");
    let why = report_why(out.path());
    assert!(
        why.contains("no semanage.conf") && why.contains("no file_contexts.subs_dist"),
        "{why}"
    );
}

fn report_why(out: &Path) -> String {
    report(out)["verification"]["why"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A secilc that ignores neverallows: the real one with
/// `--disable-neverallow` added.
fn lax_secilc(dir: &Path) -> PathBuf {
    let path = dir.join("secilc");
    fs::write(
        &path,
        format!(
            "#!/bin/sh\nexec {} --disable-neverallow \"$@\"\n",
            tool("secilc", "secilc").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn a_secilc_that_ignores_neverallows_proves_nothing_and_is_caught() {
    let root = refpolicy_store();
    let dir = tempfile::tempdir().unwrap();
    let lax = lax_secilc(dir.path());
    let leaky = dir.path().join("leaky.cil");
    fs::write(
        &leaky,
        "(allow container_t etcd_var_t (file (read open getattr)))\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = build(
        &root,
        &out,
        &[
            "--secilc",
            lax.to_str().unwrap(),
            "--include",
            leaky.to_str().unwrap(),
        ],
    );
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("NOT PROVEN: the proof did not run"), "{err}");
    let lax_report = report(&out);
    assert_eq!(lax_report["proof"]["result"], "not-run");
    // What the lax secilc let through is shown, not hidden.
    let etcd = protection(&lax_report, "etcd_var_t");
    let unproven = etcd["reach"]["workload"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["leftover"] == "unproven")
        .expect("the leak is listed");
    assert!(unproven["domains"]
        .as_array()
        .unwrap()
        .contains(&"container_t".into()));
    let text = fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(!text.contains("(proven by "), "{text}");
    // check --against makes it an error.
    let output = run(semanifest()
        .args(["check", "--format", "json", "--against"])
        .arg(&root)
        .arg("--secilc")
        .arg(&lax));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let check: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "store-proof"));

    // Control: libsepol (the default) and the real secilc prove it, and
    // refuse the leak.
    let proven = dir.path().join("proven");
    built(&root, &proven, &[]);
    assert_eq!(report(&proven)["proof"]["result"], "proven");
    assert_eq!(report(&proven)["proof"]["by"], "libsepol");
    let by_secilc = dir.path().join("by-secilc");
    let secilc = tool("secilc", "secilc");
    built(&root, &by_secilc, &["--secilc", secilc.to_str().unwrap()]);
    assert_eq!(report(&by_secilc)["proof"]["by"], "secilc");
    // The same prediction, byte for byte, whichever compiled it.
    for name in ["policy.33", "file_contexts", &format!("{MODULE}.cil")] {
        assert_eq!(
            fs::read(proven.join(name)).unwrap(),
            fs::read(by_secilc.join(name)).unwrap(),
            "{name} differs between libsepol and secilc"
        );
    }
    let output = build(
        &root,
        &dir.path().join("leak"),
        &["--include", leaky.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

/// A store whose built policy is cut short, or is not a policy at all:
/// the build fails naming the file and the byte where reading stopped,
/// without a panic and without writing outputs. Control: the same copy,
/// whole, builds.
#[test]
fn a_damaged_built_policy_fails_naming_the_file_and_the_offset() {
    let copy = copy_of(&refpolicy_store());
    let kern = store_dir(copy.path(), "default").join("active/policy.kern");
    let whole = fs::read(&kern).unwrap();
    let dir = tempfile::tempdir().unwrap();
    built(copy.path(), &dir.path().join("whole"), &[]);

    for (what, bytes, expected) in [
        ("cut", whole[..whole.len() / 2].to_vec(), "cut short"),
        ("text", b"not a policy\n".to_vec(), "wrong magic number"),
    ] {
        fs::write(&kern, &bytes).unwrap();
        let out = dir.path().join(what);
        let output = build(copy.path(), &out, &[]);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{what}: {err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert!(err.contains("policy.kern: at byte"), "{what}: {err}");
        assert!(err.contains(expected), "{what}: {err}");
        assert!(!out.join("policy.33").exists(), "{what}: outputs written");
    }
}
