//! Runtime lifecycle events: one variant per JSONL event type of the CLI contract.

use serde::{Deserialize, Serialize};

use crate::ids::{ApprovalId, CallId, SessionId};
use crate::progress::RuntimeProgressEvent;
use crate::tool::SafetyTier;
use crate::usage::Usage;

/// An event of a running session, serialised as one JSON object with a `type` field
/// (`oxydra run --output jsonl` prints exactly these, one per line).
///
/// `#[non_exhaustive]`: new event types may come (a consumer of the JSONL ignores the
/// types it does not know); match it with a catch-all arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RuntimeEvent {
    /// The runtime moved to a new step: `kind`, `message`, `turn`, `max_turns`.
    Progress(RuntimeProgressEvent),
    /// A piece of streamed assistant text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of the model's reasoning as the provider shows it (reasoning text of
    /// OpenAI-compatible servers, Responses reasoning summaries, Anthropic thinking,
    /// Gemini thought summaries). Never part of the answer.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// A tool call is about to run (sent for every call of a batch, in request order,
    /// before any of them starts).
    ToolStarted {
        /// The call.
        call_id: CallId,
        /// The tool.
        name: String,
        /// The tool's safety tier.
        tier: SafetyTier,
        /// The call's arguments as the model sent them (a JSON text).
        #[serde(default)]
        arguments: String,
    },
    /// A tool call finished successfully.
    ToolCompleted {
        /// The call.
        call_id: CallId,
        /// The tool.
        name: String,
        /// How long it ran.
        duration_ms: u64,
        /// The result text the model got (scrubbed, after the tool's own output limit;
        /// an earlier identical call's output when dedupe reused it). Empty in events
        /// recorded before this field existed.
        #[serde(default)]
        output: String,
    },
    /// A tool call failed; the model receives `error` as the call's result.
    ToolFailed {
        /// The call.
        call_id: CallId,
        /// The tool.
        name: String,
        /// What went wrong.
        error: String,
    },
    /// A tool call needs a person's approval that no one can give now: the call waits
    /// and the run ends waiting for approval (an `error` event of kind
    /// `waiting_approval` follows), to resume once it is decided.
    ApprovalRequested {
        /// The request, to decide it by.
        approval_id: ApprovalId,
        /// The call waiting.
        call_id: CallId,
        /// The tool.
        name: String,
        /// The tool's safety tier.
        tier: SafetyTier,
        /// The call's arguments as a person sees them: scrubbed, pretty JSON, every
        /// character outside printable ASCII written as a JSON `\u` escape.
        arguments: String,
        /// What `approve_for_session` would cover: `tool`, `session` or `arguments`.
        scope: String,
        /// When it was asked, in Unix milliseconds.
        requested_at: i64,
        /// When it lapses (a lapsed request is a denial), in Unix milliseconds.
        expires_at: i64,
        /// Why a person must decide, when it is more than the tool's rule or tier: the
        /// provenance hold (`this run read https://… since your last decision`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A person decided on a waiting call (or its request lapsed) and the run resumed.
    ApprovalDecided {
        /// The request.
        approval_id: ApprovalId,
        /// The call.
        call_id: CallId,
        /// The tool.
        name: String,
        /// `approve_once`, `approve_for_session` or `deny`.
        decision: String,
        /// Why it was denied (what the model reads), when it was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A turn (one provider call and the tools it asked for) finished.
    TurnCompleted {
        /// The turn, from 1.
        turn: usize,
        /// Tokens the turn's provider call used.
        usage: Usage,
    },
    /// The agent yielded its final answer.
    Final {
        /// The session, to continue it with `--session`.
        session_id: SessionId,
        /// The final answer.
        text: String,
        /// Turns taken.
        turns: usize,
        /// Tokens used over the whole run.
        usage: Usage,
        /// Cost of the run, in US dollars.
        cost: f64,
        /// The structured answer, when the run was asked for one (it validated
        /// against the requested schema); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<serde_json::Value>,
    },
    /// An event of a sub-agent that a tool call of this run started (an agent
    /// offered as a tool): `event` happened in the sub-agent's own run.
    SubAgent {
        /// The call of this run that started the sub-agent.
        call_id: CallId,
        /// The sub-agent's tool name.
        agent: String,
        /// What happened in the sub-agent's run.
        event: Box<RuntimeEvent>,
    },
    /// A hook changed what the run does: denied or rewrote a tool call, replaced a
    /// tool's output, stopped the run before a model request, or failed where a
    /// failure is ignored. Calls a hook let pass unchanged are not reported.
    HookDecision {
        /// The hook's name.
        hook: String,
        /// Where: `before_model_request`, `before_tool`, `after_tool` or `on_event`.
        point: String,
        /// `deny`, `rewrite`, `replace`, `stop` or `failed`.
        decision: String,
        /// The tool call it is about (tool hook points only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<CallId>,
        /// The tool of that call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// The hook's reason (a denial or stop), or why it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The model asked failed after its retries and a fallback model takes the same
    /// request (`[[provider.fallback]]`); sent before any of the fallback's answer.
    ModelFallback(ModelFallback),
    /// A provider call failed in a way worth trying again (a rate limit, an overloaded
    /// or failing server, a broken connection) and is retried after a wait: sent when
    /// the wait begins, so a person sees why nothing moves.
    ProviderRetry(ProviderRetry),
    /// The run ended with an error.
    Error {
        /// A stable, snake_case error kind (`budget_exceeded`, `cancelled`, `provider`, …).
        kind: String,
        /// What happened.
        message: String,
    },
}

/// A model that failed a call after its retries, and the model that takes it next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFallback {
    /// The model that failed.
    pub from: String,
    /// The model that takes the request.
    pub to: String,
    /// Why `from` failed (the provider's error, as it describes itself).
    pub reason: String,
}

/// A failed provider call that is tried again after a wait.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderRetry {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// The most attempts the call gets.
    pub max_attempts: u32,
    /// How long the wait before the next attempt is, in milliseconds (a provider's
    /// `Retry-After` when it gave one).
    pub delay_ms: u64,
    /// Why, in a few words: `rate limited`, `overloaded`, `server error 503`,
    /// `timed out`, `connection failed`.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::RuntimeProgressKind;
    use serde_json::json;

    #[test]
    fn events_serialise_exactly_as_the_jsonl_contract_says() {
        let cases = vec![
            (
                RuntimeEvent::Progress(RuntimeProgressEvent::new(
                    RuntimeProgressKind::ProviderCall,
                    1,
                    8,
                )),
                json!({"type":"progress","kind":"provider_call","message":"[1/8] Calling the model","turn":1,"max_turns":8}),
            ),
            (
                RuntimeEvent::TextDelta { text: "Hi".into() },
                json!({"type":"text_delta","text":"Hi"}),
            ),
            (
                RuntimeEvent::ReasoningDelta { text: "Hm".into() },
                json!({"type":"reasoning_delta","text":"Hm"}),
            ),
            (
                RuntimeEvent::ToolStarted {
                    call_id: CallId::from("c1"),
                    name: "file_read".into(),
                    tier: SafetyTier::ReadOnly,
                    arguments: r#"{"path":"a.md"}"#.into(),
                },
                json!({"type":"tool_started","call_id":"c1","name":"file_read","tier":"read_only","arguments":"{\"path\":\"a.md\"}"}),
            ),
            (
                RuntimeEvent::ToolCompleted {
                    call_id: CallId::from("c1"),
                    name: "file_read".into(),
                    duration_ms: 12,
                    output: "# A".into(),
                },
                json!({"type":"tool_completed","call_id":"c1","name":"file_read","duration_ms":12,"output":"# A"}),
            ),
            (
                RuntimeEvent::ToolFailed {
                    call_id: CallId::from("c2"),
                    name: "shell_exec".into(),
                    error: "denied".into(),
                },
                json!({"type":"tool_failed","call_id":"c2","name":"shell_exec","error":"denied"}),
            ),
            (
                RuntimeEvent::ApprovalRequested {
                    approval_id: ApprovalId::from("apr_1"),
                    call_id: CallId::from("c3"),
                    name: "shell_exec".into(),
                    tier: SafetyTier::Privileged,
                    arguments: "{\n  \"command\": \"ls\"\n}".into(),
                    scope: "session".into(),
                    requested_at: 1_000,
                    expires_at: 61_000,
                    reason: None,
                },
                json!({"type":"approval_requested","approval_id":"apr_1","call_id":"c3",
                    "name":"shell_exec","tier":"privileged","arguments":"{\n  \"command\": \"ls\"\n}",
                    "scope":"session","requested_at":1000,"expires_at":61000}),
            ),
            (
                RuntimeEvent::ApprovalDecided {
                    approval_id: ApprovalId::from("apr_1"),
                    call_id: CallId::from("c3"),
                    name: "shell_exec".into(),
                    decision: "deny".into(),
                    reason: Some("not now".into()),
                },
                json!({"type":"approval_decided","approval_id":"apr_1","call_id":"c3",
                    "name":"shell_exec","decision":"deny","reason":"not now"}),
            ),
            (
                RuntimeEvent::ApprovalDecided {
                    approval_id: ApprovalId::from("apr_2"),
                    call_id: CallId::from("c4"),
                    name: "file_write".into(),
                    decision: "approve_once".into(),
                    reason: None,
                },
                json!({"type":"approval_decided","approval_id":"apr_2","call_id":"c4",
                    "name":"file_write","decision":"approve_once"}),
            ),
            (
                RuntimeEvent::TurnCompleted {
                    turn: 2,
                    usage: Usage::new(10, 5, 0),
                },
                json!({"type":"turn_completed","turn":2,"usage":{"input_tokens":10,"output_tokens":5,"cached_tokens":0,
                    "cache_write_tokens":0,"reasoning_tokens":0}}),
            ),
            (
                RuntimeEvent::Final {
                    session_id: SessionId::from("ses_1"),
                    text: "done".into(),
                    turns: 3,
                    usage: Usage::new(30, 9, 4)
                        .with_cache_write_tokens(2)
                        .with_reasoning_tokens(1),
                    cost: 0.25,
                    output: None,
                },
                json!({"type":"final","session_id":"ses_1","text":"done","turns":3,
                    "usage":{"input_tokens":30,"output_tokens":9,"cached_tokens":4,
                    "cache_write_tokens":2,"reasoning_tokens":1},"cost":0.25}),
            ),
            (
                RuntimeEvent::Final {
                    session_id: SessionId::from("ses_2"),
                    text: "{\"n\":1}".into(),
                    turns: 1,
                    usage: Usage::default(),
                    cost: 0.0,
                    output: Some(json!({"n": 1})),
                },
                json!({"type":"final","session_id":"ses_2","text":"{\"n\":1}","turns":1,
                    "usage":{"input_tokens":0,"output_tokens":0,"cached_tokens":0,
                    "cache_write_tokens":0,"reasoning_tokens":0},"cost":0.0,"output":{"n":1}}),
            ),
            (
                RuntimeEvent::SubAgent {
                    call_id: CallId::from("c9"),
                    agent: "researcher".into(),
                    event: Box::new(RuntimeEvent::TextDelta { text: "hi".into() }),
                },
                json!({"type":"sub_agent","call_id":"c9","agent":"researcher",
                    "event":{"type":"text_delta","text":"hi"}}),
            ),
            (
                RuntimeEvent::HookDecision {
                    hook: "guard".into(),
                    point: "before_tool".into(),
                    decision: "deny".into(),
                    call_id: Some(CallId::from("c3")),
                    tool: Some("shell_exec".into()),
                    reason: Some("no rm".into()),
                },
                json!({"type":"hook_decision","hook":"guard","point":"before_tool",
                    "decision":"deny","call_id":"c3","tool":"shell_exec","reason":"no rm"}),
            ),
            (
                RuntimeEvent::HookDecision {
                    hook: "budget".into(),
                    point: "before_model_request".into(),
                    decision: "stop".into(),
                    call_id: None,
                    tool: None,
                    reason: Some("quota".into()),
                },
                json!({"type":"hook_decision","hook":"budget","point":"before_model_request",
                    "decision":"stop","reason":"quota"}),
            ),
            (
                RuntimeEvent::ModelFallback(ModelFallback {
                    from: "gpt-4o".into(),
                    to: "claude-haiku".into(),
                    reason: "overloaded (529)".into(),
                }),
                json!({"type":"model_fallback","from":"gpt-4o","to":"claude-haiku",
                    "reason":"overloaded (529)"}),
            ),
            (
                RuntimeEvent::ProviderRetry(ProviderRetry {
                    attempt: 2,
                    max_attempts: 4,
                    delay_ms: 5000,
                    reason: "rate limited".into(),
                }),
                json!({"type":"provider_retry","attempt":2,"max_attempts":4,"delay_ms":5000,
                    "reason":"rate limited"}),
            ),
            (
                RuntimeEvent::Error {
                    kind: "budget_exceeded".into(),
                    message: "max_turns 8 reached".into(),
                },
                json!({"type":"error","kind":"budget_exceeded","message":"max_turns 8 reached"}),
            ),
        ];
        for (event, expected) in cases {
            let value = serde_json::to_value(&event).unwrap();
            assert_eq!(value, expected);
            let back: RuntimeEvent = serde_json::from_value(value).unwrap();
            assert_eq!(back, event);
        }
    }

    #[test]
    fn unknown_event_type_is_rejected() {
        assert!(serde_json::from_str::<RuntimeEvent>(r#"{"type":"nope"}"#).is_err());
    }
}
