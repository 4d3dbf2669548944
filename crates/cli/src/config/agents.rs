//! `[[agents]]`: agent blueprints for the coordinator (docs/configuration.md).
//!
//! The CLI only parses and checks them here; `oxydra agents list` and `oxydra serve`
//! hand them to the coordinator.

use oxydra::coordinator::{BlueprintConfig, BlueprintKind, BlueprintLimits, StepConfig};
use serde::{Deserialize, Serialize};

use super::ProviderKind;

/// One `[[agents]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Unique name.
    pub name: String,
    /// `agent` or `deterministic` (the coordinator's kind, with its serde form).
    #[serde(rename = "type")]
    pub kind: BlueprintKind,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// System prompt of an AI agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Tools an AI agent may use (absent: every configured tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Privileged tools (`shell_exec`, …) this agent may use; naming one in `tools` or a
    /// step without listing it here is an error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_privileged: Vec<String>,
    /// Tool rules of this agent, added to the top-level `[[rules]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<super::RuleEntry>,
    /// Budgets of an AI agent (`max_turns`, `max_cost`, `turn_timeout_secs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<BlueprintLimits>,
    /// JSON Schema (Draft 7) of a deterministic blueprint's parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters_schema: Option<serde_json::Value>,
    /// Steps of a deterministic blueprint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepConfig>,
    /// Provider override for an AI agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderKind>,
    /// Model override for an AI agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether a run tree that already runs this agent may start it again
    /// (`start_agent_run` refuses otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_recursion: bool,
}

impl AgentConfig {
    /// The coordinator's blueprint for this entry (its rules were parsed when the file
    /// was read).
    pub fn to_blueprint(&self) -> BlueprintConfig {
        BlueprintConfig {
            name: self.name.clone(),
            kind: self.kind,
            description: self.description.clone(),
            system_prompt: self.system_prompt.clone(),
            provider: self.provider.map(|kind| kind.as_str().to_owned()),
            model: self.model.clone(),
            tools: self.tools.clone(),
            allow_privileged: self.allow_privileged.clone(),
            rules: super::rules(&self.rules),
            limits: self.limits.clone(),
            parameters_schema: self.parameters_schema.clone(),
            steps: self.steps.clone(),
            allow_recursion: self.allow_recursion,
        }
    }
}

/// Checks what serde cannot: unique names and steps only where they belong.
/// Returns the key at fault (`agents[1].steps`) and what is wrong.
pub(super) fn validate(agents: &[AgentConfig]) -> Result<(), (String, String)> {
    for (index, agent) in agents.iter().enumerate() {
        let at = |key: &str| format!("agents[{index}].{key}");
        if agent.name.trim().is_empty() {
            return Err((at("name"), "must not be empty".into()));
        }
        if agents
            .iter()
            .take(index)
            .any(|other| other.name == agent.name)
        {
            return Err((
                at("name"),
                format!("the name `{}` is used twice", agent.name),
            ));
        }
        match agent.kind {
            BlueprintKind::Deterministic if agent.steps.is_empty() => {
                return Err((
                    at("steps"),
                    "a deterministic agent needs at least one step".into(),
                ));
            }
            BlueprintKind::Agent if !agent.steps.is_empty() => {
                return Err((at("steps"), "only deterministic agents have steps".into()));
            }
            _ => {}
        }
        if let Some(schema) = &agent.parameters_schema
            && !schema.is_object()
        {
            return Err((
                at("parameters_schema"),
                "expected a table (a JSON Schema object)".into(),
            ));
        }
        for (step_index, step) in agent.steps.iter().enumerate() {
            if !step.args.is_object() {
                return Err((
                    at(&format!("steps[{step_index}].args")),
                    "expected a table".into(),
                ));
            }
        }
    }
    Ok(())
}
