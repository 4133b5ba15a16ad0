//! What Cargo cannot check about the layering, read from the source:
//! within each crate of the workspace, no module depends on a sibling that
//! depends back on it, directly or through others (at every level: a
//! crate's top modules, the submodules of each, the CLI's files); no two
//! modules share a name for different things; and ARCHITECTURE.md lists the
//! dependencies between the crates that their manifests declare. Which
//! crate may use which is Cargo's to enforce: a crate names only the crates
//! it depends on, and Cargo refuses a cycle between them.
//!
//! A module depends on another when its code names it: `use` trees and
//! `crate::`/`super::`/`self::` paths anywhere in the code (comments and
//! string literals are not code). A path to an item counts as a dependency
//! on the module that holds it (or re-exports it). A module's own items
//! used by its submodules (`super::Item`), and a module using its own
//! submodules, are how a module is built and are not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A module, as its path below the crate root (`["k8s", "audit"]`).
type ModPath = Vec<String>;

/// One crate's source: every file's module path and its code (comments
/// and literals blanked, line breaks kept).
struct Crate {
    modules: BTreeMap<ModPath, String>,
}

/// Where a module names another.
#[derive(Clone, Debug)]
struct Reference {
    from: ModPath,
    line: usize,
    target: ModPath,
}

fn display(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

/// Blanks comments, string, byte-string, raw-string and char literals,
/// keeping line breaks so that line numbers stay right.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
            && {
                let start = if c == 'b' { i + 2 } else { i + 1 };
                let hashes = chars[start..].iter().take_while(|&&h| h == '#').count();
                chars.get(start + hashes) == Some(&'"')
            }
        {
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[start..].iter().take_while(|&&h| h == '#').count();
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = start + hashes + 1;
            let end = chars[body..]
                .windows(close.len())
                .position(|w| w.iter().copied().eq(close.chars()))
                .map_or(chars.len(), |at| body + at + close.len());
            for &ch in &chars[i..end] {
                out.push(blank(ch));
            }
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1b}'), or a lifetime ('a).
            let end = if next == Some('\\') {
                chars[i + 2..]
                    .iter()
                    .position(|&q| q == '\'')
                    .map(|at| i + 2 + at + 1)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    for &ch in &chars[i..end] {
                        out.push(blank(ch));
                    }
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Modules written inline (`mod tests { … }`): their extent and name, outer
/// ones first.
fn inline_modules(code: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    for (at, _) in code.match_indices("mod ") {
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let rest = &code[at + 4..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let mut depth = 0;
        let close = code[open..]
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map_or(code.len(), |(i, _)| open + i);
        found.push((open..close, name));
    }
    found
}

/// The full paths of a `use` tree (`a::{b, c::{d, self}}` → `a::b`,
/// `a::c::d`, `a::c`), without renames.
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    fn parse(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        match tree.find('{') {
            Some(open) => {
                let head: Vec<String> = segments(tree[..open].trim_end_matches("::"));
                let mut base = prefix.to_vec();
                base.extend(head);
                let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
                let mut depth = 0;
                let mut start = 0;
                for (at, ch) in inner.char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            parse(&base, &inner[start..at], out);
                            start = at + 1;
                        }
                        _ => {}
                    }
                }
                parse(&base, &inner[start..], out);
            }
            None => {
                let path = tree.split(" as ").next().unwrap_or(tree);
                let mut full = prefix.to_vec();
                full.extend(segments(path).into_iter().filter(|s| s != "*"));
                if full.last().is_some_and(|s| s == "self") {
                    full.pop();
                }
                out.push(full);
            }
        }
    }
    let mut out = Vec::new();
    parse(&[], tree, &mut out);
    out
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

