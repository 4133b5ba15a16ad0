//! The `semanifest` command line: parses arguments, sets up logging, maps
//! errors to exit codes. All real work lives in the library.

// The command line is what prints; the libraries return what they found.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
