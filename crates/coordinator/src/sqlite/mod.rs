//! [`SqliteRunStore`]: the SQLite [`RunStore`]; the one module of the crate naming
//! `rusqlite`, whose errors become [`CoordinatorError::Storage`] here.
//!
//! Three tables of their own (`coordinator_blueprints`, `coordinator_runs`, which also
//! holds what each run used of its budgets, `coordinator_run_approvals`), so the
//! store can share a database file with the session memory, created and upgraded by
//! versioned migrations (`migrations.rs`) recorded in a third. Every state change is a
//! conditional `UPDATE` (`… WHERE status = 'pending'`), so a late worker can never
//! overwrite a run that was cancelled or recovered in the meantime. All calls run on
//! the store's own database thread, never on an async worker.

mod approvals;
mod db_thread;
mod listing;
#[cfg(test)]
mod listing_plan_tests;
#[cfg(test)]
mod migration_tests;
mod migrations;
mod trees;
mod usage;

use std::path::Path;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use oxydra_runtime::{ApprovalDecision, PendingApproval};

use crate::approval_row::{DecidedApproval, RecordedDecision};
use crate::blueprint::BlueprintSummary;
use crate::error::CoordinatorError;
use crate::run::{Run, RunError, RunStatus, now_millis};
use crate::run_query::{RunQuery, WaitingApproval};
use crate::run_row::{BlueprintRow, RUN_COLUMNS, RunRow, encode_error, encode_value, parse_json};
use crate::run_usage::RunUsage;
use crate::store::{RunStore, TreeReservation};
use db_thread::DbThread;
use listing::run_row;
use migrations::migrate;
#[cfg(test)]
use migrations::{MIGRATIONS, SCHEMA_VERSION};

/// The backend name in errors.
const BACKEND: &str = "sqlite";

impl CoordinatorError {
    /// A [`CoordinatorError::Storage`] of `action`, keeping SQLite's message.
    pub(crate) fn storage(action: &'static str) -> impl FnOnce(rusqlite::Error) -> Self {
        move |source| Self::Storage {
            backend: BACKEND,
            action,
            message: source.to_string(),
        }
    }
}

/// The coordinator's SQLite store; cheap to clone.
#[derive(Clone)]
pub struct SqliteRunStore {
    db: DbThread,
}

impl std::fmt::Debug for SqliteRunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteRunStore").finish_non_exhaustive()
    }
}

impl SqliteRunStore {
    /// Opens (creating if needed) the store in `path`, or in memory when `None`, and
    /// starts its database thread. Blocking: call it from `spawn_blocking`.
    pub fn open(path: Option<&Path>) -> Result<Self, CoordinatorError> {
        if let Some(path) = path {
            // Runs hold prompts and results: the file is owner-only, like memory's.
            oxydra_memory::secure_database_file(path);
        }
        let mut connection = match path {
            Some(path) => Connection::open(path),
            None => Connection::open_in_memory(),
        }
        .map_err(CoordinatorError::storage("opening the database"))?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(CoordinatorError::storage("setting the busy timeout"))?;
        if path.is_some() {
            connection
                .pragma_update(None, "journal_mode", "WAL")
                .map_err(CoordinatorError::storage("enabling WAL"))?;
            connection
                .pragma_update(None, "synchronous", "NORMAL")
                .map_err(CoordinatorError::storage("setting synchronous"))?;
        }
        migrate(&mut connection)?;
        Ok(Self {
            db: DbThread::spawn(connection)?,
        })
    }

    /// Runs `work` with the connection on the database thread.
    async fn with<R, F>(&self, work: F) -> Result<R, CoordinatorError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, CoordinatorError> + Send + 'static,
    {
        self.db.call(work).await
    }
}

