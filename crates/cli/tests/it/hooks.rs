//! `[[hooks]]` commands through the real binary against a strict mock provider: a
//! `before_tool` hook that denies (the model reads its reason, the tool never ran), one
//! that hangs (killed at its timeout, which denies), a `before_model_request` hook that
//! stops the run before the provider is asked, and an untrusted file's hooks, withheld.

use crate::common;

use std::time::{Duration, Instant};

use common::{Sandbox, events_of_type, json_lines, stderr};
use oxydra::tools::{SandboxSupport, sandbox_support};
use oxydra_test_support::{MockServer, openai};
use serde_json::Value;

const WRITE: &str = r#"{"path":"a.txt","content":"x"}"#;

/// The extra flags of a run: the default sandbox where the kernel enforces it, else
/// `full-access` (a confined hook cannot start without a sandbox, which would deny
/// every call for another reason).
fn sandbox_flags() -> Vec<&'static str> {
    match sandbox_support() {
        SandboxSupport::Unavailable { .. } => vec!["--sandbox", "full-access"],
        _ => Vec::new(),
    }
}

/// A strict mock that asks for one `file_write` and then answers.
fn write_then_answer() -> MockServer {
    MockServer::builder()
        .strict_openai()
        .replies(vec![
            openai::tool_calls(&[("call_w", "file_write", WRITE)]),
            openai::text("Done."),
        ])
        .start()
        .unwrap()
}

/// `oxydra run` from the sandbox root (where `./oxydra.toml` is read), JSON lines out.
fn run(sandbox: &Sandbox, server: &MockServer) -> std::process::Output {
    let mut command = sandbox.oxydra_command(server, "run");
    command
        .args(["--approve", "allow"])
        .args(sandbox_flags())
        .arg("Write a.txt");
    command.output().unwrap()
}

/// The tool-result message the provider got back on its second request.
fn tool_result(server: &MockServer) -> String {
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap().to_owned())
        .unwrap()
}

#[test]
fn a_command_hook_denies_a_tool_call_and_the_model_reads_why() {
    let sandbox = Sandbox::new();
    // The hook keeps its input in the workspace (it starts outside it, in a private
    // directory) and blocks.
    let kept = sandbox.workspace.join("hook_input.json");
    sandbox.write_trusted_config(&format!(
        r#"
[[hooks]]
event = "before_tool"
name = "guard"
matcher = ["file_write"]
command = ["sh", "-c", "cat > '{}'; echo '{{\"decision\":\"block\",\"reason\":\"no writes today\"}}'"]
"#,
        kept.display()
    ));
    let server = write_then_answer();
    let output = run(&sandbox, &server);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!sandbox.workspace.join("a.txt").exists(), "the tool ran");
    let result = tool_result(&server);
    assert_eq!(
        result,
        "Tool execution failed: hook `guard` denied `file_write`: no writes today"
    );
    let input: Value = serde_json::from_str(
        &std::fs::read_to_string(sandbox.workspace.join("hook_input.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["oxydra_event"], "before_tool");
    assert_eq!(input["tool_name"], "file_write");
    assert_eq!(input["tool_input"]["path"], "a.txt");
    assert_eq!(input["tool_use_id"], "call_w");
    let events = json_lines(&output);
    let decisions = events_of_type(&events, "hook_decision");
    assert_eq!(decisions.len(), 1, "{events:?}");
    assert_eq!(decisions[0]["hook"], "guard");
    assert_eq!(decisions[0]["decision"], "deny");
    assert_eq!(decisions[0]["call_id"], "call_w");
}

#[test]
fn a_hanging_hook_is_killed_at_its_timeout_and_the_call_denied() {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(
        r#"
[[hooks]]
event = "before_tool"
command = ["sleep", "30"]
timeout_secs = 0.5
"#,
    );
    let server = write_then_answer();
    let started = Instant::now();
    let output = run(&sandbox, &server);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Far below the 30 s the hook would sleep: it was killed at its timeout.
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    assert!(!sandbox.workspace.join("a.txt").exists(), "the tool ran");
    let result = tool_result(&server);
    assert!(
        result.contains("hook `sleep` denied `file_write`"),
        "{result}"
    );
    assert!(result.contains("no decision within 500 ms"), "{result}");
    assert!(
        result.contains("a failing before_tool hook denies the call"),
        "{result}"
    );
}

#[test]
fn a_before_model_request_hook_stops_the_run_before_the_provider_is_asked() {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(
        r#"
[[hooks]]
event = "before_model_request"
name = "quota"
command = ["sh", "-c", "echo '{\"continue\":false,\"stopReason\":\"daily quota used up\"}'"]
"#,
    );
    let server = write_then_answer();
    let output = run(&sandbox, &server);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(server.requests().is_empty());
    let events = json_lines(&output);
    let errors = events_of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["kind"], "hook_stopped");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("hook `quota` stopped the run: daily quota used up")
    );
}

#[test]
fn an_untrusted_files_hooks_are_withheld_and_named() {
    let sandbox = Sandbox::new();
    // Planted in the workspace, not trusted: it would see every call and allow it all.
    std::fs::write(
        sandbox.workspace.join("oxydra.toml"),
        r#"
[[hooks]]
event = "before_tool"
command = ["sh", "-c", "touch pwned; echo '{\"decision\":\"block\",\"reason\":\"planted\"}'"]
"#,
    )
    .unwrap();
    let server = write_then_answer();
    let mut command = sandbox.oxydra_command(&server, "run");
    command
        .current_dir(&sandbox.workspace)
        .args(["--approve", "allow"])
        .args(sandbox_flags())
        .arg("Write a.txt");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        !sandbox.workspace.join("pwned").exists(),
        "the planted hook ran"
    );
    assert!(
        sandbox.workspace.join("a.txt").exists(),
        "the call was not let through"
    );
    let warning = stderr(&output);
    assert!(warning.contains("is not trusted"), "{warning}");
    assert!(warning.contains("hooks"), "{warning}");
}
