//! The JSON a command hook reads on stdin and the decision it prints on stdout, in the
//! shape Claude Code's command hooks use (docs/configuration.md, "Hooks").
//!
//! Input: `hook_event_name` (`PreToolUse`, `PostToolUse`, `BeforeModelRequest`,
//! `OnEvent`), `oxydra_event` (our name of the point), `session_id`, `cwd`, and per
//! point `tool_name`, `tool_input`, `tool_use_id`, `tool_response` {`content`}, or
//! `turn`, `model`, `messages`, `tools`, or `event`.
//!
//! Output: nothing (exit 0) lets things be. Exit code 2 blocks, with stderr as the
//! reason. Any other non-zero exit is a failure. Else stdout is one JSON object with
//! `decision` (`approve`/`allow` or `block`/`deny`), `reason`, `continue` (`false`
//! blocks), `stopReason`, `hookSpecificOutput` {`hookEventName`, `permissionDecision`
//! (`allow`/`deny`), `permissionDecisionReason`, `updatedInput`, `updatedToolOutput`},
//! and the ignored `suppressOutput` and `systemMessage`. Any other key, a field that
//! means nothing at the hook's point, or stdout that is JSON but no object (an array,
//! even of nulls, a number, a string, `null`) is an invalid decision, and an invalid
//! decision of a `before_tool` hook denies the call.

use oxydra_tools::ToolOutput;
use oxydra_types::RuntimeEvent;
use serde::Deserialize;
use serde_json::{Value, json};

use super::process::HookOutput;
use crate::error::HookError;
use crate::hook::{
    AfterToolDecision, BeforeToolDecision, ModelRequestDecision, ModelRequestEdit, ToolHookCall,
};

/// The exit code that blocks, with stderr as the reason (as Claude Code's hooks do).
pub const BLOCK_EXIT_CODE: i32 = 2;

/// The input of a `before_tool` hook.
pub(crate) fn before_tool_input(call: &ToolHookCall, cwd: &str) -> Value {
    json!({
        "hook_event_name": "PreToolUse",
        "oxydra_event": "before_tool",
        "session_id": call.session_id.as_str(),
        "cwd": cwd,
        "tool_name": call.tool_name,
        "tool_input": call.arguments,
        "tool_use_id": call.call_id.as_str(),
    })
}

/// The input of an `after_tool` hook.
pub(crate) fn after_tool_input(call: &ToolHookCall, output: &ToolOutput, cwd: &str) -> Value {
    json!({
        "hook_event_name": "PostToolUse",
        "oxydra_event": "after_tool",
        "session_id": call.session_id.as_str(),
        "cwd": cwd,
        "tool_name": call.tool_name,
        "tool_input": call.arguments,
        "tool_use_id": call.call_id.as_str(),
        "tool_response": {"content": output.content, "structured": output.structured},
    })
}

/// The input of a `before_model_request` hook.
pub(crate) fn model_request_input(request: &ModelRequestEdit, cwd: &str) -> Value {
    json!({
        "hook_event_name": "BeforeModelRequest",
        "oxydra_event": "before_model_request",
        "session_id": request.session_id.as_str(),
        "cwd": cwd,
        "turn": request.turn,
        "model": request.model,
        "messages": request.messages,
        "tools": request.tools.iter().map(|tool| tool.name.as_str()).collect::<Vec<_>>(),
    })
}

/// The input of an `on_event` hook.
pub(crate) fn event_input(event: &RuntimeEvent, cwd: &str) -> Value {
    json!({
        "hook_event_name": "OnEvent",
        "oxydra_event": "on_event",
        "cwd": cwd,
        "event": event,
    })
}

/// A hook's stdout decision.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    decision: Option<String>,
    reason: Option<String>,
    #[serde(rename = "continue")]
    keep_going: Option<bool>,
    #[serde(rename = "stopReason")]
    stop_reason: Option<String>,
    #[serde(rename = "hookSpecificOutput")]
    specific: Option<Specific>,
    #[serde(rename = "suppressOutput")]
    _suppress_output: Option<bool>,
    #[serde(rename = "systemMessage")]
    _system_message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Specific {
    #[serde(rename = "hookEventName")]
    _event_name: Option<String>,
    #[serde(rename = "permissionDecision")]
    permission: Option<String>,
    #[serde(rename = "permissionDecisionReason")]
    permission_reason: Option<String>,
    #[serde(rename = "updatedInput")]
    updated_input: Option<Value>,
    #[serde(rename = "updatedToolOutput")]
    updated_output: Option<String>,
}

/// What an answer amounts to, at any point.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Let things be (with the changes the answer carries).
    Pass,
    /// Block, with this reason.
    Block(String),
}

