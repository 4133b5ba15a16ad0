//! The Kubernetes corpus under `tests/data/k8s/` against the default
//! layout's hostPath rules.
//!
//! Expectations live in the corpus itself: a line ending in
//! `# expect: RULE[,RULE…]` must carry exactly those findings, located at
//! the value on that line; no other line may carry any. The column is
//! computed here from the text, independently of the YAML parser.
//!
//! Regenerate the snapshots with `INSTA_UPDATE=always cargo test --test it k8s_corpus::`
//! and review the diff.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use k8s::{self, ContainerKind, HostPathRules, Invalidity};
use layout::diag::{Finding, Severity};
use semanifest::check::report::{self, HumanOptions};

const CORPUS: &str = "tests/data/k8s/corpus";
const ERRORS: &str = "tests/data/k8s/errors";

/// The judgement of a layout whose header is implied.
pub(crate) fn rules_of(spec: &str) -> HostPathRules {
    let text =
        format!("apiVersion: semanifest.io/v1\nkind: Layout\nmetadata: {{ name: t }}\n{spec}");
    let parsed = layout::manifest::parse(
        layout::diag::Source::new("layout.yaml", text),
        &policy::base_facts(),
    )
    .unwrap_or_else(|report| panic!("{report:?}"));
    HostPathRules::of(&parsed)
}

/// The embedded default layout's judgement (`layouts/structured-var.yaml`).
fn default_rules() -> HostPathRules {
    let parsed = layout::manifest::default_layout(&policy::base_facts()).expect("default layout");
    HostPathRules::of(&parsed)
}

fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(CORPUS)
        .expect("corpus directory")
        .map(|e| e.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "corpus went missing: {files:?}");
    files
}

/// (line, column, rule) for every `# expect:` annotation of `text`.
fn annotations(text: &str) -> Vec<(u32, u32, String)> {
    let mut expected = Vec::new();
    for (index, line) in text.lines().enumerate() {
        // `# expect: RULES` is at the line's first value; `# expect(KEY): RULES`
        // at the value of KEY (a flow mapping holds several).
        let Some(comment) = line.find("# expect") else {
            continue;
        };
        if line.trim_start().starts_with('#') {
            continue; // prose about annotations, not one
        }
        let code = &line[..comment];
        let tag = &line[comment + "# expect".len()..];
        let Some(tag_end) = tag.find(": ") else {
            continue;
        };
        let key = tag[..tag_end]
            .strip_prefix('(')
            .and_then(|k| k.strip_suffix(')'));
        let key_end = match key {
            Some(key) => {
                code.find(&format!("{key}: "))
                    .expect("annotated key on the line")
                    + key.len()
                    + 2
            }
            // The value follows the first `: ` (past any `- ` and an `&anchor`).
            None => code.find(": ").expect("annotated line has a key") + 2,
        };
        let mut value_start = key_end + code[key_end..].len() - code[key_end..].trim_start().len();
        if code[value_start..].starts_with('&') {
            let anchor_len = code[value_start..].find(' ').expect("anchor then value");
            value_start += anchor_len + 1;
        }
        let column = code[..value_start].chars().count() as u32 + 1;
        let rules = &tag[tag_end + 2..];
        for rule in rules.split(',') {
            expected.push((index as u32 + 1, column, rule.trim().to_owned()));
        }
    }
    expected.sort();
    expected
}

fn actual(findings: &[Finding], file: &str) -> Vec<(u32, u32, String)> {
    let mut actual: Vec<_> = findings
        .iter()
        .map(|f| {
            let location = f
                .location
                .as_ref()
                .expect("every k8s finding has a location");
            assert_eq!(location.file, file, "{f:?}");
            (location.pos.line, location.pos.column, f.rule.id.to_owned())
        })
        .collect();
    actual.sort();
    actual
}

fn audit_file(file: &Path) -> (String, Vec<Finding>) {
    let name = file.display().to_string();
    let text = fs::read_to_string(file).expect("corpus file");
    let manifests = k8s::parse_str(&name, &text);
    if let Some(invalid) = manifests.invalid.first() {
        panic!("{invalid}");
    }
    (text, k8s::audit(&manifests, &default_rules()))
}

