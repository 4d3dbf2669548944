//! Pipes end at terminals (issue 42, attack 11): text meant for people is sanitized on
//! every stream. With stdout and stderr piped (`| head`, `| less -R`, `2>&1 | tee`),
//! no ESC, C0 (but line feed and tab), C1 or bidirectional character of a model's
//! answer, a stored tool result, an MCP tool's description, a provider's error body or
//! a failing MCP server's stderr reaches the output raw. JSON lines carry the exact
//! text, JSON-escaped.

use crate::common;
use crate::terminal_text::{ATTACK, failing_mcp_server, mcp_server_script, node_available};

use common::{Sandbox, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, Reply, openai};
use serde_json::{Value, json};

/// The attack with a bidirectional override and an 8-bit CSI (clear screen) added.
fn attack() -> String {
    format!("{ATTACK}\u{202e}\u{9b}2J")
}

/// Fails if `text` holds a character that acts on a terminal: ESC, C0 controls but
/// line feed and tab, DEL, C1 controls, bidirectional controls.
fn assert_no_raw(what: &str, text: &str) {
    let raw = text.chars().find(|&c| {
        (c.is_control() && !matches!(c, '\n' | '\t'))
            || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    });
    assert!(
        raw.is_none(),
        "{what}: {raw:?} reached the output raw: {text:?}"
    );
}

/// [`assert_no_raw`], and the attack is shown as visible escapes.
fn assert_clean(what: &str, text: &str) {
    assert_no_raw(what, text);
    assert!(
        text.contains(r"\u{1b}]2;pwned"),
        "{what}: the attack is not shown: {text:?}"
    );
}

/// Stores a session whose model answered with the attack, after a tool whose result
/// carries it too; returns its id.
fn stored_session(sandbox: &Sandbox) -> String {
    std::fs::write(
        sandbox.workspace.join("notes.txt"),
        format!("noted{}", attack()),
    )
    .unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_r", "file_read", r#"{"path":"notes.txt"}"#)]),
        openai::text(&format!("stored{}", attack())),
    ])
    .unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "jsonl"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    json_lines(&output)
        .into_iter()
        .find(|event| event["type"] == "final")
        .expect("a final event")["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_piped_answer_is_sanitized_and_jsonl_keeps_its_exact_text() {
    let sandbox = Sandbox::new();
    let answer = format!("raw{}\n\tindented", attack());
    let server = MockServer::start(vec![openai::text(&answer), openai::text(&answer)]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "text"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert_clean("the answer", &text);
    assert!(text.contains("\n\tindented"), "{text:?}");

    let output = sandbox.run_openai(&server.openai_url(), &["--output", "jsonl"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = stdout(&output);
    assert!(
        !lines.contains(['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}']),
        "{lines:?}"
    );
    let last = json_lines(&output).pop().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["text"], answer);
}

#[test]
fn sessions_show_piped_is_sanitized_and_jsonl_keeps_the_stored_text() {
    let sandbox = Sandbox::new();
    let session = stored_session(&sandbox);
    let piped = sandbox.sessions(&["show", &session]);
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    let text = stdout(&piped);
    assert!(text.contains("noted"), "the tool result is shown: {text:?}");
    assert!(text.contains("stored"), "{text:?}");
    assert_clean("sessions show", &text);

    let listed = sandbox.sessions(&["list", "--all"]);
    assert_no_raw("sessions list", &stdout(&listed));

    let jsonl = sandbox.sessions(&["show", &session, "--output", "jsonl"]);
    let lines = stdout(&jsonl);
    assert!(
        !lines.contains(['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}']),
        "{lines:?}"
    );
    let messages = json_lines(&jsonl);
    let contents: Vec<&str> = messages
        .iter()
        .filter_map(|message| message["content"].as_str())
        .collect();
    assert!(
        contents.contains(&format!("stored{}", attack()).as_str()),
        "{contents:?}"
    );
    assert!(
        contents
            .iter()
            .any(|content| content.contains(&format!("noted{}", attack()))),
        "{contents:?}"
    );
}

#[test]
fn a_providers_error_body_on_a_piped_stderr_is_sanitized() {
    let sandbox = Sandbox::new();
    let body = json!({"error": {"message": format!("bad request{}", attack()), "type": "invalid_request_error"}});
    let server = MockServer::start(vec![Reply::json(400, body.to_string())]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "text"], "go");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("error: "), "{err:?}");
    assert!(err.contains("bad request"), "{err:?}");
    assert_clean("the error line", &err);
}

#[test]
fn a_failing_mcp_servers_stderr_is_sanitized_on_pipes() {
    let sandbox = Sandbox::new();
    failing_mcp_server(&sandbox);
    let output = sandbox.command().args(["mcp", "list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("noisy: failed"), "{text:?}");
    assert_clean("mcp list", &text);

    // A run's warning that the server did not start, and the debug log lines that
    // forward its stderr (`-v`), on a piped stderr.
    let server = MockServer::start(vec![openai::text("Done.")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["-v", "--output", "text"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("MCP server `noisy` did not start"), "{err:?}");
    assert_clean("the run's stderr", &err);
}

#[test]
fn an_mcp_tool_description_is_sanitized_in_a_piped_mcp_list_and_exact_in_jsonl() {
    if !node_available() {
        eprintln!("skipped: node is not installed");
        return;
    }
    let sandbox = Sandbox::new();
    let description = format!("Looks things up.{}", attack());
    let script = mcp_server_script(&sandbox, &description);
    sandbox.write_trusted_config(&format!(
        "[[mcp_servers]]\nname = \"evil\"\ncommand = \"node\"\nargs = [{:?}]\n",
        script.display().to_string()
    ));
    let output = sandbox.command().args(["mcp", "list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("evil__lookup"), "{text:?}");
    assert_clean("mcp list", &text);

    let output = sandbox
        .command()
        .args(["mcp", "list", "--output", "jsonl"])
        .output()
        .unwrap();
    let lines = stdout(&output);
    assert!(
        !lines.contains(['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}']),
        "{lines:?}"
    );
    let servers: Vec<Value> = json_lines(&output);
    assert_eq!(servers[0]["tools"][0]["description"], description);
}
