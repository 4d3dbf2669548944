//! [`ContextWindow`]: a session's messages as the model will see them, the request
//! prepared from them, the budget it must fit and the count it is measured with.

use std::sync::Arc;
use std::time::Duration;

use oxydra_memory::SessionSummary;
use oxydra_provider::ProviderRequest;
use oxydra_types::{Message, ToolSchema};
use tokio_util::sync::CancellationToken;

use super::budget::{ContextBudget, ContextReport, FixedTokens};
use super::count_cache::CachedCount;
use super::history::History;
use super::message_tokens::CountMode;
use super::off_thread::{CountInterrupted, count_off_thread, load_encoder_until_cancelled};
use super::prepared::PreparedContext;
use super::summary::{self, summary_message};
use super::tokens::NEAR_LIMIT_PERCENT;
use crate::error::RuntimeError;

/// After a "context length exceeded", the prompt must fit this share (in percent) of
/// the tokens (counted exactly) of the prompt the provider refused.
const OVERFLOW_RETRY_PERCENT: u64 = 85;

/// What a run gives the window before its first turn.
#[derive(Debug)]
pub(crate) struct WindowSettings {
    /// The model the request goes to.
    pub model: String,
    /// The tool schemas sent with every request.
    pub tools: Vec<ToolSchema>,
    /// Their cost, shared by every session of the runtime.
    pub schema_tokens: Arc<FixedTokens>,
    /// The answer's token limit (also the summary's).
    pub max_output_tokens: Option<u32>,
    /// The system prompt, first in the header.
    pub system_prompt: Option<String>,
    /// The retrieved snippets of this run, last in the header.
    pub snippets: Option<Message>,
    /// The runtime's budget; a run may tighten its own copy.
    pub budget: ContextBudget,
    /// The share of the budget above which older turns are condensed.
    pub summary_trigger_ratio: f64,
}

/// A summarisation the window asks for: the request to send and what it covers.
#[derive(Debug)]
pub(crate) struct SummaryJob {
    /// The summarisation request.
    pub request: ProviderRequest,
    /// Sequence number of the last message the summary covers.
    pub covers_through: u64,
    /// What the condensed messages attached (images, documents), described: the summary
    /// keeps a placeholder for each ([`SummaryJob::summary_text`]).
    pub placeholders: Vec<String>,
}

impl SummaryJob {
    /// The summary to store from the summariser's `text`: with a placeholder for each
    /// condensed attachment the text does not name.
    pub fn summary_text(&self, text: String) -> String {
        summary::with_placeholders(text, &self.placeholders)
    }
}

/// The context of one session: its messages with their token costs, the rolling
/// summary, the provider request prepared from them (updated incrementally), the
/// budget of the running run and the count mode the window budgets with.
///
/// The count mode belongs to the window: it starts with estimates and switches to
/// exact counts for good once its prompt nears its limit (or a provider refused it as
/// too long). The encoder is shared by the process, the decision is not.
#[derive(Debug)]
pub(crate) struct ContextWindow {
    history: History,
    prepared: PreparedContext,
    mode: CountMode,
    budget: ContextBudget,
    summary_trigger_ratio: f64,
    schema_tokens: Arc<FixedTokens>,
    system_prompt: Option<String>,
    snippets: Option<Message>,
    /// The summary epoch the header was built for (`None`: rebuild it).
    header_epoch: Option<u64>,
}

impl Default for ContextWindow {
    fn default() -> Self {
        Self {
            history: History::default(),
            prepared: PreparedContext::default(),
            mode: CountMode::Estimate,
            budget: ContextBudget::default(),
            summary_trigger_ratio: 1.0,
            schema_tokens: Arc::default(),
            system_prompt: None,
            snippets: None,
            header_epoch: None,
        }
    }
}

impl ContextWindow {
    /// Readies the window for a run: the request's model, tools and output limit, the
    /// header's parts and the run's budget (a fresh copy of the runtime's).
    pub fn begin_run(&mut self, settings: WindowSettings) {
        let request = &mut self.prepared.request;
        request.model = settings.model;
        request.tools = settings.tools;
        request.max_tokens = settings.max_output_tokens;
        self.schema_tokens = settings.schema_tokens;
        self.system_prompt = settings.system_prompt;
        self.snippets = settings.snippets;
        self.budget = settings.budget;
        self.summary_trigger_ratio = settings.summary_trigger_ratio;
        self.header_epoch = None;
    }

    /// Sets the tool choice of the next request.
    pub fn set_tool_choice(&mut self, choice: oxydra_provider::ToolChoice) {
        self.prepared.request.tool_choice = choice;
    }

    /// Appends a message that has been stored as `sequence`.
    pub fn push(&mut self, message: Message, sequence: u64) {
        self.history.push(message, sequence);
    }

