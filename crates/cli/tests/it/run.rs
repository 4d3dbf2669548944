//! `oxydra run` end to end against local OpenAI- and Anthropic-format servers.

use crate::common;

use common::{Sandbox, events_of_type, json_lines, shape, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

fn tool_messages(body: &serde_json::Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn multi_turn_task_streams_every_event_and_stores_the_session() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "alpha contents").unwrap();
    std::fs::write(sandbox.workspace.join("b.txt"), "beta contents").unwrap();
    std::fs::write(sandbox.workspace.join("c.txt"), "gamma contents").unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[
            ("call_a", "file_read", r#"{"path":"a.txt"}"#),
            ("call_b", "file_read", r#"{"path":"b.txt"}"#),
        ]),
        openai::tool_calls(&[("call_bad", "file_read", r#"{"paht":"c.txt"}"#)]),
        openai::tool_calls(&[
            ("call_c", "file_read", r#"{"path":"c.txt"}"#),
            (
                "call_w",
                "file_write",
                r#"{"path":"out.txt","content":"alpha+beta+gamma"}"#,
            ),
        ]),
        openai::tool_calls(&[(
            "call_sh",
            "shell_exec",
            r#"{"command":"echo should-not-run > ran.txt"}"#,
        )]),
        openai::text("All three files read; summary written."),
    ])
    .unwrap();

    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--output", "jsonl", "--approve", "deny"],
        "Summarise a.txt, b.txt and c.txt into out.txt",
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let events = json_lines(&output);
    assert_eq!(
        shape(&events),
        vec![
            "progress provider_call 1",
            "progress tool_execution 1",
            "started file_read read_only",
            "started file_read read_only",
            "completed file_read",
            "completed file_read",
            "turn 1",
            "progress provider_call 2",
            "progress tool_execution 2",
            "started file_read read_only",
            "failed file_read",
            "turn 2",
            "progress provider_call 3",
            "progress tool_execution 3",
            // tool_started for the whole batch, in request order, before any work.
            "started file_read read_only",
            "started file_write side_effecting",
            "completed file_read",
            "completed file_write",
            "turn 3",
            "progress provider_call 4",
            "progress tool_execution 4",
            "started shell_exec privileged",
            "failed shell_exec",
            "turn 4",
            "progress provider_call 5",
            "text",
            "turn 5",
            "final",
        ],
        "{}",
        stdout(&output)
    );
    // Progress events carry the seed-003 message and the budget.
    assert_eq!(
        events[1]["message"],
        "[1/8] Executing tools: file_read, file_read"
    );
    assert_eq!(events[1]["max_turns"], 8);
    // The final event closes the stream with the answer and the totals.
    let last = events.last().unwrap();
    assert_eq!(last["text"], "All three files read; summary written.");
    assert_eq!(last["turns"], 5);
    assert!(last["usage"]["input_tokens"].as_u64().unwrap() >= 500);
    let session = last["session_id"].as_str().unwrap().to_owned();

    // Side effects: the write happened, the denied command did not run.
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("out.txt")).unwrap(),
        "alpha+beta+gamma"
    );
    assert!(!sandbox.workspace.join("ran.txt").exists());

    // What the model saw: results in request order, the validation error, the denial.
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests.iter().all(|r| r.path == "/v1/chat/completions"));
    assert!(
        requests.iter().all(|r| r.authorization().is_none()),
        "no auth for --base-url alone"
    );
    assert_eq!(requests[0].body["stream"], true);
    assert_eq!(requests[0].body["model"], "gpt-4o-mini");
    let results = tool_messages(&requests[1].body);
    assert_eq!(results[0].0, "call_a");
    assert!(results[0].1.contains("alpha contents"));
    assert_eq!(results[1].0, "call_b");
    assert!(results[1].1.contains("beta contents"));
    let bad = tool_messages(&requests[2].body);
    assert_eq!(bad.last().unwrap().0, "call_bad");
    assert!(
        bad.last().unwrap().1.starts_with("Tool execution failed"),
        "{bad:?}"
    );
    let denied = tool_messages(&requests[4].body);
    assert_eq!(denied.last().unwrap().0, "call_sh");
    assert!(
        denied
            .last()
            .unwrap()
            .1
            .starts_with("Tool execution failed")
    );

    // sessions list / show show what was stored.
    let list = sandbox.sessions(&["list", "--all", "--output", "jsonl"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let sessions = json_lines(&list);
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["session_id"], session.as_str());
    let show = sandbox.sessions(&["show", &session, "--output", "jsonl"]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    let messages = json_lines(&show);
    assert_eq!(sessions[0]["messages"], messages.len());
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    let sequences: Vec<u64> = messages
        .iter()
        .map(|m| m["sequence"].as_u64().unwrap())
        .collect();
    assert!(sequences.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_a");
    assert_eq!(messages[2]["tool_call_id"], "call_a");

    // --session continues it: the provider sees the earlier conversation.
    let next = MockServer::start(vec![openai::text("Still here.")]).unwrap();
    let output = sandbox.run_openai(
        &next.openai_url(),
        &["--output", "jsonl", "--session", &session],
        "Anything else?",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let body = &next.requests()[0].body;
    let sent: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        sent.iter().any(|c| c.contains("Summarise a.txt")),
        "{sent:?}"
    );
    assert!(sent.contains(&"Anything else?"));
    let show = sandbox.sessions(&["show", &session, "--output", "jsonl"]);
    assert_eq!(json_lines(&show).len(), messages.len() + 2);
}

#[test]
fn approved_privileged_call_runs_and_text_output_reads_well() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::tool_calls(&[(
            "call_sh",
            "shell_exec",
            r#"{"command":"echo approved-ran"}"#,
        )]),
        openai::text("The command printed approved-ran."),
    ])
    .unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--approve", "allow"], "Run it");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Text mode: the answer on stdout, tool lines and the summary on stderr.
    assert_eq!(stdout(&output), "The command printed approved-ran.\n");
    let err = stderr(&output);
    assert!(err.contains("✓ shell_exec echo approved-ran ("), "{err}");
    assert!(err.contains("2 turns"), "{err}");
    assert!(err.contains("tokens"), "{err}");
    assert!(err.contains('$'), "{err}");
    let results = tool_messages(&server.requests()[1].body);
    assert!(results[0].1.contains("approved-ran"), "{results:?}");
}

