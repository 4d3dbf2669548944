//! [`ReliableProvider`]: retries, backoff and the stream → complete fallback.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::accumulator::response_to_stream_items;
use crate::error::ProviderError;
use crate::fallback::{falls_back, stream_is_unusable};
use crate::provider::{Provider, ProviderCapabilities, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse, ToolChoice};
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
/// - When a stream fails before yielding anything with an error that says the stream
///   broke (see the rule below), falls back to `complete` — once per call — and turns
///   its response into stream items (text, one tool-call delta per call, usage,
///   finish). Any other error is retried as a stream (a 429 after its `Retry-After`)
///   or returned as it is.
/// - Once the endpoint answered a streamed request with an empty or undecodable body,
///   every later `stream` call of this instance is served by `complete` directly
///   ([`streaming_disabled`](Self::streaming_disabled)); this is logged once.
/// - The cancellation token interrupts any wait or request at once.
///
/// Which errors fall back: `Decode`, `Transport`, `Timeout`, `Server` and
/// `Overloaded` met after the response was accepted and before any item. Never
/// `RateLimited` (the `complete` request counts against the same quota: the stream is
/// retried after the wait the provider asked for), `Auth`, `InvalidRequest`,
/// `ContextLengthExceeded` (refused the same way), `ResponseTooLarge` or `Cancelled`.
/// A request that fails outright (an error status, a refused connection) is retried
/// as a stream, never answered by `complete`.
///
/// **Fallback models** ([`with_fallback_model`](Self::with_fallback_model)): when the call still
/// fails after its retries with an error another model may not meet — overloaded, a
/// server error, a rate limit past the budget, a timeout, or a context-length refusal
/// when the next model's window is larger — the next model (each with its own provider
/// and retries) takes the same request, its `model` replaced. Never after output
/// reached the caller, and never for errors any model would meet (auth, an invalid
/// request, cancellation). Each hop is told: a streamed answer starts with one
/// [`StreamItem::Event`](oxydra_types::StreamItem::Event) holding a
/// [`RuntimeEvent::ModelFallback`](oxydra_types::RuntimeEvent::ModelFallback) per hop,
/// and a whole one lists them in [`ProviderResponse::fallbacks`].
pub struct ReliableProvider {
    inner: Arc<dyn Provider>,
    policy: RetryPolicy,
    /// The models that take a call the primary failed, in order.
    fallbacks: Vec<fallback_models::FallbackModel>,
    /// Set once the endpoint answered a streamed request with an unreadable body.
    streaming_disabled: AtomicBool,
}

impl std::fmt::Debug for ReliableProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReliableProvider")
            .field("inner", &self.inner.name())
            .field("policy", &self.policy)
            .field("streaming_disabled", &self.streaming_disabled())
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

impl ReliableProvider {
    /// Wraps `inner` with `policy`.
    pub fn new(inner: Arc<dyn Provider>, policy: RetryPolicy) -> Self {
        Self {
            inner,
            policy,
            fallbacks: Vec::new(),
            streaming_disabled: AtomicBool::new(false),
        }
    }

    /// Adds `model` at `provider` (retried under this provider's policy) to the models
    /// that take a call this one failed, after those added before.
    #[must_use]
    pub fn with_fallback_model(
        mut self,
        provider: Arc<dyn Provider>,
        model: impl Into<String>,
    ) -> Self {
        let provider = Self::downcast(provider.as_ref())
            .map(|reliable| Arc::clone(&reliable.inner))
            .unwrap_or(provider);
        self.fallbacks.push(fallback_models::FallbackModel {
            provider: Arc::new(Self::new(provider, self.policy.clone())),
            model: model.into(),
        });
        self
    }

    /// The same provider and fallback models under `policy` (the fallbacks keep the
    /// policy they were added with).
    #[must_use]
    pub fn with_policy(&self, policy: RetryPolicy) -> Self {
        let mut provider = Self::new(Arc::clone(&self.inner), policy);
        provider.fallbacks = self.fallbacks.clone();
        provider
    }

    /// The fallback models, in order.
    pub fn fallback_models(&self) -> Vec<&str> {
        self.fallbacks.iter().map(|f| f.model.as_str()).collect()
    }

    /// `provider` with retries: wrapped in a `ReliableProvider` under `policy`, unless
    /// it already is one, which is returned as it is (with its own policy), so a
    /// provider is never wrapped twice.
    pub fn wrap(provider: Arc<dyn Provider>, policy: RetryPolicy) -> Arc<dyn Provider> {
        if Self::downcast(provider.as_ref()).is_some() {
            provider
        } else {
            Arc::new(Self::new(provider, policy))
        }
    }

