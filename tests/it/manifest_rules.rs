//! One test per manifest rule of `docs/manifest.md`: the rule fires, with its message,
//! at the exact line:column of the offending value. Each case is a whole
//! manifest so the positions can be read off the text.

use layout::diag::{Diagnostic, Severity, Source};
use layout::manifest;

/// Every diagnostic for `yaml`: (severity, code, "line:col", message).
fn diagnose(yaml: &str) -> Vec<(Severity, &'static str, String, String)> {
    let source = Source::new("layout.yaml", yaml);
    let list: Vec<Diagnostic> = match manifest::parse(source, &policy::base_facts()) {
        Ok(parsed) => parsed.warnings,
        Err(report) => report.diagnostics,
    };
    list.into_iter()
        .map(|d| {
            (
                d.severity,
                d.code.id,
                format!("{}:{}", d.pos.line, d.pos.column),
                d.message,
            )
        })
        .collect()
}

/// Asserts exactly one error with this code, position and message fragment.
fn assert_error(yaml: &str, code: &str, at: &str, message: &str) {
    let found = diagnose(yaml);
    let errors: Vec<_> = found.iter().filter(|d| d.0 == Severity::Error).collect();
    assert_eq!(errors.len(), 1, "expected one error, got {found:#?}");
    let (_, got_code, got_at, got_message) = errors[0];
    assert_eq!((*got_code, got_at.as_str()), (code, at), "{found:#?}");
    assert!(
        got_message.contains(message),
        "message {got_message:?} lacks {message:?}"
    );
}

const HEAD: &str = "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata:\n  name: t\nspec:\n  domains:\n    etcd: { type: etcd_t }\n    pods: { type: container_t, workload: true }\n  paths:\n";
// HEAD is 9 lines; the first path entry starts on line 10.

fn with_paths(paths: &str) -> String {
    format!("{HEAD}{paths}")
}

#[test]
fn control_a_valid_manifest_has_no_diagnostics() {
    let yaml = with_paths(
        "    - path: /var/lib/etcd\n      type: etcd_var_t\n      access: { etcd: write }\n      protected: true\n    - path: /var/mnt\n      type: var_mnt_t\n      access: { pods: write }\n      hostPath: true\n",
    );
    assert_eq!(diagnose(&yaml), vec![]);
}

#[test]
fn unknown_field() {
    let yaml =
        with_paths("    - path: /var/lib/etcd\n      type: etcd_var_t\n      protectd: true\n");
    assert_error(&yaml, "yaml", "12:7", "unknown field `protectd`");
}

#[test]
fn duplicate_key() {
    let yaml =
        with_paths("    - path: /var/lib/etcd\n      type: etcd_var_t\n      type: other_t\n");
    assert_error(&yaml, "yaml", "12:7", "duplicate mapping key: type");
}

#[test]
fn strict_booleans() {
    let yaml =
        with_paths("    - path: /var/lib/etcd\n      type: etcd_var_t\n      protected: yes\n");
    assert_error(&yaml, "yaml", "12:18", "boolean");
}

#[test]
fn wrong_type_for_paths() {
    let yaml = format!("{HEAD}    path: /var\n");
    let found = diagnose(&yaml);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].1, "yaml");
    assert_eq!(found[0].2, "10:5");
}

#[test]
fn api_version_and_kind() {
    let yaml =
        "apiVersion: v1\nkind: Layout\nmetadata:\n  name: t\nspec:\n  domains: {}\n  paths: []\n";
    assert_error(yaml, "api-version", "1:13", "unsupported apiVersion `v1`");
    let yaml = "apiVersion: semanifest.io/v1\nkind: Pod\nmetadata:\n  name: t\nspec:\n  domains: {}\n  paths: []\n";
    assert_error(yaml, "kind", "2:7", "unsupported kind `Pod`");
}

#[test]
fn metadata_name() {
    let yaml = "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata:\n  name: Bad_Name\nspec:\n  domains: {}\n  paths: []\n";
    assert_error(yaml, "metadata-name", "4:9", "invalid layout name");
}

#[test]
fn duplicate_path() {
    let yaml = with_paths(
        "    - path: /var/lib/etcd\n      type: etcd_var_t\n    - path: /var/lib/etcd\n      type: etcd_var_t\n",
    );
    assert_error(&yaml, "path-duplicate", "12:13", "declared twice");
}

#[test]
fn non_normalised_paths() {
    for (path, column) in [
        ("/var//lib", 13),
        ("/var/./lib", 13),
        ("/var/lib/", 13),
        ("/var/../etc", 13),
    ] {
        let yaml = with_paths(&format!("    - path: {path}\n      type: var_lib_t\n"));
        assert_error(
            &yaml,
            "path-not-normalised",
            &format!("10:{column}"),
            "is not normalised",
        );
    }
}

