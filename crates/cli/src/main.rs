//! The `oxydra` command-line program.
//!
//! It runs agents (`oxydra run`, `oxydra chat`), lists stored sessions and scrubs
//! secrets from files. See docs/cli.md and docs/configuration.md.

mod args;
mod commands;
mod config;
mod consent;
mod error;
mod exit_code;
mod interrupt;
mod logging;
mod output;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = args::Cli::parse();
    logging::init(cli.verbose);
    let exit = match commands::dispatch(cli) {
        Ok(exit) => exit,
        Err(error) => {
            eprintln!("error: {error}");
            error.exit()
        }
    };
    exit.into()
}
