//! Run trees on SQLite: counting runs and charging cost on the root's row.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::CoordinatorError;
use crate::run::RunTreeUsage;
use crate::store::TreeReservation;

/// Counts one more run in the tree of `root_run_id` when its caps allow it.
pub(super) fn reserve(
    connection: &mut Connection,
    root_run_id: &str,
    max_runs: u32,
    max_cost: Option<f64>,
) -> Result<TreeReservation, CoordinatorError> {
    let counted = connection
        .prepare_cached(
            "UPDATE coordinator_runs SET tree_runs = tree_runs + 1
             WHERE id = ?1 AND tree_runs < ?2 AND (?3 IS NULL OR tree_cost < ?3)",
        )
        .and_then(|mut statement| statement.execute(params![root_run_id, max_runs, max_cost]))
        .map_err(CoordinatorError::storage("counting a run in its tree"))?;
    if counted == 1 {
        return Ok(TreeReservation::Reserved);
    }
    let usage = connection
        .prepare_cached("SELECT tree_runs, tree_cost FROM coordinator_runs WHERE id = ?1")
        .and_then(|mut statement| {
            statement
                .query_row([root_run_id], |row| {
                    Ok(RunTreeUsage {
                        tree_runs: row.get(0)?,
                        tree_cost: row.get(1)?,
                    })
                })
                .optional()
        })
        .map_err(CoordinatorError::storage("reading a run tree"))?;
    Ok(match usage {
        None => TreeReservation::NoRoot,
        Some(usage) if usage.tree_runs >= max_runs => TreeReservation::TooManyRuns(usage),
        Some(usage) => TreeReservation::BudgetSpent(usage),
    })
}

/// Adds `cost` to the tree cost of `root_run_id`.
pub(super) fn charge(
    connection: &mut Connection,
    root_run_id: &str,
    cost: f64,
) -> Result<(), CoordinatorError> {
    connection
        .prepare_cached("UPDATE coordinator_runs SET tree_cost = tree_cost + ?2 WHERE id = ?1")
        .and_then(|mut statement| statement.execute(params![root_run_id, cost]))
        .map_err(CoordinatorError::storage("charging a run tree"))?;
    Ok(())
}