#[test]
fn relative_path() {
    let yaml = with_paths("    - path: var/lib\n      type: var_lib_t\n");
    assert_error(&yaml, "path-relative", "10:13", "is relative");
}

#[test]
fn non_ascii_and_whitespace_in_paths() {
    let yaml = with_paths("    - path: /var/lïb\n      type: var_lib_t\n");
    assert_error(&yaml, "path-character", "10:13", "non-ASCII");
    let yaml = with_paths("    - path: \"/var/my lib\"\n      type: var_lib_t\n");
    assert_error(&yaml, "path-character", "10:13", "a space");
    let yaml = with_paths("    - path: \"/var/a\\tb\"\n      type: var_lib_t\n");
    assert_error(&yaml, "path-character", "10:13", "control character");
}

#[test]
fn type_name_syntax() {
    for bad in ["EtcdVar_t", "etcd_var", "9etcd_t", "etcd-var_t"] {
        let yaml = with_paths(&format!("    - path: /var/lib/etcd\n      type: {bad}\n"));
        assert_error(&yaml, "type-name", "11:13", "invalid type name");
    }
}

#[test]
fn shared_type_must_agree() {
    let yaml = with_paths(
        "    - path: /var/a\n      type: shared_t\n      access: { etcd: read }\n    - path: /var/b\n      type: shared_t\n      access: { etcd: write }\n",
    );
    assert_error(&yaml, "type-shared", "13:13", "their access differ");
    // Control: agreeing paths may share a type.
    let yaml = with_paths(
        "    - path: /var/a\n      type: shared_t\n      access: { etcd: read }\n    - path: /var/b\n      type: shared_t\n      access: { etcd: read }\n",
    );
    assert!(diagnose(&yaml).iter().all(|d| d.0 != Severity::Error));
}

/// A type stands for one lifecycle: `prune` empties by lifecycle, and a
/// type shared by a kept and a pruned path would label both alike.
#[test]
fn shared_type_must_agree_on_lifecycle() {
    let yaml = with_paths(
        "    - path: /var/a\n      type: shared_t\n      access: { etcd: read }\n      lifecycle: cache\n    - path: /var/b\n      type: shared_t\n      access: { etcd: read }\n",
    );
    assert_error(&yaml, "type-shared", "14:13", "their lifecycle differ");
    // Control: the same lifecycle may share a type.
    let yaml = yaml.replace(
        "      access: { etcd: read }\n      lifecycle: cache\n",
        "      access: { etcd: read }\n",
    );
    assert!(diagnose(&yaml).iter().all(|d| d.0 != Severity::Error));
    // The default layout holds it, and says what the proposal says.
    let parsed = manifest::default_layout(&policy::base_facts()).expect("default layout");
    let paths = &parsed.layout.paths;
    for a in paths {
        for b in paths.iter().filter(|b| b.type_name == a.type_name) {
            assert_eq!(a.lifecycle, b.lifecycle, "{} and {}", a.path, b.path);
        }
    }
    let lifecycle = |path: &str| {
        paths
            .iter()
            .find(|rule| rule.path == path)
            .map(|rule| rule.lifecycle.as_str())
    };
    for (path, wanted) in [
        ("/var/lib/containerd", "cache"),
        ("/var/system/overlays", "cache"),
        ("/var/run", "ephemeral"),
        ("/var/lib/etcd", "persistent"),
        ("/var/lib/kubelet", "persistent"),
        ("/var/mnt", "persistent"),
    ] {
        assert_eq!(lifecycle(path), Some(wanted), "{path}");
    }
}

#[test]
fn base_policy_type_needs_declaration() {
    let yaml = with_paths("    - path: /var/run\n      type: tmpfs_t\n");
    assert_error(&yaml, "base-type", "11:13", "is a type of the base policy");
    // Control: declared as the base's type, it is accepted.
    let yaml = with_paths("    - path: /var/run\n      type: tmpfs_t\n      baseType: true\n");
    assert!(
        diagnose(&yaml).iter().all(|d| d.0 != Severity::Error),
        "{:#?}",
        diagnose(&yaml)
    );
    let yaml = with_paths("    - path: /var/run\n      type: my_run_t\n      baseType: true\n");
    assert_error(&yaml, "base-type", "12:17", "base policy has no type");
}

