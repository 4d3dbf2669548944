//! Running admitted calls: panics caught, a timeout, and cancellation passed down as a
//! child token.
//!
//! Every call runs inside the batch's own task; a read-only group's calls are polled
//! together ([`run_concurrently`]), at most `max_parallel` at once and started in
//! request order. A group costs no task spawns or cross-thread wake-ups (16 no-op calls
//! in ~25 µs); the price is that a tool blocking its thread holds up its group, which is
//! why the tool contract asks tools to put heavy blocking work in `spawn_blocking`.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use oxydra_tools::{Tool, ToolContext, ToolOutput};
use oxydra_types::CallId;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::error::ToolExecutionError;

/// Everything one run needs.
pub(crate) struct Invocation {
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) tool_name: String,
    pub(crate) args: serde_json::Value,
    pub(crate) call_id: CallId,
    pub(crate) workspace_root: PathBuf,
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
    } = invocation;
    let child = cancel.child_token();
    let context = ToolContext::new(workspace_root, child.clone(), call_id);
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

/// One admitted call ready to run: the call, its per-call limit and its span.
pub(crate) struct Job {
    pub(crate) invocation: Invocation,
    pub(crate) timeout: Duration,
    pub(crate) span: tracing::Span,
}

/// How a call ran.
pub(crate) struct Ran {
    /// When it started running.
    pub(crate) started: Instant,
    /// Its output, or why there is none.
    pub(crate) outcome: Result<ToolOutput, ToolExecutionError>,
    /// When the tool's own future completed (`None` on a timeout or cancellation).
    pub(crate) finished_at: Option<Instant>,
}

/// Run `job` under `cancel`: [`invoke`] with the time it started.
pub(crate) async fn run_one(job: Job, cancel: CancellationToken) -> Ran {
    let Job {
        invocation,
        timeout,
        span,
    } = job;
    let started = Instant::now();
    let (outcome, finished_at) = invoke(invocation, &cancel, timeout, span).await;
    Ran {
        started,
        outcome,
        finished_at,
    }
}

/// Run `jobs` inside the calling task, at most `limit` (at least 1) at once, starting
/// them in order, and hand each result to `finished` with the job's position as soon as
/// it ends (in the order they end). Dropping the returned future drops the calls.
pub(crate) async fn run_concurrently(
    jobs: Vec<Job>,
    cancel: &CancellationToken,
    limit: usize,
    mut finished: impl FnMut(usize, Ran),
) {
    let mut running = futures::stream::iter(jobs.into_iter().enumerate())
        .map(|(position, job)| run_one(job, cancel.clone()).map(move |ran| (position, ran)))
        .buffer_unordered(limit.max(1));
    while let Some((position, ran)) = running.next().await {
        finished(position, ran);
    }
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
