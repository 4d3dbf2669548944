//! Consent asked in a real terminal: `oxydra run --approve ask` and `oxydra chat` on a
//! pseudo-terminal, answered by typing on it; the time a person takes to answer does
//! not count against `--turn-timeout`.

use crate::common;

use std::time::{Duration, Instant};

use common::{
    KillOnDrop, Pty, Sandbox, assert_exit_code, interrupt, spawn_chat_in_pty, spawn_in_pty, stderr,
};
use oxydra_test_support::{MockServer, Reply, openai};

const QUESTION: &str = "Allow? [y/a/n]: ";

/// A server whose model calls `shell_exec` (`echo approved > ran.txt`), answers
/// "Done." to its result, then gives the `later` replies.
fn server_calling_shell_exec(later: Vec<Reply>) -> MockServer {
    let mut replies = vec![
        openai::tool_calls(&[(
            "call_sh",
            "shell_exec",
            r#"{"command":"echo approved > ran.txt"}"#,
        )]),
        openai::text("Done."),
    ];
    replies.extend(later);
    MockServer::start(replies).unwrap()
}

/// Runs a task whose model calls `shell_exec`, answers the question with `answer`,
/// and returns the sandbox, the server and everything the terminal showed.
fn run_answering(answer: &str) -> (Sandbox, MockServer, String) {
    let sandbox = Sandbox::new();
    let server = server_calling_shell_exec(vec![]);
    let mut command = sandbox.oxydra_pty_command(&server, "run");
    command.args(["--approve", "ask", "Run the command"]);
    let (mut child, mut pty) = spawn_in_pty(command);
    let shown = pty.output.wait_for(QUESTION);
    assert!(
        shown.contains("shell_exec (privileged) asks for permission"),
        "{shown}"
    );
    assert!(shown.contains("echo approved > ran.txt"), "{shown}");
    pty.type_text(&format!("{answer}\n"));
    assert_exit_code(&mut child, 0, &pty.output);
    (sandbox, server, pty.output.all())
}

