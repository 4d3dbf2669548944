//! What a person sees of the coordinator: pages of runs, the approvals that wait
//! across runs with what each will do, and a run's conversation as stored.

use oxydra_types::RunId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval_preview::{ApprovalPreview, preview};
use crate::coordinator::Coordinator;
use crate::error::CoordinatorError;
use crate::person_view::PersonView;
use crate::run::{Run, session_for};
use crate::run_query::{MAX_WAITING_APPROVALS, RunQuery, WaitingApproval};
use crate::scrub::scrub_value;

/// The longest message text a transcript shows (bytes); longer text is cut with a
/// marker.
pub const MAX_TRANSCRIPT_TEXT: usize = 16 * 1024;

/// An approval that waits, with what it will do (`GET /approvals`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApprovalView {
    /// The request and its run.
    #[serde(flatten)]
    pub waiting: WaitingApproval,
    /// What deciding it `approve` lets happen.
    pub preview: ApprovalPreview,
}

/// A page of runs (`GET /runs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunPage {
    /// The runs, newest first.
    pub runs: Vec<Run>,
    /// Where the next page starts (`?cursor=`), absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One stored message of a run's conversation, as a transcript shows it: scrubbed,
/// text cut at [`MAX_TRANSCRIPT_TEXT`], reasoning left out, other parts counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptMessage {
    /// Its position in the conversation, from 1.
    pub sequence: u64,
    /// When it was stored, in Unix milliseconds.
    pub created_at: i64,
    /// The message (`role`, `content`?, `tool_calls`?, `tool_call_id`?, `name`?,
    /// `parts`: how many non-text parts it had).
    pub message: Value,
}

impl Coordinator {
    /// A page of runs matching `query`, newest first, with the cursor of the next page
    /// when there may be one.
    pub async fn list_runs(&self, query: RunQuery) -> Result<RunPage, CoordinatorError> {
        let limit = query.clamped_limit();
        let runs = self.inner.store.list_runs(query).await?;
        let full = u32::try_from(runs.len()).unwrap_or(u32::MAX) >= limit;
        let next_cursor = runs
            .last()
            .filter(|_| full)
            .map(|run| crate::run_query::RunCursor::after(run.created_at, run.run_id.clone()))
            .map(|cursor| cursor.to_string());
        Ok(RunPage { runs, next_cursor })
    }

    /// The approvals waiting across runs, oldest first, each with what it will do.
    pub async fn waiting_approvals(&self) -> Result<Vec<ApprovalView>, CoordinatorError> {
        let workspace = self
            .inner
            .view
            .get()
            .and_then(|view| view.workspace_root.clone());
        let waiting = self
            .inner
            .store
            .waiting_approvals(MAX_WAITING_APPROVALS)
            .await?;
        tokio::task::spawn_blocking(move || {
            waiting
                .into_iter()
                .map(|waiting| {
                    let preview = preview(
                        &waiting.approval.tool,
                        &waiting.approval.arguments,
                        workspace.as_deref(),
                    );
                    ApprovalView { waiting, preview }
                })
                .collect()
        })
        .await
        .map_err(|error| CoordinatorError::StorageTask(error.to_string()))
    }

    /// The stored messages of run `run_id`'s conversation after `after` (a
    /// sequence), scrubbed; empty without a memory or a conversation.
    pub async fn transcript(
        &self,
        run_id: &str,
        after: u64,
    ) -> Result<Vec<TranscriptMessage>, CoordinatorError> {
        let Some(memory) = self.inner.view.get().and_then(|view| view.memory.clone()) else {
            return Ok(Vec::new());
        };
        let session = session_for(&RunId::from(run_id));
        let stored =
            memory
                .messages(&session)
                .await
                .map_err(|error| CoordinatorError::Storage {
                    backend: "memory",
                    action: "reading a run's conversation",
                    message: error.to_string(),
                })?;
        Ok(stored
            .into_iter()
            .filter(|stored| stored.sequence > after)
            .map(|stored| TranscriptMessage {
                sequence: stored.sequence,
                created_at: stored.created_at_ms,
                message: shown(&stored.message),
            })
            .collect())
    }

    /// This coordinator with `view` (set once, when it is built).
    pub(crate) fn with_view(self, view: PersonView) -> Self {
        let _ = self.inner.view.set(view);
        self
    }
}

/// `message` as a transcript shows it.
fn shown(message: &oxydra_types::Message) -> Value {
    let mut value = serde_json::to_value(message).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("reasoning");
        map.insert("parts".into(), Value::from(message.parts.len()));
        if let Some(Value::String(text)) = map.get_mut("content") {
            cut_text(text);
        }
    }
    scrub_value(value)
}

fn cut_text(text: &mut String) {
    if text.len() > MAX_TRANSCRIPT_TEXT {
        let mut end = MAX_TRANSCRIPT_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut = text.len() - end;
        text.truncate(end);
        text.push_str(&format!("\n[… {cut} more bytes not shown]"));
    }
}
