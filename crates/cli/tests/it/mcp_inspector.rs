//! `oxydra mcp serve` (stdio) driven by the MCP Inspector's CLI mode (npm
//! `@modelcontextprotocol/inspector`, installed by scripts/install-mcp-test-servers.sh
//! into target/mcp-servers): a second MCP client no one here wrote.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use common::serve::{CONFIG, sandbox_with_config};
use common::{Sandbox, stderr, stdout};
use oxydra_test_support::mcp_servers::servers_dir;
use serde_json::Value;

/// The Inspector's CLI entry script, or `None` (after saying so) when
/// `OXYDRA_SKIP_MCP_TESTS=1` and it is not installed; otherwise its absence fails.
fn inspector() -> Option<PathBuf> {
    let script =
        servers_dir().join("node_modules/@modelcontextprotocol/inspector-cli/build/index.js");
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if node && script.is_file() {
        return Some(script);
    }
    let problem = format!(
        "{} is missing (or node is): run scripts/install-mcp-test-servers.sh",
        script.display()
    );
    assert!(
        std::env::var("OXYDRA_SKIP_MCP_TESTS").is_ok_and(|v| v == "1"),
        "{problem} (OXYDRA_SKIP_MCP_TESTS=1 skips)"
    );
    eprintln!("MCP INSPECTOR TEST NOT RUN: {problem}");
    None
}

/// `inspector oxydra mcp serve --method METHOD ARGS… -- --db …`, and its JSON output.
fn inspect(script: &PathBuf, sandbox: &Sandbox, method_args: &[&str]) -> (Output, Value) {
    let oxydra = sandbox.command();
    let mut command = Command::new("node");
    command.current_dir(sandbox.path());
    for (name, value) in oxydra.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let output = command
        .arg(script)
        // The target first (`--tool-arg` takes every word after it); the target's own
        // options after `--`, which the Inspector appends to it.
        .arg(env!("CARGO_BIN_EXE_oxydra"))
        .args(["mcp", "serve"])
        .args(method_args)
        .args(["--", "--allow-model-approvals", "--db"])
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let json = serde_json::from_str(&stdout(&output)).unwrap_or_else(|_| {
        panic!(
            "the inspector printed no JSON:\nstdout:\n{}\nstderr:\n{}",
            stdout(&output),
            stderr(&output)
        )
    });
    (output, json)
}

#[test]
fn the_inspector_lists_the_tools_with_annotations_and_reads_the_schema_from_a_refusal() {
    let Some(script) = inspector() else {
        return;
    };
    let sandbox = sandbox_with_config(CONFIG);

    let (output, listed) = inspect(&script, &sandbox, &["--method", "tools/list"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools = listed["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "cancel_agent_run",
            "decide_approval",
            "get_agent_run",
            "list_agent_blueprints",
            "list_pending_approvals",
            "start_agent_run"
        ]
    );
    let annotations =
        |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["annotations"].clone();
    assert_eq!(annotations("list_agent_blueprints")["readOnlyHint"], true);
    assert_eq!(annotations("start_agent_run")["readOnlyHint"], false);
    assert_eq!(annotations("start_agent_run")["destructiveHint"], true);
    assert_eq!(annotations("start_agent_run")["idempotentHint"], false);
    assert_eq!(annotations("cancel_agent_run")["idempotentHint"], true);

    // Parameters the blueprint's schema refuses: the tool error carries the schema.
    let (output, refused) = inspect(
        &script,
        &sandbox,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "start_agent_run",
            "--tool-arg",
            "agent_name=reader",
            r#"parameters={"path":"notes.txt"}"#,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(refused["isError"], true, "{refused}");
    let body: Value =
        serde_json::from_str(refused["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["error"], "parameter_validation_failed", "{body}");
    assert_eq!(body["parameters_schema"]["required"][0], "file", "{body}");
}
