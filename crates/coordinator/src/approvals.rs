//! Deciding the approvals a run waits for: [`Coordinator::decide_approval`] (what
//! `POST /runs/{id}/approvals/{approval_id}` calls), [`Coordinator::pending_approvals`],
//! and queuing a run again once every request it waited for is decided (or expired).

use oxydra_runtime::{ApprovalDecision, PendingApproval};
use oxydra_types::RunId;

use crate::coordinator::Coordinator;
use crate::error::CoordinatorError;
use crate::run::{Run, RunError, RunStatus, now_millis};

impl Coordinator {
    /// Records a person's `decision` on approval `approval_id` of run `run_id`, which
    /// must be `waiting_approval`; returns the run as it is afterwards. A request
    /// decided after its `expires_at` is a denial with
    /// [`EXPIRED_REASON`](oxydra_runtime::EXPIRED_REASON); a denial's reason (which the
    /// model reads) is scrubbed. Once every request of the run is decided, the run goes
    /// back to `pending` and is queued: a worker (of any coordinator sharing the store)
    /// resumes it with the decisions.
    ///
    /// # Errors
    /// [`CoordinatorError::RunNotFound`] and [`CoordinatorError::ApprovalNotFound`]
    /// (`404`), [`CoordinatorError::ApprovalAlreadyDecided`] and
    /// [`CoordinatorError::NotWaitingApproval`] (`409`), storage errors.
    pub async fn decide_approval(
        &self,
        run_id: &str,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<Run, CoordinatorError> {
        let recorded = self
            .inner
            .store
            .decide_approval(run_id, approval_id, decision, now_millis())
            .await?;
        let span = tracing::info_span!("coordinator_run", run_id = %run_id);
        span.in_scope(|| {
            tracing::info!(
                run_id = %run_id,
                approval_id = %recorded.approval.approval_id,
                tool = %recorded.approval.tool,
                decision = recorded.decision.as_str(),
                requeued = recorded.requeued,
                "approval_decided"
            );
        });
        if recorded.requeued {
            self.requeue(run_id).await?;
        }
        self.get_run(run_id).await
    }

    /// The approvals run `run_id` waits for (empty unless it is `waiting_approval`).
    ///
    /// # Errors
    /// [`CoordinatorError::RunNotFound`], storage errors.
    pub async fn pending_approvals(
        &self,
        run_id: &str,
    ) -> Result<Vec<PendingApproval>, CoordinatorError> {
        Ok(self.get_run(run_id).await?.pending_approvals)
    }

    /// Denies the lapsed requests of every waiting run and queues the runs that have
    /// nothing left to wait for; how many runs were queued.
    pub(crate) async fn expire_approvals(&self) -> Result<usize, CoordinatorError> {
        let requeued = self.inner.store.expire_approvals(now_millis()).await?;
        for run_id in &requeued {
            let span = tracing::info_span!("coordinator_run", run_id = %run_id);
            span.in_scope(|| {
                tracing::info!(
                    run_id = %run_id,
                    decision = "deny",
                    reason = oxydra_runtime::EXPIRED_REASON,
                    "approval_decided"
                );
            });
            self.requeue(run_id).await?;
        }
        Ok(requeued.len())
    }

    /// Queues run `run_id`, just moved back to `pending` from `waiting_approval`. On a
    /// shared store the run is in the store's queue already (idle workers are woken);
    /// here it goes to this process's queue, and fails when its blueprint is no longer
    /// configured.
    async fn requeue(&self, run_id: &str) -> Result<(), CoordinatorError> {
        if self.inner.queue.wake_shared() {
            return Ok(());
        }
        let run = self.inner.store.get_run(run_id).await?.ok_or_else(|| {
            CoordinatorError::RunNotFound {
                run_id: run_id.to_owned(),
            }
        })?;
        let Some(blueprint) = self.inner.by_name.get(&run.agent_name).cloned() else {
            let error = RunError::new(
                "config",
                format!("no agent named `{}` is configured any more", run.agent_name),
            );
            self.inner
                .store
                .finish_run(run_id, RunStatus::Failed, None, Some(error))
                .await?;
            return Ok(());
        };
        if let Err(error) = self.inner.queue.requeue(RunId::from(run_id), blueprint) {
            // Shutting down: the run will never be taken here.
            self.inner
                .store
                .finish_run(
                    run_id,
                    RunStatus::Failed,
                    None,
                    Some(RunError::interrupted()),
                )
                .await?;
            return Err(error);
        }
        Ok(())
    }
}
