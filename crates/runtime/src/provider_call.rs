//! One provider call: stream (falling back to `complete`), accumulate, emit text deltas.

use std::time::{Duration, Instant};

use futures::StreamExt;
use oxydra_provider::{
    Provider, ProviderError, ProviderRequest, ProviderResponse, StreamAccumulator,
};
use oxydra_types::StreamItem;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::error::RuntimeError;
use crate::event_scrub::log_safe;
use crate::events::RunEvents;

/// Whether a stream that failed before any output is worth a `complete` call: not when
/// the request itself is refused or the caller cancelled.
fn falls_back(error: &ProviderError) -> bool {
    !matches!(
        error,
        ProviderError::Cancelled
            | ProviderError::Auth { .. }
            | ProviderError::InvalidRequest { .. }
            | ProviderError::ContextLengthExceeded { .. }
            | ProviderError::RateLimited { .. }
    )
}

/// A provider response and how it was obtained.
#[derive(Debug)]
pub(crate) struct ProviderCall {
    pub response: ProviderResponse,
    pub latency: Duration,
    pub fell_back: bool,
}

async fn read_stream(
    provider: &dyn Provider,
    request: &ProviderRequest,
    cancel: &CancellationToken,
    events: Option<&RunEvents>,
) -> Result<(ProviderResponse, bool), ProviderError> {
    // A provider that retries and falls back itself has done both by the time it
    // returns an error: falling back again would repeat all of its retries.
    let own_fallback = !provider.retries_and_falls_back();
    let mut stream = match provider.stream(request, cancel).await {
        Ok(stream) => stream,
        Err(error) if own_fallback && falls_back(&error) => {
            tracing::warn!(error = %log_safe(&error), "stream failed to start; falling back to complete");
            return provider.complete(request, cancel).await.map(|r| (r, true));
        }
        Err(error) => return Err(error),
    };
    let mut accumulator = StreamAccumulator::new();
    let mut got_output = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(item) => {
                if let (StreamItem::Text(text), Some(events)) = (&item, events)
                    && !text.is_empty()
                {
                    events.text_delta(text);
                }
                got_output = true;
                accumulator.push(&item);
            }
            Err(error) if own_fallback && !got_output && falls_back(&error) => {
                tracing::warn!(error = %log_safe(&error), "stream failed before any output; falling back to complete");
                drop(stream);
                return provider.complete(request, cancel).await.map(|r| (r, true));
            }
            Err(error) => return Err(error),
        }
    }
    accumulator.finish().map(|r| (r, false))
}

/// Requests a response: streamed when `streaming` (text deltas go to `events`), else
/// whole. The call is bounded by `timeout` (a `turn_timeout` budget error) and stops
/// at once when `cancel` fires.
pub(crate) async fn request_response(
    provider: &dyn Provider,
    request: &ProviderRequest,
    streaming: bool,
    timeout: Duration,
    cancel: &CancellationToken,
    events: Option<&RunEvents>,
) -> Result<ProviderCall, RuntimeError> {
    let span = tracing::info_span!(
        "provider_call",
        provider = provider.name(),
        model = %request.model,
        messages = request.messages.len(),
        streaming,
        input_tokens = tracing::field::Empty,
        output_tokens = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
        fell_back = tracing::field::Empty,
    );
    let started = Instant::now();
    let work = async {
        if streaming {
            read_stream(provider, request, cancel, events).await
        } else {
            provider.complete(request, cancel).await.map(|r| (r, false))
        }
    };
    let outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(RuntimeError::Cancelled),
        _ = tokio::time::sleep(timeout) => Err(RuntimeError::budget(
            "turn_timeout",
            format!("the provider did not answer within {} ms", timeout.as_millis()),
        )),
        result = work.instrument(span.clone()) => result.map_err(RuntimeError::from_provider),
    };
    let latency = started.elapsed();
    span.record("latency_ms", latency.as_millis() as u64);
    let (response, fell_back) = outcome?;
    span.record("input_tokens", response.usage.input_tokens);
    span.record("output_tokens", response.usage.output_tokens);
    span.record("fell_back", fell_back);
    Ok(ProviderCall {
        response,
        latency,
        fell_back,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transient_failures_fall_back() {
        assert!(falls_back(&ProviderError::Transport {
            message: "reset".into()
        }));
        assert!(falls_back(&ProviderError::Server {
            status: 502,
            message: "bad gateway".into()
        }));
        assert!(!falls_back(&ProviderError::Cancelled));
        assert!(!falls_back(&ProviderError::Auth {
            status: 401,
            message: "no".into()
        }));
        assert!(!falls_back(&ProviderError::InvalidRequest {
            message: "bad".into()
        }));
    }
}
