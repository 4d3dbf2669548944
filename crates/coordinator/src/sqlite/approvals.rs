//! The approvals of waiting runs in SQLite (`coordinator_run_approvals`): each
//! operation one savepoint (the job may run inside a group-commit transaction), so a
//! run's status and its requests always change together.

use oxydra_runtime::{ApprovalDecision, EXPIRED_REASON, PendingApproval};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::approval_row::{
    APPROVAL_COLUMNS, ApprovalRow, DecidedApproval, RecordedDecision, encode_decision,
};
use crate::error::CoordinatorError;
use crate::run::now_millis;

/// An approval row from a row of [`APPROVAL_COLUMNS`].
pub(super) fn approval_row(row: &Row<'_>) -> rusqlite::Result<ApprovalRow> {
    Ok(ApprovalRow {
        approval_id: row.get(0)?,
        run_id: row.get(1)?,
        call_id: row.get(2)?,
        tool: row.get(3)?,
        arguments: row.get(4)?,
        tier: row.get(5)?,
        scope: row.get(6)?,
        requested_at: row.get(7)?,
        expires_at: row.get(8)?,
        decision: row.get(9)?,
        reason: row.get(10)?,
    })
}

/// The approval rows `sql` selects (its columns [`APPROVAL_COLUMNS`]) with `args`.
fn select(
    connection: &Connection,
    sql: &str,
    args: impl rusqlite::Params,
) -> Result<Vec<ApprovalRow>, CoordinatorError> {
    let action = "reading approvals";
    let mut statement = connection
        .prepare_cached(sql)
        .map_err(CoordinatorError::storage(action))?;
    let rows = statement
        .query_map(args, approval_row)
        .map_err(CoordinatorError::storage(action))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(CoordinatorError::storage(action))
}

/// Running run `run_id` to `waiting_approval` with its requests `pending`.
pub(super) fn suspend(
    connection: &mut Connection,
    run_id: &str,
    pending: &[PendingApproval],
) -> Result<bool, CoordinatorError> {
    let action = "suspending a run for approval";
    let rows = pending
        .iter()
        .map(|approval| ApprovalRow::encode(run_id, approval))
        .collect::<Result<Vec<_>, _>>()?;
    let tx = connection
        .savepoint()
        .map_err(CoordinatorError::storage(action))?;
    let changed = tx
        .execute(
            "UPDATE coordinator_runs SET status = 'waiting_approval'
             WHERE id = ?1 AND status = 'running'",
            [run_id],
        )
        .map_err(CoordinatorError::storage(action))?;
    if changed == 0 {
        return Ok(false);
    }
    for row in rows {
        tx.execute(
            "INSERT INTO coordinator_run_approvals (approval_id, run_id, call_id, tool,
                 arguments, tier, scope, requested_at, expires_at, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                row.approval_id,
                row.run_id,
                row.call_id,
                row.tool,
                row.arguments,
                row.tier,
                row.scope,
                row.requested_at,
                row.expires_at,
                row.reason
            ],
        )
        .map_err(CoordinatorError::storage(action))?;
    }
    tx.commit().map_err(CoordinatorError::storage(action))?;
    Ok(true)
}

/// The undecided requests of run `run_id` while it waits, oldest first.
pub(super) fn pending(
    connection: &mut Connection,
    run_id: &str,
) -> Result<Vec<PendingApproval>, CoordinatorError> {
    select(
        connection,
        &format!(
            "SELECT {APPROVAL_COLUMNS} FROM coordinator_run_approvals
             WHERE run_id = ?1 AND decision IS NULL
               AND run_id IN (SELECT id FROM coordinator_runs
                              WHERE id = ?1 AND status = 'waiting_approval')
             ORDER BY requested_at, approval_id"
        ),
        [run_id],
    )?
    .iter()
    .map(ApprovalRow::pending)
    .collect()
}

/// Moves run `run_id` back to `pending` when it waits and has no undecided request
/// left; whether it did.
fn requeue_if_decided(tx: &Connection, run_id: &str) -> Result<bool, CoordinatorError> {
    let changed = tx
        .execute(
            "UPDATE coordinator_runs SET status = 'pending'
             WHERE id = ?1 AND status = 'waiting_approval'
               AND NOT EXISTS (SELECT 1 FROM coordinator_run_approvals
                               WHERE run_id = ?1 AND decision IS NULL)",
            [run_id],
        )
        .map_err(CoordinatorError::storage("queuing a decided run"))?;
    Ok(changed == 1)
}

