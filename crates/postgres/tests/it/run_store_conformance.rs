//! `PostgresRunStore` passes the run store conformance suite: each case on a schema of
//! its own, each store opened with its own pool as a restarted coordinator would.

use oxydra_coordinator::conformance::RunStoreBackend;
use oxydra_postgres::PostgresRunStore;

use crate::common::Postgres;

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
