//! One provider call: stream, accumulate, emit text deltas.
//!
//! Retries and the stream → complete fallback are the provider's: the builder wraps
//! it in a `ReliableProvider` unless told not to, and its errors are final here.

use std::time::{Duration, Instant};

use futures::StreamExt;
use oxydra_provider::{
    Provider, ProviderError, ProviderRequest, ProviderResponse, StreamAccumulator,
};
use oxydra_types::StreamItem;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::error::RuntimeError;
use crate::events::RunEvents;

/// A provider response and how long it took.
#[derive(Debug)]
pub(crate) struct ProviderCall {
    pub response: ProviderResponse,
    pub latency: Duration,
}

/// Streams the response, sending every text piece to `events` as it arrives.
async fn read_stream(
    provider: &dyn Provider,
    request: &ProviderRequest,
    cancel: &CancellationToken,
    events: Option<&RunEvents>,
) -> Result<ProviderResponse, ProviderError> {
    let mut stream = provider.stream(request, cancel).await?;
    let mut accumulator = StreamAccumulator::new();
    while let Some(item) = stream.next().await {
        let item = item?;
        if let Some(events) = events {
            match &item {
                StreamItem::Text(text) if !text.is_empty() => events.text_delta(text),
                StreamItem::Reasoning(text) if !text.is_empty() => events.reasoning_delta(text),
                _ => {}
            }
        }
        accumulator.push(&item);
    }
    accumulator.finish()
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
    );
    let started = Instant::now();
    let work = async {
        if streaming {
            read_stream(provider, request, cancel, events).await
        } else {
            provider.complete(request, cancel).await
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
    let response = outcome?;
    span.record("input_tokens", response.usage.input_tokens);
    span.record("output_tokens", response.usage.output_tokens);
    Ok(ProviderCall { response, latency })
}
