//! Retries, backoff, fallback and cancellation of `ReliableProvider` over real HTTP.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use oxydra_provider::{
    AnthropicProvider, OpenAiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
    ReliableProvider, RetryPolicy, StreamAccumulator,
};
use oxydra_test_support::{MockServer, Reply, fixture};
use oxydra_types::{Message, StreamItem};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

fn fast() -> RetryPolicy {
    RetryPolicy::default()
        .with_base_delay(Duration::from_millis(1))
        .with_max_delay(Duration::from_millis(5))
        .with_max_attempts(4)
}

fn request() -> ProviderRequest {
    ProviderRequest::new("claude-sonnet-4-20250514", vec![Message::user("hi")])
}

fn anthropic(url: String, policy: RetryPolicy) -> ReliableProvider {
    ReliableProvider::new(
        Arc::new(AnthropicProvider::new(ProviderConfig::new(
            url,
            Some("k".into()),
        ))),
        policy,
    )
}

fn openai(url: String, policy: RetryPolicy) -> ReliableProvider {
    ReliableProvider::new(
        Arc::new(OpenAiProvider::new(ProviderConfig::new(url, None))),
        policy,
    )
}

fn anthropic_message(text: &str) -> String {
    json!({"content":[{"type":"text","text":text}],"stop_reason":"end_turn",
        "usage":{"input_tokens":3,"output_tokens":2}})
    .to_string()
}

#[tokio::test]
async fn retries_429_honouring_retry_after() {
    let body = fixture("openai/openrouter_429_rate_limited.json");
    let server = MockServer::repeating(vec![
        Reply::json(429, body.clone()).header("retry-after", "0.05"),
        Reply::json(429, body).header("retry-after", "0"),
        Reply::sse(fixture("openai/gpt4o_mini_stream_turn2.sse")),
    ])
    .unwrap();
    let provider = openai(server.url("/v1"), fast());
    let started = Instant::now();
    let items: Vec<StreamItem> = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "Retry-After was not honoured"
    );
    assert_eq!(server.hits(), 3);
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|i| acc.push(i));
    assert_eq!(
        acc.finish().unwrap().message.text(),
        "The capital of the UK is London."
    );
}

#[tokio::test]
async fn retry_after_beyond_the_time_budget_gives_up_at_once() {
    let server =
        MockServer::repeating(vec![Reply::json(429, "{}").header("retry-after", "30")]).unwrap();
    let provider = openai(
        server.url("/v1"),
        fast().with_max_total(Duration::from_secs(5)),
    );
    let started = Instant::now();
    let error = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(30))
    );
    assert_eq!(server.hits(), 1);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn retry_after_of_u64_max_seconds_gives_up_without_overflow() {
    for status in [429, 503] {
        let server = MockServer::repeating(vec![
            Reply::json(status, "{}").header("retry-after", "18446744073709551615"),
            Reply::json(200, anthropic_message("never served")),
        ])
        .unwrap();
        let provider = anthropic(server.url(""), fast());
        let started = Instant::now();
        let error = provider
            .complete(&request(), &CancellationToken::new())
            .await
            .unwrap_err();
        let huge = Some(Duration::from_secs(u64::MAX));
        assert!(
            matches!(
                &error,
                ProviderError::RateLimited { retry_after, .. }
                    | ProviderError::Overloaded { retry_after, .. } if *retry_after == huge
            ),
            "{status}: {error:?}"
        );
        assert_eq!(server.hits(), 1);
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}

#[tokio::test]
async fn retries_503_honouring_retry_after() {
    let server = MockServer::repeating(vec![
        Reply::json(503, "busy").header("retry-after", "0.05"),
        Reply::json(200, anthropic_message("after the wait")),
    ])
    .unwrap();
    let provider = anthropic(server.url(""), fast());
    let started = Instant::now();
    let response = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text(), "after the wait");
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "Retry-After of a 503 was not honoured"
    );
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn retries_anthropic_529_overloaded() {
    let server = MockServer::repeating(vec![
        Reply::json(529, OVERLOADED),
        Reply::json(529, OVERLOADED),
        Reply::json(200, anthropic_message("finally")),
    ])
    .unwrap();
    let provider = anthropic(server.url(""), fast());
    let response = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text(), "finally");
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn gives_up_after_the_attempt_bound() {
    let server = MockServer::repeating(vec![Reply::json(502, "upstream broke")]).unwrap();
    let provider = anthropic(server.url(""), fast().with_max_attempts(3));
    let error = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::Server { status: 502, .. }),
        "{error:?}"
    );
    assert_eq!(server.hits(), 3);

    let server = MockServer::repeating(vec![Reply::json(529, OVERLOADED)]).unwrap();
    let provider = anthropic(server.url(""), fast().with_max_attempts(2));
    let result = provider.stream(&request(), &CancellationToken::new()).await;
    assert!(matches!(result, Err(ProviderError::Overloaded { .. })));
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn no_retry_on_400_or_401() {
    for (status, body) in [
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        ),
        (
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"tools.0: bad"}}"#,
        ),
    ] {
        let server = MockServer::repeating(vec![Reply::json(status, body)]).unwrap();
        let provider = anthropic(server.url(""), fast());
        let error = provider
            .stream(&request(), &CancellationToken::new())
            .await
            .err()
            .unwrap();
        match (status, &error) {
            (
                400,
                ProviderError::ContextLengthExceeded { .. } | ProviderError::InvalidRequest { .. },
            )
            | (401, ProviderError::Auth { status: 401, .. }) => {}
            _ => panic!("{status}: {error:?}"),
        }
        assert_eq!(server.hits(), 1, "{status} must not be retried");
    }
}

