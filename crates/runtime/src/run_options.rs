//! What one run may set apart from its runtime's defaults.

use std::sync::Arc;

use crate::structured_output::OutputSchema;
use crate::tool_choice::ToolChoicePolicy;

/// Options of one run (see
/// [`AgentRuntime::run_session_with_options`](crate::AgentRuntime::run_session_with_options)).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// The tool choice of this run's turns; `None` takes the runtime's
    /// ([`AgentRuntimeBuilder::tool_choice`](crate::AgentRuntimeBuilder::tool_choice)).
    pub tool_choice: Option<Arc<dyn ToolChoicePolicy>>,
    /// The schema the final answer must satisfy, as in
    /// [`run_session_structured`](crate::AgentRuntime::run_session_structured).
    pub output: Option<OutputSchema>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("tool_choice", &self.tool_choice)
            .field("output", &self.output.is_some())
            .finish()
    }
}

impl RunOptions {
    /// No overrides: the runtime's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// These options with the tool choice `policy` (a
    /// [`ToolChoice`](oxydra_provider::ToolChoice), or a policy per turn).
    #[must_use]
    pub fn tool_choice(mut self, policy: impl ToolChoicePolicy + 'static) -> Self {
        self.tool_choice = Some(Arc::new(policy));
        self
    }

    /// These options with a final answer that must satisfy `output`.
    #[must_use]
    pub fn output(mut self, output: OutputSchema) -> Self {
        self.output = Some(output);
        self
    }
}