#[test]
fn corpus_findings_match_annotations() {
    let mut total = 0;
    for file in corpus_files() {
        let (text, findings) = audit_file(&file);
        let expected = annotations(&text);
        let name = file.display().to_string();
        assert_eq!(
            actual(&findings, &name),
            expected,
            "{name}: findings differ from annotations; findings:\n{findings:#?}"
        );
        total += expected.len();
    }
    assert!(total > 30, "annotations went missing ({total})");
}

/// Control for the annotation test: the same corpus against a layout that
/// makes every top-level directory a writable root and protects nothing
/// reports far less, so the
/// test above can fail.
#[test]
fn annotations_are_not_vacuous() {
    // `/` cannot be a layout path: roots at every top-level directory the
    // file mounts instead.
    let permissive = rules_of(
        "spec:\n  domains:\n    pods: { type: container_t, workload: true }\n  paths:\n\
         \x20   - { path: /proc, type: a_t, access: { pods: write }, hostPath: true }\n\
         \x20   - { path: /sys, type: b_t, access: { pods: write }, hostPath: true }\n\
         \x20   - { path: /var, type: c_t, access: { pods: write }, hostPath: true }\n",
    );
    let file = Path::new(CORPUS).join("node-exporter.yaml");
    let text = fs::read_to_string(&file).unwrap();
    let manifests = k8s::parse_str("node-exporter.yaml", &text);
    let findings = k8s::audit(&manifests, &permissive);
    assert_ne!(actual(&findings, "node-exporter.yaml"), annotations(&text));
    let errors: Vec<&str> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.rule.id)
        .collect();
    // Only `/` itself, which no layout path can be.
    assert_eq!(errors, ["k8s-hostpath-outside-root"], "{findings:#?}");
}

/// A few positions spelled out, so a shared bug in the annotation reader and
/// the parser cannot hide.
#[test]
fn exact_positions() {
    let cases: [(&str, u32, u32, Option<u32>, &str); 6] = [
        // node-exporter: `path: /` at line 95, value in column 19.
        (
            "node-exporter.yaml",
            95,
            19,
            Some(20),
            "k8s-hostpath-protected",
        ),
        ("node-exporter.yaml", 6, 7, Some(21), "k8s-skipped-object"),
        (
            "etcd-backup.yaml",
            43,
            23,
            Some(43),
            "k8s-hostpath-protected",
        ),
        // A quoted scalar: the region covers the quotes.
        (
            "invalid-paths.yaml",
            26,
            15,
            Some(39),
            "k8s-hostpath-invalid",
        ),
        // An alias: the position of the alias, where the volume uses it.
        (
            "template-kinds.yaml",
            37,
            19,
            Some(28),
            "k8s-hostpath-protected",
        ),
        (
            "kubectl-list.yaml",
            46,
            19,
            Some(39),
            "k8s-hostpath-protected",
        ),
    ];
    for (file, line, column, end_column, rule) in cases {
        let (_, findings) = audit_file(&Path::new(CORPUS).join(file));
        let found = findings
            .iter()
            .find(|f| {
                f.rule.id == rule
                    && f.location
                        .as_ref()
                        .is_some_and(|l| l.pos.line == line && l.pos.column == column)
            })
            .unwrap_or_else(|| panic!("{file}:{line}:{column} {rule} missing: {findings:#?}"));
        let location = found.location.as_ref().unwrap();
        assert_eq!(
            location.pos.end_column(),
            end_column,
            "{file}:{line}:{column}"
        );
        let snippet = found.snippet.as_deref().expect("snippet");
        assert!(
            snippet.contains("path:") || snippet.contains("kind:"),
            "{snippet}"
        );
    }
}