impl Crate {
    /// The crate rooted at `root` (`lib.rs` or `main.rs`) in `files`
    /// (path below `src/` → text), keeping only files below `dirs`.
    fn new(files: &BTreeMap<String, String>, root: &str, belongs: impl Fn(&str) -> bool) -> Self {
        let mut modules = BTreeMap::new();
        for (file, text) in files {
            if !(file == root || belongs(file)) {
                continue;
            }
            let path = if file == root {
                Vec::new()
            } else {
                let stem = file.trim_end_matches(".rs").trim_end_matches("/mod");
                stem.split('/').map(str::to_owned).collect()
            };
            modules.insert(path, code_only(text));
        }
        Crate { modules }
    }

    /// The module a path names: its longest prefix that is a module.
    fn module_of(&self, path: &[String]) -> ModPath {
        (0..=path.len())
            .rev()
            .map(|len| path[..len].to_vec())
            .find(|prefix| self.modules.contains_key(prefix))
            .unwrap_or_default()
    }

    /// `path` as written in module `at`, made absolute; `None` for paths
    /// into other crates.
    fn absolute(&self, at: &[String], path: &[String]) -> Option<ModPath> {
        let (first, rest) = path.split_first()?;
        let mut base: ModPath = match first.as_str() {
            "crate" => Vec::new(),
            "self" => at.to_vec(),
            "super" => {
                let mut base = at.to_vec();
                base.pop();
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            // A submodule of this module, named without `self::`.
            name => {
                let mut child = at.to_vec();
                child.push(name.to_owned());
                if !self.modules.contains_key(&child) {
                    return None;
                }
                let mut base = child;
                base.extend(rest.iter().cloned());
                return Some(base);
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// Every module every module names, with the line it does so on.
    fn references(&self) -> Vec<Reference> {
        let mut references = Vec::new();
        for (module, code) in &self.modules {
            let inline = inline_modules(code);
            let mut add = |offset: usize, path: &[String]| {
                // Inside `mod tests { … }`, `super` is the file's module.
                let mut at = module.clone();
                at.extend(
                    inline
                        .iter()
                        .filter(|(range, _)| range.contains(&offset))
                        .map(|(_, name)| name.clone()),
                );
                let Some(absolute) = self.absolute(&at, path) else {
                    return;
                };
                references.push(Reference {
                    from: module.clone(),
                    line: code[..offset].matches('\n').count() + 1,
                    target: self.module_of(&absolute),
                });
            };
            // `use` trees (also `pub use`, `pub(crate) use`).
            let mut search = 0;
            while let Some(found) = code[search..].find("use ") {
                let at = search + found;
                search = at + 4;
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let Some(end) = code[at..].find(';') else {
                    break;
                };
                let tree = &code[at + 4..at + end];
                // `use ::name::…` names another crate, never a module here.
                if !tree.trim_start().starts_with("::") {
                    for path in use_paths(tree) {
                        add(at, &path);
                    }
                }
                search = at + end;
            }
            // Paths in code: `crate::…`, `super::…`, `self::…`.
            let bytes = code.as_bytes();
            for keyword in ["crate", "super", "self"] {
                for (at, _) in code.match_indices(keyword) {
                    let boundary = at == 0 || {
                        let b = bytes[at - 1];
                        !(b.is_ascii_alphanumeric() || b == b'_' || b == b':' || b == b'$')
                    };
                    let after = &code[at + keyword.len()..];
                    if !boundary || !after.trim_start().starts_with("::") {
                        continue;
                    }
                    let path: String = code[at..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                        .collect();
                    add(at, &segments(&path));
                }
            }
        }
        references
    }
}

/// A cycle among the submodules of one module, with one reference per
/// step as evidence.
fn cycles(krate: &Crate) -> Vec<String> {
    // parent → (child → children it depends on, with evidence)
    let mut graphs: BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, Reference>>> =
        BTreeMap::new();
    for reference in krate.references() {
        let common = reference
            .from
            .iter()
            .zip(&reference.target)
            .take_while(|(a, b)| a == b)
            .count();
        let (Some(from), Some(to)) = (reference.from.get(common), reference.target.get(common))
        else {
            // One is the other's ancestor: how a module is built.
            continue;
        };
        graphs
            .entry(reference.from[..common].to_vec())
            .or_default()
            .entry(from.clone())
            .or_default()
            .entry(to.clone())
            .or_insert(reference);
    }
    let mut found = Vec::new();
    for (parent, graph) in &graphs {
        let mut reported: BTreeSet<BTreeSet<String>> = BTreeSet::new();
        for start in graph.keys() {
            // Shortest way back to `start`, breadth first.
            let mut previous: BTreeMap<&String, &String> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            let mut closed = None;
            while let Some(node) = queue.pop_front() {
                for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
                    if next == start {
                        closed = Some(node);
                        break;
                    }
                    if !previous.contains_key(next) {
                        previous.insert(next, node);
                        queue.push_back(next);
                    }
                }
                if closed.is_some() {
                    break;
                }
            }
            let Some(mut node) = closed else { continue };
            let mut members = vec![node];
            while node != start {
                node = previous[node];
                members.push(node);
            }
            members.reverse();
            let set: BTreeSet<String> = members.iter().map(|m| (*m).clone()).collect();
            if !reported.insert(set) {
                continue;
            }
            let steps: Vec<String> = members
                .iter()
                .zip(members.iter().skip(1).chain(std::iter::once(&start)))
                .map(|(from, to)| {
                    let evidence = &graph[*from][*to];
                    format!(
                        "{from} → {to} ({} line {} names {})",
                        display(&evidence.from),
                        evidence.line,
                        display(&evidence.target)
                    )
                })
                .collect();
            found.push(format!(
                "cycle among the modules of {}: {}",
                display(parent),
                steps.join("; ")
            ));
        }
    }
    found
}

fn read_tree(dir: &Path, prefix: &str, files: &mut BTreeMap<String, String>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let relative = format!("{prefix}{name}");
        if entry.file_type().unwrap().is_dir() {
            read_tree(&entry.path(), &format!("{relative}/"), files);
        } else if name.ends_with(".rs") {
            files.insert(relative, fs::read_to_string(entry.path()).unwrap());
        }
    }
}

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's library crates below `crates/`, by directory name (the
/// name their code is used by).
fn member_crates() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(workspace().join("crates"))
        .expect("read crates/")
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Every `.rs` file of the workspace's crates, by its path from the
/// workspace root (`src/cli/mod.rs`, `crates/policy/src/lib.rs`).
fn workspace_files() -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    read_tree(&workspace().join("src"), "src/", &mut files);
    for name in member_crates() {
        let prefix = format!("crates/{name}/src/");
        read_tree(&workspace().join(&prefix), &prefix, &mut files);
    }
    files
}

/// The files below `prefix`, by their path below it.
fn below(files: &BTreeMap<String, String>, prefix: &str) -> BTreeMap<String, String> {
    files
        .iter()
        .filter_map(|(path, text)| Some((path.strip_prefix(prefix)?.to_owned(), text.clone())))
        .collect()
}

/// This package's library (`lib.rs` and every module but the CLI's) and
/// binary (`main.rs` and `cli/`), from the files below its `src/`.
fn crates(files: &BTreeMap<String, String>) -> (Crate, Crate) {
    let is_binary = |file: &str| file == "main.rs" || file.starts_with("cli/");
    (
        Crate::new(files, "lib.rs", |file| !is_binary(file)),
        Crate::new(files, "main.rs", |file| file.starts_with("cli/")),
    )
}

/// The cycles of one package's source (files below its `src/`).
fn violations(files: &BTreeMap<String, String>) -> Vec<String> {
    let (library, binary) = crates(files);
    let mut found = cycles(&library);
    found.extend(cycles(&binary).into_iter().map(|c| format!("binary: {c}")));
    found
}

#[test]
fn no_crate_has_a_cycle_among_its_modules() {
    let files = workspace_files();
    let mut found = violations(&below(&files, "src/"));
    for name in member_crates() {
        let library = Crate::new(
            &below(&files, &format!("crates/{name}/src/")),
            "lib.rs",
            |_| true,
        );
        found.extend(cycles(&library).into_iter().map(|c| format!("{name}: {c}")));
    }
    // The reader sees the modules that exist, and their dependencies.
    let (library, _) = crates(&below(&files, "src/"));
    assert!(library.modules.contains_key(&segments("check::report")));
    assert!(library
        .references()
        .iter()
        .any(|r| display(&r.from) == "check::labels" && display(&r.target) == "check::rules"));
    let selabel = Crate::new(&below(&files, "crates/selabel/src/"), "lib.rs", |_| true);
    assert!(selabel
        .references()
        .iter()
        .any(|r| display(&r.from) == "directory" && display(&r.target) == "path_chain"));
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

/// The workspace crates a package's manifest depends on (`semanifest-NAME`
/// under `[dependencies]`), by the name its code uses (`NAME`).
fn manifest_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut section = "";
    let mut found = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]" {
            if let Some(rest) = line.strip_prefix("semanifest-") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                found.insert(name);
            }
        }
    }
    found
}

