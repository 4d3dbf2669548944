//! The approvals of waiting runs on PostgreSQL (`coordinator_run_approvals`). Every
//! operation is one transaction; deciding and expiring lock the run's row first, so
//! of two coordinators deciding a run's last requests together exactly one queues it
//! again. A run queued again is announced on the runs channel: idle workers of every
//! process hear of it.

use oxydra_coordinator::{
    APPROVAL_COLUMNS, ApprovalDecision, ApprovalRow, CoordinatorError, DecidedApproval,
    EXPIRED_REASON, PendingApproval, RecordedDecision, encode_decision,
};
use tokio_postgres::Row;

use super::PostgresRunStore;
use super::listener::CHANNEL;
use crate::now_ms;

/// An approval row from a row of [`APPROVAL_COLUMNS`].
fn approval_row(row: &Row) -> Result<ApprovalRow, tokio_postgres::Error> {
    Ok(ApprovalRow {
        approval_id: row.try_get(0)?,
        run_id: row.try_get(1)?,
        call_id: row.try_get(2)?,
        tool: row.try_get(3)?,
        arguments: row.try_get(4)?,
        tier: row.try_get(5)?,
        scope: row.try_get(6)?,
        requested_at: row.try_get(7)?,
        expires_at: row.try_get(8)?,
        decision: row.try_get(9)?,
        reason: row.try_get(10)?,
    })
}

/// Moves run `run_id` back to `pending` (no holder) when it waits and has no
/// undecided request left; whether it did.
const REQUEUE: &str = "UPDATE coordinator_runs
     SET status = 'pending', holder = NULL, lease_expires_at = NULL
     WHERE id = $1 AND status = 'waiting_approval'
       AND NOT EXISTS (SELECT 1 FROM coordinator_run_approvals
                       WHERE run_id = $1 AND decision IS NULL)";

impl PostgresRunStore {
    /// The approval rows of `rows` (of [`APPROVAL_COLUMNS`]).
    pub(super) fn approval_rows(
        &self,
        action: &'static str,
        rows: &[Row],
    ) -> Result<Vec<ApprovalRow>, CoordinatorError> {
        rows.iter()
            .map(|row| approval_row(row).map_err(self.fail(action)))
            .collect()
    }