impl Answer {
    /// Reads `output`: a block by exit code, a failure, or the parsed stdout.
    fn read(output: &HookOutput) -> Result<Self, HookError> {
        match output.code {
            Some(0) => {}
            Some(BLOCK_EXIT_CODE) => {
                return Ok(Self {
                    decision: Some("block".into()),
                    reason: Some(if output.stderr.is_empty() {
                        "blocked (exit code 2)".to_owned()
                    } else {
                        output.stderr.clone()
                    }),
                    ..Self::default()
                });
            }
            code => {
                let status =
                    code.map_or_else(|| "a signal".to_owned(), |code| format!("exit code {code}"));
                let detail = if output.stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {}", output.stderr)
                };
                return Err(HookError::Failed {
                    message: format!("the hook ended with {status}{detail}"),
                });
            }
        }
        let text = std::str::from_utf8(&output.stdout)
            .map_err(|_| invalid("stdout is not UTF-8".into()))?;
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let value: Value = serde_json::from_str(text)
            .map_err(|error| invalid(format!("stdout is not a decision object: {error}")))?;
        // serde's derived deserializer also takes a struct from a sequence of its
        // fields (`[null,null,…]` reads as an empty answer, an allow): only an object,
        // and an object (or nothing) as `hookSpecificOutput`, is an answer.
        let specific = value.get("hookSpecificOutput");
        if !value.is_object() || specific.is_some_and(|s| !s.is_object() && !s.is_null()) {
            return Err(invalid(format!(
                "stdout is not a decision object: {} is not a JSON object",
                if value.is_object() {
                    "hookSpecificOutput"
                } else {
                    crate::validation::json_kind(&value)
                }
            )));
        }
        serde_json::from_value(value)
            .map_err(|error| invalid(format!("stdout is not a decision object: {error}")))
    }

    /// Block or pass, from `decision`, `continue` and `permissionDecision`.
    fn verdict(&self) -> Result<Verdict, HookError> {
        let specific = self.specific.as_ref();
        let mut block = match self.decision.as_deref() {
            None | Some("approve" | "allow") => false,
            Some("block" | "deny") => true,
            Some(other) => {
                return Err(invalid(format!(
                    "unknown decision `{other}` (expected `approve` or `block`)"
                )));
            }
        };
        block |= self.keep_going == Some(false);
        match specific.and_then(|s| s.permission.as_deref()) {
            None | Some("allow") => {}
            Some("deny") => block = true,
            Some(other) => {
                return Err(invalid(format!(
                    "permissionDecision `{other}` is not supported (expected `allow` or `deny`)"
                )));
            }
        }
        if !block {
            return Ok(Verdict::Pass);
        }
        let reason = specific
            .and_then(|s| s.permission_reason.clone())
            .or_else(|| self.reason.clone())
            .or_else(|| self.stop_reason.clone())
            .unwrap_or_else(|| "no reason given".to_owned());
        Ok(Verdict::Block(reason))
    }

    fn updated_input(&self) -> Option<&Value> {
        self.specific
            .as_ref()
            .and_then(|s| s.updated_input.as_ref())
    }

    fn updated_output(&self) -> Option<&String> {
        self.specific
            .as_ref()
            .and_then(|s| s.updated_output.as_ref())
    }
}

fn invalid(message: String) -> HookError {
    HookError::InvalidDecision { message }
}

/// The decision of a `before_tool` hook.
pub(crate) fn before_tool_decision(output: &HookOutput) -> Result<BeforeToolDecision, HookError> {
    let answer = Answer::read(output)?;
    if answer.updated_output().is_some() {
        return Err(invalid(
            "updatedToolOutput means nothing before a tool call".into(),
        ));
    }
    match answer.verdict()? {
        Verdict::Block(reason) => Ok(BeforeToolDecision::Deny { reason }),
        Verdict::Pass => Ok(match answer.updated_input() {
            Some(arguments) => BeforeToolDecision::Rewrite {
                arguments: arguments.clone(),
            },
            None => BeforeToolDecision::Allow,
        }),
    }
}

/// The decision of an `after_tool` hook: a block replaces the output with its reason.
pub(crate) fn after_tool_decision(output: &HookOutput) -> Result<AfterToolDecision, HookError> {
    let answer = Answer::read(output)?;
    if answer.updated_input().is_some() {
        return Err(invalid(
            "updatedInput means nothing after a tool call".into(),
        ));
    }
    match answer.verdict()? {
        Verdict::Block(reason) => Ok(AfterToolDecision::Replace { content: reason }),
        Verdict::Pass => Ok(match answer.updated_output() {
            Some(content) => AfterToolDecision::Replace {
                content: content.clone(),
            },
            None => AfterToolDecision::Keep,
        }),
    }
}

