//! [`PostgresRunStore`]: the coordinator's blueprints and runs in PostgreSQL.

mod approvals;
mod claims;
mod listener;
mod listing;
#[cfg(all(test, feature = "testing"))]
mod listing_plan_tests;
mod rows;
mod trees;
mod usage;

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_coordinator::{
    ApprovalDecision, BlueprintSummary, CoordinatorError, DecidedApproval, PendingApproval,
    RUN_COLUMNS, RecordedDecision, Run, RunError, RunQuery, RunStatus, RunStore, RunUsage,
    TreeReservation, WaitingApproval, encode_error, encode_value, parse_json,
};
use serde_json::Value;

use crate::database::PostgresDatabase;
use crate::error::PostgresError;
use crate::now_ms;

/// The coordinator's run store on a PostgreSQL database. Every state change is one
/// conditional statement, so any number of coordinators can share the store. Cheap to
/// clone.
#[derive(Clone)]
pub struct PostgresRunStore {
    db: PostgresDatabase,
    listener: Arc<listener::Listener>,
    shared: bool,
}

impl std::fmt::Debug for PostgresRunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresRunStore")
            .field("database", &self.db.location())
            .finish()
    }
}

/// The coordinator's error for a failed `action`.
fn storage(action: &'static str) -> impl Fn(PostgresError) -> CoordinatorError {
    move |error| error.into_coordinator(action)
}

impl PostgresRunStore {
    /// A run store on `db` (connected and migrated) that any number of coordinators
    /// share: they claim runs from it ([`SharedRunQueue`](oxydra_coordinator::SharedRunQueue)),
    /// and a coordinator starting leaves the unfinished runs of the others alone.
    pub fn new(db: PostgresDatabase) -> Self {
        Self {
            db,
            listener: Arc::new(listener::Listener::default()),
            shared: true,
        }
    }

    /// A run store on `db` used by one coordinator only, which queues runs in its own
    /// memory and fails the runs its predecessor left unfinished when it starts (as
    /// with SQLite).
    pub fn single_process(db: PostgresDatabase) -> Self {
        Self {
            shared: false,
            ..Self::new(db)
        }
    }

    /// The database it uses.
    pub fn database(&self) -> &PostgresDatabase {
        &self.db
    }

    /// A pooled connection, or the coordinator's error for `action`.
    async fn client(
        &self,
        action: &'static str,
    ) -> Result<deadpool_postgres::Object, CoordinatorError> {
        self.db.client().await.map_err(storage(action))
    }

    /// The coordinator's error for a driver error during `action`.
    fn fail(&self, action: &'static str) -> impl Fn(tokio_postgres::Error) -> CoordinatorError {
        move |error| self.db.error(action, &error).into_coordinator(action)
    }
}

#[async_trait]
impl RunStore for PostgresRunStore {
    async fn replace_blueprints(
        &self,
        blueprints: Vec<BlueprintSummary>,
    ) -> Result<(), CoordinatorError> {
        const ACTION: &str = "storing blueprints";
        let mut client = self.client(ACTION).await?;
        let tx = client.transaction().await.map_err(self.fail(ACTION))?;
        // Workers starting together replace the list one after the other.
        tx.execute("LOCK TABLE coordinator_blueprints IN EXCLUSIVE MODE", &[])
            .await
            .map_err(self.fail(ACTION))?;
        tx.execute("DELETE FROM coordinator_blueprints", &[])
            .await
            .map_err(self.fail(ACTION))?;
        let now = now_ms();
        for (position, blueprint) in blueprints.iter().enumerate() {
            let schema = blueprint.parameters_schema.as_ref().map(Value::to_string);
            tx.execute(
                "INSERT INTO coordinator_blueprints
                 (name, type, description, parameters_schema, position, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &blueprint.name,
                    &blueprint.kind.as_str(),
                    &blueprint.description,
                    &schema,
                    &i64::try_from(position).unwrap_or(i64::MAX),
                    &now,
                ],
            )
            .await
            .map_err(self.fail(ACTION))?;
        }
        tx.commit().await.map_err(self.fail(ACTION))
    }

    async fn list_blueprints(&self) -> Result<Vec<BlueprintSummary>, CoordinatorError> {
        const ACTION: &str = "listing blueprints";
        let client = self.client(ACTION).await?;
        let rows = client
            .query(
                "SELECT name, type, description, parameters_schema
                 FROM coordinator_blueprints ORDER BY position",
                &[],
            )
            .await
            .map_err(self.fail(ACTION))?;
        rows.iter().map(rows::blueprint_from_row).collect()
    }

    async fn insert_run(&self, run: Run) -> Result<(), CoordinatorError> {
        const ACTION: &str = "storing a run";
        let parameters = encode_value(run.parameters);
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached(
                "INSERT INTO coordinator_runs (id, agent_name, status, parameters, created_at,
                     root_run_id, parent_run_id, depth)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .await
            .map_err(self.fail(ACTION))?;
        client
            .execute(
                &statement,
                &[
                    &run.run_id,
                    &run.agent_name,
                    &run.status.as_str(),
                    &parameters,
                    &run.created_at,
                    &run.lineage.root_run_id,
                    &run.lineage.parent_run_id,
                    &i32::try_from(run.lineage.depth).unwrap_or(i32::MAX),
                ],
            )
            .await
            .map_err(self.fail(ACTION))?;
        // Idle workers polling for runs hear of it at once.
        client
            .execute("NOTIFY oxydra_runs", &[])
            .await
            .map_err(self.fail(ACTION))?;
        Ok(())
    }