#[test]
fn unknown_session_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--session", "ses_nope"], "hi");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("session `ses_nope` not found"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn jsonl_ends_with_an_error_event_even_when_the_run_cannot_start() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![]).unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--session", "ses_nope", "--output", "jsonl"],
        "hi",
    );
    assert_eq!(output.status.code(), Some(2));
    let events = json_lines(&output);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "error");
    assert_eq!(events[0]["kind"], "session_not_found");
    assert!(events[0]["message"].as_str().unwrap().contains("ses_nope"));

    // With nothing configured: the no-provider error, as an event too.
    let output = sandbox
        .command()
        .args(["run", "--output", "jsonl", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let events = json_lines(&output);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["kind"], "no_provider");
    // Text output keeps stdout empty.
    let output = sandbox.command().args(["run", "hi"]).output().unwrap();
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
}

/// The store opens beside the provider's and the tools' set-up: a file that is not a
/// database is still the error of the run (named with its path, kind `memory`), and
/// nothing is sent to the provider.
#[test]
fn a_database_that_cannot_open_is_the_error_and_nothing_is_sent() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![]).unwrap();
    let junk = sandbox.path().join("junk.db");
    std::fs::write(
        &junk,
        "not a database, only text long enough to hold a header ".repeat(4),
    )
    .unwrap();
    let junk_arg = junk.to_str().unwrap();
    let output = sandbox
        .command()
        .args(["run", "--base-url", &server.openai_url(), "--db", junk_arg])
        .args(["--output", "jsonl", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let events = json_lines(&output);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["kind"], "memory");
    let message = events[0]["message"].as_str().unwrap();
    assert!(
        message.contains(junk_arg) && message.contains("not a database"),
        "{message}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn budget_exhaustion_exits_3_with_an_error_event() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "x").unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("c1", "file_read", r#"{"path":"a.txt"}"#)]),
        openai::tool_calls(&[("c2", "file_list", r#"{}"#)]),
    ])
    .unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--output", "jsonl", "--max-turns", "2"],
        "loop",
    );
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(last["kind"], "budget_exceeded");
    assert_eq!(events_of_type(&events, "error").len(), 1);
}

#[test]
fn anthropic_format_server_runs_a_tool_turn() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.workspace.join("notes.md"),
        "# Notes\nship on friday",
    )
    .unwrap();
    let server = MockServer::start(vec![
        oxydra_test_support::anthropic::tool_uses(&[(
            "toolu_1",
            "file_read",
            r#"{"path":"notes.md"}"#,
        )]),
        oxydra_test_support::anthropic::text("We ship on Friday."),
    ])
    .unwrap();
    let mut command = sandbox.stored_command("run");
    command
        .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
        .args(["--provider", "anthropic", "--base-url", &server.url("")])
        .args(["--output", "jsonl", "When do we ship?"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["text"], "We ship on Friday.");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool_completed" && e["name"] == "file_read")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.path == "/v1/messages"));
    assert_eq!(requests[0].body["model"], "claude-sonnet-4-5");
    // --base-url alone means no key is sent, even with ANTHROPIC_API_KEY set.
    assert!(requests[0].api_key().is_none());
    let second = requests[1].body.to_string();
    assert!(second.contains("ship on friday"), "{second}");
}

