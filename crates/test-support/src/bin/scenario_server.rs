//! Serves the [`file_read_scenario`] to another process, for `cargo xtask peer-cost`.
//!
//! - `scenario_server notes DIR` writes the notes the scenario reads into `DIR`.
//! - `scenario_server serve` starts a [`MockServer`] with the scenario's replies,
//!   prints its OpenAI base URL (`http://127.0.0.1:PORT/v1`) as one line, serves until
//!   its standard input closes or gets a line, then prints `requests N of M` (how
//!   many requests arrived, of the scenario's) and exits, with a failure unless the
//!   whole scenario was asked for.
//! - `scenario_server answer` serves the scenario's final answer to every request, as
//!   many as come (for `cargo xtask serve-load`: each run of an AI agent is one
//!   request), prints its URL the same way, serves until its standard input closes or
//!   gets a line, then prints `requests N`.
//!
//! [`file_read_scenario`]: oxydra_test_support::file_read_scenario

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use oxydra_test_support::{MockServer, file_read_scenario, openai};

fn serve() -> std::io::Result<()> {
    let server = MockServer::start(file_read_scenario::replies())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", server.openai_url())?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let served = server.hits();
    writeln!(out, "requests {served} of {}", file_read_scenario::REQUESTS)?;
    out.flush()?;
    if served == file_read_scenario::REQUESTS {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "served {served} of the scenario's {} requests",
            file_read_scenario::REQUESTS
        )))
    }
}

fn answer() -> std::io::Result<()> {
    let server = MockServer::repeating(vec![openai::text(file_read_scenario::ANSWER)])?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", server.openai_url())?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    writeln!(out, "requests {}", server.hits())?;
    out.flush()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["serve"] => serve(),
        ["answer"] => answer(),
        ["notes", dir] => file_read_scenario::write_notes(Path::new(dir)),
        _ => {
            eprintln!(
                "usage: scenario_server serve | scenario_server answer | scenario_server notes DIR"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("scenario_server: {error}");
            ExitCode::FAILURE
        }
    }
}
