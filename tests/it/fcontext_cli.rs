//! `semanifest lookup`: output format, byte-exact paths, `--from`, exit codes.

use crate::support::fc_oracle;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;

use assert_cmd::Command;

const FC: &str = "\
/srv(/.*)?      u:r:srv_t:s0
/srv/d  -d      u:r:srv_dir_t:s0
/srv/skip       <<none>>
";

fn fc_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("file_contexts");
    std::fs::write(&path, FC).expect("write");
    (dir, path)
}

fn lookup() -> Command {
    let mut command = Command::cargo_bin("semanifest").expect("binary");
    command.arg("lookup");
    command
}

#[test]
fn prints_path_tab_context_in_input_order() {
    let (_dir, fc) = fc_file();
    let output = lookup()
        .arg("--file-contexts")
        .arg(&fc)
        .args(["/srv/d", "/srv/skip", "/elsewhere", "/srv//d/"])
        .output()
        .expect("runs");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8(output.stdout).expect("utf8"),
        "/srv/d\tu:r:srv_dir_t:s0\n/srv/skip\t<<none>>\n/elsewhere\t<<none>>\n/srv//d/\tu:r:srv_dir_t:s0\n"
    );
}

#[test]
fn mode_selects_typed_specs() {
    let (_dir, fc) = fc_file();
    lookup()
        .arg("--file-contexts")
        .arg(&fc)
        .args(["--mode", "file", "/srv/d"])
        .assert()
        .success()
        .stdout("/srv/d\tu:r:srv_t:s0\n");
}

#[test]
fn non_utf8_paths_are_echoed_byte_for_byte() {
    let (_dir, fc) = fc_file();
    let path = OsStr::from_bytes(b"/srv/\xff\xfe name");
    let output = lookup()
        .arg("--file-contexts")
        .arg(&fc)
        .arg(path)
        .output()
        .expect("runs");
    assert!(output.status.success());
    assert_eq!(output.stdout, b"/srv/\xff\xfe name\tu:r:srv_t:s0\n");
}

#[test]
fn from_reads_newline_separated_paths_after_the_arguments() {
    let (dir, fc) = fc_file();
    let list = dir.path().join("paths");
    std::fs::write(&list, b"/srv/a\n/srv/\x80\n\n/srv/skip").expect("write");
    let output = lookup()
        .arg("--file-contexts")
        .arg(&fc)
        .arg("--from")
        .arg(&list)
        .arg("/first")
        .output()
        .expect("runs");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        output.stdout,
        b"/first\t<<none>>\n/srv/a\tu:r:srv_t:s0\n/srv/\x80\tu:r:srv_t:s0\n\t<<none>>\n/srv/skip\t<<none>>\n"
    );
    // Standard input too.
    lookup()
        .arg("--file-contexts")
        .arg(&fc)
        .args(["--from", "-"])
        .write_stdin("/srv/x\n")
        .assert()
        .success()
        .stdout("/srv/x\tu:r:srv_t:s0\n");
}

#[test]
fn bad_file_contexts_exits_2_with_file_and_line() {
    let (dir, _) = fc_file();
    let bad = dir.path().join("bad_fc");
    std::fs::write(&bad, "/ok u:r:t:s0\n/oops -z u:r:t:s0\n").expect("write");
    let output = lookup()
        .arg("--file-contexts")
        .arg(&bad)
        .arg("/ok")
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{}:2: invalid file type `-z`", bad.display())),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn layout_compiles_the_manifest_and_answers_from_it() {
    let layout = concat!(env!("CARGO_MANIFEST_DIR"), "/layouts/structured-var.yaml");
    let output = lookup()
        .args([
            "--layout",
            layout,
            "/var/lib/etcd/member",
            "/var/mntx",
            "/proc/1",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "/var/lib/etcd/member\tsystem_u:object_r:etcd_var_t:s0\n/var/mntx\tsystem_u:object_r:var_t:s0\n/proc/1\t<<none>>\n"
    );
    // A missing manifest is bad input, named.
    let output = lookup()
        .args(["--layout", "/no/such.yaml", "/var"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/no/such.yaml"));
}

#[test]
fn help_teaches_with_an_example() {
    let output = lookup().arg("--help").output().expect("runs");
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("semanifest lookup --file-contexts"), "{help}");
    assert!(help.contains("<<none>>"), "{help}");
}

/// The CLI answers like libselinux too (the library is tested in depth
/// elsewhere; this guards the plumbing: modes, bytes, order).
#[test]
fn cli_agrees_with_libselinux() {
    let (_dir, fc) = fc_file();
    let oracle = fc_oracle::LibSelinux::open(&fc).expect("libselinux");
    for (flag, kind) in [
        ("dir", selabel::FileKind::Dir),
        ("sock", selabel::FileKind::Socket),
    ] {
        let output = lookup()
            .arg("--file-contexts")
            .arg(&fc)
            .args(["--mode", flag, "/srv/d", "/srv/skip"])
            .output()
            .expect("runs");
        let text = String::from_utf8(output.stdout).expect("utf8");
        for (line, key) in text.lines().zip(["/srv/d", "/srv/skip"]) {
            let expected = match oracle.lookup(key.as_bytes(), kind) {
                fc_oracle::Answer::Label(context) => context,
                _ => "<<none>>".to_owned(),
            };
            assert_eq!(line, format!("{key}\t{expected}"));
        }
    }
}

#[test]
fn newline_in_an_argument_is_refused_before_any_output() {
    let (_dir, fc) = fc_file();
    let output = lookup()
        .arg("--file-contexts")
        .arg(&fc)
        .args(["/srv/ok", "/srv/a\nb"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("newline"));
    // Control: without it the same command succeeds.
    lookup()
        .arg("--file-contexts")
        .arg(&fc)
        .arg("/srv/ok")
        .assert()
        .success();
}
