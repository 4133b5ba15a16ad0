//! `semanifest suggest`: agent domains for the workloads a cluster runs.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use k8s::{Status, Suggestion, WorkloadSuggestion};
use serde::Serialize;

const AFTER_HELP: &str = "\
For every Linux workload (Pod, Deployment, DaemonSet, StatefulSet, Job,
CronJob, ReplicaSet, ReplicationController, PodTemplate) whose hostPath
volumes no domain of the layout grants (judged exactly as `check --k8s`
judges them), suggest picks the first domain that grants them all, or
writes a new agent domain of its own named after the workload
(`fluent-bit` → key `fluent-bit`, type `fluent_bit_t`; `-2`, `_2_t`… when
taken) holding exactly its volumes: readOnly mounts read, others write;
kernel filesystems, devices, runtime sockets, CNI files and kernel modules
through the host class that covers them (each named in a warning); layout
paths by their declared entry, or by a new `paths:` entry below the
deepest declared one.

It never grants a protected path and never confines a privileged
container: such workloads stay errors, and the report says why and what
to do instead.

Writes DIR/layout.yaml (BASE's text with the new domains and paths
inserted, each under a comment naming its workload) and every input
manifest under DIR/k8s/ (a directory's files at their paths below it, a
file by its name), with seLinuxOptions.type set on each workload moved;
the rest of every file is unchanged. DIR must be empty unless --force.

Then: `semanifest build --layout DIR/layout.yaml --out build/` proves the
new domains against every protection, and
`semanifest check --layout DIR/layout.yaml --k8s DIR/k8s` reports only
what suggest could not fix.

Exit codes: 0 every workload runs confined in a domain granting its
volumes; 1 some could not (protected paths, privileged containers, paths
outside the layout); 2 bad input (unreadable file, invalid YAML, invalid
layout) or DIR not empty.

Examples:
  semanifest suggest --k8s deploy/ --out suggested/
  semanifest suggest --layout node.yaml --k8s rendered/ --out suggested/ --format json";

/// Suggest agent domains for workloads whose hostPaths no domain fits.
#[derive(ClapArgs)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The base layout (default: the embedded one).
    #[command(flatten)]
    layout: super::args::LayoutArg,
    /// Kubernetes YAML or JSON files, or directories (read recursively:
    /// *.yaml, *.yml, *.json, like `kubectl apply -R -f`).
    #[arg(long = "k8s", value_name = "PATH", required = true)]
    k8s: Vec<PathBuf>,
    /// The directory to write layout.yaml and k8s/ into.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Write into DIR even if it is not empty (files of the same names are
    /// replaced).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    format: super::args::FormatArg,
}

/// `--format json` (docs/suggest-json.md).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    layout: String,
    manifests: Vec<ManifestReport>,
    workloads: &'a [WorkloadSuggestion],
    summary: Summary,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ManifestReport {
    input: String,
    output: String,
    patched: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    workloads: usize,
    fits: usize,
    confined: usize,
    not_confined: usize,
    new_domains: usize,
}

pub fn run(args: Args) -> Result<u8> {
    let facts = policy::base_facts();
    let parsed = super::load_layout_with(args.layout.path.as_deref(), &facts)?;
    let loaded = k8s::load_paths(&args.k8s);
    if !loaded.errors.is_empty() {
        return Err(super::Errors::of_messages(&loaded.errors).into());
    }
    if !loaded.manifests.invalid.is_empty() {
        return Err(super::Errors::of_messages(&loaded.manifests.invalid).into());
    }
    let outputs = output_names(&args.k8s, &loaded.sources)?;
    refuse_non_empty(&args.out, args.force)?;
    let suggestion = k8s::suggest(&parsed, &facts, &loaded.manifests, &loaded.sources)?;

    let root = super::output_root(&args.out)?;
    let layout_path = args.out.join("layout.yaml");
    root.write_file(b"/layout.yaml", suggestion.layout_text.as_bytes(), 0o644)
        .with_context(|| layout_path.display().to_string())?;
    let mut manifests = Vec::new();
    for (file, relative) in suggestion.files.iter().zip(&outputs) {
        let key = [b"/k8s/".as_slice(), relative.as_os_str().as_bytes()].concat();
        let output = args.out.join("k8s").join(relative);
        root.write_file(&key, file.text.as_bytes(), 0o644)
            .with_context(|| output.display().to_string())?;
        manifests.push(ManifestReport {
            input: file.name.clone(),
            output: output.display().to_string(),
            patched: file.patched,
        });
    }

    let summary = summary(&suggestion);
    if args.format.is_json() {
        super::print_json(
            1,
            &Report {
                layout: layout_path.display().to_string(),
                manifests,
                workloads: &suggestion.workloads,
                summary,
            },
        )?;
    } else {
        super::print_stdout(human(&suggestion, &summary, &layout_path, &manifests).as_bytes())?;
    }
    Ok(if suggestion.all_confined() {
        super::EXIT_OK
    } else {
        super::EXIT_FINDINGS
    })
}

