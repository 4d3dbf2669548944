//! What a new user hits first, through the real binary: budgets for models without a
//! known price, the prompt on stdin, rounded costs, flag errors in JSONL.

use crate::common;

use common::{Sandbox, events_of_type, json_lines, output_with_stdin, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

/// The attack on the budget: `--max-cost` with a model whose price nobody knows would
/// count every call as $0 and enforce nothing. The run refuses to start (exit 2), names
/// the flag and the configuration table that gives the price, and asks nothing.
#[test]
fn max_cost_with_a_model_of_unknown_price_refuses_to_start() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("never asked")]).unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--model", "llama3.2", "--max-cost", "0.5"],
        "hello",
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("--max-cost"), "{err}");
    assert!(err.contains("[pricing.\"llama3.2\"]"), "{err}");
    assert!(err.contains("input_per_mtok"), "{err}");
    assert_eq!(server.hits(), 0);

    // The same budget from the file names the key.
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[runtime]\nmax_cost = 0.5\n",
    )
    .unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--model", "llama3.2"], "hello");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("runtime.max_cost"), "{err}");
    assert!(err.contains("[pricing.\"llama3.2\"]"), "{err}");
    assert_eq!(server.hits(), 0);
}

/// Without a budget an unknown price is fine: the run goes on.
#[test]
fn an_unknown_price_without_a_budget_runs() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("hi there")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--model", "llama3.2"], "hello");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("hi there"));
}

/// A price given in `[pricing."MODEL"]` of a trusted file is counted, so the budget
/// stops the run.
#[test]
fn a_configured_price_makes_the_budget_enforced() {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(
        "[pricing.\"llama3.2\"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 1000.0\n",
    );
    let server = MockServer::start(vec![openai::text("expensive")]).unwrap();
    // 100 input and 20 output tokens at $1000 per million: $0.12.
    let output = sandbox.run_openai(
        &server.openai_url(),
        &[
            "--model",
            "llama3.2:3b",
            "--max-cost",
            "0.05",
            "--output",
            "jsonl",
        ],
        "hello",
    );
    let events = json_lines(&output);
    let errors = events_of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["kind"], "budget_exceeded", "{events:?}");
    assert_ne!(output.status.code(), Some(0));
}

/// A negative price in the file is refused, naming the key.
#[test]
fn a_negative_configured_price_is_refused_naming_the_key() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[pricing.\"m\"]\ninput_per_mtok = -1.0\noutput_per_mtok = 1.0\n",
    )
    .unwrap();
    let output = sandbox.run_openai("http://127.0.0.1:9/v1", &["--model", "m"], "hello");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("pricing.\"m\".input_per_mtok"),
        "{}",
        stderr(&output)
    );
}

/// `echo hi | oxydra run`: with no prompt argument and stdin not a terminal, the prompt
/// is read from stdin and sent to the provider.
#[test]
fn the_prompt_is_read_from_stdin_when_none_is_given() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("hello back")]).unwrap();
    let mut command = sandbox.stored_command("run");
    command.args(["--base-url", &server.openai_url()]);
    let output = output_with_stdin(command, b"say hello from stdin\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("hello back"),
        "{}",
        stdout(&output)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .body
            .to_string()
            .contains("say hello from stdin"),
        "the prompt from stdin never reached the provider"
    );
}

/// An empty stdin with no prompt argument is a missing prompt: exit 2, naming the
/// prompt, nothing sent.
#[test]
fn an_empty_stdin_without_a_prompt_is_a_missing_prompt() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("never asked")]).unwrap();
    let mut command = sandbox.stored_command("run");
    command.args(["--base-url", &server.openai_url(), "--output", "jsonl"]);
    let output = output_with_stdin(command, b"  \n");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("<PROMPT>"), "{}", stderr(&output));
    let events = json_lines(&output);
    assert_eq!(events_of_type(&events, "error").len(), 1, "{events:?}");
    assert_eq!(server.hits(), 0);
}

