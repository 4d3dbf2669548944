//! Unit tests of `ReliableProvider` over a `ScriptedProvider`.

use std::time::Duration;

use futures::TryStreamExt;
use oxydra_types::{FinishReason, Message, StreamItem};

use super::*;
use crate::scripted::{ScriptedProvider, ScriptedTurn};

fn policy() -> RetryPolicy {
    RetryPolicy::default().with_base_delay(Duration::from_millis(1))
}

fn request() -> ProviderRequest {
    ProviderRequest::new("m", vec![Message::user("hi")])
}

#[tokio::test]
async fn errors_after_output_pass_through_without_retry() {
    let scripted = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::StreamThenError {
            items: vec![StreamItem::Text("par".into())],
            error: ProviderError::Overloaded {
                retry_after: None,
                message: "x".into(),
            },
        },
        ScriptedTurn::text("never used"),
    ]));
    let provider = ReliableProvider::new(scripted.clone(), policy());
    let mut stream = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        StreamItem::Text("par".into())
    );
    assert!(matches!(
        stream.next().await,
        Some(Err(ProviderError::Overloaded { .. }))
    ));
    assert_eq!(scripted.requests().len(), 1);
    assert_eq!(scripted.remaining(), 1);
}

#[tokio::test]
async fn failure_before_output_falls_back_and_retries_complete() {
    let scripted = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::StreamThenError {
            items: vec![],
            error: ProviderError::Decode {
                what: "chunk".into(),
                excerpt: "{".into(),
            },
        },
        ScriptedTurn::Error(ProviderError::Server {
            status: 502,
            message: "bad gateway".into(),
        }),
        ScriptedTurn::text("recovered"),
    ]));
    let provider = ReliableProvider::new(scripted.clone(), policy());
    let items: Vec<StreamItem> = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(items.first(), Some(&StreamItem::Text("recovered".into())));
    assert_eq!(items.last(), Some(&StreamItem::Finish(FinishReason::Stop)));
    assert_eq!(scripted.requests().len(), 3);
}

#[tokio::test]
async fn non_streaming_providers_are_served_by_complete() {
    let scripted = ScriptedProvider::new(vec![ScriptedTurn::text("whole")]);
    let capabilities = ProviderCapabilities {
        streaming: false,
        ..scripted.capabilities("m")
    };
    let provider =
        ReliableProvider::new(Arc::new(scripted.with_capabilities(capabilities)), policy());
    let items: Vec<StreamItem> = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(items.first(), Some(&StreamItem::Text("whole".into())));
}

#[tokio::test]
async fn refused_requests_failing_before_output_do_not_fall_back() {
    let refusals = [
        ProviderError::Auth {
            status: 401,
            message: "bad key".into(),
        },
        ProviderError::InvalidRequest {
            message: "bad tools".into(),
        },
        ProviderError::ContextLengthExceeded {
            message: "too long".into(),
        },
        ProviderError::ResponseTooLarge {
            limit: 8,
            what: "one server-sent event",
        },
    ];
    for refusal in refusals {
        let expected = refusal.to_string();
        let scripted = Arc::new(ScriptedProvider::new(vec![
            ScriptedTurn::StreamThenError {
                items: vec![],
                error: refusal,
            },
            ScriptedTurn::text("must not be asked for"),
        ]));
        let provider = ReliableProvider::new(scripted.clone(), policy());
        let error = provider
            .stream(&request(), &CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert_eq!(error.to_string(), expected);
        assert_eq!(scripted.requests().len(), 1, "{expected}");
        assert_eq!(scripted.remaining(), 1, "{expected}");
    }
}

#[tokio::test]
async fn a_response_over_the_cap_is_neither_retried_nor_completed_instead() {
    let scripted = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::Error(ProviderError::ResponseTooLarge {
            limit: 8,
            what: "the response body",
        }),
        ScriptedTurn::text("must not be asked for"),
    ]));
    let provider = ReliableProvider::new(scripted.clone(), policy());
    let error = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::ResponseTooLarge { .. }));
    assert_eq!(scripted.requests().len(), 1);
}

