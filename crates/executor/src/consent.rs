//! Consent: the `PermissionBroker` that approves sensitive calls, and the standing
//! grants (`ApproveForDuration`, `ApproveForScope`) the executor remembers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use dashmap::DashMap;
use oxydra_tools::CallPreview;
use oxydra_types::{CallId, SafetyTier, SessionId};
use tokio_util::sync::CancellationToken;

use crate::call_verdicts::{CallVerdict, CallVerdicts};
use crate::consent_clock::ConsentClock;
use crate::error::ToolExecutionError;
use crate::permission_scope::PermissionScope;
use crate::provenance::{ProvenanceHold, ProvenanceLedger};

/// A call waiting for consent.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    /// The tool.
    pub tool_name: String,
    /// The validated arguments.
    pub arguments: serde_json::Value,
    /// The tool's tier.
    pub tier: SafetyTier,
    /// What an `ApproveForScope` / `ApproveForDuration` answer would cover.
    pub scope: PermissionScope,
    /// The session asking.
    pub session_id: SessionId,
    /// The call asking.
    pub call_id: CallId,
    /// Why consent is needed (a `requires_consent` rule, or the privileged tier).
    pub reason: String,
    /// What the call will do, in a person's words (the command, the URL, a diff
    /// against the current file): what a question shows instead of the raw arguments.
    /// Untrusted text: escape it before showing it.
    pub preview: CallPreview,
    /// Set when the call is held because the run read text from outside the person's
    /// control since their last decision (DESIGN.md §3.13): no standing grant covers
    /// it, and a broker that decides by policy rather than by asking a person
    /// ([`AlwaysApprove`], [`StaticBroker`]) denies it with the hold's reason. A
    /// broker that asks a person names the sources in its question.
    pub provenance: Option<ProvenanceHold>,
}

impl PermissionRequest {
    /// The answer of a broker that does not ask a person to a held request: a denial
    /// with the hold's reason, which the model reads. `None` when the request is not
    /// held.
    pub fn denial_without_person(&self) -> Option<PermissionDecision> {
        self.provenance.as_ref().map(|hold| {
            PermissionDecision::DenyBecause(format!(
                "{}; only a person may approve this call, and none was asked",
                hold.reason()
            ))
        })
    }
}

/// A broker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Run this call; ask again next time.
    ApproveOnce,
    /// Run this call and any call in the same scope for this long.
    ApproveForDuration(Duration),
    /// Run this call and any call in the same scope until the grants are revoked.
    ApproveForScope,
    /// Refuse.
    Deny,
    /// Refuse, telling the model why: the reason (a person's words) is what the model
    /// reads as the call's result, after the permission error.
    DenyBecause(String),
    /// No one can answer now: the call is not run, the run that made it ends waiting
    /// for a person's decision (see [`CallVerdict`]), and the request expires after
    /// this long (an expired request is a denial).
    Defer(Duration),
}

/// Decides whether a sensitive call may run (a terminal prompt, a policy, a UI).
#[async_trait]
pub trait PermissionBroker: Send + Sync {
    /// Decide on `request`. The executor stops waiting after its `permission_timeout`,
    /// which counts as a denial. The batch's [`ConsentClock`] stands still meanwhile:
    /// the time a person takes is not counted against the turn's timeout.
    async fn request(&self, request: PermissionRequest) -> PermissionDecision;
}

/// A broker that always gives the same answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticBroker(pub PermissionDecision);

#[async_trait]
impl PermissionBroker for StaticBroker {
    /// Its answer; a held request ([`PermissionRequest::provenance`]) is not approved
    /// by a fixed answer: it is denied with the hold's reason.
    async fn request(&self, request: PermissionRequest) -> PermissionDecision {
        match &self.0 {
            PermissionDecision::ApproveOnce
            | PermissionDecision::ApproveForDuration(_)
            | PermissionDecision::ApproveForScope => request
                .denial_without_person()
                .unwrap_or_else(|| self.0.clone()),
            other => other.clone(),
        }
    }
}

/// Approves every call, once at a time (`--approve allow`), except a call held
/// because the run read untrusted text ([`PermissionRequest::provenance`]): that one it
/// denies with the hold's reason, since no person was asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlwaysApprove;

#[async_trait]
impl PermissionBroker for AlwaysApprove {
    async fn request(&self, request: PermissionRequest) -> PermissionDecision {
        request
            .denial_without_person()
            .unwrap_or(PermissionDecision::ApproveOnce)
    }
}

/// Denies every call (`--approve deny`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlwaysDeny;

