//! How a run ended when it did not fail: [`RunOutcome`], finished or waiting for a
//! person's approval.

use crate::approvals::PendingApproval;
use crate::error::RuntimeError;
use crate::session_outcome::SessionOutcome;

/// How a run ended when it did not fail: with its answer, or waiting for a person to
/// decide on tool calls the permission broker deferred. Waiting is not a failure: the
/// run stopped before the waiting calls, everything before them stored, and a request
/// with the decisions ([`RunRequest::decide`](crate::RunRequest::decide)) resumes it.
///
/// `T` is what a finished run gives: a [`SessionOutcome`] (from
/// [`RunRequest::outcome`](crate::RunRequest::outcome)), or the typed value with it
/// (a [`TypedOutcome`], from [`RunRequest::output`](crate::RunRequest::output)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[must_use = "a run may have ended waiting for approval"]
pub enum RunOutcome<T = SessionOutcome> {
    /// The model gave its final answer.
    Finished(T),
    /// The run waits for a person's decision on these calls, in the order the model
    /// asked for them (an `approval_requested` event announced each).
    AwaitingApproval(Vec<PendingApproval>),
}

/// How a typed run ended: the value with the [`SessionOutcome`], or waiting for
/// approval.
pub type TypedOutcome<T> = RunOutcome<(T, SessionOutcome)>;

impl<T> RunOutcome<T> {
    /// The finished run's answer (`None` while it waits for approval).
    pub fn finished(self) -> Option<T> {
        match self {
            Self::Finished(value) => Some(value),
            Self::AwaitingApproval(_) => None,
        }
    }

    /// The approvals the run waits for (empty when it finished).
    pub fn pending(&self) -> &[PendingApproval] {
        match self {
            Self::Finished(_) => &[],
            Self::AwaitingApproval(pending) => pending,
        }
    }

    /// Whether the run waits for a person's approval.
    pub fn is_awaiting_approval(&self) -> bool {
        matches!(self, Self::AwaitingApproval(_))
    }

    /// The answer, with waiting for approval as an error
    /// ([`RuntimeError::AwaitingApproval`]): for callers whose runs never wait (no
    /// broker defers), to use `?` as before.
    ///
    /// # Errors
    /// [`RuntimeError::AwaitingApproval`] when the run waits for approval.
    pub fn into_result(self) -> Result<T, RuntimeError> {
        match self {
            Self::Finished(value) => Ok(value),
            Self::AwaitingApproval(pending) => Err(RuntimeError::AwaitingApproval { pending }),
        }
    }

    /// The outcome with `f` applied to a finished run's answer.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> RunOutcome<U> {
        match self {
            Self::Finished(value) => RunOutcome::Finished(f(value)),
            Self::AwaitingApproval(pending) => RunOutcome::AwaitingApproval(pending),
        }
    }

    /// A run's result with waiting for approval taken out of the errors.
    pub(crate) fn from_result(result: Result<T, RuntimeError>) -> Result<Self, RuntimeError> {
        match result {
            Ok(value) => Ok(Self::Finished(value)),
            Err(RuntimeError::AwaitingApproval { pending }) => Ok(Self::AwaitingApproval(pending)),
            Err(error) => Err(error),
        }
    }
}
