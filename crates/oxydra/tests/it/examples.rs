//! Each example run as a user runs it, against a local server that plays the model:
//! the example binaries (built with the tests) get the server's address through the
//! environment, as they would get a real provider's.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use oxydra::serde_json::{Value, json};
use oxydra_test_support::{MockServer, Reply, openai};

/// The compiled example `name`, beside this test binary's directory.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = debug.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is not built: run the tests with `cargo test -p oxydra` / `cargo nextest run -p oxydra`, which build the examples",
        path.display()
    );
    path
}

/// A model at an OpenAI-compatible endpoint that answers with `replies` in order
/// and refuses anything but `POST /v1/chat/completions`.
fn model(replies: Vec<Reply>) -> MockServer {
    MockServer::builder()
        .only("POST", openai::CHAT_PATH)
        .strict_openai()
        .replies(replies)
        .start()
        .unwrap()
}

/// Runs example `name` against `server`; its stdout, after asserting it succeeded.
fn run(name: &str, server: &MockServer) -> String {
    run_with(name, server, &[]).0
}

/// Runs example `name` with `args` against `server`; its stdout and stderr.
fn run_with(name: &str, server: &MockServer, args: &[&str]) -> (String, String) {
    let output = Command::new(example(name))
        .args(args)
        .env("OPENAI_BASE_URL", server.openai_url())
        .env("OPENAI_API_KEY", "test-key")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{name} failed: {stderr}");
    (
        String::from_utf8(output.stdout).unwrap(),
        stderr.into_owned(),
    )
}

fn bodies(server: &MockServer) -> Vec<Value> {
    server.requests().into_iter().map(|r| r.body).collect()
}