/// ARCHITECTURE.md's list of dependencies between the workspace's crates
/// is their manifests', exactly. Control: the list with one dependency
/// left out differs.
#[test]
fn architecture_lists_the_dependencies_the_crates_declare() {
    let read = |path: &Path| {
        fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let mut actual = BTreeMap::new();
    actual.insert(
        "semanifest".to_owned(),
        manifest_dependencies(&read(&workspace().join("Cargo.toml"))),
    );
    for name in member_crates() {
        let manifest = read(&workspace().join(format!("crates/{name}/Cargo.toml")));
        assert!(
            manifest.contains(&format!("name = \"semanifest-{name}\""))
                && manifest.contains(&format!("name = \"{name}\"")),
            "crates/{name}: package semanifest-{name}, library {name}"
        );
        actual.insert(name, manifest_dependencies(&manifest));
    }
    assert!(actual["relabel"].contains("selabel"));
    let text = read(&workspace().join("ARCHITECTURE.md"));
    let section = text
        .split("\n## Dependencies\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a Dependencies section");
    let documented = documented_dependencies(section);
    assert_eq!(
        documented, actual,
        "ARCHITECTURE.md (left) and the crates' Cargo.toml (right) disagree"
    );
    let fewer = section.replacen("`relabel` → `fsroot`, ", "`relabel` → ", 1);
    assert_ne!(documented_dependencies(&fewer), actual);
}

/// `- `a`, `b` → `c`, `d`` lines (`→ nothing` for none).
fn documented_dependencies(section: &str) -> BTreeMap<String, BTreeSet<String>> {
    let names = |text: &str| -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let mut graph = BTreeMap::new();
    for line in section.lines().filter_map(|l| l.strip_prefix("- `")) {
        let (from, to) = line.split_once('→').expect("`a` → `b` lines");
        for module in names(&format!("`{from}")) {
            graph.insert(module, names(to).into_iter().collect());
        }
    }
    graph
}

fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
        .collect()
}