#[test]
fn domain_type_cannot_label_files() {
    // etcd_t is also a base type (base-type): a domain type of the layout's own.
    let yaml = with_paths("    - path: /var/lib/etcd\n      type: etcd_server_t\n")
        .replace("etcd: { type: etcd_t }", "etcd: { type: etcd_server_t }");
    assert_error(&yaml, "type-is-domain", "11:13", "is a domain's type");
}

#[test]
fn unused_domain_is_a_warning() {
    let yaml = with_paths(
        "    - path: /var/lib/etcd\n      type: etcd_var_t\n      access: { etcd: write }\n",
    );
    let found = diagnose(&yaml);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, Severity::Warning);
    assert_eq!((found[0].1, found[0].2.as_str()), ("domain-unused", "8:5"));
    assert!(found[0].3.contains("`pods`"));
}

#[test]
fn access_levels() {
    let yaml = with_paths("    - path: /var/a\n      type: a_t\n      access: { etcd: rw }\n");
    assert_error(&yaml, "access-level", "12:23", "unknown access level `rw`");
    let yaml = with_paths(
        "    - path: /var/a\n      type: a_t\n      access: { etcd: [read, exec], pods: append }\n",
    );
    assert!(
        diagnose(&yaml).iter().all(|d| d.0 != Severity::Error),
        "{:#?}",
        diagnose(&yaml)
    );
}

#[test]
fn access_for_unknown_domain() {
    let yaml = with_paths("    - path: /var/a\n      type: a_t\n      access: { kubelet: read }\n");
    assert_error(&yaml, "unknown-domain", "12:17", "unknown domain `kubelet`");
}

#[test]
fn workload_cannot_be_trusted() {
    let yaml = "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata:\n  name: t\nspec:\n  domains:\n    pods: { type: container_t, workload: true, trusted: true }\n  paths: []\n";
    assert_error(yaml, "workload-trusted", "7:57", "cannot be trusted");
}

#[test]
fn workload_never_in_protected_access() {
    let yaml = with_paths("    - path: /var/lib/etcd\n      type: etcd_var_t\n      access: { etcd: write, pods: read }\n      protected: true\n");
    assert_error(
        &yaml,
        "protected-workload",
        "13:18",
        "grants access to workload domain `pods`",
    );
}

#[test]
fn workload_never_reaches_protected_through_transitions() {
    let yaml = "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata:\n  name: t\nspec:\n  domains:\n    pods: { type: container_t, workload: true, transitions: [helper] }\n    helper: { type: helper_t, transitions: [etcd] }\n    etcd: { type: etcd_t }\n  paths:\n    - path: /var/lib/etcd\n      type: etcd_var_t\n      access: { etcd: write }\n      protected: true\n";
    assert_error(
        yaml,
        "workload-transition",
        "7:5",
        "through transitions pods → helper → etcd",
    );
}

#[test]
fn protected_cannot_be_hostpath_removable_or_below_a_root() {
    let yaml = with_paths("    - path: /var/lib/etcd\n      type: etcd_var_t\n      protected: true\n      hostPath: true\n      access: { etcd: write }\n");
    assert_error(
        &yaml,
        "protected-hostpath",
        "12:18",
        "cannot be a hostPath root",
    );
    let yaml = with_paths("    - path: /var/lib/etcd\n      type: etcd_var_t\n      protected: true\n      removable: true\n      access: { etcd: write }\n");
    assert_error(&yaml, "protected-removable", "12:18", "cannot be removable");
    let yaml = with_paths("    - path: /var/mnt\n      type: var_mnt_t\n      hostPath: true\n      access: { pods: write }\n    - path: /var/mnt/secret\n      type: etcd_var_t\n      protected: true\n      access: { etcd: write }\n");
    assert_error(
        &yaml,
        "protected-under-hostpath",
        "16:18",
        "is below hostPath root `/var/mnt`",
    );
}

#[test]
fn mode_and_owner() {
    let yaml = with_paths(
        "    - path: /var/a\n      type: a_t\n      mode: \"0789\"\n      access: { etcd: read }\n",
    );
    assert_error(&yaml, "mode", "12:13", "invalid mode");
    let yaml = with_paths("    - path: /var/a\n      type: a_t\n      owner: \"1000:x\"\n      access: { etcd: read }\n");
    assert_error(&yaml, "owner", "12:14", "invalid owner");
}

#[test]
fn lifecycle_and_propagation_values() {
    let yaml = with_paths("    - path: /var/a\n      type: a_t\n      lifecycle: forever\n      access: { etcd: read }\n");
    assert_error(&yaml, "lifecycle", "12:18", "unknown lifecycle `forever`");
    let yaml = with_paths("    - path: /var/a\n      type: a_t\n      mount: { propagation: bidirectional }\n      access: { etcd: read }\n");
    assert_error(&yaml, "propagation", "12:29", "unknown propagation");
}

