//! Log lines on stderr: coloured only on a terminal, never on the spinner's line, a
//! failure said once; Ctrl-C leaves no spinner behind.

use crate::common;

use common::{Sandbox, assert_exit_code, interrupt, spawn_in_pty, stderr, wait_for_first_request};
use oxydra_test_support::{MockServer, Reply};

const CLEAR_LINE: &str = "\r\x1b[2K";

/// What a person sees of each line of a terminal's output: what follows the last
/// clearing of the line.
fn visible_lines(text: &str) -> Vec<String> {
    text.split('\n')
        .map(|line| {
            let line = line.trim_end_matches('\r');
            line.rsplit(CLEAR_LINE).next().unwrap_or("").to_owned()
        })
        .collect()
}

fn failing_server() -> MockServer {
    MockServer::repeating(vec![Reply::json(
        500,
        r#"{"error":{"message":"upstream exploded"}}"#,
    )])
    .unwrap()
}

#[test]
fn a_failure_is_said_once_without_colour_off_a_terminal() {
    let sandbox = Sandbox::new();
    let server = failing_server();
    let output = sandbox.run_openai(&server.openai_url(), &[], "hello");
    let err = stderr(&output);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(server.requests().len() > 1, "the call was retried");
    assert!(!err.contains('\x1b'), "no ANSI colour in a file: {err:?}");
    assert!(!err.contains("WARN"), "retries are not warnings: {err}");
    assert_eq!(err.matches("upstream exploded").count(), 1, "{err}");
    assert_eq!(
        err.lines()
            .filter(|line| line.starts_with("error:"))
            .count(),
        1,
        "{err}"
    );
}

#[test]
fn verbose_logs_show_the_retries_still_without_colour_in_a_file() {
    let sandbox = Sandbox::new();
    let server = failing_server();
    let output = sandbox.run_openai(&server.openai_url(), &["-v"], "hello");
    let err = stderr(&output);
    assert!(err.contains("retrying"), "{err}");
    assert!(!err.contains('\x1b'), "{err:?}");
}

#[test]
fn log_lines_never_share_the_spinners_line_on_a_terminal() {
    let sandbox = Sandbox::new();
    let server = failing_server();
    let mut command = sandbox.pty_command();
    command
        .arg("run")
        .arg("-v")
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .args(["--base-url", &server.openai_url(), "hello"]);
    let (mut child, pty) = spawn_in_pty(command);
    let status = common::wait_exit(&mut child, &|| pty.output.text());
    assert_ne!(status.code(), Some(0));
    let text = pty.output.all();
    assert!(
        text.contains("Calling the model"),
        "the spinner ran: {text:?}"
    );
    assert!(text.contains("retrying"), "{text:?}");
    assert!(text.contains('\x1b'), "colours on a terminal: {text:?}");
    for line in visible_lines(&text) {
        assert!(
            !(line.contains("Calling the model") && line.contains("provider call failed")),
            "a log line shares the spinner's line: {line:?}"
        );
    }
}

/// `oxydra run hello` on a terminal against a server that never answers, once the
/// request reached it.
fn run_waiting_on_a_terminal(
    sandbox: &Sandbox,
    server: &MockServer,
) -> (common::KillOnDrop, common::Pty) {
    let mut command = sandbox.pty_command();
    command
        .arg("run")
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .args(["--base-url", &server.openai_url(), "hello"]);
    let (child, pty) = spawn_in_pty(command);
    wait_for_first_request(server, &pty.output);
    (child, pty)
}

#[test]
fn the_spinner_says_how_long_its_step_has_taken() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![Reply::sse("").hanging()]).unwrap();
    let (mut child, pty) = run_waiting_on_a_terminal(&sandbox, &server);
    // The ticker redraws the spinner; past a second, with the time taken.
    pty.output.wait_for("Calling the model (1 s)");
    interrupt(&child);
    assert_exit_code(&mut child, 130, &pty.output);
}

#[test]
fn ctrl_c_leaves_no_spinner_line_behind() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![Reply::sse("").hanging()]).unwrap();
    let (mut child, pty) = run_waiting_on_a_terminal(&sandbox, &server);
    pty.output.wait_for("Calling the model");
    interrupt(&child);
    assert_exit_code(&mut child, 130, &pty.output);
    let text = pty.output.all();
    for line in visible_lines(&text) {
        assert!(
            !line.contains("Calling the model"),
            "a spinner line was left: {line:?} in {text:?}"
        );
    }
}

#[test]
fn internal_warnings_stay_out_of_a_text_run_and_show_with_verbose() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        oxydra_test_support::openai::text("The answer."),
        oxydra_test_support::openai::text("The answer."),
    ])
    .unwrap();
    // A rule naming a tool no one registered: the executor warns (a log line).
    sandbox.write_trusted_config(
        "[[rules]]\ntool = \"no_such_tool\"\nkind = \"max_calls\"\nvalue = 1\n",
    );
    let output = sandbox.run_openai(&server.openai_url(), &[], "hello");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        !err.contains("WARN") && !err.contains("not registered"),
        "{err}"
    );
    assert_eq!(common::stdout(&output).trim(), "The answer.");

    let output = sandbox.run_openai(&server.openai_url(), &["-v"], "hello");
    let err = stderr(&output);
    assert!(
        err.contains("WARN") && err.contains("not registered"),
        "{err}"
    );
}

#[test]
fn a_rate_limited_call_says_it_waits_and_for_how_long() {
    let sandbox = Sandbox::new();
    let limited =
        || Reply::json(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "1");
    let server =
        MockServer::start(vec![limited(), oxydra_test_support::openai::text("Done.")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &[], "hello");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("  ↻ rate limited, retrying in 1 s (2/4)"),
        "{err}"
    );
    assert!(!err.contains("WARN"), "{err}");

    // Programs get the event.
    let server =
        MockServer::start(vec![limited(), oxydra_test_support::openai::text("Done.")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "jsonl"], "hello");
    let events = common::json_lines(&output);
    let retries = common::events_of_type(&events, "provider_retry");
    assert_eq!(retries.len(), 1, "{events:?}");
    assert_eq!(retries[0]["reason"], "rate limited");
    assert_eq!(retries[0]["delay_ms"], 1000);
    assert_eq!(retries[0]["attempt"], 1);
}
