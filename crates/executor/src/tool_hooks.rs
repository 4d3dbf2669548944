//! Where the executor calls the hooks: `before_tool` once a call's arguments passed the
//! guard (and before dedupe, rules and consent), `after_tool` once a call produced
//! output (before anything stores or scrubs it).

use oxydra_tools::ToolOutput;
use oxydra_types::{SafetyTier, ToolCall};
use serde_json::Value;

use crate::admission::Prepared;
use crate::context::ExecutionContext;
use crate::dedupe::canonical_key;
use crate::error::ToolExecutionError;
use crate::events::ToolEventSink;
use crate::executor::ToolExecutor;
use crate::hook::ToolHookCall;
use crate::hook_chain::BeforeToolOutcome;

impl ToolExecutor {
    /// [`prepare`](Self::prepare), then the `before_tool` hooks: a denial refuses the
    /// call, a rewrite replaces its arguments once they passed the tool's schema.
    pub(crate) async fn prepare_hooked(
        &self,
        call: &ToolCall,
        ctx: &ExecutionContext,
        events: &dyn ToolEventSink,
    ) -> Result<Prepared, (Option<SafetyTier>, ToolExecutionError)> {
        let mut ready = self.prepare(call)?;
        if self.hooks.is_empty() {
            return Ok(ready);
        }
        let tier = Some(ready.tier);
        let mut view = ToolHookCall {
            session_id: ctx.session_id.clone(),
            call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments: std::mem::take(&mut ready.args),
        };
        let original = view.arguments.clone();
        let tool = ready.tool.as_ref();
        let validate = |hook: &str, arguments: &Value| -> Result<Value, ToolExecutionError> {
            let text = serde_json::to_string(arguments).unwrap_or_default();
            let rewritten = ToolCall::new(call.id.clone(), call.name.clone(), text);
            self.schemas
                .check(&rewritten, tool)
                .map(|checked| checked.args)
                .map_err(|error| ToolExecutionError::HookRewriteInvalid {
                    tool_name: call.name.clone(),
                    hook: hook.to_owned(),
                    source: Box::new(error),
                })
        };
        let outcome = self
            .hooks
            .before_tool(&mut view, &ctx.cancel, events, validate)
            .await
            .map_err(|error| (tier, error))?;
        if let BeforeToolOutcome::Denied { hook, reason } = outcome {
            return Err((
                tier,
                ToolExecutionError::HookDenied {
                    tool_name: call.name.clone(),
                    hook,
                    reason,
                },
            ));
        }
        if view.arguments != original && !ready.key.is_empty() {
            // Dedupe and argument-scoped grants key on what really runs.
            ready.key = canonical_key(&call.name, &view.arguments);
        }
        ready.args = view.arguments;
        Ok(ready)
    }

    /// The `after_tool` hooks over a call's outcome: output is handed to them in order
    /// (each may replace it); a failure passes through unchanged.
    pub(crate) async fn after_tool_hooks(
        &self,
        hook_call: Option<ToolHookCall>,
        outcome: Result<ToolOutput, ToolExecutionError>,
        ctx: &ExecutionContext,
        events: &dyn ToolEventSink,
    ) -> Result<ToolOutput, ToolExecutionError> {
        match (hook_call, outcome) {
            (Some(call), Ok(output)) => Ok(self
                .hooks
                .after_tool(&call, output, &ctx.cancel, events)
                .await),
            (_, outcome) => outcome,
        }
    }

    /// What the `after_tool` hooks will be shown of a call about to run; `None` (and
    /// nothing copied) without hooks.
    pub(crate) fn hook_view(
        &self,
        call: &ToolCall,
        args: &Value,
        ctx: &ExecutionContext,
    ) -> Option<ToolHookCall> {
        (!self.hooks.is_empty()).then(|| ToolHookCall {
            session_id: ctx.session_id.clone(),
            call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments: args.clone(),
        })
    }
}
