//! Scrubbing events before they leave the runtime: every text an event carries (tool
//! names, tool errors, progress lines, streamed and final text, error messages) passes
//! the scrubber, so no secret reaches a sink, a stream or the CLI's output.

use oxydra_scrubbing::Scrubber;
use oxydra_types::{ModelFallback, RuntimeEvent, RuntimeProgressEvent, RuntimeProgressKind};

/// `event` with every text it carries scrubbed by `scrubber`. Ids, numbers and usage
/// are left as they are; text without a secret is not copied.
pub fn scrub_event(scrubber: &Scrubber, event: RuntimeEvent) -> RuntimeEvent {
    match event {
        RuntimeEvent::Progress(progress) => RuntimeEvent::Progress(RuntimeProgressEvent {
            kind: match progress.kind {
                RuntimeProgressKind::ToolExecution { tool_names } => {
                    RuntimeProgressKind::ToolExecution {
                        tool_names: tool_names
                            .into_iter()
                            .map(|name| scrub_string(scrubber, name))
                            .collect(),
                    }
                }
                other => other,
            },
            message: scrub_string(scrubber, progress.message),
            turn: progress.turn,
            max_turns: progress.max_turns,
        }),
        RuntimeEvent::TextDelta { text } => RuntimeEvent::TextDelta {
            text: scrub_string(scrubber, text),
        },
        RuntimeEvent::ReasoningDelta { text } => RuntimeEvent::ReasoningDelta {
            text: scrub_string(scrubber, text),
        },
        RuntimeEvent::ToolStarted {
            call_id,
            name,
            tier,
            arguments,
        } => RuntimeEvent::ToolStarted {
            call_id,
            name: scrub_string(scrubber, name),
            tier,
            arguments: scrub_string(scrubber, arguments),
        },
        RuntimeEvent::ToolCompleted {
            call_id,
            name,
            duration_ms,
            output,
        } => RuntimeEvent::ToolCompleted {
            call_id,
            name: scrub_string(scrubber, name),
            duration_ms,
            output: scrub_string(scrubber, output),
        },
        RuntimeEvent::ToolFailed {
            call_id,
            name,
            error,
        } => RuntimeEvent::ToolFailed {
            call_id,
            name: scrub_string(scrubber, name),
            error: scrub_string(scrubber, error),
        },
        RuntimeEvent::ApprovalRequested {
            approval_id,
            call_id,
            name,
            tier,
            arguments,
            scope,
            requested_at,
            expires_at,
            reason,
        } => RuntimeEvent::ApprovalRequested {
            approval_id,
            call_id,
            name: scrub_string(scrubber, name),
            tier,
            arguments: scrub_string(scrubber, arguments),
            scope,
            requested_at,
            expires_at,
            reason: reason.map(|reason| scrub_string(scrubber, reason)),
        },
        RuntimeEvent::ApprovalDecided {
            approval_id,
            call_id,
            name,
            decision,
            reason,
        } => RuntimeEvent::ApprovalDecided {
            approval_id,
            call_id,
            name: scrub_string(scrubber, name),
            decision,
            reason: reason.map(|reason| scrub_string(scrubber, reason)),
        },
        RuntimeEvent::TurnCompleted { turn, usage } => RuntimeEvent::TurnCompleted { turn, usage },
        RuntimeEvent::Final {
            session_id,
            text,
            turns,
            usage,
            cost,
            output,
        } => RuntimeEvent::Final {
            session_id,
            text: scrub_string(scrubber, text),
            turns,
            usage,
            cost,
            output: output.map(|value| scrub_value(scrubber, value)),
        },
        RuntimeEvent::SubAgent {
            call_id,
            agent,
            event,
        } => RuntimeEvent::SubAgent {
            call_id,
            agent,
            event: Box::new(scrub_event(scrubber, *event)),
        },
        RuntimeEvent::HookDecision {
            hook,
            point,
            decision,
            call_id,
            tool,
            reason,
        } => RuntimeEvent::HookDecision {
            hook: scrub_string(scrubber, hook),
            point,
            decision,
            call_id,
            tool: tool.map(|tool| scrub_string(scrubber, tool)),
            reason: reason.map(|reason| scrub_string(scrubber, reason)),
        },
        RuntimeEvent::Error { kind, message } => RuntimeEvent::Error {
            kind,
            message: scrub_string(scrubber, message),
        },
        RuntimeEvent::ModelFallback(ModelFallback { from, to, reason }) => {
            RuntimeEvent::ModelFallback(ModelFallback {
                from: scrub_string(scrubber, from),
                to: scrub_string(scrubber, to),
                reason: scrub_string(scrubber, reason),
            })
        }
        // An event type this match does not name yet (`RuntimeEvent` is
        // `#[non_exhaustive]`): fail closed, every string of its JSON form scrubbed.
        other => scrub_unnamed(scrubber, &other),
    }
}

