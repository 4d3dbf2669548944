//! `oxydra mcp serve --listen`: MCP's streamable HTTP transport, driven by the official
//! MCP Python SDK (PyPI `mcp`, installed by `scripts/install-mcp-python-client.sh`), and
//! attacked with raw HTTP: the guards of `oxydra serve` (token, Host, Origin, header
//! and body timeouts) and bad JSON-RPC input.

use crate::common;
use crate::mcp_serve::python_mcp_sdk;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::serve::{CONFIG, runtime, sandbox_with_config, spawn_listening, terminate};
use common::{Sandbox, stderr, stdout};
use oxydra_test_support::{MockServer, Reply};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "mcp-http-s3cret-token";

/// Far longer than the timers: a read that takes this long is a hang.
const HANG: Duration = Duration::from_secs(10);

/// `oxydra mcp serve --listen 127.0.0.1:0` and the URL it reports serving.
struct McpHttp {
    child: Child,
    url: String,
    lines: std::sync::mpsc::Receiver<String>,
}

impl McpHttp {
    fn start(sandbox: &Sandbox, envs: &[(&str, &str)], args: &[&str]) -> Self {
        let mut command = sandbox.command();
        command
            .args(["mcp", "serve"])
            .args(args)
            .arg("--db")
            .arg(&sandbox.db)
            .arg("--workspace")
            .arg(&sandbox.workspace)
            .envs(envs.iter().copied())
            .stdin(Stdio::null());
        let (child, url, lines) = spawn_listening(command, "oxydra mcp serve");
        Self { child, url, lines }
    }

    /// `127.0.0.1:PORT`.
    fn authority(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned()
    }

    /// SIGTERM, then the exit code and the rest of stderr.
    fn terminate(mut self) -> (Option<i32>, String) {
        terminate(&mut self.child, &self.lines)
    }
}

