//! `--tool-choice` / `[runtime] tool_choice`: the tool choice of a run's turns.

use std::sync::Arc;

use oxydra::provider::{Provider, ToolChoice};
use oxydra::runtime::{FirstCall, ToolChoicePolicy};
use oxydra::tools::ToolRegistry;

use crate::error::CliError;

/// The policy for `setting` (`auto`, `none`, `required` or the name of one of
/// `tools`); unset: `auto`, or for a small local model the first turn requires a call
/// and the turns after it answer in text (a model that small rarely decides to call a
/// tool, and rarely stops calling once it has).
pub fn policy(
    setting: Option<&str>,
    tools: &ToolRegistry,
    provider: &dyn Provider,
) -> Result<Arc<dyn ToolChoicePolicy>, CliError> {
    let Some(setting) = setting.map(str::trim) else {
        return Ok(if is_small_local(provider) {
            Arc::new(FirstCall {
                first: ToolChoice::Required,
                then: ToolChoice::None,
            })
        } else {
            Arc::new(ToolChoice::Auto)
        });
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
    Ok(Arc::new(choice))
}

/// The built-in tools a small local model is offered: the workspace file tools it can
/// tell apart. Each tool costs a small model prompt and a chance to pick the wrong one;
/// `shell_exec`, `web_fetch` and `file_edit` it rarely uses well.
pub const SMALL_MODEL_TOOLS: [&str; 4] = ["file_list", "file_read", "file_search", "file_write"];

/// The built-in tools of a run: all of them, or [`SMALL_MODEL_TOOLS`] for a small
/// local model.
pub fn builtin_tools(
    config: &oxydra::tools::BuiltinToolsConfig,
    provider: &dyn Provider,
) -> ToolRegistry {
    let all = ToolRegistry::with_builtins(config);
    if !is_small_local(provider) {
        return all;
    }
    all.subset(&SMALL_MODEL_TOOLS).unwrap_or(all)
}

/// The provider of a run in `workspace`: a small local model gets the workspace's
/// paths as the choices of its file tools' `path` arguments
/// ([`WorkspacePaths`](super::workspace_paths::WorkspacePaths)), so it names a file
/// that exists rather than the placeholder of its training (`/path/to/file.txt`);
/// any other provider is returned as it is.
#[cfg(feature = "local")]
pub fn with_workspace_paths(
    provider: Arc<dyn Provider>,
    workspace: &std::path::Path,
) -> Arc<dyn Provider> {
    let any: &dyn std::any::Any = provider.as_ref();
    match any.downcast_ref::<oxydra::local::LocalProvider>() {
        Some(local) if local.is_small() => Arc::new(local.clone().with_argument_choices(Arc::new(
            super::workspace_paths::WorkspacePaths::new(workspace),
        ))),
        _ => provider,
    }
}

/// Without the local model there is nothing to give paths to.
#[cfg(not(feature = "local"))]
pub fn with_workspace_paths(
    provider: Arc<dyn Provider>,
    _workspace: &std::path::Path,
) -> Arc<dyn Provider> {
    provider
}

#[cfg(feature = "local")]
fn is_small_local(provider: &dyn Provider) -> bool {
    let provider: &dyn std::any::Any = provider;
    provider
        .downcast_ref::<oxydra::local::LocalProvider>()
        .is_some_and(oxydra::local::LocalProvider::is_small)
}

#[cfg(not(feature = "local"))]
fn is_small_local(_provider: &dyn Provider) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::provider::{OpenAiProvider, ProviderConfig};
    use oxydra::runtime::TurnInfo;
    use oxydra::tools::BuiltinToolsConfig;

    fn tools() -> ToolRegistry {
        ToolRegistry::with_builtins(&BuiltinToolsConfig::default())
    }

    fn remote() -> OpenAiProvider {
        OpenAiProvider::new(ProviderConfig::new("http://127.0.0.1:9/v1", None))
    }

    fn first(setting: Option<&str>) -> ToolChoice {
        policy(setting, &tools(), &remote())
            .unwrap()
            .choose(TurnInfo::new(1, 0))
    }

    #[test]
    fn the_words_and_tool_names_map_to_choices() {
        assert_eq!(first(None), ToolChoice::Auto);
        assert_eq!(first(Some("auto")), ToolChoice::Auto);
        assert_eq!(first(Some("none")), ToolChoice::None);
        assert_eq!(first(Some(" required ")), ToolChoice::Required);
        assert_eq!(
            first(Some("file_read")),
            ToolChoice::Tool("file_read".into())
        );
    }

    #[test]
    fn a_remote_model_gets_every_builtin_tool() {
        let tools = builtin_tools(&BuiltinToolsConfig::default(), &remote());
        assert_eq!(tools.names(), tools_names_all());
        for name in SMALL_MODEL_TOOLS {
            assert!(tools.contains(name), "{name} is a built-in tool");
        }
    }

    fn tools_names_all() -> Vec<String> {
        tools().names()
    }

    #[test]
    fn an_unknown_tool_is_an_error_naming_the_flag_and_the_tools() {
        let error = policy(Some("fiel_read"), &tools(), &remote())
            .err()
            .unwrap();
        let message = error.to_string();
        assert!(message.contains("--tool-choice"), "{message}");
        assert!(message.contains("fiel_read"), "{message}");
        assert!(message.contains("file_read"), "{message}");
    }
}