/// Text output prints a small cost rounded to a millionth, not as `$0.0000` nor with
/// float noise; JSONL keeps it a number, rounded the same way.
#[test]
fn costs_print_rounded() {
    let sandbox = Sandbox::new();
    // 100 input and 20 output tokens on gpt-4o-mini: 0.0000150 + 0.0000120 = $0.000027.
    let server = MockServer::start(vec![openai::text("cheap")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--model", "gpt-4o-mini"], "hi");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("· $0.000027 ·"), "{err}");

    let server = MockServer::start(vec![openai::text("cheap")]).unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--model", "gpt-4o-mini", "--output", "jsonl"],
        "hi",
    );
    let events = json_lines(&output);
    let last = events_of_type(&events, "final");
    assert_eq!(last.len(), 1, "{events:?}");
    assert_eq!(last[0]["cost"].as_f64(), Some(0.000_027), "{events:?}");
}

/// `--output jsonl` promises a closing `error` event: a command line clap refuses (a
/// bad number, an unknown provider, a missing prompt) prints it on stdout too, exit 2.
#[test]
fn jsonl_flag_errors_end_with_an_error_event() {
    let sandbox = Sandbox::new();
    let cases: [&[&str]; 4] = [
        &["run", "--output", "jsonl", "--max-turns", "abc", "hi"],
        &["run", "--output=jsonl", "--provider", "bard", "hi"],
        &[
            "run",
            "--output",
            "jsonl",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
        &["chat", "--output", "jsonl", "--turn-timeout", "-5"],
    ];
    for args in cases {
        let mut command = sandbox.command();
        command.args(args);
        let output = command.output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        let events = json_lines(&output);
        assert_eq!(events.len(), 1, "{args:?}: {events:?}");
        assert_eq!(events[0]["type"], "error", "{args:?}");
        assert_eq!(events[0]["kind"], "config", "{args:?}");
        let message = events[0]["message"].as_str().unwrap();
        assert!(!message.is_empty() && !message.contains('\n'), "{message}");
        // People still get clap's own message.
        assert!(stderr(&output).contains("error:"), "{args:?}");
    }
    // `--help` is no error: no event.
    let output = sandbox
        .command()
        .args(["run", "--output", "jsonl", "--help"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(!stdout(&output).contains("\"type\":\"error\""));
}

/// The attack: a negative budget. It reaches our validation, which names the flag.
#[test]
fn a_negative_max_cost_is_refused_naming_the_flag() {
    let sandbox = Sandbox::new();
    let output = sandbox.run_openai(
        "http://127.0.0.1:9/v1",
        &["--model", "gpt-4o", "--max-cost", "-1"],
        "hi",
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("invalid value for --max-cost: expected a positive number, found -1"),
        "{err}"
    );
}

/// The attack: an integer past any type's range in the file says it is too large,
/// naming the key, not "expected an integer, found an integer".
#[test]
fn a_huge_integer_in_the_config_is_too_large_naming_the_key() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[runtime]\nmax_turns = 99999999999999999999999\n",
    )
    .unwrap();
    let output = sandbox.run_openai("http://127.0.0.1:9/v1", &[], "hi");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("invalid value for runtime.max_turns: the number is too large"),
        "{err}"
    );
}

/// `git diff | oxydra run "Review this"`: text piped in beside a prompt argument follows
/// the prompt after a blank line, in the one user message sent.
#[test]
fn text_piped_beside_a_prompt_follows_it() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("reviewed")]).unwrap();
    let mut command = sandbox.stored_command("run");
    command.args(["--base-url", &server.openai_url(), "Summarise this"]);
    let output = output_with_stdin(command, b"the piped notes\nsecond line\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let users: Vec<String> = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .map(|message| message["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        users,
        vec!["Summarise this\n\nthe piped notes\nsecond line".to_owned()]
    );
}

