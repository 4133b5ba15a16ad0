//! Manual pages and shell completions, generated from the clap definitions:
//! every page renders with `man -l` without a groff warning, the bash script
//! passes `bash -n` and completes for real in bash, and `--install-root`
//! puts everything where a distribution's packages would.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::{run, semanifest, stderr, stdout, tool};

/// Every command of the binary, as its page name.
const PAGES: [&str; 19] = [
    "semanifest",
    "semanifest-admission",
    "semanifest-apply",
    "semanifest-build",
    "semanifest-check",
    "semanifest-completions",
    "semanifest-df",
    "semanifest-diff",
    "semanifest-layout",
    "semanifest-layout-schema",
    "semanifest-layout-show",
    "semanifest-layout-validate",
    "semanifest-lookup",
    "semanifest-man",
    "semanifest-prune",
    "semanifest-relabel",
    "semanifest-rm",
    "semanifest-suggest",
    "semanifest-units",
];

/// `man -l PAGE` with groff warnings on: (rendered text, warnings).
fn render(page: &Path) -> (String, String) {
    let output = run(Command::new(tool("man", "man-db"))
        .args(["--warnings", "-l"])
        .arg(page)
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat"));
    assert!(
        output.status.success(),
        "man -l {}: {}",
        page.display(),
        stderr(&output)
    );
    // grotty's overstrike (`N\bN` for bold, `_\bx` for underline) removed.
    let mut text = String::new();
    for c in stdout(&output).chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    (text, stderr(&output))
}

fn ok(command: &mut Command) -> String {
    let output = run(command);
    assert!(output.status.success(), "{command:?}: {}", stderr(&output));
    stdout(&output)
}

#[test]
fn man_install_root_writes_every_page_and_each_renders_cleanly() {
    let root = tempfile::tempdir().unwrap();
    ok(semanifest()
        .args(["man", "--install-root"])
        .arg(root.path()));
    let dir = root.path().join("usr/share/man/man1");
    let mut written: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    let mut expected: Vec<String> = PAGES.iter().map(|p| format!("{p}.1")).collect();
    expected.sort();
    assert_eq!(written, expected);
    for page in PAGES {
        let (text, warnings) = render(&dir.join(format!("{page}.1")));
        assert_eq!(warnings, "", "{page}: groff warnings");
        assert!(
            text.contains("NAME") && text.contains("SYNOPSIS"),
            "{page}:\n{text}"
        );
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains(&format!("NAME {page} - ")),
            "{page}:\n{text}"
        );
    }
    // The top-level page lists the others; the layout page has its help text.
    let (top, _) = render(&dir.join("semanifest.1"));
    assert!(top.contains("semanifest-relabel(1)"), "{top}");
    let (layout, _) = render(&dir.join("semanifest-layout.1"));
    let layout = layout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        layout.contains("Print, validate and describe layout manifests"),
        "{layout}"
    );
}

#[test]
fn man_prints_one_page_equal_to_the_written_file() {
    let out = tempfile::tempdir().unwrap();
    ok(semanifest().args(["man", "--out"]).arg(out.path()));
    let printed = ok(semanifest().args(["man", "layout", "validate"]));
    assert_eq!(
        printed,
        fs::read_to_string(out.path().join("semanifest-layout-validate.1")).unwrap()
    );
    let top = ok(semanifest().arg("man"));
    assert_eq!(
        top,
        fs::read_to_string(out.path().join("semanifest.1")).unwrap()
    );
}

#[test]
fn man_for_an_unknown_command_is_bad_input() {
    let output = run(semanifest().args(["man", "relabell"]));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no manual page for `relabell`"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("semanifest-relabel"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn control_man_warnings_catch_a_broken_page() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("broken.1");
    let good = ok(semanifest().args(["man", "relabel"]));
    fs::write(&page, format!("{good}.nosuchrequest x\n\\fBunclosed\n")).unwrap();
    let (_, warnings) = render(&page);
    assert_ne!(warnings, "", "groff must warn about an unknown request");
}

/// Runs bash completion for `words` (the last one being completed) with the
/// installed script; returns the candidates.
fn complete(script: &Path, words: &[&str]) -> Vec<String> {
    let words_text: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE='{}'\nCOMP_POINT=${{#COMP_LINE}}\n_semanifest semanifest '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        words_text.join(" "),
        words.len() - 1,
        words.join(" "),
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let output = ok(Command::new("bash").args(["--norc", "--noprofile", "-c", &program]));
    output
        .lines()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn completions_install_root_writes_all_three_and_bash_completes() {
    let root = tempfile::tempdir().unwrap();
    ok(semanifest()
        .args(["completions", "--install-root"])
        .arg(root.path()));
    let bash = root
        .path()
        .join("usr/share/bash-completion/completions/semanifest");
    let zsh = root
        .path()
        .join("usr/share/zsh/vendor-completions/_semanifest");
    let fish = root
        .path()
        .join("usr/share/fish/vendor_completions.d/semanifest.fish");
    for (file, shell) in [(&bash, "bash"), (&zsh, "zsh"), (&fish, "fish")] {
        assert_eq!(
            fs::read_to_string(file).unwrap(),
            ok(semanifest().args(["completions", shell])),
            "{shell}"
        );
    }
    assert!(fs::read_to_string(&zsh)
        .unwrap()
        .starts_with("#compdef semanifest"));
    assert!(fs::read_to_string(&fish)
        .unwrap()
        .contains("complete -c semanifest"));

    ok(Command::new("bash").arg("-n").arg(&bash));
    assert_eq!(complete(&bash, &["semanifest", "rel"]), ["relabel"]);
    let mut layout = complete(&bash, &["semanifest", "layout", ""]);
    layout.retain(|w| !w.starts_with('-'));
    layout.sort();
    assert_eq!(layout, ["help", "schema", "show", "validate"]);
    let formats = complete(&bash, &["semanifest", "check", "--format", ""]);
    assert_eq!(formats, ["human", "json", "sarif"]);
    let shells = complete(&bash, &["semanifest", "completions", ""]);
    assert!(
        ["bash", "zsh", "fish"]
            .iter()
            .all(|s| shells.contains(&s.to_string())),
        "{shells:?}"
    );
}

#[test]
fn control_bash_n_rejects_a_broken_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("semanifest");
    let good = ok(semanifest().args(["completions", "bash"]));
    fs::write(&script, &good[..good.len() / 2]).unwrap();
    let output = run(Command::new("bash").arg("-n").arg(&script));
    assert!(
        !output.status.success(),
        "bash -n must reject half a script"
    );
}

#[test]
fn completions_need_a_shell_unless_installing() {
    let output = run(semanifest().arg("completions"));
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("<SHELL>"), "{}", stderr(&output));
}