#[async_trait]
impl PermissionBroker for AlwaysDeny {
    async fn request(&self, _request: PermissionRequest) -> PermissionDecision {
        PermissionDecision::Deny
    }
}

/// Defers every call to a person (`PermissionDecision::Defer(ttl)`): no call that needs
/// consent runs now; the run that made it ends waiting for approval, and the request
/// lapses (a denial) `ttl` after it was asked. For services where someone decides
/// later, through an API (the coordinator's `POST /runs/{id}/approvals/{approval_id}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeferAll {
    /// How long a request waits for a decision.
    pub ttl: Duration,
}

impl DeferAll {
    /// Defers every request for `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self { ttl }
    }
}

#[async_trait]
impl PermissionBroker for DeferAll {
    async fn request(&self, _request: PermissionRequest) -> PermissionDecision {
        PermissionDecision::Defer(self.ttl)
    }
}

/// Standing grants by tool and scope; `None` never expires.
#[derive(Debug, Default)]
pub(crate) struct GrantStore {
    grants: DashMap<String, Option<Instant>>,
}

impl GrantStore {
    fn key(tool: &str, scope: PermissionScope, session: &SessionId, args_key: &str) -> String {
        match scope {
            PermissionScope::Tool => format!("{tool}\u{1f}tool"),
            PermissionScope::Session => format!("{tool}\u{1f}session\u{1f}{session}"),
            PermissionScope::Arguments => {
                format!("{tool}\u{1f}arguments\u{1f}{session}\u{1f}{args_key}")
            }
        }
    }

    fn has_grant(&self, key: &str, now: Instant) -> bool {
        match self.grants.get(key).map(|grant| *grant.value()) {
            Some(None) => true,
            Some(Some(expires)) if expires > now => true,
            Some(Some(_)) => {
                self.grants.remove(key);
                false
            }
            None => false,
        }
    }

    /// Drop expired grants.
    pub(crate) fn prune(&self, now: Instant) {
        self.grants
            .retain(|_, expires| expires.is_none_or(|at| at > now));
    }

    /// Drop every grant of `tool`.
    pub(crate) fn revoke_tool(&self, tool: &str) {
        let prefix = format!("{tool}\u{1f}");
        self.grants.retain(|key, _| !key.starts_with(&prefix));
    }

    /// Drop every grant.
    pub(crate) fn clear(&self) {
        self.grants.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.grants.len()
    }
}

/// Asks for (or finds) consent for one call.
pub(crate) struct ConsentCheck<'a> {
    pub(crate) broker: Option<&'a Arc<dyn PermissionBroker>>,
    pub(crate) grants: &'a GrantStore,
    pub(crate) verdicts: &'a CallVerdicts,
    pub(crate) timeout: Duration,
    pub(crate) cancel: &'a CancellationToken,
    /// Stopped while the broker is asked.
    pub(crate) clock: &'a ConsentClock,
    /// Cleared when a held call is approved.
    pub(crate) provenance: &'a ProvenanceLedger,
}

/// What a standing grant for one call is looked up by.
pub(crate) struct GrantLookup<'a> {
    pub(crate) tool_name: &'a str,
    pub(crate) scope: PermissionScope,
    pub(crate) session_id: &'a SessionId,
    /// The call asking (a person's verdict on it is looked up by it).
    pub(crate) call_id: &'a CallId,
    /// The call's canonical arguments (for [`PermissionScope::Arguments`]).
    pub(crate) args_key: &'a str,
    /// Set when the run read untrusted text: no standing grant covers the call.
    pub(crate) hold: Option<&'a ProvenanceHold>,
    /// Why consent is asked (the request's [`PermissionRequest::reason`]): what a
    /// deferred request keeps for the person who decides it.
    pub(crate) reason: &'a str,
}

