//! Per-process rule state: what ran during one `process()` call (a user message and
//! the turns it causes). A heartbeat continuation starts a fresh one.

use std::time::Instant;

use oxydra_types::CallId;

/// One successful run, for the ordering rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolExecution {
    /// The tool.
    pub tool_name: String,
    /// The call.
    pub call_id: CallId,
    /// When it finished.
    pub finished_at: Instant,
}

/// Where the process is in its loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExecutionPhase {
    /// Tools are being called.
    #[default]
    Running,
    /// An `exit_loop` tool ran; the loop should end.
    ExitRequested,
    /// The exit requirements were run.
    Exited,
}

/// Ordering state of one process: create it with
/// [`ToolExecutor::new_process_state`](crate::ToolExecutor::new_process_state).
#[derive(Debug, Clone, Default)]
pub struct ProcessToolState {
    pub(crate) history: Vec<ToolExecution>,
    pub(crate) start_constraints_done: bool,
    pub(crate) exit_requirements_pending: Vec<String>,
    pub(crate) phase: ExecutionPhase,
}

impl ProcessToolState {
    /// Successful runs of this process, in the order they finished.
    pub fn history(&self) -> &[ToolExecution] {
        &self.history
    }

    /// Whether `tool_name` ran successfully in this process.
    pub fn has_run(&self, tool_name: &str) -> bool {
        self.history.iter().any(|run| run.tool_name == tool_name)
    }

    /// Whether every start-constraint tool has run successfully (true when there are none).
    pub fn start_constraints_done(&self) -> bool {
        self.start_constraints_done
    }

    /// `required_before_exit` tools that have not run yet.
    pub fn exit_requirements_pending(&self) -> &[String] {
        &self.exit_requirements_pending
    }

    /// The loop phase.
    pub fn phase(&self) -> ExecutionPhase {
        self.phase
    }

    pub(crate) fn record(&mut self, tool_name: &str, call_id: CallId, finished_at: Instant) {
        self.exit_requirements_pending.retain(|t| t != tool_name);
        self.history.push(ToolExecution {
            tool_name: tool_name.to_owned(),
            call_id,
            finished_at,
        });
    }
}
