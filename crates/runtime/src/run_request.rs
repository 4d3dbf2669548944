//! One run of a session, described before it starts: [`RunRequest`] gathers the
//! prompt, cancellation token, event sink, tool choice and answer schema of a run,
//! then runs it when awaited (or streams it).

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use oxydra_types::{ContentPart, RuntimeEvent, SessionId, Source};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::approvals::{ApprovalDecision, PendingApproval};
use crate::error::RuntimeError;
use crate::events::{EventSink, RuntimeEventStream};
use crate::run_handle::RunHandle;
use crate::run_outcome::RunOutcome;
use crate::runtime::AgentRuntime;
use crate::session_outcome::SessionOutcome;
use crate::structured_output::OutputSchema;
use crate::tool_choice::ToolChoicePolicy;
use crate::turn_loop::Opening;
use crate::turn_loop::RunOptions;
use crate::usage_ledger::UsageLedger;
use crate::used_budget::UsedBudget;

/// The future a request runs as (boxed: the turn loop's future is large).
pub(crate) type RunFuture<T> = Pin<Box<dyn Future<Output = Result<T, RuntimeError>> + Send>>;

/// One run in a session, from [`AgentRuntime::session`]: set what differs from the
/// runtime's defaults, then `.await` it for the [`SessionOutcome`], or call
/// [`stream`](Self::stream) for its events as they happen.
///
/// With a [`prompt`](Self::prompt) the run sends it as the user's message (continuing
/// the session if it exists). Without one it **resumes** the stored session, as a run
/// taken over from a process that died mid-run does: the conversation is loaded and
/// repaired (orphaned tool calls get `interrupted` results) and the loop runs on until
/// the model answers without tool calls; a conversation already ending with the
/// model's answer returns that answer without calling the model.
///
/// A run whose permission broker deferred consent
/// ([`PermissionDecision::Defer`](oxydra_executor::PermissionDecision::Defer)) ends
/// waiting for approval, listing the [`PendingApproval`]s: [`outcome`](Self::outcome)
/// (and a typed request, [`output`](Self::output)) gives that as
/// [`RunOutcome::AwaitingApproval`], awaiting the request as
/// [`RuntimeError::AwaitingApproval`]. A request
/// without a prompt that carries the decisions ([`decide`](Self::decide)) resumes it:
/// the approved calls run, the denied ones reach the model as tool errors, and the
/// loop goes on (see `examples/deferred_approval.rs` of the `oxydra` crate).
///
/// Events go to the runtime's event sink (and the request's own, if given) as they
/// happen, ending with exactly one `final` or `error` event. With memory the run
/// holds the session's lease from start to end: a session has one writer at a time,
/// across runtimes and processes sharing the store.
///
/// # Errors
/// Awaiting gives [`RuntimeError::Cancelled`] when the [`cancel`](Self::cancel) token
/// fires, [`RuntimeError::BudgetExceeded`] when a budget runs out (for a structured
/// answer: no valid one came within `max_turns`), [`RuntimeError::Provider`] when the
/// provider fails, [`RuntimeError::Memory`] when storing fails,
/// [`RuntimeError::SessionBusy`] when another run holds the session past the
/// builder's [`session_wait`](crate::AgentRuntimeBuilder::session_wait) (nothing is
/// stored then), [`RuntimeError::UsageLedger`] when the request's
/// [`usage_ledger`](Self::usage_ledger) cannot record. Whatever was stored before the error stays stored, and every tool
/// call has its result.
///
/// ```
/// use std::sync::Arc;
/// use oxydra_provider::{ScriptedProvider, ScriptedTurn, ToolChoice};
/// use oxydra_runtime::{AgentRuntime, CancellationToken, CollectingEventSink};
/// use oxydra_types::SessionId;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::text("Hello!")]));
/// let runtime = AgentRuntime::builder().provider(provider).model("m").build().unwrap();
/// let events = Arc::new(CollectingEventSink::new());
/// let cancel = CancellationToken::new();
/// let outcome = runtime
///     .session(&SessionId::generate())
///     .prompt("Hi")
///     .events(events.clone())
///     .tool_choice(ToolChoice::Auto)
///     .cancel(&cancel)
///     .await
///     .unwrap();
/// assert_eq!(outcome.final_text, "Hello!");
/// assert!(!events.events().is_empty());
/// # });
/// ```
#[must_use = "a run request does nothing until it is awaited or streamed"]
pub struct RunRequest {
    runtime: AgentRuntime,
    session_id: SessionId,
    prompt: Option<String>,
    parts: Vec<ContentPart>,
    prompt_sources: Vec<Source>,
    cancel: Option<CancellationToken>,
    events: Option<Arc<dyn EventSink>>,
    tool_choice: Option<Arc<dyn ToolChoicePolicy>>,
    output: Option<OutputSchema>,
    used: Option<UsedBudget>,
    ledger: Option<Arc<dyn UsageLedger>>,
    decisions: Vec<(PendingApproval, ApprovalDecision)>,
}