/// Controls: each kind of cycle is found, written every way the reader
/// has to understand, and nothing is found where there is none.
#[test]
fn the_reader_finds_each_kind_of_cycle() {
    let base = [
        ("lib.rs", "pub mod check; pub mod k8s; pub mod fc;"),
        ("check/mod.rs", "pub mod report; use crate::k8s::Audit;"),
        ("check/report.rs", "pub struct Finding;"),
        ("k8s.rs", "pub struct Audit;"),
        ("fc/mod.rs", "mod matcher; mod directory; pub struct Kind;"),
        ("fc/matcher.rs", "use super::Kind; pub struct Matcher;"),
        ("fc/directory.rs", "use super::matcher::Matcher;"),
        ("main.rs", "mod cli;"),
        (
            "cli/mod.rs",
            "mod check; use semanifest::check::report::Finding;",
        ),
        ("cli/check.rs", "use semanifest::check;"),
    ];
    assert_eq!(violations(&tree(&base)), Vec::<String>::new());

    let with = |file: &str, code: &str| {
        let mut files = tree(&base);
        files.get_mut(file).unwrap().push_str(code);
        violations(&files)
    };
    for code in [
        "\nuse crate::check::report::Finding;",
        "\nuse crate::{check::report::{self, Finding}, fc};",
        "\nfn f() -> crate::check::report::Finding { todo!() }",
    ] {
        let found = with("k8s.rs", code);
        assert_eq!(found.len(), 1, "{code}: {found:#?}");
        assert!(
            found[0].starts_with("cycle among the modules of crate: check → k8s")
                && found[0].contains("k8s line 2 names check"),
            "{found:#?}"
        );
    }
    // Not code: comments, strings, raw strings; not this crate: `::name`.
    for code in [
        "\n// use crate::check::report::Finding;",
        "\n/* crate::check:: */",
        "\nconst X: &str = \"use crate::check::report;\";",
        "\nconst Y: &str = r#\"crate::check::x\"#;",
        "\nfn f<'a>(x: &'a str) -> char { let _ = x; '\"' }",
    ] {
        assert_eq!(with("k8s.rs", code), Vec::<String>::new(), "{code}");
    }
    assert_eq!(
        with("fc/matcher.rs", "\nuse ::directory::Step;"),
        Vec::<String>::new()
    );
    // A cycle inside a module, through `super::` or a submodule's name.
    for code in [
        "\nuse super::directory::Step;",
        "\nfn f(_: super::directory::Step) {}",
    ] {
        let found = with("fc/matcher.rs", code);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].starts_with("cycle among the modules of fc: directory → matcher"),
            "{found:#?}"
        );
    }
    // `super` in an inline module is the file's module: no cycle.
    let found = with(
        "fc/matcher.rs",
        "\n#[cfg(test)]\nmod tests {\n    use super::Matcher;\n    use super::super::Kind;\n}",
    );
    assert_eq!(found, Vec::<String>::new());
    // A longer cycle, and one in the binary.
    let mut files = tree(&base);
    files.insert("lib.rs".into(), "pub mod a; pub mod b; pub mod c;".into());
    files.insert("a.rs".into(), "use crate::b::B;".into());
    files.insert("b.rs".into(), "use crate::c::C;".into());
    files.insert("c.rs".into(), "use crate::a::A;".into());
    files.retain(|name, _| {
        !name.starts_with("check") && name != "k8s.rs" && !name.starts_with("fc")
    });
    let found = violations(&files);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("a → b") && found[0].contains("c → a"),
        "{found:#?}"
    );
    let found = with("cli/check.rs", "\nuse super::build::Args;");
    assert_eq!(
        found,
        Vec::<String>::new(),
        "no such module: not a dependency"
    );
    let mut files = tree(&base);
    files.insert("cli/build.rs".into(), "use super::check::X;".into());
    files
        .get_mut("cli/check.rs")
        .unwrap()
        .push_str("\nuse super::build::Y;");
    let found = violations(&files);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("binary: cycle among the modules of cli"),
        "{found:#?}"
    );
}

