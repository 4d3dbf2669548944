//! What a standing grant of consent covers besides the tool: shared by the tools that
//! declare they need consent ([`Tool::consent`](crate::Tool::consent)), the executor's
//! consent brokers and rules, and the errors that report a refusal.

use serde::{Deserialize, Serialize};

/// What a standing grant covers, besides the tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionScope {
    /// Every call of the tool, in any session.
    Tool,
    /// Every call of the tool in the session that asked (the default).
    #[default]
    Session,
    /// Calls of the tool with exactly these arguments, in the session that asked.
    Arguments,
}

impl std::fmt::Display for PermissionScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Tool => "tool",
            Self::Session => "session",
            Self::Arguments => "arguments",
        })
    }
}
