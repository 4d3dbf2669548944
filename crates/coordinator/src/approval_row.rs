//! Approvals as the run stores keep them: a waiting run's [`PendingApproval`]s, each
//! with the person's [`ApprovalDecision`] once there is one. [`ApprovalRow`] is one
//! stored row (columns [`APPROVAL_COLUMNS`]), written and read the same way by every
//! backend; [`DecidedApproval`] is what a resumed run is handed, and
//! [`RecordedDecision`] what deciding did.

use oxydra_runtime::{ApprovalDecision, PendingApproval};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::CoordinatorError;
use crate::run::RunStatus;

/// The columns of an approval row, in the order of [`ApprovalRow`]'s fields:
/// `approval_id, run_id, call_id, tool, arguments, tier, scope, requested_at,
/// expires_at, decision, reason`.
pub const APPROVAL_COLUMNS: &str = "approval_id, run_id, call_id, tool, arguments, tier, scope, \
     requested_at, expires_at, decision, reason";

/// How many columns [`APPROVAL_COLUMNS`] names: a query selecting more after them
/// reads its own from this index on.
pub const APPROVAL_COLUMN_COUNT: usize = 11;

/// An approval a person decided, handed once to the execution that resumes its run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecidedApproval {
    /// The request, as the run stored it when it stopped.
    pub pending: PendingApproval,
    /// What was decided (a lapsed request is a denial with
    /// [`EXPIRED_REASON`](oxydra_runtime::EXPIRED_REASON)).
    pub decision: ApprovalDecision,
}

/// What [`RunStore::decide_approval`](crate::RunStore::decide_approval) recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedDecision {
    /// The request decided.
    pub approval: PendingApproval,
    /// The decision as it takes effect (a request that had lapsed is denied with
    /// [`EXPIRED_REASON`](oxydra_runtime::EXPIRED_REASON), whatever was answered).
    pub decision: ApprovalDecision,
    /// Whether it was the run's last undecided approval: the run went back to
    /// `pending` in the same transaction and must be queued.
    pub requeued: bool,
}

/// One stored approval: the columns of [`APPROVAL_COLUMNS`] as text and numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRow {
    /// `approval_id`.
    pub approval_id: String,
    /// `run_id`: the run that waits.
    pub run_id: String,
    /// `call_id`.
    pub call_id: String,
    /// `tool`.
    pub tool: String,
    /// `arguments`: as a person sees them (scrubbed by the runtime).
    pub arguments: String,
    /// `tier`: the safety tier's snake_case name.
    pub tier: String,
    /// `scope`: the permission scope's snake_case name.
    pub scope: String,
    /// `requested_at`, Unix milliseconds.
    pub requested_at: i64,
    /// `expires_at`, Unix milliseconds.
    pub expires_at: i64,
    /// `decision`: the decision as JSON (`{"decision": …, "reason"?}`), `NULL` while
    /// undecided.
    pub decision: Option<String>,
    /// `reason`: why a person must decide (the provenance hold naming the untrusted
    /// source, the consent rule or the tier), scrubbed by the runtime; `NULL` for a
    /// request stored before reasons were kept.
    pub reason: Option<String>,
}

/// The JSON text of `value` when it serializes to a string (a unit enum variant).
fn name_of<T: Serialize>(what: &'static str, value: &T) -> Result<String, CoordinatorError> {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => Ok(name),
        Ok(other) => Err(CoordinatorError::CorruptRow {
            what,
            detail: format!("`{other}` is not a name"),
        }),
        Err(error) => Err(CoordinatorError::CorruptRow {
            what,
            detail: error.to_string(),
        }),
    }
}

/// `value` read as a `T`, naming `what` when it does not fit.
fn read<T: DeserializeOwned>(what: &'static str, value: Value) -> Result<T, CoordinatorError> {
    serde_json::from_value(value).map_err(|error| CoordinatorError::CorruptRow {
        what,
        detail: error.to_string(),
    })
}

impl ApprovalRow {
    /// The undecided row of `pending`, for run `run_id`.
    pub fn encode(run_id: &str, pending: &PendingApproval) -> Result<Self, CoordinatorError> {
        Ok(Self {
            approval_id: pending.approval_id.as_str().to_owned(),
            run_id: run_id.to_owned(),
            call_id: pending.call_id.as_str().to_owned(),
            tool: pending.tool.clone(),
            arguments: pending.arguments.clone(),
            tier: name_of("approval tier", &pending.tier)?,
            scope: name_of("approval scope", &pending.scope)?,
            requested_at: pending.requested_at,
            expires_at: pending.expires_at,
            decision: None,
            reason: pending.reason.clone(),
        })
    }

    /// The stored request.
    pub fn pending(&self) -> Result<PendingApproval, CoordinatorError> {
        read(
            "approval",
            json!({
                "approval_id": self.approval_id,
                "call_id": self.call_id,
                "tool": self.tool,
                "arguments": self.arguments,
                "tier": self.tier,
                "scope": self.scope,
                "requested_at": self.requested_at,
                "expires_at": self.expires_at,
                "reason": self.reason,
            }),
        )
    }

