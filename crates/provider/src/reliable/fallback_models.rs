//! The fallback models of a [`ReliableProvider`]: which failures pass a call on to the
//! next model, and passing it.

use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use oxydra_types::{ModelFallback, RuntimeEvent, StreamItem};
use tokio_util::sync::CancellationToken;

use super::ReliableProvider;
use crate::error::ProviderError;
use crate::provider::{Provider, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse};

/// A model that takes a call the models before it failed.
#[derive(Clone)]
pub(super) struct FallbackModel {
    /// Its provider, with its own retries.
    pub provider: Arc<ReliableProvider>,
    /// The model to ask for.
    pub model: String,
}

/// Whether a call that failed with `error` on a model with a window of `window` tokens
/// goes on to a model with `next_window`: errors of the model or its service (overload,
/// server errors, rate limits, timeouts, a broken connection), and a context-length
/// refusal when the next window is larger. Never errors any model would meet.
pub(super) fn passes_on(error: &ProviderError, window: u32, next_window: u32) -> bool {
    match error {
        ProviderError::ContextLengthExceeded { .. } => next_window > window,
        ProviderError::RateLimited { .. }
        | ProviderError::Overloaded { .. }
        | ProviderError::Server { .. }
        | ProviderError::Transport { .. }
        | ProviderError::Timeout(_) => true,
        ProviderError::RetryAdvised { error, .. } => passes_on(error, window, next_window),
        _ => false,
    }
}

impl ReliableProvider {
    /// The next fallback after a failure with `error` of `model`, from index `from`:
    /// its index, when the error passes on to it.
    fn next_fallback(
        &self,
        error: &ProviderError,
        model: &str,
        from: usize,
        previous: &dyn Provider,
    ) -> Option<usize> {
        let fallback = self.fallbacks.get(from)?;
        let window = previous.capabilities(model).context_window;
        let next_window = fallback
            .provider
            .capabilities(&fallback.model)
            .context_window;
        passes_on(error, window, next_window).then_some(from)
    }

    /// After the primary failed with `error`: each fallback in turn, while the failure
    /// passes on; the last error otherwise.
    pub(super) async fn complete_on_fallbacks(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
        error: ProviderError,
    ) -> Result<ProviderResponse, ProviderError> {
        let (mut response, hops) = self
            .on_fallbacks(request, cancel, error, |provider, moved, cancel| {
                provider.complete(moved, cancel)
            })
            .await?;
        response.fallbacks.splice(0..0, hops);
        Ok(response)
    }

    /// As [`complete_on_fallbacks`](Self::complete_on_fallbacks), streaming.
    pub(super) async fn stream_on_fallbacks(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
        error: ProviderError,
    ) -> Result<ProviderStream, ProviderError> {
        let (stream, hops) = self
            .on_fallbacks(request, cancel, error, |provider, moved, cancel| {
                provider.stream(moved, cancel)
            })
            .await?;
        // The hops come first, so a reader knows which model writes what follows.
        let told = hops
            .into_iter()
            .map(|hop| Ok(StreamItem::Event(RuntimeEvent::ModelFallback(hop))));
        Ok(Box::pin(futures::stream::iter(told).chain(stream)))
    }

    /// The one walk over the fallbacks: `call` makes the request (its model replaced
    /// by the fallback's) on each fallback the failure passes on to. On success, what
    /// `call` gave and every hop taken, in order.
    async fn on_fallbacks<T>(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
        mut error: ProviderError,
        call: impl for<'a> Fn(
            &'a dyn Provider,
            &'a ProviderRequest,
            &'a CancellationToken,
        ) -> BoxFuture<'a, Result<T, ProviderError>>,
    ) -> Result<(T, Vec<ModelFallback>), ProviderError> {
        let mut hops = Vec::new();
        let mut model = request.model.clone();
        let mut previous: &dyn Provider = self.inner.as_ref();
        let mut at = 0;
        while let Some(index) = self.next_fallback(&error, &model, at, previous) {
            let Some(fallback) = self.fallbacks.get(index) else {
                break;
            };
            if cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            log_passing(&model, &fallback.model, &error);
            hops.push(ModelFallback {
                from: model.clone(),
                to: fallback.model.clone(),
                reason: error.to_string(),
            });
            let mut moved = request.clone();
            moved.model.clone_from(&fallback.model);
            match call(fallback.provider.as_ref(), &moved, cancel).await {
                Ok(done) => return Ok((done, hops)),
                Err(failed) => error = failed,
            }
            model.clone_from(&fallback.model);
            previous = fallback.provider.as_ref();
            at = index + 1;
        }
        Err(error)
    }
}

fn log_passing(from: &str, to: &str, error: &ProviderError) {
    tracing::warn!(
        model = from,
        fallback = to,
        error = %error,
        "the model failed after its retries; its fallback model takes the call"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_of_the_model_pass_on_and_errors_of_the_request_do_not() {
        let server = ProviderError::Server {
            status: 500,
            message: "x".into(),
        };
        assert!(passes_on(&server, 8, 8));
        let overloaded = ProviderError::Overloaded {
            retry_after: None,
            message: "x".into(),
        };
        assert!(passes_on(&overloaded, 8, 8));
        assert!(!passes_on(&ProviderError::Cancelled, 8, 8));
    }
}
