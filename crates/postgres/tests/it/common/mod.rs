//! Helpers of the tests: a schema of its own per conformance case, a dense test
//! embedder, raw SQL on a test server.
#![allow(dead_code)]

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_memory::{Embedder, MemoryError, RetrievalConfig};
use oxydra_postgres::testing::TestDatabase;
use oxydra_postgres::{PostgresDatabase, PostgresMemory, PostgresMemoryConfig, PostgresOptions};

/// Dimensions of [`DenseEmbedder`]'s vectors.
pub const DIMS: usize = 32;

/// Pseudo-random dense vectors seeded by the text: cosines between them are spread
/// continuously, so rankings have no ties that float rounding could break either way.
/// A text containing `wrongdims` gets one dimension too few, one containing
/// `nanvalue` a NaN: bad embedders, for the bad-input tests.
pub struct DenseEmbedder;

#[async_trait]
impl Embedder for DenseEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, MemoryError> {
        Ok(texts.iter().map(|text| dense(text)).collect())
    }

    fn dimensions(&self) -> usize {
        DIMS
    }

    fn model(&self) -> String {
        format!("test-dense:{DIMS}")
    }
}

/// The vector [`DenseEmbedder`] gives `text`.
pub fn dense(text: &str) -> Vec<f32> {
    // FNV-1a, then a linear congruential generator.
    let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut vector: Vec<f32> = (0..DIMS)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect();
    if text.contains("wrongdims") {
        vector.pop();
    }
    if text.contains("nanvalue") {
        vector[0] = f32::NAN;
    }
    vector
}

/// A memory on `db` embedding with [`DenseEmbedder`].
pub fn dense_memory(db: PostgresDatabase, retrieval: RetrievalConfig) -> PostgresMemory {
    PostgresMemory::new(
        db,
        PostgresMemoryConfig {
            embedder: Arc::new(DenseEmbedder),
            retrieval,
            ..PostgresMemoryConfig::default()
        },
    )
}

/// Connects with `options`, turning pgvector off when `use_pgvector` is false.
pub async fn connect(options: &PostgresOptions, use_pgvector: bool) -> PostgresDatabase {
    let options = PostgresOptions {
        use_pgvector,
        ..options.clone()
    };
    PostgresDatabase::connect(&options).await.unwrap()
}

/// A one-off connection to `url`, for inspecting and tampering.
pub async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// How many migrations of `component` `schema` records.
pub async fn migrations(client: &tokio_postgres::Client, schema: &str, component: &str) -> i64 {
    client
        .query_one(
            &format!("SELECT count(*) FROM {schema}.oxydra_schema_migrations WHERE component = $1"),
            &[&component],
        )
        .await
        .unwrap()
        .get(0)
}

/// The type of `schema`.chunks.embedding: `bytea` or `vector`.
pub async fn embedding_type(client: &tokio_postgres::Client, schema: &str) -> String {
    client
        .query_one(
            "SELECT udt_name::TEXT FROM information_schema.columns
             WHERE table_schema = $1 AND table_name = 'chunks' AND column_name = 'embedding'",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0)
}

/// A schema of its own on the test server (`OXYDRA_TEST_POSTGRES_URL`) for one
/// conformance case, from a synchronous context on a multi-threaded runtime.
pub struct Postgres(pub TestDatabase);

impl Postgres {
    /// `None` without a reachable server (outside CI), having said why.
    pub fn create() -> Option<Self> {
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(TestDatabase::create())
        })
        .map(Self)
    }
}