#[tokio::test]
async fn the_total_time_bounds_a_hanging_complete() {
    let max_total = Duration::from_millis(100);
    let provider = ReliableProvider::new(
        Arc::new(ScriptedProvider::new(vec![ScriptedTurn::HangAfter(vec![])])),
        policy().with_max_total(max_total),
    );
    let started = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(1),
        provider.complete(&request(), &CancellationToken::new()),
    )
    .await
    .expect("max_total must end the call");
    assert!(
        matches!(result, Err(ProviderError::Timeout(d)) if d == max_total),
        "{result:?}"
    );
    assert!(started.elapsed() >= max_total);
}

#[tokio::test]
async fn the_total_time_bounds_a_stream_waiting_for_its_first_item() {
    let max_total = Duration::from_millis(100);
    let scripted = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::HangAfter(vec![]),
        ScriptedTurn::text("too late"),
    ]));
    let provider = ReliableProvider::new(scripted.clone(), policy().with_max_total(max_total));
    let result = tokio::time::timeout(
        Duration::from_secs(1),
        provider.stream(&request(), &CancellationToken::new()),
    )
    .await
    .expect("max_total must end the call");
    assert!(
        matches!(result, Err(ProviderError::Timeout(d)) if d == max_total),
        "{:?}",
        result.err()
    );
    assert_eq!(scripted.requests().len(), 1);
}

#[tokio::test]
async fn a_total_time_too_large_for_an_instant_is_no_bound() {
    let provider = ReliableProvider::new(
        Arc::new(ScriptedProvider::new(vec![
            ScriptedTurn::Error(ProviderError::RateLimited {
                retry_after: Some(Duration::ZERO),
                message: "slow down".into(),
            }),
            ScriptedTurn::text("fine"),
        ])),
        policy().with_max_total(Duration::MAX),
    );
    let response = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text(), "fine");
}

#[tokio::test]
async fn a_huge_retry_after_gives_up_without_overflow() {
    for error in [
        ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(u64::MAX)),
            message: "later".into(),
        },
        ProviderError::Overloaded {
            retry_after: Some(Duration::MAX),
            message: "later".into(),
        },
    ] {
        let scripted = Arc::new(ScriptedProvider::new(vec![
            ScriptedTurn::Error(error),
            ScriptedTurn::text("never used"),
        ]));
        let provider = ReliableProvider::new(scripted.clone(), policy());
        let started = Instant::now();
        let error = provider
            .complete(&request(), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                ProviderError::RateLimited { .. } | ProviderError::Overloaded { .. }
            ),
            "{error:?}"
        );
        assert_eq!(scripted.requests().len(), 1);
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}

#[tokio::test]
async fn overloaded_retry_after_is_honoured() {
    let scripted = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::Error(ProviderError::Overloaded {
            retry_after: Some(Duration::from_millis(50)),
            message: "busy".into(),
        }),
        ScriptedTurn::text("back"),
    ]));
    let provider = ReliableProvider::new(scripted.clone(), policy());
    let started = Instant::now();
    let response = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text(), "back");
    assert!(started.elapsed() >= Duration::from_millis(50));
}

#[tokio::test]
async fn cancelled_before_first_item_is_cancelled() {
    let provider = ReliableProvider::new(
        Arc::new(ScriptedProvider::new(vec![ScriptedTurn::HangAfter(vec![])])),
        policy(),
    );
    let cancel = CancellationToken::new();
    let request = request();
    let pending = provider.stream(&request, &cancel);
    cancel.cancel();
    assert!(matches!(pending.await, Err(ProviderError::Cancelled)));
}

fn undecodable() -> ProviderError {
    ProviderError::Decode {
        what: "event stream: the body (0 bytes) held no events".into(),
        excerpt: String::new(),
    }
}

