//! `[sandbox]` and `--sandbox`: the command sandbox `shell_exec` and deterministic
//! shell steps run in (docs/security.md, "The sandbox").
//!
//! `full-access` and `network = true` widen what a command may do, so they count only
//! from a trusted file or the flag; an untrusted file may narrow (`read-only`).

use oxydra::tools::{SandboxConfig, SandboxMode, SandboxSupport, sandbox_support};
use serde::{Deserialize, Serialize};

/// `[sandbox]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// `read-only`, `workspace-write` (default) or `full-access`.
    pub mode: Option<SandboxMode>,
    /// Whether commands may use the network (default `false`).
    pub network: Option<bool>,
}

/// The sandbox of a run: `--sandbox` wins over `[sandbox] mode`.
pub fn effective(section: &SandboxSection, flag: Option<SandboxMode>) -> SandboxConfig {
    SandboxConfig {
        mode: flag.or(section.mode).unwrap_or_default(),
        network: section.network.unwrap_or(false),
        read_only: Vec::new(),
    }
}

/// Says once, on stderr, when commands cannot run because the kernel cannot enforce
/// the sandbox (the tools refuse them unless the mode is `full-access`).
pub fn report_support(config: &SandboxConfig) {
    if config.mode == SandboxMode::FullAccess {
        return;
    }
    if let SandboxSupport::Unavailable { reason } = sandbox_support() {
        eprintln!(
            "warning: {reason}; shell_exec and shell steps are refused unless run with \
             --sandbox full-access"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_file_may_only_narrow_the_sandbox() {
        let strip = |section: SandboxSection| {
            let mut config = crate::config::FileConfig {
                sandbox: section,
                ..Default::default()
            };
            let ignored = crate::config::strip_powers(&mut config);
            (ignored, config.sandbox)
        };
        let (ignored, kept) = strip(SandboxSection {
            mode: Some(SandboxMode::FullAccess),
            network: Some(true),
        });
        assert_eq!(ignored.len(), 2, "{ignored:?}");
        assert!(
            ignored.iter().any(|key| key.contains("sandbox.mode")),
            "{ignored:?}"
        );
        assert!(
            ignored.iter().any(|key| key.contains("sandbox.network")),
            "{ignored:?}"
        );
        assert_eq!(kept, SandboxSection::default());
        let narrow = SandboxSection {
            mode: Some(SandboxMode::ReadOnly),
            network: Some(false),
        };
        let (ignored, kept) = strip(narrow.clone());
        assert!(ignored.is_empty(), "{ignored:?}");
        assert_eq!(effective(&kept, None).mode, SandboxMode::ReadOnly);
    }

    #[test]
    fn the_flag_wins_and_the_default_is_workspace_write_offline() {
        let section = SandboxSection::default();
        let config = effective(&section, None);
        assert_eq!(config.mode, SandboxMode::WorkspaceWrite);
        assert!(!config.network);
        let section = SandboxSection {
            mode: Some(SandboxMode::ReadOnly),
            network: Some(true),
        };
        let config = effective(&section, Some(SandboxMode::FullAccess));
        assert_eq!(config.mode, SandboxMode::FullAccess);
        assert!(config.network);
    }
}
