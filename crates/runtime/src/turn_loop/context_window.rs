//! The context window within the turn loop: when to load the token encoder, preparing
//! the prompt within the budget, condensing old turns into the rolling summary, and
//! recovering when the provider still finds the prompt too long.

use oxydra_types::{Message, RuntimeProgressKind};
use tracing::Span;

use super::Run;
use crate::context_budget::ContextReport;
use crate::error::RuntimeError;
use crate::event_scrub::log_safe;
use crate::provider_call;
use crate::rolling_summary::{self, summary_message};
use crate::runtime::RuntimeInner;
use crate::session_state::SessionState;
use crate::token_counter::{self, CountMode};

/// After a "context length exceeded", the prompt must fit this share (in percent) of
/// the tokens (counted exactly) of the prompt the provider refused.
const OVERFLOW_RETRY_PERCENT: u64 = 85;

/// The byte-count upper bound of the whole prompt: tool schemas, header and history.
fn prompt_upper(inner: &RuntimeInner, state: &SessionState) -> u64 {
    inner
        .schema_tokens
        .upper()
        .saturating_add(state.context.header_upper())
        .saturating_add(state.history_upper())
}

impl Run<'_> {
    /// Loads the token encoder (off the async threads) when the prompt's estimate comes
    /// within [`token_counter::NEAR_LIMIT_PERCENT`] of the summary trigger or the
    /// budget, where exact counts are needed. Below that, estimates are used.
    pub(super) async fn load_encoder_if_needed(
        &mut self,
        state: &mut SessionState,
    ) -> Result<(), RuntimeError> {
        if token_counter::encoder_loaded() {
            return Ok(());
        }
        let inner = self.inner;
        let limit = self.budget.available().min(
            self.budget
                .summary_threshold(inner.limits.summary_trigger_ratio),
        );
        let upper = prompt_upper(inner, state);
        if upper <= limit {
            return Ok(());
        }
        let estimate = inner
            .schema_tokens
            .estimate()
            .saturating_add(state.context.header_estimate())
            .saturating_add(state.history_estimate());
        if estimate.saturating_mul(100) < limit.saturating_mul(token_counter::NEAR_LIMIT_PERCENT) {
            return Ok(());
        }
        tracing::debug!(
            estimate,
            limit,
            "the prompt nears its limit; loading the token encoder"
        );
        self.load_encoder().await
    }

    /// Computes on a blocking thread, under the cancellation token and the turn
    /// timeout, the exact counts budgeting is about to ask for — the tool schemas',
    /// the header's and the history's — so that preparing the prompt finds them
    /// cached and never counts on an async thread. Does nothing while estimates are
    /// in use, or (unless `always`) while the prompt's upper bound fits its limits,
    /// where budgeting counts nothing.
    pub(super) async fn count_off_thread(
        &mut self,
        state: &mut SessionState,
        always: bool,
    ) -> Result<(), RuntimeError> {
        if CountMode::current() != CountMode::Exact {
            return Ok(());
        }
        let inner = self.inner;
        if !always {
            let limit = self.budget.available().min(
                self.budget
                    .summary_threshold(inner.limits.summary_trigger_ratio),
            );
            if prompt_upper(inner, state) <= limit {
                return Ok(());
            }
        }
        let header = state.context.header_uncounted();
        let history = state.uncounted();
        let schemas = inner.schema_tokens.uncounted_text();
        if header.is_empty() && history.is_empty() && schemas.is_none() {
            return Ok(());
        }
        let mut messages: Vec<Message> = Vec::with_capacity(header.len() + history.len());
        messages.extend(header.iter().map(|(_, message)| message.clone()));
        messages.extend(history.iter().map(|(_, message)| message.clone()));
        let texts: Vec<String> = schemas.map(str::to_owned).into_iter().collect();
        let timeout = inner.limits.turn_timeout;
        let counts = token_counter::count_off_thread(messages, texts, self.cancel, timeout)
            .await
            .map_err(|interrupted| match interrupted {
                token_counter::CountInterrupted::Cancelled => RuntimeError::Cancelled,
                token_counter::CountInterrupted::TimedOut => RuntimeError::budget(
                    "turn_timeout",
                    format!(
                        "counting the prompt's tokens did not finish within {} ms",
                        timeout.as_millis()
                    ),
                ),
            })?;
        if let Some(exact) = counts.texts.first() {
            inner.schema_tokens.seed_exact(u64::from(*exact));
        }
        let mut counts = counts.messages.into_iter();
        for (index, _) in &header {
            if let Some(exact) = counts.next() {
                state.context.seed_header_exact(*index, exact);
            }
        }
        for (index, _) in &history {
            if let Some(exact) = counts.next() {
                state.seed_exact(*index, exact);
            }
        }
        Ok(())
    }

    async fn load_encoder(&self) -> Result<(), RuntimeError> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(RuntimeError::Cancelled),
            () = token_counter::load_encoder() => Ok(()),
        }
    }

    /// The provider found the prompt too long although our count said it fits (an
    /// estimate was low, or its tokenizer counts differently): loads the encoder, counts
    /// the refused prompt exactly and tightens the run's budget to
    /// [`OVERFLOW_RETRY_PERCENT`] of it, then prepares the prompt again (summarising or
    /// truncating whole groups as usual).
    pub(super) async fn recover_from_overflow(
        &mut self,
        state: &mut SessionState,
        span: &Span,
    ) -> Result<(), RuntimeError> {
        self.load_encoder()
            .await
            .map_err(|error| self.fail(span, error))?;
        self.count_off_thread(state, true)
            .await
            .map_err(|error| self.fail(span, error))?;
        let sent = {
            let SessionState {
                entries, context, ..
            } = state;
            context.counted(entries, &self.inner.schema_tokens, CountMode::Exact)
        };
        let available = self.budget.available();
        let target = available.min(sent).saturating_mul(OVERFLOW_RETRY_PERCENT) / 100;
        let cut = u32::try_from(available.saturating_sub(target)).unwrap_or(u32::MAX);
        self.budget.safety_buffer = self.budget.safety_buffer.saturating_add(cut);
        tracing::warn!(
            sent,
            available,
            tightened = self.budget.available(),
            "the provider found the prompt too long; retrying once within a tighter budget"
        );
        self.maybe_summarise(state, span).await?;
        self.count_off_thread(state, false)
            .await
            .map_err(|error| self.fail(span, error))?;
        let report = self.prepare(state);
        self.record_report(span, &report);
        Ok(())
    }

    pub(super) fn record_report(&self, span: &Span, report: &ContextReport) {
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

    /// Builds the prompt header (system prompt, rolling summary, snippets) unless it
    /// was built for the current summary already. The turn loop calls it once at the
    /// start of each turn, and [`Self::maybe_summarise`] again after it stored a new
    /// summary, the only change to the header within a turn (the snippets are set
    /// before the first turn).
    pub(super) fn refresh_header(&mut self, state: &mut SessionState) {
        if self.header_epoch == Some(state.summary.epoch) {
            return;
        }
        let mut header = Vec::with_capacity(3);
        if let Some(prompt) = &self.inner.system_prompt {
            header.push(Message::system(prompt.clone()));
        }
        if let Some(summary) = &state.summary.text {
            header.push(summary_message(summary));
        }
        if let Some(snippets) = &self.snippets {
            header.push(snippets.clone());
        }
        state.context.set_header(header);
        self.header_epoch = Some(state.summary.epoch);
    }

    pub(super) fn prepare(&mut self, state: &mut SessionState) -> ContextReport {
        let SessionState {
            entries,
            context,
            live_start,
            latest_user,
            ..
        } = state;
        context.sync(
            entries,
            *live_start,
            *latest_user,
            &self.inner.schema_tokens,
            self.budget.available(),
            CountMode::current(),
        )
    }

    /// Condenses the oldest turns when the live history passes the trigger ratio.
    pub(super) async fn maybe_summarise(
        &mut self,
        state: &mut SessionState,
        span: &Span,
    ) -> Result<(), RuntimeError> {
        if self.summary_failed {
            return Ok(());
        }
        let inner = self.inner;
        let threshold = self
            .budget
            .summary_threshold(inner.limits.summary_trigger_ratio);
        let upper = prompt_upper(inner, state);
        if upper <= threshold {
            return Ok(());
        }
        // Estimates before the encoder is loaded, exact counts after: the same counts
        // the prompt is prepared with.
        let mode = CountMode::current();
        let fixed = state.context.fixed_counted(&inner.schema_tokens, mode);
        let live = state.history_counted(mode);
        if fixed.saturating_add(live) <= threshold {
            return Ok(());
        }
        let keep = (threshold / 2).saturating_sub(fixed);
        let Some(plan) = rolling_summary::plan(state, keep, mode) else {
            return Ok(());
        };
        self.events
            .progress(RuntimeProgressKind::RollingSummary, self.turn);
        let condensed = state.entries.get(plan.condense.clone()).unwrap_or_default();
        let request = rolling_summary::summary_request(
            &inner.model,
            state.summary.text.as_deref(),
            condensed.iter().map(|entry| &entry.message),
            inner.limits.max_output_tokens,
        );
        tracing::info!(
            messages = condensed.len(),
            covers_through = plan.covers_through,
            live_tokens = live,
            threshold,
            "condensing older turns into the rolling summary"
        );
        let call = match provider_call::request_response(
            inner.provider.as_ref(),
            &request,
            false,
            inner.limits.turn_timeout,
            self.cancel,
            None,
        )
        .await
        {
            Ok(call) => call,
            Err(RuntimeError::Provider(error)) => {
                tracing::warn!(error = %log_safe(&error), "summarisation failed; the history will be truncated instead");
                self.summary_failed = true;
                return Ok(());
            }
            Err(RuntimeError::BudgetExceeded { budget, message })
                if budget == "turn_timeout" && !self.cancel.is_cancelled() =>
            {
                tracing::warn!(%message, "summarisation timed out; the history will be truncated instead");
                self.summary_failed = true;
                return Ok(());
            }
            Err(error) => return Err(self.fail(span, error)),
        };
        self.account(call.response.usage, span)?;
        let text = call.response.message.text().trim().to_owned();
        if text.is_empty() {
            tracing::warn!("the provider returned an empty summary; keeping the history");
            self.summary_failed = true;
            return Ok(());
        }
        self.inner
            .sessions
            .store_summary(self.session_id, state, text, plan.covers_through)
            .await?;
        self.header_epoch = None;
        self.refresh_header(state);
        Ok(())
    }
}
