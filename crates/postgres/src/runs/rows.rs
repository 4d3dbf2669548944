//! Reading run and blueprint rows into the coordinator's shared row types, which
//! decode them ([`RunRow`], [`BlueprintRow`], [`ClaimedRow`]).

use oxydra_coordinator::{
    BlueprintRow, BlueprintSummary, ClaimedRow, CoordinatorError, RunRow, UsageColumns,
};
use tokio_postgres::Row;

/// A run row from a row of [`RUN_COLUMNS`](oxydra_coordinator::RUN_COLUMNS).
pub(super) fn run_row(row: &Row) -> Result<RunRow, tokio_postgres::Error> {
    Ok(RunRow {
        id: row.try_get(0)?,
        agent_name: row.try_get(1)?,
        status: row.try_get(2)?,
        parameters: row.try_get(3)?,
        result: row.try_get(4)?,
        error: row.try_get(5)?,
        created_at: row.try_get(6)?,
        started_at: row.try_get(7)?,
        finished_at: row.try_get(8)?,
        root_run_id: row.try_get(9)?,
        parent_run_id: row.try_get(10)?,
        depth: i64::from(row.try_get::<_, i32>(11)?),
        tree_runs: i64::from(row.try_get::<_, i32>(12)?),
        tree_cost: row.try_get(13)?,
        usage: usage_columns(row, 14)?,
    })
}

/// The [`USAGE_COLUMNS`](oxydra_coordinator::USAGE_COLUMNS) of `row`, from index `first`.
fn usage_columns(row: &Row, first: usize) -> Result<UsageColumns, tokio_postgres::Error> {
    Ok(UsageColumns {
        turns: row.try_get(first)?,
        input_tokens: row.try_get(first + 1)?,
        output_tokens: row.try_get(first + 2)?,
        cost: row.try_get(first + 3)?,
    })
}

/// A claimed run row from `id, agent_name, parameters, attempts, cancel_requested` and
/// the usage columns.
pub(super) fn claimed_row(row: &Row) -> Result<ClaimedRow, tokio_postgres::Error> {
    Ok(ClaimedRow {
        id: row.try_get(0)?,
        agent_name: row.try_get(1)?,
        parameters: row.try_get(2)?,
        attempts: i64::from(row.try_get::<_, i32>(3)?),
        cancel_requested: row.try_get(4)?,
        usage: usage_columns(row, 5)?,
    })
}

/// A blueprint summary from `name, type, description, parameters_schema`.
pub(super) fn blueprint_from_row(row: &Row) -> Result<BlueprintSummary, CoordinatorError> {
    let driver = |error: tokio_postgres::Error| CoordinatorError::CorruptRow {
        what: "blueprint",
        detail: error.to_string(),
    };
    BlueprintRow {
        name: row.try_get(0).map_err(driver)?,
        kind: row.try_get(1).map_err(driver)?,
        description: row.try_get(2).map_err(driver)?,
        parameters_schema: row.try_get(3).map_err(driver)?,
    }
    .decode()
}