    /// See `RunStore::suspend_run`.
    pub(super) async fn suspend(
        &self,
        run_id: &str,
        pending: &[PendingApproval],
    ) -> Result<bool, CoordinatorError> {
        const ACTION: &str = "suspending a run for approval";
        let rows = pending
            .iter()
            .map(|approval| ApprovalRow::encode(run_id, approval))
            .collect::<Result<Vec<_>, _>>()?;
        let mut client = self.client(ACTION).await?;
        let tx = client.transaction().await.map_err(self.fail(ACTION))?;
        let changed = tx
            .execute(
                "UPDATE coordinator_runs
                 SET status = 'waiting_approval', holder = NULL, lease_expires_at = NULL
                 WHERE id = $1 AND status = 'running'",
                &[&run_id],
            )
            .await
            .map_err(self.fail(ACTION))?;
        if changed == 0 {
            return Ok(false);
        }
        for row in &rows {
            tx.execute(
                "INSERT INTO coordinator_run_approvals (approval_id, run_id, call_id, tool,
                     arguments, tier, scope, requested_at, expires_at, reason)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    &row.approval_id,
                    &row.run_id,
                    &row.call_id,
                    &row.tool,
                    &row.arguments,
                    &row.tier,
                    &row.scope,
                    &row.requested_at,
                    &row.expires_at,
                    &row.reason,
                ],
            )
            .await
            .map_err(self.fail(ACTION))?;
        }
        tx.commit().await.map_err(self.fail(ACTION))?;
        Ok(true)
    }

    /// See `RunStore::pending_approvals`.
    pub(super) async fn pending(
        &self,
        run_id: &str,
    ) -> Result<Vec<PendingApproval>, CoordinatorError> {
        const ACTION: &str = "reading approvals";
        let client = self.client(ACTION).await?;
        let sql = format!(
            "SELECT {APPROVAL_COLUMNS} FROM coordinator_run_approvals
             WHERE run_id = $1 AND decision IS NULL
               AND EXISTS (SELECT 1 FROM coordinator_runs
                           WHERE id = $1 AND status = 'waiting_approval')
             ORDER BY requested_at, approval_id"
        );
        let rows = client
            .query(&sql, &[&run_id])
            .await
            .map_err(self.fail(ACTION))?;
        self.approval_rows(ACTION, &rows)?
            .iter()
            .map(ApprovalRow::pending)
            .collect()
    }

    /// See `RunStore::decide_approval`.
    pub(super) async fn decide(
        &self,
        run_id: &str,
        approval_id: &str,
        decision: ApprovalDecision,
        now: i64,
    ) -> Result<RecordedDecision, CoordinatorError> {
        const ACTION: &str = "deciding an approval";
        let mut client = self.client(ACTION).await?;
        let tx = client.transaction().await.map_err(self.fail(ACTION))?;
        let status = tx
            .query_opt(
                "SELECT status FROM coordinator_runs WHERE id = $1 FOR UPDATE",
                &[&run_id],
            )
            .await
            .map_err(self.fail(ACTION))?;
        let Some(status) = status else {
            return Err(CoordinatorError::RunNotFound {
                run_id: run_id.to_owned(),
            });
        };
        let status: String = status.try_get(0).map_err(self.fail(ACTION))?;
        let sql = format!(
            "SELECT {APPROVAL_COLUMNS} FROM coordinator_run_approvals
             WHERE run_id = $1 AND approval_id = $2"
        );
        let rows = tx
            .query(&sql, &[&run_id, &approval_id])
            .await
            .map_err(self.fail(ACTION))?;
        let row = self
            .approval_rows(ACTION, &rows)?
            .into_iter()
            .next()
            .ok_or_else(|| CoordinatorError::ApprovalNotFound {
                run_id: run_id.to_owned(),
                approval_id: approval_id.to_owned(),
            })?;
        row.check_decidable(&status)?;
        let approval = row.pending()?;
        let effective = decision.effective(&approval, now);
        let text = encode_decision(&effective)?;
        tx.execute(
            "UPDATE coordinator_run_approvals SET decision = $2, decided_at = $3
             WHERE approval_id = $1 AND decision IS NULL",
            &[&approval_id, &text, &now],
        )
        .await
        .map_err(self.fail(ACTION))?;
        let requeued = tx
            .execute(REQUEUE, &[&run_id])
            .await
            .map_err(self.fail(ACTION))?
            == 1;
        if requeued {
            tx.execute(&format!("NOTIFY {CHANNEL}"), &[])
                .await
                .map_err(self.fail(ACTION))?;
        }
        tx.commit().await.map_err(self.fail(ACTION))?;
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

    /// See `RunStore::take_decisions`.
    pub(super) async fn take(
        &self,
        run_id: &str,
    ) -> Result<Vec<DecidedApproval>, CoordinatorError> {
        const ACTION: &str = "handing out approval decisions";
        let client = self.client(ACTION).await?;
        // One statement: what it marks is what it returns.
        let sql = format!(
            "UPDATE coordinator_run_approvals SET delivered_at = $2
             WHERE run_id = $1 AND decision IS NOT NULL AND delivered_at IS NULL
             RETURNING {APPROVAL_COLUMNS}"
        );
        let rows = client
            .query(&sql, &[&run_id, &now_ms()])
            .await
            .map_err(self.fail(ACTION))?;
        let mut rows = self.approval_rows(ACTION, &rows)?;
        rows.sort_by(|a, b| {
            (a.requested_at, &a.approval_id).cmp(&(b.requested_at, &b.approval_id))
        });
        let mut decided = Vec::with_capacity(rows.len());
        for row in &rows {
            if let Some(approval) = row.decided()? {
                decided.push(approval);
            }
        }
        Ok(decided)
    }

    /// See `RunStore::expire_approvals`.
    pub(super) async fn expire(&self, now: i64) -> Result<Vec<String>, CoordinatorError> {
        const ACTION: &str = "expiring approvals";
        let denial = encode_decision(&ApprovalDecision::Deny {
            reason: Some(EXPIRED_REASON.to_owned()),
        })?;
        let mut client = self.client(ACTION).await?;
        let tx = client.transaction().await.map_err(self.fail(ACTION))?;
        // The runs first, locked, as deciding locks them: one of two deciders of a
        // run's last request queues it.
        let runs = tx
            .query(
                "SELECT id FROM coordinator_runs
                 WHERE status = 'waiting_approval'
                   AND id IN (SELECT run_id FROM coordinator_run_approvals
                              WHERE decision IS NULL AND expires_at <= $1)
                 ORDER BY id
                 FOR UPDATE",
                &[&now],
            )
            .await
            .map_err(self.fail(ACTION))?;
        let runs: Vec<String> = runs
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(self.fail(ACTION))?;
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        tx.execute(
            "UPDATE coordinator_run_approvals SET decision = $2, decided_at = $1
             WHERE decision IS NULL AND expires_at <= $1 AND run_id = ANY($3)",
            &[&now, &denial, &runs],
        )
        .await
        .map_err(self.fail(ACTION))?;
        let mut requeued = Vec::new();
        for run_id in runs {
            if tx
                .execute(REQUEUE, &[&run_id])
                .await
                .map_err(self.fail(ACTION))?
                == 1
            {
                requeued.push(run_id);
            }
        }
        if !requeued.is_empty() {
            tx.execute(&format!("NOTIFY {CHANNEL}"), &[])
                .await
                .map_err(self.fail(ACTION))?;
        }
        tx.commit().await.map_err(self.fail(ACTION))?;
        Ok(requeued)
    }
}
