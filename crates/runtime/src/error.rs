//! The one error type of `oxydra-runtime`.

use crate::approvals::PendingApproval;
use crate::budget::Budget;
use oxydra_memory::MemoryError;
use oxydra_provider::ProviderError;
use thiserror::Error;

/// Why a session ended without a final answer.
///
/// Tool failures never appear here: they become tool messages the model corrects
/// itself from. A session ends early only on cancellation, an exhausted budget, a
/// provider error that survived retries, a memory failure or a bad configuration —
/// or it waits for a person ([`RuntimeError::AwaitingApproval`]; requests that
/// resolve to a [`RunOutcome`](crate::RunOutcome) give that as
/// [`RunOutcome::AwaitingApproval`](crate::RunOutcome::AwaitingApproval) instead).
///
/// `#[non_exhaustive]`: new ways to end may come; match it with a catch-all arm (or
/// use [`RuntimeError::kind`]).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A budget ran out: `budget` says which (shown as `max_turns`, `max_cost` or
    /// `turn_timeout`).
    #[error("budget `{budget}` exceeded: {message}")]
    BudgetExceeded {
        /// Which budget.
        budget: Budget,
        /// What happened, with the numbers.
        message: String,
    },
    /// The caller's cancellation token fired.
    #[error("turn cancelled")]
    Cancelled,
    /// The provider failed (after any retries the provider itself does). Shown as the
    /// provider's own message: the kind (`provider`) already says where it came from.
    #[error("{0}")]
    Provider(#[from] ProviderError),
    /// Storing or loading the conversation failed.
    #[error("memory error: {0}")]
    Memory(#[source] MemoryError),
    /// Another run holds the session (it has one writer at a time), or held it while
    /// this run's lease had lapsed: the memory error says which run, since when.
    #[error("{0}")]
    SessionBusy(#[source] MemoryError),
    /// The permission broker deferred consent for tool calls
    /// ([`PermissionDecision::Defer`](oxydra_executor::PermissionDecision::Defer)): the
    /// run stopped before them, with everything before them stored, and resumes when
    /// the session is run again with the decisions
    /// ([`RunRequest::decide`](crate::RunRequest::decide)).
    #[error(
        "the run waits for approval of {}",
        pending.iter().map(|p| format!("`{}` ({})", p.tool, p.approval_id)).collect::<Vec<_>>().join(", ")
    )]
    AwaitingApproval {
        /// The calls waiting, in the order the model asked for them.
        pending: Vec<PendingApproval>,
    },
    /// The runtime was built or called with an invalid configuration.
    #[error("configuration error: {0}")]
    Config(String),
    /// A limit of [`RuntimeLimits`](crate::RuntimeLimits) is unusable
    /// ([`RuntimeLimits::validate`](crate::RuntimeLimits::validate)). Kind `config`.
    #[error("invalid value for {key}: {message}")]
    InvalidLimit {
        /// The limit, as its key in `[runtime]` and in the limits' JSON
        /// (`max_turns`, `max_cost`, `turn_timeout_secs`, `summary_trigger_ratio`,
        /// `context_window`).
        key: &'static str,
        /// What was expected and what was found.
        message: String,
    },
    /// A cost budget (`max_cost`) was set for a model whose price is unknown: its calls
    /// would count as free and the budget would allow anything. Kind `config`.
    #[error(
        "max_cost is set but no price is known for model `{model}`, so its cost cannot be \
         counted; give its price with `AgentRuntimeBuilder::model_price(ModelPrice::new(\
         input, output, cached_input))` (US dollars per million tokens; all zero for a free \
         local model) or a `PricingTable` with an entry for it (`.pricing(table)`), or \
         drop max_cost"
    )]
    UnpricedModel {
        /// The model without a price.
        model: String,
    },
    /// The run's [`UsageLedger`](crate::UsageLedger) could not record what the run
    /// used: the run stops, as its budgets could no longer hold for whoever continues
    /// it.
    #[error("cannot record the run's usage: {0}")]
    UsageLedger(String),
    /// The new user message, with the system prompt and the tool schemas sent with
    /// every request, cannot fit the context budget: the run ends before any call.
    #[error(
        "the prompt is too long: {tokens} tokens (with the system prompt and the tool \
         schemas) exceed the context budget of {budget} tokens (the context window less \
         the room kept for the answer); shorten the prompt, or raise `[runtime] \
         context_window` if the model takes more"
    )]
    PromptTooLong {
        /// The tokens of the user message, system prompt and tool schemas.
        tokens: u64,
        /// The tokens a prompt may take.
        budget: u64,
    },
    /// The task a streamed run ran on panicked or was aborted
    /// ([`RunHandle`](crate::RunHandle)): what it stored before stays stored.
    #[error("the run did not end: {0}")]
    RunTask(String),
    /// A hook's `before_model_request` stopped the run before the model was asked.
    #[error("hook `{hook}` stopped the run: {reason}")]
    HookStopped {
        /// The hook.
        hook: String,
        /// Its reason.
        reason: String,
    },
    /// An eval suite file ([`Suite::load`](crate::eval::Suite::load)) is unusable:
    /// the message names the line, the task and the key where it can. Kind `config`.
    #[error("{}: {message}", file.display())]
    EvalSuite {
        /// The suite file.
        file: std::path::PathBuf,
        /// What is wrong, and where.
        message: String,
    },
}

