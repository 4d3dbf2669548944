//! Timing one provider call: when its text deltas arrived, and the whole call.

use std::time::{Duration, Instant};

use futures::StreamExt;
use oxydra_provider::{Provider, ProviderError, ProviderRequest};
use oxydra_types::StreamItem;
use tokio_util::sync::CancellationToken;

/// One streamed call, timed from just before the request is sent.
#[derive(Debug, Clone, Copy)]
pub struct Streamed {
    /// Time to the first text delta.
    pub first: Duration,
    /// Time to the last text delta.
    pub last: Duration,
    /// Text deltas received.
    pub deltas: u32,
    /// Prompt tokens the provider reported (0 when it reported none).
    pub input_tokens: u64,
    /// Output tokens the provider reported (0 when it reported none).
    pub output_tokens: u64,
}

impl Streamed {
    /// Decode speed from the deltas after the first: each delta is one token on
    /// both sides (llama.cpp hands out one token per step), so this counts what
    /// the caller sees arrive. `None` with fewer than two deltas.
    pub fn decode_rate(&self) -> Option<f64> {
        let span = self.last.checked_sub(self.first)?.as_secs_f64();
        (self.deltas > 1 && span > 0.0).then(|| f64::from(self.deltas - 1) / span)
    }
}

/// Streams `request` to its end.
pub async fn stream(
    provider: &dyn Provider,
    request: &ProviderRequest,
) -> Result<Streamed, ProviderError> {
    let start = Instant::now();
    let mut stream = provider.stream(request, &CancellationToken::new()).await?;
    let mut timed = Streamed {
        first: Duration::ZERO,
        last: Duration::ZERO,
        deltas: 0,
        input_tokens: 0,
        output_tokens: 0,
    };
    while let Some(item) = stream.next().await {
        match item? {
            StreamItem::Text(text) if !text.is_empty() => {
                let now = start.elapsed();
                if timed.deltas == 0 {
                    timed.first = now;
                }
                timed.last = now;
                timed.deltas += 1;
            }
            StreamItem::Usage(usage) => {
                timed.input_tokens = usage.input_tokens;
                timed.output_tokens = usage.output_tokens;
            }
            _ => {}
        }
    }
    Ok(timed)
}

/// One whole `complete` call: its wall time and the output tokens reported.
pub async fn complete(
    provider: &dyn Provider,
    request: &ProviderRequest,
) -> Result<(Duration, u64), ProviderError> {
    let start = Instant::now();
    let response = provider
        .complete(request, &CancellationToken::new())
        .await?;
    Ok((start.elapsed(), response.usage.output_tokens))
}

/// The median and the extremes of some samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median (the upper one of an even count).
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

impl Spread {
    /// `None` for no samples.
    pub fn of(mut samples: Vec<f64>) -> Option<Self> {
        samples.sort_by(f64::total_cmp);
        Some(Self {
            median: *samples.get(samples.len() / 2)?,
            min: *samples.first()?,
            max: *samples.last()?,
        })
    }
}
