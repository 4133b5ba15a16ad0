//! `semanifest layout schema` checked by a real validator (python
//! `jsonschema`, draft 2020-12, `.ci/validate-json.py`): every layout in the
//! repository is valid, and every malformed layout under
//! `tests/data/layouts/malformed/` whose header says `schema: rejects` is
//! rejected by the schema, while `semanifest layout validate` rejects all of
//! them with the rule the header names. The committed copy
//! `docs/layout.schema.json` is what the binary prints.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::{data, run, semanifest, stderr, stdout, venv_python};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn printed_schema() -> String {
    let output = run(semanifest().args(["layout", "schema"]));
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
}

/// The YAML as the parser reads it (YAML 1.2, strict booleans), as JSON:
/// what an editor's YAML language server hands to the schema.
fn yaml_as_json(path: &Path) -> serde_json::Value {
    let text = fs::read_to_string(path).unwrap();
    let options = serde_saphyr::options! { strict_booleans: true };
    serde_saphyr::from_str_with_options(&text, options)
        .unwrap_or_else(|error| panic!("{}: not YAML: {error}", path.display()))
}

/// Validates each file (YAML, converted) against `schema`; file → errors.
fn validate(schema: &str, files: &[PathBuf]) -> BTreeMap<PathBuf, Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let schema_path = dir.path().join("schema.json");
    fs::write(&schema_path, schema).unwrap();
    let mut instances = Vec::new();
    for (index, file) in files.iter().enumerate() {
        let instance = dir.path().join(format!("{index}.json"));
        fs::write(
            &instance,
            serde_json::to_string(&yaml_as_json(file)).unwrap(),
        )
        .unwrap();
        instances.push(instance);
    }
    let output = venv_python()
        .arg(repo().join(".ci/validate-json.py"))
        .arg(&schema_path)
        .args(&instances)
        .output()
        .expect("run .venv/bin/python3");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "the validator did not run: {}",
        stderr(&output)
    );
    let lines: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), files.len());
    files
        .iter()
        .zip(lines)
        .map(|(file, line)| {
            let errors = line["errors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_str().unwrap().to_owned());
            (file.clone(), errors.collect())
        })
        .collect()
}

/// The `.yaml` files under `dir`, recursively, sorted.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every layout of the repository: the embedded default and the test layouts.
fn repository_layouts() -> Vec<PathBuf> {
    let mut files = vec![repo().join("layouts/structured-var.yaml")];
    files.extend(
        yaml_files(&data("layouts"))
            .into_iter()
            .filter(|p| !p.starts_with(data("layouts/malformed"))),
    );
    if data("diff").is_dir() {
        // The diff cases' layouts (their k8s/ directories hold workloads).
        files.extend(
            yaml_files(&data("diff"))
                .into_iter()
                .filter(|p| !p.to_string_lossy().contains("/k8s/")),
        );
    }
    files
}

fn header(path: &Path, key: &str) -> String {
    let text = fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("# {key}: ")).map(str::to_owned))
        .unwrap_or_else(|| panic!("{} has no `# {key}:` header", path.display()))
}

#[test]
fn the_schema_is_draft_2020_12_with_descriptions_and_enums() {
    let schema: serde_json::Value = serde_json::from_str(&printed_schema()).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let path = &schema["$defs"]["RawPath"]["properties"];
    assert_eq!(
        path["lifecycle"]["enum"],
        serde_json::json!(["persistent", "ephemeral", "cache"])
    );
    assert_eq!(path["lifecycle"]["default"], "persistent");
    assert_eq!(path["protected"]["default"], false);
    assert!(path["protected"]["description"]
        .as_str()
        .unwrap()
        .contains("neverallow"));
    assert_eq!(
        schema["properties"]["apiVersion"]["const"],
        "semanifest.io/v1"
    );
    assert_eq!(schema["$defs"]["RawPath"]["additionalProperties"], false);
}

#[test]
fn the_committed_copy_is_what_the_binary_prints() {
    let committed = fs::read_to_string(repo().join("docs/layout.schema.json")).unwrap();
    assert_eq!(
        committed,
        printed_schema(),
        "regenerate: semanifest layout schema > docs/layout.schema.json"
    );
}

#[test]
fn every_layout_in_the_repository_is_valid() {
    let layouts = repository_layouts();
    assert!(layouts.len() >= 5, "{layouts:?}");
    for (file, errors) in validate(&printed_schema(), &layouts) {
        assert_eq!(errors, Vec::<String>::new(), "{}", file.display());
        // And the parser agrees.
        let output = run(semanifest().args(["layout", "validate"]).arg(&file));
        assert!(
            output.status.success(),
            "{}: {}",
            file.display(),
            stderr(&output)
        );
    }
}

#[test]
fn malformed_layouts_are_rejected_by_the_schema_where_it_can_say_so() {
    let files = yaml_files(&data("layouts/malformed"));
    assert!(files.len() >= 20, "{files:?}");
    let verdicts = validate(&printed_schema(), &files);
    let mut rejected = 0;
    for file in &files {
        let rule = header(file, "rule");
        let output = run(semanifest().args(["layout", "validate"]).arg(file));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{}: the parser must reject it",
            file.display()
        );
        assert!(
            stderr(&output).contains(&format!("error[{rule}]")),
            "{}: {}",
            file.display(),
            stderr(&output)
        );
        let errors = &verdicts[file];
        match header(file, "schema").as_str() {
            "rejects" => {
                assert!(
                    !errors.is_empty(),
                    "{}: the schema accepts it",
                    file.display()
                );
                rejected += 1;
            }
            // A rule across fields or entries: documented as outside the
            // schema; if the schema learns it, move the file to `rejects`.
            "accepts" => assert_eq!(errors, &Vec::<String>::new(), "{}", file.display()),
            other => panic!("{}: unknown schema verdict {other:?}", file.display()),
        }
    }
    assert!(rejected >= 15, "{rejected}");
}

#[test]
fn control_a_schema_without_patterns_lets_syntax_errors_through() {
    // The same validation with the patterns and enums stripped must accept
    // some malformed files: the rejections above come from the schema's
    // content, not from a validator that rejects everything.
    let mut schema: serde_json::Value = serde_json::from_str(&printed_schema()).unwrap();
    fn strip(value: &mut serde_json::Value) {
        if let Some(map) = value.as_object_mut() {
            map.remove("pattern");
            map.remove("enum");
            map.remove("const");
            map.values_mut().for_each(strip);
        } else if let Some(items) = value.as_array_mut() {
            items.iter_mut().for_each(strip);
        }
    }
    strip(&mut schema);
    let files = vec![
        data("layouts/malformed/type-name.yaml"),
        data("layouts/malformed/lifecycle.yaml"),
    ];
    let verdicts = validate(&schema.to_string(), &files);
    assert!(verdicts.values().all(Vec::is_empty), "{verdicts:?}");
    let verdicts = validate(&printed_schema(), &files);
    assert!(verdicts.values().all(|e| !e.is_empty()), "{verdicts:?}");
}