#[async_trait]
impl RunStore for SqliteRunStore {
    /// Replaces the stored blueprints with `blueprints` (in this order).
    async fn replace_blueprints(
        &self,
        blueprints: Vec<BlueprintSummary>,
    ) -> Result<(), CoordinatorError> {
        self.with(move |connection| {
            // A savepoint, as the job may run inside a group-commit transaction.
            let tx = connection
                .savepoint()
                .map_err(CoordinatorError::storage("starting a savepoint"))?;
            tx.execute("DELETE FROM coordinator_blueprints", [])
                .map_err(CoordinatorError::storage("clearing blueprints"))?;
            let now = now_millis();
            for (position, blueprint) in blueprints.iter().enumerate() {
                let schema = blueprint.parameters_schema.as_ref().map(Value::to_string);
                tx.execute(
                    "INSERT INTO coordinator_blueprints
                     (name, type, description, parameters_schema, position, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        blueprint.name,
                        blueprint.kind.as_str(),
                        blueprint.description,
                        schema,
                        i64::try_from(position).unwrap_or(i64::MAX),
                        now
                    ],
                )
                .map_err(CoordinatorError::storage("storing a blueprint"))?;
            }
            tx.commit()
                .map_err(CoordinatorError::storage("committing blueprints"))
        })
        .await
    }

    /// The stored blueprints, in config order.
    async fn list_blueprints(&self) -> Result<Vec<BlueprintSummary>, CoordinatorError> {
        self.with(|connection| {
            let mut statement = connection
                .prepare_cached(
                    "SELECT name, type, description, parameters_schema
                     FROM coordinator_blueprints ORDER BY position",
                )
                .map_err(CoordinatorError::storage("listing blueprints"))?;
            let rows = statement
                .query_map([], |row| {
                    Ok(BlueprintRow {
                        name: row.get(0)?,
                        kind: row.get(1)?,
                        description: row.get(2)?,
                        parameters_schema: row.get(3)?,
                    })
                })
                .map_err(CoordinatorError::storage("listing blueprints"))?;
            let mut summaries = Vec::new();
            for row in rows {
                summaries.push(
                    row.map_err(CoordinatorError::storage("reading a blueprint"))?
                        .decode()?,
                );
            }
            Ok(summaries)
        })
        .await
    }

    /// Stores a new run. Its parameters are scrubbed first: the stored copy (and so what
    /// the run is started with) holds no secret.
    async fn insert_run(&self, run: Run) -> Result<(), CoordinatorError> {
        let parameters = encode_value(run.parameters);
        self.with(move |connection| {
            connection
                .prepare_cached(
                    "INSERT INTO coordinator_runs (id, agent_name, status, parameters, created_at,
                         root_run_id, parent_run_id, depth)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .and_then(|mut statement| {
                    statement.execute(params![
                        run.run_id,
                        run.agent_name,
                        run.status.as_str(),
                        parameters,
                        run.created_at,
                        run.lineage.root_run_id,
                        run.lineage.parent_run_id,
                        run.lineage.depth
                    ])
                })
                .map_err(CoordinatorError::storage("storing a run"))?;
            Ok(())
        })
        .await
    }

    /// Moves a pending run to running and returns its stored parameters; `None` when
    /// it was no longer pending (cancelled while queued, or recovered).
    async fn start_run(&self, run_id: &str) -> Result<Option<Value>, CoordinatorError> {
        let run_id = run_id.to_owned();
        self.with(move |connection| {
            let parameters = connection
                .prepare_cached(
                    "UPDATE coordinator_runs
                     SET status = 'running', started_at = COALESCE(started_at, ?2)
                     WHERE id = ?1 AND status = 'pending' RETURNING parameters",
                )
                .and_then(|mut statement| {
                    statement
                        .query_row(params![run_id, now_millis()], |row| row.get::<_, String>(0))
                        .optional()
                })
                .map_err(CoordinatorError::storage("starting a run"))?;
            parameters
                .map(|text| parse_json("run parameters", &text))
                .transpose()
        })
        .await
    }