#[test]
fn api_key_env_sends_the_named_variable_to_a_base_url_with_no_config_file() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("ok"), openai::text("ok")]).unwrap();
    // An exported OPENAI_API_KEY is not sent to another host's --base-url...
    let mut command = sandbox.stored_command("run");
    command
        .env("OPENAI_API_KEY", "sk-not-for-this-host")
        .env("GATEWAY_KEY", "gw-key-value")
        .args(["--base-url", &server.openai_url(), "hi"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // ...and --api-key-env names the one that is.
    let mut command = sandbox.stored_command("run");
    command
        .env("OPENAI_API_KEY", "sk-not-for-this-host")
        .env("GATEWAY_KEY", "gw-key-value")
        .args(["--base-url", &server.openai_url()])
        .args(["--api-key-env", "GATEWAY_KEY", "hi"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests[0].authorization(), None);
    assert_eq!(requests[1].authorization(), Some("Bearer gw-key-value"));

    // An unset variable: exit 2 naming it and the flag; nothing is sent.
    let mut command = sandbox.stored_command("run");
    command.args(["--base-url", &server.openai_url()]).args([
        "--api-key-env",
        "NOT_SET_HERE",
        "hi",
    ]);
    let output = command.output().unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("NOT_SET_HERE") && err.contains("--api-key-env"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn api_key_from_the_environment_is_sent_to_the_configured_server() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("ok")]).unwrap();
    sandbox.write_trusted_config(&format!(
        "[provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"local-model\"\napi_key_env = \"MY_KEY\"\n",
        server.openai_url()
    ));
    let mut command = sandbox.stored_command("run");
    command.env("MY_KEY", "secret-key-value").arg("hi");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let request = &server.requests()[0];
    assert_eq!(request.authorization(), Some("Bearer secret-key-value"));
    assert_eq!(request.body["model"], "local-model");
}

#[test]
fn file_read_of_a_ten_megabyte_file_names_the_real_last_line_and_latin1_arrives_decoded() {
    let sandbox = Sandbox::new();
    // 200,000 lines of 50 bytes: 10 MB; 16 KiB of output holds 327 whole lines.
    let line = |i: u64| format!("{i:08} {}\n", "x".repeat(40));
    let text: String = (1..=200_000).map(line).collect();
    std::fs::write(sandbox.workspace.join("big.log"), &text).unwrap();
    std::fs::write(sandbox.workspace.join("menu.txt"), b"caf\xe9\n").unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[
            ("call_big", "file_read", r#"{"path":"big.log"}"#),
            ("call_l1", "file_read", r#"{"path":"menu.txt"}"#),
        ]),
        openai::tool_calls(&[(
            "call_on",
            "file_read",
            r#"{"path":"big.log","offset":328,"limit":2}"#,
        )]),
        openai::text("Read."),
    ])
    .unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--output", "jsonl"],
        "Read big.log and menu.txt",
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let results = tool_messages(&requests[1].body);
    assert_eq!(results[0].0, "call_big");
    let big = &results[0].1;
    assert!(big.starts_with(&line(1)), "{}", &big[..60]);
    assert!(
        big.contains(&line(327)),
        "the last line shown is in the result"
    );
    assert!(!big.contains(&line(328)), "no line past the one named");
    assert!(
        big.ends_with("[showed lines 1-327 of 200000 (16 KiB limit); read on with offset=328]"),
        "{}",
        &big[big.len().saturating_sub(120)..]
    );
    assert_eq!(results[1].0, "call_l1");
    assert_eq!(results[1].1, "café\n[decoded as Latin-1: not valid UTF-8]");
    // Reading on from the offset given continues with the next line.
    let on = tool_messages(&requests[2].body);
    assert_eq!(on.last().unwrap().0, "call_on");
    assert!(
        on.last()
            .unwrap()
            .1
            .starts_with(&format!("{}{}", line(328), line(329))),
        "{}",
        on.last().unwrap().1
    );
}

#[test]
fn a_text_run_starts_with_one_header_line_naming_what_runs_and_its_powers() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("ok"), openai::text("ok")]).unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--sandbox", "read-only", "--approve", "deny"],
        "hi",
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(
            "oxydra run · openai gpt-4o-mini · sandbox read-only · approve deny · workspace "
        ),
        "{err}"
    );
    assert!(
        first.contains(&sandbox.workspace.display().to_string()),
        "{first}"
    );
    // stdout is the answer alone.
    assert_eq!(stdout(&output).trim(), "ok");

    // A model name is shown on one line, its escape sequences never sent to the terminal.
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--model", "m\u{1b}]0;owned\u{7}\u{1b}[2J\nx"],
        "hi",
    );
    let err = stderr(&output);
    let first = err.lines().next().unwrap_or_default();
    assert!(first.starts_with("oxydra run · openai m"), "{err:?}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
}
