//! Approvals that wait for a person: what a run that ended waiting for approval lists
//! ([`PendingApproval`]), and what a person answers ([`ApprovalDecision`]), given back
//! to [`RunRequest::decide`](crate::RunRequest::decide) to resume the run.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oxydra_executor::{CallVerdict, PermissionScope};
use oxydra_scrubbing::Scrubber;
use oxydra_types::{ApprovalId, CallId, SafetyTier, ToolCall};
use serde::{Deserialize, Serialize};

use crate::event_scrub::scrub_value;
use crate::used_budget::UsedBudget;

/// The reason a lapsed request is denied with (what the model reads).
pub const EXPIRED_REASON: &str = "the approval request expired before anyone decided";

/// The reason a denial without one is given to the model.
pub const DENIED_REASON: &str = "a person denied the request";

/// A tool call that waits for a person's decision: the model asked for it, the
/// permission broker deferred it
/// ([`PermissionDecision::Defer`](oxydra_executor::PermissionDecision::Defer)), and the
/// run ended with [`RuntimeError::AwaitingApproval`](crate::RuntimeError::AwaitingApproval).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The request, to decide it by.
    pub approval_id: ApprovalId,
    /// The call that waits (its result comes once the run resumes).
    pub call_id: CallId,
    /// The tool.
    pub tool: String,
    /// The arguments as a person sees them: scrubbed, pretty-printed JSON in which
    /// every character outside printable ASCII is a JSON `\u` escape, so nothing in
    /// them can hide or restyle text on a terminal.
    pub arguments: String,
    /// The tool's tier.
    pub tier: SafetyTier,
    /// What [`ApprovalDecision::ApproveForSession`] covers: every call of the tool in
    /// the session (`session`), any session (`tool`), or only these arguments.
    pub scope: PermissionScope,
    /// When it was asked, in Unix milliseconds.
    pub requested_at: i64,
    /// When it lapses, in Unix milliseconds: deciding later is a denial.
    pub expires_at: i64,
    /// What the run had used of its budgets (turns, tokens, cost) when it stopped to
    /// wait: the run resumed with this approval's decision starts its counters here,
    /// so `max_turns` and `max_cost` hold over the whole run and its outcome reports
    /// the whole run (unless the resume gives
    /// [`already_used`](crate::RunRequest::already_used) itself). Zero when absent
    /// from the JSON, and left out of it when zero.
    #[serde(default, skip_serializing_if = "nothing_used")]
    pub used: UsedBudget,
    /// Why a person must decide: the provenance hold, naming the untrusted source
    /// (`this run read https://… since your last decision`, DESIGN.md §3.13), else
    /// the tool's consent rule (`the tool has a requires_consent rule`) or its tier
    /// (`the tool is privileged`). Scrubbed. `None` only for a request stored before
    /// reasons were kept; absent from the JSON then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Whether `used` is all zero (a request a store kept without it).
fn nothing_used(used: &UsedBudget) -> bool {
    *used == UsedBudget::default()
}

/// Its cost is a finite number (a run's cost never is anything else, and
/// [`UsedBudget::validate`] refuses one that is not before a resume uses it), so the
/// equality is an equivalence.
impl Eq for PendingApproval {}

impl PendingApproval {
    /// The request for `call`, deferred for `ttl` now.
    pub(crate) fn new(
        call: &ToolCall,
        tier: SafetyTier,
        scope: PermissionScope,
        ttl: Duration,
        scrubber: &Scrubber,
        used: UsedBudget,
    ) -> Self {
        let requested_at = now_millis();
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        Self {
            approval_id: ApprovalId::generate(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: display_arguments(&call.arguments, scrubber),
            tier,
            scope,
            requested_at,
            expires_at: requested_at.saturating_add(ttl),
            used,
            reason: None,
        }
    }

    /// The same request with `reason` (scrubbed by `scrubber`) as why a person must
    /// decide.
    pub(crate) fn with_reason(mut self, reason: &str, scrubber: &Scrubber) -> Self {
        self.reason = Some(scrubber.scrub(reason).into_owned());
        self
    }

    /// Whether the request has lapsed at `now` (Unix milliseconds).
    pub fn is_expired_at(&self, now: i64) -> bool {
        now >= self.expires_at
    }
}

/// A person's answer to a [`PendingApproval`]; as JSON
/// `{"decision": "approve_once" | "approve_for_session" | "deny", "reason"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub enum ApprovalDecision {
    /// Run the call; ask again next time.
    ApproveOnce,
    /// Run the call, and every later call in the request's scope without asking (a
    /// standing grant of the runtime that runs it).
    ApproveForSession,
    /// Do not run it: the model reads a permission error with `reason` and goes on.
    Deny {
        /// Why, for the model (a default text when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl ApprovalDecision {
    /// `approve_once`, `approve_for_session` or `deny`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::ApproveOnce => "approve_once",
            Self::ApproveForSession => "approve_for_session",
            Self::Deny { .. } => "deny",
        }
    }

    /// The decision that takes effect when it arrives at `now` for `pending`: a lapsed
    /// request is a denial, whatever was answered.
    pub fn effective(self, pending: &PendingApproval, now: i64) -> Self {
        if pending.is_expired_at(now) {
            Self::Deny {
                reason: Some(EXPIRED_REASON.to_owned()),
            }
        } else {
            self
        }
    }

    /// What the executor takes for the call (a denial's reason scrubbed: the model
    /// reads it).
    pub(crate) fn verdict(&self, scrubber: &Scrubber) -> CallVerdict {
        match self {
            Self::ApproveOnce => CallVerdict::ApproveOnce,
            Self::ApproveForSession => CallVerdict::ApproveForScope,
            Self::Deny { reason } => CallVerdict::Deny {
                reason: scrubber
                    .scrub(reason.as_deref().unwrap_or(DENIED_REASON))
                    .into_owned(),
            },
        }
    }
}