    /// Ends a run that is still pending, running or waiting for approval; `false` when
    /// it had already ended.
    /// `result` and `error` are scrubbed first: whatever a runner produced (tool
    /// output, a model's text, an error message), no secret in it reaches the database.
    async fn finish_run(
        &self,
        run_id: &str,
        status: RunStatus,
        result: Option<Value>,
        error: Option<RunError>,
    ) -> Result<bool, CoordinatorError> {
        let run_id = run_id.to_owned();
        let result = result.map(encode_value);
        let error = error.map(encode_error).transpose()?;
        self.with(move |connection| {
            let changed = connection
                .prepare_cached(
                    "UPDATE coordinator_runs
                     SET status = ?2, result = ?3, error = ?4, finished_at = ?5
                     WHERE id = ?1 AND status IN ('pending', 'running', 'waiting_approval')",
                )
                .and_then(|mut statement| {
                    statement.execute(params![
                        run_id,
                        status.as_str(),
                        result,
                        error,
                        now_millis()
                    ])
                })
                .map_err(CoordinatorError::storage("ending a run"))?;
            Ok(changed == 1)
        })
        .await
    }

    /// The run with `run_id`, if any.
    async fn get_run(&self, run_id: &str) -> Result<Option<Run>, CoordinatorError> {
        let run_id = run_id.to_owned();
        self.with(move |connection| {
            let row = connection
                .prepare_cached(&format!(
                    "SELECT {RUN_COLUMNS} FROM coordinator_runs WHERE id = ?1"
                ))
                .and_then(|mut statement| statement.query_row([&run_id], run_row).optional())
                .map_err(CoordinatorError::storage("reading a run"))?;
            row.map(RunRow::decode).transpose()
        })
        .await
    }

    async fn list_runs(&self, query: RunQuery) -> Result<Vec<Run>, CoordinatorError> {
        self.with(move |connection| listing::runs(connection, &query))
            .await
    }

    async fn waiting_approvals(
        &self,
        limit: u32,
    ) -> Result<Vec<WaitingApproval>, CoordinatorError> {
        self.with(move |connection| listing::waiting_approvals(connection, limit))
            .await
    }

    async fn record_usage(&self, run_id: &str, usage: RunUsage) -> Result<bool, CoordinatorError> {
        let run_id = run_id.to_owned();
        self.with(move |connection| usage::record(connection, &run_id, usage))
            .await
    }

    async fn reserve_tree_run(
        &self,
        root_run_id: &str,
        max_runs: u32,
        max_cost: Option<f64>,
    ) -> Result<TreeReservation, CoordinatorError> {
        let root_run_id = root_run_id.to_owned();
        self.with(move |connection| trees::reserve(connection, &root_run_id, max_runs, max_cost))
            .await
    }

    async fn charge_tree(&self, root_run_id: &str, cost: f64) -> Result<(), CoordinatorError> {
        let root_run_id = root_run_id.to_owned();
        self.with(move |connection| trees::charge(connection, &root_run_id, cost))
            .await
    }

    async fn suspend_run(
        &self,
        run_id: &str,
        pending: Vec<PendingApproval>,
    ) -> Result<bool, CoordinatorError> {
        let run_id = run_id.to_owned();
        self.with(move |connection| approvals::suspend(connection, &run_id, &pending))
            .await
    }

    async fn pending_approvals(
        &self,
        run_id: &str,
    ) -> Result<Vec<PendingApproval>, CoordinatorError> {
        let run_id = run_id.to_owned();
        self.with(move |connection| approvals::pending(connection, &run_id))
            .await
    }

    async fn decide_approval(
        &self,
        run_id: &str,
        approval_id: &str,
        decision: ApprovalDecision,
        now: i64,
    ) -> Result<RecordedDecision, CoordinatorError> {
        let run_id = run_id.to_owned();
        let approval_id = approval_id.to_owned();
        self.with(move |connection| {
            approvals::decide(connection, &run_id, &approval_id, &decision, now)
        })
        .await
    }

    async fn take_decisions(&self, run_id: &str) -> Result<Vec<DecidedApproval>, CoordinatorError> {
        let run_id = run_id.to_owned();
        self.with(move |connection| approvals::take(connection, &run_id))
            .await
    }

    async fn expire_approvals(&self, now: i64) -> Result<Vec<String>, CoordinatorError> {
        self.with(move |connection| approvals::expire(connection, now))
            .await
    }