#[test]
fn all_errors_of_the_rules_phase_are_reported_together() {
    let yaml = with_paths("    - path: var/a\n      type: A_t\n    - path: /var//b\n      type: b_t\n      access: { nobody: read }\n");
    let codes: Vec<&str> = diagnose(&yaml)
        .iter()
        .filter(|d| d.0 == Severity::Error)
        .map(|d| d.1)
        .collect();
    assert_eq!(
        codes,
        [
            "path-relative",
            "type-name",
            "path-not-normalised",
            "unknown-domain"
        ]
    );
}

#[test]
fn rendered_errors_carry_file_line_column_and_snippet() {
    let yaml = with_paths("    - path: /var//lib\n      type: var_lib_t\n");
    let report =
        manifest::parse(Source::new("node.yaml", yaml), &policy::base_facts()).unwrap_err();
    let text = report.to_string();
    assert!(
        text.contains(
            "node.yaml:10:13: error[path-not-normalised]: path `/var//lib` is not normalised\n"
        ),
        "{text}"
    );
    assert!(text.ends_with("node.yaml: 1 error found"), "{text}");
    assert!(
        text.contains("10 |     - path: /var//lib\n   |             ^^^^^^^^^\n"),
        "{text}"
    );
    assert!(text.contains("help: write `/var/lib`"), "{text}");
}

