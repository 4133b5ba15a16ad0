//! SARIF output validated against the official OASIS SARIF 2.1.0 schema by
//! a real validator (python `jsonschema` in `.venv`, see `.ci/validate-sarif.py` and
//! `.ci/python-requirements.txt`). Fails, never skips, when the validator
//! is not installed.

use std::fs;
use std::path::Path;

use crate::support::venv_python;
use k8s::{self, HostPathRules};
use layout::diag::{Finding, Location, Pos, Related, Severity};
use semanifest::check::report;

/// Runs the validator on `sarif`; Ok(stdout) when valid, Err(stdout) when not.
fn validate(sarif: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("check.sarif");
    fs::write(&file, sarif).unwrap();
    let output = venv_python()
        .arg(".ci/validate-sarif.py")
        .arg(&file)
        .output()
        .expect("run .venv/bin/python3");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    match output.status.code() {
        Some(0) => Ok(stdout),
        Some(1) => Err(stdout),
        _ => panic!("the SARIF validator is not set up: {stderr}"),
    }
}

fn rules() -> HostPathRules {
    super::k8s_corpus::rules_of(
        "spec:\n  domains:\n    pods: { type: container_t, workload: true }\n    etcd: { type: etcd_t }\n  paths:\n\
         \x20   - { path: /var/mnt, type: var_mnt_t, access: { pods: write }, hostPath: true }\n\
         \x20   - { path: /var/lib/etcd, type: etcd_var_t, access: { etcd: write }, protected: true }\n\
         \x20   - { path: /var/log, type: var_log_t, access: { pods: read } }\n",
    )
}

fn odd_location() -> Location {
    Location {
        file: "pod.yaml".to_owned(),
        pos: Pos {
            line: 1,
            column: 1,
            width: 0,
        },
    }
}

fn findings() -> Vec<Finding> {
    let loaded = k8s::load_paths(&[Path::new("tests/data/k8s/corpus").to_path_buf()]);
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let manifests = loaded.manifests;
    let mut findings = k8s::audit(&manifests, &rules());
    // File names that need percent-encoding, and a finding without location.
    let odd = Location {
        file: "manifests dir/ü#1:x.yaml".to_owned(),
        pos: Pos {
            line: 3,
            column: 9,
            width: 0,
        },
    };
    findings.push(Finding {
        rule: &k8s::RULE_OUTSIDE_ROOT,
        severity: Severity::Error,
        message: "odd name".to_owned(),
        location: Some(odd.clone()),
        snippet: None,
        related: vec![Related {
            location: odd,
            message: "again".to_owned(),
        }],
    });
    // A layout declaration in the embedded default layout, which is no file.
    findings.push(Finding {
        rule: &k8s::RULE_PROTECTED,
        severity: Severity::Error,
        message: "embedded".to_owned(),
        location: Some(odd_location()),
        snippet: None,
        related: vec![Related {
            location: Location {
                file: layout::manifest::DEFAULT_LAYOUT_NAME.to_owned(),
                pos: Pos {
                    line: 10,
                    column: 11,
                    width: 4,
                },
            },
            message: "protected path declared here".to_owned(),
        }],
    });
    findings.push(Finding {
        rule: &k8s::RULE_SKIPPED,
        severity: Severity::Note,
        message: "no location".to_owned(),
        location: None,
        snippet: None,
        related: vec![],
    });
    findings
}

#[test]
fn sarif_is_valid_against_the_official_schema() {
    let findings = findings();
    assert!(findings.len() > 40);
    let sarif = report::render_sarif(&findings);
    if let Err(errors) = validate(&sarif) {
        panic!("SARIF does not validate:\n{errors}\n{sarif}");
    }
    // Empty runs are valid too (a clean check).
    validate(&report::render_sarif(&[])).expect("empty SARIF log validates");
}

/// Control: the validator rejects what the schema forbids, so the test
/// above can fail.
#[test]
fn validator_rejects_invalid_sarif() {
    let sarif = report::render_sarif(&findings());
    let mut log: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    log["runs"][0]["results"][0]["level"] = "fatal".into();
    let errors = validate(&log.to_string()).expect_err("invalid level accepted");
    assert!(errors.contains("level"), "{errors}");

    let mut log: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        0.into();
    validate(&log.to_string()).expect_err("startLine 0 accepted");

    // The uri-reference format is checked, not ignored.
    let mut log: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] =
        "a b#c#d".into();
    validate(&log.to_string()).expect_err("malformed uri accepted");
}

#[test]
fn sarif_positions_and_uris_are_as_given() {
    let sarif = report::render_sarif(&findings());
    let log: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    let first = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(
        first["artifactLocation"]["uri"],
        "tests/data/k8s/corpus/csi-node.yaml"
    );
    assert_eq!(first["region"]["startLine"], 78);
    assert_eq!(first["region"]["startColumn"], 19);
    let odd = results
        .iter()
        .find(|r| r["message"]["text"] == "odd name")
        .unwrap();
    assert_eq!(
        odd["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "manifests%20dir/%C3%BC%231%3Ax.yaml"
    );
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    for result in results {
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], result["ruleId"]);
    }
}

/// The embedded default layout is an artifact with a description and no
/// URI (a viewer would look for a file named `<embedded default layout>`);
/// a layout file keeps its URI.
#[test]
fn sarif_embedded_layout_has_a_description_not_a_uri() {
    let sarif = report::render_sarif(&findings());
    let log: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    let embedded = results
        .iter()
        .find(|r| r["message"]["text"] == "embedded")
        .unwrap();
    let artifact = &embedded["relatedLocations"][0]["physicalLocation"]["artifactLocation"];
    assert!(artifact.get("uri").is_none(), "{artifact}");
    let description = artifact["description"]["text"].as_str().unwrap();
    assert!(description.contains("embedded"), "{description}");
    assert!(!sarif.contains("%3Cembedded"), "{sarif}");
    // Control: a named layout file is a URI.
    let named = results
        .iter()
        .find(|r| {
            r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "layout.yaml"
        })
        .expect("a layout.yaml related location");
    assert!(
        named["relatedLocations"][0]["physicalLocation"]["artifactLocation"]
            .get("description")
            .is_none()
    );
}
