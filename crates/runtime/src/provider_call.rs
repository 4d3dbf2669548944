//! One provider call: stream, accumulate, emit text deltas.
//!
//! Retries and the stream → complete fallback are the provider's: the builder wraps
//! it in a `ReliableProvider` unless told not to, and its errors are final here.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use oxydra_provider::{
    Provider, ProviderError, ProviderRequest, ProviderResponse, StreamAccumulator,
};
use oxydra_types::{RuntimeEvent, StreamItem, Usage};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span, field};

use crate::budget::Budget;
use crate::error::RuntimeError;
use crate::events::{EventSink, RunEvents};
use crate::gen_ai;

/// A provider response, how long it took and what it cost.
#[derive(Debug)]
pub(crate) struct ProviderCall {
    pub response: ProviderResponse,
    pub latency: Duration,
    /// US dollars, by the price the caller gave.
    pub cost: f64,
}

/// The span of one call, with the GenAI conventions' inference attributes: named
/// `chat {model}`, of kind client; usage, finish reason and cost are recorded later.
fn call_span(provider: &str, request: &ProviderRequest, streaming: bool) -> Span {
    tracing::info_span!(
        "provider_call",
        otel.name = %format_args!("chat {}", request.model),
        otel.kind = "client",
        otel.status_code = field::Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = gen_ai::provider_name(provider),
        gen_ai.request.model = %request.model,
        gen_ai.request.stream = streaming,
        gen_ai.response.model = field::Empty,
        messages = request.messages.len(),
        gen_ai.usage.input_tokens = field::Empty,
        gen_ai.usage.output_tokens = field::Empty,
        gen_ai.usage.cache_read.input_tokens = field::Empty,
        gen_ai.usage.cache_creation.input_tokens = field::Empty,
        gen_ai.usage.reasoning.output_tokens = field::Empty,
        gen_ai.response.finish_reasons = field::Empty,
        oxydra.cost_usd = field::Empty,
        latency_ms = field::Empty,
        error.type = field::Empty,
    )
}

/// Records what the response says of itself on the call's span.
fn record_response(span: &Span, response: &ProviderResponse) {
    let usage = &response.usage;
    for (field, tokens) in [
        ("gen_ai.usage.input_tokens", usage.input_tokens),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens),
        (
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_write_tokens,
        ),
        (
            "gen_ai.usage.reasoning.output_tokens",
            usage.reasoning_tokens,
        ),
    ] {
        span.record(field, gen_ai::count(tokens));
    }
    span.record(
        "gen_ai.response.finish_reasons",
        gen_ai::finish_reason(&response.finish_reason),
    );
}

/// How far a call got before the turn timeout cut it: the bytes of text, reasoning
/// and tool-call arguments it streamed.
#[derive(Debug, Default)]
struct Progress {
    bytes: AtomicUsize,
}

