//! `oxydra mcp serve` end to end: the official MCP Python SDK (PyPI `mcp`, installed by
//! `scripts/install-mcp-python-client.sh`) drives the real binary over stdio, and raw
//! JSON-RPC lines attack the transport.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use common::serve::{CONFIG, sandbox_with_config};
use common::{Sandbox, stderr, stdout};
use oxydra_test_support::{MockServer, Reply};
use serde_json::{Value, json};

/// Whether the MCP Python SDK can be imported. Without it the test is skipped, except
/// under `CI=true`, where its absence is a failure. Shared with `mcp_http`.
pub(crate) fn python_mcp_sdk() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        let why = "no MCP Python SDK: run scripts/install-mcp-python-client.sh";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("skipped: {why}");
    }
    found
}

/// The test configuration plus a blueprint whose run fetches a page the test holds
/// back, so the run stays in flight while the client abandons a call.
fn config() -> String {
    format!(
        r#"
[tools.web_fetch]
allow_hosts = ["127.0.0.1"]
{CONFIG}
[[agents]]
name = "crawler"
type = "deterministic"
description = "Fetches one page"
parameters_schema = {{ type = "object", required = ["url"], properties = {{ url = {{ type = "string" }} }} }}
[[agents.steps]]
tool = "web_fetch"
args = {{ url = "{{{{url}}}}" }}
"#
    )
}

/// `python3 SCRIPT ARGS…` with the sandbox's environment, from the sandbox root.
fn python(sandbox: &Sandbox, script: &str) -> Command {
    let oxydra = sandbox.command();
    let mut command = Command::new("python3");
    command.current_dir(sandbox.path());
    for (name, value) in oxydra.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(script),
        )
        .stdin(Stdio::null());
    command
}

#[test]
fn the_python_sdk_client_lists_corrects_a_refused_run_waits_for_it_and_survives_bad_input() {
    if !python_mcp_sdk() {
        return;
    }
    let sandbox = sandbox_with_config(&config());
    std::fs::write(
        sandbox.workspace.join("notes.txt"),
        "the launch is on tuesday\n",
    )
    .unwrap();
    let body = "<html><body>never all of it</body></html>";
    let (reply, _release) = Reply::new(200)
        .header("content-type", "text/html")
        .header("content-length", &body.len().to_string())
        .body(body)
        .held_at(10);
    let pages = MockServer::start(vec![reply]).unwrap();
    let output = python(&sandbox, "mcp_stdio_client.py")
        .arg(env!("CARGO_BIN_EXE_oxydra"))
        .arg(&sandbox.db)
        .arg(&sandbox.workspace)
        .arg(pages.url("/held"))
        .output()
        .unwrap();
    assert!(
        output.status.success() && stdout(&output).trim_end().ends_with("ok"),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&output),
        stderr(&output)
    );
}

/// The server process with piped stdin and stdout, and a reader of its JSON-RPC lines.
pub(crate) struct RawSession {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl RawSession {
    fn start(sandbox: &Sandbox) -> Self {
        Self::start_with(sandbox, &[])
    }

    /// `oxydra mcp serve` on the sandbox's database and workspace with `extra` flags,
    /// initialized.
    pub(crate) fn start_with(sandbox: &Sandbox, extra: &[&str]) -> Self {
        let mut command = sandbox.command();
        command
            .args(["mcp", "serve", "--db"])
            .arg(&sandbox.db)
            .arg("--workspace")
            .arg(&sandbox.workspace)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut session = Self {
            child,
            stdin,
            lines,
        };
        session.send_line(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}
            }})
            .to_string(),
        );
        let initialized = session.read();
        assert_eq!(initialized["id"], 1, "{initialized}");
        assert!(initialized["result"]["capabilities"]["tools"].is_object());
        session.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        session
    }

    pub(crate) fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn read(&mut self) -> Value {
        let line = self
            .lines
            .next()
            .expect("the server closed stdout")
            .unwrap();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON-RPC: {line}"))
    }

    /// Closes stdin and returns the exit code and stderr.
    pub(crate) fn close(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let output = self.child.wait_with_output().unwrap();
        (output.status.code(), stderr(&output))
    }
}

