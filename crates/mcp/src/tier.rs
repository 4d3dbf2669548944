//! From a server's config and a tool's annotations to a [`SafetyTier`].

use oxydra_types::SafetyTier;
use rmcp::model::ToolAnnotations;

use crate::config::McpServerConfig;

/// The tier of the server's tool `mcp_name`, in this order:
///
/// 1. `tool_tiers[mcp_name]` — the user's word for this tool wins;
/// 2. `destructiveHint: true` (on a tool not marked read-only) — `Privileged`, so
///    it runs alone and asks for consent, whatever the server tier;
/// 3. `readOnlyHint: true` — `ReadOnly`, unless the user set the server's `tier`
///    explicitly (annotations are hints from the server; they never lower a tier
///    the user chose);
/// 4. the server's `tier`, default `SideEffecting`.
///
/// ```
/// use oxydra_mcp::{McpServerConfig, tool_tier};
/// use oxydra_types::SafetyTier;
///
/// let config = McpServerConfig::stdio("s", "server", ["stdio"]);
/// assert_eq!(tool_tier(&config, "anything", None), SafetyTier::SideEffecting);
/// ```
pub fn tool_tier(
    config: &McpServerConfig,
    mcp_name: &str,
    annotations: Option<&ToolAnnotations>,
) -> SafetyTier {
    if let Some(tier) = config.tool_tiers.get(mcp_name) {
        return *tier;
    }
    let read_only = annotations.and_then(|a| a.read_only_hint) == Some(true);
    let destructive = annotations.and_then(|a| a.destructive_hint) == Some(true);
    if destructive && !read_only {
        return SafetyTier::Privileged;
    }
    if read_only && config.tier.is_none() {
        return SafetyTier::ReadOnly;
    }
    config.default_tier()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(read_only: Option<bool>, destructive: Option<bool>) -> ToolAnnotations {
        let mut annotations = ToolAnnotations::default();
        annotations.read_only_hint = read_only;
        annotations.destructive_hint = destructive;
        annotations
    }

    #[test]
    fn annotations_refine_the_default_tier() {
        let config = McpServerConfig::stdio("s", "c", ["a"]);
        let tier = |a: &ToolAnnotations| tool_tier(&config, "t", Some(a));
        assert_eq!(tier(&hints(Some(true), Some(false))), SafetyTier::ReadOnly);
        assert_eq!(tier(&hints(Some(true), Some(true))), SafetyTier::ReadOnly);
        assert_eq!(tier(&hints(None, Some(true))), SafetyTier::Privileged);
        assert_eq!(
            tier(&hints(Some(false), Some(true))),
            SafetyTier::Privileged
        );
        assert_eq!(
            tier(&hints(Some(false), Some(false))),
            SafetyTier::SideEffecting
        );
        assert_eq!(tier(&hints(None, None)), SafetyTier::SideEffecting);
    }

    #[test]
    fn user_choices_win_over_hints() {
        let mut config = McpServerConfig::stdio("s", "c", ["a"]);
        config.tier = Some(SafetyTier::Privileged);
        config
            .tool_tiers
            .insert("echo".into(), SafetyTier::ReadOnly);
        let read_only = hints(Some(true), None);
        assert_eq!(tool_tier(&config, "echo", None), SafetyTier::ReadOnly);
        assert_eq!(
            tool_tier(&config, "other", Some(&read_only)),
            SafetyTier::Privileged,
            "a hint never lowers an explicit server tier"
        );
        config.tier = Some(SafetyTier::ReadOnly);
        assert_eq!(
            tool_tier(&config, "rm", Some(&hints(None, Some(true)))),
            SafetyTier::Privileged,
            "a destructive hint raises any server tier"
        );
    }
}
