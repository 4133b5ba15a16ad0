//! The file_contexts oracles run Debian's own PCRE2. libselinux compiles
//! and matches its regexes with the system's libpcre2-8, and the tests ask
//! PCRE2 the same questions through the `pcre2` crate
//! (`support::fc_oracle`). That crate's `pcre2-sys` links the system's
//! library only when pkg-config finds `libpcre2-8.pc` (pkg-config and
//! libpcre2-dev in `.ci/packages`); otherwise it silently compiles a bundled
//! copy into this binary. The bundled copy's symbols then serve libselinux's
//! PCRE2 calls too, a different PCRE2 version than the one Debian's tools
//! and compiled `file_contexts.bin` files use, and the oracle is no longer
//! the system's.
//!
//! The test binary itself is checked: it must load libpcre2-8.so.0 and
//! define no PCRE2 function of its own, and the process must have exactly
//! one PCRE2 library mapped, Debian's.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{run_ok, tool};

const SONAME: &str = "libpcre2-8.so.0";

/// What to do when a check fails: the cause is nearly always a build made
/// before pkg-config was installed, which cargo keeps.
const FIX: &str = "install pkg-config and libpcre2-dev (scripts/install-deps), then rebuild \
    pcre2-sys: cargo clean --release -p pcre2-sys";

/// The shared libraries `binary` names in its dynamic section (`NEEDED`).
fn needed(binary: &Path) -> Vec<String> {
    let readelf = tool("readelf", "binutils");
    run_ok(Command::new(readelf).arg("-d").arg(binary))
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(|line| Some(line.split_once('[')?.1.split_once(']')?.0.to_owned()))
        .collect()
}

/// The PCRE2 functions `binary` defines in its dynamic symbol table: the
/// ones it would serve to a shared library (libselinux) asking for them.
fn defined_pcre2_functions(binary: &Path) -> Vec<String> {
    let readelf = tool("readelf", "binutils");
    run_ok(Command::new(readelf).args(["--dyn-syms", "-W"]).arg(binary))
        .lines()
        .filter_map(|line| {
            // Num: Value Size Type Bind Vis Ndx Name
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (kind, section, name) = (fields.get(3)?, fields.get(6)?, fields.get(7)?);
            let name = name.split('@').next()?;
            (*kind == "FUNC" && *section != "UND" && name.starts_with("pcre2_"))
                .then(|| name.to_owned())
        })
        .collect()
}

/// Every libpcre2-8 file mapped into this process.
fn mapped_pcre2_libraries() -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    let mut libraries: Vec<PathBuf> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(PathBuf::from)
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("libpcre2-8.so"))
        })
        .collect();
    libraries.sort();
    libraries.dedup();
    libraries
}

fn this_binary() -> PathBuf {
    std::env::current_exe().expect("the test binary's path")
}

#[test]
fn the_test_binary_links_the_systems_libpcre2_8() {
    let binary = this_binary();
    let needed = needed(&binary);
    assert!(
        needed.iter().any(|library| library == SONAME),
        "{} does not load {SONAME} (it needs {needed:?}): pcre2-sys built its bundled PCRE2; {FIX}",
        binary.display()
    );
}

#[test]
fn the_test_binary_carries_no_pcre2_of_its_own() {
    let binary = this_binary();
    let own = defined_pcre2_functions(&binary);
    assert!(
        own.is_empty(),
        "{} defines PCRE2 functions itself ({} of them, e.g. {:?}), which would serve \
         libselinux's PCRE2 calls too; {FIX}",
        binary.display(),
        own.len(),
        &own[..own.len().min(3)]
    );
}

#[test]
fn libselinux_and_the_oracle_share_debians_libpcre2_8() {
    // Both are loaded by now: libselinux is linked, and the oracle's first
    // regex makes sure the `pcre2` crate is in use in this process.
    pcre2::bytes::Regex::new("^/var(/.*)?$").expect("PCRE2 compiles a file_contexts regex");
    let libraries = mapped_pcre2_libraries();
    assert_eq!(
        libraries.len(),
        1,
        "exactly one libpcre2-8 must be mapped, the one libselinux uses: {libraries:?}; {FIX}"
    );
    // dpkg records the file under /usr/lib, whichever link it was loaded by.
    let library = libraries[0]
        .canonicalize()
        .expect("the mapped libpcre2-8 exists");
    let owner = run_ok(Command::new("dpkg-query").arg("-S").arg(&library));
    assert!(
        owner.starts_with("libpcre2-8-0:"),
        "{} is not Debian's libpcre2-8-0 ({owner})",
        library.display()
    );
}

#[test]
fn control_a_binary_that_defines_pcre2_is_caught() {
    // Debian's libpcre2-8 itself defines every PCRE2 function: the same
    // reading of the symbol table that finds none in the test binary finds
    // them there. And a binary without PCRE2 (coreutils' `true`) does not
    // pass the NEEDED check.
    let libraries = mapped_pcre2_libraries();
    let library = libraries.first().expect("libpcre2-8 is mapped");
    let defined = defined_pcre2_functions(library);
    assert!(
        defined.iter().any(|name| name == "pcre2_match_8")
            && defined.iter().any(|name| name == "pcre2_compile_8"),
        "{}: {defined:?}",
        library.display()
    );
    assert!(!needed(Path::new("/usr/bin/true"))
        .iter()
        .any(|l| l == SONAME));
}
