//! `SqliteRunStore` passes the run store conformance suite of
//! `oxydra_coordinator::conformance`: each case on a new database file.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use oxydra_coordinator::conformance::{RunStoreBackend, pending};
use oxydra_coordinator::{
    BlueprintConfig, Coordinator, CoordinatorConfig, RunError, RunExecutor, RunOutcome, RunRequest,
    RunStatus, RunStore, SqliteRunStore,
};
use serde_json::json;

/// A new database file in a temporary directory, removed when dropped.
struct SqliteFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl SqliteFile {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coordinator.db");
        Self { _dir: dir, path }
    }
}

impl RunStoreBackend for SqliteFile {
    type Store = SqliteRunStore;

    fn open(&self) -> SqliteRunStore {
        SqliteRunStore::open(Some(&self.path)).unwrap()
    }
}

oxydra_coordinator::run_store_conformance_tests!(SqliteFile::new());

/// Completes every run at once.
struct Done;

#[async_trait]
impl RunExecutor for Done {
    async fn execute(&self, _run: RunRequest) -> Result<RunOutcome, RunError> {
        Ok(json!({"output": "done"}).into())
    }
}

#[tokio::test]
async fn a_coordinator_keeps_its_runs_in_the_store_it_is_given() {
    let store = Arc::new(SqliteRunStore::open(None).unwrap());
    store.insert_run(pending("left_over")).await.unwrap();
    let blueprints = vec![BlueprintConfig::agent(
        "researcher",
        "Research assistant",
        "You research.",
    )];
    let coordinator = Coordinator::with_store(
        CoordinatorConfig::default(),
        blueprints,
        Arc::clone(&store) as Arc<dyn RunStore>,
        |_| Arc::new(Done) as Arc<dyn RunExecutor>,
    )
    .await
    .unwrap();
    // The run left over in the given store was recovered there, and is what the
    // coordinator reports; the blueprints were stored there too.
    let recovered = store.get_run("left_over").await.unwrap().unwrap();
    assert_eq!(recovered.status, RunStatus::Failed);
    assert_eq!(recovered.error.unwrap().kind, "interrupted");
    assert_eq!(
        coordinator.get_run("left_over").await.unwrap().status,
        RunStatus::Failed
    );
    let names: Vec<String> = store
        .list_blueprints()
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["researcher"]);
    // A new run is kept in the given store.
    let created = coordinator
        .create_run("researcher", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert!(store.get_run(&created.run_id).await.unwrap().is_some());
    coordinator.shutdown().await;
}
