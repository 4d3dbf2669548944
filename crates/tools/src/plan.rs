//! `update_plan`: the model keeps a short checklist of the task's steps, each
//! `pending`, `in_progress` or `completed` (as codex's tool of that name). It changes
//! nothing outside the conversation (read-only tier); the plan lives in the call's
//! arguments, so whoever shows or stores the calls (a terminal, JSONL, a session
//! store) has it, and the newest call's arguments are the plan now.

use async_trait::async_trait;
use oxydra_types::SafetyTier;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tool::ToolOutput;
use crate::typed_tool::TypedTool;

/// The tool's name.
pub const UPDATE_PLAN: &str = "update_plan";

/// The most steps a plan may have.
pub const MAX_PLAN_STEPS: usize = 50;

/// The longest step, in characters.
pub const MAX_STEP_CHARS: usize = 500;

/// Where a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one step at a time).
    InProgress,
    /// Done.
    Completed,
}

impl StepStatus {
    /// The mark a checklist shows for it: `[ ]`, `[~]` or `[x]`.
    pub fn mark(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[~]",
            Self::Completed => "[x]",
        }
    }
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// What the step does, in a few words.
    pub step: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: StepStatus,
}

/// Arguments of `update_plan`: the whole plan, as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdatePlanArgs {
    /// Why the plan changed, when that is worth saying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The steps in order; at most one `in_progress`.
    pub plan: Vec<PlanStep>,
}

impl UpdatePlanArgs {
    /// Reads the plan of a call's arguments (a JSON text); `None` when they are not one.
    pub fn from_arguments(arguments: &str) -> Option<Self> {
        serde_json::from_str(arguments).ok()
    }

    /// Checks the plan: at most [`MAX_PLAN_STEPS`] steps, none empty or longer than
    /// [`MAX_STEP_CHARS`], at most one `in_progress`.
    ///
    /// # Errors
    /// [`ToolError::Failed`] saying what to fix.
    pub fn validate(&self) -> Result<(), ToolError> {
        if self.plan.len() > MAX_PLAN_STEPS {
            return Err(ToolError::Failed(format!(
                "a plan has at most {MAX_PLAN_STEPS} steps; this one has {}",
                self.plan.len()
            )));
        }
        if let Some(at) = self.plan.iter().position(|s| s.step.trim().is_empty()) {
            return Err(ToolError::Failed(format!("step {} is empty", at + 1)));
        }
        if let Some(at) = self
            .plan
            .iter()
            .position(|s| s.step.chars().count() > MAX_STEP_CHARS)
        {
            return Err(ToolError::Failed(format!(
                "step {} is longer than {MAX_STEP_CHARS} characters; say it in a few words",
                at + 1
            )));
        }
        let in_progress = self
            .plan
            .iter()
            .filter(|s| s.status == StepStatus::InProgress)
            .count();
        if in_progress > 1 {
            return Err(ToolError::Failed(format!(
                "at most one step may be in_progress; {in_progress} are"
            )));
        }
        Ok(())
    }

    /// The plan as a checklist, one step a line (`[x] read the code`), after the
    /// explanation when there is one. The text is as given: escape it before showing
    /// it on a terminal.
    pub fn checklist(&self) -> String {
        let mut lines: Vec<String> = Vec::with_capacity(self.plan.len() + 1);
        if let Some(explanation) = self.explanation.as_deref().map(str::trim)
            && !explanation.is_empty()
        {
            lines.push(explanation.to_owned());
        }
        for step in &self.plan {
            let one_line = step.step.split_whitespace().collect::<Vec<_>>().join(" ");
            lines.push(format!("{} {one_line}", step.status.mark()));
        }
        if self.plan.is_empty() {
            lines.push("(no steps)".to_owned());
        }
        lines.join("\n")
    }
}

/// The plan tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct UpdatePlan;

#[async_trait]
impl TypedTool for UpdatePlan {
    type Args = UpdatePlanArgs;
    const NAME: &'static str = UPDATE_PLAN;
    const TIER: SafetyTier = SafetyTier::ReadOnly;

    fn description(&self) -> String {
        "Keep a short plan of the task: send the whole list of steps each time, each \
         `pending`, `in_progress` or `completed`, with at most one `in_progress`, and an \
         optional explanation of what changed. Use it for tasks of several steps; the \
         person sees the plan as it changes."
            .to_owned()
    }

    async fn run(&self, args: UpdatePlanArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        args.validate()?;
        let value = serde_json::to_value(&args).map_err(|e| ToolError::Failed(e.to_string()))?;
        Ok(ToolOutput::structured(
            format!("Plan updated:\n{}", args.checklist()),
            value,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Tool;
    use serde_json::json;

    fn args(value: serde_json::Value) -> UpdatePlanArgs {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_checklist_shows_each_step_with_its_mark() {
        let plan = args(json!({
            "explanation": "found the bug",
            "plan": [
                {"step": "read the code", "status": "completed"},
                {"step": "fix\nthe   bug", "status": "in_progress"},
                {"step": "test", "status": "pending"}
            ]
        }));
        plan.validate().unwrap();
        assert_eq!(
            plan.checklist(),
            "found the bug\n[x] read the code\n[~] fix the bug\n[ ] test"
        );
    }

    #[test]
    fn two_steps_in_progress_empty_or_too_many_steps_are_refused() {
        let two = args(json!({"plan": [
            {"step": "a", "status": "in_progress"},
            {"step": "b", "status": "in_progress"}
        ]}));
        assert!(
            two.validate()
                .unwrap_err()
                .to_string()
                .contains("at most one")
        );
        let empty = args(json!({"plan": [{"step": "  ", "status": "pending"}]}));
        assert!(
            empty
                .validate()
                .unwrap_err()
                .to_string()
                .contains("step 1 is empty")
        );
        let many: Vec<_> = (0..=MAX_PLAN_STEPS)
            .map(|n| json!({"step": format!("s{n}"), "status": "pending"}))
            .collect();
        assert!(args(json!({ "plan": many })).validate().is_err());
        let long =
            args(json!({"plan": [{"step": "x".repeat(MAX_STEP_CHARS + 1), "status": "pending"}]}));
        assert!(long.validate().is_err());
    }

    #[test]
    fn unknown_statuses_and_fields_do_not_parse() {
        for bad in [
            r#"{"plan":[{"step":"a","status":"done"}]}"#,
            r#"{"plan":[{"step":"a","status":"pending","extra":1}]}"#,
            r#"{"steps":[]}"#,
            "not json",
        ] {
            assert_eq!(UpdatePlanArgs::from_arguments(bad), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn the_tool_is_read_only_and_answers_with_the_checklist() {
        let tool = UpdatePlan;
        assert_eq!(tool.safety_tier(), SafetyTier::ReadOnly);
        assert_eq!(tool.schema().name, UPDATE_PLAN);
        let ctx = ToolContext::new(
            "/tmp",
            tokio_util::sync::CancellationToken::new(),
            "c1".into(),
        );
        let out = tool
            .execute(
                json!({"plan": [{"step": "look", "status": "in_progress"}]}),
                &ctx,
            )
            .await
            .unwrap();
        assert_eq!(out.content, "Plan updated:\n[~] look");
        let refused = tool
            .execute(
                json!({"plan": [
                    {"step": "a", "status": "in_progress"},
                    {"step": "b", "status": "in_progress"}
                ]}),
                &ctx,
            )
            .await;
        assert!(refused.is_err());
    }
}
