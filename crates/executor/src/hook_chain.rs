//! [`HookChain`]: the registered [`Hook`]s in order, and the rules that combine their
//! decisions (first denial wins, rewrites chain, failures close before a tool call and
//! open elsewhere). Every decision that changes something is reported as a
//! `hook_decision` event and as an event on the current tracing span.

use std::sync::Arc;

use oxydra_tools::ToolOutput;
use oxydra_types::{CallId, RuntimeEvent};
use tokio_util::sync::CancellationToken;

use crate::error::HookError;
use crate::events::ToolEventSink;
use crate::hook::{
    AfterToolDecision, BeforeToolDecision, Hook, HookPoint, HookStop, ModelRequestDecision,
    ModelRequestEdit, ToolHookCall,
};

/// A decision some hook took at some point, for events and spans.
#[derive(Debug)]
pub(crate) struct Reported<'a> {
    pub(crate) hook: &'a str,
    pub(crate) point: HookPoint,
    /// `deny`, `rewrite`, `replace`, `stop` or `failed`.
    pub(crate) decision: &'static str,
    pub(crate) call: Option<(&'a CallId, &'a str)>,
    pub(crate) reason: Option<String>,
}

/// Sends `reported` to `events` and to the current span.
pub(crate) fn report(events: &dyn ToolEventSink, reported: Reported<'_>) {
    let Reported {
        hook,
        point,
        decision,
        call,
        reason,
    } = reported;
    tracing::info!(
        oxydra.hook.name = hook,
        oxydra.hook.point = point.as_str(),
        oxydra.hook.decision = decision,
        oxydra.hook.reason = reason.as_deref().unwrap_or(""),
        gen_ai.tool.name = call.map_or("", |(_, tool)| tool),
        "hook decision"
    );
    events.emit(RuntimeEvent::HookDecision {
        hook: hook.to_owned(),
        point: point.as_str().to_owned(),
        decision: decision.to_owned(),
        call_id: call.map(|(id, _)| id.clone()),
        tool: call.map(|(_, tool)| tool.to_owned()),
        reason,
    });
}

/// How a chain of `before_tool` hooks ended.
#[derive(Debug, PartialEq)]
pub(crate) enum BeforeToolOutcome {
    /// Every hook allowed; the arguments are unchanged.
    Allowed,
    /// Some hook denied (or failed): the hook and the reason.
    Denied { hook: String, reason: String },
}

/// The registered hooks, in registration order. Cheap to clone (shared inside).
#[derive(Clone, Default)]
pub struct HookChain {
    hooks: Arc<[Arc<dyn Hook>]>,
}

impl std::fmt::Debug for HookChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.hooks.iter().map(|hook| hook.name()))
            .finish()
    }
}

impl HookChain {
    /// The chain of `hooks`, called in this order.
    pub fn new(hooks: Vec<Arc<dyn Hook>>) -> Self {
        Self {
            hooks: hooks.into(),
        }
    }

    /// Whether no hook is registered (then nothing is copied for hooks).
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// How many hooks are registered.
    pub fn len(&self) -> usize {
        self.hooks.len()
    }

    /// Calls every hook's `before_model_request` in order on `request`; each sees what
    /// the previous ones left. The first `Stop` ends the chain and is returned. A failing hook is reported and skipped (fail open).
    pub async fn before_model_request(
        &self,
        request: &mut ModelRequestEdit,
        cancel: &CancellationToken,
        events: &dyn ToolEventSink,
    ) -> Result<(), HookStop> {
        for hook in self.hooks.iter() {
            let name = hook.name();
            match hook.before_model_request(request, cancel).await {
                Ok(ModelRequestDecision::Continue) => {}
                Ok(ModelRequestDecision::Stop { reason }) => {
                    report(
                        events,
                        Reported {
                            hook: name,
                            point: HookPoint::BeforeModelRequest,
                            decision: "stop",
                            call: None,
                            reason: Some(reason.clone()),
                        },
                    );
                    return Err(HookStop {
                        hook: name.to_owned(),
                        reason,
                    });
                }
                Err(error) => {
                    report_failure(events, name, HookPoint::BeforeModelRequest, None, &error)
                }
            }
        }
        Ok(())
    }

