//! The tracing span of one provider call (`provider_call`): created when the call
//! starts, with its usage, latency and outcome recorded on it as they become known.

use std::time::Instant;

use oxydra_types::StreamItem;
use tracing::Span;

use crate::error::ProviderError;
use crate::request::ProviderResponse;

/// The span of one provider call; usage and latency are recorded on it later.
pub(crate) fn call_span(provider: &str, model: &str, stream: bool) -> Span {
    tracing::info_span!(
        "provider_call",
        provider = %provider,
        model = %model,
        stream,
        input_tokens = tracing::field::Empty,
        output_tokens = tracing::field::Empty,
        cached_tokens = tracing::field::Empty,
        cache_write_tokens = tracing::field::Empty,
        reasoning_tokens = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
    )
}

/// Records the outcome of a whole (`complete`) call on its span.
pub(crate) fn record_outcome(
    span: &Span,
    started: Instant,
    result: &Result<ProviderResponse, ProviderError>,
) {
    span.record(
        "latency_ms",
        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    );
    match result {
        Ok(response) => record_usage(span, &StreamItem::Usage(response.usage)),
        Err(error) => span.in_scope(|| tracing::debug!(error = %error, "provider call failed")),
    }
}

/// Records a call's usage and latency on its span.
pub(crate) fn record_usage(span: &Span, item: &StreamItem) {
    if let StreamItem::Usage(usage) = item {
        span.record("input_tokens", usage.input_tokens);
        span.record("output_tokens", usage.output_tokens);
        span.record("cached_tokens", usage.cached_tokens);
        span.record("cache_write_tokens", usage.cache_write_tokens);
        span.record("reasoning_tokens", usage.reasoning_tokens);
    }
}
