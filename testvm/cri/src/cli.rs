//! The command line.

use clap::Parser;

/// Runs COMMAND in one container of one pod, made through the CRI
/// runtime's gRPC API as kubelet makes them (RunPodSandbox,
/// CreateContainer, StartContainer), with the pod's SELinux options,
/// hostPath mounts and logs where kubelet keeps them. Prints what the
/// container wrote, then `cri-run: exit=N label=CONTEXT pod=ID
/// container=ID` on standard error.
///
/// Exit status: the container's; 124 when it did not exit within
/// --timeout; 125 when the runtime refused a request.
///
/// Example: cri-run --type container_t --level s0:c1,c2 --mount
/// /var/mnt:/data -- sh -c 'echo hi >/data/f'
#[derive(Parser, Debug)]
#[command(name = "cri-run", version)]
pub struct Args {
    /// The runtime's CRI socket.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "/run/containerd/containerd.sock"
    )]
    pub socket: String,
    /// The image to run: one the runtime already has (nothing is
    /// pulled).
    #[arg(long, value_name = "REF", default_value = "testvm.local/busybox:1")]
    pub image: String,
    /// The pod's seLinuxOptions.type (pod level; the container's too
    /// unless --container-type). Without it, the runtime's default
    /// (lxc_contexts).
    #[arg(long = "type", value_name = "TYPE")]
    pub selinux_type: Option<String>,
    /// The container's own seLinuxOptions.type: it wins over the pod's.
    #[arg(long, value_name = "TYPE")]
    pub container_type: Option<String>,
    /// The pod's seLinuxOptions.level, as s0:c1,c2. Without it, the
    /// runtime gives the pod categories of its own.
    #[arg(long, value_name = "LEVEL")]
    pub level: Option<String>,
    /// A hostPath volume: HOST:CONTAINER, then `:ro` for a read-only one
    /// (`:rw`, the default, for a writable one). Repeat for more.
    #[arg(long = "mount", value_name = "HOST:CONTAINER[:ro|rw]", value_parser = parse_mount)]
    pub mounts: Vec<Mount>,
    /// A capability added to the runtime's default set, as a container's
    /// securityContext.capabilities.add names it (SYS_ADMIN). Repeat for
    /// more.
    #[arg(long = "cap-add", value_name = "CAP")]
    pub cap_add: Vec<String>,
    /// The pod's name (metadata.name); its namespace is `default`.
    #[arg(long, value_name = "NAME", default_value = "cri-run")]
    pub name: String,
    /// Seconds to wait for the container to exit.
    #[arg(long, value_name = "S", default_value = "120", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// Leave the pod (and its container) in place instead of removing it.
    #[arg(long)]
    pub keep: bool,
    /// The container's command and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// A hostPath volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub host: String,
    pub container: String,
    pub readonly: bool,
}

fn parse_mount(text: &str) -> Result<Mount, String> {
    let (host, rest) = text
        .split_once(':')
        .ok_or_else(|| format!("`{text}`: HOST:CONTAINER[:ro|rw]"))?;
    let (container, readonly) = match rest.rsplit_once(':') {
        Some((container, "ro")) => (container, true),
        Some((container, "rw")) => (container, false),
        Some((_, other)) => return Err(format!("`{text}`: `{other}` is neither ro nor rw")),
        None => (rest, false),
    };
    for path in [host, container] {
        if !path.starts_with('/') {
            return Err(format!("`{text}`: `{path}` is not an absolute path"));
        }
    }
    Ok(Mount {
        host: host.to_owned(),
        container: container.to_owned(),
        readonly,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts() {
        assert_eq!(
            parse_mount("/var/mnt:/data:ro"),
            Ok(Mount {
                host: "/var/mnt".into(),
                container: "/data".into(),
                readonly: true
            })
        );
        assert!(!parse_mount("/var/mnt:/data").unwrap().readonly);
        assert!(!parse_mount("/var/mnt:/data:rw").unwrap().readonly);
        assert_eq!(
            parse_mount("/a:/b:rx").unwrap_err(),
            "`/a:/b:rx`: `rx` is neither ro nor rw"
        );
        assert_eq!(
            parse_mount("var:/b").unwrap_err(),
            "`var:/b`: `var` is not an absolute path"
        );
        assert!(parse_mount("/a").is_err());
    }

    #[test]
    fn the_command_follows_the_options() {
        let args = Args::try_parse_from([
            "cri-run",
            "--type",
            "spc_t",
            "--mount",
            "/var:/host",
            "--cap-add",
            "SYS_ADMIN",
            "--",
            "sh",
            "-c",
            "ls /host",
        ])
        .unwrap();
        assert_eq!(args.selinux_type.as_deref(), Some("spc_t"));
        assert_eq!(args.command, ["sh", "-c", "ls /host"]);
        assert_eq!(args.cap_add, ["SYS_ADMIN"]);
        assert!(Args::try_parse_from(["cri-run"]).is_err());
    }
}
