//! How a run ends ([`end_of_run`]), from what executing it gave and whether (and by
//! whom) it was cancelled: the status the worker reports to its source.

use oxydra_runtime::PendingApproval;
use serde_json::Value;

use crate::run::{RunError, RunStatus};
use crate::runners::RunOutcome;

/// How a run ended: its status, result, error and the requests it waits for.
pub(crate) type Ending = (
    RunStatus,
    Option<Value>,
    Option<RunError>,
    Vec<PendingApproval>,
);

/// How a run ends, from what executing it gave (`None`: it never started), whether it
/// was cancelled and whether a user asked for that: a result completes it, even when a
/// cancel came too late; a run that stopped for approval waits (`waiting_approval`:
/// it is only rows, so even the coordinator's shutdown leaves it waiting) unless a
/// user cancelled it; a cancelled run ends `cancelled` when a user asked and
/// `failed` / `interrupted` when the coordinator stopped; a run that never started ends
/// `failed` / `interrupted`; otherwise its error fails it.
pub(crate) fn end_of_run(
    outcome: Option<Result<RunOutcome, RunError>>,
    cancelled: bool,
    by_user: bool,
) -> Ending {
    match outcome {
        Some(Ok(RunOutcome::Finished(value))) => (RunStatus::Completed, Some(value), None, vec![]),
        Some(Ok(RunOutcome::AwaitingApproval(pending))) if pending.is_empty() => (
            RunStatus::Failed,
            None,
            Some(RunError::new(
                "internal",
                "the run stopped for approval without a request to decide",
            )),
            vec![],
        ),
        Some(Ok(RunOutcome::AwaitingApproval(pending))) if !(cancelled && by_user) => {
            (RunStatus::WaitingApproval, None, None, pending)
        }
        Some(_) | None if cancelled => {
            if by_user {
                (
                    RunStatus::Cancelled,
                    None,
                    Some(RunError::cancelled()),
                    vec![],
                )
            } else {
                (
                    RunStatus::Failed,
                    None,
                    Some(RunError::interrupted()),
                    vec![],
                )
            }
        }
        Some(Err(error)) => (RunStatus::Failed, None, Some(error), vec![]),
        Some(Ok(RunOutcome::AwaitingApproval(_))) | None => (
            RunStatus::Failed,
            None,
            Some(RunError::interrupted()),
            vec![],
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_result_completes_the_run_even_when_a_cancel_came_late() {
        for (cancelled, by_user) in [(false, false), (true, false), (true, true)] {
            assert_eq!(
                end_of_run(Some(Ok(json!(1).into())), cancelled, by_user),
                (RunStatus::Completed, Some(json!(1)), None, vec![])
            );
        }
    }

    #[test]
    fn a_cancelled_run_is_cancelled_by_a_user_or_interrupted_by_a_stop() {
        for outcome in [None, Some(Err(RunError::new("runtime", "stopped")))] {
            assert_eq!(
                end_of_run(outcome.clone(), true, true),
                (
                    RunStatus::Cancelled,
                    None,
                    Some(RunError::cancelled()),
                    vec![]
                )
            );
            assert_eq!(
                end_of_run(outcome, true, false),
                (
                    RunStatus::Failed,
                    None,
                    Some(RunError::interrupted()),
                    vec![]
                )
            );
        }
    }

    #[test]
    fn an_error_fails_the_run_and_a_run_never_started_is_interrupted() {
        let error = RunError::new("provider", "down");
        assert_eq!(
            end_of_run(Some(Err(error.clone())), false, false),
            (RunStatus::Failed, None, Some(error), vec![])
        );
        assert_eq!(
            end_of_run(None, false, false),
            (
                RunStatus::Failed,
                None,
                Some(RunError::interrupted()),
                vec![]
            )
        );
    }

    pub(crate) fn waiting() -> Vec<PendingApproval> {
        vec![PendingApproval {
            approval_id: oxydra_types::ApprovalId::from("apr_1"),
            call_id: oxydra_types::CallId::from("call_1"),
            tool: "shell_exec".into(),
            arguments: "{}".into(),
            tier: oxydra_types::SafetyTier::Privileged,
            scope: oxydra_executor::PermissionScope::Session,
            requested_at: 1,
            expires_at: 2,
            used: Default::default(),
            reason: None,
        }]
    }

    #[test]
    fn a_run_that_stopped_for_approval_waits_unless_a_user_cancelled_it() {
        let stopped = || Some(Ok(RunOutcome::AwaitingApproval(waiting())));
        // Even the coordinator's shutdown leaves it waiting: it is only rows.
        for cancelled in [false, true] {
            assert_eq!(
                end_of_run(stopped(), cancelled, false),
                (RunStatus::WaitingApproval, None, None, waiting())
            );
        }
        assert_eq!(
            end_of_run(stopped(), true, true),
            (
                RunStatus::Cancelled,
                None,
                Some(RunError::cancelled()),
                vec![]
            )
        );
    }
}
