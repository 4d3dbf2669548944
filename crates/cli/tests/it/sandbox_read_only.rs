//! `--sandbox read-only` binds every tool, not only `shell_exec` (issue 42, attack 10):
//! a scripted model's `file_write` and `file_edit` are refused with a tool error that
//! names the mode, and the workspace is unchanged, in `oxydra run` (flag or an
//! untrusted project file's `[sandbox]`, which may narrow) and over `oxydra mcp serve
//! --tools`.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use common::{Sandbox, events_of_type, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, openai};
use serde_json::{Value, json};

/// What a refused write says (the start of the tool error).
const REFUSED: &str =
    "refused: the sandbox is read-only (`--sandbox read-only`); nothing in the workspace";

/// A model that rewrites `notes.txt`, edits it and creates `new.txt`, then answers.
fn writer() -> MockServer {
    MockServer::start(vec![
        openai::tool_calls(&[
            (
                "call_write",
                "file_write",
                r#"{"path":"notes.txt","content":"rewritten"}"#,
            ),
            (
                "call_edit",
                "file_edit",
                r#"{"path":"notes.txt","old":"keep","new":"lost"}"#,
            ),
            (
                "call_new",
                "file_write",
                r#"{"path":"sub/new.txt","content":"x"}"#,
            ),
        ]),
        openai::text("I could not."),
    ])
    .unwrap()
}

/// The tool messages the provider got back, by call id.
fn tool_results(server: &MockServer) -> std::collections::HashMap<String, String> {
    let requests = server.requests();
    assert!(requests.len() >= 2, "the model got no tool results");
    requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            (
                message["tool_call_id"].as_str().unwrap().to_owned(),
                message["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Asserts that the three calls of [`writer`] were refused for the mode and that the
/// workspace is as it was.
fn assert_refused_and_unchanged(
    sandbox: &Sandbox,
    server: &MockServer,
    output: &std::process::Output,
) {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    let results = tool_results(server);
    for (call, tool) in [
        ("call_write", "file_write"),
        ("call_edit", "file_edit"),
        ("call_new", "file_write"),
    ] {
        let result = &results[call];
        assert!(result.contains(REFUSED), "{call}: {result}");
        assert!(
            result.contains(&format!("`{tool}` did not run")),
            "{result}"
        );
    }
    let events = json_lines(output);
    assert_eq!(
        events_of_type(&events, "tool_failed").len(),
        3,
        "{}",
        stdout(output)
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("notes.txt")).unwrap(),
        "keep me\n"
    );
    assert!(!sandbox.workspace.join("sub").exists());
}

#[test]
fn read_only_refuses_the_file_tools_in_run() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("notes.txt"), "keep me\n").unwrap();
    let server = writer();
    let mut command = sandbox.oxydra_command(&server, "run");
    command
        .args(["--sandbox", "read-only", "--approve", "deny"])
        .arg("Change my notes");
    let output = command.output().unwrap();
    assert_refused_and_unchanged(&sandbox, &server, &output);
}

#[test]
fn read_only_from_an_untrusted_project_file_binds_the_file_tools_too() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("notes.txt"), "keep me\n").unwrap();
    // Untrusted: it may narrow, and read-only narrows.
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[sandbox]\nmode = \"read-only\"\n",
    )
    .unwrap();
    let server = writer();
    let mut command = sandbox.oxydra_command(&server, "run");
    command.args(["--approve", "allow"]).arg("Change my notes");
    let output = command.output().unwrap();
    assert_refused_and_unchanged(&sandbox, &server, &output);
}

/// One JSON-RPC request to a stdio MCP server; its answer.
fn request(
    stdin: &mut std::process::ChildStdin,
    lines: &mut std::io::Lines<BufReader<std::process::ChildStdout>>,
    id: u64,
    method: &str,
    params: Value,
) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
    let line = lines.next().expect("the server closed stdout").unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], id, "{answer}");
    answer
}

#[test]
fn read_only_refuses_the_file_tools_over_mcp_serve() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("notes.txt"), "keep me\n").unwrap();
    // A user file that says yes to every consent question: only the mode refuses.
    std::fs::create_dir_all(sandbox.path().join("config/oxydra")).unwrap();
    std::fs::write(
        sandbox.path().join("config/oxydra/config.toml"),
        "[runtime]\napprove = \"allow\"\n",
    )
    .unwrap();
    let mut command = sandbox.command();
    command
        .args(["mcp", "serve", "--tools", "file_write,file_edit,file_read"])
        .args(["--sandbox", "read-only", "--db"])
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    request(
        &mut stdin,
        &mut lines,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "0"}}),
    );
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let calls = [
        (
            "file_write",
            json!({"path": "notes.txt", "content": "rewritten"}),
        ),
        (
            "file_edit",
            json!({"path": "notes.txt", "old": "keep", "new": "lost"}),
        ),
        ("file_write", json!({"path": "sub/new.txt", "content": "x"})),
    ];
    for (id, (name, arguments)) in (2..).zip(calls) {
        let answer = request(
            &mut stdin,
            &mut lines,
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        );
        let result = &answer["result"];
        assert_eq!(result["isError"], true, "{answer}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(REFUSED), "{name}: {text}");
    }
    // Reading is still allowed.
    let answer = request(
        &mut stdin,
        &mut lines,
        9,
        "tools/call",
        json!({"name": "file_read", "arguments": {"path": "notes.txt"}}),
    );
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("notes.txt")).unwrap(),
        "keep me\n"
    );
    assert!(!sandbox.workspace.join("sub").exists());
}
