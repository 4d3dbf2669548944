//! Run trees on PostgreSQL, shared by every coordinator on the database: the scenarios
//! of `oxydra_coordinator::conformance::run_trees` (a blueprint that starts itself four
//! times a turn stays within the caps, recursion is refused unless allowed, the root's
//! `max_cost` covers its tree), each on a schema of its own.

use std::sync::Arc;

use oxydra_coordinator::RunStore;
use oxydra_coordinator::conformance::run_trees;
use oxydra_postgres::PostgresRunStore;
use oxydra_postgres::testing::TestDatabase;

/// A shared run store on a fresh schema; `None` without a server (outside CI).
async fn store() -> Option<(TestDatabase, Arc<dyn RunStore>)> {
    let database = TestDatabase::create().await?;
    let store: Arc<dyn RunStore> = Arc::new(PostgresRunStore::new(database.connect().await));
    Some((database, store))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_starting_blueprint_is_bounded_by_the_tree_caps() {
    let Some((_database, store)) = store().await else {
        return;
    };
    run_trees::a_self_starting_blueprint_is_bounded(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blueprint_does_not_start_itself_unless_allowed() {
    let Some((_database, store)) = store().await else {
        return;
    };
    run_trees::a_blueprint_does_not_start_itself_unless_allowed(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roots_max_cost_covers_its_tree() {
    let Some((_database, store)) = store().await else {
        return;
    };
    run_trees::the_roots_max_cost_covers_its_tree(store).await;
}
