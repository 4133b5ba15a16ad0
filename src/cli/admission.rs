//! `semanifest admission`: the layout's hostPath judgement as admission
//! policy for the API server.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args as ClapArgs, ValueEnum};

use super::args::LayoutArg;

const AFTER_HELP: &str = "\
The objects refuse, at the API server, what `semanifest check --k8s` reports
as hostPath errors, judging each container in the domain its
seLinuxOptions.type selects (the pod domain when it names none): paths its
domain is not granted (outside a workload domain's hostPath roots, outside an
agent's layout paths and host classes), protected paths (or their
ancestors), privileged containers and SELinux types that are no domain of
the layout mounting a hostPath, invalid paths and subPaths. They judge Pods, PodTemplates,
ReplicationControllers, Deployments, ReplicaSets, StatefulSets, DaemonSets,
Jobs, CronJobs and PersistentVolumes; pods pinned to another OS are skipped.

Formats (files written by --out DIR):
  vap         validatingadmissionpolicy.yaml, validatingadmissionpolicybinding.yaml
              (admissionregistration.k8s.io/v1, Kubernetes 1.30 or later)
  kyverno     clusterpolicy.yaml (Kyverno 1.13 or later, CEL rule)
  gatekeeper  constrainttemplate.yaml, constraint.yaml (Rego; apply the
              template first, the constraint once its CRD exists)

Roll out with --action warn (clients see warnings, nothing is refused), read
them, then --action deny. What only the node enforces (symlinks, subPath
expansion, paths made at run time) is in docs/admission.md.

Examples:
  semanifest admission | kubectl apply -f -
  semanifest admission --layout node.yaml --action warn --out policy/
  semanifest admission --format kyverno --action audit > clusterpolicy.yaml";

/// Emit admission policy (ValidatingAdmissionPolicy, Kyverno, Gatekeeper)
/// that makes the API server refuse the hostPath volumes the layout forbids.
#[derive(ClapArgs)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(flatten)]
    layout: LayoutArg,
    /// Which admission controller to write for.
    #[arg(long, value_enum, default_value = "vap")]
    format: FormatChoice,
    /// What the cluster does with an object the layout forbids.
    #[arg(long, value_enum, default_value = "deny")]
    action: ActionChoice,
    /// Write one file per object into DIR (made if missing) instead of
    /// printing one YAML stream.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatChoice {
    /// ValidatingAdmissionPolicy and its binding.
    Vap,
    /// Kyverno ClusterPolicy.
    Kyverno,
    /// Gatekeeper ConstraintTemplate and constraint.
    Gatekeeper,
}

#[derive(Clone, Copy, ValueEnum)]
enum ActionChoice {
    /// Refuse the object.
    Deny,
    /// Admit it; the client gets a warning.
    Warn,
    /// Admit it; the violation is recorded (audit log, policy report).
    Audit,
}

pub fn run(args: Args) -> Result<u8> {
    let parsed = super::load_layout(args.layout.path.as_deref())?;
    let judgement = admission::Judgement::of(&parsed);
    let format = match args.format {
        FormatChoice::Vap => admission::Format::Vap,
        FormatChoice::Kyverno => admission::Format::Kyverno,
        FormatChoice::Gatekeeper => admission::Format::Gatekeeper,
    };
    let action = match args.action {
        ActionChoice::Deny => admission::Action::Deny,
        ActionChoice::Warn => admission::Action::Warn,
        ActionChoice::Audit => admission::Action::Audit,
    };
    let documents = admission::render(&judgement, format, action)?;
    match &args.out {
        None => super::print_stdout(admission::stream(&documents).as_bytes())?,
        Some(dir) => {
            let root = super::output_root(dir)?;
            for document in &documents {
                root.write_file(
                    format!("/{}", document.file_name).as_bytes(),
                    document.yaml.as_bytes(),
                    0o644,
                )
                .with_context(|| format!("{}/{}", dir.display(), document.file_name))?;
                eprintln!("wrote {}", dir.join(document.file_name).display());
            }
        }
    }
    Ok(super::EXIT_OK)
}
