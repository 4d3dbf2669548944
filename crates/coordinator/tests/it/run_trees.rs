//! Run trees on SQLite (the same scenarios run on PostgreSQL in `oxydra-postgres`):
//! a blueprint whose model starts itself four times a turn stays within the caps, a
//! blueprint does not start itself unless allowed, and the root's `max_cost` covers
//! its tree.

use std::sync::Arc;

use oxydra_coordinator::conformance::run_trees;
use oxydra_coordinator::{RunStore, SqliteRunStore};

fn store(dir: &tempfile::TempDir) -> Arc<dyn RunStore> {
    Arc::new(SqliteRunStore::open(Some(&dir.path().join("runs.db"))).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_starting_blueprint_is_bounded_by_the_tree_caps() {
    let dir = tempfile::tempdir().unwrap();
    run_trees::a_self_starting_blueprint_is_bounded(store(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blueprint_does_not_start_itself_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    run_trees::a_blueprint_does_not_start_itself_unless_allowed(store(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roots_max_cost_covers_its_tree() {
    let dir = tempfile::tempdir().unwrap();
    run_trees::the_roots_max_cost_covers_its_tree(store(&dir)).await;
}
