//! The registry of the tools an agent may call.

use std::collections::BTreeMap;
use std::sync::Arc;

use oxydra_types::{SafetyTier, ToolSchema};

#[cfg(feature = "builtins")]
use crate::builtin::{BUILTIN_TOOL_NAMES, builtin_tool};
use crate::call_preview::CallPreview;
#[cfg(feature = "builtins")]
use crate::config::BuiltinToolsConfig;
use crate::error::ToolError;
use crate::tool::Tool;

/// Tools by name. Listing is in name order, so the schemas a provider sees are stable
/// from turn to turn (which keeps prompt caches warm).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry with only the tools named in `names` (e.g. an agent blueprint's
    /// `tools`); names not registered here are an error listing them.
    pub fn subset<S: AsRef<str>>(&self, names: &[S]) -> Result<Self, ToolError> {
        let unknown: Vec<String> = names
            .iter()
            .map(AsRef::as_ref)
            .filter(|name| !self.tools.contains_key(*name))
            .map(str::to_owned)
            .collect();
        if !unknown.is_empty() {
            return Err(ToolError::UnknownTools {
                unknown,
                available: self.names(),
            });
        }
        let tools = names
            .iter()
            .filter_map(|name| {
                let name = name.as_ref();
                self.tools
                    .get(name)
                    .map(|tool| (name.to_owned(), Arc::clone(tool)))
            })
            .collect();
        Ok(Self { tools })
    }

    /// Add a tool; a second tool with the same name is refused.
    pub fn register(&mut self, tool: impl Tool + 'static) -> Result<(), ToolError> {
        self.register_arc(Arc::new(tool))
    }

    /// Add a shared tool; a second tool with the same name is refused.
    pub fn register_arc(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        let name = tool.schema().name;
        if self.tools.contains_key(&name) {
            return Err(ToolError::DuplicateTool { name });
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }

    /// What a call of `name` with `args` will do, for a person deciding on it (see
    /// [`Tool::preview`]); the arguments as JSON for a tool not registered here. For
    /// showing a pending approval with the words the consent question used.
    pub fn preview(
        &self,
        name: &str,
        args: &serde_json::Value,
        workspace_root: &std::path::Path,
    ) -> CallPreview {
        match self.get(name) {
            Some(tool) => tool.preview(args, workspace_root),
            None => CallPreview::arguments(args),
        }
    }

    /// Whether a tool called `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The safety tier of the tool called `name`.
    pub fn tier(&self, name: &str) -> Option<SafetyTier> {
        self.tools.get(name).map(|tool| tool.safety_tier())
    }

    /// Names of all tools, in order.
    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// Schemas of all tools, in name order.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools.values().map(|tool| tool.schema()).collect()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// The built-in tools (feature `builtins`).
#[cfg(feature = "builtins")]
impl ToolRegistry {
    /// A registry holding every built-in tool, configured by `config`.
    pub fn with_builtins(config: &BuiltinToolsConfig) -> Self {
        let mut registry = Self::new();
        for name in BUILTIN_TOOL_NAMES {
            if let Some(tool) = builtin_tool(name, config) {
                registry.tools.insert(name.to_owned(), tool);
            }
        }
        registry
    }

    /// A registry holding the built-in tools named in `names`; unknown names are an
    /// error ([`ToolError::UnknownTools`]) that lists them and the built-in names.
    pub fn with_builtin_subset<S: AsRef<str>>(
        config: &BuiltinToolsConfig,
        names: &[S],
    ) -> Result<Self, ToolError> {
        let mut registry = Self::new();
        registry.register_builtins(config, names)?;
        Ok(registry)
    }

    /// Add the built-in tools named in `names`. Nothing is added when a name is
    /// unknown ([`ToolError::UnknownTools`]) or already registered
    /// ([`ToolError::DuplicateTool`]).
    pub fn register_builtins<S: AsRef<str>>(
        &mut self,
        config: &BuiltinToolsConfig,
        names: &[S],
    ) -> Result<(), ToolError> {
        let unknown: Vec<String> = names
            .iter()
            .map(AsRef::as_ref)
            .filter(|name| !BUILTIN_TOOL_NAMES.contains(name))
            .map(str::to_owned)
            .collect();
        if !unknown.is_empty() {
            return Err(ToolError::UnknownTools {
                unknown,
                available: BUILTIN_TOOL_NAMES.iter().map(|n| (*n).to_owned()).collect(),
            });
        }
        let mut tools = Vec::new();
        for name in names.iter().map(AsRef::as_ref) {
            if self.tools.contains_key(name) || tools.iter().any(|(n, _)| n == name) {
                return Err(ToolError::DuplicateTool {
                    name: name.to_owned(),
                });
            }
            if let Some(tool) = builtin_tool(name, config) {
                tools.push((name.to_owned(), tool));
            }
        }
        self.tools.extend(tools);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;

    use super::*;
    use crate::context::ToolContext;
    use crate::tool::ToolOutput;

    /// A tool called `name` that answers its name.
    struct Named(&'static str);

    #[async_trait]
    impl Tool for Named {
        fn schema(&self) -> ToolSchema {
            ToolSchema::new(
                self.0,
                "Answers its name",
                serde_json::json!({"type": "object"}),
            )
        }
        fn safety_tier(&self) -> SafetyTier {
            SafetyTier::ReadOnly
        }
        async fn execute(
            &self,
            _args: serde_json::Value,
            _ctx: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(self.0))
        }
    }

    #[test]
    fn hand_made_tools_are_listed_in_name_order_and_subsets_name_the_unknown() {
        let mut registry = ToolRegistry::new();
        assert!(registry.is_empty());
        for name in ["zeta", "alpha", "mid"] {
            registry.register(Named(name)).unwrap();
        }
        assert!(matches!(
            registry.register(Named("mid")),
            Err(ToolError::DuplicateTool { ref name }) if name == "mid"
        ));
        assert_eq!(registry.names(), ["alpha", "mid", "zeta"]);
        assert_eq!(registry.len(), 3);
        let sub = registry.subset(&["zeta", "alpha"]).unwrap();
        assert_eq!(sub.names(), ["alpha", "zeta"]);
        match registry.subset(&["alpha", "", "../zeta"]) {
            Err(ToolError::UnknownTools { unknown, available }) => {
                assert_eq!(unknown, ["", "../zeta"]);
                assert_eq!(available, ["alpha", "mid", "zeta"]);
            }
            other => panic!("expected UnknownTools, got {other:?}"),
        }
        assert!(registry.subset::<&str>(&[]).unwrap().is_empty());
    }

    #[cfg(feature = "builtins")]
    #[test]
    fn builtins_are_all_registered_in_name_order() {
        let registry = ToolRegistry::with_builtins(&BuiltinToolsConfig::default());
        assert_eq!(registry.names(), BUILTIN_TOOL_NAMES);
        let names: Vec<String> = registry.schemas().into_iter().map(|s| s.name).collect();
        assert_eq!(names, BUILTIN_TOOL_NAMES);
        assert_eq!(registry.tier("shell_exec"), Some(SafetyTier::Privileged));
        assert_eq!(registry.tier("nope"), None);
        assert!(registry.contains("web_fetch"));
    }

    #[cfg(feature = "builtins")]
    #[test]
    fn subsets_name_unknown_tools() {
        let config = BuiltinToolsConfig::default();
        let registry =
            ToolRegistry::with_builtin_subset(&config, &["web_fetch", "file_read"]).unwrap();
        assert_eq!(registry.names(), ["file_read", "web_fetch"]);
        match ToolRegistry::with_builtin_subset(&config, &["file_read", "rm_rf", "teleport"]) {
            Err(ToolError::UnknownTools { unknown, available }) => {
                assert_eq!(unknown, ["rm_rf", "teleport"]);
                assert_eq!(available.len(), 7);
            }
            other => panic!("expected UnknownTools, got {other:?}"),
        }
        let err = ToolRegistry::with_builtin_subset(&config, &["nope"]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unknown tool(s): nope; available: file_edit, "),
            "{err}"
        );

        let mut registry = ToolRegistry::with_builtin_subset(&config, &["file_read"]).unwrap();
        let err = registry
            .register_builtins(&config, &["file_list", "file_read"])
            .unwrap_err();
        assert!(matches!(err, ToolError::DuplicateTool { ref name } if name == "file_read"));
        assert_eq!(registry.names(), ["file_read"], "nothing added on error");
        let err = registry
            .register_builtins(&config, &["file_list", "file_list"])
            .unwrap_err();
        assert!(matches!(err, ToolError::DuplicateTool { .. }));

        let all = ToolRegistry::with_builtins(&config);
        let sub = all.subset(&["shell_exec"]).unwrap();
        assert_eq!(sub.names(), ["shell_exec"]);
        assert!(matches!(
            all.subset(&["x"]),
            Err(ToolError::UnknownTools { .. })
        ));
    }
}
