//! The retrieval steps of a run: search for snippets before the prompt is stored, and
//! index each stored text (best effort).

use oxydra_memory::RetrievedChunk;
use oxydra_types::Message;
use tokio::time::Instant;

use super::Run;
use crate::context::snippets_message;
use crate::error::RuntimeError;
use crate::event_scrub::log_safe;
use crate::session_state::SessionState;

impl Run<'_> {
    /// Searches retrieval for `query` and returns the snippets message, leaving out
    /// chunks the history the prompt is built from (and the query) already holds
    /// verbatim. The search and that comparison (on a blocking thread: it reads the
    /// whole history once per chunk) are bounded together by the turn timeout; past
    /// it the run goes on without snippets.
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
        let started = Instant::now();
        let found = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(RuntimeError::Cancelled),
            found = tokio::time::timeout(timeout, search) => found,
        };
        let chunks = match found {
            Ok(Ok(chunks)) => chunks,
            Ok(Err(error)) => {
                tracing::warn!(error = %log_safe(&error), "retrieval failed; continuing without snippets");
                return Ok(None);
            }
            Err(_) => {
                tracing::warn!(
                    timeout_ms = timeout.as_millis() as u64,
                    "retrieval timed out; continuing without snippets"
                );
                return Ok(None);
            }
        };
        if chunks.is_empty() {
            return Ok(None);
        }
        let history: Vec<String> = state
            .window
            .context_messages()
            .map(|message| message.text().to_owned())
            .collect();
        let query = query.to_owned();
        let compare =
            tokio::task::spawn_blocking(move || fresh_chunks(chunks, &query, &history, top_k));
        let left = timeout.saturating_sub(started.elapsed());
        let fresh = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(RuntimeError::Cancelled),
            fresh = tokio::time::timeout(left, compare) => fresh,
        };
        match fresh {
            Ok(Ok(chunks)) => Ok(snippets_message(&chunks)),
            Ok(Err(error)) => {
                tracing::warn!(%error, "comparing retrieved chunks with the history failed; continuing without snippets");
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

/// The first `top_k` of `chunks` whose (trimmed) text neither `query` nor any text of
/// `history` holds verbatim.
fn fresh_chunks(
    mut chunks: Vec<RetrievedChunk>,
    query: &str,
    history: &[String],
    top_k: usize,
) -> Vec<RetrievedChunk> {
    chunks.retain(|chunk| {
        let text = chunk.text.trim();
        !(query.contains(text) || history.iter().any(|message| message.contains(text)))
    });
    chunks.truncate(top_k);
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str) -> RetrievedChunk {
        RetrievedChunk {
            chunk_id: 1,
            session_id: None,
            text: text.to_owned(),
            score: 1.0,
        }
    }

    #[test]
    fn chunks_the_prompt_already_holds_are_left_out_and_the_rest_cut_to_top_k() {
        let history = vec!["the build uses cargo".to_owned()];
        let chunks = vec![
            chunk("  uses cargo "),
            chunk("what is the plan"),
            chunk("deploys on fridays"),
            chunk("tests run in ci"),
            chunk("reviews take a day"),
        ];
        let fresh = fresh_chunks(chunks, "what is the plan?", &history, 2);
        let texts: Vec<&str> = fresh.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, vec!["deploys on fridays", "tests run in ci"]);
        assert!(fresh_chunks(Vec::new(), "q", &history, 2).is_empty());
    }
}