/// Names two or more files of the workspace may give their modules, each
/// with every file that may hold it: the same thing seen from two sides,
/// never two things.
const SHARED_STEMS: [(&str, &[&str]); 11] = [
    // `cli/<subcommand>.rs` is named after its subcommand, which is the
    // library it drives.
    (
        "admission",
        &["crates/admission/src/lib.rs", "src/cli/admission.rs"],
    ),
    ("apply", &["src/cli/apply.rs", "crates/node/src/apply.rs"]),
    ("check", &["src/check/mod.rs", "src/cli/check.rs"]),
    ("diff", &["src/diff/mod.rs", "src/cli/diff.rs"]),
    ("prune", &["src/cli/prune.rs", "crates/node/src/prune.rs"]),
    (
        "suggest",
        &["src/cli/suggest.rs", "crates/k8s/src/suggest.rs"],
    ),
    (
        "relabel",
        &["crates/relabel/src/lib.rs", "src/cli/relabel.rs"],
    ),
    ("units", &["crates/units/src/lib.rs", "src/cli/units.rs"]),
    // `semanifest layout` shows and validates the layout manifest that
    // the `layout` crate reads and `check`'s layout phase checks.
    (
        "layout",
        &[
            "crates/layout/src/lib.rs",
            "src/check/layout.rs",
            "src/cli/layout.rs",
        ],
    ),
    // `check`'s store phase checks a layout against the store `store` reads.
    ("store", &["crates/store/src/lib.rs", "src/check/store.rs"]),
    // Each producer's own list of `diag::Rule`s.
    (
        "rules",
        &["src/check/rules.rs", "crates/layout/src/manifest/rules.rs"],
    ),
];

