//! A turn the model failed after its retries, answered by a fallback model of the
//! provider: the run says so (`model_fallback`), the stored answer names the model
//! that wrote it, the call is priced at that model's price, and `max_cost` refuses a
//! fallback without a price.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use oxydra_provider::{
    ModelPrice, PricingTable, Provider, ProviderError, ReliableProvider, RetryPolicy,
    ScriptedProvider, ScriptedTurn,
};
use oxydra_runtime::{AgentRuntime, AgentRuntimeBuilder, CollectingEventSink, RuntimeError};
use oxydra_types::{MessageRole, RuntimeEvent, SessionId, Usage};

fn overloaded() -> ScriptedTurn {
    ScriptedTurn::Error(ProviderError::Overloaded {
        retry_after: Some(Duration::ZERO),
        message: "busy".into(),
    })
}

fn with_fallback(
    primary: Arc<ScriptedProvider>,
    fallback: Arc<ScriptedProvider>,
) -> Arc<dyn Provider> {
    let policy = RetryPolicy::default()
        .with_max_attempts(2)
        .with_base_delay(Duration::from_millis(1));
    Arc::new(ReliableProvider::new(primary, policy).with_fallback_model(fallback, "backup-model"))
}

fn runtime_with(
    provider: Arc<dyn Provider>,
    events: Arc<CollectingEventSink>,
) -> AgentRuntimeBuilder {
    let mut custom = limits();
    custom.max_cost = Some(10.0);
    AgentRuntime::builder()
        .provider(provider)
        .model("test-model")
        .workspace_root(std::env::temp_dir())
        .event_sink(events)
        .limits(custom)
}

#[tokio::test]
async fn a_fallback_answer_is_told_marked_and_priced_at_its_model() {
    for streaming in [true, false] {
        let primary = scripted(vec![overloaded(), overloaded()]);
        let fallback = scripted(vec![
            ScriptedTurn::text("from backup").with_usage(Usage::new(1_000, 100, 0)),
        ]);
        let mut pricing = PricingTable::empty();
        pricing.insert("test-model", ModelPrice::new(1_000.0, 1_000.0, 0.0));
        pricing.insert("backup-model", ModelPrice::new(1.0, 2.0, 0.0));
        let events = Arc::new(CollectingEventSink::new());
        let runtime = runtime_with(
            with_fallback(primary.clone(), fallback.clone()),
            events.clone(),
        )
        .pricing(pricing)
        .streaming(streaming)
        .build()
        .unwrap();
        let session = SessionId::generate();
        let outcome = runtime.session(&session).prompt("hi").await.unwrap();
        assert_eq!(outcome.final_text, "from backup");
        assert_eq!(
            primary.requests().len(),
            2,
            "the primary's retries came first"
        );
        assert_eq!(fallback.requests()[0].model, "backup-model");
        // 1000 input and 100 output tokens at the fallback's price, not the primary's.
        assert!((outcome.cost - 0.0012).abs() < 1e-9, "{}", outcome.cost);
        let hops: Vec<_> = events
            .events()
            .into_iter()
            .filter_map(|event| match event {
                RuntimeEvent::ModelFallback(hop) => Some(hop),
                _ => None,
            })
            .collect();
        assert_eq!(hops.len(), 1, "streaming {streaming}");
        assert_eq!(
            (hops[0].from.as_str(), hops[0].to.as_str()),
            ("test-model", "backup-model")
        );
        let messages = runtime.session_messages(&session).await.unwrap();
        let answer = messages
            .iter()
            .rev()
            .find(|message| message.role == MessageRole::Assistant)
            .unwrap();
        assert_eq!(answer.model.as_deref(), Some("backup-model"));
    }
}

#[test]
fn max_cost_refuses_a_fallback_model_without_a_price() {
    let provider = with_fallback(scripted(vec![]), scripted(vec![]));
    let mut pricing = PricingTable::empty();
    pricing.insert("test-model", ModelPrice::new(1.0, 1.0, 0.0));
    let error = runtime_with(provider, Arc::new(CollectingEventSink::new()))
        .pricing(pricing)
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, RuntimeError::UnpricedModel { model } if model == "backup-model"),
        "{error:?}"
    );
}
