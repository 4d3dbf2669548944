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
#[cfg_attr(not(feature = "local"), allow(dead_code))]
mod local_model;
mod logging;
mod output;
mod terminal_echo;
mod terminal_input;

fn main() -> std::process::ExitCode {
    let cli = match args::parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(exit) => return exit,
    };
    logging::init(cli.verbose);
    let jsonl = cli.command.prints_events_as_jsonl();
    let exit = match commands::dispatch(cli) {
        Ok(exit) => exit,
        Err(error) => {
            // Error messages can quote what a provider or tool answered: scrubbed.
            let message = error.to_string();
            let message = oxydra::scrubbing::scrub(&message).text;
            eprintln!("error: {message}");
            // A run that started has printed its closing event already; one that could
            // not start (configuration, session, setup) still ends its event stream.
            if jsonl && !matches!(error, error::CliError::Run { .. }) {
                output::print_error_event(error.kind(), &message);
            }
            error.exit()
        }
    };
    exit.into()
}
