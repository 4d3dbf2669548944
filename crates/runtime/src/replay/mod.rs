//! Replay (DESIGN.md §3.15): a stored session's prompts run again against a model,
//! from its first turn or from turn N (the turns before are copied as context). A tool
//! call matching a recorded one (same tool, same arguments as canonical JSON) gets the
//! recorded output without running; any other is refused with a tool error the model
//! gets, or, when live, runs (in a workspace the caller makes a scratch copy). The
//! replay is a new session whose meta names the original (`SessionMeta::replay_of`);
//! the original is only read.
//!
//! ```no_run
//! # async fn demo(
//! #     memory: std::sync::Arc<dyn oxydra_memory::Memory>,
//! #     tools: oxydra_tools::ToolRegistry,
//! #     provider: std::sync::Arc<dyn oxydra_provider::Provider>,
//! # ) -> Result<(), Box<dyn std::error::Error>> {
//! use oxydra_runtime::{AgentRuntime, CancellationToken, replay::Replay};
//! let session = oxydra_types::SessionId::from("ses_recorded");
//! let replay = Replay::load(memory.as_ref(), &session, 1).await?;
//! let runtime = AgentRuntime::builder()
//!     .provider(provider)
//!     .model("gpt-4o-mini")
//!     .tools(replay.wrap_tools(&tools, false)?)
//!     .memory(memory.clone())
//!     .build()?;
//! let report = replay.run(&runtime, memory.as_ref(), &CancellationToken::new()).await?;
//! assert!(report.identical(), "{:?}", report.first_difference);
//! # Ok(()) }
//! ```

mod compare;
mod error;
mod recordings;

use std::sync::{Arc, Mutex, PoisonError};

use oxydra_memory::Memory;
use oxydra_tools::ToolRegistry;
use oxydra_types::{Message, MessageRole, SessionId, Usage};
use tokio_util::sync::CancellationToken;

use crate::runtime::AgentRuntime;

pub use compare::{
    CallRecord, Difference, FirstDifference, ReplayReport, RunSide, TurnRecord, first_difference,
    turns,
};
pub use error::ReplayError;
pub use recordings::{
    RecordedOutput, Recordings, ReplayTool, SharedRecordings, canonical_arguments, canonical_json,
};

/// A stored session ready to replay: the context kept, the prompts to send again and
/// the recorded calls.
#[derive(Debug)]
pub struct Replay {
    original: SessionId,
    from: u64,
    context: Vec<Message>,
    prompts: Vec<Message>,
    original_turns: Vec<TurnRecord>,
    recordings: SharedRecordings,
    recorded: usize,
    /// What the original's replayed answers used, each with the model that wrote it;
    /// `None` when an answer was stored without its use (sessions stored before it was
    /// recorded).
    original_use: Option<Vec<(String, Usage)>>,
}