impl Progress {
    fn saw(&self, item: &StreamItem) {
        let bytes = match item {
            StreamItem::Text(text) | StreamItem::Reasoning(text) => text.len(),
            StreamItem::ToolCallDelta(delta) => {
                delta.arguments.len() + delta.name.as_deref().map_or(0, str::len)
            }
            _ => 0,
        };
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The turn-timeout error, saying what the call was doing when time ran out: a
    /// model still writing its answer is over the turn's budget, not silent.
    fn timeout_error(&self, timeout: Duration) -> RuntimeError {
        let ms = timeout.as_millis();
        let message = match self.bytes.load(Ordering::Relaxed) {
            0 => format!(
                "no text or tool call arrived from the model within the {ms} ms turn timeout"
            ),
            bytes => format!(
                "the turn ran out of its {ms} ms turn timeout while the model was still \
                 answering ({bytes} bytes streamed)"
            ),
        };
        RuntimeError::budget(Budget::TurnTimeout, message)
    }
}

/// Streams the response, sending every text piece to `events` as it arrives and
/// noting in `progress` how far it got.
async fn read_stream(
    provider: &dyn Provider,
    request: &ProviderRequest,
    cancel: &CancellationToken,
    events: Option<&RunEvents>,
    progress: &Progress,
) -> Result<ProviderResponse, ProviderError> {
    let mut stream = provider.stream(request, cancel).await?;
    let mut accumulator = StreamAccumulator::new();
    while let Some(item) = stream.next().await {
        let item = item?;
        progress.saw(&item);
        if let Some(events) = events {
            match &item {
                StreamItem::Text(text) if !text.is_empty() => events.text_delta(text),
                StreamItem::Reasoning(text) if !text.is_empty() => events.reasoning_delta(text),
                // Said before the fallback's first words are shown.
                StreamItem::Event(event @ RuntimeEvent::ModelFallback(_)) => {
                    events.emit(event.clone());
                }
                _ => {}
            }
        }
        accumulator.push(&item);
    }
    accumulator.finish()
}

/// How a call is made: streamed (text deltas go to `events`) or whole, bounded by
/// `timeout`, priced by `price` (of the model that answered and its usage).
pub(crate) struct CallOptions<'a> {
    pub streaming: bool,
    pub timeout: Duration,
    pub events: Option<&'a RunEvents>,
    pub price: &'a (dyn Fn(&str, &Usage) -> f64 + Sync),
}

/// Requests a response: streamed when `streaming` (text deltas go to `events`), else
/// whole. The call is bounded by `timeout` (a `turn_timeout` budget error) and stops
/// at once when `cancel` fires. Runs in a `provider_call` span (see [`call_span`]).
pub(crate) async fn request_response(
    provider: &dyn Provider,
    request: &ProviderRequest,
    options: CallOptions<'_>,
    cancel: &CancellationToken,
) -> Result<ProviderCall, RuntimeError> {
    let CallOptions {
        streaming,
        timeout,
        events,
        price,
    } = options;
    let span = call_span(provider.name(), request, streaming);
    let started = Instant::now();
    let progress = Progress::default();
    let call = async {
        if streaming {
            read_stream(provider, request, cancel, events, &progress).await
        } else {
            provider.complete(request, cancel).await
        }
    };
    // A wait before a retry is told as it begins (`provider_retry`): a rate limit's
    // `Retry-After` would otherwise look like a frozen run.
    let observer: Option<oxydra_provider::RetryObserver> = events.map(|events| {
        let events = events.clone();
        let observer: oxydra_provider::RetryObserver = Arc::new(move |retry| {
            events.emit(RuntimeEvent::ProviderRetry(retry.clone()));
        });
        observer
    });
    let work = async {
        match observer {
            Some(observer) => oxydra_provider::observing_retries(observer, call).await,
            None => call.await,
        }
    };
    let outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(RuntimeError::Cancelled),
        _ = tokio::time::sleep(timeout) => Err(progress.timeout_error(timeout)),
        result = work.instrument(span.clone()) => result.map_err(RuntimeError::from_provider),
    };
    let latency = started.elapsed();
    span.record("latency_ms", latency.as_millis() as u64);
    let mut response = outcome.inspect_err(|error| {
        span.record("error.type", error.kind());
        span.record("otel.status_code", "error");
    })?;
    if let (false, Some(events)) = (streaming, events) {
        // A whole answer tells its fallbacks once it is here (a stream told them first).
        for hop in &response.fallbacks {
            events.emit(RuntimeEvent::ModelFallback(hop.clone()));
        }
    }
    let answered = response.answered_by(&request.model).to_owned();
    span.record("gen_ai.response.model", answered.as_str());
    record_response(&span, &response);
    // Priced as the model that wrote it; a fallback's answer is marked with its model.
    let cost = price(&answered, &response.usage);
    if !response.fallbacks.is_empty() {
        response.message.model = Some(answered);
    }
    // What the answer used stays with it (replay compares runs by it).
    response.message.usage = Some(response.usage);
    span.record("oxydra.cost_usd", cost);
    Ok(ProviderCall {
        response,
        latency,
        cost,
    })
}
