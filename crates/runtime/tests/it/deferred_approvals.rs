//! Approvals that wait (docs/library-guide.md): a broker that defers ends the run
//! waiting for approval; a request with the decisions resumes it, in this runtime or
//! in another one sharing the store.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use oxydra_executor::{PermissionBroker, PermissionDecision, PermissionRequest, PermissionScope};
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::{ModelPrice, PricingTable, ScriptedProvider, ScriptedTurn};
use oxydra_runtime::{
    AgentRuntime, ApprovalDecision, CollectingEventSink, DENIED_REASON, EXPIRED_REASON,
    PendingApproval, RuntimeError, RuntimeEvent, RuntimeLimits,
};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{MessageRole, SafetyTier, SessionId, ToolSchema, Usage};
use serde_json::{Value, json};

/// `shell {command}`: privileged (needs consent); counts its runs.
#[derive(Clone, Default)]
pub struct ShellTool {
    pub runs: Arc<AtomicUsize>,
}

#[async_trait]
impl Tool for ShellTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "shell",
            "Runs a command",
            json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::Privileged
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!(
            "ran {}",
            args["command"].as_str().unwrap_or("")
        )))
    }
}

/// Defers every request for `ttl`, counting them.
pub struct Deferring {
    ttl: Duration,
    pub asked: AtomicUsize,
}