/// The decision of a `before_model_request` hook.
pub(crate) fn model_request_decision(
    output: &HookOutput,
) -> Result<ModelRequestDecision, HookError> {
    let answer = Answer::read(output)?;
    if answer.updated_input().is_some() || answer.updated_output().is_some() {
        return Err(invalid(
            "a before_model_request hook may only stop the run or let it go on".into(),
        ));
    }
    match answer.verdict()? {
        Verdict::Block(reason) => Ok(ModelRequestDecision::Stop { reason }),
        Verdict::Pass => Ok(ModelRequestDecision::Continue),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, stdout: &str, stderr: &str) -> HookOutput {
        HookOutput {
            code: Some(code),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.to_owned(),
        }
    }

    #[test]
    fn claude_code_shapes_decide_a_tool_call() {
        let allow = before_tool_decision(&out(0, "", "")).unwrap();
        assert_eq!(allow, BeforeToolDecision::Allow);
        let block =
            before_tool_decision(&out(0, r#"{"decision":"block","reason":"no rm"}"#, "")).unwrap();
        assert_eq!(
            block,
            BeforeToolDecision::Deny {
                reason: "no rm".into()
            }
        );
        let deny = before_tool_decision(&out(
            0,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy"}}"#,
            "",
        ))
        .unwrap();
        assert_eq!(
            deny,
            BeforeToolDecision::Deny {
                reason: "policy".into()
            }
        );
        let rewrite = before_tool_decision(&out(
            0,
            r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"path":"b"}}}"#,
            "",
        ))
        .unwrap();
        assert_eq!(
            rewrite,
            BeforeToolDecision::Rewrite {
                arguments: json!({"path": "b"})
            }
        );
        let by_exit = before_tool_decision(&out(2, "ignored", "not on Fridays")).unwrap();
        assert_eq!(
            by_exit,
            BeforeToolDecision::Deny {
                reason: "not on Fridays".into()
            }
        );
        let stop =
            before_tool_decision(&out(0, r#"{"continue":false,"stopReason":"halt"}"#, "")).unwrap();
        assert_eq!(
            stop,
            BeforeToolDecision::Deny {
                reason: "halt".into()
            }
        );
    }

    #[test]
    fn bad_answers_are_errors_that_say_what_is_wrong() {
        let error = |stdout: &str| {
            before_tool_decision(&out(0, stdout, ""))
                .unwrap_err()
                .to_string()
        };
        assert!(error("not json").contains("not a decision object"));
        assert!(error("[1]").contains("not a decision object"));
        // A sequence of as many nulls as the answer has fields is no empty answer.
        for answer in [
            "[null,null,null,null,null,null,null]",
            "[]",
            "null",
            "7",
            "\"allow\"",
            "true",
        ] {
            assert!(
                error(answer).contains("is not a JSON object"),
                "{answer}: {}",
                error(answer)
            );
        }
        assert!(
            error(r#"{"hookSpecificOutput":[null,null,null,null,null]}"#)
                .contains("hookSpecificOutput is not a JSON object")
        );
        assert!(after_tool_decision(&out(0, "[null,null,null,null,null,null,null]", "")).is_err());
        assert!(
            model_request_decision(&out(0, "[null,null,null,null,null,null,null]", "")).is_err()
        );
        assert!(error(r#"{"decision":"maybe"}"#).contains("unknown decision `maybe`"));
        assert!(error(r#"{"decison":"block"}"#).contains("unknown field"));
        assert!(
            error(r#"{"hookSpecificOutput":{"permissionDecision":"ask"}}"#)
                .contains("`ask` is not supported")
        );
        assert!(
            error(r#"{"hookSpecificOutput":{"updatedToolOutput":"x"}}"#).contains("means nothing")
        );
        let failed = before_tool_decision(&out(1, "", "boom")).unwrap_err();
        assert_eq!(failed.to_string(), "the hook ended with exit code 1: boom");
        let signal = HookOutput {
            code: None,
            stdout: Vec::new(),
            stderr: String::new(),
        };
        assert!(
            before_tool_decision(&signal)
                .unwrap_err()
                .to_string()
                .contains("a signal")
        );
        let binary = HookOutput {
            code: Some(0),
            stdout: vec![0xff, 0xfe],
            stderr: String::new(),
        };
        assert!(
            before_tool_decision(&binary)
                .unwrap_err()
                .to_string()
                .contains("UTF-8")
        );
    }

    #[test]
    fn after_tool_and_model_request_decisions() {
        assert_eq!(
            after_tool_decision(&out(0, "", "")).unwrap(),
            AfterToolDecision::Keep
        );
        assert_eq!(
            after_tool_decision(&out(
                0,
                r#"{"hookSpecificOutput":{"updatedToolOutput":"short"}}"#,
                ""
            ))
            .unwrap(),
            AfterToolDecision::Replace {
                content: "short".into()
            }
        );
        assert_eq!(
            after_tool_decision(&out(0, r#"{"decision":"block","reason":"hidden"}"#, "")).unwrap(),
            AfterToolDecision::Replace {
                content: "hidden".into()
            }
        );
        assert!(
            after_tool_decision(&out(0, r#"{"hookSpecificOutput":{"updatedInput":{}}}"#, ""))
                .is_err()
        );
        assert_eq!(
            model_request_decision(&out(0, "{}", "")).unwrap(),
            ModelRequestDecision::Continue
        );
        assert_eq!(
            model_request_decision(&out(0, r#"{"decision":"block","reason":"quota"}"#, ""))
                .unwrap(),
            ModelRequestDecision::Stop {
                reason: "quota".into()
            }
        );
    }
}
