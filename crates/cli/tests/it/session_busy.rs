//! Two `oxydra run --session S` at once: one writes the session, the other fails with
//! `session_busy` (exit 1) and writes nothing; the stored session stays well-formed and
//! the next run sends the provider one result per call, in place. A session stored
//! interleaved (by runs before sessions had one writer) is repaired on restore.

use crate::common;

use std::process::ExitStatus;
use std::time::Instant;

use common::{
    Captured, KillOnDrop, PATIENCE, Sandbox, assert_exit_code, interrupt, json_lines, json_values,
    spawn_captured, stderr,
};
use oxydra::memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra::types::{CallId, Message, SessionId, ToolCall};
use oxydra_test_support::{MockServer, openai};
use serde_json::Value;

/// Whether `messages` (stored messages or a request's, as JSON) satisfy the restore
/// invariant: each assistant message with tool calls is followed at once by one tool
/// message per call, in call order, and no tool message stands anywhere else.
fn well_formed(messages: &[Value]) -> Result<(), String> {
    let mut position = 0;
    while let Some(message) = messages.get(position) {
        position += 1;
        match message["role"].as_str() {
            Some("tool") => return Err(format!("tool message out of place at {}", position - 1)),
            Some("assistant") => {
                let calls = message["tool_calls"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                for call in calls {
                    let id = &call["id"];
                    let next = messages.get(position);
                    if next.is_none_or(|m| m["role"] != "tool" || &m["tool_call_id"] != id) {
                        return Err(format!("call {id} not answered right after its message"));
                    }
                    position += 1;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Waits until one of `children` exits; returns its index and status.
fn first_exit(children: &mut [KillOnDrop; 2], outputs: &[Captured; 2]) -> (usize, ExitStatus) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        for (index, child) in children.iter_mut().enumerate() {
            if let Some(status) = child.try_wait().unwrap() {
                return (index, status);
            }
        }
        assert!(
            Instant::now() < deadline,
            "neither run ended: {} / {}",
            outputs[0].text(),
            outputs[1].text()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn two_runs_on_one_session_at_once_one_fails_busy_and_the_session_stays_well_formed() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "alpha").unwrap();
    std::fs::write(sandbox.workspace.join("b.txt"), "beta").unwrap();
    // Fail fast: the held run never ends by itself.
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[runtime]\nsession_wait_secs = 0.5\n",
    )
    .unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[
            ("call_a", "file_read", r#"{"path":"a.txt"}"#),
            ("call_b", "file_read", r#"{"path":"b.txt"}"#),
        ]),
        openai::text("Both read."),
        // The run that gets the session is held here, so it keeps holding it.
        openai::hold_after_text("Working on it"),
        openai::text("Continued."),
    ])
    .unwrap();

    // A session with a tool-calling turn in it.
    let mut command = sandbox.oxydra_command(&server, "run");
    command.arg("Read a.txt and b.txt");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let session = json_lines(&output).last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Two runs continue it at once.
    let spawn = |prompt: &str| {
        let mut command = sandbox.oxydra_command(&server, "run");
        command.args(["--session", &session, prompt]);
        spawn_captured(command)
    };
    let (one, one_out, one_err) = spawn("task one");
    let (two, two_out, two_err) = spawn("task two");
    let mut children = [one, two];
    let outputs = [one_out, two_out];
    let errors = [one_err, two_err];

    // Exactly one fails, busy: exit 1, an `error` event of kind `session_busy` naming
    // the holder's pid, and the same on stderr.
    let (loser, status) = first_exit(&mut children, &outputs);
    let winner = 1 - loser;
    let winner_pid = children[winner].id();
    let loser_out = outputs[loser].all();
    assert_eq!(
        status.code(),
        Some(1),
        "{loser_out}\n{}",
        errors[loser].all()
    );
    let events = json_values(&loser_out);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error", "{loser_out}");
    assert_eq!(last["kind"], "session_busy", "{loser_out}");
    let message = last["message"].as_str().unwrap();
    let expected = format!("session {session} is in use by another run (pid {winner_pid}, since ");
    assert!(message.starts_with(&expected), "{message}");
    let loser_err = errors[loser].all();
    assert!(loser_err.contains(&expected), "{loser_err}");
    assert!(
        loser_err.contains("try again when it has finished"),
        "{loser_err}"
    );
    assert!(!loser_err.contains("keeps what was done"), "{loser_err}");
    // Nothing reached the provider from the loser, and the winner is still running.
    assert!(
        server.wait_for_requests(3, PATIENCE),
        "the winner never asked the provider: {}",
        outputs[winner].text()
    );
    assert!(children[winner].try_wait().unwrap().is_none());
    assert_eq!(server.requests().len(), 3);

    // The winner is stopped; what it stored stays.
    interrupt(&children[winner]);
    assert_exit_code(&mut children[winner], 130, &outputs[winner]);

    let show = sandbox.sessions(&["show", &session, "--output", "jsonl"]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    let stored = json_lines(&show);
    well_formed(&stored).unwrap_or_else(|error| panic!("{error}: {stored:#?}"));
    let prompts: Vec<&str> = stored
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    let (winner_prompt, loser_prompt) = if winner == 0 {
        ("task one", "task two")
    } else {
        ("task two", "task one")
    };
    assert_eq!(
        prompts,
        ["Read a.txt and b.txt", winner_prompt],
        "{loser_prompt} was stored"
    );
    let results: Vec<&str> = stored
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["call_a", "call_b"]);

    // The session is free again, and the next request is well-formed.
    let mut command = sandbox.oxydra_command(&server, "run");
    command.args(["--session", &session, "go on"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let request = &server.requests()[3].body;
    let messages = request["messages"].as_array().unwrap();
    well_formed(messages).unwrap_or_else(|error| panic!("{error}: {messages:#?}"));
    let tool_ids: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_ids, ["call_a", "call_b"]);
}

/// What two runs of the same script stored on one session before leases: both users'
/// messages, both calls with the same ids, four results, both answers — interleaved.
fn interleaved_session() -> Vec<Message> {
    let calls = || {
        Message::assistant_with_tool_calls(
            None,
            vec![
                ToolCall::new(CallId::from("call_a"), "file_read", r#"{"path":"a.txt"}"#),
                ToolCall::new(CallId::from("call_b"), "file_read", r#"{"path":"b.txt"}"#),
            ],
        )
    };
    let result = |id: &str, run: &str| {
        Message::tool_result(CallId::from(id), "file_read", format!("{run}: {id}"))
    };
    vec![
        Message::user("task one"),
        Message::user("task two"),
        calls(),
        calls(),
        result("call_a", "one"),
        result("call_b", "one"),
        Message::assistant("one done"),
        result("call_a", "two"),
        result("call_b", "two"),
        result("call_b", "stray duplicate"),
        Message::assistant("two done"),
    ]
}

#[test]
fn a_session_stored_interleaved_is_sent_well_formed() {
    let sandbox = Sandbox::new();
    let session = SessionId::from("ses_interleaved");
    std::fs::create_dir_all(sandbox.db.parent().unwrap()).unwrap();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let memory = SqliteMemory::open(&sandbox.db, SqliteConfig::default()).unwrap();
        memory
            .append_many(&session, &interleaved_session())
            .await
            .unwrap();
    });
    let server = MockServer::start(vec![openai::text("Continued.")]).unwrap();
    let mut command = sandbox.oxydra_command(&server, "run");
    command.args(["--session", session.as_str(), "go on"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let request = &server.requests()[0].body;
    let messages = request["messages"].as_array().unwrap();
    well_formed(messages).unwrap_or_else(|error| panic!("{error}: {messages:#?}"));
    // Four results for four calls (the stray duplicate dropped), each after its call.
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "assistant",
            "user"
        ]
    );
    // The stored session itself is left as it was: repairs are made on restore.
    let show = sandbox.sessions(&["show", session.as_str(), "--output", "jsonl"]);
    assert_eq!(json_lines(&show).len(), interleaved_session().len() + 2);
}

#[test]
fn a_run_killed_with_sigkill_does_not_lock_its_session() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[runtime]\nsession_wait_secs = 0.5\n",
    )
    .unwrap();
    let server = MockServer::start(vec![
        openai::hold_after_text("Working on it"),
        openai::text("Continued."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_command(&server, "run");
    command.arg("first");
    let (mut child, output, _) = spawn_captured(command);
    assert!(
        server.wait_for_requests(1, PATIENCE),
        "no request arrived: {}",
        output.text()
    );
    // Killed holding the session's lease, well within its time to live.
    child.kill().unwrap();
    child.wait().unwrap();
    let list = sandbox.sessions(&["list", "--all", "--output", "jsonl"]);
    let session = json_lines(&list)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Its process is gone, so the next run takes the session over at once.
    let mut command = sandbox.oxydra_command(&server, "run");
    command.args(["--session", &session, "second"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json_lines(&output).last().unwrap()["text"], "Continued.");
}
