#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Ctrl-C and the interactive `oxydra chat`.

mod common;

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use common::{Sandbox, json_lines, stderr};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use oxydra_e2e::{ScriptServer, openai};

#[test]
fn sigint_mid_run_exits_130_and_keeps_the_session() {
    let sandbox = Sandbox::new();
    let server = ScriptServer::start(vec![openai::hold_after_text("Working on it")]).unwrap();
    let mut command = sandbox.command();
    command
        .args([
            "run",
            "--base-url",
            &server.openai_url(),
            "--output",
            "jsonl",
        ])
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .arg("A long task")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    assert!(
        server.wait_for_requests(1, Duration::from_secs(10)),
        "no request arrived"
    );
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(last["kind"], "cancelled");

    // The user's message was stored before the provider call, and stays.
    let list = sandbox.sessions(&["list", "--output", "jsonl"]);
    let sessions = json_lines(&list);
    assert_eq!(sessions.len(), 1, "{}", stderr(&list));
    let id = sessions[0]["session_id"].as_str().unwrap();
    let show = sandbox.sessions(&["show", id, "--output", "jsonl"]);
    let messages = json_lines(&show);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], "A long task");
}

#[test]
fn chat_reads_lines_and_commands_from_stdin() {
    let sandbox = Sandbox::new();
    let server = ScriptServer::start(vec![
        openai::text("First answer."),
        openai::text("Second answer."),
    ])
    .unwrap();
    let mut command = sandbox.command();
    command
        .args([
            "chat",
            "--base-url",
            &server.openai_url(),
            "--output",
            "jsonl",
        ])
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"hello\n/bogus\n/new\nagain\n/sessions\n/exit\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let finals: Vec<_> = json_lines(&output)
        .into_iter()
        .filter(|e| e["type"] == "final")
        .collect();
    assert_eq!(finals.len(), 2);
    assert_eq!(finals[0]["text"], "First answer.");
    assert_eq!(finals[1]["text"], "Second answer.");
    // /new started a second session.
    assert_ne!(finals[0]["session_id"], finals[1]["session_id"]);
    let err = stderr(&output);
    assert!(err.contains("unknown command `/bogus`"), "{err}");
    assert!(err.contains("new session ses_"), "{err}");
    // The second request is a fresh conversation.
    let second = &server.requests()[1].body["messages"];
    assert!(!second.to_string().contains("hello"));
}
