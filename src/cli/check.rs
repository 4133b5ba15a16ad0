//! `semanifest check`: the CI gate.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use layout::diag::Finding;
use semanifest::check::{self, report, rules, CheckOptions};

const AFTER_HELP: &str = "\
Phases, in order:
  layout      every manifest rule, plus file_contexts hazards (a path whose
              spec never wins, specs ordered only by strcmp, base overlaps)
  policy      (skipped when --k8s is all there is to check, unless --policy
              or --include: the workload judgement reads the validated
              layout, not the binary policy)
              base + layout + --include compiled with secilc; a broken
              neverallow is reported at the manifest's `protected: true`;
              setools confirms no workload can transition into a domain
              that may touch a protected type
  k8s         every hostPath volume in --k8s files/directories (Pods and
              every workload kind, Lists, multi-document files, each
              document on its own) against the layout's hostPath roots and
              protected paths; a directory is read recursively like
              `kubectl apply -R -f DIR`: *.yaml, *.yml and *.json (exact
              case, dot-files too), hidden directories and symlinked
              directories skipped, every skipped entry noted; workloads
              pinned to kubernetes.io/os: windows are noted, not checked
              with --against STORE instead: the layout is built as a module
              for that policy store (see `build --target module`), compiled
              with the store's modules (neverallows checked whatever the
              store's expand-check says) and its file contexts proven;
              collisions resolved, refinements kept, aliased paths and every
              domain that can still reach a protected type are reported
  labels      with --labels ROOT: every object under ROOT whose
              security.selinux differs from the layout (ROOT is an image or
              node root, as in `setfiles -r`), and every declared directory
              that is missing, blocked, or has another mode or owner than
              the layout says (what `semanifest apply` would change); a
              path named with --keep-symlink that the image holds as a
              symlink out of the layout (Debian's /var/run -> /run) is
              kept as `apply --keep-symlink` keeps it, a note instead of
              apply-blocked

Exit codes: 0 clean; 1 findings at error level (or warnings with
--deny-warnings); 2 usage errors, unreadable input (including a --k8s
document that is not YAML, also reported as a k8s-invalid-yaml finding) or
a missing tool. 2 wins over 1.

Examples:
  semanifest check --k8s deploy/
  semanifest check --policy --k8s deploy/
  semanifest check --layout node.yaml --include site.cil --k8s charts/rendered/ --format sarif > check.sarif
  semanifest check --labels /sysroot --format json
  semanifest check --labels /sysroot --keep-symlink /var/run
  semanifest check --layout node.yaml --against /var/lib/selinux/default";

#[derive(Clone, Copy, ValueEnum)]
pub enum CheckFormat {
    /// Grouped by file, with source lines and a one-line "why" per rule.
    Human,
    /// Stable schema for machines (docs/check-json.md).
    Json,
    /// SARIF 2.1.0, for GitHub code scanning.
    Sarif,
}

/// Check a layout, its policy, Kubernetes YAML and on-disk labels.
#[derive(ClapArgs)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(flatten)]
    layout: super::args::LayoutArg,
    /// Extra CIL compiled with the policy (held to the layout's neverallows).
    #[arg(long = "include", value_name = "FILE.cil")]
    includes: Vec<PathBuf>,
    /// Kubernetes YAML or JSON files, or directories (read recursively:
    /// *.yaml, *.yml, *.json, like `kubectl apply -R -f`).
    #[arg(long = "k8s", value_name = "PATH")]
    k8s: Vec<PathBuf>,
    /// Check the labels of every object under ROOT.
    #[arg(long, value_name = "ROOT")]
    labels: Option<PathBuf>,
    /// With --labels: a layout path (or an ancestor of one) the image holds
    /// as a symlink out of the layout, such as Debian's /var/run → /run:
    /// kept and reported as a note, never followed, not apply-blocked; the
    /// same as `apply --keep-symlink` (repeatable).
    #[arg(long, value_name = "PATH", requires = "labels")]
    keep_symlink: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: CheckFormat,
    /// Exit 1 on warnings too.
    #[arg(long)]
    deny_warnings: bool,
    /// Run the policy phase (secilc, setools) with --k8s too; without it,
    /// `check --k8s` judges workloads from the layout alone.
    #[arg(long)]
    policy: bool,
    /// The secilc to run (default: `secilc` on PATH; with --against,
    /// libsepol's compiler in a helper process, as secilc calls it, unless
    /// this is given or libsepol.so.2 cannot be loaded).
    #[arg(long, value_name = "PATH")]
    secilc: Option<PathBuf>,
    #[command(flatten)]
    store: super::build_module::StoreArgs,
}

