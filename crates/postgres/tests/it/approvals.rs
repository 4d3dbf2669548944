//! Approvals that wait, across processes (issue 29, part 1): a run asks for approval on
//! coordinator A, every worker of A goes away, and the run — only rows now — is decided
//! through coordinator B, resumed and completed there, its budgets counted over both.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use oxydra_coordinator::{
    ApprovalDecision, BlueprintConfig, Coordinator, CoordinatorConfig, CoordinatorError, RunStatus,
    RunStore, RunnerDeps,
};
use oxydra_executor::DeferAll;
use oxydra_memory::Memory;
use oxydra_postgres::testing::TestDatabase;
use oxydra_postgres::{PostgresMemory, PostgresRunStore};
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{MessageRole, SafetyTier, ToolSchema, Usage};
use serde_json::{Value, json};

const MODEL: &str = "gpt-4o-mini";
/// Input tokens of every scripted call.
const TOKENS: u64 = 1_000;

/// A privileged tool recording the arguments of every call it runs.
#[derive(Default)]
struct Deploy {
    ran: Arc<Mutex<Vec<Value>>>,
}

#[async_trait]
impl Tool for Deploy {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "deploy",
            "Deploys a service",
            json!({"type": "object", "properties": {"service": {"type": "string"}},
                "required": ["service"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::Privileged
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.ran.lock().unwrap().push(args);
        Ok(ToolOutput::text("deployed"))
    }
}

/// A coordinator on the test database whose `deployer` asks `provider`, calls `deploy`
/// after a person's approval, and keeps its sessions in the database.
async fn coordinator(
    test: &TestDatabase,
    provider: &Arc<ScriptedProvider>,
    deploy: Deploy,
) -> Coordinator {
    let db = test.connect().await;
    let store: Arc<dyn RunStore> = Arc::new(PostgresRunStore::new(db.clone()));
    let memory: Arc<dyn Memory> = Arc::new(PostgresMemory::new(db, Default::default()));
    let mut tools = ToolRegistry::new();
    tools.register(deploy).unwrap();
    let mut deps = RunnerDeps::new(tools, ".").with_provider(provider.clone(), MODEL);
    deps.memory = Some(memory);
    deps.permission_broker = Some(Arc::new(DeferAll::new(Duration::from_secs(3600))));
    let mut blueprint = BlueprintConfig::agent("deployer", "Deploys", "You deploy.");
    blueprint.tools = Some(vec!["deploy".into()]);
    blueprint.allow_privileged = vec!["deploy".into()];
    let config = CoordinatorConfig {
        run_lease_ttl_ms: 300,
        ..CoordinatorConfig::default()
    };
    Coordinator::with_deps_and_store(config, vec![blueprint], deps, store)
        .await
        .unwrap()
}

/// Polls run `run_id` on `coordinator` (up to 5 s) until it has `status`.
async fn until(
    coordinator: &Coordinator,
    run_id: &str,
    status: RunStatus,
) -> oxydra_coordinator::Run {
    for _ in 0..500 {
        let run = coordinator.get_run(run_id).await.unwrap();
        if run.status == status {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {run_id} never became {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_asked_on_one_coordinator_is_decided_and_resumed_on_another() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let first_provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::tool_call("call_1", "deploy", r#"{"service":"api"}"#)
            .with_usage(Usage::new(TOKENS, 10, 0)),
    ]));
    let first_deploy = Deploy::default();
    let first_ran = Arc::clone(&first_deploy.ran);
    let first = coordinator(&test, &first_provider, first_deploy).await;
    let created = first
        .create_run("deployer", json!({"prompt": "Deploy the api."}))
        .await
        .unwrap();
    let run_id = created.run_id;
    let waiting = until(&first, &run_id, RunStatus::WaitingApproval).await;
    assert_eq!(waiting.pending_approvals.len(), 1);
    let approval = waiting.pending_approvals[0].clone();
    assert_eq!(approval.tool, "deploy");
    assert_eq!(waiting.usage.turns, 1);
    // Every worker of the first coordinator goes away: the run is only rows.
    first.shutdown().await;
    drop(first);
    assert!(first_ran.lock().unwrap().is_empty());

    let second_provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::text("Deployed the api.").with_usage(Usage::new(TOKENS, 10, 0)),
    ]));
    let second_deploy = Deploy::default();
    let second_ran = Arc::clone(&second_deploy.ran);
    let second = coordinator(&test, &second_provider, second_deploy).await;
    // Starting did not touch the waiting run.
    let still = second.get_run(&run_id).await.unwrap();
    assert_eq!(still.status, RunStatus::WaitingApproval);
    assert_eq!(
        second.pending_approvals(&run_id).await.unwrap(),
        vec![approval.clone()]
    );
    let unknown = second
        .decide_approval(&run_id, "apr_nope", ApprovalDecision::ApproveOnce)
        .await;
    assert!(
        matches!(unknown, Err(CoordinatorError::ApprovalNotFound { .. })),
        "{unknown:?}"
    );
    second
        .decide_approval(
            &run_id,
            approval.approval_id.as_str(),
            ApprovalDecision::ApproveOnce,
        )
        .await
        .unwrap();
    let done = until(&second, &run_id, RunStatus::Completed).await;
    let result = done.result.unwrap();
    assert_eq!(result["text"], "Deployed the api.");
    // Budgets over both coordinators: two turns, both calls' tokens.
    assert_eq!(result["turns"], 2, "{result}");
    assert_eq!(result["usage"]["input_tokens"], 2 * TOKENS, "{result}");
    assert_eq!(done.usage.turns, 2);
    assert_eq!(done.usage.input_tokens, 2 * TOKENS);
    assert_eq!(*second_ran.lock().unwrap(), vec![json!({"service": "api"})]);
    let requests = second_provider.requests();
    assert_eq!(requests.len(), 1);
    let tool_result = requests[0]
        .messages
        .iter()
        .find(|message| message.role == MessageRole::Tool)
        .unwrap();
    assert_eq!(tool_result.text(), "deployed");
    // Decided once: a second decision, on either process, is refused.
    let again = second
        .decide_approval(
            &run_id,
            approval.approval_id.as_str(),
            ApprovalDecision::Deny { reason: None },
        )
        .await;
    assert!(
        matches!(again, Err(CoordinatorError::ApprovalAlreadyDecided { .. })),
        "{again:?}"
    );
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_cancelled_on_another_coordinator_ends_cancelled() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::tool_call(
        "call_1",
        "deploy",
        r#"{"service":"db"}"#,
    )]));
    let first = coordinator(&test, &provider, Deploy::default()).await;
    let second = coordinator(&test, &provider, Deploy::default()).await;
    let run_id = first
        .create_run("deployer", json!({"prompt": "Deploy the db."}))
        .await
        .unwrap()
        .run_id;
    let waiting = until(&first, &run_id, RunStatus::WaitingApproval).await;
    let cancelled = second.cancel_run(&run_id).await.unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    assert!(cancelled.pending_approvals.is_empty());
    let refused = first
        .decide_approval(
            &run_id,
            waiting.pending_approvals[0].approval_id.as_str(),
            ApprovalDecision::ApproveOnce,
        )
        .await;
    assert!(
        matches!(refused, Err(CoordinatorError::NotWaitingApproval { .. })),
        "{refused:?}"
    );
    first.shutdown().await;
    second.shutdown().await;
}
