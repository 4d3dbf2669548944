//! `oxydra serve` attacked as a web page and a hostile caller would: cross-site and
//! rebinding requests, network binds without a token, shell syntax in step parameters
//! and Privileged tools a blueprint did not declare.

use crate::common;

use common::serve::{
    CONFIG, Server, agents_list, run_to_end, runtime, sandbox_with_config,
    sandbox_with_invalid_config,
};
use common::{Sandbox, stderr};
use serde_json::{Value, json};

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

#[test]
fn a_cross_site_text_plain_post_is_415_and_starts_no_run() {
    let sandbox = sandbox_with_config(SHELL_CONFIG);
    let server = Server::start_with(
        &sandbox,
        &[],
        &["--addr", "127.0.0.1:0", "--approve", "allow"],
    );
    runtime().block_on(async {
        let client = oxydra::http::client();
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
        let client = oxydra::http::client();
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
        &["--addr", "127.0.0.1:0", "--approve", "allow"],
    );
    runtime().block_on(async {
        let client = oxydra::http::client();
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
    // Unset `approve` is `ask` in `serve`, but a deterministic step never waits: the
    // deferred consent fails the step, and nothing runs.
    let server = Server::start(&sandbox, &[]);
    runtime().block_on(async {
        let client = oxydra::http::client();
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
    let output = agents_list(&sandbox);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("oxydra.toml"), "{message}");
    assert!(message.contains("`say`"), "{message}");
    assert!(message.contains("shell_exec"), "{message}");
    assert!(message.contains("allow_privileged"), "{message}");

    let agent = "[[agents]]\nname = \"ops\"\ntype = \"agent\"\nsystem_prompt = \"x\"\n\
                 tools = [\"file_read\", \"shell_exec\"]\n";
    let sandbox = sandbox_with_config(agent);
    let output = agents_list(&sandbox);
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
    let output = agents_list(&sandbox);
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
        let client = oxydra::http::client();
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

#[test]
fn a_privileged_step_under_the_default_approvals_fails_naming_how_to_allow_it() {
    let sandbox = sandbox_with_config(SHELL_CONFIG);
    // serve's default answer is `ask`: runs wait for a person, a step cannot.
    let server = Server::start_with(&sandbox, &[], &["--addr", "127.0.0.1:0"]);
    runtime().block_on(async {
        let client = oxydra::http::client();
        let run = run_to_end(
            &client,
            &server,
            json!({"agent_name": "say", "parameters": {"msg": "hello"}}),
        )
        .await;
        assert_eq!(run["status"], "failed", "{run}");
        let error = run["error"].to_string();
        assert!(error.contains("step_failed"), "{error}");
        assert!(
            error.contains("cannot wait") && error.contains("--approve allow"),
            "{error}"
        );
    });
}
