//! The prompt is decoded in chunks ([`LocalConfig::prompt_chunk`]) and a stop lands
//! between them: a cancelled turn whose prompt is still being read frees the model
//! long before the prompt would have been read. The ignored
//! `prompt_chunk_measurements` prints the numbers behind the default chunk
//! (docs/performance.md, "Prompt chunks and stopping"):
//!
//! ```sh
//! nice -n 5 cargo nextest run --workspace --all-features --run-ignored only \
//!   --no-capture -E 'test(/prompt_chunk_measurements/)'
//! ```

use std::num::NonZeroU32;
use std::path::Path;
use std::time::{Duration, Instant};

use oxydra_local::{LocalConfig, LocalProvider};
use oxydra_provider::{Provider, ProviderRequest};
use oxydra_test_support::test_model;
use oxydra_types::Message;
use tokio_util::sync::CancellationToken;

/// A prompt of `notes` notes (~31 tokens each) whose first tokens differ by `n`, so
/// that nothing of it is in the KV cache from an earlier request.
fn long_prompt(notes: usize, n: usize) -> ProviderRequest {
    let text: String = (0..notes)
        .map(|i| {
            format!(
                "Note {i}: on night {} of the storm the keeper counted the ships that passed \
                 the northern rocks and wrote their names in the log. ",
                i + 3
            )
        })
        .collect();
    let mut request = ProviderRequest::new(
        "local",
        vec![
            Message::system(format!("Session {n}. You are helpful.")),
            Message::user(format!("{text}\nSummarise the notes.")),
        ],
    );
    request.max_tokens = Some(1);
    request.temperature = Some(0.0);
    request
}

/// The notes of a ~1,250-token prompt, for the measurements.
const MEASURED_NOTES: usize = 40;

/// A short request (~15 tokens) that waits behind whatever the model's thread is doing.
fn probe() -> ProviderRequest {
    let mut request = ProviderRequest::new(
        "local",
        vec![Message::system("Be brief."), Message::user("Hi.")],
    );
    request.max_tokens = Some(1);
    request.temperature = Some(0.0);
    request
}

/// How long `request` takes, whole, and its prompt tokens.
async fn timed(provider: &LocalProvider, request: &ProviderRequest) -> (Duration, u64) {
    let start = Instant::now();
    let response = provider
        .complete(request, &CancellationToken::new())
        .await
        .unwrap();
    (start.elapsed(), response.usage.input_tokens)
}

/// Starts `request`, cancels it after `delay`, and returns how long the probe then
/// took: the rest of the llama.cpp call under way when the cancellation came, plus
/// the probe itself.
async fn stop_after(
    provider: &LocalProvider,
    request: &ProviderRequest,
    delay: Duration,
) -> Duration {
    let cancel = CancellationToken::new();
    let stream = provider.stream(request, &cancel).await.unwrap();
    tokio::time::sleep(delay).await;
    cancel.cancel();
    let start = Instant::now();
    timed(provider, &probe()).await;
    drop(stream);
    start.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_during_a_long_prompt_lands_long_before_the_prompt_is_read() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    // 32-token chunks of a ~500-token prompt: the shape of the default's 64 of 1,000 at
    // half the test's time.
    let mut config = LocalConfig::new(model);
    config.prompt_chunk = 32;
    let provider = LocalProvider::load_async(config).await.unwrap();
    timed(&provider, &probe()).await;
    let (whole, tokens) = timed(&provider, &long_prompt(16, 0)).await;
    assert!(tokens > 400, "the prompt is {tokens} tokens");
    // Cancelled an eighth of the way in, the old 512-token calls would run on to about
    // the prompt's end; a stop between 32-token chunks lands within a fifteenth of it
    // (and the ~15-token probe adds a thirtieth).
    let delay = (whole / 8).min(Duration::from_secs(1));
    let waited = stop_after(&provider, &long_prompt(16, 1), delay).await;
    assert!(
        waited < whole / 4,
        "the stop took {waited:?}; the whole prompt takes {whole:?}"
    );
}

/// Chunk sizes measured.
const CHUNKS: [u32; 5] = [512, 256, 128, 64, 32];

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}

/// A path of its own for `model`, so that each chunk size loads its own model (the
/// process keeps one loaded model per file).
fn own_copy(model: &Path, dir: &Path, chunk: u32) -> std::path::PathBuf {
    let path = dir.join(format!("chunk-{chunk}.gguf"));
    if std::fs::hard_link(model, &path).is_err() {
        std::fs::copy(model, &path).unwrap();
    }
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: prints a table of prompt throughput and stop latency per chunk size"]
async fn prompt_chunk_measurements() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let runs: usize = std::env::var("OXYDRA_MEASURE_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(6);
    let dir = tempfile::tempdir_in(model.parent().unwrap()).unwrap();
    let before = load_average();
    let mut rows = Vec::new();
    for chunk in CHUNKS {
        let mut config = LocalConfig::new(own_copy(&model, dir.path(), chunk));
        config.threads = NonZeroU32::new(2);
        config.prompt_chunk = chunk;
        let provider = LocalProvider::load_async(config).await.unwrap();
        timed(&provider, &long_prompt(MEASURED_NOTES, 0)).await;
        let mut rates = Vec::new();
        let mut times = Vec::new();
        let mut tokens = 0;
        for run in 0..runs {
            let (time, input) = timed(&provider, &long_prompt(MEASURED_NOTES, run + 1)).await;
            tokens = input;
            rates.push(input as f64 / time.as_secs_f64());
            times.push(time.as_secs_f64());
        }
        let whole = median(times);
        let mut probes = Vec::new();
        for _ in 0..runs {
            timed(&provider, &long_prompt(MEASURED_NOTES, 0)).await;
            probes.push(timed(&provider, &probe()).await.0.as_secs_f64());
        }
        let probe = median(probes);
        // Stops spread evenly over the prompt's reading.
        let mut stops = Vec::new();
        for run in 0..runs {
            let delay = whole * (run as f64 + 0.5) / runs as f64;
            let waited = stop_after(
                &provider,
                &long_prompt(MEASURED_NOTES, 1000 + run),
                Duration::from_secs_f64(delay),
            )
            .await;
            stops.push((waited.as_secs_f64() - probe).max(0.0) * 1e3);
        }
        let max_stop = stops.iter().copied().fold(0.0, f64::max);
        rows.push(format!(
            "| {chunk} | {tokens} | {:.0} ({:.0}–{:.0}) | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms |",
            median(rates.clone()),
            rates.iter().copied().fold(f64::MAX, f64::min),
            rates.iter().copied().fold(0.0, f64::max),
            whole * 1e3,
            whole * 1e3 * f64::from(chunk) / tokens as f64,
            median(stops),
            max_stop,
        ));
    }
    println!(
        "| chunk (tokens) | prompt tokens | prompt tokens/s, median (min–max) | whole prompt | \
         one chunk | stop lands, median | stop lands, max |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    println!(
        "{runs} runs per chunk size, 2 threads; load average (1 min) {before} before, {} after",
        load_average()
    );
}