impl Deferring {
    pub fn new(ttl: Duration) -> Arc<Self> {
        Arc::new(Self {
            ttl,
            asked: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl PermissionBroker for Deferring {
    async fn request(&self, _request: PermissionRequest) -> PermissionDecision {
        self.asked.fetch_add(1, Ordering::SeqCst);
        PermissionDecision::Defer(self.ttl)
    }
}

pub const HOUR: Duration = Duration::from_secs(3600);

pub fn runtime(
    provider: Arc<ScriptedProvider>,
    events: &Arc<CollectingEventSink>,
    shell: &ShellTool,
    broker: Arc<Deferring>,
    memory: Option<Arc<SqliteMemory>>,
) -> AgentRuntime {
    let mut builder = builder(provider, events.clone())
        .tools(registry(vec![Arc::new(EchoTool), Arc::new(shell.clone())]))
        .permission_broker(broker);
    if let Some(memory) = memory {
        builder = builder.memory(memory);
    }
    builder.build().unwrap()
}

/// The model reads `x`, runs `rm -rf build` (privileged) and reads `y` in one turn.
pub fn three_calls() -> ScriptedTurn {
    ScriptedTurn::tool_calls(vec![
        call("c1", "echo", r#"{"text":"x"}"#),
        call("c2", "shell", r#"{"command":"rm -rf build"}"#),
        call("c3", "echo", r#"{"text":"y"}"#),
    ])
}

fn pending_of(error: RuntimeError) -> Vec<PendingApproval> {
    match error {
        RuntimeError::AwaitingApproval { pending } => pending,
        other => panic!("expected waiting_approval, got {other:?}"),
    }
}

/// A run that waits for approval of its one call, `shell ls` (`c1`).
struct WaitingOnLs {
    runtime: AgentRuntime,
    provider: Arc<ScriptedProvider>,
    shell: ShellTool,
    events: Arc<CollectingEventSink>,
    broker: Arc<Deferring>,
    session: SessionId,
    pending: Vec<PendingApproval>,
}

/// Prompts `ls` on a new session: the model calls `shell ls`, a broker defers it for
/// `ttl`, and the run ends waiting; `then` is what the model answers afterwards.
async fn waiting_on_ls(
    then: Vec<ScriptedTurn>,
    ttl: Duration,
    memory: Option<Arc<SqliteMemory>>,
) -> WaitingOnLs {
    let shell = ShellTool::default();
    let events = Arc::new(CollectingEventSink::new());
    let mut turns = vec![ScriptedTurn::tool_call(
        "c1",
        "shell",
        r#"{"command":"ls"}"#,
    )];
    turns.extend(then);
    let provider = scripted(turns);
    let broker = Deferring::new(ttl);
    let runtime = runtime(provider.clone(), &events, &shell, broker.clone(), memory);
    let session = SessionId::generate();
    let pending = pending_of(runtime.session(&session).prompt("ls").await.unwrap_err());
    WaitingOnLs {
        runtime,
        provider,
        shell,
        events,
        broker,
        session,
        pending,
    }
}

#[tokio::test]
async fn a_deferred_call_ends_the_run_waiting_and_another_runtime_resumes_it() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let session = SessionId::generate();
    let shell = ShellTool::default();
    let events = Arc::new(CollectingEventSink::new());
    let first = runtime(
        scripted(vec![three_calls()]),
        &events,
        &shell,
        Deferring::new(HOUR),
        Some(memory.clone()),
    );
    let error = first
        .session(&session)
        .prompt("clean up")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "waiting_approval");
    let pending = pending_of(error);
    assert_eq!(pending.len(), 1);
    let approval = pending[0].clone();
    assert_eq!(approval.tool, "shell");
    assert_eq!(approval.call_id.as_str(), "c2");
    assert_eq!(approval.tier, SafetyTier::Privileged);
    assert_eq!(approval.scope, PermissionScope::Session);
    assert_eq!(approval.arguments, "{\n  \"command\": \"rm -rf build\"\n}");
    assert_eq!(approval.expires_at - approval.requested_at, 3_600_000);
    // Why a person decides: nothing untrusted was read, so the tool's tier.
    assert_eq!(approval.reason.as_deref(), Some("the tool is privileged"));
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
    // Stored: the prompt, the calls and the result of the call before the waiting one.
    let stored = memory.messages(&session).await.unwrap();
    let roles: Vec<MessageRole> = stored.iter().map(|m| m.message.role).collect();
    assert_eq!(
        roles,
        [MessageRole::User, MessageRole::Assistant, MessageRole::Tool]
    );
    let seen = events.take();
    let requested: Vec<&RuntimeEvent> = seen
        .iter()
        .filter(|e| matches!(e, RuntimeEvent::ApprovalRequested { .. }))
        .collect();
    assert_eq!(requested.len(), 1);
    assert!(matches!(
        requested[0],
        RuntimeEvent::ApprovalRequested { reason: Some(reason), .. }
            if reason == "the tool is privileged"
    ));
    assert!(matches!(
        seen.last(),
        Some(RuntimeEvent::Error { kind, .. }) if kind == "waiting_approval"
    ));
    // The call held behind the waiting one did not run: its start is closed with a
    // failure that says it runs on resume, and no other call failed.
    let failed: Vec<(&str, &str)> = seen
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::ToolFailed { call_id, error, .. } => {
                Some((call_id.as_str(), error.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 1, "{seen:?}");
    assert_eq!(failed[0].0, "c3");
    assert!(
        failed[0].1.contains("runs when the run resumes"),
        "{}",
        failed[0].1
    );
    assert_tool_events_closed(&seen);

    // Another runtime (another process) resumes it with the decision.
    let provider = scripted(vec![ScriptedTurn::text("cleaned")]);
    let broker = Deferring::new(HOUR);
    let second = runtime(
        provider.clone(),
        &events,
        &shell,
        broker.clone(),
        Some(memory.clone()),
    );
    let outcome = second
        .session(&session)
        .decide(approval.clone(), ApprovalDecision::ApproveOnce)
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "cleaned");
    assert_eq!(shell.runs.load(Ordering::SeqCst), 1);
    assert_eq!(broker.asked.load(Ordering::SeqCst), 0, "not asked again");
    // The model was not asked again for the calls: it got their three results.
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    let results = tool_results(&requests[0]);
    assert_eq!(
        results,
        [
            ("c1".to_owned(), "echo: x".to_owned()),
            ("c2".to_owned(), "ran rm -rf build".to_owned()),
            ("c3".to_owned(), "echo: y".to_owned()),
        ]
    );
    let restored = memory.restore(&session).await.unwrap();
    assert_no_orphans(&restored);
    assert_eq!(restored.len(), 6);
    let decided = events
        .events()
        .into_iter()
        .find(|e| matches!(e, RuntimeEvent::ApprovalDecided { .. }));
    assert_eq!(
        decided,
        Some(RuntimeEvent::ApprovalDecided {
            approval_id: approval.approval_id.clone(),
            call_id: approval.call_id.clone(),
            name: "shell".into(),
            decision: "approve_once".into(),
            reason: None,
        })
    );
    // The approval was used: deciding it again is refused, and nothing runs.
    let again = second
        .session(&session)
        .decide(approval, ApprovalDecision::ApproveOnce)
        .await
        .unwrap_err();
    assert_eq!(again.kind(), "config", "{again}");
    assert_eq!(shell.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_denial_reaches_the_model_as_the_tools_error_and_the_run_goes_on() {
    let shell = ShellTool::default();
    let events = Arc::new(CollectingEventSink::new());
    let provider = scripted(vec![
        three_calls(),
        ScriptedTurn::text("I will not delete it"),
    ]);
    // Without memory: the same runtime keeps the session in the process.
    let runtime = runtime(
        provider.clone(),
        &events,
        &shell,
        Deferring::new(HOUR),
        None,
    );
    let session = SessionId::generate();
    let pending = pending_of(
        runtime
            .session(&session)
            .prompt("clean up")
            .await
            .unwrap_err(),
    );
    let outcome = runtime
        .session(&session)
        .decide(
            pending[0].clone(),
            ApprovalDecision::Deny {
                reason: Some("that directory holds the release".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "I will not delete it");
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
    let requests = provider.requests();
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 3);
    assert!(
        results[1]
            .1
            .starts_with("Tool execution failed: permission denied"),
        "{results:?}"
    );
    assert!(results[1].1.contains("that directory holds the release"));
    assert_eq!(results[2].1, "echo: y");
    assert_no_orphans(&requests[1].messages);
    assert!(events.events().iter().any(|e| matches!(
        e,
        RuntimeEvent::ApprovalDecided { decision, reason: Some(reason), .. }
            if decision == "deny" && reason == "that directory holds the release"
    )));
}

#[tokio::test]
async fn a_denial_without_a_reason_gives_the_model_the_default_one() {
    let waiting = waiting_on_ls(vec![ScriptedTurn::text("ok")], HOUR, None).await;
    waiting
        .runtime
        .session(&waiting.session)
        .decide(
            waiting.pending[0].clone(),
            ApprovalDecision::Deny { reason: None },
        )
        .await
        .unwrap();
    let results = tool_results(&waiting.provider.requests()[1]);
    assert!(results[0].1.contains(DENIED_REASON), "{results:?}");
}

#[tokio::test]
async fn an_expired_request_is_a_denial_whatever_was_answered() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    // A request that lapses at once.
    let WaitingOnLs {
        runtime,
        provider,
        shell,
        events,
        session,
        pending,
        ..
    } = waiting_on_ls(
        vec![ScriptedTurn::text("too late")],
        Duration::ZERO,
        Some(memory),
    )
    .await;
    assert_eq!(pending[0].expires_at, pending[0].requested_at);
    let outcome = runtime
        .session(&session)
        .decide(pending[0].clone(), ApprovalDecision::ApproveOnce)
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "too late");
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
    let results = tool_results(&provider.requests()[1]);
    assert!(results[0].1.contains(EXPIRED_REASON), "{results:?}");
    assert!(events.events().iter().any(|e| matches!(
        e,
        RuntimeEvent::ApprovalDecided { decision, .. } if decision == "deny"
    )));
}

#[tokio::test]
async fn approving_for_the_session_lets_later_calls_run_without_asking() {
    let WaitingOnLs {
        runtime,
        shell,
        broker,
        session,
        pending,
        ..
    } = waiting_on_ls(
        vec![
            ScriptedTurn::tool_call("c2", "shell", r#"{"command":"pwd"}"#),
            ScriptedTurn::text("done"),
        ],
        HOUR,
        None,
    )
    .await;
    let outcome = runtime
        .session(&session)
        .decide(pending[0].clone(), ApprovalDecision::ApproveForSession)
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "done");
    assert_eq!(shell.runs.load(Ordering::SeqCst), 2);
    assert_eq!(broker.asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bad_resumes_are_refused_before_anything_runs() {
    let WaitingOnLs {
        runtime,
        provider,
        shell,
        session,
        pending,
        ..
    } = waiting_on_ls(vec![ScriptedTurn::text("unused")], HOUR, None).await;
    // Decisions together with a new prompt.
    let both = runtime
        .session(&session)
        .prompt("something else")
        .decide(pending[0].clone(), ApprovalDecision::ApproveOnce)
        .await
        .unwrap_err();
    assert_eq!(both.kind(), "config");
    // A decision for another session, where nothing waits.
    let elsewhere = runtime
        .session(&SessionId::generate())
        .decide(pending[0].clone(), ApprovalDecision::ApproveOnce)
        .await
        .unwrap_err();
    assert_eq!(elsewhere.kind(), "config");
    // A decision for a call that does not exist in the session.
    let mut forged = pending[0].clone();
    forged.call_id = "c9".into();
    let unknown = runtime
        .session(&session)
        .decide(forged, ApprovalDecision::ApproveOnce)
        .await
        .unwrap_err();
    assert_eq!(unknown.kind(), "config");
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
    assert_eq!(provider.requests().len(), 1);
    // The run still waits: the right decision resumes it.
    runtime
        .session(&session)
        .decide(pending[0].clone(), ApprovalDecision::ApproveOnce)
        .await
        .unwrap();
    assert_eq!(shell.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_prompt_instead_of_decisions_abandons_the_waiting_call() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let WaitingOnLs {
        runtime,
        provider,
        shell,
        session,
        ..
    } = waiting_on_ls(vec![ScriptedTurn::text("fine")], HOUR, Some(memory)).await;
    runtime
        .session(&session)
        .prompt("never mind")
        .await
        .unwrap();
    // The waiting call got its `interrupted` result: the provider saw no orphan.
    assert_no_orphans(&provider.requests()[1].messages);
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
}

/// A runtime over a fresh store whose model is priced at $1 per thousand tokens
/// either way, with `max_turns` and a cost cap that a whole run may reach.
fn budgeted(
    provider: Arc<ScriptedProvider>,
    shell: &ShellTool,
    memory: &Arc<SqliteMemory>,
    max_turns: usize,
) -> AgentRuntime {
    let mut pricing = PricingTable::empty();
    pricing.insert("test-model", ModelPrice::new(1_000.0, 1_000.0, 0.0));
    builder(provider, Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(shell.clone())]))
        .permission_broker(Deferring::new(HOUR))
        .memory(memory.clone())
        .pricing(pricing)
        .limits({
            let mut custom: RuntimeLimits = limits();
            custom.max_turns = max_turns;
            custom.max_cost = Some(10.0);
            custom.max_output_tokens = Some(100);
            custom
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_resumed_run_keeps_the_budgets_of_the_run_that_waited() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let shell = ShellTool::default();
    let session = SessionId::generate();
    let first = budgeted(
        scripted(vec![
            ScriptedTurn::tool_call("c1", "shell", r#"{"command":"ls"}"#)
                .with_usage(Usage::new(100, 10, 0)),
        ]),
        &shell,
        &memory,
        8,
    );
    let pending = pending_of(first.session(&session).prompt("ls").await.unwrap_err());
    assert_eq!(pending[0].used.turns, 1);
    assert!(
        (pending[0].used.cost - 0.11).abs() < 1e-9,
        "{:?}",
        pending[0]
    );
    // The approval is kept as JSON (as a service would) and decided in another runtime.
    let kept: PendingApproval =
        serde_json::from_str(&serde_json::to_string(&pending[0]).unwrap()).unwrap();
    assert_eq!(kept, pending[0]);
    let second = budgeted(
        scripted(vec![
            ScriptedTurn::text("listed").with_usage(Usage::new(200, 20, 0)),
        ]),
        &shell,
        &memory,
        8,
    );
    let outcome = second
        .session(&session)
        .decide(kept, ApprovalDecision::ApproveOnce)
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "listed");
    // The whole run: both calls.
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.usage, Usage::new(300, 30, 0));
    assert!((outcome.cost - 0.33).abs() < 1e-9, "{}", outcome.cost);
}

#[tokio::test]
async fn max_turns_holds_across_an_approval_resume() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let shell = ShellTool::default();
    let session = SessionId::generate();
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "shell", r#"{"command":"ls"}"#),
        ScriptedTurn::text("a second turn the budget has no room for"),
    ]);
    let runtime = budgeted(provider.clone(), &shell, &memory, 1);
    let pending = pending_of(runtime.session(&session).prompt("ls").await.unwrap_err());
    let error = runtime
        .session(&session)
        .decide(pending[0].clone(), ApprovalDecision::ApproveOnce)
        .await
        .unwrap_err();
    match &error {
        RuntimeError::BudgetExceeded { budget, .. } => assert_eq!(budget.as_str(), "max_turns"),
        other => panic!("expected max_turns, got {other:?}"),
    }
    // The approved call ran and has its result; the model was not asked again.
    assert_eq!(shell.runs.load(Ordering::SeqCst), 1);
    assert_eq!(provider.requests().len(), 1);
    assert_no_orphans(&runtime.session_messages(&session).await.unwrap());
}
