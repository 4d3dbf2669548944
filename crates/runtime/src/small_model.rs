//! The defaults a runtime gives a small model: the provider says its model is small
//! ([`Provider::is_small_model`]: the embedded model under a billion parameters), and
//! unless the builder turned them off
//! ([`AgentRuntimeBuilder::small_model_defaults`](crate::AgentRuntimeBuilder::small_model_defaults))
//! the runtime, whoever built it (`oxydra run`, `chat`, `serve`, a library user):
//!
//! - offers only the built-in tools such a model tells apart ([`SMALL_MODEL_TOOLS`]);
//!   the others ([`SMALL_MODEL_WITHHELD_TOOLS`]) are withheld and named in
//!   [`SmallModelDefaults::withheld_tools`] (tools that are not built in, such as MCP
//!   tools, are all kept);
//! - gives the provider the workspace ([`Provider::for_workspace`]), so the file
//!   tools' path arguments are held to the workspace's real paths;
//! - when no tool choice was set, picks each run's: the first turn is what the
//!   provider asks for the opening message ([`Provider::opening_tool_choice`]: a call
//!   when the prompt names a path of the workspace that exists), else `auto`; once a
//!   call was made, the turns answer in text (`none`). A greeting is never made into
//!   a call, and no word of the prompt picks a tool.

use std::sync::Arc;

use oxydra_provider::{Provider, ToolChoice};
use oxydra_tools::ToolRegistry;
use oxydra_types::{Message, ToolSchema};

use crate::error::RuntimeError;
use crate::tool_choice::FirstCall;

/// The built-in tools a small model is offered: the workspace file tools it can tell
/// apart. Each tool costs a small model prompt and a chance to pick the wrong one;
/// `shell_exec`, `web_fetch` and `file_edit` it rarely uses well.
pub const SMALL_MODEL_TOOLS: [&str; 4] = ["file_list", "file_read", "file_search", "file_write"];

/// The built-in tools of `oxydra-tools` a small model is not offered: together with
/// [`SMALL_MODEL_TOOLS`], all of them (the CLI's tests check it).
pub const SMALL_MODEL_WITHHELD_TOOLS: [&str; 3] = ["file_edit", "shell_exec", "web_fetch"];

/// What a runtime changed because its model is small (empty for any other model):
/// for a caller to say so, as `oxydra run` does in its header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SmallModelDefaults {
    /// Whether the defaults apply at all (the model is small and the builder did not
    /// turn them off).
    pub applied: bool,
    /// The built-in tools given to the builder that the runs do not offer, sorted.
    pub withheld_tools: Vec<String>,
    /// Whether each run picks its own tool choice (no tool choice was set).
    pub per_run_tool_choice: bool,
}

/// `tools` without [`SMALL_MODEL_WITHHELD_TOOLS`], and the names of those withheld
/// (sorted).
pub(crate) fn withhold(
    tools: Arc<ToolRegistry>,
) -> Result<(Arc<ToolRegistry>, Vec<String>), RuntimeError> {
    let names = tools.names();
    let (withheld, kept): (Vec<String>, Vec<String>) = names
        .into_iter()
        .partition(|name| SMALL_MODEL_WITHHELD_TOOLS.contains(&name.as_str()));
    if withheld.is_empty() {
        return Ok((tools, withheld));
    }
    let kept = tools
        .subset(&kept)
        .map_err(|error| RuntimeError::Config(format!("tools: {error}")))?;
    let mut withheld = withheld;
    withheld.sort();
    Ok((Arc::new(kept), withheld))
}

