#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxydra_scrubbing::{Scrubber, scrub};

/// About 1 MB of mixed tool output: log lines, Rust code, JSON, paths, hashes, and
/// one secret every ~60 lines (plain, labelled, in URLs and encoded).
fn corpus() -> String {
    let clean = [
        "2026-11-22T07:31:02.114Z INFO oxydra_runtime::turn{turn=3}: provider call finished in 812ms, 1532 prompt tokens",
        "    Compiling oxydra-executor v0.1.0 (/work/main/crates/executor)",
        "fn parse_config(path: &Path) -> Result<Config, ConfigError> { let text = std::fs::read_to_string(path)?;",
        r#"{"id": "550e8400-e29b-41d4-a716-446655440000", "status": "ok", "max_tokens": 1024, "items": [1, 2, 3]}"#,
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 Author: Ada Lovelace <ada@example.com>",
        "/usr/local/lib/python3.11/site-packages/requests/adapters.py:517: ConnectionError",
        "test scrubber::tests::keeps_identifiers_like_very_long_function_name_for_testing ... ok",
        "GET https://docs.rs/regex/latest/regex/struct.RegexSet.html 200 OK (34 ms)",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  target/release/oxydra",
        "The quick brown fox jumps over the lazy dog; nothing to see here, just prose in a README.",
    ];
    let secrets = [
        "export GITHUB_TOKEN=ghp_4f9Kd8sLqX2vNw7ZyT1mR0aB3cE5gH6jP9uQ",
        r#"{"api_key": "sk-proj-Xa81mQ0zVfT2bL7kN4pR9sW6yD3hJ5cG"}"#,
        "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U' https://api.example.com",
        "DATABASE_URL=postgres://app:s3cr3t-P4ss@db.internal:5432/app",
        "worker started with key Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF",
        // Encoded secrets (issue 26.6): a bare `key` with hex key material, a
        // hex-encoded token, a token written in groups.
        r#"key = "9b1d3c5e7f2a4b6c8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e""#,
        "blob 6768705f3136433765343246323932633639313245373731306338333833343741653137384234610a",
        "token: AB12 CD34 EF56 GH78",
    ];
    let mut out = String::with_capacity(1 << 20);
    let mut i = 0;
    while out.len() < 1 << 20 {
        if i % 60 == 59 {
            out.push_str(secrets[(i / 60) % secrets.len()]);
        } else {
            out.push_str(clean[i % clean.len()]);
        }
        out.push('\n');
        i += 1;
    }
    out
}

fn bench_scrub(c: &mut Criterion) {
    let text = corpus();
    let clean: String = text
        .lines()
        .filter(|l| scrub(l).is_clean())
        .collect::<Vec<_>>()
        .join("\n");
    let no_entropy = Scrubber::new().with_entropy_detection(false);
    let mut group = c.benchmark_group("scrub");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("mixed_1mb", |b| {
        b.iter(|| scrub(black_box(&text)).redactions.len())
    });
    group.bench_function("mixed_1mb_no_entropy", |b| {
        b.iter(|| no_entropy.scrub(black_box(&text)).redactions.len())
    });
    // Three provider keys and a token known by value, searched in every encoding.
    let known = Scrubber::new()
        .with_known_secrets([
            ("OPENAI_API_KEY", "sk-proj-Xa81mQ0zVfT2bL7kN4pR9sW6yD3hJ5cG"),
            (
                "ANTHROPIC_API_KEY",
                "sk-ant-api03-7Hq2Lm9Xv4Rt8Zp1Wk6Nc3Bd5Fg0Js",
            ),
            ("GEMINI_API_KEY", "AIzaSyD4f9Kd8sLqX2vNw7ZyT1mR0aB3cE5gH6j"),
            ("MCP_TOKEN", "mcp_tok_0a1b2c3d4e5f60718293a4b5c6d7e8f9"),
        ])
        .unwrap();
    group.bench_function("mixed_1mb_known_secrets", |b| {
        b.iter(|| known.scrub(black_box(&text)).redactions.len())
    });
    group.throughput(Throughput::Bytes(clean.len() as u64));
    group.bench_function("clean_1mb", |b| {
        b.iter(|| scrub(black_box(&clean)).redactions.len())
    });
    group.finish();
}

criterion_group!(benches, bench_scrub);
criterion_main!(benches);
