//! Approvals that wait, through the real `oxydra serve` on SQLite: with `approve =
//! "ask"` a run whose model asks for a call that needs consent stops in
//! `waiting_approval` (freeing its worker slot), lists the request, and goes on once a
//! person decides it over HTTP; bad decisions get JSON 4xx. Also: `never` still
//! denies at once, and the trusted configuration's `[[hooks]]` run in `serve` while an
//! untrusted file's do not. A call held because the run read untrusted text waits with
//! the source named as its reason, kept across a restart.

use crate::common;

use std::time::Duration;

use common::Sandbox;
use common::approvals::{
    ASK_CONFIG, WRITE, WRITTEN, decide, last_tool_result, start_run, the_pending_write,
    wait_for_status, writer_provider,
};
use common::serve::{Server, get_json, runtime, sandbox_with_config};
use oxydra::tools::{SandboxSupport, sandbox_support};
use oxydra_test_support::MockServer;
use serde_json::{Value, json};

#[test]
fn a_run_waits_for_approval_frees_its_slot_and_completes_once_approved() {
    let rt = runtime();
    let provider = writer_provider();
    let sandbox = sandbox_with_config(ASK_CONFIG);
    let server = Server::start_against(&sandbox, &provider);
    let client = oxydra::http::client();
    rt.block_on(async {
        let run_id = start_run(&client, &server, "write out.txt").await;
        let run = wait_for_status(&client, &server.base, &run_id, "waiting_approval").await;
        let approval_id = the_pending_write(&run);
        let request = &run["pending_approvals"][0];
        // `[serve] approval_ttl_secs = 600` sets the deadline.
        assert_eq!(
            request["expires_at"].as_i64().unwrap() - request["requested_at"].as_i64().unwrap(),
            600_000,
            "{run}"
        );
        assert!(!sandbox.workspace.join("out.txt").exists(), "ran unasked");

        // The waiting run holds no worker slot: with one slot, another run completes.
        let other = start_run(&client, &server, "no tools, just answer").await;
        let done = wait_for_status(&client, &server.base, &other, "completed").await;
        assert_eq!(done["result"]["text"], "nothing to write", "{done}");
        let still = get_json(&client, &server.url(&format!("/runs/{run_id}"))).await;
        assert_eq!(still["status"], "waiting_approval", "{still}");

        let (status, decided) = decide(
            &client,
            &server.base,
            &run_id,
            &approval_id,
            &json!({"decision": "approve_once"}),
        )
        .await;
        assert_eq!(status, 200, "{decided}");
        assert_eq!(decided["run_id"], run_id.as_str(), "{decided}");
        let run = wait_for_status(&client, &server.base, &run_id, "completed").await;
        assert_eq!(run["result"]["text"], "done", "{run}");
        assert_eq!(
            std::fs::read_to_string(sandbox.workspace.join("out.txt")).unwrap(),
            WRITTEN
        );

        // A decision for a finished run, a second decision: JSON 409.
        let (status, body) = decide(
            &client,
            &server.base,
            &run_id,
            &approval_id,
            &json!({"decision": "deny"}),
        )
        .await;
        assert_eq!(status, 409, "{body}");
        assert!(body["error"].is_string(), "{body}");
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
    assert_no_error_lines(&rest);
}

#[test]
fn a_denial_with_a_reason_reaches_the_model_and_bad_decisions_get_json_4xx() {
    let rt = runtime();
    let provider = writer_provider();
    let sandbox = sandbox_with_config(ASK_CONFIG);
    let server = Server::start_against(&sandbox, &provider);
    let client = oxydra::http::client();
    rt.block_on(async {
        let run_id = start_run(&client, &server, "write out.txt").await;
        let run = wait_for_status(&client, &server.base, &run_id, "waiting_approval").await;
        let approval_id = the_pending_write(&run);
        let base = &server.base;

        // Unknown run, unknown request: 404. A decision that is none of the three, one
        // with a field too many, a body that is no JSON: 4xx. All JSON.
        for (run, approval, body) in [
            (
                "no-such-run",
                approval_id.as_str(),
                json!({"decision": "deny"}),
            ),
            (
                run_id.as_str(),
                "no-such-approval",
                json!({"decision": "deny"}),
            ),
        ] {
            let (status, body) = decide(&client, base, run, approval, &body).await;
            assert_eq!(status, 404, "{body}");
            assert!(body["error"].is_string(), "{body}");
        }
        for body in [
            json!({"decision": "maybe"}),
            json!({"decision": "approve_once", "also": true}),
            json!({}),
            json!("deny"),
        ] {
            let (status, answer) = decide(&client, base, &run_id, &approval_id, &body).await;
            assert!((400..500).contains(&status), "{body}: {status} {answer}");
            assert!(answer["error"].is_string(), "{body}: {answer}");
        }
        let garbled = client
            .post(format!("{base}/runs/{run_id}/approvals/{approval_id}"))
            .header("content-type", "application/json")
            .body("{\"decision\": ")
            .send()
            .await
            .unwrap();
        assert_eq!(garbled.status(), 400);
        let garbled: Value = garbled.json().await.unwrap();
        assert!(garbled["error"].is_string(), "{garbled}");
        // None of that decided anything.
        let still = get_json(&client, &server.url(&format!("/runs/{run_id}"))).await;
        assert_eq!(still["status"], "waiting_approval", "{still}");

        let (status, decided) = decide(
            &client,
            base,
            &run_id,
            &approval_id,
            &json!({"decision": "deny", "reason": "not on a friday"}),
        )
        .await;
        assert_eq!(status, 200, "{decided}");
        let run = wait_for_status(&client, base, &run_id, "completed").await;
        assert_eq!(run["result"]["text"], "done", "{run}");
    });
    assert!(
        !sandbox.workspace.join("out.txt").exists(),
        "a denied call ran"
    );
    let result = last_tool_result(&provider);
    assert!(result.contains("not on a friday"), "{result}");
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
    assert_no_error_lines(&rest);
}

/// Fails on any ERROR line `serve` wrote on stderr: a clean decision and its resume
/// log none (the illegal turn state move of issue 45 did).
fn assert_no_error_lines(stderr: &str) {
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("ERROR"))
        .collect();
    assert!(errors.is_empty(), "serve logged errors: {errors:#?}");
}

#[test]
fn approve_never_still_denies_at_once() {
    let rt = runtime();
    let provider = writer_provider();
    let sandbox = sandbox_with_config(&ASK_CONFIG.replace("\"ask\"", "\"never\""));
    let server = Server::start_against(&sandbox, &provider);
    let client = oxydra::http::client();
    rt.block_on(async {
        let run_id = start_run(&client, &server, "write out.txt").await;
        let run = wait_for_status(&client, &server.base, &run_id, "completed").await;
        assert!(
            run.get("pending_approvals")
                .is_none_or(|p| p.as_array().is_some_and(Vec::is_empty)),
            "{run}"
        );
    });
    assert!(!sandbox.workspace.join("out.txt").exists());
    assert!(last_tool_result(&provider).contains("denied"));
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

/// A `before_tool` hook that records it ran and blocks every `file_write`.
/// A hook that leaves `hook_ran.json` in `sandbox`'s workspace (hooks start outside
/// it, so the path is absolute) and blocks.
fn blocking_hook(sandbox: &Sandbox) -> String {
    format!(
        r#"
[[hooks]]
event = "before_tool"
name = "guard"
matcher = ["file_write"]
command = ["sh", "-c", "cat > '{}'; echo '{{\"decision\":\"block\",\"reason\":\"no writes from serve\"}}'"]
"#,
        sandbox.workspace.join("hook_ran.json").display()
    )
}

/// `oxydra serve` of `sandbox` against `provider`, granting consent, sandboxed where the
/// kernel can (else `full-access`: a confined hook cannot start without a sandbox).
fn serve_granting(sandbox: &Sandbox, provider: &MockServer) -> Server {
    let url = provider.openai_url();
    let mut args = vec![
        "--addr",
        "127.0.0.1:0",
        "--base-url",
        &url,
        "--approve",
        "allow",
    ];
    if matches!(sandbox_support(), SandboxSupport::Unavailable { .. }) {
        args.extend(["--sandbox", "full-access"]);
    }
    Server::start_with(sandbox, &[], &args)
}

#[test]
fn serve_runs_the_trusted_configs_hooks_and_withholds_an_untrusted_files() {
    let rt = runtime();
    let agent = &ASK_CONFIG[ASK_CONFIG.find("[[agents]]").unwrap()..];

    // Trusted: the hook runs and its reason reaches the model; the write never happens.
    let provider = writer_provider();
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(&format!("{}\n{agent}", blocking_hook(&sandbox)));
    let server = serve_granting(&sandbox, &provider);
    let client = oxydra::http::client();
    rt.block_on(async {
        let run_id = start_run(&client, &server, "write out.txt").await;
        wait_for_status(&client, &server.base, &run_id, "completed").await;
    });
    assert!(
        sandbox.workspace.join("hook_ran.json").exists(),
        "the hook never ran"
    );
    assert!(
        !sandbox.workspace.join("out.txt").exists(),
        "the blocked call ran"
    );
    let result = last_tool_result(&provider);
    assert!(result.contains("no writes from serve"), "{result}");
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");

    // Untrusted project file: its hook is withheld (the user's own file has the agent).
    let provider = writer_provider();
    let sandbox = Sandbox::new();
    let user = sandbox.path().join("config").join("oxydra");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("config.toml"), agent).unwrap();
    std::fs::write(sandbox.path().join("oxydra.toml"), blocking_hook(&sandbox)).unwrap();
    let server = serve_granting(&sandbox, &provider);
    rt.block_on(async {
        let run_id = start_run(&client, &server, "write out.txt").await;
        wait_for_status(&client, &server.base, &run_id, "completed").await;
    });
    assert!(
        !sandbox.workspace.join("hook_ran.json").exists(),
        "an untrusted hook ran"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("out.txt")).unwrap(),
        WRITTEN
    );
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn a_request_that_outlives_approval_ttl_secs_is_a_denial_the_model_reads() {
    let rt = runtime();
    let provider = writer_provider();
    let config = ASK_CONFIG.replace("approval_ttl_secs = 600", "approval_ttl_secs = 1");
    let sandbox = sandbox_with_config(&config);
    let server = Server::start_against(&sandbox, &provider);
    let client = oxydra::http::client();
    rt.block_on(async {
        let run_id = start_run(&client, &server, "write out.txt").await;
        let run = wait_for_status(&client, &server.base, &run_id, "waiting_approval").await;
        let approval_id = the_pending_write(&run);
        let expires_at = run["pending_approvals"][0]["expires_at"].as_i64().unwrap();
        // Wait (in short steps) until the request has lapsed by the wall clock.
        while std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            <= u128::try_from(expires_at).unwrap()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // An approval that comes too late is a denial (409 only if the expiry sweep
        // got there first, which denies the same way).
        let (status, body) = decide(
            &client,
            &server.base,
            &run_id,
            &approval_id,
            &json!({"decision": "approve_once"}),
        )
        .await;
        assert!(status == 200 || status == 409, "{status} {body}");
        let run = wait_for_status(&client, &server.base, &run_id, "completed").await;
        assert_eq!(run["result"]["text"], "done", "{run}");
    });
    assert!(
        !sandbox.workspace.join("out.txt").exists(),
        "a lapsed request ran"
    );
    let result = last_tool_result(&provider);
    assert!(result.contains("expired"), "{result}");
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

/// A run that read a workspace file (under a `[provenance]` policy holding
/// `workspace`) and then asks to write one waits with the reason naming the source:
/// on the run, in `GET /approvals`, and after `serve` restarts (it is stored).
#[test]
fn a_held_call_waits_with_the_source_it_read_as_its_reason() {
    const CONFIG: &str = r#"
[runtime]
approve = "ask"

[serve]
approval_ttl_secs = 600

[provenance]
hold = ["web", "mcp", "workspace"]

[[agents]]
name = "writer"
type = "agent"
description = "Reads and writes files"
system_prompt = "You do what the README says."
tools = ["file_read", "file_write"]
"#;
    const REASON: &str = "this run read a workspace file since your last decision";
    let rt = runtime();
    let provider = MockServer::builder()
        .strict_openai()
        .respond_with(|request| {
            let body = request.body.to_string();
            if body.contains("call_w") {
                oxydra_test_support::openai::text("done")
            } else if body.contains("call_r") {
                oxydra_test_support::openai::tool_calls(&[("call_w", "file_write", WRITE)])
            } else {
                oxydra_test_support::openai::tool_calls(&[(
                    "call_r",
                    "file_read",
                    r#"{"path":"README.md"}"#,
                )])
            }
        })
        .start()
        .unwrap();
    let sandbox = sandbox_with_config(CONFIG);
    std::fs::write(
        sandbox.workspace.join("README.md"),
        "Write out.txt with a friendly greeting.\n",
    )
    .unwrap();
    let server = Server::start_against(&sandbox, &provider);
    let client = oxydra::http::client();
    let run_id = rt.block_on(async {
        let run_id = start_run(&client, &server, "do what the README says").await;
        let run = wait_for_status(&client, &server.base, &run_id, "waiting_approval").await;
        the_pending_write(&run);
        assert_eq!(run["pending_approvals"][0]["reason"], REASON, "{run}");
        let listed = get_json(&client, &server.url("/approvals")).await;
        assert_eq!(listed["approvals"][0]["reason"], REASON, "{listed}");
        run_id
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
    assert!(!sandbox.workspace.join("out.txt").exists(), "ran unasked");

    // Stored with the request: a restarted server lists the same reason.
    let server = Server::start_against(&sandbox, &provider);
    rt.block_on(async {
        let run = wait_for_status(&client, &server.base, &run_id, "waiting_approval").await;
        assert_eq!(run["pending_approvals"][0]["reason"], REASON, "{run}");
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}
