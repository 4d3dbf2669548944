#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Search on PostgreSQL with each vector backend: 20,000 chunks of 40 words (hashing
//! embedder, 256 dimensions) in one schema on pgvector (exact cosine scan on the
//! server) and in one with pgvector turned off (in-process cache), on the same
//! server; `search` by vectors alone and hybrid (default weights), top 10, global.
//! Also prints what the in-process cache holds per worker.
//!
//! Needs the test server with pgvector (`OXYDRA_TEST_PGVECTOR_URL`; see
//! scripts/start-pgvector-server.sh); without it the bench says so and measures
//! nothing.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use oxydra_memory::{MemoryRetrieval, RetrievalConfig, SearchScope};
use oxydra_postgres::testing::{self, TestDatabase};
use oxydra_postgres::{
    PostgresDatabase, PostgresMemory, PostgresMemoryConfig, PostgresOptions, VectorBackend,
};

const CHUNKS: usize = 20_000;
const DIMS: usize = 256;

/// A deterministic pseudo-random stream (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// `CHUNKS` texts of 40 words from a 5,000-word vocabulary.
fn texts() -> (Vec<String>, Vec<String>) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    const SYLLABLES: &[&str] = &[
        "ka", "lo", "mi", "ter", "sun", "vax", "rel", "dor", "pi", "que", "zan", "bru",
    ];
    let words: Vec<String> = (0..5_000)
        .map(|_| {
            (0..3)
                .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
                .collect()
        })
        .collect();
    let texts = (0..CHUNKS)
        .map(|_| {
            (0..40)
                .map(|_| words[rng.below(words.len())].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let queries = (0..16)
        .map(|_| {
            (0..4)
                .map(|_| words[rng.below(words.len())].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    (texts, queries)
}

async fn memory(
    test: &TestDatabase,
    use_pgvector: bool,
    retrieval: RetrievalConfig,
) -> PostgresMemory {
    let options = PostgresOptions {
        use_pgvector,
        ..test.options()
    };
    let db = PostgresDatabase::connect(&options).await.unwrap();
    PostgresMemory::new(
        db,
        PostgresMemoryConfig {
            retrieval,
            ..PostgresMemoryConfig::default()
        },
    )
}

fn search(c: &mut Criterion) {
    if testing::pgvector_url().is_none() {
        eprintln!(
            "vector_search: {} is not set, nothing measured (scripts/start-pgvector-server.sh starts a server)",
            testing::PGVECTOR_URL_VAR
        );
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (texts, queries) = texts();
    let mut group = c.benchmark_group("postgres_vector_search");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    for (backend, use_pgvector) in [
        (VectorBackend::PgVector, true),
        (VectorBackend::InProcess, false),
    ] {
        let Some(test) = runtime.block_on(TestDatabase::create_pgvector()) else {
            return;
        };
        let loader = runtime.block_on(memory(&test, use_pgvector, RetrievalConfig::default()));
        assert_eq!(loader.vector_backend(), backend);
        runtime
            .block_on(loader.store_chunks(None, texts.clone()))
            .unwrap();
        for (name, retrieval) in [
            (
                "vectors",
                RetrievalConfig {
                    vector_weight: 1.0,
                    text_weight: 0.0,
                    ..RetrievalConfig::default()
                },
            ),
            ("hybrid", RetrievalConfig::default()),
        ] {
            let memory = runtime.block_on(memory(&test, use_pgvector, retrieval));
            // The first search fills the in-process cache; searches after it reuse it.
            runtime
                .block_on(memory.search(&queries[0], &SearchScope::Global, 10))
                .unwrap();
            let mut next = 0;
            group.bench_function(
                format!("{}/{name}_top10_of_{CHUNKS}", backend.name()),
                |b| {
                    b.iter(|| {
                        next = (next + 1) % queries.len();
                        let hits = runtime
                            .block_on(memory.search(&queries[next], &SearchScope::Global, 10))
                            .unwrap();
                        assert!(!hits.is_empty());
                    });
                },
            );
        }
    }
    group.finish();
    // What the in-process backend keeps per worker: f32 vectors, their i8 copy, a scale,
    // an id and a session key per chunk.
    let cache_bytes = CHUNKS * (DIMS * 5 + 4 + 8 + 4);
    eprintln!(
        "vector_search: the in-process cache of {CHUNKS} vectors of {DIMS} dimensions holds about {:.1} MiB per worker; pgvector holds none",
        cache_bytes as f64 / (1024.0 * 1024.0)
    );
}

criterion_group!(benches, search);
criterion_main!(benches);