    /// Takes `summary` as the session's summary: the entries it covers leave the live
    /// history, and the header carries it from the next measure on.
    pub fn apply_summary(&mut self, summary: SessionSummary) {
        self.history.apply_summary(summary);
        self.header_epoch = None;
    }

    /// The rolling summary.
    pub fn summary(&self) -> &SessionSummary {
        &self.history.summary
    }

    /// Every message of the session, oldest first.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.history.messages()
    }

    /// Every message of the session with the sequence number it is stored under
    /// (a synthetic restore result carries its assistant message's), oldest first.
    pub fn sequenced(&self) -> impl Iterator<Item = (u64, &Message)> {
        self.history
            .entries
            .iter()
            .map(|entry| (entry.sequence, &entry.message))
    }

    /// The history messages a prompt is built from: a pinned user message (the latest,
    /// when the summary covers it) and the live history.
    pub fn context_messages(&self) -> impl Iterator<Item = &Message> {
        let history = &self.history;
        history
            .pinned_user()
            .into_iter()
            .chain(history.live_start..history.entries.len())
            .filter_map(|index| history.entries.get(index))
            .map(|entry| &entry.message)
    }

    /// The messages, summary and token totals.
    #[cfg(test)]
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The count mode the window budgets with.
    #[cfg(test)]
    pub fn mode(&self) -> CountMode {
        self.mode
    }

    /// Gives entries the exact counts of `cached` (in sequence order) computed in an
    /// earlier run for the same messages; returns how many were reused. A window that
    /// had exact counts keeps budgeting with them.
    pub fn seed_counts(&mut self, cached: &[CachedCount]) -> usize {
        let reused = self.history.seed_counts(cached);
        if reused > 0 {
            self.mode = CountMode::Exact;
        }
        reused
    }

    /// The exact counts computed so far, in sequence order, to keep for the next run.
    pub fn exact_counts(&self) -> Vec<CachedCount> {
        self.history.exact_counts()
    }

    /// The request as last prepared.
    pub fn request(&self) -> &ProviderRequest {
        &self.prepared.request
    }

    /// Builds the header (system prompt, rolling summary, snippets) unless it was built
    /// for the current summary already.
    fn refresh_header(&mut self) {
        let epoch = self.history.summary.epoch;
        if self.header_epoch == Some(epoch) {
            return;
        }
        let mut header = Vec::with_capacity(3);
        if let Some(prompt) = &self.system_prompt {
            header.push(Message::system(prompt.clone()));
        }
        if let Some(summary) = &self.history.summary.text {
            header.push(summary_message(summary));
        }
        if let Some(snippets) = &self.snippets {
            header.push(snippets.clone());
        }
        self.prepared.set_header(header);
        self.header_epoch = Some(epoch);
    }

    /// The smaller of the budget and the summary trigger.
    fn limit(&self) -> u64 {
        self.budget
            .available()
            .min(self.budget.summary_threshold(self.summary_trigger_ratio))
    }

    /// The byte-count upper bound of the whole prompt: tool schemas, header, history.
    fn prompt_upper(&self) -> u64 {
        self.schema_tokens
            .upper()
            .saturating_add(self.prepared.header_upper())
            .saturating_add(self.history.history_upper())
    }

    /// Gets the counts budgeting is about to use ready, off the async threads: switches
    /// to exact counts when the prompt's estimate comes within [`NEAR_LIMIT_PERCENT`]
    /// of its limit (loading the encoder on a blocking thread), then computes on a
    /// blocking thread the exact counts the prompt lacks when its upper bound passes
    /// the limit. Cancellation ends it with [`RuntimeError::Cancelled`]; counts not
    /// done within `timeout` end it with the `turn_timeout` budget error (the
    /// encoder's one-off load is bounded by `cancel` alone).
    pub async fn measure(
        &mut self,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<(), RuntimeError> {
        self.refresh_header();
        async {
            self.switch_to_exact_if_near(cancel).await?;
            self.count_uncounted(false, cancel, timeout).await
        }
        .await
        .map_err(|interrupted| interrupted.into_error(timeout))
    }

    async fn switch_to_exact_if_near(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<(), CountInterrupted> {
        if self.mode == CountMode::Exact {
            return Ok(());
        }
        let limit = self.limit();
        if self.prompt_upper() <= limit {
            return Ok(());
        }
        let estimate = self
            .schema_tokens
            .estimate()
            .saturating_add(self.prepared.header_estimate())
            .saturating_add(self.history.history_estimate());
        if estimate.saturating_mul(100) < limit.saturating_mul(NEAR_LIMIT_PERCENT) {
            return Ok(());
        }
        tracing::debug!(
            estimate,
            limit,
            "the prompt nears its limit; counting exactly from now on"
        );
        self.switch_to_exact(cancel).await
    }

    /// Loads the encoder (under `cancel`), then counts exactly for good.
    async fn switch_to_exact(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<(), CountInterrupted> {
        load_encoder_until_cancelled(cancel).await?;
        self.mode = CountMode::Exact;
        Ok(())
    }

    /// Computes on a blocking thread, under `cancel` and `timeout`, the exact counts
    /// budgeting is about to ask for — the tool schemas', the header's and the
    /// history's — so that it finds them cached and never counts on an async thread.
    /// Does nothing while the window uses estimates, or (unless `always`) while the
    /// prompt's upper bound fits its limit, where budgeting counts nothing. The
    /// history's counts are kept with their messages' fingerprints, computed on the
    /// same blocking thread.
    async fn count_uncounted(
        &mut self,
        always: bool,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<(), CountInterrupted> {
        if self.mode != CountMode::Exact {
            return Ok(());
        }
        if !always && self.prompt_upper() <= self.limit() {
            return Ok(());
        }
        let (header, mut messages): (Vec<usize>, Vec<Message>) =
            self.prepared.header_uncounted().into_iter().unzip();
        let (history, history_messages): (Vec<usize>, Vec<Message>) =
            self.history.uncounted().into_iter().unzip();
        let schemas = self.schema_tokens.uncounted_text();
        if messages.is_empty() && history_messages.is_empty() && schemas.is_none() {
            return Ok(());
        }
        messages.extend(history_messages);
        let texts: Vec<String> = schemas.map(str::to_owned).into_iter().collect();
        let counts = count_off_thread(messages, texts, cancel, timeout).await?;
        if let Some(exact) = counts.texts.first() {
            self.schema_tokens.seed_exact(u64::from(*exact));
        }
        let mut counted = counts.messages.into_iter().zip(counts.fingerprints);
        for index in header {
            if let Some((exact, _)) = counted.next() {
                self.prepared.seed_header_exact(index, exact);
            }
        }
        for index in history {
            if let Some((exact, print)) = counted.next() {
                self.history.seed_exact(index, exact, print);
            }
        }
        Ok(())
    }

    /// The summarisation to run when the prompt passes the summary trigger: the oldest
    /// whole groups, keeping the newest worth about half the trigger and the latest user
    /// message. `None` when the prompt is under the trigger or nothing can be condensed.
    /// Counts as [`Self::prepare`] does; call [`Self::measure`] first.
    pub fn summary_job(&mut self) -> Option<SummaryJob> {
        self.refresh_header();
        let threshold = self.budget.summary_threshold(self.summary_trigger_ratio);
        if self.prompt_upper() <= threshold {
            return None;
        }
        let mode = self.mode;
        let fixed = self.prepared.fixed_counted(&self.schema_tokens, mode);
        let live = self.history.history_counted(mode);
        if fixed.saturating_add(live) <= threshold {
            return None;
        }
        let keep = (threshold / 2).saturating_sub(fixed);
        let plan = summary::plan(&mut self.history, keep, mode)?;
        tracing::info!(
            live_tokens = live,
            threshold,
            "the prompt passed the summary trigger"
        );
        Some(self.job_for(plan))
    }

    /// The summarisation a person asked for (`/compact`), whatever the trigger says:
    /// every whole group but the newest and the latest user message. `None` when
    /// nothing can be condensed (the conversation is that short, or condensed already).
    /// Call [`Self::measure`] first.
    pub fn compact_job(&mut self) -> Option<SummaryJob> {
        self.refresh_header();
        let plan = summary::plan(&mut self.history, 0, self.mode)?;
        Some(self.job_for(plan))
    }

    /// The summarisation request condensing `plan`'s messages with the summary so far.
    fn job_for(&self, plan: summary::SummaryPlan) -> SummaryJob {
        let condensed = self
            .history
            .entries
            .get(plan.condense.clone())
            .unwrap_or_default();
        tracing::info!(
            messages = condensed.len(),
            covers_through = plan.covers_through,
            "condensing older turns into the rolling summary"
        );
        let request = summary::summary_request(
            &self.prepared.request.model,
            self.history.summary.text.as_deref(),
            condensed.iter().map(|entry| &entry.message),
            self.prepared.request.max_tokens,
        );
        SummaryJob {
            request,
            covers_through: plan.covers_through,
            placeholders: summary::placeholders(condensed.iter().map(|entry| &entry.message)),
        }
    }

    /// Brings the request up to date with the history, cutting whole groups of old
    /// messages if the prompt would not fit the budget, and reports how full it is.
    /// Call [`Self::measure`] first, so that no count is computed here.
    pub fn prepare(&mut self) -> ContextReport {
        self.refresh_header();
        let History {
            entries,
            live_start,
            latest_user,
            ..
        } = &mut self.history;
        self.prepared.sync(
            entries,
            *live_start,
            *latest_user,
            &self.schema_tokens,
            self.budget.available(),
            self.mode,
        )
    }

    /// The provider found the prompt too long although the count said it fits (an
    /// estimate was low, or its tokenizer counts differently): switches to exact counts,
    /// counts the refused prompt and tightens the run's budget to
    /// [`OVERFLOW_RETRY_PERCENT`] of it. Summarise and prepare again afterwards.
    pub async fn tighten_after_overflow(
        &mut self,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<(), RuntimeError> {
        async {
            self.switch_to_exact(cancel).await?;
            self.count_uncounted(true, cancel, timeout).await
        }
        .await
        .map_err(|interrupted| interrupted.into_error(timeout))?;
        let sent = {
            let History { entries, .. } = &mut self.history;
            self.prepared
                .counted(entries, &self.schema_tokens, CountMode::Exact)
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
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::count_cache::fingerprint;

    fn settings(window: u32) -> WindowSettings {
        WindowSettings {
            model: "m".into(),
            tools: Vec::new(),
            schema_tokens: Arc::default(),
            max_output_tokens: None,
            system_prompt: None,
            snippets: None,
            budget: ContextBudget {
                context_window: window,
                output_reserve: 0,
                safety_buffer: 0,
            },
            summary_trigger_ratio: 100.0,
        }
    }

    const NEAR: &str = "a question long enough to pass the byte bound of the budget, and long enough that its estimate nears the budget too";

    #[tokio::test]
    async fn each_window_switches_to_exact_counts_on_its_own() {
        let cancel = CancellationToken::new();
        let mut near = ContextWindow::default();
        near.begin_run(settings(50));
        near.push(Message::user(NEAR), 1);
        let mut far = ContextWindow::default();
        far.begin_run(settings(10_000));
        far.push(Message::user(NEAR), 1);
        assert_eq!(near.mode(), CountMode::Estimate);
        near.measure(&cancel, Duration::from_secs(60))
            .await
            .unwrap();
        far.measure(&cancel, Duration::from_secs(60)).await.unwrap();
        assert_eq!(near.mode(), CountMode::Exact);
        assert_eq!(far.mode(), CountMode::Estimate);
        // The near window's counts were computed off-thread: preparing finds them.
        assert!(near.history().entries[0].tokens.cached_exact().is_some());
        let report = near.prepare();
        assert!(report.exact);
        let report = far.prepare();
        assert!(!report.exact);
        assert!(far.history().entries[0].tokens.cached_exact().is_none());
    }

    #[test]
    fn a_window_reloaded_with_exact_counts_keeps_counting_exactly() {
        let mut window = ContextWindow::default();
        let message = Message::user("hello");
        window.push(message.clone(), 1);
        assert_eq!(window.seed_counts(&[]), 0);
        assert_eq!(window.mode(), CountMode::Estimate);
        let cached = [CachedCount {
            sequence: 1,
            fingerprint: fingerprint(&message),
            exact: 5,
        }];
        assert_eq!(window.seed_counts(&cached), 1);
        assert_eq!(window.mode(), CountMode::Exact);
    }

    #[tokio::test]
    async fn counting_out_of_time_ends_with_the_turn_timeout() {
        // The encoder loads whatever the time; with none left for the counts, the
        // window ends with the budget error before counting anything.
        let mut window = ContextWindow::default();
        window.begin_run(settings(4_000));
        for sequence in 1..=20 {
            window.push(Message::user("word ".repeat(30_000)), sequence);
        }
        let error = window
            .measure(&CancellationToken::new(), Duration::ZERO)
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "budget `turn_timeout` exceeded: counting the prompt's tokens did not finish \
             within 0 ms"
        );
        let entries = &window.history().entries;
        assert!(entries.iter().all(|e| e.tokens.cached_exact().is_none()));
    }

    #[tokio::test]
    async fn counts_are_kept_with_fingerprints_computed_beside_them() {
        let mut window = ContextWindow::default();
        window.begin_run(settings(50));
        window.push(Message::user(NEAR), 1);
        window
            .measure(&CancellationToken::new(), Duration::from_secs(60))
            .await
            .unwrap();
        let entry = &window.history().entries[0];
        assert_eq!(entry.fingerprint, Some(fingerprint(&entry.message)));
        let kept = window.exact_counts();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].fingerprint, fingerprint(&entry.message));
        assert_eq!(Some(kept[0].exact), entry.tokens.cached_exact());
    }

    #[tokio::test]
    async fn a_cancelled_switch_leaves_the_window_on_estimates() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let mut window = ContextWindow::default();
        window.begin_run(settings(50));
        window.push(Message::user(NEAR), 1);
        let error = window.measure(&cancel, Duration::from_secs(60)).await;
        assert!(matches!(error, Err(RuntimeError::Cancelled)), "{error:?}");
        assert_eq!(window.mode(), CountMode::Estimate);
    }
}