#[tokio::test]
async fn stream_failing_before_output_falls_back_to_complete() {
    let error_in_200 = format!("event: error\ndata: {OVERLOADED}\n\n");
    let server = MockServer::repeating(vec![
        Reply::sse(error_in_200),
        Reply::json(200, anthropic_message("from complete")),
    ])
    .unwrap();
    let provider = anthropic(server.url(""), fast());
    let items: Vec<StreamItem> = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(items[0], StreamItem::Text("from complete".into()));
    assert!(matches!(items.last(), Some(StreamItem::Finish(_))));
    assert_eq!(server.hits(), 2);
    let requests = server.requests();
    assert_eq!(requests[0].body["stream"], true);
    assert!(requests[1].body.get("stream").is_none());
}

#[tokio::test]
async fn a_refused_request_failing_before_output_does_not_fall_back() {
    let refused = format!(
        "event: error\ndata: {}\n\n",
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
    );
    let server = MockServer::repeating(vec![
        Reply::sse(refused),
        Reply::json(200, anthropic_message("must not be asked for")),
    ])
    .unwrap();
    let provider = anthropic(server.url(""), fast());
    let error = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert!(matches!(error, ProviderError::Auth { .. }), "{error:?}");
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn the_total_time_bounds_each_attempt() {
    let max_total = Duration::from_millis(200);
    // Headers and part of the body, then the server goes quiet (well within the
    // transport's own timeouts).
    let server = MockServer::repeating(vec![Reply::json(200, "{\"content\":[").hanging()]).unwrap();
    let provider = anthropic(server.url(""), fast().with_max_total(max_total));
    let started = Instant::now();
    let error = tokio::time::timeout(
        Duration::from_secs(1),
        provider.complete(&request(), &CancellationToken::new()),
    )
    .await
    .expect("max_total must end the call")
    .unwrap_err();
    assert!(
        matches!(error, ProviderError::Timeout(d) if d == max_total),
        "{error:?}"
    );
    assert!(started.elapsed() >= max_total);
    assert_eq!(server.hits(), 1);

    let server = MockServer::repeating(vec![Reply::sse(": keep-alive\n\n").hanging()]).unwrap();
    let provider = anthropic(server.url(""), fast().with_max_total(max_total));
    let error = tokio::time::timeout(
        Duration::from_secs(1),
        provider.stream(&request(), &CancellationToken::new()),
    )
    .await
    .expect("max_total must end the call")
    .err()
    .unwrap();
    assert!(
        matches!(error, ProviderError::Timeout(d) if d == max_total),
        "{error:?}"
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn never_retries_once_output_reached_the_caller() {
    let full = String::from_utf8(fixture("openai/gpt4o_mini_stream_turn2.sse")).unwrap();
    let cut = &full[..full.find("data: [DONE]").unwrap()];
    let server = MockServer::repeating(vec![Reply::sse(cut.to_owned())]).unwrap();
    let provider = openai(server.url("/v1"), fast());
    let mut stream = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let mut texts = 0;
    let error = loop {
        match stream.next().await.unwrap() {
            Ok(StreamItem::Text(_)) => texts += 1,
            Ok(_) => {}
            Err(error) => break error,
        }
    };
    assert!(texts > 0);
    assert!(
        matches!(error, ProviderError::Transport { ref message } if message.contains("[DONE]")),
        "{error:?}"
    );
    assert!(stream.next().await.is_none());
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn cancellation_mid_stream_is_prompt() {
    // Everything up to the first text deltas, then the server holds the connection open.
    let full = String::from_utf8(fixture("anthropic/tool_use_response.sse")).unwrap();
    let head = &full[..full.find("event: content_block_stop").unwrap()];
    let server = MockServer::repeating(vec![Reply::sse(head.to_owned()).hanging()]).unwrap();
    let provider = anthropic(server.url(""), fast());
    let cancel = CancellationToken::new();
    let mut stream =
        tokio::time::timeout(Duration::from_secs(1), provider.stream(&request(), &cancel))
            .await
            .expect("the first item arrives")
            .unwrap();
    assert!(matches!(stream.next().await, Some(Ok(_))));
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move { cancel.cancel() })
    };
    let started = Instant::now();
    let next = loop {
        match tokio::time::timeout(Duration::from_secs(1), stream.next()).await {
            Ok(Some(Ok(_))) => continue,
            Ok(other) => break other,
            Err(_) => panic!("stream did not notice cancellation"),
        }
    };
    canceller.await.unwrap();
    assert!(
        matches!(next, Some(Err(ProviderError::Cancelled))),
        "{next:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn cancellation_interrupts_a_backoff_wait() {
    let server =
        MockServer::repeating(vec![Reply::json(429, "{}").header("retry-after", "20")]).unwrap();
    let provider = openai(server.url("/v1"), fast());
    let cancel = CancellationToken::new();
    let hits = server.hit_counter();
    let watcher = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            while hits.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                tokio::task::yield_now().await;
            }
            cancel.cancel();
        })
    };
    let started = Instant::now();
    let error = provider.complete(&request(), &cancel).await.unwrap_err();
    watcher.await.unwrap();
    assert!(matches!(error, ProviderError::Cancelled), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.hits(), 1);
}