    /// Marks every run left pending or running (by a coordinator that stopped without
    /// finishing them) as failed with kind `interrupted`; returns how many.
    async fn recover_interrupted(&self) -> Result<usize, CoordinatorError> {
        let error = encode_error(RunError::interrupted())?;
        self.with(move |connection| {
            connection
                .execute(
                    "UPDATE coordinator_runs SET status = 'failed', error = ?1, finished_at = ?2
                     WHERE status IN ('pending', 'running')",
                    params![error, now_millis()],
                )
                .map_err(CoordinatorError::storage("recovering interrupted runs"))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunLineage;
    use serde_json::json;

    fn pending(id: &str) -> Run {
        Run::pending(
            id,
            "researcher",
            json!({"prompt": "hi"}),
            RunLineage::root(id),
        )
    }

    #[tokio::test]
    async fn run_parameters_are_stored_scrubbed_in_an_owner_only_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let store = SqliteRunStore::open(Some(&path)).unwrap();
        let mut run = pending("r1");
        run.parameters = json!({"prompt": "log in with password=hunter2-very-secret"});
        store.insert_run(run).await.unwrap();
        let started = store.start_run("r1").await.unwrap().unwrap().to_string();
        assert!(!started.contains("hunter2"), "{started}");
        assert!(started.contains("[REDACTED]"), "{started}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let mut bytes = Vec::new();
        for suffix in ["", "-wal"] {
            bytes.extend(std::fs::read(format!("{}{suffix}", path.display())).unwrap_or_default());
        }
        assert!(!String::from_utf8_lossy(&bytes).contains("hunter2"));
    }

    pub(super) fn recorded_versions(path: &Path) -> Vec<i64> {
        let connection = Connection::open(path).unwrap();
        let mut statement = connection
            .prepare("SELECT version FROM coordinator_schema_version ORDER BY version")
            .unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[tokio::test]
    async fn migrations_are_recorded_once_and_reopening_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        // The session memory owns `user_version` in a shared file: leave it alone.
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 7)
            .unwrap();
        {
            let store = SqliteRunStore::open(Some(&path)).unwrap();
            store.insert_run(pending("kept")).await.unwrap();
        }
        let all: Vec<i64> = (1..=SCHEMA_VERSION).collect();
        assert_eq!(recorded_versions(&path), all);
        let store = SqliteRunStore::open(Some(&path)).unwrap();
        assert_eq!(recorded_versions(&path), all);
        assert!(store.get_run("kept").await.unwrap().is_some());
        let user_version: i64 = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(user_version, 7);
    }

    #[tokio::test]
    async fn a_database_from_before_versioning_is_adopted_with_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("legacy.db");
        {
            let connection = Connection::open(&path).unwrap();
            let (_, legacy_schema) = MIGRATIONS[0];
            connection.execute_batch(legacy_schema).unwrap();
            connection
                .execute(
                    "INSERT INTO coordinator_runs (id, agent_name, status, parameters, created_at)
                     VALUES ('old', 'researcher', 'completed', '{}', 1)",
                    [],
                )
                .unwrap();
        }
        let store = SqliteRunStore::open(Some(&path)).unwrap();
        let all: Vec<i64> = (1..=SCHEMA_VERSION).collect();
        assert_eq!(recorded_versions(&path), all);
        let run = store.get_run("old").await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Completed);
        // A run from before run trees is a root of its own.
        assert_eq!(run.lineage, RunLineage::root("old"));
    }

    #[test]
    fn a_database_from_a_newer_coordinator_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("newer.db");
        drop(SqliteRunStore::open(Some(&path)).unwrap());
        Connection::open(&path)
            .unwrap()
            .execute(
                "INSERT INTO coordinator_schema_version (version, applied_at) VALUES (?1, 0)",
                [SCHEMA_VERSION + 1],
            )
            .unwrap();
        let error = SqliteRunStore::open(Some(&path)).unwrap_err();
        assert!(error.to_string().contains("newer than"), "{error}");
    }
}