pub fn run(args: Args) -> Result<u8> {
    let options = CheckOptions {
        includes: args.includes.clone(),
        k8s: args.k8s.clone(),
        labels: args.labels.clone(),
        keep_symlinks: args.keep_symlink.clone(),
        secilc: args.secilc.clone(),
        policy: args.policy,
    };
    let against = match &args.store.against {
        None => None,
        Some(store) => {
            let store_options = args
                .store
                .options(args.includes.clone(), args.secilc.clone());
            Some(super::check_store::prepare(
                store,
                args.layout.path.as_deref(),
                store_options,
            )?)
        }
    };
    let parsed = match &against {
        Some(prepared) => prepared.parsed.clone(),
        None => super::parse_layout(args.layout.path.as_deref(), &policy::base_facts())?,
    };
    let (findings, input_errors, examined, not_yaml) = match parsed {
        // An invalid layout stops here: nothing downstream can be trusted.
        Err(report) => {
            let findings = report
                .diagnostics
                .iter()
                .map(|d| d.to_finding(&report.source))
                .collect();
            (findings, Vec::new(), None, 0)
        }
        Ok(parsed) => {
            node::unknown_keep(&parsed.layout, &args.keep_symlink)?;
            let outcome = match &against {
                None => check::run(&parsed, &options),
                Some(prepared) => {
                    check::run_against(&parsed, &options, &prepared.baseline, &prepared.options)
                }
            };
            (
                outcome.findings,
                outcome.input_errors,
                outcome.labels_examined,
                outcome.not_yaml,
            )
        }
    };
    print_report(&findings, args.format)?;
    if let Some(examined) = examined {
        eprintln!("{}", labels_summary(examined, &findings));
    }
    if !input_errors.is_empty() {
        return Err(super::Errors::of_messages(input_errors).into());
    }
    let summary = report::SeverityCounts::of(&findings);
    Ok(if not_yaml > 0 {
        super::EXIT_BAD_INPUT
    } else if summary.errors > 0 || (args.deny_warnings && summary.warnings > 0) {
        super::EXIT_FINDINGS
    } else {
        super::EXIT_OK
    })
}

/// The findings on standard output in `format`, ending with a newline.
fn print_report(findings: &[Finding], format: CheckFormat) -> Result<()> {
    let text = match format {
        CheckFormat::Human => report::render_human(
            findings,
            report::HumanOptions {
                color: std::io::stdout().is_terminal(),
            },
        ),
        CheckFormat::Json => report::render_json(findings),
        CheckFormat::Sarif => report::render_sarif(findings),
    };
    super::print_stdout(text.as_bytes())?;
    if !text.ends_with('\n') {
        super::print_stdout(b"\n")?;
    }
    Ok(())
}

/// `--labels`' one-line count for standard error.
fn labels_summary(examined: u64, findings: &[Finding]) -> String {
    let drift = findings
        .iter()
        .filter(|f| f.rule == &rules::LABELS_DRIFT)
        .count();
    let apply_rules = [
        &rules::APPLY_DRIFT,
        &rules::APPLY_MISSING,
        &rules::APPLY_BLOCKED,
    ];
    let apply = findings
        .iter()
        .filter(|f| apply_rules.contains(&f.rule))
        .count();
    format!(
        "labels: {examined} objects examined, {drift} with a different label; \
         {apply} differences from the layout's directories (mode, owner, missing, blocked)"
    )
}
