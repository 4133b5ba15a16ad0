//! The CRI calls kubelet makes for a pod with one container, and the wait
//! for it to exit.

use std::collections::HashMap;
use std::fs;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use hyper_util::rt::TokioIo;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{
    security_profile::ProfileType, Capability, ContainerConfig, ContainerMetadata, ContainerState,
    ContainerStatusRequest, CreateContainerRequest, ImageSpec, LinuxContainerConfig,
    LinuxContainerSecurityContext, LinuxPodSandboxConfig, LinuxSandboxSecurityContext, Mount,
    MountPropagation, NamespaceMode, NamespaceOption, PodSandboxConfig, PodSandboxMetadata,
    RemovePodSandboxRequest, RunPodSandboxRequest, SeLinuxOption, SecurityProfile,
    StartContainerRequest, StopPodSandboxRequest,
};
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};
use tower::service_fn;

use crate::cli::Args;
use crate::log;

/// What kubelet masks and makes read-only in a container that is not
/// privileged (its defaults, sent with every CreateContainer).
const MASKED_PATHS: [&str; 11] = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];
const READONLY_PATHS: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];
const CONTAINER: &str = "main";
const NAMESPACE: &str = "default";

/// What came of the pod.
pub struct Outcome {
    pub output: String,
    /// The container's exit code; `None` when it did not exit in time.
    pub exit: Option<i32>,
    /// The process label the runtime gave the container.
    pub label: Option<String>,
    pub pod: String,
    pub container: String,
}

type Cri = RuntimeServiceClient<Channel>;

async fn connect(socket: &str) -> Result<Cri> {
    let path = socket.to_owned();
    // The URI is required and unused: the connector dials the socket.
    let channel = Endpoint::try_from("http://[::]:50051")?
        .connect_with_connector(service_fn(move |_: Uri| {
            let path = path.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(path).await?)) }
        }))
        .await
        .with_context(|| format!("cannot connect to the CRI socket {socket}"))?;
    Ok(RuntimeServiceClient::new(channel))
}

/// The pod, its container, the wait, the logs; the pod is removed
/// afterwards unless `--keep`.
pub async fn run(args: &Args) -> Result<Outcome> {
    let mut cri = connect(&args.socket).await?;
    let uid = fs::read_to_string("/proc/sys/kernel/random/uuid")
        .context("cannot read a pod UID from /proc/sys/kernel/random/uuid")?
        .trim()
        .to_owned();
    // kubelet makes the pod's log directory before it asks for the pod.
    let log_directory = format!("/var/log/pods/{NAMESPACE}_{}_{uid}", args.name);
    fs::create_dir_all(&log_directory)
        .with_context(|| format!("cannot create the pod's log directory {log_directory}"))?;
    let sandbox = sandbox_config(args, &uid, &log_directory);
    let pod = cri
        .run_pod_sandbox(RunPodSandboxRequest {
            config: Some(sandbox.clone()),
            runtime_handler: String::new(),
        })
        .await
        .map_err(refused("RunPodSandbox"))?
        .into_inner()
        .pod_sandbox_id;
    let outcome = container(&mut cri, args, &pod, &sandbox, &log_directory).await;
    if !args.keep {
        let removed = remove(&mut cri, &pod).await;
        if let (Ok(_), Err(error)) = (&outcome, removed) {
            return Err(error);
        }
    }
    outcome
}