impl From<MemoryError> for RuntimeError {
    /// A busy session or a lost lease is [`RuntimeError::SessionBusy`]; any other memory
    /// failure is [`RuntimeError::Memory`].
    fn from(error: MemoryError) -> Self {
        match error {
            MemoryError::SessionBusy { .. } | MemoryError::LeaseLost { .. } => {
                Self::SessionBusy(error)
            }
            other => Self::Memory(other),
        }
    }
}

impl RuntimeError {
    /// A stable snake_case name of the error, as the `error` event and the CLI's exit
    /// codes use it: `budget_exceeded`, `cancelled`, `provider`, `memory`,
    /// `session_busy`, `config`, `usage_ledger`, `prompt_too_long`, `hook_stopped`,
    /// `run_task` or `waiting_approval`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::BudgetExceeded { .. } => "budget_exceeded",
            Self::Cancelled => "cancelled",
            Self::Provider(_) => "provider",
            Self::Memory(_) => "memory",
            Self::SessionBusy(_) => "session_busy",
            Self::Config(_)
            | Self::InvalidLimit { .. }
            | Self::UnpricedModel { .. }
            | Self::EvalSuite { .. } => "config",
            Self::UsageLedger(_) => "usage_ledger",
            Self::PromptTooLong { .. } => "prompt_too_long",
            Self::HookStopped { .. } => "hook_stopped",
            Self::RunTask(_) => "run_task",
            Self::AwaitingApproval { .. } => "waiting_approval",
        }
    }

    /// A budget error for `budget` with `message`.
    pub(crate) fn budget(budget: Budget, message: impl Into<String>) -> Self {
        Self::BudgetExceeded {
            budget,
            message: message.into(),
        }
    }

    /// Maps a provider error, turning the provider's own cancellation into
    /// [`RuntimeError::Cancelled`].
    pub(crate) fn from_provider(error: ProviderError) -> Self {
        match error {
            ProviderError::Cancelled => Self::Cancelled,
            other => Self::Provider(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_stable() {
        assert_eq!(
            RuntimeError::budget(Budget::MaxTurns, "8 turns").kind(),
            "budget_exceeded"
        );
        assert_eq!(RuntimeError::Cancelled.kind(), "cancelled");
        assert_eq!(
            RuntimeError::from_provider(ProviderError::Cancelled).kind(),
            "cancelled"
        );
        let provider = RuntimeError::from_provider(ProviderError::Transport {
            message: "reset".into(),
        });
        assert_eq!(provider.kind(), "provider");
        assert!(provider.to_string().contains("reset"));
        assert_eq!(RuntimeError::Config("x".into()).kind(), "config");
        let stopped = RuntimeError::HookStopped {
            hook: "quota".into(),
            reason: "over the daily limit".into(),
        };
        assert_eq!(stopped.kind(), "hook_stopped");
        assert_eq!(
            stopped.to_string(),
            "hook `quota` stopped the run: over the daily limit"
        );
        let task = RuntimeError::RunTask("the run's task panicked".into());
        assert_eq!(task.kind(), "run_task");
        assert_eq!(
            task.to_string(),
            "the run did not end: the run's task panicked"
        );
        let ledger = RuntimeError::UsageLedger("database gone".into());
        assert_eq!(ledger.kind(), "usage_ledger");
        assert_eq!(
            ledger.to_string(),
            "cannot record the run's usage: database gone"
        );
        let too_long = RuntimeError::PromptTooLong {
            tokens: 5_000,
            budget: 1_000,
        };
        assert_eq!(too_long.kind(), "prompt_too_long");
        let message = too_long.to_string();
        assert!(message.contains("5000 tokens"), "{message}");
        assert!(message.contains("budget of 1000 tokens"), "{message}");
        assert!(message.contains("`[runtime] context_window`"), "{message}");
        let lost = RuntimeError::from(MemoryError::LeaseLost {
            session: oxydra_types::SessionId::from("ses_x"),
        });
        assert_eq!(lost.kind(), "session_busy");
        assert!(lost.to_string().starts_with("the lease on session ses_x"));
        let memory = RuntimeError::from(MemoryError::Worker("gone".into()));
        assert_eq!(memory.kind(), "memory");
        let budget = RuntimeError::budget(Budget::MaxCost, "spent $2.00 of $1.00");
        assert_eq!(
            budget.to_string(),
            "budget `max_cost` exceeded: spent $2.00 of $1.00"
        );
    }
}
