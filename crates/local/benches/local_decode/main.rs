//! The embedded model against the same GGUF served over HTTP by llama.cpp.
//!
//! On the test model (SmolLM2-135M-Instruct Q4_1, from `scripts/fetch-test-model.sh`;
//! `OXYDRA_TEST_MODEL` names another) it measures, for each side through the
//! `Provider` trait: decode tokens/s (from the arrival of the text deltas after the
//! first of a 64-token answer), the time to the first token of a fresh prompt and of
//! the next turn of a conversation (the KV cache keeps the shared prefix), and the
//! per-turn latency (a whole `complete` call of that next turn). The embedded side is
//! `oxydra-local`; the HTTP side is `oxydra-provider`'s OpenAI-compatible client,
//! streaming from the server at `OXYDRA_BENCH_LLAMA_SERVER_URL` (e.g.
//! `http://127.0.0.1:8080/v1`, llama-cpp-python's
//! `python -m llama_cpp.server --model M --n_threads N --n_threads_batch N --n_ctx 8192`
//! on the same GGUF). Without that variable only the embedded side is measured, and
//! the table says so.
//!
//! Both sides run at `OXYDRA_BENCH_THREADS` threads (default 2; start the server
//! with the same), `OXYDRA_BENCH_RUNS` runs each (default 20), greedy, with the same requests; the runs alternate between the
//! sides so that a change of machine load falls on both. Prints a markdown table of
//! medians; with `OXYDRA_BENCH_TABLE` set (as `cargo xtask bench` does) also writes it
//! to that file. Skipped, saying so, when the model is missing or a bench filter
//! argument does not match `local_decode`. A bench binary (no criterion).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod measure;
mod report;

use std::path::PathBuf;
use std::time::Duration;

use oxydra_local::{LocalConfig, LocalProvider};
use oxydra_provider::{OpenAiProvider, Provider, ProviderConfig, ProviderRequest};
use oxydra_types::Message;

use measure::Spread;
use report::{Conditions, Summary};

/// Runs per side (after one warm-up run each), unless `OXYDRA_BENCH_RUNS` says.
const RUNS: usize = 20;
/// Tokens of the decode measurement.
const DECODE_TOKENS: u32 = 64;
/// Most tokens of the per-turn call.
const TURN_TOKENS: u32 = 16;

