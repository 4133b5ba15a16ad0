//! The `semanifest` command line: parses arguments, sets up logging, maps
//! errors to exit codes. All real work lives in the library.

// The command line is what prints; the libraries return what they found.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cli;

fn main() -> std::process::ExitCode {
    // A store build's compiler process (see the `sepol` crate): it reads its
    // request on stdin and must stay single-threaded, so it starts before
    // anything else does.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == sepol::SUBCOMMAND)
    {
        return std::process::ExitCode::from(u8::try_from(sepol::serve()).unwrap_or(1));
    }
    cli::run()
}
