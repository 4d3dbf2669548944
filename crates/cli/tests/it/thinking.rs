//! `--thinking-budget` and `[provider] thinking_budget` through the real binary: the
//! budget reaches Anthropic, the thinking block goes back on the next turn, usage with
//! thinking and cache counts reaches the JSONL events; budgets the API would refuse are
//! configuration errors naming the flag or the key.

use crate::common;

use common::{Sandbox, events_of_type, json_lines, stderr};
use oxydra_test_support::{MockServer, Reply, anthropic, fixture};

fn strict_anthropic(replies: Vec<Reply>) -> MockServer {
    MockServer::builder()
        .only("POST", anthropic::MESSAGES_PATH)
        .strict_anthropic()
        .replies(replies)
        .start()
        .unwrap()
}

#[test]
fn a_thinking_budget_reaches_anthropic_and_thinking_goes_back() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("VERSION"), "4.2.0").unwrap();
    let server = strict_anthropic(vec![
        // The recording calls `fixed_version`, which is no tool of ours: the runtime
        // answers it with an error result, which is still a tool_result to send back.
        Reply::sse(fixture("anthropic/haiku45_thinking_then_tool_use.sse")),
        anthropic::text("No such tool; no version, no joke."),
    ]);
    let mut command = sandbox.stored_command("run");
    command
        .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
        .args(["--provider", "anthropic", "--base-url", &server.url("")])
        .args(["--model", "claude-haiku-4-5", "--thinking-budget", "2048"])
        .args(["--output", "jsonl", "What version is it?"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the strict mock took both turns");
    assert_eq!(requests[0].body["thinking"]["budget_tokens"], 2048);
    assert_eq!(
        requests[1].body["messages"][1]["content"][0]["type"],
        "thinking"
    );

    let events = json_lines(&output);
    let reasoning: String = events_of_type(&events, "reasoning_delta")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(
        reasoning.starts_with("The user wants me to:"),
        "{reasoning}"
    );
    let turn = events_of_type(&events, "turn_completed")[0];
    assert_eq!(turn["usage"]["input_tokens"], 598);
    assert_eq!(turn["usage"]["reasoning_tokens"], 53);
    assert_eq!(turn["usage"]["cached_tokens"], 0);
    assert_eq!(turn["usage"]["cache_write_tokens"], 0);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["usage"]["reasoning_tokens"], 53);
    assert!(last["cost"].as_f64().unwrap() > 0.0);
}

#[test]
fn budgets_the_api_refuses_are_errors_naming_the_flag_or_key() {
    let sandbox = Sandbox::new();
    let server = strict_anthropic(vec![anthropic::text("never asked")]);
    let run = |extra: &[&str], kind: &str| {
        let mut command = sandbox.stored_command("run");
        command
            .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
            .env("OPENAI_API_KEY", "sk-test-0123456789abcdef")
            .args(["--provider", kind, "--base-url", &server.url("")])
            .args(extra)
            .arg("hi");
        command.output().unwrap()
    };
    for (extra, kind, needle) in [
        (&["--thinking-budget", "1000"][..], "anthropic", "1024"),
        (&["--thinking-budget", "0"][..], "anthropic", "0"),
        (
            &["--thinking-budget", "4096"][..],
            "openai",
            "reasoning effort",
        ),
    ] {
        let output = run(extra, kind);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{extra:?}: {}",
            stderr(&output)
        );
        let err = stderr(&output);
        assert!(err.contains("--thinking-budget"), "{err}");
        assert!(err.contains(needle), "{err}");
    }
    sandbox.write_trusted_config("[provider]\nthinking_budget = 512\n");
    let output = run(&[], "anthropic");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("provider.thinking_budget"), "{err}");
    assert_eq!(server.hits(), 0);
}