impl Replay {
    /// Loads `session` from `memory` to replay from turn `from` (1: all of it). The
    /// calls recorded in the replayed turns answer the replay's calls.
    ///
    /// # Errors
    /// [`ReplayError::NoTurn`] when `from` is 0 or beyond the session's turns (an
    /// unknown session has none); the store's failure.
    pub async fn load(
        memory: &dyn Memory,
        session: &SessionId,
        from: u64,
    ) -> Result<Self, ReplayError> {
        let messages: Vec<Message> = memory
            .messages(session)
            .await?
            .into_iter()
            .map(|stored| stored.message)
            .collect();
        let starts: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, message)| message.role == MessageRole::User)
            .map(|(index, _)| index)
            .collect();
        let turns_count = starts.len() as u64;
        let start = usize::try_from(from.saturating_sub(1))
            .ok()
            .and_then(|index| starts.get(index).copied())
            .filter(|_| from >= 1)
            .ok_or_else(|| ReplayError::NoTurn {
                session: session.clone(),
                from,
                turns: turns_count,
            })?;
        let (context, replayed) = messages.split_at(start);
        let prompts = replayed
            .iter()
            .filter(|message| message.role == MessageRole::User)
            .cloned()
            .collect();
        let recordings = Recordings::from_messages(replayed);
        let recorded = recordings.remaining();
        let asked = memory
            .session_meta(session)
            .await?
            .map(|meta| meta.model)
            .unwrap_or_default();
        let original_use = replayed
            .iter()
            .filter(|message| message.role == MessageRole::Assistant)
            .map(|message| {
                let model = message.model.clone().unwrap_or_else(|| asked.clone());
                message.usage.map(|usage| (model, usage))
            })
            .collect();
        Ok(Self {
            original: session.clone(),
            from,
            context: context.to_vec(),
            prompts,
            original_turns: compare::turns(&messages, from),
            recordings: Arc::new(Mutex::new(recordings)),
            recorded,
            original_use,
        })
    }

    /// The session replayed.
    pub fn original(&self) -> &SessionId {
        &self.original
    }

    /// How many turns the replay sends.
    pub fn turns(&self) -> usize {
        self.prompts.len()
    }

    /// The recorded calls the replay's tools answer from.
    pub fn recordings(&self) -> SharedRecordings {
        Arc::clone(&self.recordings)
    }

    /// `tools` wrapped as [`ReplayTool`]s answering from this replay's recordings;
    /// with `live`, unrecorded calls run (give the runtime a scratch workspace then).
    ///
    /// # Errors
    /// [`ReplayError::Tools`] (not expected: the names come from a registry).
    pub fn wrap_tools(
        &self,
        tools: &ToolRegistry,
        live: bool,
    ) -> Result<ToolRegistry, ReplayError> {
        Ok(ReplayTool::wrap_all(tools, &self.recordings, live)?)
    }

    /// Runs the replay with `runtime` (built with [`Replay::wrap_tools`] and storing in
    /// `memory`) into a new session: the context first, then each prompt as a run.
    /// Returns the report comparing the two.
    ///
    /// # Errors
    /// [`ReplayError::Run`] when a turn's run fails (cancelled, budget, provider); the
    /// store's failure.
    pub async fn run(
        &self,
        runtime: &AgentRuntime,
        memory: &dyn Memory,
        cancel: &CancellationToken,
    ) -> Result<ReplayReport, ReplayError> {
        let session = SessionId::generate();
        if !self.context.is_empty() {
            memory.append_many(&session, &self.context).await?;
        }
        let mut input_tokens = 0_u64;
        let mut output_tokens = 0_u64;
        let mut cost = 0.0_f64;
        for (turn, prompt) in (self.from..).zip(&self.prompts) {
            // The prompt keeps where its text came from (piped, attached): a hold the
            // original run was under holds the replay too.
            let request = prompt.sources().fold(
                runtime
                    .session(&session)
                    .prompt(prompt.content.clone().unwrap_or_default())
                    .parts(prompt.parts.clone()),
                |request, source| request.prompt_source(source.clone()),
            );
            let result = request.cancel(cancel).await;
            let outcome = match result {
                Ok(outcome) => outcome,
                Err(source) => {
                    // What was stored of it is a replay too.
                    self.mark(memory, &session).await?;
                    return Err(ReplayError::Run {
                        turn,
                        session,
                        source: Box::new(source),
                    });
                }
            };
            input_tokens = input_tokens.saturating_add(outcome.usage.input_tokens);
            output_tokens = output_tokens.saturating_add(outcome.usage.output_tokens);
            cost += outcome.cost;
        }
        self.mark(memory, &session).await?;
        let stored: Vec<Message> = memory
            .messages(&session)
            .await?
            .into_iter()
            .map(|stored| stored.message)
            .collect();
        let replay_turns = compare::turns(&stored, self.from);
        let left = self
            .recordings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remaining();
        let replay_calls: usize = replay_turns.iter().map(|turn| turn.calls.len()).sum();
        let matched = self.recorded.saturating_sub(left);
        Ok(ReplayReport {
            from_turn: self.from,
            first_difference: first_difference(&self.original_turns, &replay_turns),
            original: side(
                self.original.clone(),
                self.original_turns.clone(),
                self.original_use(runtime),
            ),
            replay: side(
                session,
                replay_turns,
                Some((input_tokens, output_tokens, cost)),
            ),
            unrecorded_calls: replay_calls.saturating_sub(matched),
        })
    }
}

impl Replay {
    /// The original's input and output tokens over the replayed turns, and their cost
    /// priced as `runtime` prices each model that answered.
    fn original_use(&self, runtime: &AgentRuntime) -> Option<(u64, u64, f64)> {
        let answers = self.original_use.as_ref()?;
        Some(answers.iter().fold(
            (0_u64, 0_u64, 0.0_f64),
            |(input, output, cost), (model, usage)| {
                (
                    input.saturating_add(usage.input_tokens),
                    output.saturating_add(usage.output_tokens),
                    cost + runtime.inner.price(model, usage),
                )
            },
        ))
    }

    /// Marks `session` as a replay of the original in its meta (`replay_of`), keeping
    /// what the runs recorded there; later runs of it keep the mark.
    async fn mark(&self, memory: &dyn Memory, session: &SessionId) -> Result<(), ReplayError> {
        let mut meta = memory.session_meta(session).await?.unwrap_or_default();
        meta.replay_of = Some(self.original.as_str().to_owned());
        memory.store_session_meta(session, &meta).await?;
        Ok(())
    }
}

fn side(session_id: SessionId, turns: Vec<TurnRecord>, usage: Option<(u64, u64, f64)>) -> RunSide {
    RunSide {
        session_id,
        calls: turns.iter().map(|turn| turn.calls.len()).sum(),
        turns,
        input_tokens: usage.map(|(input, _, _)| input),
        output_tokens: usage.map(|(_, output, _)| output),
        cost: usage.map(|(_, _, cost)| cost),
    }
}
