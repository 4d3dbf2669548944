//! The intent journal: where a side-effecting or privileged call is recorded before it
//! runs, and its outcome after, so that a run resumed after a crash never repeats a
//! side effect blindly (DESIGN.md §3.14).
//!
//! The executor calls the journal of the batch's [`ExecutionContext`](crate::ExecutionContext)
//! for every admitted call that is not read-only: [`IntentJournal::before_call`] once
//! consent and the hooks have passed, right before the tool starts (the call does not
//! run unless its intent was stored), and [`IntentJournal::after_call`] as soon as the
//! tool's future ends. The key the journal returns reaches the tool in its
//! [`ToolContext`](oxydra_tools::ToolContext).

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_tools::{Tool, ToolOutput};
use oxydra_types::{SafetyTier, SessionId, ToolCall};

use crate::error::ToolExecutionError;

/// A call about to run, as the journal records it.
#[derive(Debug)]
pub struct CallIntent<'a> {
    /// The call as the model made it.
    pub call: &'a ToolCall,
    /// The tool's tier (never read-only).
    pub tier: SafetyTier,
    /// The arguments the tool gets (after validation and the hooks; `{{secret:NAME}}`
    /// handles not yet put in).
    pub args: &'a serde_json::Value,
    /// What [`Tool::state_before`] recorded (`None`: nothing).
    pub before: Option<String>,
}

/// Where intents and outcomes go (the runtime keeps them in its memory store).
#[async_trait]
pub trait IntentJournal: Send + Sync + std::fmt::Debug {
    /// Stores the intent of a call about to run in `session`, durably, and returns its
    /// idempotency key. An error (why the intent could not be stored) fails the call
    /// without running it.
    async fn before_call(
        &self,
        session: &SessionId,
        intent: CallIntent<'_>,
    ) -> Result<String, String>;

    /// Stores how the call of intent `key` ended. A failure here cannot undo the
    /// call: the journal logs it, and the intent then reads as an unknown outcome.
    async fn after_call(
        &self,
        session: &SessionId,
        key: &str,
        outcome: &Result<ToolOutput, ToolExecutionError>,
    );
}

/// The journal's key for a call of `tool` (`None` when the call is read-only or
/// there is no journal), its intent stored first; or the error that keeps the call
/// from running.
pub(crate) async fn record_intent(
    journal: Option<&Arc<dyn IntentJournal>>,
    session: &SessionId,
    call: &ToolCall,
    tier: SafetyTier,
    tool: &Arc<dyn Tool>,
    args: &serde_json::Value,
    workspace_root: &std::path::Path,
) -> Result<Option<String>, ToolExecutionError> {
    let Some(journal) = journal else {
        return Ok(None);
    };
    if tier == SafetyTier::ReadOnly {
        return Ok(None);
    }
    let before = {
        let (tool, args, root) = (Arc::clone(tool), args.clone(), workspace_root.to_owned());
        tokio::task::spawn_blocking(move || tool.state_before(&args, &root))
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "reading the state before a call failed");
                None
            })
    };
    let intent = CallIntent {
        call,
        tier,
        args,
        before,
    };
    match journal.before_call(session, intent).await {
        Ok(key) => Ok(Some(key)),
        Err(why) => Err(ToolExecutionError::Failed(oxydra_tools::ToolError::Failed(
            format!(
                "the call's intent could not be stored ({why}); it was not run, so that a \
                 crash cannot leave its outcome unknown"
            ),
        ))),
    }
}