#[test]
fn extracted_facts() {
    let text = fs::read_to_string(Path::new(CORPUS).join("csi-node.yaml")).unwrap();
    let manifests = k8s::parse_str("csi-node.yaml", &text);
    let [workload] = &manifests.workloads[..] else {
        panic!("one workload expected: {:#?}", manifests.workloads)
    };
    assert_eq!(workload.kind.value, "DaemonSet");
    assert_eq!(workload.name.as_deref(), Some("csi-nfs-node"));
    assert_eq!(workload.namespace.as_deref(), Some("kube-system"));
    let volumes: Vec<&str> = workload
        .host_path_volumes
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(
        volumes,
        ["socket-dir", "pods-mount-dir", "registration-dir"]
    );
    let pods = &workload.host_path_volumes[1];
    assert_eq!(pods.path.value, "/var/lib/kubelet/pods");
    assert_eq!(pods.path_type.as_ref().unwrap().value, "Directory");
    let [mount] = &pods.mounts[..] else {
        panic!("{:#?}", pods.mounts)
    };
    assert_eq!(mount.container, "nfs");
    assert_eq!(mount.container_kind, ContainerKind::Regular);
    assert_eq!(mount.mount_path.value, "/var/lib/kubelet/pods");
    assert_eq!(mount.mount_propagation.as_deref(), Some("Bidirectional"));
    assert!(!mount.is_read_only());
    let privileged = mount.privileged.as_ref().unwrap();
    assert!(privileged.value);
    assert_eq!(
        (privileged.position.line, privileged.position.column),
        (54, 25)
    );
    let socket_dir = &workload.host_path_volumes[0];
    let containers: Vec<&str> = socket_dir
        .mounts
        .iter()
        .map(|m| m.container.as_str())
        .collect();
    assert_eq!(
        containers,
        ["liveness-probe", "node-driver-registrar", "nfs"]
    );
}

#[test]
fn effective_selinux_type_follows_the_kubelet() {
    let text = fs::read_to_string(Path::new(CORPUS).join("selinux-types.yaml")).unwrap();
    let manifests = k8s::parse_str("selinux-types.yaml", &text);
    let volume = &manifests.workloads[0].host_path_volumes[0];
    let types: Vec<(&str, ContainerKind, Option<&str>)> = volume
        .mounts
        .iter()
        .map(|m| {
            (
                m.container.as_str(),
                m.container_kind,
                m.selinux_type.as_ref().map(|t| t.value.as_str()),
            )
        })
        .collect();
    assert_eq!(
        types,
        [
            ("init", ContainerKind::Init, Some("container_t")),
            ("inherits-pod-type", ContainerKind::Regular, Some("spc_t")),
            // Its own seLinuxOptions (level only) replace the pod's whole.
            ("sets-level-only", ContainerKind::Regular, None),
            (
                "log-reader",
                ContainerKind::Regular,
                Some("container_logreader_t")
            ),
        ]
    );
    // The pod-level type is reported where the pod sets it.
    let inherited = volume.mounts[1].selinux_type.as_ref().unwrap();
    assert_eq!(
        (inherited.position.line, inherited.position.column),
        (19, 17)
    );
}

#[test]
fn skipped_objects_and_lists() {
    let text = fs::read_to_string(Path::new(CORPUS).join("kubectl-list.yaml")).unwrap();
    let manifests = k8s::parse_str("l.yaml", &text);
    let kinds: Vec<&str> = manifests
        .workloads
        .iter()
        .map(|w| w.kind.value.as_str())
        .collect();
    assert_eq!(kinds, ["Pod", "Deployment"]);
    let skipped: Vec<&str> = manifests
        .skipped
        .iter()
        .map(|s| s.kind.as_ref().unwrap().value.as_str())
        .collect();
    assert_eq!(skipped, ["PodSecurityPolicy"]);

    let text = fs::read_to_string(Path::new(CORPUS).join("template-kinds.yaml")).unwrap();
    let manifests = k8s::parse_str("t.yaml", &text);
    let kinds: Vec<&str> = manifests
        .workloads
        .iter()
        .map(|w| w.kind.value.as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "PodTemplate",
            "ReplicationController",
            "ReplicaSet",
            "Deployment"
        ]
    );
    assert!(manifests.skipped.is_empty(), "{:#?}", manifests.skipped);

    // A document without kind is noted, with its position.
    let manifests = k8s::parse_str("v.yaml", "# values\nreplicas: 3\nimage: {tag: x}\n");
    let findings = k8s::audit(&manifests, &default_rules());
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].rule.id, "k8s-skipped-object");
    assert_eq!(findings[0].location.as_ref().unwrap().pos.line, 2);
}

