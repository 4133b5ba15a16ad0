//! The proof of a build's protections: secilc checks every neverallow over
//! store + module (+ `--include` files), whatever the store's
//! `expand-check` says — once a probe has shown that this secilc enforces
//! neverallows at all.
//!
//! A store with `expand-check=0` is installed without any neverallow
//! check, and may break its own (Fedora's container-selinux breaks 13 of
//! the base's): those are honoured as the store honours them, counted and
//! reported, never a failure. The layout's own are always checked.

use serde::Serialize;

use super::compile::{input_is, Input, StoreViolation};
use policy::secilc::{self, FailedNeverallow, NeverallowProbe};

/// What the proof established.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Proof {
    /// secilc checked every neverallow; none of the layout's failed, or
    /// only for grants a boolean that is off by default gives (listed in
    /// the protections, with `booleanGrants: byDefault`).
    Proven {
        /// What checked them: `secilc`, or `libsepol` (its CIL compiler
        /// in-process, as secilc runs it).
        by: String,
        /// The store's own neverallows secilc found broken (and `--include`
        /// files'): not checked by `semodule` either (`expand-check=0`).
        store_violations: Vec<StoreViolation>,
        /// Protected types whose neverallow failed only for boolean-off
        /// grants.
        boolean_only: Vec<String>,
    },
    /// The protections were not proven; `why` says why.
    NotRun { why: String },
}

impl Proof {
    pub fn is_proven(&self) -> bool {
        matches!(self, Proof::Proven { .. })
    }