#[tokio::test]
async fn an_unreadable_stream_sends_later_calls_straight_to_complete() {
    let scripted = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::StreamThenError {
            items: vec![],
            error: undecodable(),
        },
        ScriptedTurn::text("first"),
        ScriptedTurn::text("second"),
        // Served by `stream` only if streaming were tried again.
        ScriptedTurn::StreamThenError {
            items: vec![],
            error: undecodable(),
        },
    ]));
    let provider = ReliableProvider::new(scripted.clone(), policy());
    assert!(!provider.streaming_disabled());
    for expected in ["first", "second"] {
        let items: Vec<StreamItem> = provider
            .stream(&request(), &CancellationToken::new())
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(items.first(), Some(&StreamItem::Text(expected.into())));
        assert!(provider.streaming_disabled());
    }
    assert_eq!(scripted.requests().len(), 3);
    assert_eq!(scripted.remaining(), 1);
}

#[tokio::test]
async fn a_transient_break_falls_back_without_disabling_streaming() {
    let scripted = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::StreamThenError {
            items: vec![],
            error: ProviderError::Transport {
                message: "connection reset".into(),
            },
        },
        ScriptedTurn::text("from complete"),
        ScriptedTurn::Stream(vec![
            StreamItem::Text("streamed".into()),
            StreamItem::Finish(FinishReason::Stop),
        ]),
    ]));
    let provider = ReliableProvider::new(scripted.clone(), policy());
    let first: Vec<StreamItem> = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        first.first(),
        Some(&StreamItem::Text("from complete".into()))
    );
    assert!(!provider.streaming_disabled());
    let mut second = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        second.next().await.unwrap().unwrap(),
        StreamItem::Text("streamed".into())
    );
    assert_eq!(scripted.requests().len(), 3);
}

#[tokio::test]
async fn a_rate_limit_before_output_retries_the_stream_instead_of_completing() {
    let scripted = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::StreamThenError {
            items: vec![],
            error: ProviderError::RateLimited {
                retry_after: Some(Duration::from_millis(20)),
                message: "slow down".into(),
            },
        },
        ScriptedTurn::Stream(vec![
            StreamItem::Text("after the wait".into()),
            StreamItem::Finish(FinishReason::Stop),
        ]),
    ]));
    let provider = ReliableProvider::new(scripted.clone(), policy());
    let started = Instant::now();
    let mut stream = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        StreamItem::Text("after the wait".into())
    );
    assert!(started.elapsed() >= Duration::from_millis(20));
    assert_eq!(scripted.requests().len(), 2);
}

#[tokio::test]
async fn without_the_fallback_an_unreadable_stream_is_an_error_and_not_remembered() {
    let scripted = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::StreamThenError {
            items: vec![],
            error: undecodable(),
        },
        ScriptedTurn::text("must not be asked for"),
    ]));
    let provider = ReliableProvider::new(scripted.clone(), policy().with_fallback(false));
    let error = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert!(matches!(error, ProviderError::Decode { .. }), "{error:?}");
    assert!(!provider.streaming_disabled());
    assert_eq!(scripted.requests().len(), 1);
}

#[test]
fn wrap_never_wraps_twice_and_downcast_finds_the_wrapper() {
    let plain: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(vec![]));
    assert!(ReliableProvider::downcast(plain.as_ref()).is_none());
    let once = ReliableProvider::wrap(Arc::clone(&plain), policy().with_max_attempts(2));
    let reliable = ReliableProvider::downcast(once.as_ref()).unwrap();
    assert_eq!(reliable.policy().max_attempts, 2);
    assert!(Arc::ptr_eq(reliable.inner(), &plain));
    let twice = ReliableProvider::wrap(Arc::clone(&once), policy());
    assert!(Arc::ptr_eq(&twice, &once));
    assert_eq!(
        ReliableProvider::downcast(twice.as_ref())
            .unwrap()
            .policy()
            .max_attempts,
        2
    );
}