impl std::fmt::Debug for RunRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunRequest")
            .field("session_id", &self.session_id)
            .field("prompt", &self.prompt.is_some())
            .field("parts", &self.parts.len())
            .field("prompt_sources", &self.prompt_sources)
            .field("cancel", &self.cancel.is_some())
            .field("events", &self.events.is_some())
            .field("tool_choice", &self.tool_choice)
            .field("output", &self.output.is_some())
            .field("used", &self.used)
            .field("ledger", &self.ledger.is_some())
            .field("decisions", &self.decisions.len())
            .finish_non_exhaustive()
    }
}

impl AgentRuntime {
    /// A run in session `session_id` (a new one, or a stored one to continue): give
    /// it a [`prompt`](RunRequest::prompt) and any options, then `.await` it. Without
    /// a prompt it resumes the stored conversation.
    pub fn session(&self, session_id: &SessionId) -> RunRequest {
        RunRequest {
            runtime: self.clone(),
            session_id: session_id.clone(),
            prompt: None,
            parts: Vec::new(),
            prompt_sources: Vec::new(),
            cancel: None,
            events: None,
            tool_choice: None,
            output: None,
            used: None,
            ledger: None,
            decisions: Vec::new(),
        }
    }
}

impl RunRequest {
    /// The user's message this run sends.
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    /// Where the user's message came from, when it is more than the person's words: a
    /// message carrying a workspace file's contents (chat's `@path`, `run --image`) is
    /// [`Source::Workspace`], one carrying another program's output (text piped into
    /// `run`) [`Source::Command`]. Call it once for each source of a message that
    /// mixes them: every one is stored with the message (the least trusted as its
    /// `source`, see [`Message::with_sources`](oxydra_types::Message::with_sources))
    /// and recorded in the session's provenance ledger, so the `[provenance]` policy
    /// holds side-effecting calls after it as it does after a `file_read` of the same
    /// file or a command's result, also in a session restored from memory later
    /// (DESIGN.md §3.13). Default: none (the person's own words).
    pub fn prompt_source(mut self, source: Source) -> Self {
        self.prompt_sources.push(source);
        self
    }

    /// Attaches `part` (an image or a document) to the user's message, after the
    /// parts attached before it. The message is sent and stored with its parts as they
    /// are; whether the provider can take them is its to say (an error naming the
    /// provider and the part, before anything is sent).
    ///
    /// # Errors
    /// Awaiting gives [`RuntimeError::Config`] (nothing runs) when the request has
    /// parts but no [`prompt`](Self::prompt).
    pub fn attach(mut self, part: ContentPart) -> Self {
        self.parts.push(part);
        self
    }

    /// Attaches `parts`, in order, as [`attach`](Self::attach) does each.
    pub fn parts(mut self, parts: impl IntoIterator<Item = ContentPart>) -> Self {
        self.parts.extend(parts);
        self
    }

    /// Cancels the run when `cancel` fires (a clone of it is kept; without one the
    /// run has a token of its own that nothing cancels).
    pub fn cancel(mut self, cancel: &CancellationToken) -> Self {
        self.cancel = Some(cancel.clone());
        self
    }