#[test]
fn malformed_messages_get_json_rpc_errors_and_the_session_goes_on() {
    let sandbox = sandbox_with_config(CONFIG);
    let mut session = RawSession::start(&sandbox);

    // Not JSON at all (ignored, as the official SDKs do), then JSON that is no
    // JSON-RPC message: an Invalid Request error, which cannot name the id.
    session.send_line("{this is not json");
    session.send_line(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"nope"}"#);
    let refused = session.read();
    assert_eq!(refused["error"]["code"], -32600, "{refused}");

    // An unknown tool is a JSON-RPC error naming it.
    session.send_line(
        &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                "params": {"name": "rm_rf", "arguments": {}}})
        .to_string(),
    );
    let unknown = session.read();
    assert_eq!(unknown["id"], 8, "{unknown}");
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rm_rf")
    );

    // Arguments larger than the request body limit (1 MiB): refused, not run.
    let huge = "a".repeat(1024 * 1024 + 1);
    session.send_line(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "start_agent_run",
                           "arguments": {"agent_name": huge, "parameters": {}}}})
        .to_string(),
    );
    let too_big = session.read();
    assert_eq!(too_big["id"], 9, "{too_big}");
    assert_eq!(too_big["error"]["code"], -32602, "{too_big}");

    // And the session still serves.
    session.send_line(r#"{"jsonrpc":"2.0","id":10,"method":"tools/list"}"#);
    let listed = session.read();
    assert_eq!(listed["id"], 10, "{listed}");
    // The four run tools, and (approvals wait by default) `list_pending_approvals`;
    // `decide_approval` only with --allow-model-approvals.
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 5);

    // The client closing stdin ends the server cleanly.
    let (code, rest) = session.close();
    assert_eq!(code, Some(0), "{rest}");
    assert!(rest.contains("oxydra mcp serve: stopped"), "{rest}");
}

#[test]
fn mcp_serve_on_stdio_refuses_the_flags_of_a_network_listener() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .command()
        .args(["mcp", "serve", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--addr"), "{}", stderr(&output));
}

#[test]
fn a_client_that_goes_away_mid_call_leaves_its_run_readable_by_the_next_one() {
    let sandbox = sandbox_with_config(&config());
    let body = "<html><body>never all of it</body></html>";
    let (reply, _release) = Reply::new(200)
        .header("content-type", "text/html")
        .header("content-length", &body.len().to_string())
        .body(body)
        .held_at(10);
    let pages = MockServer::start(vec![reply]).unwrap();
    let mut first = RawSession::start(&sandbox);
    first.send_line(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "start_agent_run",
                           "arguments": {"agent_name": "crawler",
                                         "parameters": {"url": pages.url("/held")}}}})
        .to_string(),
    );
    let started = first.read();
    let run_id = started["result"]["structuredContent"]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    // A long poll in flight, then the client goes away without waiting for it.
    first.send_line(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "get_agent_run",
                           "arguments": {"run_id": run_id, "wait_secs": 60}}})
        .to_string(),
    );
    let (code, rest) = first.close();
    assert_eq!(code, Some(0), "{rest}");

    // The next client reads the run: ended with the server that ran it, not lost.
    let mut second = RawSession::start(&sandbox);
    second.send_line(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "get_agent_run", "arguments": {"run_id": run_id}}})
        .to_string(),
    );
    let read = second.read();
    let run = &read["result"]["structuredContent"];
    assert_eq!(run["run_id"], run_id.as_str(), "{read}");
    assert_eq!(run["status"], "failed", "{read}");
    let (code, rest) = second.close();
    assert_eq!(code, Some(0), "{rest}");
}