/// Now, in Unix milliseconds.
pub(crate) fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

/// `raw` arguments as a person reads them: scrubbed, pretty JSON (the raw text when
/// it is not JSON), with every character outside printable ASCII (and every control
/// but the line feeds of the layout) written as a JSON `\u` escape.
pub(crate) fn display_arguments(raw: &str, scrubber: &Scrubber) -> String {
    let text = match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(value) => {
            let value = scrub_value(scrubber, value);
            serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string())
        }
        Err(_) => scrubber.scrub(raw).into_owned(),
    };
    ascii_escaped(&text)
}

/// `text` with every character that is not printable ASCII, a line feed or a space
/// written as `\uXXXX` (UTF-16 units, as JSON writes them).
fn ascii_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\n' || c == ' ' || c.is_ascii_graphic() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn arguments_are_scrubbed_pretty_and_hide_nothing() {
        let scrubber = Scrubber::new();
        let raw = r#"{"command":"echo \u202e\u001b[8mhidden","key":"sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"}"#;
        let shown = display_arguments(raw, &scrubber);
        assert!(shown.is_ascii(), "{shown}");
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "{shown}"
        );
        assert!(shown.contains("\\u202e"), "{shown}");
        assert!(shown.contains("\\u001b"), "{shown}");
        assert!(
            !shown.contains("abcdefghijklmnopqrstuvwxyz0123456789"),
            "{shown}"
        );
        assert!(shown.contains("\n  \"command\""), "{shown}");
        // Still JSON: a person (or a UI) can parse what they approve.
        let parsed: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(parsed["command"], json!("echo \u{202e}\u{1b}[8mhidden"));
    }

    #[test]
    fn arguments_that_are_not_json_are_escaped_too() {
        let shown = display_arguments("not json \u{200b}\r", &Scrubber::new());
        assert_eq!(shown, "not json \\u200b\\u000d");
        assert_eq!(display_arguments("😀", &Scrubber::new()), "\\ud83d\\ude00");
    }

    #[test]
    fn decisions_read_and_write_the_api_body() {
        let deny: ApprovalDecision =
            serde_json::from_value(json!({"decision": "deny", "reason": "no"})).unwrap();
        assert_eq!(
            deny,
            ApprovalDecision::Deny {
                reason: Some("no".into())
            }
        );
        let once: ApprovalDecision =
            serde_json::from_value(json!({"decision": "approve_once"})).unwrap();
        assert_eq!(once, ApprovalDecision::ApproveOnce);
        assert_eq!(
            serde_json::to_value(ApprovalDecision::ApproveForSession).unwrap(),
            json!({"decision": "approve_for_session"})
        );
        for bad in [
            json!({"decision": "approve"}),
            json!({"decision": "APPROVE_ONCE"}),
            json!({}),
            json!({"decision": 1}),
            json!("approve_once"),
        ] {
            assert!(
                serde_json::from_value::<ApprovalDecision>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_decision_after_the_request_lapsed_is_a_denial() {
        let call = ToolCall::new(CallId::from("c1"), "shell_exec", "{}");
        let pending = PendingApproval::new(
            &call,
            SafetyTier::Privileged,
            PermissionScope::Session,
            Duration::from_secs(60),
            &Scrubber::new(),
            UsedBudget::default(),
        );
        assert_eq!(pending.expires_at - pending.requested_at, 60_000);
        let on_time = ApprovalDecision::ApproveOnce.effective(&pending, pending.expires_at - 1);
        assert_eq!(on_time, ApprovalDecision::ApproveOnce);
        let late = ApprovalDecision::ApproveOnce.effective(&pending, pending.expires_at);
        assert_eq!(
            late,
            ApprovalDecision::Deny {
                reason: Some(EXPIRED_REASON.to_owned())
            }
        );
        // A denial without a reason reaches the model with the default one.
        let verdict = ApprovalDecision::Deny { reason: None }.verdict(&Scrubber::new());
        assert_eq!(
            verdict,
            CallVerdict::Deny {
                reason: DENIED_REASON.to_owned()
            }
        );
    }
}