/// `LINE:COL` of the first `needle` on the line that contains it.
fn position_of(yaml: &str, needle: &str) -> String {
    let (index, line) = yaml
        .lines()
        .enumerate()
        .find(|(_, line)| line.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in the manifest"));
    format!("{}:{}", index + 1, line.find(needle).unwrap() + 1)
}

const ONE_PATH: &str =
    "    - path: /var/a\n      type: a_t\n      access: { etcd: read, pods: read }\n";

fn with_node(node: &str) -> String {
    format!("{HEAD}{ONE_PATH}  node:\n{node}")
}

#[test]
fn control_a_valid_node_section_has_no_diagnostics() {
    for node in [
        "    kubens: true\n",
        "    kubens: false\n    runtime: []\n",
        "    runtime:\n      - unit: kubelet@main.service\n",
        "    kubens: true\n    runtime:\n      - unit: containerd.service\n        exec: /usr/bin/containerd --log-level=debug $EXTRA\n",
    ] {
        assert_eq!(diagnose(&with_node(node)), vec![], "{node}");
    }
}

#[test]
fn runtime_unit_names() {
    let yaml = with_node("    runtime:\n      - unit: containerd\n");
    assert_error(
        &yaml,
        "node-unit",
        &position_of(&yaml, "containerd"),
        "invalid unit name `containerd`",
    );
    let yaml = with_node("    runtime:\n      - unit: kubens.service\n");
    assert_error(
        &yaml,
        "node-unit",
        &position_of(&yaml, "kubens.service"),
        "`kubens.service` is a unit semanifest generates itself",
    );
    let yaml = with_node("    runtime:\n      - unit: crio.service\n      - unit: crio.service\n");
    let second = format!(
        "{}:15",
        position_of(&yaml, "- unit: crio")
            .split(':')
            .next()
            .unwrap()
            .parse::<usize>()
            .unwrap()
            + 1
    );
    assert_error(
        &yaml,
        "node-unit-duplicate",
        &second,
        "unit `crio.service` is listed twice",
    );
}

#[test]
fn runtime_commands_and_kubens() {
    let yaml = with_node("    runtime:\n      - unit: crio.service\n        exec: crio --debug\n");
    assert_error(
        &yaml,
        "node-exec",
        &position_of(&yaml, "crio --debug"),
        "invalid command `crio --debug`",
    );
    let yaml = with_node("    kubens: true\n    runtime:\n      - unit: crio.service\n");
    assert_error(
        &yaml,
        "kubens-exec",
        &position_of(&yaml, "crio.service"),
        "`crio.service` has no `exec`, which kubens needs",
    );
    let yaml = with_node("    kubens: true\n    runtime: []\n");
    // Line 14 is `    kubens: true`; the error points at its value.
    assert_error(
        &yaml,
        "kubens-exec",
        "14:13",
        "kubens is on, but no runtime unit is listed",
    );
}

#[test]
fn tmpfs_size() {
    let path = |mount: &str| {
        format!("{HEAD}    - path: /var/a\n      type: a_t\n      mount: {mount}\n      lifecycle: ephemeral\n      access: {{ etcd: read, pods: read }}\n")
    };
    let yaml = path("{ tmpfs: true, size: 5x }");
    assert_error(
        &yaml,
        "tmpfs-size",
        &position_of(&yaml, "5x"),
        "invalid tmpfs size `5x`",
    );
    let yaml = path("{ tmpfs: true, size: 101% }");
    assert_error(
        &yaml,
        "tmpfs-size",
        &position_of(&yaml, "101%"),
        "invalid tmpfs size `101%`",
    );
    let yaml = path("{ propagation: rshared, size: 5m }");
    assert_error(
        &yaml,
        "tmpfs-size",
        &position_of(&yaml, "5m"),
        "`size` is a tmpfs's size, but `/var/a` is not a tmpfs",
    );
    // Control: the same sizes on a tmpfs, quoted or not.
    for size in ["5m", "\"20%\"", "20%", "\"1048576\"", "1048576"] {
        let yaml = path(&format!("{{ tmpfs: true, size: {size} }}"));
        assert_eq!(diagnose(&yaml), vec![], "{size}");
    }
}

/// Each diagnostic code belongs to the rule docs/manifest.md lists it
/// under (the `layout-value` row names a few and "every other value
/// check"), and no row names a code of another rule. Control: the row of
/// `layout-path` does not name `yaml`.
#[test]
fn codes_belong_to_the_documented_rules() {
    let docs = std::fs::read_to_string("docs/manifest.md").expect("docs/manifest.md");
    let row = |rule: &str| -> String {
        docs.lines()
            .find(|line| line.starts_with(&format!("| `{rule}` |")))
            .unwrap_or_else(|| panic!("no row for {rule} in docs/manifest.md"))
            .to_owned()
    };
    let names = |row: &str, code: &str| row.contains(&format!("`{code}`"));
    for rule in manifest::rules::RULES {
        row(rule.id);
    }
    for code in manifest::codes::CODES {
        let own = row(code.rule.id);
        assert!(
            names(&own, code.id) || code.rule.id == "layout-value",
            "{} is not listed under {}",
            code.id,
            code.rule.id
        );
        for other in manifest::rules::RULES {
            if other.id != code.rule.id {
                assert!(
                    !names(&row(other.id), code.id),
                    "{} is listed under {} but belongs to {}",
                    code.id,
                    other.id,
                    code.rule.id
                );
            }
        }
    }
    assert!(!names(&row("layout-path"), "yaml"));
    assert!(names(&row("layout-yaml"), "yaml"));
}

/// A path with `capacity` and `mount` as given, accessible to etcd.
fn capacity_path(path: &str, extra: &str) -> String {
    format!(
        "    - path: {path}\n      type: {}_t\n      access: {{ etcd: write, pods: read }}\n{extra}",
        path.replace('/', "_").trim_start_matches('_')
    )
}

#[test]
fn capacity_limits_and_inodes() {
    let yaml = with_paths(&capacity_path(
        "/var/a",
        "      capacity: { limit: 20GB }\n",
    ));
    assert_error(
        &yaml,
        "capacity-limit",
        &position_of(&yaml, "20GB"),
        "invalid capacity limit `20GB`",
    );
    let yaml = with_paths(&capacity_path(
        "/var/a",
        "      capacity: { limit: 1.5Gi }\n",
    ));
    assert_error(
        &yaml,
        "capacity-limit",
        &position_of(&yaml, "1.5Gi"),
        "invalid capacity limit",
    );
    let yaml = with_paths(&capacity_path("/var/a", "      capacity: { inodes: 0 }\n"));
    assert_error(
        &yaml,
        "capacity-inodes",
        &position_of(&yaml, "0 }"),
        "an inode limit of 0",
    );
    // The YAML layer refuses what is no count at all.
    let yaml = with_paths(&capacity_path("/var/a", "      capacity: { inodes: -1 }\n"));
    assert_eq!(diagnose(&yaml)[0].1, "yaml");
    // Control: every valid form, and an empty capacity (counted only).
    for capacity in [
        "{ limit: 20Gi, inodes: 1000 }",
        "{ limit: 500M }",
        "{ limit: 1048576 }",
        "{}",
        "{ project: 7 }",
    ] {
        let yaml = with_paths(&capacity_path(
            "/var/a",
            &format!("      capacity: {capacity}\n"),
        ));
        assert_eq!(diagnose(&yaml), vec![], "{capacity}");
    }
}

#[test]
fn capacity_projects_are_one_per_path() {
    let yaml = with_paths(&format!(
        "{}{}",
        capacity_path("/var/a", "      capacity: { project: 9 }\n"),
        capacity_path("/var/b", "      capacity: { project: 9 }\n")
    ));
    assert_error(
        &yaml,
        "capacity-project",
        "17:17",
        "`/var/b` and `/var/a` would share project ID 9",
    );
    let yaml = with_paths(&capacity_path("/var/a", "      capacity: { project: 0 }\n"));
    assert_error(
        &yaml,
        "capacity-project",
        &position_of(&yaml, "0 }"),
        "project ID 0 is out of range",
    );
    let yaml = with_paths(&capacity_path(
        "/var/a",
        "      capacity: { project: 4294967295 }\n",
    ));
    assert_error(
        &yaml,
        "capacity-project",
        &position_of(&yaml, "4294967295"),
        "out of range",
    );
    // Control: derived IDs differ per path, and a pinned one may sit
    // beside them.
    let yaml = with_paths(&format!(
        "{}{}{}",
        capacity_path("/var/a", "      capacity: {}\n"),
        capacity_path("/var/a/b", "      capacity: {}\n"),
        capacity_path("/var/c", "      capacity: { project: 9 }\n")
    ));
    assert_eq!(diagnose(&yaml), vec![]);
}

#[test]
fn capacity_is_not_for_a_tmpfs() {
    let yaml = with_paths(&format!(
        "{}{}",
        capacity_path(
            "/var/run",
            "      lifecycle: ephemeral\n      mount: { tmpfs: true }\n"
        ),
        capacity_path(
            "/var/run/x",
            "      lifecycle: ephemeral\n      capacity: { limit: 1Mi }\n"
        )
    ));
    assert_error(
        &yaml,
        "capacity-tmpfs",
        "19:17",
        "`/var/run/x` is on the tmpfs at `/var/run`",
    );
}

#[test]
fn mount_options() {
    let yaml = with_paths(&capacity_path(
        "/var/a",
        "      mount: { options: [noexec, nosymfollow] }\n",
    ));
    assert_error(
        &yaml,
        "mount-option",
        &position_of(&yaml, "nosymfollow"),
        "unknown mount option `nosymfollow`",
    );
    let yaml = with_paths(&capacity_path(
        "/var/a",
        "      mount: { options: [noexec, noexec] }\n",
    ));
    assert_error(
        &yaml,
        "mount-option",
        "13:34",
        "mount option `noexec` is listed twice",
    );
    // Control: each flag, alone, together, with propagation or a tmpfs.
    for mount in [
        "{ options: [nodev] }",
        "{ options: [nodev, nosuid, noexec] }",
        "{ propagation: rshared, options: [noexec] }",
        "{ options: [] }",
    ] {
        let yaml = with_paths(&capacity_path("/var/a", &format!("      mount: {mount}\n")));
        assert_eq!(diagnose(&yaml), vec![], "{mount}");
    }
}

/// A layout with one agent domain `a` whose fields are `agent` (inline
/// YAML mapping entries), granted read on /var/log, plus `paths` after.
fn with_agent(agent: &str, paths: &str) -> String {
    format!(
        "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata:\n  name: t\nspec:\n  domains:\n    etcd: {{ type: etcd_t }}\n    pods: {{ type: container_t, workload: true }}\n    a: {{ type: agent_a_t, agent: true{agent} }}\n  paths:\n    - path: /var/log\n      type: var_log_t\n      access: {{ a: read, etcd: read, pods: read }}\n{paths}"
    )
}

const ETCD: &str = "    - path: /var/lib/etcd\n      type: etcd_var_t\n      access: { etcd: write }\n      protected: true\n";

#[test]
fn control_agents_with_every_field_have_no_diagnostics() {
    let yaml = with_agent(
        ", mcs: true, host: { sysfs: read, proc: read, cni-config: write, cni-bin: [read, exec], fuse: write, mount: write }, capabilities: [sys_admin, net_admin, chown], connect: [etcd]",
        ETCD,
    );
    assert_eq!(diagnose(&yaml), vec![]);
    let parsed = manifest::parse(Source::new("t.yaml", yaml), &policy::base_facts()).unwrap();
    let agent = &parsed.layout.domains[2];
    assert!(agent.agent && agent.mcs && !agent.workload);
    let classes: Vec<&str> = agent.host.iter().map(|g| g.class.name).collect();
    assert_eq!(
        classes,
        ["cni-bin", "cni-config", "fuse", "mount", "proc", "sysfs"]
    );
    assert!(agent.host_grant("cni-bin").unwrap().includes("exec"));
    assert!(!agent.host_grant("cni-bin").unwrap().includes("write"));
    // chown is in every confined process's default set: nothing to add.
    let capabilities: Vec<&str> = agent.capabilities.iter().map(|c| c.name).collect();
    assert_eq!(capabilities, ["net_admin", "sys_admin"]);
    assert_eq!(agent.connect, [0]);
    // Agents are not MCS-separated unless they ask; workloads always are.
    let yaml = with_agent("", "");
    let parsed = manifest::parse(Source::new("t.yaml", yaml), &policy::base_facts()).unwrap();
    assert!(!parsed.layout.domains[2].mcs && parsed.layout.domains[1].mcs);
}

#[test]
fn agent_never_trusted_nor_a_workload() {
    let yaml = with_agent(", trusted: true", "");
    assert_error(
        &yaml,
        "agent-trusted",
        &position_of(&yaml, "true, trusted"),
        "agent domain `a` cannot be trusted",
    );
    let yaml = with_agent(", workload: true", "");
    assert_error(
        &yaml,
        "agent-workload",
        &position_of(&yaml, "true, workload"),
        "domain `a` is both a workload and an agent",
    );
}

#[test]
fn agent_never_granted_a_protected_path() {
    let yaml = with_agent(
        "",
        "    - path: /var/lib/etcd\n      type: etcd_var_t\n      access: { etcd: write, a: read }\n      protected: true\n",
    );
    assert_error(
        &yaml,
        "protected-agent",
        &position_of(&yaml, "protected: true").replace(":7", ":18"),
        "protected path `/var/lib/etcd` grants access to agent domain `a`",
    );
}

#[test]
fn agent_never_reaches_a_protected_path_by_transition() {
    let yaml = with_agent(", transitions: [etcd]", ETCD);
    assert_error(
        &yaml,
        "agent-transition",
        &position_of(&yaml, "a: { type"),
        "agent domain `a` can reach `etcd`, which may access protected path `/var/lib/etcd`, through transitions a → etcd",
    );
}

#[test]
fn agent_fields_only_on_agents() {
    let daemon = |fields: &str| {
        format!(
            "apiVersion: semanifest.io/v1\nkind: Layout\nmetadata:\n  name: t\nspec:\n  domains:\n    d: {{ type: d_t{fields} }}\n    pods: {{ type: container_t, workload: true }}\n  paths:\n    - path: /var/log\n      type: var_log_t\n      access: {{ d: read, pods: read }}\n"
        )
    };
    let yaml = daemon(", host: { sysfs: read }");
    assert_error(
        &yaml,
        "agent-field",
        &position_of(&yaml, "{ sysfs"),
        "`host` is for agent domains, and `d` is none",
    );
    let yaml = daemon(", capabilities: [sys_admin]");
    assert_error(
        &yaml,
        "agent-field",
        &position_of(&yaml, "sys_admin"),
        "`capabilities` are for agent domains, and `d` is none",
    );
    let yaml = daemon(", mcs: true");
    assert_error(
        &yaml,
        "agent-field",
        &position_of(&yaml, "true"),
        "`mcs` is for agent domains, and `d` is none",
    );
    let yaml = with_agent("", "").replace(
        "pods: { type: container_t, workload: true }",
        "pods: { type: container_t, workload: true, mcs: false }",
    );
    assert_error(
        &yaml,
        "agent-field",
        &position_of(&yaml, "false"),
        "`mcs` is for agent domains, and `pods` is none",
    );
    // Control: `connect` is for any domain (kubelet connects to a CSI plugin).
    assert_eq!(diagnose(&daemon(", connect: [pods]")), vec![]);
}

#[test]
fn host_classes_and_their_levels() {
    let yaml = with_agent(", host: { sysfss: read }", "");
    assert_error(
        &yaml,
        "host-class",
        &position_of(&yaml, "sysfss"),
        "unknown host class `sysfss`",
    );
    let yaml = with_agent(", host: { sysfs: write }", "");
    assert_error(
        &yaml,
        "host-level",
        &position_of(&yaml, "write }"),
        "host class `sysfs` does not admit `write`",
    );
    let yaml = with_agent(", host: { container-runtime: [read] }", "");
    assert_error(
        &yaml,
        "host-level",
        &position_of(&yaml, "[read]"),
        "host class `container-runtime` does not admit `read`",
    );
    let yaml = with_agent(", host: { proc: rw }", "");
    assert_error(
        &yaml,
        "access-level",
        &position_of(&yaml, "rw }"),
        "unknown access level `rw`",
    );
}

#[test]
fn capabilities_known_and_not_refused() {
    let yaml = with_agent(", capabilities: [sys_module]", "");
    assert_error(
        &yaml,
        "capability",
        &position_of(&yaml, "sys_module"),
        "no agent may hold `sys_module`",
    );
    let yaml = with_agent(", capabilities: [SYS_ADMIN]", "");
    assert_error(
        &yaml,
        "capability",
        &position_of(&yaml, "SYS_ADMIN"),
        "unknown capability `SYS_ADMIN`",
    );
    let help = match manifest::parse(Source::new("t.yaml", yaml), &policy::base_facts()) {
        Err(report) => report.diagnostics[0].help.clone().unwrap_or_default(),
        Ok(_) => panic!("refused"),
    };
    assert!(help.contains("write `sys_admin`"), "{help}");
    for refused in [
        "mac_admin",
        "mac_override",
        "sys_rawio",
        "perfmon",
        "audit_read",
        "audit_control",
        "sys_boot",
    ] {
        let yaml = with_agent(&format!(", capabilities: [{refused}]"), "");
        let found = diagnose(&yaml);
        assert_eq!(found.len(), 1, "{refused}: {found:#?}");
        assert_eq!(found[0].1, "capability", "{refused}");
    }
}

#[test]
fn bpf_loaders_never_hold_sys_admin() {
    let yaml = with_agent(
        ", host: { bpf: write }, capabilities: [net_admin, sys_admin, bpf]",
        "",
    );
    assert_error(
        &yaml,
        "agent-bpf-sys-admin",
        &position_of(&yaml, "sys_admin"),
        "agent `a` may load BPF programs and holds `sys_admin`",
    );
    // Controls: reading pinned maps with sys_admin, or loading without it.
    for agent in [
        ", host: { bpf: read }, capabilities: [sys_admin]",
        ", host: { bpf: write }, capabilities: [net_admin, bpf]",
    ] {
        assert_eq!(diagnose(&with_agent(agent, "")), vec![], "{agent}");
    }
}

#[test]
fn grants_beyond_labels_are_warned() {
    let found = diagnose(&with_agent(
        ", host: { block-devices: write, container-runtime: write, cni-bin: write }",
        "",
    ));
    let codes: Vec<(&str, &str)> = found
        .iter()
        .map(|d| (d.1, d.3.split(':').next().unwrap_or_default()))
        .collect();
    assert_eq!(
        codes,
        [
            ("agent-raw-disk", "agent `a` is granted `block-devices"),
            ("agent-runtime", "agent `a` is granted `container-runtime"),
            ("agent-runtime", "agent `a` is granted `cni-bin"),
        ],
        "{found:#?}"
    );
    assert!(found.iter().all(|d| d.0 == Severity::Warning));
    // Control: running the plugins is not installing them.
    assert_eq!(
        diagnose(&with_agent(", host: { cni-bin: [read, exec] }", "")),
        vec![]
    );
}

#[test]
fn connections_name_declared_domains() {
    let yaml = with_agent(", connect: [kubelet]", "");
    assert_error(
        &yaml,
        "unknown-domain",
        &position_of(&yaml, "kubelet"),
        "connection to unknown domain `kubelet`",
    );
}

#[test]
fn privileged_exceptions() {
    let head = with_paths(
        "    - path: /var/mnt\n      type: var_mnt_t\n      access: { pods: write }\n      hostPath: true\n",
    );
    // Line 14 is `privilegedExceptions:`; entries follow.
    let with = |entries: &str| format!("{head}  privilegedExceptions:\n{entries}");
    let valid =
        with("    - { namespace: kube-system, name: falco, reason: loads its eBPF probe }\n");
    let errors: Vec<_> = diagnose(&valid)
        .into_iter()
        .filter(|d| d.0 == Severity::Error)
        .collect();
    assert_eq!(errors, vec![]);
    assert_error(
        &with("    - { namespace: Kube_System, name: falco, reason: r }\n"),
        "privileged-exception",
        "15:20",
        "invalid namespace `Kube_System`",
    );
    assert_error(
        &with("    - { namespace: ns, name: Falco/x, reason: r }\n"),
        "privileged-exception",
        "15:30",
        "invalid workload name `Falco/x`",
    );
    assert_error(
        &with("    - { namespace: ns, name: falco, reason: \"  \" }\n"),
        "privileged-exception",
        "15:45",
        "needs a reason",
    );
    assert_error(
        &with("    - { namespace: ns, name: falco, reason: a }\n    - { namespace: ns, name: falco, reason: b }\n"),
        "privileged-exception",
        "16:30",
        "excepted twice",
    );
    assert_error(
        &with("    - { namespace: ns, name: falco }\n"),
        "yaml",
        "15:24",
        "missing field `reason`",
    );
}