/// Each malformed input: the error kind, the rule and the exact line and
/// column, with the source line as snippet.
#[test]
fn errors_name_file_line_and_column() {
    let templated = Invalidity::Templated { template_line: 4 };
    let cases: [(&str, Invalidity, &str, u32, u32); 5] = [
        ("helm-template.yaml", templated, "k8s-invalid-yaml", 4, 9),
        (
            "malformed.yaml",
            Invalidity::NotYaml,
            "k8s-invalid-yaml",
            10,
            8,
        ),
        (
            "yes-boolean.yaml",
            Invalidity::NotAnObject,
            "k8s-invalid-object",
            12,
            21,
        ),
        (
            "duplicate-key.yaml",
            Invalidity::NotAnObject,
            "k8s-invalid-object",
            13,
            9,
        ),
        (
            "wrong-shape.yaml",
            Invalidity::NotAnObject,
            "k8s-invalid-object",
            6,
            12,
        ),
    ];
    for (file, invalidity, rule, line, column) in cases {
        let path = Path::new(ERRORS).join(file);
        let name = path.display().to_string();
        let text = fs::read_to_string(&path).unwrap();
        let manifests = k8s::parse_str(&name, &text);
        let [error] = &manifests.invalid[..] else {
            panic!("{file}: {manifests:#?}")
        };
        assert_eq!(error.invalidity, invalidity, "{file}: {error}");
        let location = error.location();
        assert_eq!(
            (
                location.file.as_str(),
                location.pos.line,
                location.pos.column
            ),
            (name.as_str(), line, column),
            "{file}: {error}"
        );
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{name}:{line}:{column}: ")),
            "{message}"
        );
        if matches!(invalidity, Invalidity::Templated { .. }) {
            assert!(message.contains("helm template"), "{message}");
        }
        let finding = k8s::invalid_document(error);
        assert_eq!(finding.rule.id, rule, "{file}");
        assert_eq!(finding.location.as_ref(), Some(&location));
        assert_eq!(
            finding.snippet.as_deref(),
            text.lines().nth(line as usize - 1),
            "{file}"
        );
        // A document that cannot be read is a finding of audit too.
        let ids: Vec<&str> = k8s::audit(&manifests, &default_rules())
            .iter()
            .map(|f| f.rule.id)
            .collect();
        assert_eq!(ids, [rule], "{file}");
    }
}

#[test]
fn load_paths_walks_directories_and_names_files_as_given() {
    let loaded = k8s::load_paths(&[PathBuf::from(CORPUS)]);
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let manifests = loaded.manifests;
    assert!(
        manifests.invalid.is_empty() && manifests.skipped_files.is_empty(),
        "{manifests:#?}"
    );
    let mut files: Vec<&str> = manifests
        .workloads
        .iter()
        .map(|w| w.source.name())
        .collect();
    files.dedup();
    let expected: Vec<String> = corpus_files()
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    assert_eq!(files, expected);
}

