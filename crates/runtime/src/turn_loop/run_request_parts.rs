//! What a run of the turn loop is given beside its session: how it opens (a prompt, a
//! continuation, a person's approval decisions) and its options (output schema, tool
//! choice, budget already used, the usage ledger).

use oxydra_types::{ContentPart, Source};

use crate::approvals::{ApprovalDecision, PendingApproval};
use crate::structured_output::OutputSchema;
use crate::tool_choice::ToolChoicePolicy;
use crate::usage_ledger::UsageLedger;
use crate::used_budget::UsedBudget;

/// What one run is asked for beside its prompt.
pub(crate) struct RunOptions<'a> {
    /// The schema the final answer must satisfy, if any.
    pub(crate) output: Option<&'a OutputSchema>,
    /// The run's tool choice; `None`: the runtime's.
    pub(crate) tool_choice: Option<&'a dyn ToolChoicePolicy>,
    /// Where the budget counters start (what an earlier process used of the run).
    pub(crate) used: UsedBudget,
    /// Where the run records its totals as they grow.
    pub(crate) ledger: Option<&'a dyn UsageLedger>,
}

/// How a run begins.
pub(crate) enum Opening {
    /// With the user's message: its text, the parts (images, documents) after it, and
    /// where it came from when not only from the person (see
    /// [`RunRequest::prompt_source`](crate::RunRequest::prompt_source)): every source,
    /// in the order given.
    Prompt(String, Vec<ContentPart>, Vec<Source>),
    /// Continuing the stored conversation as it is (a run taken over from a process
    /// that died).
    Continue,
    /// Resuming a run that waited for approval, with a person's decisions.
    Decided(Vec<(PendingApproval, ApprovalDecision)>),
    /// Condensing the conversation now (a person's `/compact`): one summarisation
    /// call, no turn. The outcome's text is the summary stored, empty when there was
    /// nothing to condense.
    Compact,
}
