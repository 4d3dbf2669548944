//! What a person lists from SQLite: pages of runs (newest first, filtered) and the
//! approvals that wait across runs (oldest first).

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row, params_from_iter};

use crate::approval_row::{APPROVAL_COLUMN_COUNT, APPROVAL_COLUMNS, ApprovalRow};
use crate::error::CoordinatorError;
use crate::run::Run;
use crate::run_query::{RunQuery, WaitingApproval};
use crate::run_row::{RUN_COLUMNS, RunRow, UsageColumns};

/// A run row from a row of [`RUN_COLUMNS`].
pub(super) fn run_row(row: &Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: row.get(0)?,
        agent_name: row.get(1)?,
        status: row.get(2)?,
        parameters: row.get(3)?,
        result: row.get(4)?,
        error: row.get(5)?,
        created_at: row.get(6)?,
        started_at: row.get(7)?,
        finished_at: row.get(8)?,
        root_run_id: row.get(9)?,
        parent_run_id: row.get(10)?,
        depth: row.get(11)?,
        tree_runs: row.get(12)?,
        tree_cost: row.get(13)?,
        usage: UsageColumns {
            turns: row.get(14)?,
            input_tokens: row.get(15)?,
            output_tokens: row.get(16)?,
            cost: row.get(17)?,
        },
    })
}

/// The statement and arguments that select `query`'s runs, newest first: each filter
/// and the keyset cursor as a range of one index of migration 5, walked in order.
pub(super) fn runs_statement(query: &RunQuery) -> (String, Vec<SqlValue>) {
    let mut conditions = Vec::new();
    let mut args: Vec<SqlValue> = Vec::new();
    if let Some(status) = query.status {
        args.push(SqlValue::Text(status.as_str().to_owned()));
        conditions.push(format!("status = ?{}", args.len()));
    }
    if let Some(agent) = &query.agent {
        args.push(SqlValue::Text(agent.clone()));
        conditions.push(format!("agent_name = ?{}", args.len()));
    }
    if let Some(since) = query.since {
        args.push(SqlValue::Integer(since));
        conditions.push(format!("created_at >= ?{}", args.len()));
    }
    if let Some(after) = &query.after {
        args.push(SqlValue::Integer(after.created_at));
        let at = args.len();
        args.push(SqlValue::Text(after.run_id.clone()));
        let id = args.len();
        conditions.push(format!("(created_at, id) < (?{at}, ?{id})"));
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conditions.join(" AND "))
    };
    args.push(SqlValue::Integer(i64::from(query.clamped_limit())));
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM coordinator_runs {filter}
         ORDER BY created_at DESC, id DESC LIMIT ?{}",
        args.len()
    );
    (sql, args)
}

/// The runs `query` selects, newest first.
pub(super) fn runs(
    connection: &Connection,
    query: &RunQuery,
) -> Result<Vec<Run>, CoordinatorError> {
    const ACTION: &str = "listing runs";
    let (sql, args) = runs_statement(query);
    let mut statement = connection
        .prepare_cached(&sql)
        .map_err(CoordinatorError::storage(ACTION))?;
    let rows = statement
        .query_map(params_from_iter(args), run_row)
        .map_err(CoordinatorError::storage(ACTION))?;
    let mut runs = Vec::new();
    for row in rows {
        runs.push(row.map_err(CoordinatorError::storage(ACTION))?.decode()?);
    }
    Ok(runs)
}

/// The statement selecting the undecided approvals of waiting runs, oldest first (at
/// most `?1`), walking the partial index of undecided requests in order.
pub(super) fn waiting_statement() -> String {
    format!(
        "SELECT {APPROVAL_COLUMNS}, (SELECT agent_name FROM coordinator_runs r
                                     WHERE r.id = a.run_id)
         FROM coordinator_run_approvals a
         WHERE a.decision IS NULL
           AND EXISTS (SELECT 1 FROM coordinator_runs w
                       WHERE w.id = a.run_id AND w.status = 'waiting_approval')
         ORDER BY a.requested_at, a.approval_id LIMIT ?1"
    )
}

/// The undecided approvals of waiting runs, oldest first, at most `limit`.
pub(super) fn waiting_approvals(
    connection: &Connection,
    limit: u32,
) -> Result<Vec<WaitingApproval>, CoordinatorError> {
    const ACTION: &str = "listing waiting approvals";
    let mut statement = connection
        .prepare_cached(&waiting_statement())
        .map_err(CoordinatorError::storage(ACTION))?;
    let rows = statement
        .query_map([i64::from(limit)], |row| {
            Ok((
                super::approvals::approval_row(row)?,
                row.get::<_, String>(APPROVAL_COLUMN_COUNT)?,
            ))
        })
        .map_err(CoordinatorError::storage(ACTION))?;
    let mut waiting = Vec::new();
    for row in rows {
        let (row, agent_name): (ApprovalRow, String) =
            row.map_err(CoordinatorError::storage(ACTION))?;
        waiting.push(WaitingApproval {
            run_id: row.run_id.clone(),
            agent_name,
            approval: row.pending()?,
        });
    }
    Ok(waiting)
}
