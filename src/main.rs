//! The `semanifest` command line: parses arguments, sets up logging, maps
//! errors to exit codes. All real work lives in the library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