    /// The stored decision, `None` while undecided.
    pub fn decision(&self) -> Result<Option<ApprovalDecision>, CoordinatorError> {
        self.decision
            .as_deref()
            .map(|text| {
                serde_json::from_str(text).map_err(|error| CoordinatorError::CorruptRow {
                    what: "approval decision",
                    detail: error.to_string(),
                })
            })
            .transpose()
    }

    /// Whether this request may be decided now that its run's status is `status`
    /// (as stored): not decided yet, and its run `waiting_approval`.
    ///
    /// # Errors
    /// [`CoordinatorError::ApprovalAlreadyDecided`] first, then
    /// [`CoordinatorError::NotWaitingApproval`]; [`CoordinatorError::CorruptRow`] for
    /// an unknown status.
    pub fn check_decidable(&self, status: &str) -> Result<(), CoordinatorError> {
        if self.decision.is_some() {
            return Err(CoordinatorError::ApprovalAlreadyDecided {
                run_id: self.run_id.clone(),
                approval_id: self.approval_id.clone(),
            });
        }
        let status = RunStatus::parse(status).ok_or_else(|| CoordinatorError::CorruptRow {
            what: "run",
            detail: format!("`{}` has status `{status}`", self.run_id),
        })?;
        if status != RunStatus::WaitingApproval {
            return Err(CoordinatorError::NotWaitingApproval {
                run_id: self.run_id.clone(),
                status,
            });
        }
        Ok(())
    }

    /// The decided approval; `None` while undecided.
    pub fn decided(&self) -> Result<Option<DecidedApproval>, CoordinatorError> {
        let Some(decision) = self.decision()? else {
            return Ok(None);
        };
        Ok(Some(DecidedApproval {
            pending: self.pending()?,
            decision,
        }))
    }
}

/// `decision` as stored (its JSON), its denial reason scrubbed: the reason reaches the
/// model and the database.
pub fn encode_decision(decision: &ApprovalDecision) -> Result<String, CoordinatorError> {
    let decision = match decision {
        ApprovalDecision::Deny {
            reason: Some(reason),
        } => ApprovalDecision::Deny {
            reason: Some(crate::scrub::scrub_text(reason)),
        },
        other => other.clone(),
    };
    serde_json::to_string(&decision).map_err(|error| CoordinatorError::CorruptRow {
        what: "approval decision",
        detail: error.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use oxydra_executor::PermissionScope;
    use oxydra_types::{ApprovalId, CallId, SafetyTier};

    use super::*;

    fn pending() -> PendingApproval {
        PendingApproval {
            approval_id: ApprovalId::from("apr_1"),
            call_id: CallId::from("call_1"),
            tool: "shell_exec".into(),
            arguments: "{\n  \"command\": \"ls\"\n}".into(),
            tier: SafetyTier::Privileged,
            scope: PermissionScope::Session,
            requested_at: 1_000,
            expires_at: 1_000 + i64::try_from(Duration::from_secs(60).as_millis()).unwrap(),
            used: Default::default(),
            reason: Some("this run read https://x.test/ since your last decision".into()),
        }
    }

    #[test]
    fn a_row_round_trips_the_request_and_its_decision() {
        let mut row = ApprovalRow::encode("run_1", &pending()).unwrap();
        assert_eq!(row.tier, "privileged");
        assert_eq!(row.scope, "session");
        assert_eq!(
            row.reason.as_deref(),
            Some("this run read https://x.test/ since your last decision")
        );
        assert_eq!(row.pending().unwrap(), pending());
        // A row stored before reasons were kept reads as a request without one.
        let old = ApprovalRow {
            reason: None,
            ..row.clone()
        };
        assert_eq!(old.pending().unwrap().reason, None);
        assert_eq!(row.decided().unwrap(), None);
        row.decision = Some(
            encode_decision(&ApprovalDecision::Deny {
                reason: Some("not with password=hunter2-very-secret".into()),
            })
            .unwrap(),
        );
        let decided = row.decided().unwrap().unwrap();
        let ApprovalDecision::Deny {
            reason: Some(reason),
        } = decided.decision
        else {
            panic!("{decided:?}");
        };
        assert!(!reason.contains("hunter2"), "{reason}");
    }

    #[test]
    fn corrupt_rows_are_errors_not_panics() {
        let mut row = ApprovalRow::encode("run_1", &pending()).unwrap();
        row.tier = "root".into();
        assert!(matches!(
            row.pending(),
            Err(CoordinatorError::CorruptRow { .. })
        ));
        let mut row = ApprovalRow::encode("run_1", &pending()).unwrap();
        row.decision = Some("{\"decision\":\"maybe\"}".into());
        assert!(row.decided().is_err());
    }
}
