//! `oxydra agents list` and `oxydra serve`: the `[[agents]]` of the configuration
//! reach the coordinator, and its HTTP API runs in the real binary.

use crate::common;

use std::process::Output;
use std::time::{Duration, Instant};

use common::serve::{
    CONFIG, Server, agents_list, get_json, run_to_end, runtime, sandbox_with_config,
    sandbox_with_invalid_config,
};
use common::{Sandbox, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, Release, Reply};
use serde_json::{Value, json};

#[test]
fn agents_list_prints_the_blueprints_as_the_api_does() {
    let sandbox = sandbox_with_config(CONFIG);
    let output = agents_list(&sandbox);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Text is for people: a line per agent, then what it takes.
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].starts_with("researcher") && lines[0].contains("agent"),
        "{text}"
    );
    assert!(
        lines[1].contains("parameters: prompt (string, required)"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("reader") && lines[2].contains("deterministic"),
        "{text}"
    );
    assert!(lines[2].contains("Reads one workspace file"), "{text}");
    assert!(
        lines[3].contains("parameters: file (string, required)"),
        "{text}"
    );
    assert!(
        serde_json::from_str::<Value>(&text).is_err(),
        "text, not JSON: {text}"
    );

    let mut command = sandbox.command();
    command
        .args(["agents", "list", "--output", "jsonl", "--db"])
        .arg(&sandbox.db);
    let output = command.output().unwrap();
    let agents = json_lines(&output);
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0]["name"], "researcher");
    assert_eq!(agents[0]["type"], "agent");
    assert!(
        agents[0].get("parameters_schema").is_none(),
        "AI agents use the implicit prompt schema: {agents:?}"
    );
    assert_eq!(agents[1]["name"], "reader");
    assert_eq!(agents[1]["type"], "deterministic");
    assert_eq!(agents[1]["parameters_schema"]["required"], json!(["file"]));
}

#[test]
fn agents_list_never_touches_the_database_a_server_may_share() {
    // Building a coordinator on a database recovers its runs (running ones become
    // failed / interrupted): listing must not do that to a live server's runs.
    let sandbox = sandbox_with_config(CONFIG);
    let output = agents_list(&sandbox);
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
    let output = agents_list(&sandbox);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    assert!(
        stderr(&output).contains("no agents configured"),
        "{}",
        stderr(&output)
    );
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
    let output = agents_list(&sandbox);
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
    let output = agents_list(&sandbox);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("file_reed"), "{}", stderr(&output));
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
        let client = oxydra::http::client();
        let agents: Value = get_json(&client, &server.url("/agents")).await;
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
            let run: Value = get_json(&client, &server.url(&format!("/runs/{run_id}"))).await;
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
        let client = oxydra::http::client();
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
        let client = oxydra::http::client();
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
        let client = oxydra::http::client();
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
            let run: Value = get_json(&client, &run_url).await;
            if status(&run) == "running" {
                break;
            }
            assert_eq!(status(&run), "pending", "{run}");
            assert!(Instant::now() < deadline, "the run never started: {run}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let agents = client.get(server.url("/agents")).send().await.unwrap();
        assert_eq!(agents.status(), 200);
        let run: Value = get_json(&client, &run_url).await;
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
            let run: Value = get_json(&client, &run_url).await;
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
    let server = Server::start_against(&sandbox, &provider);
    let run = runtime().block_on(async {
        let client = oxydra::http::client();
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

/// An AI agent with a cost budget on a model without a built-in price, and `pricing`
/// after it.
fn budgeted_agent(pricing: &str) -> String {
    format!(
        "[provider]\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[[agents]]\nname = \"spender\"\ntype = \"agent\"\nsystem_prompt = \"x\"\n\
         model = \"house-llm\"\nlimits = {{ max_cost = 0.5 }}\n{pricing}"
    )
}

#[test]
fn a_cost_budget_on_an_unpriced_model_is_refused_at_load_naming_agent_model_and_key() {
    let sandbox = sandbox_with_config(&budgeted_agent(""));
    let assert_refused = |output: &Output, what: &str| {
        let message = stderr(output);
        assert_eq!(output.status.code(), Some(2), "{what}: {message}");
        assert!(message.contains("oxydra.toml"), "{what}: {message}");
        assert!(message.contains("blueprint `spender`"), "{what}: {message}");
        assert!(
            message.contains(r#"[pricing."house-llm"]"#),
            "{what}: {message}"
        );
    };
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    assert_refused(&command.output().unwrap(), "agents list");
    // `serve` refuses to start instead of failing every run.
    let mut command = sandbox.command();
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace);
    assert_refused(&command.output().unwrap(), "serve");

    // With the price the message asks for, it starts.
    let priced = sandbox_with_config(&budgeted_agent(
        "[pricing.\"house-llm\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
    ));
    let server = Server::start(&priced, &[]);
    let agents = runtime().block_on(get_json(&oxydra::http::client(), &server.url("/agents")));
    assert_eq!(agents["agents"][0]["name"], "spender", "{agents}");
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}
