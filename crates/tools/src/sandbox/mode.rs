//! The sandbox modes, named as codex names them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a confined command may write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Nothing but its private temporary directory.
    ReadOnly,
    /// The workspace (minus its read-only paths) and its private temporary directory.
    #[default]
    WorkspaceWrite,
    /// No sandbox at all: only from a trusted configuration or an explicit flag.
    FullAccess,
}

impl SandboxMode {
    /// Every mode, in order of increasing power.
    pub const ALL: [Self; 3] = [Self::ReadOnly, Self::WorkspaceWrite, Self::FullAccess];

    /// The mode's name (`read-only`, `workspace-write`, `full-access`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name given was not a sandbox mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSandboxMode(pub String);

impl fmt::Display for UnknownSandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown sandbox mode `{}` (expected read-only, workspace-write or full-access)",
            self.0
        )
    }
}

impl std::error::Error for UnknownSandboxMode {}

impl FromStr for SandboxMode {
    type Err = UnknownSandboxMode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .ok_or_else(|| UnknownSandboxMode(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_serde() {
        for mode in SandboxMode::ALL {
            assert_eq!(mode.as_str().parse::<SandboxMode>(), Ok(mode));
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, serde_json::json!(mode.as_str()));
        }
        let err = "danger".parse::<SandboxMode>().unwrap_err();
        assert!(err.to_string().contains("workspace-write"), "{err}");
    }
}
