#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! `oxydra agents list` and `oxydra serve`: the `[[agents]]` of the configuration
//! reach the coordinator, and its HTTP API runs in the real binary.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{Sandbox, json_lines, stderr, stdout};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use oxydra_test_support::{MockServer, Release, Reply};
use serde_json::{Value, json};

const CONFIG: &str = r#"
[[agents]]
name = "researcher"
type = "agent"
description = "Research assistant"
system_prompt = "You research questions."
tools = ["file_read"]

[[agents]]
name = "reader"
type = "deterministic"
description = "Reads one workspace file"
parameters_schema = { type = "object", required = ["file"], properties = { file = { type = "string", minLength = 1 } }, additionalProperties = false }
[[agents.steps]]
tool = "file_read"
args = { path = "{{file}}" }
"#;

/// A sandbox whose `./oxydra.toml` is `config`, trusted.
fn sandbox_with_config(config: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(config);
    sandbox
}

/// A sandbox whose `./oxydra.toml` is `config`, which cannot be trusted (it is invalid).
fn sandbox_with_invalid_config(config: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path().join("oxydra.toml"), config).unwrap();
    sandbox
}

#[test]
fn agents_list_prints_the_blueprints_as_the_api_does() {
    let sandbox = sandbox_with_config(CONFIG);
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listing: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let agents = listing["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0]["name"], "researcher");
    assert_eq!(agents[0]["type"], "agent");
    assert!(
        agents[0].get("parameters_schema").is_none(),
        "AI agents use the implicit prompt schema: {listing}"
    );
    assert_eq!(agents[1]["name"], "reader");
    assert_eq!(agents[1]["type"], "deterministic");
    assert_eq!(agents[1]["parameters_schema"]["required"], json!(["file"]));

    let mut command = sandbox.command();
    command
        .args(["agents", "list", "--output", "jsonl", "--db"])
        .arg(&sandbox.db);
    let output = command.output().unwrap();
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["name"], "reader");
}

#[test]
fn agents_list_never_touches_the_database_a_server_may_share() {
    // Building a coordinator on a database recovers its runs (running ones become
    // failed / interrupted): listing must not do that to a live server's runs.
    let sandbox = sandbox_with_config(CONFIG);
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        !sandbox.db.exists(),
        "agents list opened {}",
        sandbox.db.display()
    );
}

#[test]
fn agents_list_needs_no_provider_and_no_agents() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listing: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(listing, json!({"agents": []}));
}

#[test]
fn an_invalid_parameters_schema_is_a_config_error_naming_the_file() {
    let sandbox = sandbox_with_config(
        r#"
[[agents]]
name = "broken"
type = "deterministic"
parameters_schema = { type = "object", properties = { url = { type = 12 } } }
[[agents.steps]]
tool = "web_fetch"
args = { url = "{{url}}" }
"#,
    );
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("oxydra.toml"), "{message}");
    assert!(message.contains("broken"), "{message}");
    assert!(message.contains("parameters_schema"), "{message}");
}

#[test]
fn an_agent_naming_an_unknown_tool_is_refused() {
    let sandbox = sandbox_with_config(
        "[[agents]]\nname = \"a\"\ntype = \"agent\"\nsystem_prompt = \"x\"\ntools = [\"file_reed\"]\n",
    );
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("file_reed"), "{}", stderr(&output));
}

