#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! `oxydra chat`: its commands with piped lines, and `/cancel` and Ctrl-C typed on a
//! terminal.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::{Captured, KillOnDrop, Sandbox, json_values, spawn_in_pty, wait_exit};
use oxydra_e2e::{ScriptServer, openai};

const FINAL: &str = r#""type":"final""#;

fn chat_command(
    sandbox: &Sandbox,
    server: &ScriptServer,
    mut command: std::process::Command,
) -> std::process::Command {
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
        .arg(&sandbox.workspace);
    command
}

#[test]
fn switch_continues_a_stored_session_and_a_bad_id_is_reported() {
    let sandbox = Sandbox::new();
    let server = ScriptServer::start(vec![
        openai::text("First answer."),
        openai::text("Second answer."),
    ])
    .unwrap();
    let mut command = chat_command(&sandbox, &server, sandbox.command());
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = KillOnDrop(command.spawn().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let stdout = Captured::start(child.stdout.take().unwrap());
    let stderr = Captured::start(child.stderr.take().unwrap());

    stdin.write_all(b"hello\n/new\n").unwrap();
    let first = json_values(&stdout.wait_for(FINAL))
        .into_iter()
        .find(|event| event["type"] == "final")
        .unwrap();
    let id = first["session_id"].as_str().unwrap().to_owned();
    stderr.wait_for("new session ses_");
    writeln!(stdin, "/switch nope\n/switch {id}\nagain\n/exit").unwrap();
    drop(stdin);
    let status = wait_exit(&mut child, &|| stderr.text());
    let err = stderr.text();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("error: session `nope` not found"), "{err}");
    assert!(err.contains(&format!("switched to session {id}")), "{err}");

    let finals: Vec<_> = json_values(&stdout.text())
        .into_iter()
        .filter(|event| event["type"] == "final")
        .collect();
    assert_eq!(finals.len(), 2, "{}", stdout.text());
    assert_eq!(finals[1]["text"], "Second answer.");
    assert_eq!(finals[1]["session_id"], id.as_str());
    // The second request carries the first session's history.
    let second = server.requests()[1].body["messages"].to_string();
    assert!(second.contains("hello"), "{second}");
    assert!(second.contains("First answer."), "{second}");
    assert!(second.contains("again"), "{second}");
}

#[test]
fn cancel_typed_during_a_turn_cancels_it_and_the_prompt_returns() {
    let sandbox = Sandbox::new();
    let server = ScriptServer::start(vec![
        openai::hold_after_text("Working on it"),
        openai::text("Second answer."),
    ])
    .unwrap();
    let command = chat_command(&sandbox, &server, sandbox.pty_command());
    let (mut child, mut pty) = spawn_in_pty(command);
    pty.output.wait_for("oxydra> ");
    // Enter in a terminal is a carriage return.
    pty.type_text("a long task\r");
    assert!(
        server.wait_for_requests(1, common::PATIENCE),
        "no request arrived: {}",
        pty.output.text()
    );
    pty.type_text("are you there?\r");
    pty.output
        .wait_for("a turn is running — /cancel or Ctrl-C stops it");
    pty.type_text("/cancel\r");
    pty.output
        .wait_for_after(r#""kind":"cancelled""#, "oxydra> ");

    // The chat goes on in the same session.
    pty.type_text("and now?\r");
    pty.output
        .wait_for_after(r#""text":"Second answer.""#, "oxydra> ");
    pty.type_text("/exit\r");
    let status = wait_exit(&mut child, &|| pty.output.text());
    assert_eq!(status.code(), Some(0), "{}", pty.output.text());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("a long task"), "{second}");
    assert!(!second.contains("are you there?"), "{second}");
}

#[test]
fn ctrl_c_typed_during_a_turn_cancels_it_and_twice_at_the_prompt_quits() {
    let sandbox = Sandbox::new();
    let server = ScriptServer::start(vec![openai::hold_after_text("Working on it")]).unwrap();
    let command = chat_command(&sandbox, &server, sandbox.pty_command());
    let (mut child, mut pty) = spawn_in_pty(command);
    pty.output.wait_for("oxydra> ");
    pty.type_text("a long task\r");
    assert!(
        server.wait_for_requests(1, common::PATIENCE),
        "no request arrived: {}",
        pty.output.text()
    );
    // The terminal turns Ctrl-C into SIGINT while the turn runs (cooked mode).
    pty.type_text("\x03");
    pty.output
        .wait_for_after(r#""kind":"cancelled""#, "oxydra> ");
    // At the prompt the editor reads Ctrl-C as a key: once warns, twice quits.
    pty.type_text("\x03");
    pty.output
        .wait_for_after("(press Ctrl-C again or type /exit to quit)", "oxydra> ");
    pty.type_text("\x03");
    let status = wait_exit(&mut child, &|| pty.output.text());
    assert_eq!(status.code(), Some(130), "{}", pty.output.text());
}