impl Drop for McpHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test configuration, short timers, and a blueprint whose run fetches a page the
/// test holds back (so the run stays in flight while a client goes away).
fn config() -> String {
    format!(
        r#"
[serve]
header_read_timeout_ms = 400
body_read_timeout_ms = 400

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

#[test]
fn the_python_sdk_client_over_http_corrects_a_refused_run_and_survives_a_disconnect() {
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
    let held = || {
        Reply::new(200)
            .header("content-type", "text/html")
            .header("content-length", &body.len().to_string())
            .body(body)
            .held_at(10)
    };
    let ((first, _release_first), (second, _release_second)) = (held(), held());
    let pages = MockServer::start(vec![first, second]).unwrap();
    let server = McpHttp::start(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", TOKEN)],
        // The session checks look at every tool, `decide_approval` included.
        &["--listen", "127.0.0.1:0", "--allow-model-approvals"],
    );
    let output = Command::new("python3")
        .current_dir(sandbox.path())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_http_client.py"))
        .arg(&server.url)
        .arg(TOKEN)
        .arg(pages.url("/held"))
        .arg(pages.url("/held-too"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success() && stdout(&output).trim_end().ends_with("ok"),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&output),
        stderr(&output)
    );
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
    assert!(!rest.contains(TOKEN), "{rest}");
}

/// One raw HTTP/1.1 request on a fresh connection; the status and the body.
async fn request(authority: &str, head: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(authority).await.unwrap();
    let text = format!(
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes()).await.unwrap();
    let answer = until_closed(&mut stream).await;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

async fn until_closed(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    tokio::time::timeout(HANG, stream.read_to_end(&mut received))
        .await
        .expect("the server never closed the connection")
        .ok();
    String::from_utf8_lossy(&received).into_owned()
}

/// A POST of one JSON-RPC message to `/mcp` with `extra` header lines.
async fn post(authority: &str, extra: &str, message: &str) -> (u16, String) {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-06-18{extra}"
    );
    request(authority, &head, message).await
}

fn bearer(token: &str) -> String {
    format!("\r\nAuthorization: Bearer {token}")
}

/// The JSON-RPC message of an answer's body (JSON, or the data line of an SSE event).
fn message(body: &str) -> Value {
    let json = body
        .lines()
        .find_map(|line| line.strip_prefix("data: ").filter(|d| !d.trim().is_empty()))
        .unwrap_or(body);
    serde_json::from_str(json.trim()).unwrap_or_else(|_| panic!("not JSON: {body}"))
}

fn call(id: u64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
    .to_string()
}

#[test]
fn the_token_host_and_origin_guards_hold_and_half_sent_requests_are_cut_off() {
    let sandbox = sandbox_with_config(&config());
    let server = McpHttp::start(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", TOKEN)],
        &["--listen", "127.0.0.1:0"],
    );
    let authority = server.authority();
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    runtime().block_on(async {
        // No token, a wrong one, one that differs in the last byte, another scheme.
        for extra in [
            String::new(),
            bearer("wrong"),
            bearer(&format!("{}X", &TOKEN[..TOKEN.len() - 1])),
            format!("\r\nAuthorization: Basic {TOKEN}"),
        ] {
            let (status, body) = post(&authority, &extra, list).await;
            assert_eq!(status, 401, "{extra:?}: {body}");
            assert!(!body.contains(TOKEN), "{body}");
        }
        let (status, body) = post(&authority, &bearer(TOKEN), list).await;
        assert_eq!(status, 200, "{body}");
        // The four run tools and `list_pending_approvals` (runs wait by default;
        // `decide_approval` only with --allow-model-approvals).
        assert_eq!(
            message(&body)["result"]["tools"].as_array().unwrap().len(),
            5
        );

        // A page of another origin, even with the token (a rebinding page cannot
        // present it, but a token leaked into a page must not open the door either).
        for origin in ["http://evil.example", "null", "http://localhost:1"] {
            let extra = format!("{}\r\nOrigin: {origin}", bearer(TOKEN));
            let (status, body) = post(&authority, &extra, list).await;
            assert_eq!(status, 403, "{origin}: {body}");
            assert_eq!(message(&body)["error"], "origin_not_allowed", "{body}");
        }
        let extra = format!("{}\r\nOrigin: http://{authority}", bearer(TOKEN));
        let (status, body) = post(&authority, &extra, list).await;
        assert_eq!(status, 200, "own origin: {body}");

        // Half the headers: the connection is cut when the header timer runs out.
        let started = Instant::now();
        let mut slow = TcpStream::connect(&authority).await.unwrap();
        slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await
            .unwrap();
        let cut = until_closed(&mut slow).await;
        assert!(!cut.contains("200 OK"), "{cut}");
        assert!(started.elapsed() < Duration::from_secs(5));

        // Headers, then half the body: 408, not a handler waiting forever.
        let mut slow = TcpStream::connect(&authority).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: 100\r\n\r\n{{\"jsonrpc\":"
        );
        slow.write_all(head.as_bytes()).await.unwrap();
        let answer = until_closed(&mut slow).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("request_timeout"), "{answer}");
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
    assert!(!rest.contains(TOKEN), "{rest}");
}

#[test]
fn a_foreign_host_is_refused_without_a_token_on_loopback() {
    let sandbox = sandbox_with_config(&config());
    let server = McpHttp::start(&sandbox, &[], &["--listen", "127.0.0.1:0"]);
    let authority = server.authority();
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    runtime().block_on(async {
        let head = "POST /mcp HTTP/1.1\r\nHost: rebound.evil.example\r\n\
                    Content-Type: application/json\r\nAccept: application/json, text/event-stream";
        let (status, body) = request(&authority, head, list).await;
        assert_eq!(status, 421, "{body}");
        assert_eq!(message(&body)["error"], "host_not_allowed", "{body}");
        let (status, body) = post(&authority, "", list).await;
        assert_eq!(status, 200, "loopback, no token configured: {body}");
    });
    drop(server);
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    let sandbox = sandbox_with_config(CONFIG);
    let output = sandbox
        .command()
        .args(["mcp", "serve", "--listen", "0.0.0.0:0", "--db"])
        .arg(&sandbox.db)
        .env_remove("OXYDRA_SERVE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("without authentication"),
        "{}",
        stderr(&output)
    );
    assert!(!sandbox.db.exists(), "refused before anything was opened");
}

#[test]
fn bad_json_rpc_over_http_gets_errors_and_the_server_goes_on() {
    let sandbox = sandbox_with_config(&config());
    let server = McpHttp::start(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", TOKEN)],
        &["--listen", "127.0.0.1:0"],
    );
    let authority = server.authority();
    let auth = bearer(TOKEN);
    runtime().block_on(async {
        // Not JSON, and JSON that is no JSON-RPC message.
        for malformed in [
            "{this is not json",
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"nope"}"#,
        ] {
            let (status, body) = post(&authority, &auth, malformed).await;
            assert!((400..500).contains(&status), "{malformed}: {status} {body}");
        }

        // An unknown tool: a JSON-RPC error naming it.
        let (status, body) = post(&authority, &auth, &call(8, "rm_rf", json!({}))).await;
        assert_eq!(status, 200, "{body}");
        let unknown = message(&body);
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        assert!(
            unknown["error"]["message"]
                .as_str()
                .unwrap()
                .contains("rm_rf")
        );

        // Wrong argument types: a tool error with the input schema.
        let (_, body) = post(
            &authority,
            &auth,
            &call(
                9,
                "get_agent_run",
                json!({"run_id": 12, "wait_secs": "soon"}),
            ),
        )
        .await;
        let wrong = message(&body);
        assert_eq!(wrong["result"]["isError"], true, "{wrong}");
        let detail = &wrong["result"]["structuredContent"];
        assert_eq!(detail["error"], "invalid_arguments", "{wrong}");
        assert_eq!(detail["validation_errors"].as_array().unwrap().len(), 2);

        // Arguments past the 1 MiB limit: a JSON-RPC error, nothing run.
        let huge = "a".repeat(1024 * 1024 + 1);
        let (status, body) = post(
            &authority,
            &auth,
            &call(
                10,
                "start_agent_run",
                json!({"agent_name": huge, "parameters": {}}),
            ),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(message(&body)["error"]["code"], -32602, "{status}");

        // A body past what the transport reads at all: 413 before anything parses it.
        let enormous = "a".repeat(3 * 1024 * 1024);
        let (status, body) = post(
            &authority,
            &auth,
            &call(11, "list_agent_blueprints", json!({"pad": enormous})),
        )
        .await;
        assert_eq!(status, 413, "{body}");

        // Still serving.
        let (status, body) = post(
            &authority,
            &auth,
            &call(12, "list_agent_blueprints", json!({})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(message(&body)["result"]["isError"], false, "{body}");
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

/// `oxydra mcp list` in a sandbox of its own whose `[[mcp_servers]]` entry is `server`,
/// its token read from `OXY_MCP_TOKEN` (set to `token`).
fn list_through(server: &McpHttp, token: &str) -> std::process::Output {
    let client = sandbox_with_config(&format!(
        "[[mcp_servers]]\nname = \"oxy\"\nurl = \"{}\"\nbearer_token_env = \"OXY_MCP_TOKEN\"\n\
         restart_attempts = 1\ninit_timeout_secs = 10\n",
        server.url
    ));
    client
        .command()
        .args(["mcp", "list"])
        .env("OXY_MCP_TOKEN", token)
        .env("RUST_LOG", "debug")
        .output()
        .unwrap()
}

#[test]
fn the_mcp_client_sends_its_bearer_token_and_never_shows_it() {
    let sandbox = sandbox_with_config(&config());
    let server = McpHttp::start(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", TOKEN)],
        &["--listen", "127.0.0.1:0"],
    );
    let listed = list_through(&server, TOKEN);
    let shown = format!("{}{}", stdout(&listed), stderr(&listed));
    assert!(listed.status.success(), "{shown}");
    assert!(shown.contains("oxy__list_agent_blueprints"), "{shown}");
    assert!(!shown.contains(TOKEN), "{shown}");

    let wrong = "wrong-token-9d8c7b6a";
    let refused = list_through(&server, wrong);
    let shown = format!("{}{}", stdout(&refused), stderr(&refused));
    assert!(!refused.status.success(), "{shown}");
    assert!(shown.contains("oxy"), "{shown}");
    assert!(!shown.contains(wrong), "{shown}");
    drop(server);
}