    /// One line for stderr and report.txt.
    pub fn describe(&self, expand_check: bool) -> String {
        match self {
            Proof::Proven {
                by,
                store_violations,
                boolean_only,
            } => {
                let mut text =
                    format!("proven by {by} over store + module: every neverallow checked");
                if !store_violations.is_empty() {
                    let rules: usize = store_violations.iter().map(|v| v.rules).sum();
                    text.push_str(&format!(
                        "; the store's own neverallows fail {} time{} ({} rules): {}",
                        store_violations.len(),
                        plural(store_violations.len()),
                        rules,
                        if expand_check {
                            "reported only"
                        } else {
                            "honoured as the store honours them (expand-check=0: semodule checks none), not a failure"
                        }
                    ));
                }
                if !boolean_only.is_empty() {
                    text.push_str(&format!(
                        "; {} reachable only through grants off by default (booleanGrants: byDefault)",
                        boolean_only.join(", ")
                    ));
                }
                text
            }
            Proof::NotRun { why } => format!("NOT PROVEN: the proof did not run: {why}"),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Why a probe's verdict means the proof cannot run, if it does.
pub fn probe_failure(probe: &NeverallowProbe, compiler: &str) -> Option<String> {
    match probe {
        NeverallowProbe::Enforced => None,
        NeverallowProbe::Ignored => Some(format!(
            "{} compiled a policy that breaks its own neverallow, so it enforces none; \
             use a secilc that does (`apt-get install secilc`, or --secilc PATH)",
            compiler
        )),
        NeverallowProbe::Inconclusive { output } => Some(format!(
            "{} gave no verdict on a probe policy with a known neverallow violation: {}",
            compiler,
            output.trim()
        )),
    }
}

/// secilc's neverallow failures, split into the layout module's (by the
/// file its neverallow is in) and every other's, named by the `inputs`
/// compiled (a store module by its name, not by the temporary copy).
pub(crate) fn split_failures(
    output: &str,
    module_file: &std::path::Path,
    inputs: &[Input],
) -> (Vec<FailedNeverallow>, Vec<StoreViolation>) {
    let module_file = module_file.display().to_string();
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for failed in secilc::violated_neverallows(output) {
        if failed.file() == module_file {
            ours.push(failed);
        } else {
            theirs.push(store_violation(&failed, inputs));
        }
    }
    (ours, theirs)
}

/// A failure of a neverallow outside the layout module, named by the
/// input it is in (a store module by its name, not by the temporary copy).
fn store_violation(failed: &FailedNeverallow, inputs: &[Input]) -> StoreViolation {
    let line = failed.at.rsplit_once(':').map_or("", |(_, line)| line);
    let at = match inputs.iter().find(|input| input_is(input, failed.file())) {
        Some(input) if input.path.file_name() == Some(format!("{}.cil", input.name).as_ref()) => {
            format!("{}.cil:{line}", input.name)
        }
        _ => failed.at.clone(),
    };
    StoreViolation {
        neverallow: format!("(neverallow {} {} …)", failed.subject, failed.target),
        rules: failed.offending.len(),
        at,
    }
}

/// secilc's neverallow failures over store + added files with nothing
/// voided, by whose they are.
#[derive(Debug, Default)]
pub(crate) struct ColdFailures {
    /// The layout module's own neverallows.
    pub ours: Vec<FailedNeverallow>,
    /// Every other neverallow a rule of the store's own modules breaks
    /// (`rules` counts those rules alone): what the store alone breaks.
    pub store_own: Vec<StoreViolation>,
    /// Every other neverallow only the added files (the module, the
    /// includes) break.
    pub newly_broken: Vec<StoreViolation>,
}

impl ColdFailures {
    pub fn is_empty(&self) -> bool {
        self.ours.is_empty() && self.store_own.is_empty() && self.newly_broken.is_empty()
    }
}

/// [`split_failures`], with the store's neverallows told apart by the
/// files their offending rules are in (`added` are the module's and the
/// includes'), in one reading of the output.
pub(crate) fn split_cold_failures(
    output: &str,
    module_file: &std::path::Path,
    inputs: &[Input],
    added: &[&std::path::Path],
) -> ColdFailures {
    let module_file = module_file.display().to_string();
    let mut failures = ColdFailures::default();
    for failed in secilc::violated_neverallows(output) {
        if failed.file() == module_file {
            failures.ours.push(failed);
            continue;
        }
        let mut violation = store_violation(&failed, inputs);
        let by_store = failed
            .offending_files()
            .filter(|file| !added.iter().any(|a| std::path::Path::new(file) == *a))
            .count();
        if by_store > 0 {
            violation.rules = by_store;
            failures.store_own.push(violation);
        } else {
            failures.newly_broken.push(violation);
        }
    }
    failures
}

/// secilc's output with only the neverallow failures at a location
/// `keep` accepts (every line outside a failure stays).
pub(crate) fn blocks_of(output: &str, keep: impl Fn(&str) -> bool) -> String {
    const MARKER: &str = "neverallow check failed at ";
    let mut kept = String::new();
    let mut keeping = true;
    for line in output.lines() {
        if let Some(at) = line.strip_prefix(MARKER) {
            keeping = keep(at.trim());
        } else if !line.starts_with(char::is_whitespace) {
            keeping = true;
        }
        if keeping {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_split_by_the_file_of_the_neverallow() {
        let output = "neverallow check failed at /w/modules/base.cil:10598\n  (neverallow base_typeattr_18 scsi_generic_device_t (blk_file (write)))\n    <root>\n    booleanif at /w/modules/container.cil:3810\n    true at /w/modules/container.cil:3811\n    allow at /w/modules/container.cil:3812\n      (allow container_domain device_node (blk_file (read write)))\n\nneverallow check failed at /w/predicted/m.cil:40\n  (neverallow m_workload etcd_var_t m_protected)\n    <root>\n    allow at leaky.cil:1\n      (allow container_t etcd_var_t (file (read)))\n";
        let inputs = [Input {
            name: "base".to_owned(),
            path: "/w/modules/base.cil".into(),
        }];
        let (ours, theirs) =
            split_failures(output, std::path::Path::new("/w/predicted/m.cil"), &inputs);
        assert_eq!(ours.len(), 1);
        assert_eq!(ours[0].target, "etcd_var_t");
        assert_eq!(theirs.len(), 1);
        assert_eq!(theirs[0].at, "base.cil:10598");
        assert_eq!(theirs[0].location(), Some(("base.cil", 10598)));
        assert_eq!(theirs[0].rules, 1);
    }

    #[test]
    fn cold_failures_tell_the_stores_own_from_newly_broken_ones() {
        let output = "neverallow check failed at /w/modules/base.cil:10
  (neverallow a_t shadow_t (file (write)))
    <root>
    allow at /w/modules/quirk.cil:3
      (allow quirk_t shadow_t (file (write)))
    allow at /w/predicted/m.cil:7
      (allow m_t shadow_t (file (write)))

neverallow check failed at /w/modules/base.cil:20
  (neverallow b_t security_t (security (load_policy)))
    <root>
    allow at /w/loader.cil:4
      (allow loader_t security_t (security (load_policy)))

neverallow check failed at /w/predicted/m.cil:40
  (neverallow m_workload etcd_var_t m_protected)
    <root>
    allow at /w/loader.cil:5
      (allow container_t etcd_var_t (file (read)))
Failed to generate binary
";
        let inputs = [Input {
            name: "base".to_owned(),
            path: "/w/modules/base.cil".into(),
        }];
        let module = std::path::Path::new("/w/predicted/m.cil");
        let added = [module, std::path::Path::new("/w/loader.cil")];
        let failures = split_cold_failures(output, module, &inputs, &added);
        assert_eq!(failures.ours.len(), 1);
        // Broken by a store module: the store's own, counting its rules only.
        assert_eq!(failures.store_own.len(), 1);
        assert_eq!(failures.store_own[0].at, "base.cil:10");
        assert_eq!(failures.store_own[0].rules, 1);
        // Broken only by an added file.
        assert_eq!(failures.newly_broken.len(), 1);
        assert_eq!(failures.newly_broken[0].at, "base.cil:20");

        let ours_only = blocks_of(output, |at| at.starts_with("/w/predicted/"));
        assert!(ours_only.contains("m_workload"), "{ours_only}");
        assert!(!ours_only.contains("shadow_t"), "{ours_only}");
        assert!(!ours_only.contains("security_t"), "{ours_only}");
        assert!(
            ours_only.contains("Failed to generate binary"),
            "{ours_only}"
        );
    }
}
