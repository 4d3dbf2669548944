//! [`ReliableProvider`]: retries, backoff and the stream → complete fallback.

use std::sync::Arc;

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
/// - Never retries once stream output has reached the caller: errors after the first
///   item pass through unchanged.
/// - When a stream fails before yielding anything (a broken or garbled stream, an
///   `error` event inside a 200 response), falls back to `complete` and turns its
///   response into stream items (text, one tool-call delta per call, usage, finish).
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
    deadline: Instant,
    attempts: u32,
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
            deadline: Instant::now() + self.policy.max_total,
            attempts: 0,
        }
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
            ProviderError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        };
        let delay = self.policy.delay(budget.attempts - 1, retry_after);
        let now = Instant::now();
        if now + delay > budget.deadline {
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
            let result = tokio::select! {
                biased;
                () = cancel.cancelled() => Err(ProviderError::Cancelled),
                result = self.inner.complete(request, cancel) => result,
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
                match self.open_stream(request, cancel).await {
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