#[test]
fn time_spent_answering_does_not_count_against_the_turn_timeout() {
    let sandbox = Sandbox::new();
    // The question waits as long as a run of `serve` waits for a decision.
    sandbox.write_trusted_config("[serve]\napproval_ttl_secs = 5\n");
    let server = server_calling_shell_exec(vec![]);
    let mut command = sandbox.oxydra_pty_command(&server, "run");
    // No sandbox: its first command probes the kernel (a fork, namespaces, a mount),
    // which on a loaded CI machine took the turn's whole budget after the answer; the
    // question and its clock are the same either way.
    command.args([
        "--approve",
        "ask",
        "--sandbox",
        "full-access",
        "--turn-timeout",
        "0.6",
        "Run the command",
    ]);
    let (mut child, mut pty) = spawn_in_pty(command);
    let shown = pty.output.wait_for(QUESTION);
    assert!(
        shown.contains("waits up to 5 s for your answer; the turn's timeout stands still"),
        "{shown}"
    );
    // The person answers after half as long again as the turn's timeout.
    let asked = Instant::now();
    std::thread::sleep(Duration::from_millis(900));
    pty.type_text("y\n");
    assert!(asked.elapsed() > Duration::from_millis(800));
    assert_exit_code(&mut child, 0, &pty.output);
    let ran = std::fs::read_to_string(sandbox.workspace.join("ran.txt")).unwrap();
    assert_eq!(ran.trim(), "approved");
    let text = pty.output.all();
    assert!(text.contains(r#""type":"final""#), "{text}");
    assert!(!text.contains("cancelled"), "{text}");
    assert!(!tool_result(&server).contains("denied"));
}

/// The content of the tool result the model saw in the second request.
fn tool_result(server: &MockServer) -> String {
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let tool = messages
        .iter()
        .find(|message| message["role"] == "tool")
        .expect("a tool result");
    assert_eq!(tool["tool_call_id"], "call_sh");
    tool["content"].as_str().unwrap_or("").to_owned()
}

#[test]
fn yes_on_the_terminal_runs_the_command() {
    let (sandbox, server, text) = run_answering("y");
    let ran = std::fs::read_to_string(sandbox.workspace.join("ran.txt")).unwrap();
    assert_eq!(ran.trim(), "approved");
    let result = tool_result(&server);
    assert!(!result.contains("denied"), "{result}");
    assert!(text.contains(r#""type":"final""#), "{text}");
}

#[test]
fn no_on_the_terminal_denies_the_command() {
    let (sandbox, server, _) = run_answering("n");
    assert!(!sandbox.workspace.join("ran.txt").exists());
    let result = tool_result(&server);
    assert!(result.contains("denied"), "{result}");
}

/// `oxydra chat --approve ask` on a terminal, whose model calls `shell_exec` first.
fn chat_asking(sandbox: &Sandbox) -> (MockServer, KillOnDrop, Pty) {
    let server = server_calling_shell_exec(vec![openai::text("Later answer.")]);
    let mut command = sandbox.oxydra_pty_command(&server, "chat");
    command.args(["--approve", "ask"]);
    let (child, mut pty) = spawn_chat_in_pty(command);
    pty.type_text("run the command\r");
    pty.output.wait_for(QUESTION);
    (server, child, pty)
}

#[test]
fn in_chat_the_question_gets_the_line_typed_during_the_turn() {
    let sandbox = Sandbox::new();
    let (server, mut child, mut pty) = chat_asking(&sandbox);
    // The turn's `/cancel` watcher steps aside: this line is the answer.
    pty.type_text("y\r");
    pty.output.wait_for_after(r#""text":"Done.""#, "oxydra> ");
    let ran = std::fs::read_to_string(sandbox.workspace.join("ran.txt")).unwrap();
    assert_eq!(ran.trim(), "approved");
    assert!(!tool_result(&server).contains("denied"));
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
}

#[test]
fn a_question_withdrawn_by_ctrl_c_leaves_the_next_line_to_the_prompt() {
    let sandbox = Sandbox::new();
    let (server, mut child, mut pty) = chat_asking(&sandbox);
    interrupt(&child);
    pty.output
        .wait_for_after(r#""kind":"cancelled""#, "oxydra> ");
    // The question is closed on its own line, so nothing printed next joins it.
    pty.output
        .wait_for("(question withdrawn: the call does not run)\r\n");
    // The withdrawn question does not take this line: it is the next message.
    pty.type_text("y\r");
    pty.output.wait_for(r#""text":"Done.""#);
    pty.output.wait_for_after(r#""text":"Done.""#, "oxydra> ");
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
    assert!(!sandbox.workspace.join("ran.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(last.last().unwrap()["role"], "user");
    assert_eq!(last.last().unwrap()["content"], "y");
}

#[test]
fn a_bidi_override_in_the_command_is_shown_escaped_on_the_terminal() {
    let sandbox = Sandbox::new();
    // Shown raw, U+202E would display this command's tail reversed.
    let command_line = "echo hi > \u{202e}txt.exe";
    let server = MockServer::start(vec![
        openai::tool_calls(&[(
            "call_sh",
            "shell_exec",
            &serde_json::json!({ "command": command_line }).to_string(),
        )]),
        openai::text("Done."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_pty_command(&server, "run");
    command.args(["--approve", "ask", "Run the command"]);
    let (mut child, mut pty) = spawn_in_pty(command);
    let shown = pty.output.wait_for(QUESTION);
    assert!(shown.contains(r"echo hi > \u{202e}txt.exe"), "{shown}");
    assert!(!shown.contains('\u{202e}'), "shown raw: {shown}");
    pty.type_text("n\n");
    assert_exit_code(&mut child, 0, &pty.output);
}

#[test]
fn hidden_characters_in_a_tool_name_are_escaped_in_the_text_output() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_x", "file_\u{202e}daer\u{1b}[2K", "{}")]),
        openai::text("Done."),
    ])
    .unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "text"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", common::stderr(&output));
    let err = common::stderr(&output);
    assert!(err.contains(r"✗ file_\u{202e}daer\u{1b}[2K"), "{err}");
    assert!(
        !err.contains('\u{202e}') && !err.contains('\u{1b}'),
        "{err:?}"
    );
}

#[test]
fn chat_asks_before_a_file_changes_and_a_denial_says_why_and_how_to_allow() {
    let sandbox = Sandbox::new();
    let write = r#"{"path":"new.txt","content":"hello"}"#;
    let server = MockServer::start(vec![
        openai::tool_calls(&[("w1", "file_write", write)]),
        openai::text("Could not write."),
        openai::tool_calls(&[("w2", "file_write", write)]),
        openai::text("Written."),
    ])
    .unwrap();
    // stdin is a pipe: nobody to ask, so the answer is `deny`.
    let denied = common::output_with_stdin(
        sandbox.oxydra_command(&server, "chat"),
        b"write it\n/exit\n",
    );
    let err = stderr(&denied);
    assert_eq!(denied.status.code(), Some(0), "{err}");
    assert!(!sandbox.workspace.join("new.txt").exists(), "{err}");
    assert!(
        err.contains("file_write was denied: approvals are `deny`"),
        "{err}"
    );
    assert!(err.contains("--approve allow"), "{err}");
    assert!(!err.contains("now spelled"), "{err}");

    // The older word still allows, with a note naming the new one.
    let mut command = sandbox.oxydra_command(&server, "chat");
    command.args(["--approve", "always"]);
    let allowed = common::output_with_stdin(command, b"write it\n/exit\n");
    let err = stderr(&allowed);
    assert_eq!(allowed.status.code(), Some(0), "{err}");
    assert!(
        err.contains("note: `--approve always` is now spelled `--approve allow`"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("new.txt")).unwrap(),
        "hello"
    );
}

#[test]
fn run_writes_files_without_asking() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("w1", "file_write", r#"{"path":"r.txt","content":"x"}"#)]),
        openai::text("Written."),
    ])
    .unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &[], "write it");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(sandbox.workspace.join("r.txt").exists());
}

#[test]
fn no_with_a_reason_on_the_terminal_tells_the_model_why() {
    let (sandbox, server, _) = run_answering("n not on a friday");
    assert!(!sandbox.workspace.join("ran.txt").exists());
    let result = tool_result(&server);
    assert!(result.contains("denied"), "{result}");
    assert!(result.contains("not on a friday"), "{result}");
}

#[test]
fn chat_shows_the_diff_of_a_file_write_and_what_always_covers() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("notes.txt"), "one\ntwo\n").unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[(
            "w1",
            "file_write",
            r#"{"path":"notes.txt","content":"one\nthree\n"}"#,
        )]),
        openai::text("Written."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_pty_command(&server, "chat");
    command.args(["--approve", "ask"]);
    let (mut child, mut pty) = spawn_chat_in_pty(command);
    pty.type_text("edit the notes\r");
    let shown = pty.output.wait_for(QUESTION);
    // The change, as a diff against the file: not the JSON arguments.
    assert!(shown.contains("--- a/notes.txt"), "{shown}");
    assert!(shown.contains("    -two\r\n"), "{shown}");
    assert!(shown.contains("    +three\r\n"), "{shown}");
    assert!(!shown.contains(r#""content""#), "{shown}");
    assert!(shown.contains("[a]lways: every file_write call"), "{shown}");
    assert!(shown.contains("waits up to 24 h"), "{shown}");
    pty.type_text("y\r");
    pty.output
        .wait_for_after(r#""text":"Written.""#, "oxydra> ");
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("notes.txt")).unwrap(),
        "one\nthree\n"
    );
}
