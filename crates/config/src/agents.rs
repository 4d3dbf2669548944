//! `[[agents]]`: each entry is the coordinator's [`BlueprintConfig`], read as it is
//! (docs/configuration.md); here only what the coordinator checks later is checked when
//! the file is read, so the error names the file and the key.

use oxydra::coordinator::{BlueprintConfig, BlueprintKind};

use super::ProviderKind;

/// Checks what serde cannot: unique names and steps only where they belong.
/// Returns the key at fault (`agents[1].steps`) and what is wrong.
pub(super) fn validate(agents: &[BlueprintConfig]) -> Result<(), (String, String)> {
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
        if let Some(provider) = &agent.provider
            && ProviderKind::from_name(provider).is_none()
        {
            return Err((
                at("provider"),
                format!(
                    "unknown provider `{provider}`, expected {}",
                    ProviderKind::listed()
                ),
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
