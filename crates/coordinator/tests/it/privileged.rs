//! Whoever may start a run chooses its parameters, so a deterministic step's
//! parameters are data: a `shell_exec` step quotes them, a blueprint must declare the
//! Privileged tools it uses, and Privileged steps need the permission broker's consent
//! as an AI agent's calls do.

use crate::support;

use std::sync::Arc;

use oxydra_coordinator::{
    BlueprintConfig, Coordinator, CoordinatorConfig, CoordinatorError, RunnerDeps, StepConfig,
};
use oxydra_executor::{AlwaysApprove, AlwaysDeny, PermissionBroker};
use oxydra_tools::{BuiltinToolsConfig, builtin_tool};
use serde_json::json;
use support::{Served, registry};

fn shell_deps(
    workspace: &std::path::Path,
    broker: Option<Arc<dyn PermissionBroker>>,
) -> RunnerDeps {
    let shell = builtin_tool("shell_exec", &BuiltinToolsConfig::default()).unwrap();
    let mut deps = RunnerDeps::new(registry(vec![shell]), workspace);
    deps.permission_broker = broker;
    deps
}

/// `say`: `echo {{msg}}` through `shell_exec`, declared.
fn say() -> BlueprintConfig {
    let mut blueprint = BlueprintConfig::deterministic(
        "say",
        "Echoes a message",
        json!({"type": "object", "required": ["msg"],
            "properties": {"msg": {"type": "string"}}}),
        vec![StepConfig::new(
            "shell_exec",
            json!({"command": "echo {{msg}}"}),
        )],
    );
    blueprint.allow_privileged = vec!["shell_exec".into()];
    blueprint
}

async fn load_error(blueprint: BlueprintConfig) -> CoordinatorError {
    let workspace = tempfile::tempdir().unwrap();
    Coordinator::new(
        CoordinatorConfig::default(),
        vec![blueprint],
        shell_deps(workspace.path(), None),
    )
    .await
    .unwrap_err()
}

#[tokio::test]
async fn an_injected_command_in_a_parameter_is_echoed_not_run() {
    let workspace = tempfile::tempdir().unwrap();
    let deps = shell_deps(workspace.path(), Some(Arc::new(AlwaysApprove)));
    let server = Served::with(CoordinatorConfig::default(), vec![say()], deps).await;
    for msg in [
        "hi; id > x",
        "$(touch x)",
        "`touch x`",
        "'; touch x; '",
        "it's {{msg}} && touch x",
    ] {
        let (status, created) = server
            .post_run(json!({"agent_name": "say", "parameters": {"msg": msg}}))
            .await;
        assert_eq!(status, 201, "{created}");
        let run = server.finished(created["run_id"].as_str().unwrap()).await;
        assert_eq!(run["status"], "completed", "{msg}: {run}");
        let output = run["result"]["output"].as_str().unwrap();
        assert!(output.contains(msg), "{msg}: {output}");
        assert!(
            !workspace.path().join("x").exists(),
            "`{msg}` ran as shell code"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn a_privileged_step_without_consent_is_refused_and_does_not_run() {
    let workspace = tempfile::tempdir().unwrap();
    let mut touch = say();
    touch.steps = vec![StepConfig::new(
        "shell_exec",
        json!({"command": "touch made-by-run {{msg}}"}),
    )];
    for broker in [
        None,
        Some(Arc::new(AlwaysDeny) as Arc<dyn PermissionBroker>),
    ] {
        let deps = shell_deps(workspace.path(), broker);
        let server = Served::with(CoordinatorConfig::default(), vec![touch.clone()], deps).await;
        let (status, created) = server
            .post_run(json!({"agent_name": "say", "parameters": {"msg": "y"}}))
            .await;
        assert_eq!(status, 201, "{created}");
        let run = server.finished(created["run_id"].as_str().unwrap()).await;
        assert_eq!(run["status"], "failed", "{run}");
        assert_eq!(run["error"]["kind"], "step_failed", "{run}");
        assert!(!workspace.path().join("made-by-run").exists());
        server.stop().await;
    }
}

#[tokio::test]
async fn a_privileged_tool_must_be_declared() {
    let mut undeclared = say();
    undeclared.allow_privileged.clear();
    let error = load_error(undeclared).await;
    assert!(
        matches!(&error, CoordinatorError::UndeclaredPrivilegedTool { blueprint, tool }
            if blueprint == "say" && tool == "shell_exec"),
        "{error:?}"
    );
    assert!(error.to_string().contains("allow_privileged"), "{error}");

    let mut agent = BlueprintConfig::agent("helper", "", "p");
    agent.tools = Some(vec!["echo".into(), "shell_exec".into()]);
    let error = load_error(agent).await;
    assert!(
        matches!(&error, CoordinatorError::UndeclaredPrivilegedTool { blueprint, tool }
            if blueprint == "helper" && tool == "shell_exec"),
        "{error:?}"
    );

    let mut unknown = say();
    unknown.allow_privileged = vec!["shell_exce".into(), "shell_exec".into()];
    let error = load_error(unknown).await;
    assert!(
        matches!(&error, CoordinatorError::UnknownTool { tool, .. } if tool == "shell_exce"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_shell_placeholder_inside_quotes_is_refused_at_load() {
    let mut quoted = say();
    quoted.steps = vec![StepConfig::new(
        "shell_exec",
        json!({"command": "echo \"{{msg}}\""}),
    )];
    let error = load_error(quoted).await;
    assert!(
        matches!(error, CoordinatorError::InvalidStep { step: 1, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("double quotes"), "{error}");
}