fn runs() -> usize {
    std::env::var("OXYDRA_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(RUNS)
}

fn threads() -> u32 {
    std::env::var("OXYDRA_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2)
}

/// Whether the filter arguments (as `cargo bench -- FILTER` passes them) select this
/// bench: none given, or one that is part of `local_decode` or contains it.
fn selected() -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    filters.is_empty()
        || filters
            .iter()
            .any(|f| "local_decode".contains(f.as_str()) || f.contains("local_decode"))
}

fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn request(system: String, user: &str, max_tokens: u32) -> ProviderRequest {
    let mut request =
        ProviderRequest::new("local", vec![Message::system(system), Message::user(user)]);
    request.max_tokens = Some(max_tokens);
    request.temperature = Some(0.0);
    request
}

const STORY: &str = "Write a short story about a lighthouse keeper and a storm.";

fn base() -> ProviderRequest {
    request("You are helpful.".into(), STORY, 1)
}

fn next_turn(n: usize, max_tokens: u32) -> ProviderRequest {
    let mut turn = base();
    turn.messages.push(Message::assistant("Once upon a time."));
    turn.messages.push(Message::user(format!("Go on ({n}).")));
    turn.max_tokens = Some(max_tokens);
    turn
}

/// What one side measured over the runs.
#[derive(Default)]
struct Samples {
    decode: Vec<f64>,
    fresh: Vec<f64>,
    next: Vec<f64>,
    turn: Vec<f64>,
    turn_output: Vec<f64>,
    prompt_tokens: Option<u64>,
}

impl Samples {
    fn summary(&self) -> Summary {
        Summary {
            decode: Spread::of(self.decode.clone()),
            fresh: Spread::of(self.fresh.clone()),
            next: Spread::of(self.next.clone()),
            turn: Spread::of(self.turn.clone()),
        }
    }

    fn turn_output(&self) -> Option<u64> {
        Spread::of(self.turn_output.clone()).map(|s| s.median as u64)
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// One run of every measurement on `provider`, added to `samples`.
async fn run(
    provider: &dyn Provider,
    n: usize,
    samples: &mut Samples,
) -> Result<(), oxydra_provider::ProviderError> {
    // A fresh prompt starts differently each time, so nothing is reused.
    let fresh = measure::stream(
        provider,
        &request(format!("Conversation {n}. You are helpful."), STORY, 1),
    )
    .await?;
    samples.fresh.push(ms(fresh.first));
    if fresh.input_tokens > 0 {
        samples.prompt_tokens = Some(fresh.input_tokens);
    }

    measure::stream(provider, &base()).await?;
    let next = measure::stream(provider, &next_turn(n, 1)).await?;
    samples.next.push(ms(next.first));

    measure::stream(provider, &base()).await?;
    let (turn, output) = measure::complete(provider, &next_turn(n, TURN_TOKENS)).await?;
    samples.turn.push(ms(turn));
    samples.turn_output.push(output as f64);

    let decode = measure::stream(
        provider,
        &request("You are helpful.".into(), STORY, DECODE_TOKENS),
    )
    .await?;
    if let Some(rate) = decode.decode_rate() {
        samples.decode.push(rate);
    }
    if decode.output_tokens > 0 && u64::from(decode.deltas) != decode.output_tokens {
        eprintln!(
            "local_decode: {}: {} text deltas for {} output tokens",
            provider.name(),
            decode.deltas,
            decode.output_tokens
        );
    }
    Ok(())
}

fn main() {
    if !selected() {
        eprintln!("local_decode: skipped, the bench filter does not name it");
        return;
    }
    let Some(path) = oxydra_test_support::test_model::path() else {
        eprintln!("local_decode: skipped, no test model (run scripts/fetch-test-model.sh)");
        return;
    };
    let threads = threads();
    let runs = runs();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut config = LocalConfig::new(&path);
    config.threads = std::num::NonZeroU32::new(threads);
    let embedded = runtime.block_on(LocalProvider::load_async(config)).unwrap();
    let context = embedded.capabilities("local").context_window;
    let http = std::env::var("OXYDRA_BENCH_LLAMA_SERVER_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .map(|url| {
            eprintln!("local_decode: llama.cpp over HTTP at {url}, {threads} threads assumed");
            OpenAiProvider::new(
                ProviderConfig::new(url, None)
                    .with_limits(context, context)
                    .with_timeouts(Duration::from_secs(60), Duration::from_secs(30)),
            )
            .with_name("llama.cpp-http")
        });
    if http.is_none() {
        eprintln!(
            "local_decode: OXYDRA_BENCH_LLAMA_SERVER_URL unset: measuring the embedded model only"
        );
    }
    let mut sides: Vec<(&dyn Provider, Samples)> = vec![(&embedded, Samples::default())];
    if let Some(http) = &http {
        sides.push((http, Samples::default()));
    }

    let load_before = load_average();
    runtime.block_on(async {
        for (provider, _) in &sides {
            let mut warm_up = Samples::default();
            run(*provider, usize::MAX, &mut warm_up)
                .await
                .unwrap_or_else(|error| panic!("{}: {error}", provider.name()));
        }
        for n in 0..runs {
            for (provider, samples) in &mut sides {
                run(*provider, n, samples)
                    .await
                    .unwrap_or_else(|error| panic!("{}: {error}", provider.name()));
            }
        }
    });
    let load_after = load_average();

    let ours = &sides[0].1;
    let theirs = sides.get(1).map(|(_, samples)| samples);
    let conditions = Conditions {
        model: path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default(),
        threads,
        runs,
        decode_tokens: DECODE_TOKENS,
        turn_tokens: TURN_TOKENS,
        prompt_tokens: (
            ours.prompt_tokens.unwrap_or_default(),
            theirs.and_then(|s| s.prompt_tokens),
        ),
        turn_output: (
            ours.turn_output().unwrap_or_default(),
            theirs.and_then(Samples::turn_output),
        ),
        load: (load_before, load_after),
    };
    let table = report::render(
        &ours.summary(),
        theirs.map(Samples::summary).as_ref(),
        &conditions,
    );
    println!("{table}");
    if let Some(file) = std::env::var_os("OXYDRA_BENCH_TABLE") {
        let file = PathBuf::from(file);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(&file, table).unwrap();
        eprintln!("local_decode: wrote {}", file.display());
    }
}