/// The directory rule of `kubectl apply -R -f DIR`, and a note for every
/// entry left out (a directory scan once skipped `.json` and dot-files
/// without a word).
#[test]
fn load_paths_reads_like_kubectl_and_notes_what_it_skips() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let pod = |p: &str| {
        format!("kind: Pod\nspec:\n  volumes:\n    - name: v\n      hostPath:\n        path: {p}\n")
    };
    fs::create_dir_all(root.join("sub/deeper")).unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::write(root.join("a.yaml"), pod("/a")).unwrap();
    fs::write(root.join("sub/deeper/b.yml"), pod("/b")).unwrap();
    fs::write(root.join("sub/notes.txt"), pod("/explicit")).unwrap();
    fs::write(root.join(".hidden.yaml"), pod("/hidden")).unwrap();
    fs::write(root.join(".git/c.yaml"), pod("/not-read")).unwrap();
    fs::write(root.join("UPPER.YAML"), pod("/not-read")).unwrap();
    fs::write(
        root.join("pod.json"),
        r#"{"kind": "Pod", "spec": {"volumes": [{"name": "v", "hostPath": {"path": "/json"}}]}}"#,
    )
    .unwrap();
    fs::write(root.join("bad.yaml"), "kind: Pod\nspec: [\n").unwrap();
    fs::write(root.join("latin1.yaml"), b"kind: Pod # \xe9\n").unwrap();
    std::os::unix::fs::symlink(root.join("sub"), root.join("sub/loop")).unwrap();
    std::os::unix::fs::symlink(root.join("a.yaml"), root.join("z-link.yaml")).unwrap();
    std::os::unix::fs::symlink(root.join("gone"), root.join("dangling.yaml")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(root.join("fifo.yaml"))
        .status()
        .unwrap();
    assert!(status.success());
    let explicit = root.join("sub/notes.txt");
    let missing = root.join("missing.yaml");

    let loaded = k8s::load_paths(&[root.to_path_buf(), explicit, missing.clone()]);
    let paths: Vec<String> = loaded
        .manifests
        .workloads
        .iter()
        .map(|w| w.host_path_volumes[0].path.value.clone())
        .collect();
    // Name order within a directory; dot-files and `.json` are read; the
    // symlinked file is read, the symlinked directory (a loop) is not; an
    // explicit file is read whatever its extension.
    assert_eq!(paths, ["/hidden", "/a", "/json", "/b", "/a", "/explicit"]);
    let skipped: Vec<(String, k8s::SkipReason)> = loaded
        .manifests
        .skipped_files
        .iter()
        .map(|f| {
            (
                f.path
                    .strip_prefix(&format!("{}/", root.display()))
                    .unwrap()
                    .to_owned(),
                f.reason,
            )
        })
        .collect();
    use k8s::SkipReason::*;
    let expected = [
        (".git", HiddenDirectory),
        ("UPPER.YAML", ExtensionCase),
        ("dangling.yaml", NotRegularFile),
        ("fifo.yaml", NotRegularFile),
        ("sub/loop", SymlinkedDirectory),
        ("sub/notes.txt", Extension),
    ];
    let expected: Vec<(String, k8s::SkipReason)> =
        expected.iter().map(|(p, r)| (p.to_string(), *r)).collect();
    assert_eq!(skipped, expected);
    // Each skipped entry is a note naming it.
    let findings = k8s::audit(&loaded.manifests, &default_rules());
    let notes: Vec<&str> = findings
        .iter()
        .filter(|f| f.rule.id == "k8s-skipped-file")
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(notes.len(), expected.len(), "{notes:#?}");
    assert!(
        notes[1].contains("UPPER.YAML") && notes[1].contains("kubectl"),
        "{notes:#?}"
    );
    // The bad document is a finding, not an error of the run.
    let [bad] = &loaded.manifests.invalid[..] else {
        panic!("{:#?}", loaded.manifests.invalid)
    };
    assert_eq!(
        bad.to_string(),
        format!(
            "{}:2:7: invalid YAML: expected mapping start",
            root.join("bad.yaml").display()
        )
    );
    let messages: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(
        messages[0].starts_with(&format!("{}:", missing.display())),
        "{messages:#?}"
    );
    assert_eq!(
        messages[1],
        format!(
            "{}: not valid UTF-8 text",
            root.join("latin1.yaml").display()
        )
    );
}

fn corpus_findings() -> Vec<Finding> {
    corpus_files()
        .iter()
        .flat_map(|f| audit_file(f).1)
        .collect()
}

#[test]
fn human_report_snapshot() {
    let text = report::render_human(&corpus_findings(), HumanOptions::default());
    insta::assert_snapshot!("corpus_human", text);
}

#[test]
fn json_report_snapshot() {
    let (_, findings) = audit_file(&Path::new(CORPUS).join("etcd-backup.yaml"));
    insta::assert_snapshot!("etcd_backup_json", report::render_json(&findings));
}

#[test]
fn rule_ids_are_unique_and_documented() {
    let docs = fs::read_to_string("docs/check-json.md").expect("docs/check-json.md");
    let mut seen = BTreeMap::new();
    for rule in k8s::RULES.iter() {
        assert!(
            seen.insert(rule.id, rule.name).is_none(),
            "duplicate {}",
            rule.id
        );
        assert!(
            docs.contains(rule.id),
            "{} is not in docs/check-json.md",
            rule.id
        );
    }
}

