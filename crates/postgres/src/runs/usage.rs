//! A run's usage on PostgreSQL: recorded in the run's row in one statement, each
//! counter only growing, so a worker that lost the run late cannot lower what its
//! successor recorded.

use oxydra_coordinator::{CoordinatorError, RunUsage, UsageColumns};

use super::PostgresRunStore;

impl PostgresRunStore {
    /// Records `usage` on running run `run_id`; `false` when it is not running.
    pub(super) async fn record_usage_row(
        &self,
        run_id: &str,
        usage: RunUsage,
    ) -> Result<bool, CoordinatorError> {
        const ACTION: &str = "recording a run's usage";
        let columns = UsageColumns::encode(usage);
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached(
                "UPDATE coordinator_runs
                 SET used_turns = GREATEST(used_turns, $2),
                     used_input_tokens = GREATEST(used_input_tokens, $3),
                     used_output_tokens = GREATEST(used_output_tokens, $4),
                     used_cost = GREATEST(used_cost, $5)
                 WHERE id = $1 AND status = 'running'",
            )
            .await
            .map_err(self.fail(ACTION))?;
        let changed = client
            .execute(
                &statement,
                &[
                    &run_id,
                    &columns.turns,
                    &columns.input_tokens,
                    &columns.output_tokens,
                    &columns.cost,
                ],
            )
            .await
            .map_err(self.fail(ACTION))?;
        Ok(changed == 1)
    }
}
