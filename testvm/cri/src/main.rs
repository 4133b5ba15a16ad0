//! `cri-run`: one pod with one container, made through a CRI runtime's
//! gRPC API (containerd's CRI plugin) the way kubelet makes them:
//! RunPodSandbox, CreateContainer and StartContainer with the pod's and
//! the container's `selinux_options`, hostPath mounts and the pod's log
//! directory; then it waits for the container to exit, prints what it
//! wrote (from the CRI log file, as `kubectl logs` reads it) and removes
//! the pod. The VM suite's scenarios run it in the guest (testvm/README.md,
//! "cri-run").
//!
//! Standard output: the container's output. Standard error: one summary
//! line, `cri-run: exit=N label=CONTEXT pod=ID container=ID`, the label
//! being the process label the runtime gave the container (its verbose
//! status, `runtimeSpec.process.selinuxLabel`). Exit status: the
//! container's; 124 when it did not exit in time; 125 when the runtime
//! refused a request (the error follows on standard error).

mod cli;
mod log;
mod pod;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cri-run: cannot start the async runtime: {error}");
            return ExitCode::from(125);
        }
    };
    match runtime.block_on(pod::run(&args)) {
        Ok(outcome) => {
            print!("{}", outcome.output);
            eprintln!(
                "cri-run: exit={} label={} pod={} container={}",
                outcome.exit.map_or("timeout".to_owned(), |c| c.to_string()),
                outcome.label.as_deref().unwrap_or("-"),
                short(&outcome.pod),
                short(&outcome.container),
            );
            match outcome.exit {
                Some(code) => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)),
                None => ExitCode::from(124),
            }
        }
        Err(error) => {
            eprintln!("cri-run: {error:#}");
            ExitCode::from(125)
        }
    }
}

/// The first 12 characters of an ID, as crictl shows them.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}