/// The example in docs/check-json.md has the shape the renderer writes.
#[test]
fn documented_json_example_matches_the_renderer() {
    let docs = fs::read_to_string("docs/check-json.md").unwrap();
    let start = docs.find("```json\n").expect("json example") + "```json\n".len();
    let end = start + docs[start..].find("```").unwrap();
    let example: serde_json::Value = serde_json::from_str(&docs[start..end]).unwrap();
    let (_, findings) = audit_file(&Path::new(CORPUS).join("etcd-backup.yaml"));
    let rendered: serde_json::Value =
        serde_json::from_str(&report::render_json(std::slice::from_ref(
            findings
                .iter()
                .find(|f| f.rule.id == "k8s-hostpath-protected")
                .expect("the protected finding"),
        )))
        .unwrap();
    assert_eq!(example["version"], report::JSON_SCHEMA_VERSION);
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&example), keys(&rendered));
    let (documented, actual) = (&example["findings"][0], &rendered["findings"][0]);
    assert_eq!(keys(documented), keys(actual));
    assert_eq!(documented["message"], actual["message"]);
    assert_eq!(documented["location"]["line"], actual["location"]["line"]);
    assert_eq!(keys(&documented["location"]), keys(&actual["location"]));
    assert_eq!(keys(&documented["related"][0]), keys(&actual["related"][0]));
}