/// The name a file gives its module: a crate's `lib.rs` its crate's, a
/// `mod.rs` its directory's, any other file its stem; `None` for this
/// package's `lib.rs` and `main.rs`.
fn module_name(file: &str) -> Option<&str> {
    if file == "src/lib.rs" || file == "src/main.rs" {
        return None;
    }
    if let Some(krate) = file
        .strip_prefix("crates/")
        .and_then(|rest| rest.strip_suffix("/src/lib.rs"))
    {
        return Some(krate);
    }
    let module = file.trim_end_matches(".rs").trim_end_matches("/mod");
    Some(module.rsplit('/').next().unwrap_or(module))
}

/// Files whose module name another file has too, unless [`SHARED_STEMS`]
/// allows every file holding it.
fn shared_stems(files: &BTreeMap<String, String>) -> Vec<String> {
    let mut by_stem: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for file in files.keys() {
        if let Some(stem) = module_name(file) {
            by_stem.entry(stem).or_default().insert(file);
        }
    }
    by_stem
        .into_iter()
        .filter(|(_, holders)| holders.len() > 1)
        .filter(|(stem, holders)| {
            !SHARED_STEMS.iter().any(|(allowed, allowed_files)| {
                allowed == stem && holders.iter().all(|f| allowed_files.contains(f))
            })
        })
        .map(|(stem, holders)| {
            let holders: Vec<&str> = holders.into_iter().collect();
            format!("`{stem}` names {}", holders.join(" and "))
        })
        .collect()
}

/// No two modules share a name for different things (ARCHITECTURE.md,
/// Names). Controls: a second `policy` is found, an allowed stem held by a
/// file not on its list is found, and the allowed pairs are not.
#[test]
fn no_two_modules_share_a_name_for_different_things() {
    let files = workspace_files();
    assert!(
        files.contains_key("crates/policy/src/lib.rs") && files.contains_key("src/cli/check.rs")
    );
    let found = shared_stems(&files);
    assert!(
        found.is_empty(),
        "one name, two things:\n{}",
        found.join("\n")
    );

    let with = |extra: &str| {
        let mut files = files.clone();
        files.insert(extra.to_owned(), String::new());
        shared_stems(&files)
    };
    assert_eq!(
        with("src/check/policy.rs"),
        ["`policy` names crates/policy/src/lib.rs and src/check/policy.rs"]
    );
    assert_eq!(
        with("src/diff/store.rs"),
        ["`store` names crates/store/src/lib.rs and src/check/store.rs and src/diff/store.rs"]
    );
    assert_eq!(
        shared_stems(&tree(&[
            ("src/lib.rs", ""),
            ("src/check/mod.rs", ""),
            ("src/check/rules.rs", ""),
            ("crates/layout/src/manifest/rules.rs", ""),
            ("src/cli/check.rs", ""),
        ])),
        Vec::<String>::new()
    );
}
