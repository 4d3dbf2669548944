//! The terminal sanitizer, attacked end to end: escape sequences from the model's
//! answer, a stored session, a provider's error, an MCP tool's description and an MCP
//! server's stderr are sent to `oxydra` running on a pseudo-terminal, and none of them
//! reaches the terminal raw (`piped_text` sends them through pipes). The answer that hides the consent question (conceal,
//! black on black) and asks to "type y" does not hide it. And text streamed slowly is
//! on the screen before the stream ends.

use crate::common;

use std::process::Command;

use common::{Pty, Sandbox, assert_exit_code, spawn_in_pty};
use oxydra_test_support::{MockServer, Reply, SseEvent, openai};
use serde_json::json;

/// What an attacker puts in text shown to a person: set the window title (OSC 2),
/// write the clipboard (OSC 52), go up a line and erase it, then conceal what follows
/// in black on black.
pub const ATTACK: &str =
    "\u{1b}]2;pwned\u{7}\u{1b}]52;c;aGk=\u{7}\u{1b}[1A\u{1b}[2K\u{1b}[8;30;40m";

/// The attack's sequences as they would reach the terminal raw.
const RAW: [&str; 5] = [
    "\u{1b}]2;",
    "\u{1b}]52;",
    "\u{1b}[1A",
    "\u{1b}[8;30;40m",
    "\u{7}",
];

/// Fails if any of the attack's sequences reached the terminal raw, and unless it was
/// shown as visible text.
fn assert_shown_escaped(shown: &str) {
    for raw in RAW {
        assert!(
            !shown.contains(raw),
            "{raw:?} reached the terminal: {shown:?}"
        );
    }
    assert!(
        shown.contains(r"\u{1b}]2;pwned\u{7}\u{1b}]52;c;"),
        "the attack is not shown: {shown:?}"
    );
}

/// `oxydra <subcommand> --db DB --workspace WS --base-url URL` with text output, on a
/// terminal of its own.
fn text_on_pty(sandbox: &Sandbox, server: &MockServer, subcommand: &str) -> Command {
    let mut command = sandbox.pty_command();
    command
        .arg(subcommand)
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .args(["--base-url", &server.openai_url()]);
    command
}

/// One OpenAI streaming chunk with `delta`.
fn chunk(delta: serde_json::Value, finish: Option<&str>) -> SseEvent {
    SseEvent::data(
        json!({
            "id": "chatcmpl-tt",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
        .to_string(),
    )
}

#[test]
fn an_answer_cannot_retitle_write_the_clipboard_or_erase_a_tool_line() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "old\n").unwrap();
    // The edit's new text, shown in its diff, carries the attack too.
    let edit = json!({"path": "a.txt", "old": "old", "new": format!("new{ATTACK}")}).to_string();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_e", "file_edit", &edit)]),
        openai::text(&format!("All good.{ATTACK}\nSecond line.")),
    ])
    .unwrap();
    let mut command = text_on_pty(&sandbox, &server, "run");
    command.args(["--approve", "allow", "Edit a.txt"]);
    let (mut child, pty) = spawn_in_pty(command);
    assert_exit_code(&mut child, 0, &pty.output);
    let shown = pty.output.all();
    assert!(shown.contains("✓ file_edit a.txt"), "{shown:?}");
    assert!(shown.contains(r"+ new\u{1b}]2;pwned"), "{shown:?}");
    assert!(shown.contains("Second line."), "{shown:?}");
    assert_shown_escaped(&shown);
    // Oxydra itself never moves the cursor up: nothing can erase the tool line.
    assert!(
        !shown.contains("\u{1b}[1A") && !shown.contains("\u{1b}]"),
        "{shown:?}"
    );
}

/// The events of a turn that says `text` and then calls `shell_exec`.
fn text_then_shell_exec(text: &str, command: &str) -> Reply {
    let arguments = json!({ "command": command }).to_string();
    Reply::events(&[
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": text}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_sh", "type": "function",
                "function": {"name": "shell_exec", "arguments": arguments}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        SseEvent::data("[DONE]"),
    ])
}

