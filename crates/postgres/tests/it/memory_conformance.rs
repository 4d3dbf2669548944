//! `PostgresMemory` passes the memory conformance suites: each case on a schema of its
//! own, stores opened on it as separate processes would (each with its own pool). The
//! suites run twice: on the PostgreSQL 15 test server (`OXYDRA_TEST_POSTGRES_URL`,
//! without pgvector: vectors ranked in the process) and on the server with pgvector
//! (`OXYDRA_TEST_PGVECTOR_URL`: vectors searched by the server), each checking that it
//! got the backend it meant to test.

use oxydra_memory::RetrievalConfig;
use oxydra_memory::conformance::MemoryBackend;
use oxydra_postgres::testing::TestDatabase;

use crate::common::Postgres;
use oxydra_postgres::{PostgresMemory, PostgresMemoryConfig, VectorBackend};

impl MemoryBackend for Postgres {
    type Store = PostgresMemory;

    fn open(&self, retrieval: RetrievalConfig) -> PostgresMemory {
        let config = PostgresMemoryConfig {
            retrieval,
            ..PostgresMemoryConfig::default()
        };
        PostgresMemory::new(self.0.connect_blocking(), config)
    }

    fn open_capped(&self, max_message_bytes: usize) -> PostgresMemory {
        let config = PostgresMemoryConfig {
            max_message_bytes,
            ..PostgresMemoryConfig::default()
        };
        PostgresMemory::new(self.0.connect_blocking(), config)
    }
}

// Without a server (outside CI) each case returns early, having said why.
oxydra_memory::memory_conformance_tests!(match Postgres::create() {
    Some(backend) => backend,
    None => return,
});

/// The checkpoint suites on the test server.
mod checkpoints {
    use super::*;

    oxydra_memory::checkpoint_conformance_tests!(match Postgres::create() {
        Some(backend) => backend,
        None => return,
    });
}

/// The suites on the server with pgvector.
mod pgvector {
    use super::*;

    struct PgVector(TestDatabase);

    impl PgVector {
        fn create() -> Option<Self> {
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(TestDatabase::create_pgvector())
            })
            .map(Self)
        }
    }

    impl MemoryBackend for PgVector {
        type Store = PostgresMemory;

        fn open(&self, retrieval: RetrievalConfig) -> PostgresMemory {
            let config = PostgresMemoryConfig {
                retrieval,
                ..PostgresMemoryConfig::default()
            };
            let memory = PostgresMemory::new(self.0.connect_blocking(), config);
            assert_eq!(
                memory.vector_backend(),
                VectorBackend::PgVector,
                "{:?}",
                memory.database().pgvector_unused_reason()
            );
            memory
        }

        fn open_capped(&self, max_message_bytes: usize) -> PostgresMemory {
            let config = PostgresMemoryConfig {
                max_message_bytes,
                ..PostgresMemoryConfig::default()
            };
            PostgresMemory::new(self.0.connect_blocking(), config)
        }
    }

    // Without a server named (outside CI) each case returns early, having said why.
    oxydra_memory::memory_conformance_tests!(match PgVector::create() {
        Some(backend) => backend,
        None => return,
    });
}