fn sandbox_config(args: &Args, uid: &str, log_directory: &str) -> PodSandboxConfig {
    PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: args.name.clone(),
            uid: uid.to_owned(),
            namespace: NAMESPACE.to_owned(),
            attempt: 0,
        }),
        // kubelet names the host only for a pod with a network of its own;
        // this one has the node's (and its UTS namespace).
        hostname: String::new(),
        log_directory: log_directory.to_owned(),
        labels: pod_labels(args, uid),
        linux: Some(LinuxPodSandboxConfig {
            security_context: Some(LinuxSandboxSecurityContext {
                namespace_options: Some(namespaces()),
                selinux_options: selinux(args.selinux_type.as_deref(), args.level.as_deref()),
                seccomp: Some(unconfined()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// kubelet's labels on a pod and its containers.
fn pod_labels(args: &Args, uid: &str) -> HashMap<String, String> {
    HashMap::from([
        ("io.kubernetes.pod.name".to_owned(), args.name.clone()),
        (
            "io.kubernetes.pod.namespace".to_owned(),
            NAMESPACE.to_owned(),
        ),
        ("io.kubernetes.pod.uid".to_owned(), uid.to_owned()),
    ])
}

/// hostNetwork (no CNI plugin is needed), the pod's own PID and IPC
/// namespaces.
fn namespaces() -> NamespaceOption {
    NamespaceOption {
        network: NamespaceMode::Node.into(),
        pid: NamespaceMode::Pod.into(),
        ipc: NamespaceMode::Pod.into(),
        ..Default::default()
    }
}

/// What kubelet sends when the pod asks for no seccomp profile.
fn unconfined() -> SecurityProfile {
    SecurityProfile {
        profile_type: ProfileType::Unconfined.into(),
        localhost_ref: String::new(),
    }
}

/// `seLinuxOptions`, as kubelet passes them: absent when nothing is set.
fn selinux(selinux_type: Option<&str>, level: Option<&str>) -> Option<SeLinuxOption> {
    if selinux_type.is_none() && level.is_none() {
        return None;
    }
    Some(SeLinuxOption {
        r#type: selinux_type.unwrap_or_default().to_owned(),
        level: level.unwrap_or_default().to_owned(),
        ..Default::default()
    })
}

fn container_config(args: &Args, uid: &str) -> ContainerConfig {
    // The container's own seLinuxOptions replace the pod's whole, as in
    // kubelet's effective security context.
    let selinux_options = match &args.container_type {
        Some(container_type) => selinux(Some(container_type), None),
        None => selinux(args.selinux_type.as_deref(), args.level.as_deref()),
    };
    let mut labels = pod_labels(args, uid);
    labels.insert(
        "io.kubernetes.container.name".to_owned(),
        CONTAINER.to_owned(),
    );
    ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: CONTAINER.to_owned(),
            attempt: 0,
        }),
        image: Some(ImageSpec {
            image: args.image.clone(),
            ..Default::default()
        }),
        command: args.command.clone(),
        mounts: args
            .mounts
            .iter()
            .map(|mount| Mount {
                container_path: mount.container.clone(),
                host_path: mount.host.clone(),
                readonly: mount.readonly,
                // kubelet asks for no relabel of a hostPath volume.
                selinux_relabel: false,
                propagation: MountPropagation::PropagationPrivate.into(),
                ..Default::default()
            })
            .collect(),
        log_path: format!("{CONTAINER}/0.log"),
        labels,
        linux: Some(LinuxContainerConfig {
            security_context: Some(LinuxContainerSecurityContext {
                namespace_options: Some(namespaces()),
                selinux_options,
                capabilities: (!args.cap_add.is_empty()).then(|| Capability {
                    add_capabilities: args.cap_add.clone(),
                    ..Default::default()
                }),
                masked_paths: MASKED_PATHS.map(str::to_owned).to_vec(),
                readonly_paths: READONLY_PATHS.map(str::to_owned).to_vec(),
                seccomp: Some(unconfined()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

async fn container(
    cri: &mut Cri,
    args: &Args,
    pod: &str,
    sandbox: &PodSandboxConfig,
    log_directory: &str,
) -> Result<Outcome> {
    let uid = sandbox
        .metadata
        .as_ref()
        .map(|m| m.uid.clone())
        .unwrap_or_default();
    let container = cri
        .create_container(CreateContainerRequest {
            pod_sandbox_id: pod.to_owned(),
            config: Some(container_config(args, &uid)),
            sandbox_config: Some(sandbox.clone()),
        })
        .await
        .map_err(refused("CreateContainer"))?
        .into_inner()
        .container_id;
    cri.start_container(StartContainerRequest {
        container_id: container.clone(),
    })
    .await
    .map_err(refused("StartContainer"))?;

    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    let (exit, label) = loop {
        let status = cri
            .container_status(ContainerStatusRequest {
                container_id: container.clone(),
                verbose: true,
            })
            .await
            .map_err(refused("ContainerStatus"))?
            .into_inner();
        let label = status.info.get("info").and_then(|info| process_label(info));
        let exited = status
            .status
            .as_ref()
            .filter(|s| s.state == i32::from(ContainerState::ContainerExited))
            .map(|s| s.exit_code);
        if exited.is_some() || Instant::now() >= deadline {
            break (exited, label);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let log_path = format!("{log_directory}/{CONTAINER}/0.log");
    Ok(Outcome {
        output: log::output(&settled(&log_path).await),
        exit,
        label,
        pod: pod.to_owned(),
        container,
    })
}

/// The log file once it stops growing (the runtime copies the last of
/// the container's output after the exit).
async fn settled(path: &str) -> String {
    let mut last = fs::read_to_string(path).unwrap_or_default();
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = fs::read_to_string(path).unwrap_or_default();
        if now.len() == last.len() {
            return now;
        }
        last = now;
    }
    last
}

/// `runtimeSpec.process.selinuxLabel` of the verbose status's JSON.
fn process_label(info: &str) -> Option<String> {
    let info: serde_json::Value = serde_json::from_str(info).ok()?;
    info.pointer("/runtimeSpec/process/selinuxLabel")?
        .as_str()
        .filter(|label| !label.is_empty())
        .map(str::to_owned)
}

async fn remove(cri: &mut Cri, pod: &str) -> Result<()> {
    cri.stop_pod_sandbox(StopPodSandboxRequest {
        pod_sandbox_id: pod.to_owned(),
    })
    .await
    .map_err(refused("StopPodSandbox"))?;
    cri.remove_pod_sandbox(RemovePodSandboxRequest {
        pod_sandbox_id: pod.to_owned(),
    })
    .await
    .map_err(refused("RemovePodSandbox"))?;
    Ok(())
}

/// A refused request as an error naming the call and the runtime's
/// message.
fn refused(call: &'static str) -> impl Fn(tonic::Status) -> anyhow::Error {
    move |status| anyhow::anyhow!("{call} refused ({:?}): {}", status.code(), status.message())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_comes_from_the_verbose_status() {
        let info = r#"{"sandboxID":"x","runtimeSpec":{"process":{"args":["sh"],"selinuxLabel":"system_u:system_r:container_t:s0:c4,c9"}}}"#;
        assert_eq!(
            process_label(info).as_deref(),
            Some("system_u:system_r:container_t:s0:c4,c9")
        );
        assert_eq!(process_label(r#"{"runtimeSpec":{"process":{}}}"#), None);
        assert_eq!(process_label("not json"), None);
    }

    #[test]
    fn selinux_options_as_kubelet_sends_them() {
        assert_eq!(selinux(None, None), None);
        let options = selinux(Some("container_t"), Some("s0:c1,c2")).unwrap();
        assert_eq!(
            (options.r#type.as_str(), options.level.as_str()),
            ("container_t", "s0:c1,c2")
        );
        assert!(options.user.is_empty() && options.role.is_empty());
    }
}
