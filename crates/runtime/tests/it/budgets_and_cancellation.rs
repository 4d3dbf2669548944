use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use oxydra_provider::{ModelPrice, PricingTable, ScriptedTurn};
use oxydra_runtime::{AgentRuntime, CollectingEventSink, RuntimeError};
use oxydra_types::{MessageRole, RuntimeEvent, SessionId, StreamItem, Usage};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

fn last_error_kind(events: &CollectingEventSink) -> Option<String> {
    match events.events().last() {
        Some(RuntimeEvent::Error { kind, .. }) => Some(kind.clone()),
        _ => None,
    }
}

#[tokio::test]
async fn max_turns_ends_a_session_that_never_answers() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"1"}"#),
        ScriptedTurn::tool_call("c2", "echo", r#"{"text":"2"}"#),
        ScriptedTurn::text("never reached"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .limits({
            let mut custom = limits();
            custom.max_turns = 2;
            custom
        })
        .build()
        .unwrap();
    let session = SessionId::generate();
    let error = runtime.session(&session).prompt("loop").await.unwrap_err();
    match &error {
        RuntimeError::BudgetExceeded { budget, .. } => assert_eq!(budget.as_str(), "max_turns"),
        other => panic!("expected max_turns, got {other:?}"),
    }
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(last_error_kind(&events).as_deref(), Some("budget_exceeded"));
    // Both tool turns are stored completely.
    let messages = runtime.session_messages(&session).await.unwrap();
    assert_eq!(messages.len(), 5);
    assert_no_orphans(&messages);
}

#[tokio::test]
async fn max_cost_ends_the_session_after_the_expensive_call() {
    let mut pricing = PricingTable::empty();
    pricing.insert("test-model", ModelPrice::new(1_000.0, 1_000.0, 0.0));
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"1"}"#)
            .with_usage(Usage::new(1_000, 100, 0)),
        ScriptedTurn::text("too late"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .pricing(pricing.clone())
        .limits({
            let mut custom = limits();
            custom.max_cost = Some(0.5);
            custom.max_output_tokens = Some(100);
            custom
        })
        .build()
        .unwrap();
    let error = runtime
        .session(&SessionId::generate())
        .prompt("spend")
        .await
        .unwrap_err();
    match &error {
        RuntimeError::BudgetExceeded { budget, message } => {
            assert_eq!(budget.as_str(), "max_cost");
            assert!(message.contains("1.1"), "{message}");
        }
        other => panic!("expected max_cost, got {other:?}"),
    }
    assert_eq!(provider.requests().len(), 1);

    // Under budget the cost is reported.
    let provider = scripted(vec![
        ScriptedTurn::text("cheap").with_usage(Usage::new(100, 10, 0)),
    ]);
    let runtime = builder(provider, events)
        .pricing(pricing)
        .limits({
            let mut custom = limits();
            custom.max_cost = Some(0.5);
            custom.max_output_tokens = Some(100);
            custom
        })
        .build()
        .unwrap();
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("spend")
        .await
        .unwrap();
    assert!((outcome.cost - 0.11).abs() < 1e-9, "{}", outcome.cost);
}

#[tokio::test]
async fn a_call_that_could_cross_max_cost_is_not_made() {
    // $1 per thousand tokens: the first call spends $0.45 of $0.50; the next may cost
    // up to its prompt and 100 output tokens (at least $0.10), so it is not made.
    let mut pricing = PricingTable::empty();
    pricing.insert("test-model", ModelPrice::new(1_000.0, 1_000.0, 0.0));
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"1"}"#).with_usage(Usage::new(400, 50, 0)),
        ScriptedTurn::text("over budget").with_usage(Usage::new(500, 100, 0)),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .pricing(pricing)
        .limits({
            let mut custom = limits();
            custom.max_cost = Some(0.5);
            custom.max_output_tokens = Some(100);
            custom
        })
        .build()
        .unwrap();
    let error = runtime
        .session(&SessionId::generate())
        .prompt("spend")
        .await
        .unwrap_err();
    match &error {
        RuntimeError::BudgetExceeded { budget, message } => {
            assert_eq!(budget.as_str(), "max_cost");
            assert!(message.contains("spent $0.450000"), "{message}");
            assert!(message.contains("up to 100 output tokens"), "{message}");
        }
        other => panic!("expected max_cost, got {other:?}"),
    }
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(last_error_kind(&events).as_deref(), Some("budget_exceeded"));
}

