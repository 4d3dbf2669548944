//! Decoding run and blueprint rows.

use oxydra_coordinator::{
    BlueprintKind, BlueprintSummary, CoordinatorError, Run, RunError, RunLineage, RunStatus,
    RunTreeUsage,
};
use serde_json::Value;
use tokio_postgres::Row;

/// The columns [`run_from_row`] reads, in order.
pub(super) const RUN_COLUMNS: &str = "id, agent_name, status, parameters, result, error, \
    created_at, started_at, finished_at, COALESCE(root_run_id, id), parent_run_id, depth, \
    tree_runs, tree_cost";

/// Parses stored JSON, naming `what` when it is corrupt.
pub(super) fn parse_json(what: &'static str, text: &str) -> Result<Value, CoordinatorError> {
    serde_json::from_str(text).map_err(|error| CoordinatorError::CorruptRow {
        what,
        detail: error.to_string(),
    })
}

/// A run from a row of [`RUN_COLUMNS`]; the outer error is the driver's, the inner a
/// corrupt row.
pub(super) fn run_from_row(
    row: &Row,
) -> Result<Result<Run, CoordinatorError>, tokio_postgres::Error> {
    let id: String = row.try_get(0)?;
    let agent_name: String = row.try_get(1)?;
    let status: String = row.try_get(2)?;
    let parameters: String = row.try_get(3)?;
    let result: Option<String> = row.try_get(4)?;
    let error: Option<String> = row.try_get(5)?;
    let created_at: i64 = row.try_get(6)?;
    let started_at: Option<i64> = row.try_get(7)?;
    let finished_at: Option<i64> = row.try_get(8)?;
    let root_run_id: String = row.try_get(9)?;
    let parent_run_id: Option<String> = row.try_get(10)?;
    let depth: i32 = row.try_get(11)?;
    let tree_runs: i32 = row.try_get(12)?;
    let tree_cost: f64 = row.try_get(13)?;
    Ok((|| {
        let status = RunStatus::parse(&status).ok_or_else(|| CoordinatorError::CorruptRow {
            what: "run",
            detail: format!("`{id}` has status `{status}`"),
        })?;
        let error = error
            .map(|text| {
                serde_json::from_str::<RunError>(&text).map_err(|error| {
                    CoordinatorError::CorruptRow {
                        what: "run error",
                        detail: error.to_string(),
                    }
                })
            })
            .transpose()?;
        Ok(Run {
            parameters: parse_json("run parameters", &parameters)?,
            result: result
                .map(|text| parse_json("run result", &text))
                .transpose()?,
            run_id: id,
            agent_name,
            status,
            error,
            created_at,
            started_at,
            finished_at,
            lineage: RunLineage {
                root_run_id,
                parent_run_id,
                depth: u32::try_from(depth).unwrap_or_default(),
            },
            tree: RunTreeUsage {
                tree_runs: u32::try_from(tree_runs).unwrap_or_default(),
                tree_cost,
            },
        })
    })())
}

/// A blueprint summary from `name, type, description, parameters_schema`.
pub(super) fn blueprint_from_row(row: &Row) -> Result<BlueprintSummary, CoordinatorError> {
    let driver = |error: tokio_postgres::Error| CoordinatorError::CorruptRow {
        what: "blueprint",
        detail: error.to_string(),
    };
    let name: String = row.try_get(0).map_err(driver)?;
    let kind: String = row.try_get(1).map_err(driver)?;
    let description: String = row.try_get(2).map_err(driver)?;
    let schema: Option<String> = row.try_get(3).map_err(driver)?;
    let kind = BlueprintKind::parse(&kind).ok_or_else(|| CoordinatorError::CorruptRow {
        what: "blueprint",
        detail: format!("`{name}` has type `{kind}`"),
    })?;
    Ok(BlueprintSummary {
        name,
        kind,
        description,
        parameters_schema: schema
            .map(|text| parse_json("blueprint schema", &text))
            .transpose()?,
    })
}
