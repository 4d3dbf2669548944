//! `--tool-choice` / `[runtime] tool_choice`: the tool choice of a run's turns. Unset,
//! the runtime's default applies: `auto`, or for a small model the per-run choice of
//! the runtime's small-model defaults (`oxydra::runtime::SmallModelDefaults`).

use std::sync::Arc;

use oxydra::provider::ToolChoice;
use oxydra::runtime::{AgentRuntime, ToolChoicePolicy};
use oxydra::tools::ToolRegistry;

use crate::error::CliError;

/// The policy for `setting` (`auto`, `none`, `required` or the name of one of
/// `tools`); `None` when unset.
pub fn policy(
    setting: Option<&str>,
    tools: &ToolRegistry,
) -> Result<Option<Arc<dyn ToolChoicePolicy>>, CliError> {
    let Some(setting) = setting.map(str::trim) else {
        return Ok(None);
    };
    let choice = match setting {
        "auto" => ToolChoice::Auto,
        "none" => ToolChoice::None,
        "required" => ToolChoice::Required,
        name if tools.contains(name) => ToolChoice::Tool(name.to_owned()),
        other => {
            return Err(CliError::Flag {
                flag: "--tool-choice",
                message: format!(
                    "expected auto, none, required or a tool's name, found `{other}` \
                     (also from [runtime] tool_choice); the tools are: {}",
                    tools.names().join(", ")
                ),
            });
        }
    };
    Ok(Some(Arc::new(choice)))
}

/// The line that says what the runtime changed for a small model (`None` for other
/// models): the tools it withheld and whether each run picks its tool choice.
pub fn small_model_note(runtime: &AgentRuntime) -> Option<String> {
    let defaults = runtime.small_model_defaults();
    if !defaults.applied {
        return None;
    }
    let offered = runtime.executor().registry().names().join(", ");
    let withheld = if defaults.withheld_tools.is_empty() {
        "none".to_owned()
    } else {
        defaults.withheld_tools.join(", ")
    };
    let choice = if defaults.per_run_tool_choice {
        "; the tool choice is picked per run (a call first when the prompt names a workspace path)"
    } else {
        ""
    };
    Some(format!(
        "oxydra: small local model: tools offered: {offered}; withheld: {withheld}{choice}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::runtime::{SMALL_MODEL_TOOLS, SMALL_MODEL_WITHHELD_TOOLS};
    use oxydra::tools::{BUILTIN_TOOL_NAMES, BuiltinToolsConfig};

    fn tools() -> ToolRegistry {
        ToolRegistry::with_builtins(&BuiltinToolsConfig::default())
    }

    fn first(setting: Option<&str>) -> Option<ToolChoice> {
        policy(setting, &tools())
            .unwrap()
            .map(|policy| policy.choose(oxydra::runtime::TurnInfo::new(1, 0)))
    }

    #[test]
    fn the_words_and_tool_names_map_to_choices_and_unset_is_the_runtimes() {
        assert_eq!(first(None), None);
        assert_eq!(first(Some("auto")), Some(ToolChoice::Auto));
        assert_eq!(first(Some("none")), Some(ToolChoice::None));
        assert_eq!(first(Some(" required ")), Some(ToolChoice::Required));
        assert_eq!(
            first(Some("file_read")),
            Some(ToolChoice::Tool("file_read".into()))
        );
    }

    #[test]
    fn an_unknown_tool_is_an_error_naming_the_flag_and_the_tools() {
        let error = policy(Some("fiel_read"), &tools()).err().unwrap();
        let message = error.to_string();
        assert!(message.contains("--tool-choice"), "{message}");
        assert!(message.contains("fiel_read"), "{message}");
        assert!(message.contains("file_read"), "{message}");
    }

    #[test]
    fn the_small_model_tools_and_the_withheld_ones_are_the_builtins() {
        let mut both: Vec<&str> = SMALL_MODEL_TOOLS
            .iter()
            .chain(&SMALL_MODEL_WITHHELD_TOOLS)
            .copied()
            .collect();
        both.sort_unstable();
        let mut builtins = BUILTIN_TOOL_NAMES.to_vec();
        builtins.sort_unstable();
        assert_eq!(both, builtins);
    }
}