/// The tool choice of a small model's run that opens with `opening` (the user's
/// message; none when the run continues a stored conversation): the provider's
/// opening choice when it has one and it names no tool missing from `tools` (then any
/// call), else `auto`; after the first call, `none`.
pub(crate) fn run_policy(
    provider: &dyn Provider,
    opening: Option<&Message>,
    tools: &[ToolSchema],
) -> FirstCall {
    let first = opening
        .and_then(|message| provider.opening_tool_choice(std::slice::from_ref(message)))
        .map(|choice| match choice {
            ToolChoice::Tool(name) if !tools.iter().any(|tool| tool.name == name) => {
                ToolChoice::Required
            }
            other => other,
        })
        .unwrap_or(ToolChoice::Auto);
    FirstCall {
        first,
        then: ToolChoice::None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use async_trait::async_trait;
    use oxydra_provider::{
        ProviderCapabilities, ProviderError, ProviderRequest, ProviderResponse, ProviderStream,
    };
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::tool_choice::{ToolChoicePolicy, TurnInfo};

    /// A provider that asks for `opening` when the prompt says "look".
    #[derive(Debug)]
    struct Opens(ToolChoice);

    #[async_trait]
    impl Provider for Opens {
        fn name(&self) -> &str {
            "opens"
        }
        fn capabilities(&self, _model: &str) -> ProviderCapabilities {
            ProviderCapabilities {
                streaming: false,
                tool_calling: true,
                parallel_tool_calls: false,
                context_window: 1000,
                max_output_tokens: 100,
            }
        }
        async fn complete(
            &self,
            _request: &ProviderRequest,
            _cancel: &CancellationToken,
        ) -> Result<ProviderResponse, ProviderError> {
            Err(ProviderError::Cancelled)
        }
        async fn stream(
            &self,
            _request: &ProviderRequest,
            _cancel: &CancellationToken,
        ) -> Result<ProviderStream, ProviderError> {
            Err(ProviderError::Cancelled)
        }
        fn is_small_model(&self) -> bool {
            true
        }
        fn for_workspace(&self, _workspace: &Path) -> Option<Arc<dyn Provider>> {
            None
        }
        fn opening_tool_choice(&self, messages: &[Message]) -> Option<ToolChoice> {
            messages
                .iter()
                .any(|m| m.text().contains("look"))
                .then(|| self.0.clone())
        }
    }

    fn schemas(names: &[&str]) -> Vec<ToolSchema> {
        names
            .iter()
            .map(|name| ToolSchema::new(*name, "", serde_json::json!({"type": "object"})))
            .collect()
    }

    #[test]
    fn the_withheld_builtins_are_dropped_and_named() {
        let few = Arc::new(ToolRegistry::new());
        let (kept, withheld) = withhold(few).unwrap();
        assert!(kept.names().is_empty() && withheld.is_empty());
        for name in SMALL_MODEL_TOOLS {
            assert!(!SMALL_MODEL_WITHHELD_TOOLS.contains(&name), "{name}");
        }
    }

    #[test]
    fn a_run_opens_with_the_providers_choice_else_auto_then_answers() {
        let tools = schemas(&["file_read"]);
        let read = Opens(ToolChoice::Tool("file_read".into()));
        let first = |provider: &Opens, prompt: &str, tools: &[ToolSchema]| {
            run_policy(provider, Some(&Message::user(prompt)), tools).choose(TurnInfo::new(1, 0))
        };
        assert_eq!(
            first(&read, "look at a.txt", &tools),
            ToolChoice::Tool("file_read".into())
        );
        assert_eq!(first(&read, "hello", &tools), ToolChoice::Auto);
        // A tool the run does not offer is no choice: any call.
        assert_eq!(first(&read, "look", &[]), ToolChoice::Required);
        let policy = run_policy(&read, None, &tools);
        assert_eq!(policy.choose(TurnInfo::new(1, 0)), ToolChoice::Auto);
        assert_eq!(policy.choose(TurnInfo::new(2, 1)), ToolChoice::None);
    }

    #[test]
    fn the_builder_applies_the_defaults_to_a_small_model_unless_told_not_to() {
        let build = |builder: crate::AgentRuntimeBuilder| {
            builder
                .provider(Arc::new(Opens(ToolChoice::Required)))
                .model("m")
                .workspace_root(std::env::temp_dir())
                .build()
                .unwrap()
        };
        let runtime = build(crate::AgentRuntime::builder());
        let defaults = runtime.small_model_defaults();
        assert!(defaults.applied && defaults.per_run_tool_choice);
        let runtime = build(crate::AgentRuntime::builder().tool_choice(ToolChoice::Auto));
        let defaults = runtime.small_model_defaults();
        assert!(defaults.applied && !defaults.per_run_tool_choice);
        let runtime = build(crate::AgentRuntime::builder().small_model_defaults(false));
        assert_eq!(
            runtime.small_model_defaults(),
            &SmallModelDefaults::default()
        );
    }
}
