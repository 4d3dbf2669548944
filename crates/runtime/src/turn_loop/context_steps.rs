//! The context steps of a turn: maybe summarise, prepare the context, and recover when
//! the provider still finds the prompt too long. The session's [`ContextWindow`]
//! decides; these steps run the summarisation call, store the summary and record the
//! outcome on the turn's span.
//!
//! [`ContextWindow`]: crate::context::ContextWindow

use oxydra_types::RuntimeProgressKind;
use tracing::Span;

use super::Run;
use crate::budget::Budget;
use crate::context::ContextReport;
use crate::error::RuntimeError;
use crate::event_scrub::log_safe;
use crate::provider_call::{self, CallOptions};
use crate::runtime_inner::RuntimeInner;
use crate::session_state::SessionState;

impl Run<'_> {
    /// Gets the window's counts ready, then condenses the oldest turns when the prompt
    /// passes the summary trigger. A failed, empty or timed-out summarisation is not
    /// tried again in this run; truncation alone keeps the prompt in budget.
    pub(super) async fn maybe_summarise(
        &mut self,
        state: &mut SessionState,
        span: &Span,
    ) -> Result<(), RuntimeError> {
        self.measure(state, span).await?;
        if self.summary_failed {
            return Ok(());
        }
        let Some(job) = state.window.summary_job() else {
            return Ok(());
        };
        match self.summarise(state, span, job).await {
            Ok(_) => Ok(()),
            Err(Unsummarised::Failed(error)) => Err(error),
            Err(Unsummarised::Skipped(why)) => {
                tracing::warn!(%why, "no summary; the history will be truncated instead");
                self.summary_failed = true;
                Ok(())
            }
        }
    }

    /// Condenses what a person asked to (`/compact`): every turn but the newest, now,
    /// whatever the trigger. Returns the summary stored; `None` when there was nothing
    /// to condense. A failed summarisation is an error here (no one asked for
    /// truncation instead).
    pub(super) async fn compact(
        &mut self,
        state: &mut SessionState,
        span: &Span,
    ) -> Result<Option<String>, RuntimeError> {
        self.measure(state, span).await?;
        let Some(job) = state.window.compact_job() else {
            return Ok(None);
        };
        match self.summarise(state, span, job).await {
            Ok(summary) => Ok(Some(summary)),
            Err(Unsummarised::Failed(error)) => Err(error),
            Err(Unsummarised::Skipped(why)) => Err(RuntimeError::Config(format!(
                "no summary: {why}; the conversation is unchanged"
            ))),
        }
    }

    /// Gets the window's counts ready (off the async threads, within the turn timeout).
    async fn measure(&mut self, state: &mut SessionState, span: &Span) -> Result<(), RuntimeError> {
        let timeout = self.inner.limits.turn_timeout;
        state
            .window
            .measure(self.cancel, timeout)
            .await
            .map_err(|error| self.fail(span, error))
    }

    /// Runs `job`'s summarisation call and stores the summary it gives; returns it. A
    /// provider failure, a timeout or an empty answer is [`Unsummarised::Skipped`]:
    /// the history stays as it was.
    async fn summarise(
        &mut self,
        state: &mut SessionState,
        span: &Span,
        job: crate::context::SummaryJob,
    ) -> Result<String, Unsummarised> {
        self.events
            .progress(RuntimeProgressKind::RollingSummary, self.turn);
        let timeout = self.inner.limits.turn_timeout;
        let inner: &RuntimeInner = self.inner;
        let options = CallOptions {
            streaming: false,
            timeout,
            events: None,
            price: &|model, usage| inner.price(model, usage),
        };
        let call = match provider_call::request_response(
            inner.provider.as_ref(),
            &job.request,
            options,
            self.cancel,
        )
        .await
        {
            Ok(call) => call,
            Err(RuntimeError::Provider(error)) => {
                return Err(Unsummarised::Skipped(format!(
                    "the summarisation call failed: {}",
                    log_safe(&error)
                )));
            }
            Err(RuntimeError::BudgetExceeded { budget, message })
                if budget == Budget::TurnTimeout && !self.cancel.is_cancelled() =>
            {
                return Err(Unsummarised::Skipped(format!(
                    "the summarisation call timed out: {message}"
                )));
            }
            Err(error) => return Err(Unsummarised::Failed(self.fail(span, error))),
        };
        self.account(&call, span)
            .await
            .map_err(Unsummarised::Failed)?;
        let text = call.response.message.text().trim().to_owned();
        if text.is_empty() {
            return Err(Unsummarised::Skipped(
                "the model answered the summarisation call with nothing".to_owned(),
            ));
        }
        let text = job.summary_text(text);
        self.inner
            .sessions
            .store_summary(self.session_id, state, text.clone(), job.covers_through)
            .await
            .map_err(Unsummarised::Failed)?;
        Ok(text)
    }

    /// Prepares the request within the budget (a new summary's header counted off the
    /// async threads first) and records how full it is; returns its tokens (by the
    /// window's count).
    pub(super) async fn prepare_context(
        &mut self,
        state: &mut SessionState,
        span: &Span,
    ) -> Result<u64, RuntimeError> {
        state
            .window
            .measure(self.cancel, self.inner.limits.turn_timeout)
            .await
            .map_err(|error| self.fail(span, error))?;
        let report = state.window.prepare();
        record_report(span, &report);
        Ok(report.tokens)
    }

    /// The provider found the prompt too long although the count said it fits: the
    /// window counts the refused prompt exactly and tightens the run's budget, then the
    /// prompt is summarised and prepared again as usual.
    pub(super) async fn recover_from_overflow(
        &mut self,
        state: &mut SessionState,
        span: &Span,
    ) -> Result<(), RuntimeError> {
        state
            .window
            .tighten_after_overflow(self.cancel, self.inner.limits.turn_timeout)
            .await
            .map_err(|error| self.fail(span, error))?;
        self.maybe_summarise(state, span).await?;
        self.prepare_context(state, span).await.map(drop)
    }
}

fn record_report(span: &Span, report: &ContextReport) {
    span.record("context_tokens", report.tokens);
    span.record("context_utilisation", report.utilisation());
    span.record("dropped_messages", report.dropped);
    tracing::debug!(
        tokens = report.tokens,
        exact = report.exact,
        available = report.available,
        utilisation = report.utilisation(),
        "context budget"
    );
}

/// Why a summarisation stored nothing.
enum Unsummarised {
    /// The run cannot go on (cancelled, the store failed, a budget).
    Failed(RuntimeError),
    /// The summariser failed, timed out or answered nothing (why, in words): the
    /// history is kept.
    Skipped(String),
}
