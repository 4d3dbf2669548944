//! [`SharedRunQueue`] for [`PostgresRunStore`]: workers of every process claim runs
//! with `FOR UPDATE SKIP LOCKED`, under leases recorded on the run row.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use oxydra_coordinator::{
    ClaimState, ClaimedRun, CoordinatorError, RunError, RunStatus, SharedRunQueue, encode_error,
    encode_value,
};
use oxydra_memory::lease_expiry;
use serde_json::Value;

use super::PostgresRunStore;
use super::listener::CHANNEL;
use super::rows::claimed_row;
use crate::now_ms;

#[async_trait]
impl SharedRunQueue for PostgresRunStore {
    async fn claim_next(
        &self,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<ClaimedRun>, CoordinatorError> {
        const ACTION: &str = "claiming a run";
        let now = now_ms();
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached(
                "UPDATE coordinator_runs AS run
                 SET status = 'running', started_at = coalesce(run.started_at, $3),
                     holder = $1, lease_expires_at = $2, attempts = run.attempts + 1
                 FROM (
                     SELECT id FROM coordinator_runs
                     WHERE status = 'pending'
                        OR (status = 'running' AND lease_expires_at < $3)
                     ORDER BY created_at, seq
                     LIMIT 1
                     FOR UPDATE SKIP LOCKED
                 ) AS next
                 WHERE run.id = next.id
                 RETURNING run.id, run.agent_name, run.parameters, run.attempts,
                           run.cancel_requested, run.used_turns, run.used_input_tokens,
                           run.used_output_tokens, run.used_cost",
            )
            .await
            .map_err(self.fail(ACTION))?;
        let row = client
            .query_opt(&statement, &[&holder, &lease_expiry(now, ttl), &now])
            .await
            .map_err(self.fail(ACTION))?;
        row.map(|row| claimed_row(&row).map_err(self.fail(ACTION))?.decode())
            .transpose()
    }

    async fn renew_claim(
        &self,
        run_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<ClaimState, CoordinatorError> {
        const ACTION: &str = "renewing a run's claim";
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached(
                "UPDATE coordinator_runs SET lease_expires_at = $3
                 WHERE id = $1 AND holder = $2 AND status = 'running'
                 RETURNING cancel_requested",
            )
            .await
            .map_err(self.fail(ACTION))?;
        let row = client
            .query_opt(
                &statement,
                &[&run_id, &holder, &lease_expiry(now_ms(), ttl)],
            )
            .await
            .map_err(self.fail(ACTION))?;
        Ok(match row {
            None => ClaimState::Lost,
            Some(row) => {
                if row.try_get::<_, bool>(0).map_err(self.fail(ACTION))? {
                    ClaimState::CancelRequested
                } else {
                    ClaimState::Held
                }
            }
        })
    }

    async fn finish_claimed(
        &self,
        run_id: &str,
        holder: &str,
        status: RunStatus,
        result: Option<Value>,
        error: Option<RunError>,
    ) -> Result<bool, CoordinatorError> {
        const ACTION: &str = "ending a claimed run";
        let result = result.map(encode_value);
        let error = error.map(encode_error).transpose()?;
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached(
                "UPDATE coordinator_runs
                 SET status = $3, result = $4, error = $5, finished_at = $6,
                     holder = NULL, lease_expires_at = NULL
                 WHERE id = $1 AND holder = $2 AND status = 'running'",
            )
            .await
            .map_err(self.fail(ACTION))?;
        let changed = client
            .execute(
                &statement,
                &[
                    &run_id,
                    &holder,
                    &status.as_str(),
                    &result,
                    &error,
                    &now_ms(),
                ],
            )
            .await
            .map_err(self.fail(ACTION))?;
        Ok(changed == 1)
    }

    async fn release_claim(&self, run_id: &str, holder: &str) -> Result<(), CoordinatorError> {
        const ACTION: &str = "releasing a run's claim";
        let client = self.client(ACTION).await?;
        client
            .execute(
                "UPDATE coordinator_runs SET holder = NULL, lease_expires_at = 0
                 WHERE id = $1 AND holder = $2 AND status = 'running'",
                &[&run_id, &holder],
            )
            .await
            .map_err(self.fail(ACTION))?;
        client
            .execute(&format!("NOTIFY {CHANNEL}"), &[])
            .await
            .map_err(self.fail(ACTION))?;
        Ok(())
    }

    /// A pending run, or one waiting for approval (no worker holds it), is ended at
    /// once; a running one is flagged for its holder.
    async fn request_cancel(&self, run_id: &str) -> Result<bool, CoordinatorError> {
        const ACTION: &str = "cancelling a run";
        let error = encode_error(RunError::cancelled())?;
        let client = self.client(ACTION).await?;
        let ended = client
            .execute(
                "UPDATE coordinator_runs SET status = 'cancelled', error = $2, finished_at = $3
                 WHERE id = $1 AND status IN ('pending', 'waiting_approval')",
                &[&run_id, &error, &now_ms()],
            )
            .await
            .map_err(self.fail(ACTION))?;
        if ended == 1 {
            return Ok(true);
        }
        let flagged = client
            .execute(
                "UPDATE coordinator_runs SET cancel_requested = TRUE
                 WHERE id = $1 AND status = 'running'",
                &[&run_id],
            )
            .await
            .map_err(self.fail(ACTION))?;
        Ok(flagged == 1)
    }

    async fn wait_for_work(&self, timeout: Duration) {
        let notify = self.listener.notified(&self.db);
        let _ = tokio::time::timeout(timeout, notify.notified()).await;
    }
}

impl PostgresRunStore {
    /// This store as the queue shared by every coordinator on its database.
    pub(super) fn as_shared(&self) -> Arc<dyn SharedRunQueue> {
        Arc::new(self.clone())
    }
}
