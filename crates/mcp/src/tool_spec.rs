//! What a server's `tools/list` answer becomes: the exposed tools (after
//! `allow_tools` / `deny_tools`), each with its registry name (`<server>__<tool>`), its
//! schema and its tier. The server keeps these; each becomes an `McpTool`.

use std::collections::HashSet;

use oxydra_types::SafetyTier;

use crate::config::McpServerConfig;
use crate::tier::tool_tier;

/// Longest tool name providers accept (OpenAI: 64).
const MAX_TOOL_NAME_LEN: usize = 64;

/// A server tool as the registry sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    pub(crate) registry_name: String,
    pub(crate) mcp_name: String,
    pub(crate) description: String,
    pub(crate) parameters: serde_json::Value,
    pub(crate) tier: SafetyTier,
}

/// `<server>__<tool>`, with characters providers refuse replaced by `_` and the
/// whole cut to 64 bytes.
pub fn registry_name(server: &str, mcp_name: &str) -> String {
    let mut name: String = format!("{server}__{mcp_name}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(MAX_TOOL_NAME_LEN);
    name
}

/// The exposed tools of a server's `tools/list` answer, in its order.
pub(crate) fn tool_specs(config: &McpServerConfig, tools: &[rmcp::model::Tool]) -> Vec<ToolSpec> {
    let mut seen = HashSet::new();
    let mut specs = Vec::new();
    for tool in tools {
        let mcp_name = tool.name.to_string();
        if !config.exposes(&mcp_name) {
            continue;
        }
        let name = registry_name(&config.name, &mcp_name);
        if !seen.insert(name.clone()) {
            tracing::warn!(server = %config.name, tool = %mcp_name, "two MCP tools map to `{name}`; the second is skipped");
            continue;
        }
        let description = tool
            .description
            .as_deref()
            .map(str::to_owned)
            .or_else(|| tool.title.clone())
            .unwrap_or_default();
        specs.push(ToolSpec {
            registry_name: name,
            tier: tool_tier(config, &mcp_name, tool.annotations.as_ref()),
            mcp_name,
            description,
            parameters: serde_json::Value::Object((*tool.input_schema).clone()),
        });
    }
    for wanted in config.allow_tools.iter().flatten() {
        if !tools.iter().any(|t| t.name == wanted.as_str()) {
            tracing::warn!(server = %config.name, "allow_tools names `{wanted}`, which the server does not offer");
        }
    }
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_provider_safe() {
        assert_eq!(registry_name("fs", "read_file"), "fs__read_file");
        assert_eq!(registry_name("e", "get-sum"), "e__get-sum");
        assert_eq!(registry_name("e", "a.b/c d"), "e__a_b_c_d");
        assert_eq!(registry_name("e", &"n".repeat(100)).len(), 64);
    }

    #[test]
    fn specs_filter_name_and_tier_tools() {
        let tools: Vec<rmcp::model::Tool> = serde_json::from_value(serde_json::json!([
            {"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
            {"name": "rm", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}},
            {"name": "hidden", "title": "Hidden", "inputSchema": {"type": "object"}}
        ]))
        .unwrap();
        let mut config = McpServerConfig::stdio("srv", "c", ["a"]);
        config.deny_tools = vec!["hidden".into()];
        let specs = tool_specs(&config, &tools);
        let names: Vec<_> = specs.iter().map(|s| s.registry_name.as_str()).collect();
        assert_eq!(names, ["srv__echo", "srv__rm"]);
        assert_eq!(specs[0].tier, SafetyTier::ReadOnly);
        assert_eq!(specs[0].description, "Echo");
        assert_eq!(specs[1].tier, SafetyTier::Privileged);
        assert_eq!(specs[1].parameters, serde_json::json!({"type": "object"}));
    }
}