    /// Also sends this run's events to `sink`, beside the runtime's own sink.
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = Some(sink);
        self
    }

    /// The tool choice of this run's turns (a
    /// [`ToolChoice`](oxydra_provider::ToolChoice), or a policy per turn) in place of
    /// the runtime's ([`AgentRuntimeBuilder::tool_choice`](crate::AgentRuntimeBuilder::tool_choice)).
    pub fn tool_choice(mut self, policy: impl ToolChoicePolicy + 'static) -> Self {
        self.tool_choice = Some(Arc::new(policy));
        self
    }

    /// The final answer must satisfy `output` (a JSON Schema known at run time): the
    /// model answers through a `final_answer` tool, an answer that does not validate
    /// goes back to it with the errors, and the outcome's `output` (and the `final`
    /// event's) holds the answer.
    pub fn structured(mut self, output: OutputSchema) -> Self {
        self.output = Some(output);
        self
    }

    /// Starts the run's budget counters at `used` instead of zero: what an earlier
    /// process used of this run before it died, so that `max_turns` and `max_cost`
    /// hold over the whole run. The outcome (and the `final` event) then reports the
    /// whole run: `used` plus this run's turns, tokens and cost. A run whose `used`
    /// already reaches a budget makes no provider call: it ends `budget_exceeded`.
    /// (A resume with [`decide`](Self::decide) needs none: without it, the counters
    /// start from the decided approvals' `used`.)
    ///
    /// # Errors
    /// Awaiting gives [`RuntimeError::Config`] (before anything is sent or stored)
    /// when `used.cost` is negative or not a number.
    pub fn already_used(mut self, used: UsedBudget) -> Self {
        self.used = Some(used);
        self
    }

    /// Records the run's totals (turns, tokens, cost, [`already_used`](Self::already_used)
    /// included) with `ledger` as they grow: before each provider call and after each
    /// answer, waiting for each record before going on. Whoever continues the run after
    /// this process died starts from the last record.
    ///
    /// # Errors
    /// Awaiting gives [`RuntimeError::UsageLedger`] when a record fails (the run stops
    /// there).
    pub fn usage_ledger(mut self, ledger: Arc<dyn UsageLedger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// A person's `decision` on `pending`, one of the approvals a run of this session
    /// ended waiting for ([`RuntimeError::AwaitingApproval`]): a request with decisions
    /// and no prompt resumes that run. A decision that arrives after the request's
    /// `expires_at` is a denial; a waiting call left without a decision is asked about
    /// again (and may wait again).
    ///
    /// The resumed run goes on with the budgets of the run that stopped: its turns,
    /// tokens and cost start from `pending.used` (unless
    /// [`already_used`](Self::already_used) says otherwise), so `max_turns` and
    /// `max_cost` hold over the whole run and the outcome reports the whole run.
    ///
    /// Awaiting fails with [`RuntimeError::Config`] (nothing runs) when the request
    /// also has a prompt, or a decision is for a call that does not wait (decided
    /// already, or of another session).
    pub fn decide(mut self, pending: PendingApproval, decision: ApprovalDecision) -> Self {
        self.decisions.push((pending, decision));
        self
    }

    /// The session this request runs in.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// Runs the request and resolves to how it ended: [`RunOutcome::Finished`] with
    /// the [`SessionOutcome`], or [`RunOutcome::AwaitingApproval`] with what waits for
    /// a person, not an error. Awaiting the request itself gives the waiting as
    /// [`RuntimeError::AwaitingApproval`].
    ///
    /// # Errors
    /// As awaiting the request, but for waiting for approval.
    pub async fn outcome(self) -> Result<RunOutcome, RuntimeError> {
        RunOutcome::from_result(Box::pin(self.execute(None)).await)
    }

    /// Runs the request on a spawned task and returns its events as a stream (text
    /// deltas, progress, tool and lifecycle events, ending with `final` or `error`)
    /// and the run's [`RunHandle`], which gives its result as awaiting the request
    /// would have. A typed request streams too
    /// ([`TypedRunRequest::stream`](crate::TypedRunRequest::stream)).
    ///
    /// Must be called within a tokio runtime.
    pub fn stream(self) -> (RuntimeEventStream, RunHandle<SessionOutcome>) {
        self.stream_with(|request, channel| request.execute(Some(channel)))
    }

    /// Runs `run` (given the request and the channel its events go over) on a
    /// spawned task, returning the events as a stream and the task's handle.
    pub(crate) fn stream_with<T, F>(
        self,
        run: impl FnOnce(Self, mpsc::UnboundedSender<RuntimeEvent>) -> F,
    ) -> (RuntimeEventStream, RunHandle<T>)
    where
        T: Send + 'static,
        F: Future<Output = Result<T, RuntimeError>> + Send + 'static,
    {
        let (sender, receiver) = mpsc::unbounded_channel();
        let handle = RunHandle::new(tokio::spawn(run(self, sender)));
        (RuntimeEventStream::new(receiver), handle)
    }

    /// Runs the request; its events also go over `channel` when given.
    pub(crate) async fn execute(
        self,
        channel: Option<mpsc::UnboundedSender<RuntimeEvent>>,
    ) -> Result<SessionOutcome, RuntimeError> {
        let Self {
            runtime,
            session_id,
            prompt,
            parts,
            prompt_sources,
            cancel,
            events,
            tool_choice,
            output,
            used,
            ledger,
            decisions,
        } = self;
        let opening = match (prompt, decisions.is_empty()) {
            (Some(prompt), true) => Opening::Prompt(prompt, parts, prompt_sources),
            (None, _) if !parts.is_empty() => {
                return Err(RuntimeError::Config(
                    "attached parts go with the user's message: give a prompt with them".to_owned(),
                ));
            }
            (None, true) => Opening::Continue,
            (None, false) => Opening::Decided(decisions),
            (Some(_), false) => {
                return Err(RuntimeError::Config(
                    "approval decisions resume a waiting run: give them without a prompt"
                        .to_owned(),
                ));
            }
        };
        // A resume goes on with what the waiting run used (each of its approvals
        // carries the same totals; the largest is taken should they differ).
        let used = used.unwrap_or_else(|| match &opening {
            Opening::Decided(decisions) => decisions
                .iter()
                .map(|(pending, _)| pending.used)
                .max_by(|a, b| a.turns.cmp(&b.turns).then(a.cost.total_cmp(&b.cost)))
                .unwrap_or_default(),
            Opening::Prompt(..) | Opening::Continue | Opening::Compact => UsedBudget::default(),
        });
        let cancel = cancel.unwrap_or_default();
        let events = runtime.run_events(events, channel);
        let options = RunOptions {
            output: output.as_ref(),
            tool_choice: tool_choice.as_deref(),
            used,
            ledger: ledger.as_deref(),
        };
        runtime
            .run_with(&session_id, opening, &cancel, events, options)
            .await
    }
}

impl IntoFuture for RunRequest {
    type Output = Result<SessionOutcome, RuntimeError>;
    type IntoFuture = RunFuture<SessionOutcome>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute(None))
    }
}

#[cfg(test)]
mod tests;