/// Where each source goes below `DIR/k8s`: a directory operand's files at
/// their paths below it, a file operand by its name. Two inputs landing on
/// one name is an error.
fn output_names(
    operands: &[PathBuf],
    sources: &[std::sync::Arc<k8s::SourceFile>],
) -> Result<Vec<PathBuf>> {
    let mut taken: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut names = Vec::new();
    for source in sources {
        let path = Path::new(source.name());
        let relative = operands
            .iter()
            .filter(|operand| operand.is_dir())
            .find_map(|operand| path.strip_prefix(operand).ok())
            .map(Path::to_path_buf)
            .or_else(|| path.file_name().map(PathBuf::from))
            .with_context(|| format!("{}: no file name to write it under", source.name()))?;
        if let Some(other) = taken.insert(relative.clone(), source.name().to_owned()) {
            bail!(
                "{} and {} would both be written as k8s/{}; pass them in separate runs",
                other,
                source.name(),
                relative.display()
            );
        }
        names.push(relative);
    }
    Ok(names)
}

fn refuse_non_empty(dir: &Path, force: bool) -> Result<()> {
    if force {
        return Ok(());
    }
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "{}: not empty; suggest writes into an empty directory (or pass --force to \
                     replace the files it writes)",
                    dir.display()
                );
            }
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error).with_context(|| format!("{}: cannot read", dir.display())),
    }
}

fn summary(suggestion: &Suggestion) -> Summary {
    let count = |status| {
        suggestion
            .workloads
            .iter()
            .filter(|w| w.status == status)
            .count()
    };
    Summary {
        workloads: suggestion.workloads.len(),
        fits: count(Status::Fits),
        confined: count(Status::Confined),
        not_confined: count(Status::NotConfined),
        new_domains: suggestion
            .workloads
            .iter()
            .filter(|w| w.domain.as_ref().is_some_and(|d| d.new))
            .count(),
    }
}

fn human(
    suggestion: &Suggestion,
    summary: &Summary,
    layout_path: &Path,
    manifests: &[ManifestReport],
) -> String {
    let mut out = String::new();
    for workload in &suggestion.workloads {
        let status = match workload.status {
            Status::Fits => "fits",
            Status::Confined => "confined",
            Status::NotConfined => "NOT CONFINED",
        };
        out.push_str(&format!(
            "{} ({}:{}:{}): {status}\n",
            workload.display(),
            workload.file,
            workload.line,
            workload.column
        ));
        match &workload.domain {
            Some(domain) if domain.new => out.push_str(&format!(
                "  domain: {} (new agent domain `{}`)\n",
                domain.selinux_type, domain.key
            )),
            Some(domain) => out.push_str(&format!(
                "  domain: {} (the layout's `{}`)\n",
                domain.selinux_type, domain.key
            )),
            None => out.push_str("  domain: none\n"),
        }
        if workload.patched {
            out.push_str("  manifest: seLinuxOptions.type set\n");
        }
        for grant in &workload.grants {
            let what = match (&grant.host_class, &grant.layout_path) {
                (Some(class), _) => format!("host class {class}"),
                (None, Some(path)) if grant.new_path => format!("{path} (new path)"),
                (None, Some(path)) => path.clone(),
                (None, None) => String::new(),
            };
            out.push_str(&format!(
                "  grant: {what}: {} (volume `{}`, {})\n",
                grant.level, grant.volume, grant.host_path
            ));
        }
        for warning in &workload.warnings {
            out.push_str(&format!("  warning: {warning}\n"));
        }
        for error in &workload.errors {
            out.push_str(&format!("  error: {error}\n"));
        }
        for remaining in &workload.remaining {
            out.push_str(&format!("  check still reports: {remaining}\n"));
        }
    }
    out.push_str(&format!(
        "{} workload{} mounting hostPaths: {} fit their domain, {} confined, {} not confined; \
         {} new agent domain{}\n",
        summary.workloads,
        if summary.workloads == 1 { "" } else { "s" },
        summary.fits,
        summary.confined,
        summary.not_confined,
        summary.new_domains,
        if summary.new_domains == 1 { "" } else { "s" },
    ));
    out.push_str(&format!("wrote {}\n", layout_path.display()));
    let patched = manifests.iter().filter(|m| m.patched > 0).count();
    out.push_str(&format!(
        "wrote {} manifest{} under {} ({patched} patched)\n",
        manifests.len(),
        if manifests.len() == 1 { "" } else { "s" },
        layout_path.with_file_name("k8s").display()
    ));
    out
}