/// The tool results the model was sent in `body`.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn hello_calls_its_tool_and_prints_the_answer() {
    let server = model(vec![
        openai::tool_calls(&[("call_1", "weather", r#"{"city":"Paris"}"#)]),
        openai::text("It is sunny in Paris."),
    ]);
    let stdout = run("hello", &server);
    assert_eq!(stdout.trim(), "It is sunny in Paris.");
    let bodies = bodies(&server);
    assert_eq!(bodies[0]["model"], "gpt-4o-mini");
    assert_eq!(bodies[0]["tools"][0]["function"]["name"], "weather");
    assert_eq!(
        bodies[0]["tools"][0]["function"]["description"],
        "Tells the weather in a city."
    );
    assert_eq!(tool_results(&bodies[1]), ["Sunny and 21 °C in Paris"]);
}

#[test]
fn typed_output_retries_an_invalid_answer_and_prints_the_value() {
    let server = model(vec![
        openai::tool_calls(&[(
            "c1",
            "final_answer",
            r#"{"country":"France","capital":"Paris"}"#,
        )]),
        openai::tool_calls(&[(
            "c2",
            "final_answer",
            r#"{"country":"France","capital":"Paris","population":2100000}"#,
        )]),
    ]);
    let stdout = run("typed_output", &server);
    assert_eq!(
        stdout.trim(),
        "Paris is the capital of France (2100000 people)"
    );
    let bodies = bodies(&server);
    let sent_back = tool_results(&bodies[1]);
    assert!(sent_back[0].contains("population"), "{sent_back:?}");
    let tool = &bodies[0]["tools"][0]["function"];
    assert_eq!(tool["name"], "final_answer");
    assert_eq!(
        tool["parameters"]["required"],
        json!(["country", "capital", "population"])
    );
}

#[test]
fn streaming_prints_text_as_it_arrives() {
    let server = model(vec![
        openai::tool_calls(&[("c1", "add", r#"{"a":1.5,"b":2.25}"#)]),
        openai::text("1.5 + 2.25 = 3.75"),
    ]);
    let stdout = run("streaming", &server);
    assert_eq!(stdout, "1.5 + 2.25 = 3.75");
    assert_eq!(tool_results(&bodies(&server)[1]), ["3.75"]);
}

#[test]
fn permission_broker_denies_what_is_not_allowed_and_the_model_hears_it() {
    let server = model(vec![
        openai::tool_calls(&[("c1", "run_command", r#"{"command":"rm -rf /tmp/x"}"#)]),
        openai::tool_calls(&[("c2", "run_command", r#"{"command":"ls /tmp"}"#)]),
        openai::text("Listed; deleting was refused."),
    ]);
    let (stdout, stderr) = run_with("permission_broker", &server, &[]);
    assert_eq!(stdout.trim(), "Listed; deleting was refused.");
    assert!(stderr.contains("denied: rm -rf /tmp/x"), "{stderr}");
    assert!(stderr.contains("approved: ls /tmp"), "{stderr}");
    let bodies = bodies(&server);
    let denied = tool_results(&bodies[1]);
    assert!(denied[0].starts_with("Tool execution failed"), "{denied:?}");
    assert_eq!(tool_results(&bodies[2])[1], "ran `ls /tmp`");
}

#[test]
fn supervisor_delegates_to_its_sub_agent() {
    // One server plays both models; the calls are sequential.
    let server = model(vec![
        openai::tool_calls(&[("s1", "lexicographer", r#"{"task":"Define oxydra"}"#)]),
        openai::tool_calls(&[("l1", "define", r#"{"word":"oxydra"}"#)]),
        openai::text("Oxydra: a word worth knowing."),
        openai::text("The lexicographer says: a word worth knowing."),
    ]);
    let (stdout, stderr) = run_with("supervisor", &server, &[]);
    assert_eq!(
        stdout.trim(),
        "The lexicographer says: a word worth knowing."
    );
    let nested: usize = stderr
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(nested > 3, "{stderr}");
    let bodies = bodies(&server);
    // The sub-agent was given the task alone, under its own system prompt.
    assert_eq!(
        bodies[1]["messages"][0]["content"],
        "You define words precisely, using your dictionary."
    );
    assert_eq!(bodies[1]["messages"][1]["content"], "Define oxydra");
    assert_eq!(tool_results(&bodies[3]), ["Oxydra: a word worth knowing."]);
}

#[test]
fn memory_resume_continues_the_stored_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.db");
    let server = model(vec![
        openai::text("Nice to meet you, Ada."),
        openai::text("Your name is Ada."),
    ]);
    let (stdout, stderr) = run_with("memory_resume", &server, &[db.to_str().unwrap()]);
    assert_eq!(stdout, "Nice to meet you, Ada.\nYour name is Ada.\n");
    assert!(stderr.contains("4 messages stored"), "{stderr}");
    let second = &bodies(&server)[1];
    let texts: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(texts.contains(&"My name is Ada. Remember it."), "{texts:?}");
    assert!(db.exists());
}

#[test]
fn provider_alone_completes_once() {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Rayleigh scattering."}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
    });
    let server = model(vec![Reply::json(200, body.to_string())]);
    let (stdout, stderr) = run_with("provider_alone", &server, &[]);
    assert_eq!(stdout, "Rayleigh scattering.\n");
    assert_eq!(stderr.trim(), "1000 tokens in, 100 out, $0.000210");
    let sent = &bodies(&server)[0];
    assert_eq!(sent["messages"][1]["content"], "Why is the sky blue?");
    assert_ne!(sent["stream"], true);
}

/// Kills the child when the test ends, passed or not.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request to `addr` with a JSON body; the status and the JSON answer.
fn http(addr: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json_from(body)
    };
    (status, body)
}

fn serde_json_from(text: &str) -> Value {
    oxydra::serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

#[test]
fn coordinator_axum_serves_the_api_beside_the_app_routes() {
    let server = model(vec![openai::text("Rain on the roof / ...")]);
    let mut child = Command::new(example("coordinator_axum"))
        .env("OPENAI_BASE_URL", server.openai_url())
        .env("OPENAI_API_KEY", "test-key")
        .env("ADDR", "127.0.0.1:0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = KillOnDrop(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();

    assert_eq!(
        http(&addr, "GET", "/health", None),
        (200, Value::String("ok".into()))
    );
    let (status, agents) = http(&addr, "GET", "/api/agents", None);
    assert_eq!(status, 200);
    assert_eq!(agents["agents"][0]["name"], "haiku");
    let (status, created) = http(
        &addr,
        "POST",
        "/api/runs",
        Some(json!({"agent_name": "haiku", "parameters": {"prompt": "rain"}})),
    );
    assert_eq!(status, 201, "{created}");
    let path = format!("/api/runs/{}", created["run_id"].as_str().unwrap());
    let mut run = Value::Null;
    for _ in 0..200 {
        run = http(&addr, "GET", &path, None).1;
        // Wait out every state before the end (pending, queued, running).
        if matches!(
            run["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(run["status"], "completed", "{run}");
    assert!(
        run["result"].to_string().contains("Rain on the roof"),
        "{run}"
    );
    assert_eq!(bodies(&server)[0]["messages"][1]["content"], "rain");
    drop(child);
}

#[test]
fn mcp_tools_calls_a_tool_of_a_real_server() {
    let Some(script) = oxydra_test_support::mcp_servers::require("server-everything") else {
        return;
    };
    let server = model(vec![
        openai::tool_calls(&[("c1", "everything__echo", r#"{"message":"hello"}"#)]),
        openai::text("The server said hello."),
    ]);
    let (stdout, stderr) = run_with("mcp_tools", &server, &["node", script.to_str().unwrap()]);
    assert_eq!(stdout.trim(), "The server said hello.");
    assert!(!stderr.starts_with("0 MCP tools"), "{stderr}");
    let bodies = bodies(&server);
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"everything__echo"), "{offered:?}");
    assert_eq!(tool_results(&bodies[1]), ["Echo: hello"]);
}

/// The model's side of the production agent: read the changelog, publish a note
/// (which waits for a person), then, once resumed, the typed answer.
fn release_model(published: bool) -> MockServer {
    let answer = json!({"version": "0.2.0", "published": published}).to_string();
    model(vec![
        openai::tool_calls(&[("c1", "file_read", r#"{"path":"CHANGELOG.md"}"#)]),
        openai::tool_calls(&[(
            "c2",
            "publish_note",
            r##"{"slug":"v0-2","text":"# 0.2.0\nTyped runs wait for approval."}"##,
        )]),
        openai::tool_calls(&[("c3", "final_answer", answer.as_str())]),
    ])
}

/// One run of the `production_agent` example, decided with `decision` (`approve` or
/// `deny`): its workspace (holding a changelog), database, model and output.
struct ProductionRun {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    db: PathBuf,
    server: MockServer,
    stdout: String,
    stderr: String,
}

fn production_run(decision: &str) -> ProductionRun {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("repo");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(
        workspace.join("CHANGELOG.md"),
        "## 0.2.0\n- Typed runs wait for approval.\n",
    )
    .unwrap();
    let db = dir.path().join("agent.db");
    let server = release_model(decision == "approve");
    let (stdout, stderr) = run_with(
        "production_agent",
        &server,
        &[workspace.to_str().unwrap(), db.to_str().unwrap(), decision],
    );
    ProductionRun {
        _dir: dir,
        workspace,
        db,
        server,
        stdout,
        stderr,
    }
}

#[test]
fn production_agent_waits_for_approval_then_resumes_to_the_typed_answer() {
    // `_dir` holds the workspace until the end of the test.
    let ProductionRun {
        _dir,
        workspace,
        db,
        server,
        stdout,
        stderr,
    } = production_run("approve");
    assert_eq!(stdout.trim(), "0.2.0: published true");
    // The events were streamed: the deferred call was announced, then ran on resume.
    assert!(
        stderr.contains("[publish_note waits for approval]"),
        "{stderr}"
    );
    assert!(stderr.contains("waiting: `publish_note`"), "{stderr}");
    assert!(stderr.contains("[publish_note done]"), "{stderr}");
    // One budget over both runs: three turns in all.
    assert!(stderr.contains("3 turns, $0.0"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes/v0-2.md")).unwrap(),
        "# 0.2.0\nTyped runs wait for approval."
    );
    assert!(db.exists());

    let bodies = bodies(&server);
    assert_eq!(bodies.len(), 3, "one call per turn, none while waiting");
    assert_eq!(bodies[0]["model"], "acme-large-2");
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    // The one built-in asked for, the custom tool and the typed answer's tool.
    let mut sorted = offered.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["file_read", "final_answer", "publish_note"]);
    assert!(
        tool_results(&bodies[1])[0].contains("Typed runs wait for approval."),
        "{:?}",
        tool_results(&bodies[1])
    );
    // The resumed run sent the approved call's own result, as if it had never waited.
    let resumed = tool_results(&bodies[2]);
    assert_eq!(resumed.len(), 2, "{resumed:?}");
    assert_eq!(resumed[1], "published notes/v0-2.md");
}

#[test]
fn production_agent_denied_reaches_the_model_and_writes_nothing() {
    let ProductionRun {
        _dir,
        workspace,
        server,
        stdout,
        ..
    } = production_run("deny");
    assert_eq!(stdout.trim(), "0.2.0: published false");
    assert!(!workspace.join("notes").exists());
    let denied = tool_results(&bodies(&server)[2]);
    assert!(
        denied
            .last()
            .unwrap()
            .contains("not before the release review"),
        "{denied:?}"
    );
}