/// Records `decision` on approval `approval_id` of run `run_id` (see
/// `RunStore::decide_approval`).
pub(super) fn decide(
    connection: &mut Connection,
    run_id: &str,
    approval_id: &str,
    decision: &ApprovalDecision,
    now: i64,
) -> Result<RecordedDecision, CoordinatorError> {
    let action = "deciding an approval";
    let tx = connection
        .savepoint()
        .map_err(CoordinatorError::storage(action))?;
    let status: Option<String> = tx
        .query_row(
            "SELECT status FROM coordinator_runs WHERE id = ?1",
            [run_id],
            |row| row.get(0),
        )
        .optional()
        .map_err(CoordinatorError::storage(action))?;
    let Some(status) = status else {
        return Err(CoordinatorError::RunNotFound {
            run_id: run_id.to_owned(),
        });
    };
    let row = select(
        &tx,
        &format!(
            "SELECT {APPROVAL_COLUMNS} FROM coordinator_run_approvals
             WHERE run_id = ?1 AND approval_id = ?2"
        ),
        [run_id, approval_id],
    )?
    .into_iter()
    .next()
    .ok_or_else(|| CoordinatorError::ApprovalNotFound {
        run_id: run_id.to_owned(),
        approval_id: approval_id.to_owned(),
    })?;
    row.check_decidable(&status)?;
    let approval = row.pending()?;
    let effective = decision.clone().effective(&approval, now);
    let text = encode_decision(&effective)?;
    tx.execute(
        "UPDATE coordinator_run_approvals SET decision = ?2, decided_at = ?3
         WHERE approval_id = ?1 AND decision IS NULL",
        params![approval_id, text, now],
    )
    .map_err(CoordinatorError::storage(action))?;
    let requeued = requeue_if_decided(&tx, run_id)?;
    tx.commit().map_err(CoordinatorError::storage(action))?;
    let decision = ApprovalRow {
        decision: Some(text),
        ..row
    }
    .decision()?
    .unwrap_or(effective);
    Ok(RecordedDecision {
        approval,
        decision,
        requeued,
    })
}

/// The decided requests of run `run_id` not handed out yet, marked handed out.
pub(super) fn take(
    connection: &mut Connection,
    run_id: &str,
) -> Result<Vec<DecidedApproval>, CoordinatorError> {
    let action = "handing out approval decisions";
    let tx = connection
        .savepoint()
        .map_err(CoordinatorError::storage(action))?;
    let rows = select(
        &tx,
        &format!(
            "SELECT {APPROVAL_COLUMNS} FROM coordinator_run_approvals
             WHERE run_id = ?1 AND decision IS NOT NULL AND delivered_at IS NULL
             ORDER BY requested_at, approval_id"
        ),
        [run_id],
    )?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    tx.execute(
        "UPDATE coordinator_run_approvals SET delivered_at = ?2
         WHERE run_id = ?1 AND decision IS NOT NULL AND delivered_at IS NULL",
        params![run_id, now_millis()],
    )
    .map_err(CoordinatorError::storage(action))?;
    tx.commit().map_err(CoordinatorError::storage(action))?;
    let mut decided = Vec::with_capacity(rows.len());
    for row in &rows {
        if let Some(approval) = row.decided()? {
            decided.push(approval);
        }
    }
    Ok(decided)
}

/// Denies the lapsed requests of waiting runs; the runs queued again.
pub(super) fn expire(
    connection: &mut Connection,
    now: i64,
) -> Result<Vec<String>, CoordinatorError> {
    let action = "expiring approvals";
    let tx = connection
        .savepoint()
        .map_err(CoordinatorError::storage(action))?;
    let rows = select(
        &tx,
        &format!(
            "SELECT {APPROVAL_COLUMNS} FROM coordinator_run_approvals
             WHERE decision IS NULL AND expires_at <= ?1
               AND run_id IN (SELECT id FROM coordinator_runs
                              WHERE status = 'waiting_approval')
             ORDER BY requested_at, approval_id"
        ),
        [now],
    )?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let denial = encode_decision(&ApprovalDecision::Deny {
        reason: Some(EXPIRED_REASON.to_owned()),
    })?;
    let mut runs: Vec<String> = Vec::new();
    for row in &rows {
        tx.execute(
            "UPDATE coordinator_run_approvals SET decision = ?2, decided_at = ?3
             WHERE approval_id = ?1 AND decision IS NULL",
            params![row.approval_id, denial, now],
        )
        .map_err(CoordinatorError::storage(action))?;
        if !runs.contains(&row.run_id) {
            runs.push(row.run_id.clone());
        }
    }
    let mut requeued = Vec::new();
    for run_id in runs {
        if requeue_if_decided(&tx, &run_id)? {
            requeued.push(run_id);
        }
    }
    tx.commit().map_err(CoordinatorError::storage(action))?;
    Ok(requeued)
}
