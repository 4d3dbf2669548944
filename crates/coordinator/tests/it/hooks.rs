//! `RunnerDeps::hooks` reach every run: an AI agent's runtime and a deterministic
//! blueprint's executor call them, in order, before each tool call.

use crate::support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use oxydra_coordinator::{BlueprintConfig, CoordinatorConfig, RunnerDeps};
use oxydra_executor::{BeforeToolDecision, Hook, HookError, ToolHookCall};
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_runtime::CancellationToken;
use oxydra_types::MessageRole;
use serde_json::json;
use support::{Served, registry, standard_blueprints};

/// Records the tools it saw under its name; rewrites `echo`'s text, or denies it.
struct Guard {
    name: &'static str,
    deny: bool,
    seen: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Hook for Guard {
    fn name(&self) -> &str {
        self.name
    }

    async fn before_tool(
        &self,
        call: &ToolHookCall,
        _cancel: &CancellationToken,
    ) -> Result<BeforeToolDecision, HookError> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{}:{}", self.name, call.tool_name));
        if self.deny {
            return Ok(BeforeToolDecision::Deny {
                reason: "echo is switched off today".into(),
            });
        }
        Ok(BeforeToolDecision::Rewrite {
            arguments: json!({"text": "rewritten by the hook"}),
        })
    }
}

fn guarded(deny: bool, seen: &Arc<Mutex<Vec<String>>>) -> RunnerDeps {
    RunnerDeps::new(registry(vec![]), ".")
        .with_hook(Arc::new(Guard {
            name: "first",
            deny: false,
            seen: Arc::clone(seen),
        }))
        .with_hook(Arc::new(Guard {
            name: "second",
            deny,
            seen: Arc::clone(seen),
        }))
}

#[tokio::test]
async fn an_agent_run_calls_the_hooks_in_order_and_the_model_reads_a_denial() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::tool_call("call_1", "echo", r#"{"text":"hello"}"#),
        ScriptedTurn::text("Echo is off."),
    ]));
    let deps = guarded(true, &seen).with_provider(provider.clone(), "test-model");
    let mut researcher = BlueprintConfig::agent("researcher", "Researches", "You research.");
    researcher.tools = Some(vec!["echo".into()]);
    let server = Served::with(CoordinatorConfig::default(), vec![researcher], deps).await;
    let (status, created) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": "Echo hello."}}))
        .await;
    assert_eq!(status, 201, "{created}");
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(*seen.lock().unwrap(), ["first:echo", "second:echo"]);
    let requests = provider.requests();
    let result = requests[1]
        .messages
        .iter()
        .find(|message| message.role == MessageRole::Tool)
        .unwrap()
        .text()
        .to_owned();
    assert!(result.contains("echo is switched off today"), "{result}");
    server.stop().await;
}

#[tokio::test]
async fn a_deterministic_step_goes_through_the_hooks_too() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = Served::with(
        CoordinatorConfig::default(),
        standard_blueprints(),
        guarded(false, &seen),
    )
    .await;
    let (status, created) = server
        .post_run(json!({"agent_name": "web-crawler",
            "parameters": {"url": "https://example.com", "depth": 1}}))
        .await;
    assert_eq!(status, 201, "{created}");
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    // The first hook rewrote the step's arguments; the tool got the rewrite.
    assert_eq!(run["result"]["output"], "rewritten by the hook", "{run}");
    assert_eq!(*seen.lock().unwrap(), ["first:echo", "second:echo"]);
    server.stop().await;
}
