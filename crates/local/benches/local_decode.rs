//! The embedded model's speed on the test model (SmolLM2-135M-Instruct Q4_1, from
//! `scripts/fetch-test-model.sh`; `OXYDRA_TEST_MODEL` names another): time to the
//! first token of a fresh prompt, of the next turn of a conversation (the KV cache
//! keeps the shared prefix), and decoding 64 tokens (throughput in tokens/s).
//! Skipped, saying so, when the model is missing. A bench binary (no criterion):
//! `cargo bench -p oxydra-local` prints the medians of ten runs each.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt;
use oxydra_local::{LocalConfig, LocalProvider};
use oxydra_provider::{Provider, ProviderRequest};
use oxydra_types::{Message, StreamItem};
use tokio_util::sync::CancellationToken;

const DECODE_TOKENS: u32 = 64;

fn model() -> Option<PathBuf> {
    std::env::var_os("OXYDRA_TEST_MODEL")
        .map(PathBuf::from)
        .or_else(|| {
            let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-models");
            std::fs::read_dir(dir).ok()?.find_map(|entry| {
                let path = entry.ok()?.path();
                (path.extension()? == "gguf").then_some(path)
            })
        })
        .filter(|path| path.is_file())
}

fn threads() -> u32 {
    std::env::var("OXYDRA_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2)
}

/// Streams `request`; returns the time to the first text and the output tokens.
async fn timed(provider: &LocalProvider, request: &ProviderRequest) -> (Duration, Duration, u64) {
    let start = Instant::now();
    let mut stream = provider
        .stream(request, &CancellationToken::new())
        .await
        .unwrap();
    let mut first = None;
    let mut tokens = 0;
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            StreamItem::Text(_) if first.is_none() => first = Some(start.elapsed()),
            StreamItem::Usage(usage) => tokens = usage.output_tokens,
            _ => {}
        }
    }
    (first.unwrap_or_default(), start.elapsed(), tokens)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let Some(path) = model() else {
        eprintln!("local_decode: skipped, no test model (run scripts/fetch-test-model.sh)");
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut config = LocalConfig::new(path);
    config.threads = std::num::NonZeroU32::new(threads());
    let provider = runtime.block_on(LocalProvider::load_async(config)).unwrap();
    let request = |system: String, max_tokens: u32| {
        let mut request = ProviderRequest::new(
            "local",
            vec![
                Message::system(system),
                Message::user("Write a short story about a lighthouse keeper and a storm."),
            ],
        );
        request.max_tokens = Some(max_tokens);
        request
    };
    let runs = 10;
    // A fresh prompt starts differently each time, so nothing is reused.
    let fresh: Vec<Duration> = (0..runs)
        .map(|n| {
            runtime
                .block_on(timed(
                    &provider,
                    &request(format!("Conversation {n}. You are helpful."), 1),
                ))
                .0
        })
        .collect();
    let next: Vec<Duration> = (0..runs)
        .map(|n| {
            let base = request("You are helpful.".into(), 1);
            runtime.block_on(timed(&provider, &base));
            let mut turn = base.clone();
            turn.messages.push(Message::assistant("Once upon a time."));
            turn.messages.push(Message::user(format!("Go on ({n}).")));
            runtime.block_on(timed(&provider, &turn)).0
        })
        .collect();
    let mut rates = Vec::new();
    for _ in 0..runs {
        let (first, total, tokens) = runtime.block_on(timed(
            &provider,
            &request("You are helpful.".into(), DECODE_TOKENS),
        ));
        if tokens > 1 {
            rates.push((tokens - 1) as f64 / (total - first).as_secs_f64());
        }
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "local_decode/first_token_fresh_prompt  median {:?}",
        median(fresh)
    );
    println!(
        "local_decode/first_token_next_turn     median {:?}",
        median(next)
    );
    println!(
        "local_decode/decode_tokens_per_s        median {:.1} tokens/s ({} threads)",
        rates.get(rates.len() / 2).copied().unwrap_or(0.0),
        threads()
    );
}