    /// Calls every hook's `before_tool` in order. A rewrite is passed to `validate`
    /// (which checks the new arguments against the tool's schema) before the next hook
    /// sees it; `validate` failing ends the chain with its error. The first denial, or
    /// failure (fail closed), ends the chain.
    pub(crate) async fn before_tool<E>(
        &self,
        call: &mut ToolHookCall,
        cancel: &CancellationToken,
        events: &dyn ToolEventSink,
        mut validate: impl FnMut(&str, &serde_json::Value) -> Result<serde_json::Value, E>,
    ) -> Result<BeforeToolOutcome, E> {
        for hook in self.hooks.iter() {
            let name = hook.name();
            // A failing hook denies (fail closed), reported like any other denial.
            let decision = hook
                .before_tool(call, cancel)
                .await
                .unwrap_or_else(|error| BeforeToolDecision::Deny {
                    reason: format!(
                        "the hook failed ({error}); a failing before_tool hook denies the call"
                    ),
                });
            match decision {
                BeforeToolDecision::Allow => {}
                BeforeToolDecision::Deny { reason } => {
                    report(
                        events,
                        Reported {
                            hook: name,
                            point: HookPoint::BeforeTool,
                            decision: "deny",
                            call: Some((&call.call_id, call.tool_name.as_str())),
                            reason: Some(reason.clone()),
                        },
                    );
                    return Ok(BeforeToolOutcome::Denied {
                        hook: name.to_owned(),
                        reason,
                    });
                }
                BeforeToolDecision::Rewrite { arguments } => {
                    report(
                        events,
                        Reported {
                            hook: name,
                            point: HookPoint::BeforeTool,
                            decision: "rewrite",
                            call: Some((&call.call_id, call.tool_name.as_str())),
                            reason: None,
                        },
                    );
                    call.arguments = validate(name, &arguments)?;
                }
            }
        }
        Ok(BeforeToolOutcome::Allowed)
    }

    /// Calls every hook's `after_tool` in order; each sees the output the previous ones
    /// left. A failing hook is reported and skipped (fail open).
    pub(crate) async fn after_tool(
        &self,
        call: &ToolHookCall,
        mut output: ToolOutput,
        cancel: &CancellationToken,
        events: &dyn ToolEventSink,
    ) -> ToolOutput {
        for hook in self.hooks.iter() {
            let name = hook.name();
            match hook.after_tool(call, &output, cancel).await {
                Ok(AfterToolDecision::Keep) => {}
                Ok(AfterToolDecision::Replace { content }) => {
                    report(
                        events,
                        Reported {
                            hook: name,
                            point: HookPoint::AfterTool,
                            decision: "replace",
                            call: Some((&call.call_id, call.tool_name.as_str())),
                            reason: None,
                        },
                    );
                    // The structured form described the old output; it no longer holds.
                    output = ToolOutput::text(content);
                }
                Err(error) => report_failure(
                    events,
                    name,
                    HookPoint::AfterTool,
                    Some((&call.call_id, call.tool_name.as_str())),
                    &error,
                ),
            }
        }
        output
    }

    /// Hands `event` to every hook's `on_event`, in order.
    pub fn on_event(&self, event: &RuntimeEvent) {
        for hook in self.hooks.iter() {
            hook.on_event(event);
        }
    }
}

/// Reports a hook that failed at a point that fails open.
fn report_failure(
    events: &dyn ToolEventSink,
    hook: &str,
    point: HookPoint,
    call: Option<(&CallId, &str)>,
    error: &HookError,
) {
    tracing::warn!(hook, point = point.as_str(), %error, "a hook failed; going on without it");
    report(
        events,
        Reported {
            hook,
            point,
            decision: "failed",
            call,
            reason: Some(format!("the hook failed ({error}); ignored at {point}")),
        },
    );
}