    async fn start_run(&self, run_id: &str) -> Result<Option<Value>, CoordinatorError> {
        const ACTION: &str = "starting a run";
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached(
                "UPDATE coordinator_runs
                 SET status = 'running', started_at = coalesce(started_at, $2),
                     attempts = attempts + 1
                 WHERE id = $1 AND status = 'pending' RETURNING parameters",
            )
            .await
            .map_err(self.fail(ACTION))?;
        let row = client
            .query_opt(&statement, &[&run_id, &now_ms()])
            .await
            .map_err(self.fail(ACTION))?;
        row.map(|row| {
            let text: &str = row.try_get(0).map_err(self.fail(ACTION))?;
            parse_json("run parameters", text)
        })
        .transpose()
    }

    async fn finish_run(
        &self,
        run_id: &str,
        status: RunStatus,
        result: Option<Value>,
        error: Option<RunError>,
    ) -> Result<bool, CoordinatorError> {
        const ACTION: &str = "ending a run";
        let result = result.map(encode_value);
        let error = error.map(encode_error).transpose()?;
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached(
                "UPDATE coordinator_runs
                 SET status = $2, result = $3, error = $4, finished_at = $5,
                     holder = NULL, lease_expires_at = NULL
                 WHERE id = $1 AND status IN ('pending', 'running', 'waiting_approval')",
            )
            .await
            .map_err(self.fail(ACTION))?;
        let changed = client
            .execute(
                &statement,
                &[&run_id, &status.as_str(), &result, &error, &now_ms()],
            )
            .await
            .map_err(self.fail(ACTION))?;
        Ok(changed == 1)
    }

    async fn get_run(&self, run_id: &str) -> Result<Option<Run>, CoordinatorError> {
        const ACTION: &str = "reading a run";
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM coordinator_runs WHERE id = $1"
            ))
            .await
            .map_err(self.fail(ACTION))?;
        let row = client
            .query_opt(&statement, &[&run_id])
            .await
            .map_err(self.fail(ACTION))?;
        row.map(|row| rows::run_row(&row).map_err(self.fail(ACTION))?.decode())
            .transpose()
    }

    async fn list_runs(&self, query: RunQuery) -> Result<Vec<Run>, CoordinatorError> {
        self.runs(&query).await
    }

    async fn waiting_approvals(
        &self,
        limit: u32,
    ) -> Result<Vec<WaitingApproval>, CoordinatorError> {
        self.waiting(limit).await
    }

    async fn record_usage(&self, run_id: &str, usage: RunUsage) -> Result<bool, CoordinatorError> {
        self.record_usage_row(run_id, usage).await
    }

    async fn reserve_tree_run(
        &self,
        root_run_id: &str,
        max_runs: u32,
        max_cost: Option<f64>,
    ) -> Result<TreeReservation, CoordinatorError> {
        self.reserve(root_run_id, max_runs, max_cost).await
    }

    async fn charge_tree(&self, root_run_id: &str, cost: f64) -> Result<(), CoordinatorError> {
        self.charge(root_run_id, cost).await
    }

    fn shared_queue(&self) -> Option<Arc<dyn oxydra_coordinator::SharedRunQueue>> {
        self.shared.then(|| self.as_shared())
    }

    async fn suspend_run(
        &self,
        run_id: &str,
        pending: Vec<PendingApproval>,
    ) -> Result<bool, CoordinatorError> {
        self.suspend(run_id, &pending).await
    }

    async fn pending_approvals(
        &self,
        run_id: &str,
    ) -> Result<Vec<PendingApproval>, CoordinatorError> {
        self.pending(run_id).await
    }

    async fn decide_approval(
        &self,
        run_id: &str,
        approval_id: &str,
        decision: ApprovalDecision,
        now: i64,
    ) -> Result<RecordedDecision, CoordinatorError> {
        self.decide(run_id, approval_id, decision, now).await
    }

    async fn take_decisions(&self, run_id: &str) -> Result<Vec<DecidedApproval>, CoordinatorError> {
        self.take(run_id).await
    }

    async fn expire_approvals(&self, now: i64) -> Result<Vec<String>, CoordinatorError> {
        self.expire(now).await
    }

    async fn recover_interrupted(&self) -> Result<usize, CoordinatorError> {
        const ACTION: &str = "recovering interrupted runs";
        let error = encode_error(RunError::interrupted())?;
        let client = self.client(ACTION).await?;
        let changed = client
            .execute(
                "UPDATE coordinator_runs
                 SET status = 'failed', error = $1, finished_at = $2,
                     holder = NULL, lease_expires_at = NULL
                 WHERE status IN ('pending', 'running')",
                &[&error, &now_ms()],
            )
            .await
            .map_err(self.fail(ACTION))?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }
}