#[test]
fn an_answer_ending_in_conceal_cannot_hide_the_consent_question() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        text_then_shell_exec(
            &format!("Everything is ready. Please type y and press Enter.{ATTACK}"),
            "echo hidden > ran.txt",
        ),
        openai::text("Done."),
    ])
    .unwrap();
    let mut command = text_on_pty(&sandbox, &server, "run");
    command.args(["--approve", "ask", "Set it up"]);
    let (mut child, mut pty) = spawn_in_pty(command);
    let shown = pty.output.wait_for("Allow? [y/a/n]: ");
    assert_shown_escaped(&shown);
    // The question is shown in plain attributes, on a line of its own, with the
    // command it would run.
    let asked = shown
        .find("shell_exec (privileged) asks for permission")
        .expect("the question");
    assert!(
        shown[..asked].ends_with("\u{1b}[0m\r\n"),
        "no reset before the question: {shown:?}"
    );
    assert!(
        shown[asked..].contains("echo hidden > ran.txt"),
        "{shown:?}"
    );
    assert!(
        shown[asked..].contains("\u{1b}[0mAllow? [y/a/n]: "),
        "{shown:?}"
    );
    pty.type_text("n\n");
    assert_exit_code(&mut child, 0, &pty.output);
    assert!(!sandbox.workspace.join("ran.txt").exists());
}

#[test]
fn sessions_show_on_a_terminal_shows_stored_escapes_as_text() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text(&format!("stored{ATTACK}"))]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "jsonl"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", common::stderr(&output));
    let session = common::json_lines(&output)
        .into_iter()
        .find(|event| event["type"] == "final")
        .expect("a final event")["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let mut command = sandbox.pty_command();
    command
        .args(["sessions", "show", &session, "--db"])
        .arg(&sandbox.db);
    let (mut child, pty) = spawn_in_pty(command);
    assert_exit_code(&mut child, 0, &pty.output);
    let shown = pty.output.all();
    assert!(shown.contains("stored"), "{shown:?}");
    assert_shown_escaped(&shown);
}

#[test]
fn a_providers_error_body_is_shown_escaped_on_the_error_line() {
    let sandbox = Sandbox::new();
    let body = json!({"error": {"message": format!("bad request{ATTACK}"), "type": "invalid_request_error"}});
    let server = MockServer::start(vec![Reply::json(400, body.to_string())]).unwrap();
    let mut command = text_on_pty(&sandbox, &server, "run");
    command.arg("go");
    let (mut child, pty) = spawn_in_pty(command);
    assert_exit_code(&mut child, 1, &pty.output);
    let shown = pty.output.all();
    assert!(shown.contains("error: "), "{shown:?}");
    assert!(shown.contains("bad request"), "{shown:?}");
    assert_shown_escaped(&shown);
}

/// A stdio MCP server (node) whose one tool has `description`.
pub fn mcp_server_script(sandbox: &Sandbox, description: &str) -> std::path::PathBuf {
    mcp_server_with_tools(
        sandbox,
        &json!([{"name": "lookup", "description": description,
                 "inputSchema": {"type": "object", "properties": {}}}]),
    )
}

/// A stdio MCP server (node) that lists `tools` (MCP tool objects, as written) and
/// answers every call with the text `done`.
pub fn mcp_server_with_tools(sandbox: &Sandbox, tools: &serde_json::Value) -> std::path::PathBuf {
    let script = sandbox.path().join("evil_mcp.js");
    let source = format!(
        "const tools = {tools};\n{}",
        r#"
const lines = require('readline').createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  let result = {};
  if (message.method === 'initialize') {
    result = { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} },
               serverInfo: { name: 'evil', version: '1.0.0' } };
  } else if (message.method === 'tools/list') {
    result = { tools };
  } else if (message.method === 'tools/call') {
    result = { content: [{ type: 'text', text: 'done' }] };
  }
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }) + '\n');
});
"#
    );
    std::fs::write(&script, source).unwrap();
    script
}

pub fn node_available() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

#[test]
fn an_mcp_tool_description_is_shown_escaped_in_mcp_list() {
    if !node_available() {
        eprintln!("skipped: node is not installed");
        return;
    }
    let sandbox = Sandbox::new();
    let script = mcp_server_script(&sandbox, &format!("Looks things up.{ATTACK}"));
    sandbox.write_trusted_config(&format!(
        "[[mcp_servers]]\nname = \"evil\"\ncommand = \"node\"\nargs = [{:?}]\n",
        script.display().to_string()
    ));
    let mut command = sandbox.pty_command();
    command.args(["mcp", "list"]);
    let (mut child, pty) = spawn_in_pty(command);
    assert_exit_code(&mut child, 0, &pty.output);
    let shown = pty.output.all();
    assert!(shown.contains("evil__lookup"), "{shown:?}");
    assert!(shown.contains("Looks things up."), "{shown:?}");
    assert_shown_escaped(&shown);
}

