//! The retrieval steps of a run: search for snippets before the prompt is stored, and
//! index each stored text (best effort).

use oxydra_types::Message;

use super::Run;
use crate::context::snippets_message;
use crate::error::RuntimeError;
use crate::event_scrub::log_safe;
use crate::session_state::SessionState;

impl Run<'_> {
    /// Searches retrieval for `query` (bounded by the turn timeout) and returns the
    /// snippets message, leaving out chunks the history the prompt is built from (and
    /// the query) already holds verbatim.
    pub(super) async fn retrieve(
        &self,
        state: &SessionState,
        query: &str,
    ) -> Result<Option<Message>, RuntimeError> {
        let Some(retrieval) = self.inner.sessions.retrieval() else {
            return Ok(None);
        };
        let scope = self.inner.retrieval_scope.for_session(self.session_id);
        let top_k = self.inner.retrieval_top_k;
        // Some hits may already be in the context: ask for more than will be kept.
        let search = retrieval.search(query, &scope, top_k.saturating_mul(2));
        let timeout = self.inner.limits.turn_timeout;
        let found = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(RuntimeError::Cancelled),
            found = tokio::time::timeout(timeout, search) => found,
        };
        match found {
            Ok(Ok(mut chunks)) => {
                let history: Vec<&Message> = state.window.context_messages().collect();
                chunks.retain(|chunk| {
                    let text = chunk.text.trim();
                    !(query.contains(text)
                        || history.iter().any(|message| message.text().contains(text)))
                });
                chunks.truncate(top_k);
                Ok(snippets_message(&chunks))
            }
            Ok(Err(error)) => {
                tracing::warn!(error = %log_safe(&error), "retrieval failed; continuing without snippets");
                Ok(None)
            }
            Err(_) => {
                tracing::warn!(
                    timeout_ms = timeout.as_millis() as u64,
                    "retrieval timed out; continuing without snippets"
                );
                Ok(None)
            }
        }
    }

    /// Indexes `text` for retrieval (best effort, bounded by the turn timeout); `false`
    /// when the run was cancelled meanwhile.
    pub(super) async fn index(&self, text: &str) -> bool {
        self.inner
            .sessions
            .index_text(
                self.session_id,
                text,
                self.inner.limits.turn_timeout,
                self.cancel,
            )
            .await
    }
}