/// `--continue` goes on with the newest session of the workspace it runs in, never
/// with a newer one of another workspace; with none there it says so (exit 2).
#[test]
fn continue_picks_the_newest_session_of_this_workspace() {
    let sandbox = Sandbox::new();
    let other = sandbox.path().join("other-ws");
    std::fs::create_dir_all(&other).unwrap();
    let server = MockServer::start(vec![
        openai::text("first answer"),
        openai::text("other answer"),
        openai::text("continued"),
    ])
    .unwrap();
    let url = server.openai_url();
    let first = sandbox.run_openai(&url, &["--json"], "first task here");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let first_session = json_lines(&first).last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A newer session in another workspace (`-C`).
    let mut elsewhere = sandbox.command();
    elsewhere
        .args(["run", "--db"])
        .arg(&sandbox.db)
        .arg("-C")
        .arg(&other)
        .args(["--base-url", &url, "task elsewhere"]);
    let elsewhere = elsewhere.output().unwrap();
    assert_eq!(elsewhere.status.code(), Some(0), "{}", stderr(&elsewhere));
    let continued = sandbox.run_openai(&url, &["--continue", "--json"], "and then?");
    assert_eq!(continued.status.code(), Some(0), "{}", stderr(&continued));
    let final_event = json_lines(&continued).last().unwrap().clone();
    assert_eq!(final_event["session_id"], first_session.as_str());
    // The continued request carries the first task, not the other workspace's.
    let third = &server.requests()[2].body.to_string();
    assert!(third.contains("first task here"), "{third}");
    assert!(!third.contains("task elsewhere"), "{third}");

    let empty = sandbox.path().join("empty-ws");
    std::fs::create_dir_all(&empty).unwrap();
    let mut none = sandbox.command();
    none.args(["run", "--continue", "--db"])
        .arg(&sandbox.db)
        .arg("-C")
        .arg(&empty)
        .args(["--base-url", &url, "hello"]);
    let none = none.output().unwrap();
    assert_eq!(none.status.code(), Some(2), "{}", stderr(&none));
    assert!(
        stderr(&none).contains("no stored session to continue in workspace"),
        "{}",
        stderr(&none)
    );

    // The listing names each session's workspace, and `-n` limits it.
    let listed = sandbox.sessions(&["list", "--all", "--json", "-n", "1"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let lines = json_lines(&listed);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["session_id"], first_session.as_str());
    let workspace = std::fs::canonicalize(&sandbox.workspace).unwrap();
    assert_eq!(lines[0]["workspace"], workspace.to_str().unwrap());
}

/// `oxydra sessions show ID | head -1`: the reader leaves early, and the command exits 0
/// without an error line.
#[test]
fn a_listing_whose_reader_leaves_exits_quietly() {
    let sandbox = Sandbox::new();
    let replies: Vec<_> = (0..1)
        .map(|_| openai::text(&"a long answer line\n".repeat(20_000)))
        .collect();
    let server = MockServer::start(replies).unwrap();
    let run = sandbox.run_openai(&server.openai_url(), &["--json"], "talk a lot");
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let session = json_lines(&run).last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let script = format!(
        "\"$OXYDRA\" sessions show {session} --db \"$DB\" | head -c 10 >/dev/null; echo \"status=${{PIPESTATUS[0]}}\""
    );
    let mut command = sandbox.command();
    let output = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("OXYDRA", env!("CARGO_BIN_EXE_oxydra"))
        .env("DB", &sandbox.db)
        .envs(command_env(&mut command))
        .output()
        .unwrap();
    assert_eq!(stdout(&output).trim(), "status=0", "{}", stderr(&output));
    assert!(!stderr(&output).contains("error"), "{}", stderr(&output));
}

/// The environment the sandbox gives its commands (home, config and data dirs).
fn command_env(
    command: &mut std::process::Command,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    command
        .get_envs()
        .filter_map(|(key, value)| Some((key.to_owned(), value?.to_owned())))
        .collect()
}