impl ConsentCheck<'_> {
    /// `Ok` when the call may run: a person's verdict on this very call approves it, a
    /// standing grant covers it, or the broker approves the request `request` builds
    /// (built only when the broker is asked). The grant is cached when the decision is
    /// a standing one. A held call ([`GrantLookup::hold`]) is not covered by a
    /// standing grant; approving it (a person's verdict or the broker's approval)
    /// clears the session's provenance ledger.
    pub(crate) async fn authorize(
        &self,
        lookup: GrantLookup<'_>,
        request: impl FnOnce() -> PermissionRequest,
    ) -> Result<(), ToolExecutionError> {
        let GrantLookup {
            tool_name,
            scope,
            session_id,
            call_id,
            args_key,
            hold,
            reason,
        } = lookup;
        let approved = || {
            if hold.is_some() {
                tracing::debug!(tool = %tool_name, "a held call was approved: provenance cleared");
                self.provenance.clear();
            }
            Ok(())
        };
        let key = GrantStore::key(tool_name, scope, session_id, args_key);
        let denied = |reason: String| ToolExecutionError::PermissionDenied {
            tool_name: tool_name.to_owned(),
            scope,
            reason,
        };
        match self.verdicts.take(session_id, call_id) {
            Some(CallVerdict::ApproveOnce) => return approved(),
            Some(CallVerdict::ApproveForScope) => {
                self.grants.grants.insert(key, None);
                return approved();
            }
            Some(CallVerdict::Deny { reason }) => return Err(denied(reason)),
            None => {}
        }
        if hold.is_none() && self.grants.has_grant(&key, Instant::now()) {
            tracing::debug!(tool = %tool_name, scope = %scope, "standing grant");
            return Ok(());
        }
        let Some(broker) = self.broker else {
            return Err(denied(
                "no permission broker is configured to approve it".to_owned(),
            ));
        };
        // The batch's time budget stands still while a person is asked.
        let _asking = self.clock.pause();
        let decision = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(ToolExecutionError::Cancelled),
            decision = tokio::time::timeout(self.timeout, broker.request(request())) => decision,
        };
        match decision {
            Err(_) => Err(denied(format!(
                "no decision within the permission timeout of {} s",
                self.timeout.as_secs_f64()
            ))),
            Ok(PermissionDecision::Deny) => Err(denied("the request was denied".to_owned())),
            Ok(PermissionDecision::DenyBecause(reason)) => {
                Err(denied(format!("the request was denied: {}", reason.trim())))
            }
            Ok(PermissionDecision::ApproveOnce) => approved(),
            Ok(PermissionDecision::ApproveForDuration(duration)) => {
                // A duration too long to represent (`None`) never expires in practice.
                self.grants
                    .grants
                    .insert(key, Instant::now().checked_add(duration));
                approved()
            }
            Ok(PermissionDecision::ApproveForScope) => {
                self.grants.grants.insert(key, None);
                approved()
            }
            Ok(PermissionDecision::Defer(ttl)) => Err(ToolExecutionError::ApprovalDeferred {
                tool_name: tool_name.to_owned(),
                scope,
                ttl,
                reason: reason.to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn defer_all_defers_every_request_for_its_ttl() {
        let broker = DeferAll::new(Duration::from_secs(90));
        for tier in [SafetyTier::SideEffecting, SafetyTier::Privileged] {
            let arguments = serde_json::json!({"command": "rm -rf build"});
            let request = PermissionRequest {
                tool_name: "shell_exec".into(),
                preview: CallPreview::arguments(&arguments),
                arguments,
                tier,
                scope: PermissionScope::Session,
                session_id: SessionId::from("s"),
                call_id: CallId::from("c1"),
                reason: "privileged".into(),
                provenance: None,
            };
            assert_eq!(
                broker.request(request).await,
                PermissionDecision::Defer(Duration::from_secs(90))
            );
        }
    }

    #[test]
    fn grants_expire_and_are_pruned() {
        let store = GrantStore::default();
        let session = SessionId::from("s");
        let now = Instant::now();
        let key = GrantStore::key("t", PermissionScope::Session, &session, "");
        store
            .grants
            .insert(key.clone(), Some(now + Duration::from_secs(1)));
        assert!(store.has_grant(&key, now));
        assert!(!store.has_grant(&key, now + Duration::from_secs(2)));
        store.grants.insert(key, Some(now));
        store.prune(now + Duration::from_millis(1));
        assert_eq!(store.len(), 0);
    }

    #[test]
    fn scopes_key_differently_and_revoke_by_tool() {
        let a = SessionId::from("a");
        let b = SessionId::from("b");
        let tool_a = GrantStore::key("t", PermissionScope::Tool, &a, "x");
        let tool_b = GrantStore::key("t", PermissionScope::Tool, &b, "y");
        assert_eq!(tool_a, tool_b);
        assert_ne!(
            GrantStore::key("t", PermissionScope::Session, &a, ""),
            GrantStore::key("t", PermissionScope::Session, &b, "")
        );
        assert_ne!(
            GrantStore::key("t", PermissionScope::Arguments, &a, "x"),
            GrantStore::key("t", PermissionScope::Arguments, &a, "y")
        );
        let store = GrantStore::default();
        store.grants.insert(tool_a, None);
        store
            .grants
            .insert(GrantStore::key("tt", PermissionScope::Tool, &a, ""), None);
        store.revoke_tool("t");
        assert_eq!(store.len(), 1);
        store.clear();
        assert_eq!(store.len(), 0);
    }
}
