//! [`ReliableProvider`]: retries, backoff and the stream → complete fallback.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::accumulator::response_to_stream_items;
use crate::error::ProviderError;
use crate::provider::{Provider, ProviderCapabilities, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse};
use crate::retry_policy::{RetryPolicy, is_retryable};

/// Wraps a provider with retries and a fallback.
///
/// - Retries rate limits, overload, server (5xx) errors, broken connections and
///   timeouts, with exponential backoff and full jitter, honouring a provider's
///   `Retry-After`, within [`RetryPolicy::max_attempts`] and [`RetryPolicy::max_total`].
/// - `max_total` bounds the whole call: each attempt (for a stream, up to its first
///   item) is cut off when the time left runs out, giving [`ProviderError::Timeout`],
///   and a wait (a `Retry-After` included) that would pass it is not taken.
/// - Never retries once stream output has reached the caller: errors after the first
///   item pass through unchanged.
/// - When a stream fails before yielding anything (a broken or garbled stream, an
///   `error` event inside a 200 response), falls back to `complete` and turns its
///   response into stream items (text, one tool-call delta per call, usage, finish) —
///   unless the error says the request itself is refused (`Auth`, `InvalidRequest`,
///   `ContextLengthExceeded`), which is returned as it is.
/// - The cancellation token interrupts any wait or request at once.
pub struct ReliableProvider {
    inner: Arc<dyn Provider>,
    policy: RetryPolicy,
}

impl std::fmt::Debug for ReliableProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReliableProvider")
            .field("inner", &self.inner.name())
            .field("policy", &self.policy)
            .finish()
    }
}

/// What is left of a call's retry budget.
struct Budget {
    /// When the total time runs out; `None` when `max_total` reaches past what an
    /// `Instant` can represent (no bound in practice).
    deadline: Option<Instant>,
    attempts: u32,
}

impl Budget {
    /// The time left, `None` when unbounded.
    fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|deadline| deadline.saturating_duration_since(Instant::now()))
    }
}

/// Runs `attempt` within what is left of the budget: `None` when the time ran out
/// first (the attempt is dropped).
async fn bounded<F: Future>(budget: &Budget, attempt: F) -> Option<F::Output> {
    match budget.remaining() {
        Some(limit) => tokio::time::timeout(limit, attempt).await.ok(),
        None => Some(attempt.await),
    }
}

/// Whether a stream that failed before any output with `error` is worth a `complete`
/// call: not when the request itself is refused (authentication, a malformed or
/// too-long request), since `complete` would be refused the same way.
fn falls_back(error: &ProviderError) -> bool {
    is_retryable(error) || matches!(error, ProviderError::Decode { .. })
}

impl ReliableProvider {
    /// Wraps `inner` with `policy`.
    pub fn new(inner: Arc<dyn Provider>, policy: RetryPolicy) -> Self {
        Self { inner, policy }
    }

