//! Serves the [`file_read_scenario`] to another process, for `cargo xtask peer-cost`.
//!
//! - `scenario_server notes DIR` writes the notes the scenario reads into `DIR`.
//! - `scenario_server serve` starts the scenario's server ([`file_read_scenario::server`]:
//!   streamed replies to requests that ask for a stream, whole ones otherwise), prints
//!   its OpenAI base URL (`http://127.0.0.1:PORT/v1`) as one line, serves until its
//!   standard input closes or gets a line, then prints two lines and exits, with a
//!   failure unless the whole scenario was asked for:
//!   - `requests N of M`: how many requests arrived, of the scenario's;
//!   - `timing FIRST ANSWERING`: the `CLOCK_MONOTONIC` reading in nanoseconds when the
//!     first request arrived (`-` if none did) and the nanoseconds it spent answering,
//!     summed over the requests ([`ServeTimes`]).
//! - `scenario_server answer` serves the scenario's final answer to every request, as
//!   many as come (for `cargo xtask serve-load`: each run of an AI agent is one
//!   request), prints its URL the same way, serves until its standard input closes or
//!   gets a line, then prints `requests N`.
//!
//! [`file_read_scenario`]: oxydra_test_support::file_read_scenario
//! [`file_read_scenario::server`]: oxydra_test_support::file_read_scenario::server
//! [`ServeTimes`]: oxydra_test_support::ServeTimes

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use oxydra_test_support::{MockServer, file_read_scenario, openai};

fn serve() -> std::io::Result<()> {
    let server = file_read_scenario::server()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", server.openai_url())?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let served = server.hits();
    // Its client has exited by now; a body still being handed on ends within moments.
    server.wait_idle(Duration::from_secs(1));
    let times = server.serve_times();
    let first = times
        .first_request
        .map_or_else(|| "-".to_owned(), |at| at.as_nanos().to_string());
    writeln!(out, "requests {served} of {}", file_read_scenario::REQUESTS)?;
    writeln!(out, "timing {first} {}", times.answering.as_nanos())?;
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