#[test]
fn error_messages_snapshot() {
    let mut files: Vec<PathBuf> = fs::read_dir(ERRORS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let messages: Vec<String> = files
        .iter()
        .map(|file| {
            let text = fs::read_to_string(file).unwrap();
            let manifests = k8s::parse_str(&file.display().to_string(), &text);
            match &manifests.invalid[..] {
                [error] => error.to_string(),
                _ => panic!("{}: {manifests:#?}", file.display()),
            }
        })
        .collect();
    insta::assert_snapshot!("error_messages", messages.join("\n"));
}

/// Rendered charts and cluster dumps exceed the YAML library's default
/// budget of 1,024 documents per stream.
#[test]
fn thousands_of_documents_parse() {
    let stream = "kind: Pod\nspec:\n  volumes: [{name: v, hostPath: {path: /var/mnt/x}}]\n---\n"
        .repeat(5000);
    let manifests = k8s::parse_str("many.yaml", &stream);
    assert!(manifests.invalid.is_empty(), "{:#?}", manifests.invalid);
    assert_eq!(manifests.workloads.len(), 5000);
    assert_eq!(
        manifests.workloads[4999].host_path_volumes[0]
            .path
            .position
            .line,
        4 * 4999 + 3
    );
}

// ---------------------------------------------------------------------------
// Unmodified upstream manifests (tests/data/k8s/README.md).

const UPSTREAM: &str = "tests/data/k8s/upstream";

fn upstream_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(UPSTREAM)
        .expect("upstream directory")
        .map(|e| e.expect("upstream entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 18, "upstream corpus went missing: {files:?}");
    files
}

/// The files are the upstream bytes: an editor that reformats one (or
/// strips its trailing spaces) fails here, not in some position below.
#[test]
fn upstream_files_are_unmodified() {
    let status = std::process::Command::new("sha256sum")
        .args(["--check", "--quiet", "upstream.sha256"])
        .current_dir("tests/data/k8s")
        .status()
        .expect("sha256sum");
    assert!(status.success());
    let listed = fs::read_to_string("tests/data/k8s/upstream.sha256").unwrap();
    assert_eq!(
        listed.lines().count(),
        upstream_files().len(),
        "a file is not listed"
    );
}

/// (line, column, value) of every `path:` under a block-style `hostPath:`
/// key, from the text alone: the key's column, then every deeper line up to
/// the first line back at or above it. Knows nothing of the YAML parser.
fn host_paths_in_text(text: &str) -> Vec<(u32, u32, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |line: &str| line.len() - line.trim_start_matches([' ', '-']).len();
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        if line.trim_start_matches([' ', '-']).trim_end() != "hostPath:" {
            continue;
        }
        let key_column = indent(line);
        for (below, line) in lines.iter().enumerate().skip(index + 1) {
            let body = line.trim_start();
            if body.is_empty() || body.starts_with('#') {
                continue;
            }
            if line.len() - body.len() <= key_column {
                break;
            }
            if let Some(value) = body.strip_prefix("path:") {
                let value = value.trim_start();
                let column = line.len() - value.len() + 1;
                let value = value.trim_end().trim_matches('"').to_owned();
                found.push((below as u32 + 1, column as u32, value));
            }
        }
    }
    found
}

fn parsed_host_paths(manifests: &k8s::Manifests) -> Vec<(u32, u32, String)> {
    manifests
        .workloads
        .iter()
        .flat_map(|w| &w.host_path_volumes)
        .map(|v| {
            (
                v.path.position.line,
                v.path.position.column,
                v.path.value.clone(),
            )
        })
        .collect()
}

#[test]
fn upstream_every_host_path_found_at_its_value() {
    let mut total = 0;
    for file in upstream_files() {
        let name = file.display().to_string();
        let text = fs::read_to_string(&file).unwrap();
        let manifests = k8s::parse_str(&name, &text);
        assert!(
            manifests.invalid.is_empty(),
            "{name}: {:#?}",
            manifests.invalid
        );
        let mut parsed = parsed_host_paths(&manifests);
        parsed.sort();
        let expected = host_paths_in_text(&text);
        assert_eq!(parsed, expected, "{name}");
        total += expected.len();
    }
    // 68 hostPath volumes in 18 files (`grep -c "hostPath:$"` agrees); a
    // scanner that finds none would
    // agree with a parser that finds none.
    assert_eq!(total, 68);
}

fn upstream_findings_text() -> String {
    let mut lines: Vec<(String, u32, u32, &str)> = Vec::new();
    for file in upstream_files() {
        let name = file.display().to_string();
        let text = fs::read_to_string(&file).unwrap();
        let manifests = k8s::parse_str(&name, &text);
        for finding in k8s::audit(&manifests, &default_rules()) {
            let location = finding.location.as_ref().expect("located");
            let relative = location
                .file
                .strip_prefix("tests/data/k8s/upstream/")
                .unwrap();
            lines.push((
                relative.to_owned(),
                location.pos.line,
                location.pos.column,
                finding.rule.id,
            ));
            // The snippet is the line the location points into.
            assert_eq!(
                finding.snippet.as_deref(),
                text.lines().nth(location.pos.line as usize - 1),
                "{finding:#?}"
            );
        }
    }
    lines.sort();
    lines
        .iter()
        .map(|(file, line, column, rule)| format!("{file}:{line}:{column} {rule}\n"))
        .collect()
}

/// Every finding on the upstream corpus, against a reviewed list.
#[test]
fn upstream_findings_match_the_reviewed_list() {
    let expected_file = "tests/data/k8s/upstream.expected";
    let actual = upstream_findings_text();
    if std::env::var_os("SEMANIFEST_BLESS").is_some() {
        fs::write(expected_file, &actual).unwrap();
    }
    let expected = fs::read_to_string(expected_file).expect("upstream.expected");
    assert_eq!(
        actual, expected,
        "regenerate with SEMANIFEST_BLESS=1 and review the diff"
    );
}

/// A few upstream verdicts spelled out, so a wrong reviewed list cannot
/// hide them.
#[test]
fn upstream_verdicts_spelled_out() {
    let list = upstream_findings_text();
    let has = |entry: &str| list.lines().any(|l| l == entry);
    // kubeadm's etcd static pod: the data directory is protected.
    assert!(
        has("kubeadm-etcd.yaml:57:13 k8s-hostpath-protected"),
        "{list}"
    );
    // node-exporter mounts `/`, above every protected path.
    assert!(
        has("kube-prometheus-node-exporter.yaml:113:17 k8s-hostpath-protected"),
        "{list}"
    );
    // The Windows DaemonSets are one note each, at the pinning value, and
    // nothing else (the ebs one had 6 "not absolute" errors before).
    for (file, at) in [
        ("aws-ebs-csi-driver-node-windows.yaml", "45:27"),
        ("csi-driver-smb-node-windows.yaml", "25:27"),
        ("secrets-store-csi-driver-windows.yaml", "110:27"),
    ] {
        let lines: Vec<&str> = list
            .lines()
            .filter(|l| l.starts_with(&format!("{file}:")))
            .collect();
        assert_eq!(
            lines,
            [format!("{file}:{at} k8s-skipped-non-linux")],
            "{file}"
        );
    }
    // kured is privileged but mounts no hostPath: only its ServiceAccount
    // is noted.
    let kured: Vec<&str> = list
        .lines()
        .filter(|l| l.starts_with("kured-ds.yaml:"))
        .collect();
    assert_eq!(kured, ["kured-ds.yaml:3:7 k8s-skipped-object"]);
    // Privileged once per container, at its `privileged:` value, and the
    // paths the layout does not cover on their own (falco's /etc).
    assert!(
        has("falco-daemonset.yaml:133:25 k8s-hostpath-privileged"),
        "{list}"
    );
    assert!(
        has("falco-daemonset.yaml:197:19 k8s-hostpath-outside-root"),
        "{list}"
    );
    // A writable /var/log exposes the audit logs: that is its one error
    // (writing where pods may only read is moot once it may not be mounted).
    assert!(
        has("fluent-bit-ds.yaml:45:17 k8s-hostpath-protected"),
        "{list}"
    );
    assert!(
        !has("fluent-bit-ds.yaml:45:17 k8s-hostpath-writable-read-only"),
        "{list}"
    );
}

/// One finding per problem: across the corpus and the upstream manifests
/// no position carries two findings, and a privileged container is one
/// finding at its `privileged:` value however many hostPaths it mounts.
#[test]
fn one_finding_per_spot() {
    let mut spots = 0;
    for file in corpus_files().into_iter().chain(upstream_files()) {
        let name = file.display().to_string();
        let text = fs::read_to_string(&file).unwrap();
        let findings = k8s::audit(&k8s::parse_str(&name, &text), &default_rules());
        let mut seen = std::collections::BTreeSet::new();
        for finding in &findings {
            let location = finding.location.as_ref().expect("located");
            assert!(
                seen.insert((location.pos.line, location.pos.column)),
                "{name}: two findings at {location}: {findings:#?}"
            );
            if finding.rule.id == "k8s-hostpath-privileged" {
                let line = text.lines().nth(location.pos.line as usize - 1).unwrap();
                assert!(line.contains("privileged:"), "{finding:#?}");
            }
        }
        spots += seen.len();
    }
    assert!(spots > 100, "{spots}");
}

/// Control for the test above: checking both placements (protected and
/// outside every root) at `/var/lib/etcd` would put two errors at one spot;
/// the judgement keeps the protected one, whose message says why.
#[test]
fn protected_is_not_also_outside_every_root() {
    let (_, findings) = audit_file(&Path::new(CORPUS).join("etcd-backup.yaml"));
    let at_43: Vec<&str> = findings
        .iter()
        .filter(|f| f.location.as_ref().is_some_and(|l| l.pos.line == 43))
        .map(|f| f.rule.id)
        .collect();
    assert_eq!(at_43, ["k8s-hostpath-protected"]);
    let rules = default_rules();
    let pods = rules.domains.iter().find(|d| d.key == "pods").unwrap();
    assert!(
        !pods.roots().any(|r| r.path.as_str() == "/var/lib/etcd"),
        "the path is outside every root too, so both rules apply"
    );
}

/// Kustomize patch files are skipped with a note that says what they are,
/// read as files and from a directory; nothing in them is an error.
#[test]
fn kustomize_patches_are_noted_not_rejected() {
    let dir = Path::new("tests/data/k8s/patches");
    let operands = [
        dir.to_path_buf(),
        dir.join("mounts.yaml"),
        dir.join("delete-agent.yaml"),
    ];
    for operand in operands {
        let loaded = k8s::load_paths(std::slice::from_ref(&operand));
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let findings = k8s::audit(&loaded.manifests, &default_rules());
        assert!(!findings.is_empty(), "{operand:?}");
        for finding in &findings {
            assert_eq!(finding.rule.id, "k8s-skipped-object", "{finding:#?}");
            assert!(finding.message.contains("kustomize"), "{finding:#?}");
        }
    }
    // Control: a sequence of things that are not patch operations is still
    // an invalid object.
    let manifests = k8s::parse_str("list.yaml", "- a\n- b\n");
    let findings = k8s::audit(&manifests, &default_rules());
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].rule.id, "k8s-invalid-object");
}
