//! The `oxydra` command-line program.
//!
//! It runs agents (`oxydra run`, `oxydra chat`), lists stored sessions and scrubs
//! secrets from files. See docs/cli.md and docs/configuration.md.

mod args;
mod attachment;
mod commands;
mod config;
mod consent;
mod consent_question;
mod consent_text;
mod ended_early;
mod error;
mod exit_code;
mod interrupt;
#[cfg(feature = "local")]
mod local_model;
mod logging;
mod output;
mod parse;
mod process_exit;
mod setup;
mod terminal_echo;
mod terminal_input;
mod terminal_text;

fn main() -> std::process::ExitCode {
    let cli = match parse::parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(exit) => return exit,
    };
    let jsonl = cli.command.prints_events_as_jsonl();
    let for_a_person = cli.command.answers_a_person();
    let exit = match logging::init(cli.verbose, for_a_person).and_then(|()| commands::dispatch(cli))
    {
        Ok(exit) => exit,
        // The reader went away (`oxydra sessions show ID | head`): it has what it wanted.
        Err(error) if error.is_closed_stdout() => exit_code::Exit::Done,
        Err(error) => report(&error, jsonl),
    };
    // Every span has ended: send what is left before the process goes.
    logging::shutdown();
    // No exit while the local model's threads still compute.
    process_exit::before_exit(exit.code());
    exit.into()
}

/// Says what went wrong on stderr (and as the closing event of a JSON-lines stream)
/// and returns the exit code for it.
fn report(error: &error::CliError, jsonl: bool) -> exit_code::Exit {
    // Error messages can quote what a provider or tool answered: scrubbed. Our own
    // text (how to configure a provider) is shown as written.
    let message = error.to_string();
    let message = if error.quotes_foreign_text() {
        oxydra::scrubbing::scrub(&message).text.into_owned()
    } else {
        message
    };
    // They can quote escape sequences too: sanitized, on any stream (a redirected
    // stderr ends at a terminal as well). The JSON-lines event keeps the exact text.
    eprintln!("error: {}", terminal_text::lines(&message));
    // A run that started has printed its closing event already; one that could
    // not start (configuration, session, setup) still ends its event stream.
    if jsonl && !matches!(error, error::CliError::Run { .. }) {
        output::print_error_event(error.kind(), &message);
    }
    error.exit()
}