    /// The `ReliableProvider` behind `provider`, if that is what it is.
    pub fn downcast(provider: &dyn Provider) -> Option<&Self> {
        let provider: &dyn Any = provider;
        provider.downcast_ref::<Self>()
    }

    /// Whether this provider answers every `stream` call with `complete`, because
    /// the endpoint answered a streamed request with an empty or undecodable body.
    pub fn streaming_disabled(&self) -> bool {
        self.streaming_disabled.load(Ordering::Relaxed)
    }

    /// Remembers that the endpoint cannot stream; logs it the first time.
    fn disable_streaming(&self, error: &ProviderError) {
        if !self.streaming_disabled.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                provider = self.inner.name(),
                error = %error,
                "the endpoint answered a streamed request with an unreadable body; \
                 asking it with plain completions from now on"
            );
        }
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
        tracing::debug!(
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
        let retry_after = error.retry_after();
        // `delay` caps a `Retry-After` at `max_total`; one longer than the time left
        // is not waited for at all.
        let delay = self
            .policy
            .delay(budget.attempts.saturating_sub(1), retry_after);
        if budget
            .remaining()
            .is_some_and(|remaining| delay > remaining)
        {
            tracing::debug!(
                provider = self.inner.name(),
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                "not retrying: the wait would pass the total time budget"
            );
            return Err(error);
        }
        let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        tracing::debug!(
            provider = self.inner.name(),
            attempt = budget.attempts,
            delay_ms,
            error = %error,
            "provider call failed; retrying"
        );
        crate::retry_notice::notify(&oxydra_types::ProviderRetry {
            attempt: budget.attempts,
            max_attempts: self.policy.max_attempts.max(1),
            delay_ms,
            reason: crate::retry_notice::reason(&error),
        });
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

    fn is_small_model(&self) -> bool {
        self.inner.is_small_model()
    }

    fn for_workspace(&self, workspace: &std::path::Path) -> Option<Arc<dyn Provider>> {
        let inner = self.inner.for_workspace(workspace)?;
        let mut provider = Self::new(inner, self.policy.clone());
        provider.fallbacks = self.fallbacks.clone();
        Some(Arc::new(provider))
    }

    fn opening_tool_choice(&self, messages: &[oxydra_types::Message]) -> Option<ToolChoice> {
        self.inner.opening_tool_choice(messages)
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let mut budget = self.budget();
        match self.complete_within(request, cancel, &mut budget).await {
            Err(error) if !self.fallbacks.is_empty() => {
                self.complete_on_fallbacks(request, cancel, error).await
            }
            result => result,
        }
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        match self.stream_primary(request, cancel).await {
            Err(error) if !self.fallbacks.is_empty() => {
                self.stream_on_fallbacks(request, cancel, error).await
            }
            result => result,
        }
    }
}

impl ReliableProvider {
    /// `stream` on the primary model alone: retries and the fallback to `complete`.
    async fn stream_primary(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        let mut budget = self.budget();
        if self.inner.capabilities(&request.model).streaming && !self.streaming_disabled() {
            loop {
                if cancel.is_cancelled() {
                    return Err(ProviderError::Cancelled);
                }
                let Some(opened) = bounded(&budget, self.open_stream(request, cancel)).await else {
                    return Err(self.out_of_time());
                };
                let error = match opened {
                    Ok(stream) => return Ok(stream),
                    Err(StreamFailure::Open(error)) => {
                        if self.policy.fallback_to_complete && stream_is_unusable(&error) {
                            self.disable_streaming(&error);
                            break;
                        }
                        error
                    }
                    Err(StreamFailure::BeforeOutput(error)) => {
                        if self.policy.fallback_to_complete && falls_back(&error) {
                            if stream_is_unusable(&error) {
                                self.disable_streaming(&error);
                            } else {
                                tracing::debug!(
                                    provider = self.inner.name(),
                                    error = %error,
                                    "stream failed before any output; falling back to complete"
                                );
                            }
                            budget.attempts = budget.attempts.saturating_add(1);
                            break;
                        }
                        error
                    }
                };
                self.wait_before_retry(&mut budget, error, cancel).await?;
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

#[path = "reliable/fallback_models.rs"]
mod fallback_models;
#[cfg(all(test, feature = "testing"))]
mod tests;
