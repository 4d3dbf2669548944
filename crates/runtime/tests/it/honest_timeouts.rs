//! Timeouts say what happened: a model that was still answering when the turn's time
//! ran out is over the turn budget (not "the provider did not answer"), and a server
//! that takes the connection and never answers is a provider error naming its URL,
//! after the first-byte timeout, long before the turn timeout.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use oxydra_provider::{OpenAiProvider, ProviderConfig, ProviderError};
use oxydra_runtime::{AgentRuntime, RuntimeError, RuntimeLimits};
use oxydra_test_support::{MockServer, openai};
use oxydra_types::SessionId;

fn runtime(config: ProviderConfig, turn_timeout: Duration) -> AgentRuntime {
    AgentRuntime::builder()
        .provider(Arc::new(OpenAiProvider::new(config)))
        .model("m")
        .limits({
            let mut custom = RuntimeLimits::default();
            custom.turn_timeout = turn_timeout;
            custom
        })
        .workspace_root(std::env::temp_dir())
        .build()
        .unwrap()
}

async fn run(runtime: &AgentRuntime) -> RuntimeError {
    runtime
        .session(&SessionId::generate())
        .prompt("hi")
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_model_still_streaming_at_the_turn_timeout_is_over_its_turn_budget() {
    // Text, then the stream stays open: a model writing slower than the turn allows.
    let server = MockServer::start(vec![openai::hold_after_text("Once upon a time")]).unwrap();
    let runtime = runtime(
        ProviderConfig::new(server.openai_url(), None),
        Duration::from_millis(300),
    );
    match run(&runtime).await {
        RuntimeError::BudgetExceeded { budget, message } => {
            assert_eq!(budget.as_str(), "turn_timeout");
            assert!(message.contains("still answering"), "{message}");
            assert!(message.contains("16 bytes streamed"), "{message}");
            assert!(!message.contains("no text"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_provider_that_sends_no_text_within_the_turn_is_named_as_such() {
    // Headers but no body: not a first-byte timeout; the turn's runs out.
    let server = MockServer::start(vec![openai::text("late").held_at(0).0]).unwrap();
    let runtime = runtime(
        ProviderConfig::new(server.openai_url(), None),
        Duration::from_millis(300),
    );
    match run(&runtime).await {
        RuntimeError::BudgetExceeded { budget, message } => {
            assert_eq!(budget.as_str(), "turn_timeout");
            assert!(
                message.contains("no text or tool call arrived from the model within the 300 ms"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_provider_error_naming_its_url() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepting = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in accepting.incoming().flatten() {
            held.push(stream);
        }
    });
    let config = ProviderConfig::new(format!("http://{addr}/v1"), None)
        .with_first_byte_timeout(Duration::from_millis(200));
    // The turn could wait a minute: the first-byte timeout ends it first.
    let runtime = runtime(config, Duration::from_secs(60));
    let error = run(&runtime).await;
    assert_eq!(error.kind(), "provider", "{error:?}");
    assert!(
        matches!(
            &error,
            RuntimeError::Provider(ProviderError::FirstByteTimeout { .. })
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains(&format!("http://{addr}/v1/chat/completions")),
        "{message}"
    );
    assert!(message.contains("first-byte timeout"), "{message}");
}