/// `oxydra serve --addr 127.0.0.1:0` and the address it reports listening on.
struct Server {
    child: Child,
    base: String,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Server {
    fn start(sandbox: &Sandbox, envs: &[(&str, &str)]) -> Self {
        Self::start_with(sandbox, envs, &["--addr", "127.0.0.1:0"])
    }

    fn start_with(sandbox: &Sandbox, envs: &[(&str, &str)], args: &[&str]) -> Self {
        let mut command = sandbox.command();
        command
            .arg("serve")
            .args(args)
            .arg("--db")
            .arg(&sandbox.db)
            .arg("--workspace")
            .arg(&sandbox.workspace)
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let err = child.stderr.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        let base = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => match line.split("listening on ").nth(1) {
                    Some(rest) => break rest.split_whitespace().next().map(str::to_owned),
                    None => seen.push(line),
                },
                Err(_) => break None,
            }
        };
        match base {
            Some(base) => Self { child, base, lines },
            None => {
                let _ = child.kill();
                let status = child.wait();
                panic!("oxydra serve did not report its address ({status:?}): {seen:?}");
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// SIGTERM, then the exit code and the rest of stderr.
    fn terminate(mut self) -> (Option<i32>, String) {
        kill(
            Pid::from_raw(i32::try_from(self.child.id()).unwrap()),
            Signal::SIGTERM,
        )
        .unwrap();
        let status = self.child.wait().unwrap();
        let rest: Vec<String> = self.lines.try_iter().collect();
        (status.code(), rest.join("\n"))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn serve_validates_and_runs_a_deterministic_agent_then_stops_on_sigterm() {
    let sandbox = sandbox_with_config(CONFIG);
    std::fs::write(
        sandbox.workspace.join("notes.txt"),
        "the launch is on tuesday\n",
    )
    .unwrap();
    let server = Server::start(&sandbox, &[]);
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let agents: Value = client
            .get(server.url("/agents"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(agents["agents"].as_array().unwrap().len(), 2);

        // Invalid parameters: the validation body, with the schema to correct from.
        let refused = client
            .post(server.url("/runs"))
            .json(&json!({"agent_name": "reader", "parameters": {"path": "notes.txt"}}))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 400);
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"], "parameter_validation_failed");
        assert_eq!(body["agent_name"], "reader");
        assert!(body["parameters_schema"].is_object(), "{body}");
        assert!(!body["validation_errors"].as_array().unwrap().is_empty());

        let unknown = client
            .post(server.url("/runs"))
            .json(&json!({"agent_name": "nobody", "parameters": {}}))
            .send()
            .await
            .unwrap();
        assert_eq!(unknown.status(), 404);

        let created = client
            .post(server.url("/runs"))
            .json(&json!({"agent_name": "reader", "parameters": {"file": "notes.txt"}}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
        let created: Value = created.json().await.unwrap();
        let run_id = created["run_id"].as_str().unwrap().to_owned();

        let deadline = Instant::now() + Duration::from_secs(20);
        let run = loop {
            let run: Value = client
                .get(server.url(&format!("/runs/{run_id}")))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let status = run["status"].as_str().unwrap().to_owned();
            if status != "pending" && status != "running" {
                break run;
            }
            assert!(Instant::now() < deadline, "run never finished: {run}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(run["status"], "completed", "{run}");
        assert!(
            run.to_string().contains("the launch is on tuesday"),
            "the step's output is the result: {run}"
        );
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
    assert!(rest.contains("stopped"), "{rest}");
}

#[test]
fn serve_requires_the_bearer_token_when_one_is_set() {
    let sandbox = sandbox_with_config(CONFIG);
    let server = Server::start(&sandbox, &[("OXYDRA_SERVE_TOKEN", "let-me-in")]);
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let anonymous = client.get(server.url("/agents")).send().await.unwrap();
        assert_eq!(anonymous.status(), 401);
        let body: Value = anonymous.json().await.unwrap();
        assert!(body["error"].is_string(), "{body}");
        let wrong = client
            .get(server.url("/agents"))
            .bearer_auth("guess")
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401);
        let allowed = client
            .get(server.url("/agents"))
            .bearer_auth("let-me-in")
            .send()
            .await
            .unwrap();
        assert_eq!(allowed.status(), 200);
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

/// `--addr localhost:0`: the host name is resolved (to a loopback address, so no token
/// is needed) and the bound address, with the port picked, is printed and serves.
#[test]
fn serve_resolves_a_host_name_and_prints_the_bound_address() {
    let sandbox = sandbox_with_config(CONFIG);
    let server = Server::start_with(&sandbox, &[], &["--addr", "localhost:0"]);
    let bound: std::net::SocketAddr = server
        .base
        .trim_start_matches("http://")
        .parse()
        .unwrap_or_else(|_| panic!("not an address: {}", server.base));
    assert!(bound.ip().is_loopback(), "{bound}");
    assert_ne!(bound.port(), 0);
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let agents = client.get(server.url("/agents")).send().await.unwrap();
        assert_eq!(agents.status(), 200);
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn serve_names_the_address_it_cannot_listen_on() {
    let sandbox = Sandbox::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let mut command = sandbox.command();
    command
        .args(["serve", "--addr", &addr, "--db"])
        .arg(&sandbox.db);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains(&format!("cannot listen on {addr} (from --addr)")),
        "{message}"
    );

    let mut command = sandbox.command();
    command.args(["serve", "--addr", "localhost:http"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--addr"), "{}", stderr(&output));
}

#[test]
fn serve_refuses_a_token_variable_that_is_not_set() {
    let sandbox = sandbox_with_config("[serve]\nauth_token_env = \"OXYDRA_TEST_UNSET_TOKEN\"\n");
    let mut command = sandbox.command();
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(&sandbox.db)
        .env_remove("OXYDRA_TEST_UNSET_TOKEN");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("OXYDRA_TEST_UNSET_TOKEN"), "{message}");
    assert!(message.contains("serve.auth_token_env"), "{message}");
}

#[test]
fn bad_serve_keys_name_the_key() {
    let sandbox = sandbox_with_invalid_config("[serve]\nmax_concurrent_runs = 0\n");
    let mut command = sandbox.command();
    command.args(["agents", "list"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("serve.max_concurrent_runs"),
        "{}",
        stderr(&output)
    );
    let sandbox = sandbox_with_invalid_config("[serve]\nport = 8080\n");
    let mut command = sandbox.command();
    command.args(["agents", "list"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("`port`"), "{}", stderr(&output));
}

/// A deterministic agent that runs `echo {{msg}}` through `shell_exec`, declared, and
/// one that leaves a file named after its parameter; runs go one at a time.
const SHELL_CONFIG: &str = r#"
[serve]
max_concurrent_runs = 1

[[agents]]
name = "say"
type = "deterministic"
allow_privileged = ["shell_exec"]
parameters_schema = { type = "object", required = ["msg"], properties = { msg = { type = "string" } } }
[[agents.steps]]
tool = "shell_exec"
args = { command = "echo {{msg}}" }

[[agents]]
name = "mark"
type = "deterministic"
allow_privileged = ["shell_exec"]
parameters_schema = { type = "object", required = ["name"], properties = { name = { type = "string", pattern = "^[a-z]+$" } } }
[[agents.steps]]
tool = "shell_exec"
args = { command = "touch {{name}}" }
"#;

/// Posts a run as JSON and waits for it to end.
async fn run_to_end(client: &reqwest::Client, server: &Server, body: Value) -> Value {
    let created = client
        .post(server.url("/runs"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let run_id = created["run_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run: Value = client
            .get(server.url(&format!("/runs/{run_id}")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let status = run["status"].as_str().unwrap().to_owned();
        if status != "pending" && status != "running" {
            return run;
        }
        assert!(Instant::now() < deadline, "run never finished: {run}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn a_cross_site_text_plain_post_is_415_and_starts_no_run() {
    let sandbox = sandbox_with_config(SHELL_CONFIG);
    let server = Server::start_with(
        &sandbox,
        &[],
        &["--addr", "127.0.0.1:0", "--approve", "always"],
    );
    runtime().block_on(async {
        let client = reqwest::Client::new();
        // What `fetch(…, {method: "POST", body})` from any page sends: no preflight.
        for content_type in [
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
        ] {
            let response = client
                .post(server.url("/runs"))
                .header("content-type", content_type)
                .header("origin", "http://evil.example")
                .body(r#"{"agent_name": "mark", "parameters": {"name": "csrf"}}"#)
                .send()
                .await
                .unwrap();
            // The Origin is refused first; without one, the content type is.
            assert_eq!(response.status(), 403, "{content_type}");
            let response = client
                .post(server.url("/runs"))
                .header("content-type", content_type)
                .body(r#"{"agent_name": "mark", "parameters": {"name": "csrf"}}"#)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 415, "{content_type}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["error"], "unsupported_media_type", "{body}");
        }
        // One worker, runs in order: once this one has run, any run created before it
        // has run too.
        let run = run_to_end(
            &client,
            &server,
            json!({"agent_name": "mark", "parameters": {"name": "legit"}}),
        )
        .await;
        assert_eq!(run["status"], "completed", "{run}");
    });
    assert!(sandbox.workspace.join("legit").exists());
    assert!(
        !sandbox.workspace.join("csrf").exists(),
        "a text/plain POST started a run"
    );
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn dns_rebinding_and_foreign_origins_are_refused() {
    let sandbox = sandbox_with_config(CONFIG);
    std::fs::write(sandbox.workspace.join("notes.txt"), "private notes\n").unwrap();
    let server = Server::start(&sandbox, &[]);
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let run = run_to_end(
            &client,
            &server,
            json!({"agent_name": "reader", "parameters": {"file": "notes.txt"}}),
        )
        .await;
        let run_path = format!("/runs/{}", run["run_id"].as_str().unwrap());
        // A rebinding page reads `http://attacker.example:PORT/runs/…`, now resolving to
        // 127.0.0.1: its Host is its own name.
        for path in ["/agents", run_path.as_str()] {
            let response = client
                .get(server.url(path))
                .header("host", "attacker.example")
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 421, "{path}");
            let body = response.text().await.unwrap();
            assert!(!body.contains("private notes"), "{body}");
            assert!(body.contains("host_not_allowed"), "{body}");
        }
        for origin in ["http://evil.example", "null"] {
            let response = client
                .get(server.url(&run_path))
                .header("origin", origin)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 403, "{origin}");
        }
        let response = client
            .get(server.url(&run_path))
            .header("sec-fetch-site", "cross-site")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn a_parameter_with_shell_syntax_is_echoed_not_run() {
    let sandbox = sandbox_with_config(SHELL_CONFIG);
    let server = Server::start_with(
        &sandbox,
        &[],
        &["--addr", "127.0.0.1:0", "--approve", "always"],
    );
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let run = run_to_end(
            &client,
            &server,
            json!({"agent_name": "say", "parameters": {"msg": "hi; id > x"}}),
        )
        .await;
        assert_eq!(run["status"], "completed", "{run}");
        assert!(
            run["result"]["output"]
                .as_str()
                .unwrap()
                .contains("hi; id > x"),
            "{run}"
        );
    });
    assert!(
        !sandbox.workspace.join("x").exists(),
        "the parameter ran as a shell command"
    );
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn a_privileged_step_is_denied_unless_approval_is_configured() {
    let sandbox = sandbox_with_config(SHELL_CONFIG);
    // The default `approve = ask` means deny: nobody is at a terminal.
    let server = Server::start(&sandbox, &[]);
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let run = run_to_end(
            &client,
            &server,
            json!({"agent_name": "mark", "parameters": {"name": "denied"}}),
        )
        .await;
        assert_eq!(run["status"], "failed", "{run}");
        assert_eq!(run["error"]["kind"], "step_failed", "{run}");
    });
    assert!(!sandbox.workspace.join("denied").exists());
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn an_undeclared_privileged_tool_is_a_config_error_naming_agent_and_tool() {
    let config = SHELL_CONFIG.replace("allow_privileged = [\"shell_exec\"]\n", "");
    let sandbox = sandbox_with_config(&config);
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("oxydra.toml"), "{message}");
    assert!(message.contains("`say`"), "{message}");
    assert!(message.contains("shell_exec"), "{message}");
    assert!(message.contains("allow_privileged"), "{message}");

    let agent = "[[agents]]\nname = \"ops\"\ntype = \"agent\"\nsystem_prompt = \"x\"\n\
                 tools = [\"file_read\", \"shell_exec\"]\n";
    let sandbox = sandbox_with_config(agent);
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("`ops`") && message.contains("shell_exec"),
        "{message}"
    );
}

#[test]
fn a_shell_placeholder_inside_quotes_is_a_config_error() {
    let config = SHELL_CONFIG.replace("\"echo {{msg}}\"", "'echo \"{{msg}}\"'");
    let sandbox = sandbox_with_config(&config);
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("{{msg}}") && message.contains("double quotes"),
        "{message}"
    );
}

#[test]
fn a_network_bind_without_a_token_is_refused_naming_the_flag() {
    for (addr, config) in [
        ("0.0.0.0:0", ""),
        ("[::]:0", ""),
        ("", "[serve]\naddr = \"0.0.0.0:0\"\n"),
    ] {
        let sandbox = sandbox_with_config(config);
        let mut command = sandbox.command();
        command.arg("serve");
        if !addr.is_empty() {
            command.args(["--addr", addr]);
        }
        command
            .arg("--db")
            .arg(&sandbox.db)
            .env_remove("OXYDRA_SERVE_TOKEN");
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{addr}: {}", stderr(&output));
        let message = stderr(&output);
        assert!(message.contains("--insecure-no-auth"), "{message}");
        assert!(message.contains("serve.allow_unauthenticated"), "{message}");
        assert!(
            message.contains(if addr.is_empty() {
                "serve.addr"
            } else {
                "--addr"
            }),
            "{message}"
        );
        assert!(!sandbox.db.exists(), "refused before anything was opened");
    }
}

#[test]
fn a_network_bind_with_a_token_serves_remote_names_to_token_holders_only() {
    let sandbox = sandbox_with_config(CONFIG);
    let server = Server::start_with(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", "remote-s3cret")],
        &["--addr", "0.0.0.0:0"],
    );
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    let local = format!("http://127.0.0.1:{port}/agents");
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let anonymous = client
            .get(&local)
            .header("host", "oxydra.lan")
            .send()
            .await
            .unwrap();
        assert_eq!(anonymous.status(), 401);
        let allowed = client
            .get(&local)
            .header("host", "oxydra.lan")
            .bearer_auth("remote-s3cret")
            .send()
            .await
            .unwrap();
        assert_eq!(allowed.status(), 200);
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn an_empty_token_variable_is_an_error_naming_it_not_an_open_server() {
    let named = sandbox_with_config("[serve]\nauth_token_env = \"OXYDRA_TEST_EMPTY_TOKEN\"\n");
    let default = Sandbox::new();
    for (sandbox, var, value) in [
        (&named, "OXYDRA_TEST_EMPTY_TOKEN", "  "),
        (&named, "OXYDRA_TEST_EMPTY_TOKEN", ""),
        (&default, "OXYDRA_SERVE_TOKEN", ""),
    ] {
        let mut command = sandbox.command();
        command
            .args(["serve", "--addr", "127.0.0.1:0", "--db"])
            .arg(&sandbox.db)
            .env(var, value);
        let output = command.output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{var}={value:?}: {}",
            stderr(&output)
        );
        let message = stderr(&output);
        assert!(message.contains(var), "{message}");
        assert!(message.contains("empty"), "{message}");
    }
}

#[test]
fn bad_allowed_hosts_and_origins_name_the_key() {
    for (config, key) in [
        (
            "[serve]\nallowed_hosts = [\"http://oxydra.lan\"]\n",
            "serve.allowed_hosts[0]",
        ),
        (
            "[serve]\nallowed_origins = [\"dash.example.lan\"]\n",
            "serve.allowed_origins[0]",
        ),
        (
            "[serve]\nallowed_origins = [\"null\"]\n",
            "serve.allowed_origins[0]",
        ),
    ] {
        let sandbox = sandbox_with_invalid_config(config);
        let mut command = sandbox.command();
        command.args(["agents", "list"]);
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{config}");
        assert!(stderr(&output).contains(key), "{}", stderr(&output));
    }
}

/// A server for the deep page: it sends the headers and all of the body but its last
/// bytes, then holds the rest until the test releases it.
fn held_deep_page() -> (MockServer, Release) {
    let depth = 100_000;
    let body = format!(
        "<html><body>{}deep text{}</body></html>",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    );
    let (reply, release) = Reply::new(200)
        .header("content-type", "text/html")
        .header("content-length", &body.len().to_string())
        .body(body.clone())
        .held_at(body.len() - 14);
    (MockServer::start(vec![reply]).unwrap(), release)
}

/// The attack through `oxydra serve`: a deterministic agent fetches a page of 100,000
/// nested `<div>`s. While the run is in flight the API keeps answering, and once the
/// page arrives it is converted (as plain text) long before the tool's timeout, so the
/// run completes and the API stays responsive throughout.
#[test]
fn serve_stays_responsive_while_a_run_fetches_a_deeply_nested_page() {
    let sandbox = sandbox_with_config(
        r#"
[tools.web_fetch]
allow_hosts = ["127.0.0.1"]

[[agents]]
name = "crawler"
type = "deterministic"
description = "Fetches one page"
parameters_schema = { type = "object", required = ["url"], properties = { url = { type = "string" } } }
[[agents.steps]]
tool = "web_fetch"
args = { url = "{{url}}" }
"#,
    );
    let (page_server, release) = held_deep_page();
    let page = page_server.url("/deep");
    let server = Server::start(&sandbox, &[]);
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let created = client
            .post(server.url("/runs"))
            .json(&json!({"agent_name": "crawler", "parameters": {"url": page}}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
        let created: Value = created.json().await.unwrap();
        let run_url = server.url(&format!("/runs/{}", created["run_id"].as_str().unwrap()));
        let status = |run: &Value| run["status"].as_str().unwrap().to_owned();

        // The page is still held back: the run is in flight, and the API answers.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let run: Value = client
                .get(&run_url)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if status(&run) == "running" {
                break;
            }
            assert_eq!(status(&run), "pending", "{run}");
            assert!(Instant::now() < deadline, "the run never started: {run}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let agents = client.get(server.url("/agents")).send().await.unwrap();
        assert_eq!(agents.status(), 200);
        let run: Value = client
            .get(&run_url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            status(&run),
            "running",
            "/agents answered while the run ran: {run}"
        );

        // The rest of the page arrives; the conversion must not hold the server.
        release.release();
        let run = loop {
            let agents = client.get(server.url("/agents")).send().await.unwrap();
            assert_eq!(agents.status(), 200);
            let run: Value = client
                .get(&run_url)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if status(&run) != "running" {
                break run;
            }
            assert!(Instant::now() < deadline, "the run never finished: {run}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(status(&run), "completed", "{run}");
        let text = run.to_string();
        assert!(text.contains("deep text"), "{text}");
        assert!(text.contains("too deeply to lay out"), "{text}");
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

/// `oxydra serve` builds its provider where `run` does, with the same retries: an AI
/// agent's run survives a provider that fails once with 502.
#[test]
fn a_serve_run_retries_a_provider_502_like_run_does() {
    use oxydra_test_support::openai;
    let provider = MockServer::start(vec![
        Reply::json(502, r#"{"error":{"message":"bad gateway"}}"#),
        openai::text("recovered after one retry"),
    ])
    .unwrap();
    let sandbox = sandbox_with_config(CONFIG);
    let server = Server::start_with(
        &sandbox,
        &[],
        &[
            "--addr",
            "127.0.0.1:0",
            "--base-url",
            &provider.openai_url(),
        ],
    );
    let run = runtime().block_on(async {
        let client = reqwest::Client::new();
        run_to_end(
            &client,
            &server,
            json!({"agent_name": "researcher", "parameters": {"prompt": "hello"}}),
        )
        .await
    });
    let (code, rest) = server.terminate();
    assert_eq!(run["status"], "completed", "{run}\n{rest}");
    assert!(
        run.to_string().contains("recovered after one retry"),
        "{run}"
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "one 502, one retry");
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
    assert_eq!(code, Some(0), "{rest}");
}
