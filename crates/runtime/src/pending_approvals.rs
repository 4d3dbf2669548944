//! The approvals the runs of a runtime ended waiting for, by session: what
//! [`AgentRuntime::pending_approvals`](crate::AgentRuntime::pending_approvals) lists
//! of those whose calls still wait in the stored conversation.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use oxydra_types::{SessionId, ToolCall};

use crate::approvals::PendingApproval;

/// The last waiting run's approvals of each session (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct PendingApprovals {
    by_session: Mutex<HashMap<SessionId, Vec<PendingApproval>>>,
}

impl PendingApprovals {
    fn sessions(&self) -> MutexGuard<'_, HashMap<SessionId, Vec<PendingApproval>>> {
        self.by_session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A run of `session_id` ended waiting for `pending` (replacing what it waited
    /// for before).
    pub fn record(&self, session_id: &SessionId, pending: Vec<PendingApproval>) {
        self.sessions().insert(session_id.clone(), pending);
    }

    /// A run of `session_id` finished: nothing of it waits.
    pub fn clear(&self, session_id: &SessionId) {
        self.sessions().remove(session_id);
    }

    /// The approvals recorded for `session_id` whose calls are among `waiting` (the
    /// calls the stored conversation leaves without a result), in request order.
    pub fn of(&self, session_id: &SessionId, waiting: &[ToolCall]) -> Vec<PendingApproval> {
        let sessions = self.sessions();
        let Some(pending) = sessions.get(session_id) else {
            return Vec::new();
        };
        pending
            .iter()
            .filter(|approval| waiting.iter().any(|call| call.id == approval.call_id))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use oxydra_executor::PermissionScope;
    use oxydra_scrubbing::Scrubber;
    use oxydra_types::{CallId, SafetyTier};

    use super::*;

    fn approval(call: &ToolCall) -> PendingApproval {
        PendingApproval::new(
            call,
            SafetyTier::Privileged,
            PermissionScope::Session,
            Duration::from_secs(60),
            &Scrubber::default(),
            crate::used_budget::UsedBudget::default(),
        )
    }

    #[test]
    fn only_recorded_approvals_whose_calls_still_wait_are_listed() {
        let session = SessionId::from("ses_a");
        let a = ToolCall::new(CallId::from("a"), "shell", "{}");
        let b = ToolCall::new(CallId::from("b"), "shell", "{}");
        let registry = PendingApprovals::default();
        assert!(registry.of(&session, std::slice::from_ref(&a)).is_empty());
        registry.record(&session, vec![approval(&a), approval(&b)]);
        let listed = registry.of(&session, std::slice::from_ref(&b));
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].call_id, b.id);
        assert!(
            registry
                .of(&SessionId::from("ses_other"), std::slice::from_ref(&b))
                .is_empty()
        );
        registry.clear(&session);
        assert!(registry.of(&session, &[b]).is_empty());
    }
}
