//! `policy::kernel_policy` on every policy version it reads that Debian
//! 12's libsepol writes: Debian's refpolicy store rebuilt by the real
//! `semodule` with `policy-version = N` (as an older node's store is, a
//! RHEL 8 node's `policy.31` for one), each read here and by setools, rule
//! for rule.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::store::{copy_of, refpolicy_store, store_dir};
use crate::support::{run_ok, tool};
use policy::kernel_policy::{KernelPolicy, RuleFilter};

fn lines_text(policy: &KernelPolicy, filter: &RuleFilter<'_>) -> String {
    policy
        .allow_lines(filter)
        .iter()
        .map(|line| format!("{}\n", line.text))
        .collect()
}

/// `seinfo -x -a`: attribute → members, as setools lists them.
fn seinfo_attributes(policy: &Path) -> BTreeMap<String, Vec<String>> {
    let text = run_ok(
        Command::new(tool("seinfo", "setools"))
            .arg(policy)
            .args(["-x", "-a"]),
    );
    let mut attributes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim().trim_end_matches(';');
        if let Some(name) = trimmed.strip_prefix("attribute ") {
            current = name.to_owned();
            attributes.entry(current.clone()).or_default();
        } else if line.starts_with('\t') && !trimmed.starts_with('<') {
            attributes
                .entry(current.clone())
                .or_default()
                .push(trimmed.to_owned());
        }
    }
    for members in attributes.values_mut() {
        members.sort();
    }
    attributes
}

fn sesearch(policy: &Path, args: &[&str]) -> String {
    run_ok(
        Command::new(tool("sesearch", "setools"))
            .arg(policy)
            .args(args),
    )
}

#[test]
fn every_version_debians_tools_write_reads_as_setools_reads_it() {
    let copy = copy_of(&refpolicy_store());
    let conf = copy.path().join("etc/selinux/semanage.conf");
    let settings = fs::read_to_string(&conf).unwrap();
    let kern = store_dir(copy.path(), "default").join("active/policy.kern");
    let mut versions_read = Vec::new();
    // Each gates a part of the format: 24 (none of the later), 26 (old
    // name-based transitions, new role transitions), 28 (object defaults),
    // 30 (constraint names, extended permissions, seven object context
    // kinds), 32 (nine kinds); 33 is every other test's.
    for version in [24, 26, 28, 30, 32] {
        fs::write(&conf, format!("{settings}\npolicy-version = {version}\n")).unwrap();
        run_ok(
            Command::new(tool("semodule", "policycoreutils"))
                .args(["-n", "-p"])
                .arg(copy.path())
                .arg("-B"),
        );
        let bytes = fs::read(&kern).unwrap();
        // The version is the word after the magic and the platform string.
        let written = u32::from_le_bytes(bytes[16..20].try_into().unwrap());
        assert_eq!(written, version, "semodule wrote version {written}");
        let policy =
            KernelPolicy::parse(&bytes).unwrap_or_else(|e| panic!("version {version}: {e}"));

        let all = lines_text(&policy, &RuleFilter::default());
        assert!(
            all.contains(" ]:True\n"),
            "version {version}: no conditional rule"
        );
        assert_eq!(
            all,
            sesearch(&kern, &["-A"]),
            "version {version}: sesearch -A"
        );
        let classes = ["dir", "file", "lnk_file"];
        let on_types = lines_text(
            &policy,
            &RuleFilter {
                targets: Some(&["var_log_t", "shadow_t"]),
                classes: Some(&classes),
                ..RuleFilter::default()
            },
        );
        assert!(!on_types.is_empty());
        assert_eq!(
            on_types,
            sesearch(
                &kern,
                &[
                    "-A",
                    "-rt",
                    "-t",
                    "^(var_log_t|shadow_t)$",
                    "-c",
                    "dir,file,lnk_file"
                ]
            ),
            "version {version}: rules on two types"
        );
        let ours: BTreeMap<String, Vec<String>> = policy
            .attributes()
            .into_iter()
            .map(|(name, members)| {
                (
                    name.to_owned(),
                    members.into_iter().map(str::to_owned).collect(),
                )
            })
            .collect();
        assert_eq!(
            ours,
            seinfo_attributes(&kern),
            "version {version}: attributes"
        );
        versions_read.push(version);
    }
    // Control: a version past what the reader knows is refused, naming it.
    let mut bytes = fs::read(&kern).unwrap();
    bytes[16..20].copy_from_slice(&99u32.to_le_bytes());
    let error = KernelPolicy::parse(&bytes).unwrap_err();
    assert!(error.what.contains("policy version 99"), "{error}");
    assert_eq!(versions_read.len(), 5);
}