/// `event` with every string of its JSON form scrubbed; an `error` event in its place
/// should it not survive the round trip (it never leaves unscrubbed).
fn scrub_unnamed(scrubber: &Scrubber, event: &RuntimeEvent) -> RuntimeEvent {
    serde_json::to_value(event)
        .and_then(|value| serde_json::from_value(scrub_value(scrubber, value)))
        .unwrap_or_else(|error| RuntimeEvent::Error {
            kind: "internal".to_owned(),
            message: format!("an event was withheld: it could not be scrubbed ({error})"),
        })
}

/// `value` as text, scrubbed with the default scrubber: for error values the runtime
/// logs (`error = %log_safe(&error)`), which can quote a provider's or tool's answer.
pub(crate) fn log_safe(value: &impl std::fmt::Display) -> String {
    scrub_string(&Scrubber::new(), value.to_string())
}

/// `value` with every string in it (keys left as they are) scrubbed.
pub(crate) fn scrub_value(scrubber: &Scrubber, value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(text) => Value::String(scrub_string(scrubber, text)),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| scrub_value(scrubber, item))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, item)| (key, scrub_value(scrubber, item)))
                .collect(),
        ),
        other => other,
    }
}

/// `text` scrubbed; the same allocation when it holds no secret.
fn scrub_string(scrubber: &Scrubber, text: String) -> String {
    let scrubbed = scrubber.scrub(&text);
    if scrubbed.is_clean() {
        drop(scrubbed);
        text
    } else {
        scrubbed.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::{CallId, SessionId, Usage};

    const SECRET: &str = "hunter2-very-secret";

    fn assert_clean(event: &RuntimeEvent) {
        let json = serde_json::to_string(event).unwrap();
        assert!(!json.contains(SECRET), "{json}");
        assert!(json.contains("[REDACTED]"), "{json}");
    }

    #[test]
    fn the_json_round_trip_of_unnamed_events_scrubs_every_string() {
        let scrubber = Scrubber::new();
        let event = RuntimeEvent::ToolFailed {
            call_id: CallId::from("call_1"),
            name: "web_fetch".into(),
            error: format!("HTTP 500: password={SECRET}"),
        };
        let scrubbed = scrub_unnamed(&scrubber, &event);
        assert_clean(&scrubbed);
        assert!(matches!(
            scrubbed,
            RuntimeEvent::ToolFailed { ref call_id, ref name, .. }
                if call_id.as_str() == "call_1" && name == "web_fetch"
        ));
    }

    #[test]
    fn every_text_field_is_scrubbed() {
        let scrubber = Scrubber::new();
        let leak = format!("HTTP 500: password={SECRET}");
        let events = [
            RuntimeEvent::ToolFailed {
                call_id: CallId::from("call_1"),
                name: "web_fetch".into(),
                error: leak.clone(),
            },
            RuntimeEvent::Error {
                kind: "provider".into(),
                message: leak.clone(),
            },
            RuntimeEvent::TextDelta { text: leak.clone() },
            RuntimeEvent::SubAgent {
                call_id: CallId::from("call_1"),
                agent: "researcher".into(),
                event: Box::new(RuntimeEvent::TextDelta { text: leak.clone() }),
            },
            RuntimeEvent::Final {
                session_id: SessionId::from("ses_1"),
                text: leak.clone(),
                turns: 1,
                usage: Usage::default(),
                cost: 0.0,
                output: None,
            },
            RuntimeEvent::Final {
                session_id: SessionId::from("ses_1"),
                text: "{}".into(),
                turns: 1,
                usage: Usage::default(),
                cost: 0.0,
                output: Some(serde_json::json!({"items": [{"note": leak.clone()}]})),
            },
            RuntimeEvent::Progress(RuntimeProgressEvent::new(
                RuntimeProgressKind::ToolExecution {
                    tool_names: vec![leak.clone()],
                },
                1,
                8,
            )),
            RuntimeEvent::ToolStarted {
                call_id: CallId::from("call_1"),
                name: leak.clone(),
                tier: oxydra_types::SafetyTier::ReadOnly,
                arguments: format!("{{\"command\":\"{leak}\"}}"),
            },
            RuntimeEvent::ToolCompleted {
                call_id: CallId::from("call_1"),
                name: leak.clone(),
                duration_ms: 1,
                output: format!("printed {leak}"),
            },
            RuntimeEvent::HookDecision {
                hook: "guard".into(),
                point: "before_tool".into(),
                decision: "deny".into(),
                call_id: None,
                tool: None,
                reason: Some(leak),
            },
        ];
        for event in events {
            assert_clean(&scrub_event(&scrubber, event));
        }
    }

    #[test]
    fn logged_values_are_scrubbed() {
        let logged = log_safe(&format!("HTTP 401: password={SECRET}"));
        assert_eq!(logged, "HTTP 401: password=[REDACTED]");
    }

    #[test]
    fn clean_events_are_unchanged() {
        let event = RuntimeEvent::ToolFailed {
            call_id: CallId::from("call_1"),
            name: "web_fetch".into(),
            error: "Tool execution failed: HTTP 404".into(),
        };
        assert_eq!(scrub_event(&Scrubber::new(), event.clone()), event);
    }
}
