//! Running one admitted call: panics caught, a timeout, and cancellation passed down
//! as a child token.
//!
//! The tool's future runs inside the batch's own task (wrapped in `catch_unwind`), so a
//! concurrent group costs no task spawns or cross-thread wake-ups; tools with heavy
//! blocking work use `spawn_blocking` themselves, as the tool contract asks.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::CallId;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::error::ToolExecutionError;
use crate::secret_handles::SecretHandles;

/// Everything one run needs.
pub(crate) struct Invocation {
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) tool_name: String,
    pub(crate) args: serde_json::Value,
    pub(crate) call_id: CallId,
    pub(crate) workspace_root: PathBuf,
    /// The handles `{{secret:NAME}}` in `args` stand for, put in here and nowhere
    /// earlier.
    pub(crate) secrets: Arc<SecretHandles>,
    /// The call's idempotency key, when its intent was stored.
    pub(crate) idempotency_key: Option<String>,
}

/// Run `invocation` until it finishes, `timeout` elapses or `cancel` fires. On timeout
/// or cancellation the tool's token is cancelled and its future dropped. Returns the
/// outcome and, when the tool's own future completed, the instant it did.
pub(crate) async fn invoke(
    invocation: Invocation,
    cancel: &CancellationToken,
    timeout: Duration,
    span: tracing::Span,
) -> (Result<ToolOutput, ToolExecutionError>, Option<Instant>) {
    let Invocation {
        tool,
        tool_name,
        args,
        call_id,
        workspace_root,
        secrets,
        idempotency_key,
    } = invocation;
    let args = match secrets.resolve(&tool_name, &args) {
        Ok(None) => args,
        Ok(Some(resolved)) => resolved,
        Err(message) => {
            let refused = ToolError::InvalidArguments { message };
            return (Err(ToolExecutionError::Failed(refused)), None);
        }
    };
    let child = cancel.child_token();
    let mut context = ToolContext::new(workspace_root, child.clone(), call_id);
    if let Some(key) = idempotency_key {
        context = context.with_idempotency_key(key);
    }
    let run = async {
        // The call itself is inside too: a tool may panic before returning its future.
        let caught = AssertUnwindSafe(async { tool.execute(args, &context).await })
            .catch_unwind()
            .await;
        (caught, Instant::now())
    }
    .instrument(span);
    let (outcome, finished_at) = tokio::select! {
        biased;
        () = cancel.cancelled() => (Err(ToolExecutionError::Cancelled), None),
        ran = tokio::time::timeout(timeout, run) => match ran {
            Err(_) => (
                Err(ToolExecutionError::Timeout { tool_name: tool_name.clone(), duration: timeout }),
                None,
            ),
            Ok((Ok(Ok(output)), at)) => (Ok(output), Some(at)),
            Ok((Ok(Err(error)), at)) => (Err(ToolExecutionError::Failed(error)), Some(at)),
            Ok((Err(payload), at)) => (
                Err(ToolExecutionError::Panicked {
                    tool_name: tool_name.clone(),
                    message: panic_message(payload),
                }),
                Some(at),
            ),
        },
    };
    if outcome.is_err() {
        // Tell anything the tool started (tasks holding the token) to stop.
        child.cancel();
    }
    (outcome, finished_at)
}

fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(message) => (*message).to_owned(),
            Err(_) => "a panic with a non-string payload".to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_payloads_become_messages() {
        assert_eq!(panic_message(Box::new("boom")), "boom");
        assert_eq!(panic_message(Box::new(String::from("bang"))), "bang");
        assert_eq!(
            panic_message(Box::new(3_u8)),
            "a panic with a non-string payload"
        );
    }
}