    /// The policy in use.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &Arc<dyn Provider> {
        &self.inner
    }

    fn budget(&self) -> Budget {
        Budget {
            deadline: Instant::now().checked_add(self.policy.max_total),
            attempts: 0,
        }
    }

    /// The error for a call whose total time ran out during an attempt.
    fn out_of_time(&self) -> ProviderError {
        tracing::warn!(
            provider = self.inner.name(),
            max_total_ms = u64::try_from(self.policy.max_total.as_millis()).unwrap_or(u64::MAX),
            "provider call stopped: the total time budget ran out"
        );
        ProviderError::Timeout(self.policy.max_total)
    }

    /// After a failed attempt: waits and returns `Ok(())` if another attempt may be
    /// made, or gives the error back when it is final.
    async fn wait_before_retry(
        &self,
        budget: &mut Budget,
        error: ProviderError,
        cancel: &CancellationToken,
    ) -> Result<(), ProviderError> {
        budget.attempts = budget.attempts.saturating_add(1);
        if !is_retryable(&error) || budget.attempts >= self.policy.max_attempts.max(1) {
            return Err(error);
        }
        let retry_after = match &error {
            ProviderError::RateLimited { retry_after, .. }
            | ProviderError::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        };
        // `delay` caps a `Retry-After` at `max_total`; one longer than the time left
        // is not waited for at all.
        let delay = self
            .policy
            .delay(budget.attempts.saturating_sub(1), retry_after);
        if budget
            .remaining()
            .is_some_and(|remaining| delay > remaining)
        {
            tracing::warn!(
                provider = self.inner.name(),
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                "not retrying: the wait would pass the total time budget"
            );
            return Err(error);
        }
        tracing::warn!(
            provider = self.inner.name(),
            attempt = budget.attempts,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %error,
            "provider call failed; retrying"
        );
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ProviderError::Cancelled),
            () = tokio::time::sleep(delay) => Ok(()),
        }
    }

    async fn complete_within(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
        budget: &mut Budget,
    ) -> Result<ProviderResponse, ProviderError> {
        loop {
            if cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            let attempt = async {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => Err(ProviderError::Cancelled),
                    result = self.inner.complete(request, cancel) => result,
                }
            };
            let Some(result) = bounded(budget, attempt).await else {
                return Err(self.out_of_time());
            };
            match result {
                Ok(response) => return Ok(response),
                Err(error) => self.wait_before_retry(budget, error, cancel).await?,
            }
        }
    }

    /// Opens the inner stream and waits for its first item.
    async fn open_stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, StreamFailure> {
        let mut stream = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(StreamFailure::Open(ProviderError::Cancelled)),
            result = self.inner.stream(request, cancel) => result.map_err(StreamFailure::Open)?,
        };
        let first = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(StreamFailure::Open(ProviderError::Cancelled)),
            first = stream.next() => first,
        };
        match first {
            Some(Ok(item)) => {
                let head = futures::stream::once(async move { Ok(item) });
                Ok(Box::pin(head.chain(stream)))
            }
            Some(Err(ProviderError::Cancelled)) => {
                Err(StreamFailure::Open(ProviderError::Cancelled))
            }
            Some(Err(error)) => Err(StreamFailure::BeforeOutput(error)),
            None => Err(StreamFailure::BeforeOutput(ProviderError::Transport {
                message: "stream ended before yielding anything".into(),
            })),
        }
    }
}

/// How opening a stream failed.
enum StreamFailure {
    /// The request itself failed (status, connection); retry as usual.
    Open(ProviderError),
    /// The response started but broke before yielding anything.
    BeforeOutput(ProviderError),
}

#[async_trait]
impl Provider for ReliableProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self, model: &str) -> ProviderCapabilities {
        self.inner.capabilities(model)
    }

    fn retries_and_falls_back(&self) -> bool {
        true
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let mut budget = self.budget();
        self.complete_within(request, cancel, &mut budget).await
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        let mut budget = self.budget();
        if self.inner.capabilities(&request.model).streaming {
            loop {
                if cancel.is_cancelled() {
                    return Err(ProviderError::Cancelled);
                }
                let Some(opened) = bounded(&budget, self.open_stream(request, cancel)).await else {
                    return Err(self.out_of_time());
                };
                match opened {
                    Ok(stream) => return Ok(stream),
                    Err(StreamFailure::Open(error)) => {
                        if matches!(error, ProviderError::Decode { .. })
                            && self.policy.fallback_to_complete
                        {
                            tracing::warn!(error = %error, "stream unreadable; falling back to complete");
                            break;
                        }
                        self.wait_before_retry(&mut budget, error, cancel).await?;
                    }
                    Err(StreamFailure::BeforeOutput(error)) => {
                        if !falls_back(&error) {
                            return Err(error);
                        }
                        if self.policy.fallback_to_complete {
                            tracing::warn!(
                                provider = self.inner.name(),
                                error = %error,
                                "stream failed before any output; falling back to complete"
                            );
                            budget.attempts = budget.attempts.saturating_add(1);
                            break;
                        }
                        self.wait_before_retry(&mut budget, error, cancel).await?;
                    }
                }
            }
        }
        // The fallback gets at least one attempt, whatever the stream attempts used.
        budget.attempts = budget
            .attempts
            .min(self.policy.max_attempts.saturating_sub(1));
        let response = self.complete_within(request, cancel, &mut budget).await?;
        let items = response_to_stream_items(&response);
        Ok(Box::pin(futures::stream::iter(items.into_iter().map(Ok))))
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
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
}