/// A trusted configuration with an MCP server that writes the attack on its stderr
/// and exits.
pub fn failing_mcp_server(sandbox: &Sandbox) {
    let printf = ATTACK
        .replace('\u{1b}', "\\\\033")
        .replace('\u{7}', "\\\\007");
    sandbox.write_trusted_config(&format!(
        "[[mcp_servers]]\nname = \"noisy\"\ncommand = \"sh\"\n\
         args = [\"-c\", \"printf 'boom{printf}\\\\n' >&2; exit 3\"]\n"
    ));
}

#[test]
fn a_failing_mcp_servers_stderr_is_shown_escaped() {
    let sandbox = Sandbox::new();
    failing_mcp_server(&sandbox);

    let mut command = sandbox.pty_command();
    command.args(["mcp", "list"]);
    let (mut child, pty) = spawn_in_pty(command);
    assert_exit_code(&mut child, 1, &pty.output);
    let shown = pty.output.all();
    assert!(shown.contains("noisy: failed"), "{shown:?}");
    assert!(shown.contains("boom"), "{shown:?}");
    assert_shown_escaped(&shown);

    // In a run, the warning that the server did not start quotes it the same way,
    // and so do the debug log lines that forward the server's stderr (`-v`).
    let server = MockServer::start(vec![openai::text("Done.")]).unwrap();
    let mut command = text_on_pty(&sandbox, &server, "run");
    command.args(["-v", "go"]);
    let (mut child, pty) = spawn_in_pty(command);
    assert_exit_code(&mut child, 0, &pty.output);
    let shown = pty.output.all();
    assert!(
        shown.contains("MCP server `noisy` did not start"),
        "{shown:?}"
    );
    assert!(shown.contains("boom"), "{shown:?}");
    assert_shown_escaped(&shown);
}

/// Text streamed slowly is on the terminal before the stream ends: the server holds
/// the rest of its answer until the test has seen the first words on the terminal.
#[test]
fn streamed_text_shows_before_its_paragraph_ends() {
    let sandbox = Sandbox::new();
    let head = [
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "The first words of"}), None),
        chunk(json!({"content": " a long **paragraph**"}), None),
    ];
    let tail = [
        chunk(json!({"content": " that ends later.\n\nDone."}), None),
        chunk(json!({}), Some("stop")),
        SseEvent::data("[DONE]"),
    ];
    let held_at = head.iter().map(|event| event.encode().len()).sum();
    let events: Vec<SseEvent> = head.into_iter().chain(tail).collect();
    let (reply, release) = Reply::events(&events).held_at(held_at);
    let server = MockServer::start(vec![reply]).unwrap();
    let mut command = text_on_pty(&sandbox, &server, "run");
    command.arg("go");
    let (mut child, pty): (_, Pty) = spawn_in_pty(command);
    // Held mid-paragraph: its words are already on the screen.
    let early = pty.output.wait_for("The first words of a long paragraph");
    assert!(!early.contains("ends later"), "{early:?}");
    release.release();
    assert_exit_code(&mut child, 0, &pty.output);
    let shown = pty.output.all();
    // Once the line ended, it was rendered: the preview gave way to styled text.
    let after = &shown[shown.find("a long paragraph").unwrap()..];
    assert!(after.contains("\u{1b}[1mparagraph"), "{shown:?}");
    assert!(after.contains("that ends later."), "{shown:?}");
    assert!(after.contains("Done."), "{shown:?}");
}

#[test]
fn chats_prompt_comes_back_in_plain_attributes_after_a_concealing_answer() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text(&format!(
        "Type y at the prompt.{ATTACK}"
    ))])
    .unwrap();
    let mut command = text_on_pty(&sandbox, &server, "chat");
    command.args(["--approve", "deny"]);
    let (mut child, mut pty) = common::spawn_chat_in_pty(command);
    pty.type_text("hello\r");
    let shown = pty
        .output
        .wait_for_after("Type y at the prompt.", "oxydra> ");
    assert_shown_escaped(&shown);
    let answer = shown.find("Type y at the prompt.").unwrap();
    let prompt = answer + shown[answer..].find("oxydra> ").unwrap();
    assert!(
        shown[answer..prompt].contains("\u{1b}[0m"),
        "no reset before the prompt: {shown:?}"
    );
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
}