#[test]
fn max_cost_for_a_model_without_a_price_is_refused_unless_one_is_given() {
    let unpriced = || {
        AgentRuntime::builder()
            .provider(scripted(vec![]))
            .model("llama3.2")
            .limits({
                let mut custom = limits();
                custom.max_cost = Some(0.000_01);
                custom
            })
    };
    let error = unpriced().build().unwrap_err();
    assert!(
        matches!(&error, RuntimeError::UnpricedModel { model } if model == "llama3.2"),
        "{error:?}"
    );
    assert_eq!(error.kind(), "config");
    let message = error.to_string();
    assert!(message.contains("`llama3.2`"), "{message}");
    assert!(message.contains("model_price"), "{message}");

    // A price given for it, or a table that knows it, makes the budget countable.
    assert!(
        unpriced()
            .model_price(ModelPrice::new(0.0, 0.0, 0.0))
            .build()
            .is_ok()
    );
    let mut table = PricingTable::empty();
    table.insert("llama3.2", ModelPrice::new(0.1, 0.1, 0.0));
    assert!(unpriced().pricing(table).build().is_ok());
    // A routed name is priced under the model's own name.
    let routed = AgentRuntime::builder()
        .provider(scripted(vec![]))
        .model("meta-llama/llama-3.3-70b-instruct")
        .model_price(ModelPrice::new(0.1, 0.3, 0.0))
        .limits({
            let mut custom = limits();
            custom.max_cost = Some(1.0);
            custom
        });
    assert!(routed.build().is_ok());
    // Without max_cost nothing needs a price.
    let free = AgentRuntime::builder()
        .provider(scripted(vec![]))
        .model("llama3.2");
    assert!(free.build().is_ok());
}

#[tokio::test]
async fn a_provider_that_never_answers_hits_the_turn_timeout() {
    let provider = scripted(vec![ScriptedTurn::HangAfter(vec![])]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider, events.clone())
        .limits({
            let mut custom = limits();
            custom.turn_timeout = Duration::from_millis(50);
            custom
        })
        .build()
        .unwrap();
    let error = runtime
        .session(&SessionId::generate())
        .prompt("hello?")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, RuntimeError::BudgetExceeded { budget, .. } if budget.as_str() == "turn_timeout"),
        "{error:?}"
    );
    assert_eq!(last_error_kind(&events).as_deref(), Some("budget_exceeded"));
}

#[tokio::test]
async fn a_tool_that_never_finishes_hits_the_turn_timeout_and_still_gets_a_result() {
    let tool = Arc::new(WaitTool {
        started: Arc::new(Notify::new()),
        release: Arc::new(Notify::new()),
    });
    let provider = scripted(vec![ScriptedTurn::tool_call("c1", "wait", "{}")]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider, events.clone())
        .tools(registry(vec![tool]))
        .limits({
            let mut custom = limits();
            custom.turn_timeout = Duration::from_millis(100);
            custom
        })
        .build()
        .unwrap();
    let session = SessionId::generate();
    let error = runtime.session(&session).prompt("wait").await.unwrap_err();
    assert!(
        matches!(&error, RuntimeError::BudgetExceeded { budget, .. } if budget.as_str() == "turn_timeout"),
        "{error:?}"
    );
    let messages = runtime.session_messages(&session).await.unwrap();
    assert_eq!(messages.len(), 3);
    assert_no_orphans(&messages);
    assert!(
        messages[2].text().starts_with("Tool execution failed"),
        "{}",
        messages[2].text()
    );
    assert_tool_events_closed(&events.events());
}

