//! The kubens helpers as the units install them (`kubens` for
//! kubens.service, `kubensenter` for the runtime units), run for real: each
//! test gets a private mount namespace (unshare) with its own /run tmpfs and
//! a shared directory standing for /var/mnt, so nothing shows on the host.
//!
//! Each scenario runs on one CPU (`taskset -c 0`). The kernel refuses to
//! pin a mount namespace that is not newer than the pinning process's own
//! (a loop check by namespace id), and on Linux 6.18 those ids come from
//! per-CPU batches: a namespace made on another CPU can look older, and
//! `unshare --mount=FILE` then fails with EINVAL about one time in five
//! when the pinning process is itself in a fresh namespace, as here.
//! kubens.service runs in the initial namespace, older than any, where 30
//! pins out of 30 succeed on two CPUs.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

use crate::support::{stderr, tool};
use layout::manifest;
use units::{self, Image, UnitsOptions};

/// The helpers of a kubens layout, written to a temporary directory.
struct Helpers {
    dir: tempfile::TempDir,
}

impl Helpers {
    fn new() -> Self {
        let mut parsed = manifest::default_layout(&policy::base_facts()).unwrap();
        parsed.layout.node.kubens = true;
        let set = units::render(
            &parsed.layout,
            &Image::unknown(),
            &UnitsOptions {
                policy_name: "semanifest",
                layout_text: "",
            },
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        for path in [units::KUBENS_HELPER, units::KUBENSENTER] {
            let file = set.file(path).expect("kubens installs its helpers");
            assert!(file.executable);
            let name = dir.path().join(path.rsplit('/').next().unwrap());
            fs::write(&name, &file.text).unwrap();
            fs::set_permissions(&name, fs::Permissions::from_mode(0o755)).unwrap();
        }
        Helpers { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `script` (sh -eu) in a fresh private mount namespace after the
    /// prelude; `$KUBENS` and `$ENTER` are the helpers.
    fn run(&self, script: &str) -> Output {
        let prelude = "
            mount -t tmpfs tmpfs /run
            mount --make-rshared /
            mkdir -p /run/test/mnt
            mount -t tmpfs shared /run/test/mnt
            mount --make-shared /run/test/mnt
        ";
        Command::new(tool("taskset", "util-linux"))
            .args(["-c", "0"])
            .arg(tool("unshare", "util-linux"))
            .args(["--mount", "--propagation", "private", "sh", "-eu", "-c"])
            .arg(format!("{prelude}\n{script}"))
            .env("KUBENS", self.path("kubens"))
            .env("ENTER", self.path("kubensenter"))
            .env_remove("KUBENSMNT")
            .output()
            .expect("unshare runs")
    }

    /// `run`, which must succeed; its `key=value` lines.
    fn values(&self, script: &str) -> BTreeMap<String, String> {
        let output = self.run(script);
        assert!(
            output.status.success(),
            "{script}\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            stderr(&output)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

#[test]
fn start_pins_a_namespace_and_kubensenter_enters_it() {
    let helpers = Helpers::new();
    let v = helpers.values(
        r#"
        echo "start1=$("$KUBENS" start)"
        echo "env=$(cat /run/kubens/env)"
        . /run/kubens/env; export KUBENSMNT
        echo "host=$(readlink /proc/self/ns/mnt)"
        echo "inside=$("$ENTER" readlink /proc/self/ns/mnt)"
        echo "pinned=mnt:[$(stat -L -c %i /run/kubens/mnt)]"
        echo "start2=$("$KUBENS" start)"
        echo "again=$("$ENTER" readlink /proc/self/ns/mnt)"
        "$KUBENS" stop
        "$KUBENS" start >/dev/null
        echo "restarted=$("$ENTER" readlink /proc/self/ns/mnt)"
        echo "pid=$$ exec=$(sh -c 'echo $$; exec "$ENTER" sh -c "echo \$\$"' | sort -u | wc -l)"
        "#,
    );
    assert_eq!(
        v["start1"],
        "kubens: pinned a new mount namespace at /run/kubens/mnt"
    );
    assert_eq!(v["env"], "KUBENSMNT=/run/kubens/mnt");
    assert_ne!(v["host"], v["inside"], "{v:?}");
    assert_eq!(v["inside"], v["pinned"], "{v:?}");
    assert_eq!(
        v["start2"],
        "kubens: reusing the mount namespace pinned at /run/kubens/mnt"
    );
    assert_eq!(v["again"], v["inside"], "a second start reuses the pin");
    assert_eq!(
        v["restarted"], v["inside"],
        "stop and start keep the namespace"
    );
    assert!(
        v["pid"].ends_with("exec=1"),
        "kubensenter execs in place: {v:?}"
    );
}

#[test]
fn mounts_inside_stay_inside_and_host_mounts_propagate_in() {
    let helpers = Helpers::new();
    let v = helpers.values(
        r#"
        "$KUBENS" start >/dev/null
        . /run/kubens/env; export KUBENSMNT
        mkdir -p /run/test/inside /run/test/mnt/inside /run/test/mnt/late
        "$ENTER" mount -t tmpfs pod /run/test/inside
        "$ENTER" mount -t tmpfs pod /run/test/mnt/inside
        mount -t tmpfs late /run/test/mnt/late
        count() { grep -c " $1 " /proc/self/mountinfo || true; }
        echo "host_inside=$(count /run/test/inside)"
        echo "host_mnt_inside=$(count /run/test/mnt/inside)"
        echo "ns_inside=$("$ENTER" sh -c "grep -c ' /run/test/inside ' /proc/self/mountinfo")"
        echo "ns_mnt_inside=$("$ENTER" sh -c "grep -c ' /run/test/mnt/inside ' /proc/self/mountinfo")"
        echo "ns_late=$("$ENTER" sh -c "grep -c ' /run/test/mnt/late ' /proc/self/mountinfo")"
        "#,
    );
    // The pod mounts exist inside (so the greps could count them) ...
    assert_eq!(v["ns_inside"], "1", "{v:?}");
    assert_eq!(v["ns_mnt_inside"], "1", "{v:?}");
    // ... and not on the host, even below a shared directory.
    assert_eq!(v["host_inside"], "0", "{v:?}");
    assert_eq!(v["host_mnt_inside"], "0", "{v:?}");
    // A host mount made later below the shared directory appears inside.
    assert_eq!(v["ns_late"], "1", "{v:?}");
}

#[test]
fn without_a_pinned_namespace_kubensenter_runs_on_the_host() {
    let helpers = Helpers::new();
    let v = helpers.values(
        r#"
        host=$(readlink /proc/self/ns/mnt)
        same() { [ "$1" = "$host" ] && echo yes || echo no; }
        echo "unset=$(same "$("$ENTER" readlink /proc/self/ns/mnt)")"
        "$KUBENS" start >/dev/null
        "$KUBENS" stop
        echo "env_after_stop=$(test -e /run/kubens/env && echo present || echo absent)"
        unset KUBENSMNT
        [ -e /run/kubens/env ] && . /run/kubens/env
        echo "stopped=$(same "$("$ENTER" readlink /proc/self/ns/mnt)")"
        touch /run/not-a-namespace
        echo "bogus=$(same "$(KUBENSMNT=/run/not-a-namespace "$ENTER" readlink /proc/self/ns/mnt 2>/run/warning)")"
        echo "warning=$(cat /run/warning)"
        echo "control=$(same "$(KUBENSMNT=/run/kubens/mnt "$ENTER" readlink /proc/self/ns/mnt)")"
        "#,
    );
    assert_eq!(v["unset"], "yes", "{v:?}");
    assert_eq!(v["env_after_stop"], "absent", "{v:?}");
    assert_eq!(v["stopped"], "yes", "{v:?}");
    assert_eq!(v["bogus"], "yes", "{v:?}");
    assert_eq!(
        v["warning"],
        "kubensenter: /run/not-a-namespace is not a pinned mount namespace; starting readlink in the host's namespace"
    );
    // Control: the pin is still there, and naming it enters it.
    assert_eq!(v["control"], "no", "{v:?}");
}

#[test]
fn kubensmnt_moves_the_pin() {
    let helpers = Helpers::new();
    let v = helpers.values(
        r#"
        KUBENSMNT=/run/elsewhere/ns "$KUBENS" start >/dev/null
        echo "env=$(cat /run/kubens/env)"
        echo "type=$(stat -f -c %T /run/elsewhere/ns)"
        echo "default=$(test -e /run/kubens/mnt && echo present || echo absent)"
        "#,
    );
    assert_eq!(v["env"], "KUBENSMNT=/run/elsewhere/ns");
    assert_eq!(v["type"], "nsfs");
    assert_eq!(v["default"], "absent");
}

#[test]
fn bad_usage_is_refused() {
    let helpers = Helpers::new();
    for (script, message) in [
        (r#""$KUBENS""#, "usage: kubens start|stop"),
        (r#""$KUBENS" pin"#, "usage: kubens start|stop"),
        (
            r#"KUBENSMNT=mnt "$KUBENS" start"#,
            "kubens: KUBENSMNT=mnt: need an absolute path below a directory",
        ),
        (
            r#"KUBENSMNT=/mnt "$KUBENS" start"#,
            "kubens: KUBENSMNT=/mnt: need an absolute path below a directory",
        ),
        (r#""$ENTER""#, "usage: kubensenter COMMAND [ARG]..."),
    ] {
        let output = helpers.run(script);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{script}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(message),
            "{script}: {}",
            stderr(&output)
        );
    }
}
