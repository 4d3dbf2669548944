//! Run trees on PostgreSQL: counting runs and charging cost on the root's row, each in
//! one conditional statement, so coordinators sharing the store never pass a cap
//! together.

use oxydra_coordinator::{CoordinatorError, RunTreeUsage, TreeReservation};

use super::PostgresRunStore;

impl PostgresRunStore {
    /// Counts one more run in the tree of `root_run_id` when its caps allow it.
    pub(super) async fn reserve(
        &self,
        root_run_id: &str,
        max_runs: u32,
        max_cost: Option<f64>,
    ) -> Result<TreeReservation, CoordinatorError> {
        const ACTION: &str = "counting a run in its tree";
        let max_runs = i32::try_from(max_runs).unwrap_or(i32::MAX);
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached(
                "UPDATE coordinator_runs SET tree_runs = tree_runs + 1
                 WHERE id = $1 AND tree_runs < $2
                     AND ($3::DOUBLE PRECISION IS NULL OR tree_cost < $3)",
            )
            .await
            .map_err(self.fail(ACTION))?;
        let counted = client
            .execute(&statement, &[&root_run_id, &max_runs, &max_cost])
            .await
            .map_err(self.fail(ACTION))?;
        if counted == 1 {
            return Ok(TreeReservation::Reserved);
        }
        let row = client
            .query_opt(
                "SELECT tree_runs, tree_cost FROM coordinator_runs WHERE id = $1",
                &[&root_run_id],
            )
            .await
            .map_err(self.fail(ACTION))?;
        let Some(row) = row else {
            return Ok(TreeReservation::NoRoot);
        };
        let tree_runs: i32 = row.try_get(0).map_err(self.fail(ACTION))?;
        let usage = RunTreeUsage {
            tree_runs: u32::try_from(tree_runs).unwrap_or_default(),
            tree_cost: row.try_get(1).map_err(self.fail(ACTION))?,
        };
        Ok(if tree_runs >= max_runs {
            TreeReservation::TooManyRuns(usage)
        } else {
            TreeReservation::BudgetSpent(usage)
        })
    }

    /// Adds `cost` to the tree cost of `root_run_id`.
    pub(super) async fn charge(
        &self,
        root_run_id: &str,
        cost: f64,
    ) -> Result<(), CoordinatorError> {
        const ACTION: &str = "charging a run tree";
        let client = self.client(ACTION).await?;
        let statement = client
            .prepare_cached("UPDATE coordinator_runs SET tree_cost = tree_cost + $2 WHERE id = $1")
            .await
            .map_err(self.fail(ACTION))?;
        client
            .execute(&statement, &[&root_run_id, &cost])
            .await
            .map_err(self.fail(ACTION))?;
        Ok(())
    }
}
