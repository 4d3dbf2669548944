//! What a person lists from PostgreSQL: pages of runs (newest first, filtered) and
//! the approvals that wait across runs (oldest first).

use oxydra_coordinator::{
    APPROVAL_COLUMN_COUNT, APPROVAL_COLUMNS, CoordinatorError, RUN_COLUMNS, Run, RunQuery,
    WaitingApproval,
};
use tokio_postgres::types::ToSql;

use super::PostgresRunStore;
use super::rows;

/// The owned values `GET /runs`'s statement binds besides the query's own.
pub(super) struct RunArgs {
    status: Option<String>,
    limit: i64,
    after_at: Option<i64>,
    after_id: Option<String>,
}

impl RunArgs {
    /// The values of `query`.
    pub(super) fn of(query: &RunQuery) -> Self {
        Self {
            status: query.status.map(|status| status.as_str().to_owned()),
            limit: i64::from(query.clamped_limit()),
            after_at: query.after.as_ref().map(|after| after.created_at),
            after_id: query.after.as_ref().map(|after| after.run_id.clone()),
        }
    }
}

/// The statement selecting `query`'s runs, newest first, and its arguments: each
/// filter and the keyset cursor a range of one index of runs migration 5, read in
/// order.
pub(super) fn runs_statement<'a>(
    query: &'a RunQuery,
    owned: &'a RunArgs,
) -> (String, Vec<&'a (dyn ToSql + Sync)>) {
    let mut conditions = Vec::new();
    let mut args: Vec<&(dyn ToSql + Sync)> = Vec::new();
    if let Some(status) = &owned.status {
        args.push(status);
        conditions.push(format!("status = ${}", args.len()));
    }
    if let Some(agent) = &query.agent {
        args.push(agent);
        conditions.push(format!("agent_name = ${}", args.len()));
    }
    if let Some(since) = &query.since {
        args.push(since);
        conditions.push(format!("created_at >= ${}", args.len()));
    }
    if let (Some(at), Some(id)) = (&owned.after_at, &owned.after_id) {
        args.push(at);
        let at = args.len();
        args.push(id);
        let id = args.len();
        conditions.push(format!("(created_at, id) < (${at}, ${id})"));
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conditions.join(" AND "))
    };
    args.push(&owned.limit);
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM coordinator_runs {filter}
         ORDER BY created_at DESC, id DESC LIMIT ${}",
        args.len()
    );
    (sql, args)
}

impl PostgresRunStore {
    /// See `RunStore::list_runs`.
    pub(super) async fn runs(&self, query: &RunQuery) -> Result<Vec<Run>, CoordinatorError> {
        const ACTION: &str = "listing runs";
        let owned = RunArgs::of(query);
        let (sql, args) = runs_statement(query, &owned);
        let client = self.client(ACTION).await?;
        let found = client.query(&sql, &args).await.map_err(self.fail(ACTION))?;
        found
            .iter()
            .map(|row| rows::run_row(row).map_err(self.fail(ACTION))?.decode())
            .collect()
    }

    /// See `RunStore::waiting_approvals`.
    pub(super) async fn waiting(
        &self,
        limit: u32,
    ) -> Result<Vec<WaitingApproval>, CoordinatorError> {
        const ACTION: &str = "listing waiting approvals";
        let client = self.client(ACTION).await?;
        let sql = format!(
            "SELECT {APPROVAL_COLUMNS}, (SELECT agent_name FROM coordinator_runs r
                                         WHERE r.id = a.run_id)
             FROM coordinator_run_approvals a
             WHERE a.decision IS NULL
               AND EXISTS (SELECT 1 FROM coordinator_runs r
                           WHERE r.id = a.run_id AND r.status = 'waiting_approval')
             ORDER BY a.requested_at, a.approval_id LIMIT $1"
        );
        let found = client
            .query(&sql, &[&i64::from(limit)])
            .await
            .map_err(self.fail(ACTION))?;
        let approvals = self.approval_rows(ACTION, &found)?;
        let mut waiting = Vec::new();
        for (row, approval) in found.iter().zip(approvals) {
            let agent_name: String = row
                .try_get(APPROVAL_COLUMN_COUNT)
                .map_err(self.fail(ACTION))?;
            waiting.push(WaitingApproval {
                run_id: approval.run_id.clone(),
                agent_name,
                approval: approval.pending()?,
            });
        }
        Ok(waiting)
    }
}