#[tokio::test]
async fn cancelling_during_a_provider_stream_stops_promptly() {
    let provider = scripted(vec![ScriptedTurn::HangAfter(vec![StreamItem::Text(
        "partial".into(),
    )])]);
    let runtime = builder(provider, Arc::new(CollectingEventSink::new()))
        .build()
        .unwrap();
    let session = SessionId::generate();
    let cancel = CancellationToken::new();
    let (mut stream, handle) = runtime
        .session(&session)
        .prompt("tell me")
        .cancel(&cancel)
        .stream();
    // Wait for the first text delta: the provider is mid-stream.
    loop {
        match stream.next().await {
            Some(RuntimeEvent::TextDelta { text }) => {
                assert_eq!(text, "partial");
                break;
            }
            Some(_) => continue,
            None => panic!("the run ended before streaming"),
        }
    }
    let cancelled_at = Instant::now();
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(1), handle)
        .await
        .unwrap();
    assert!(cancelled_at.elapsed() < Duration::from_secs(1));
    assert!(matches!(result, Err(RuntimeError::Cancelled)), "{result:?}");
    let rest: Vec<RuntimeEvent> = stream.collect().await;
    assert!(
        matches!(rest.last(), Some(RuntimeEvent::Error { kind, .. }) if kind == "cancelled"),
        "{rest:?}"
    );
    // The user message was stored; the half-streamed answer was not.
    let messages = runtime.session_messages(&session).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].role, MessageRole::User);
}

#[tokio::test]
async fn cancelling_during_a_tool_stores_a_result_for_every_call() {
    let started = Arc::new(Notify::new());
    let tool = Arc::new(WaitTool {
        started: started.clone(),
        release: Arc::new(Notify::new()),
    });
    let provider = scripted(vec![ScriptedTurn::tool_calls(vec![
        call("c1", "wait", "{}"),
        call("c2", "echo", r#"{"text":"parallel"}"#),
    ])]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider, events.clone())
        .tools(registry(vec![tool, Arc::new(EchoTool)]))
        .build()
        .unwrap();
    let session = SessionId::generate();
    let cancel = CancellationToken::new();
    let run = spawn_prompt(&runtime, &session, "wait", &cancel);
    started.notified().await;
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(1), run)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(result, Err(RuntimeError::Cancelled)), "{result:?}");
    let messages = runtime.session_messages(&session).await.unwrap();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_no_orphans(&messages);
    assert!(
        messages[2].text().contains("cancelled"),
        "{}",
        messages[2].text()
    );
    assert_eq!(last_error_kind(&events).as_deref(), Some("cancelled"));
    // Both calls started; each start is closed.
    assert_tool_events_closed(&events.events());
}

