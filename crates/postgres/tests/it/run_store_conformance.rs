#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! `PostgresRunStore` passes the run store conformance suite: each case on a schema of
//! its own, each store opened with its own pool as a restarted coordinator would.

use oxydra_coordinator::conformance::RunStoreBackend;
use oxydra_postgres::PostgresRunStore;
use oxydra_postgres::testing::TestDatabase;

struct Postgres(TestDatabase);

impl Postgres {
    fn create() -> Option<Self> {
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(TestDatabase::create())
        })
        .map(Self)
    }
}

impl RunStoreBackend for Postgres {
    type Store = PostgresRunStore;

    fn open(&self) -> PostgresRunStore {
        PostgresRunStore::new(self.0.connect_blocking())
    }
}

// Without a server (outside CI) each case returns early, having said why.
oxydra_coordinator::run_store_conformance_tests!(match Postgres::create() {
    Some(backend) => backend,
    None => return,
});
