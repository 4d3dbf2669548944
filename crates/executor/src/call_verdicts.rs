//! Decisions a person gave for particular calls before they run: a call whose consent
//! was deferred ([`PermissionDecision::Defer`](crate::PermissionDecision::Defer)) is
//! run again once someone decided, and the executor takes that decision instead of
//! asking the broker a second time.

use dashmap::DashMap;
use oxydra_types::{CallId, SessionId};

/// A person's decision on one deferred call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallVerdict {
    /// Run this call; ask again for the next one.
    ApproveOnce,
    /// Run this call and keep a standing grant for the request's scope (as
    /// [`PermissionDecision::ApproveForScope`](crate::PermissionDecision::ApproveForScope)).
    ApproveForScope,
    /// Refuse the call; the model reads `reason` as the tool's error.
    Deny {
        /// Why, as the person gave it (or why the request lapsed).
        reason: String,
    },
}

/// Verdicts by session and call, taken (and removed) when the call is admitted.
#[derive(Debug, Default)]
pub(crate) struct CallVerdicts {
    verdicts: DashMap<(SessionId, CallId), CallVerdict>,
}

impl CallVerdicts {
    /// Records `verdict` for `call` of `session` (replacing an earlier one).
    pub(crate) fn put(&self, session: &SessionId, call: &CallId, verdict: CallVerdict) {
        self.verdicts
            .insert((session.clone(), call.clone()), verdict);
    }

    /// Takes the verdict for `call` of `session`, if one was given.
    pub(crate) fn take(&self, session: &SessionId, call: &CallId) -> Option<CallVerdict> {
        self.verdicts
            .remove(&(session.clone(), call.clone()))
            .map(|(_, verdict)| verdict)
    }

    /// How many verdicts wait for their call.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.verdicts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_taken_once_and_only_for_its_session_and_call() {
        let verdicts = CallVerdicts::default();
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        let call = CallId::from("c1");
        verdicts.put(&a, &call, CallVerdict::ApproveOnce);
        assert_eq!(verdicts.take(&b, &call), None);
        assert_eq!(verdicts.take(&a, &CallId::from("c2")), None);
        assert_eq!(verdicts.take(&a, &call), Some(CallVerdict::ApproveOnce));
        assert_eq!(verdicts.take(&a, &call), None);
        assert_eq!(verdicts.len(), 0);
    }
}