#[tokio::test]
async fn a_token_cancelled_before_the_run_stops_it_at_once() {
    let provider = scripted(vec![ScriptedTurn::text("unused")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let error = runtime
        .session(&SessionId::generate())
        .prompt("hi")
        .cancel(&cancel)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "cancelled");
    assert!(provider.requests().is_empty());
}

/// Retrieval whose search finds nothing and whose indexing of texts containing `hang`
/// never finishes (like an `/embeddings` call that hangs).
struct HangingRetrieval {
    hang: &'static str,
    started: Arc<Notify>,
    indexed: std::sync::Mutex<Vec<String>>,
}

impl HangingRetrieval {
    fn new(hang: &'static str) -> Arc<Self> {
        Arc::new(Self {
            hang,
            started: Arc::new(Notify::new()),
            indexed: std::sync::Mutex::new(Vec::new()),
        })
    }
}

#[async_trait::async_trait]
impl oxydra_memory::MemoryRetrieval for HangingRetrieval {
    async fn store_text(
        &self,
        _session: Option<&SessionId>,
        text: &str,
    ) -> Result<Vec<i64>, oxydra_memory::MemoryError> {
        if text.contains(self.hang) {
            self.started.notify_one();
            std::future::pending::<()>().await;
        }
        self.indexed.lock().unwrap().push(text.to_owned());
        Ok(vec![1])
    }

    async fn search(
        &self,
        _query: &str,
        _scope: &oxydra_memory::SearchScope,
        _top_k: usize,
    ) -> Result<Vec<oxydra_memory::RetrievedChunk>, oxydra_memory::MemoryError> {
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn cancelling_while_indexing_hangs_returns_promptly() {
    let retrieval = HangingRetrieval::new("hang");
    let provider = scripted(vec![ScriptedTurn::text("never asked")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .retrieval(retrieval.clone())
        .build()
        .unwrap();
    let session = SessionId::generate();
    let cancel = CancellationToken::new();
    let run = spawn_prompt(&runtime, &session, "hang on", &cancel);
    tokio::time::timeout(Duration::from_secs(1), retrieval.started.notified())
        .await
        .unwrap();
    cancel.cancel();
    let error = tokio::time::timeout(Duration::from_secs(1), run)
        .await
        .expect("the run ends promptly")
        .unwrap()
        .unwrap_err();
    assert!(matches!(error, RuntimeError::Cancelled), "{error:?}");
    assert!(provider.requests().is_empty());
    // The prompt was stored before indexing.
    assert_eq!(runtime.session_messages(&session).await.unwrap().len(), 1);
}

#[tokio::test]
async fn cancelling_while_indexing_a_tool_turn_still_stores_every_result() {
    let retrieval = HangingRetrieval::new("hang");
    let provider = scripted(vec![ScriptedTurn::Response(
        oxydra_provider::ProviderResponse {
            fallbacks: Vec::new(),
            message: oxydra_types::Message::assistant_with_tool_calls(
                Some("let me hang a while".into()),
                vec![call("c1", "echo", r#"{"text":"x"}"#)],
            ),
            finish_reason: oxydra_types::FinishReason::ToolCalls,
            usage: Usage::new(10, 5, 0),
            reasoning: None,
        },
    )]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .retrieval(retrieval.clone())
        .build()
        .unwrap();
    let session = SessionId::generate();
    let cancel = CancellationToken::new();
    let run = spawn_prompt(&runtime, &session, "go", &cancel);
    tokio::time::timeout(Duration::from_secs(1), retrieval.started.notified())
        .await
        .unwrap();
    cancel.cancel();
    let error = tokio::time::timeout(Duration::from_secs(1), run)
        .await
        .expect("the run ends promptly")
        .unwrap()
        .unwrap_err();
    assert!(matches!(error, RuntimeError::Cancelled), "{error:?}");
    let messages = runtime.session_messages(&session).await.unwrap();
    assert_eq!(messages.len(), 3);
    assert_no_orphans(&messages);
}

#[tokio::test]
async fn an_indexing_timeout_does_not_fail_the_turn() {
    let retrieval = HangingRetrieval::new("slow");
    let provider = scripted(vec![ScriptedTurn::text("a slow answer")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .retrieval(retrieval.clone())
        .limits({
            let mut custom = limits();
            custom.turn_timeout = Duration::from_millis(150);
            custom
        })
        .build()
        .unwrap();
    let session = SessionId::generate();
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(1),
        runtime.session(&session).prompt("a slow question"),
    )
    .await
    .expect("indexing is bounded by the turn timeout")
    .unwrap();
    assert_eq!(outcome.final_text, "a slow answer");
    // Both indexing calls ran into the turn timeout; nothing was indexed.
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(retrieval.indexed.lock().unwrap().is_empty());
    assert_eq!(runtime.session_messages(&session).await.unwrap().len(), 2);
}
