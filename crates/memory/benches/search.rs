#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Hybrid search (FTS5 + vectors, default weights) over 100,000 chunks.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use oxydra_memory::{MemoryRetrieval, RetrievalConfig, SearchScope, SqliteConfig, SqliteMemory};
use oxydra_types::SessionId;

const CHUNKS: usize = 100_000;
const STOPWORDS: &[&str] = &[
    "the", "a", "of", "to", "and", "in", "is", "it", "for", "with",
];

/// A deterministic pseudo-random stream (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn vocabulary(rng: &mut Rng, size: usize) -> Vec<String> {
    const SYLLABLES: &[&str] = &[
        "ka", "lo", "mi", "ter", "sun", "vax", "rel", "dor", "pi", "que", "zan", "bru", "fen",
        "gol", "hix", "yor",
    ];
    (0..size)
        .map(|_| {
            let n = 2 + rng.below(3);
            (0..n)
                .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
                .collect()
        })
        .collect()
}

fn sentence(rng: &mut Rng, words: &[String], len: usize) -> String {
    (0..len)
        .map(|_| {
            if rng.below(4) == 0 {
                STOPWORDS[rng.below(STOPWORDS.len())].to_owned()
            } else {
                words[rng.below(words.len())].clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// CPU time (user + system) of this process so far, from /proc (Linux), in seconds.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn bench_search(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let memory = SqliteMemory::open(dir.path().join("bench.db"), SqliteConfig::default()).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let words = vocabulary(&mut rng, 20_000);
    let started = Instant::now();
    rt.block_on(async {
        for batch in 0..(CHUNKS / 10_000) {
            let session = SessionId::from(format!("ses_{}", batch % 10));
            let texts: Vec<String> = (0..10_000)
                .map(|_| sentence(&mut rng, &words, 40))
                .collect();
            memory.store_chunks(Some(&session), texts).await.unwrap();
        }
    });
    println!("built {CHUNKS} chunks in {:?}", started.elapsed());
    let queries: Vec<String> = (0..200).map(|_| sentence(&mut rng, &words, 6)).collect();
    // Warm the vector cache (loaded lazily on the first search).
    let started = Instant::now();
    rt.block_on(memory.search(&queries[0], &SearchScope::Global, 5))
        .unwrap();
    println!(
        "first search (loads the vector cache): {:?}",
        started.elapsed()
    );

    for (label, scope) in [
        ("global", SearchScope::Global),
        ("session", SearchScope::Session(SessionId::from("ses_3"))),
    ] {
        let cpu_before = cpu_seconds();
        let mut times: Vec<Duration> = queries
            .iter()
            .map(|query| {
                let started = Instant::now();
                let hits = rt.block_on(memory.search(query, &scope, 5)).unwrap();
                assert!(!hits.is_empty());
                started.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "hybrid search over {CHUNKS} chunks ({label}): p50 {:?}, p95 {:?}, max {:?}",
            times[100], times[189], times[199]
        );
        if let (Some(before), Some(after)) = (cpu_before, cpu_seconds()) {
            println!(
                "hybrid search ({label}): {:.2} ms of CPU per query",
                (after - before) / 200.0 * 1e3
            );
        }
    }

    // Each half alone, over the same file, for the breakdown.
    for (label, vector_weight, text_weight) in [("text only", 0.0, 1.0), ("vectors only", 1.0, 0.0)]
    {
        let config = SqliteConfig {
            retrieval: RetrievalConfig {
                vector_weight,
                text_weight,
                ..RetrievalConfig::default()
            },
            ..SqliteConfig::default()
        };
        let single = SqliteMemory::open(dir.path().join("bench.db"), config).unwrap();
        rt.block_on(single.search(&queries[0], &SearchScope::Global, 5))
            .unwrap();
        let cpu_before = cpu_seconds();
        let mut times: Vec<Duration> = queries
            .iter()
            .map(|query| {
                let started = Instant::now();
                rt.block_on(single.search(query, &SearchScope::Global, 5))
                    .unwrap();
                started.elapsed()
            })
            .collect();
        times.sort();
        let cpu = match (cpu_before, cpu_seconds()) {
            (Some(before), Some(after)) => (after - before) / 200.0 * 1e3,
            _ => f64::NAN,
        };
        println!(
            "{label} (global): p50 {:?}, p95 {:?}, {cpu:.2} ms of CPU per query",
            times[100], times[189]
        );
    }

    let mut group = c.benchmark_group("memory");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(4));
    let mut next = 0;
    group.bench_function("hybrid_search_100k", |b| {
        b.iter(|| {
            next = (next + 1) % queries.len();
            rt.block_on(memory.search(&queries[next], &SearchScope::Global, 5))
                .unwrap()
        });
    });
    group.finish();
}

criterion_group!(benches, bench_search);
criterion_main!(benches);
