//! `selabel_lookup` in a few lines: the context libselinux would give a path.
//!
//! `cargo run -p semanifest-selabel --example lookup -- FILE_CONTEXTS PATH [KIND]`
//! where KIND is `any` (the default), `file`, `dir`, `lnk`, `chr`, `blk`,
//! `fifo` or `sock`. Exit 1 when the path gets no label.

// An example prints its results.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use selabel::{FileContexts, FileKind};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (file, key, kind) = match args.as_slice() {
        [file, key] => (file, key, "any"),
        [file, key, kind] => (file, key, kind.as_str()),
        _ => {
            eprintln!("usage: lookup FILE_CONTEXTS PATH [any|file|dir|lnk|chr|blk|fifo|sock]");
            return ExitCode::from(2);
        }
    };
    let kind = match kind {
        "any" => FileKind::Any,
        "file" => FileKind::File,
        "dir" => FileKind::Dir,
        "lnk" => FileKind::Symlink,
        "chr" => FileKind::CharDev,
        "blk" => FileKind::BlockDev,
        "fifo" => FileKind::Fifo,
        "sock" => FileKind::Socket,
        other => {
            eprintln!("lookup: unknown kind `{other}`");
            return ExitCode::from(2);
        }
    };
    let contexts = match FileContexts::load(&PathBuf::from(file)) {
        Ok(contexts) => contexts,
        Err(error) => {
            eprintln!("lookup: {error}");
            return ExitCode::from(2);
        }
    };
    match contexts.lookup(key.as_bytes(), kind) {
        Some(context) => {
            println!("{context}");
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("{key}: no label");
            ExitCode::from(1)
        }
    }
}
