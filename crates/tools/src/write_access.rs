//! The one check a built-in tool makes before it changes anything in the workspace:
//! the sandbox mode first (`read-only` refuses every write, as it refuses every
//! command's), then the protected paths. `shell_exec`, shell steps and hooks obey the
//! same mode through the OS sandbox ([`crate::SandboxConfig::confine`]); the file tools
//! obey it here, so one `--sandbox` flag binds every tool.
//!
//! ```
//! use oxydra_tools::{SandboxMode, ToolError, refuse_read_only};
//!
//! assert!(refuse_read_only(SandboxMode::WorkspaceWrite, "file_write").is_ok());
//! let err = refuse_read_only(SandboxMode::ReadOnly, "file_write").unwrap_err();
//! assert!(matches!(err, ToolError::ReadOnlySandbox { .. }));
//! assert!(err.to_string().contains("`--sandbox read-only`"));
//! ```

use std::path::Path;

use crate::call_preview::CallPreview;
use crate::error::ToolError;
use crate::protected::ProtectedPaths;
use crate::sandbox::SandboxMode;
use crate::workspace_policy::ResolvedPath;

/// Refuses a change to the workspace by `tool` when the sandbox mode is `read-only`
/// ([`ToolError::ReadOnlySandbox`], a message that names the mode); every other mode
/// lets the call go on to its path checks.
pub fn refuse_read_only(mode: SandboxMode, tool: &str) -> Result<(), ToolError> {
    match mode {
        SandboxMode::ReadOnly => Err(ToolError::ReadOnlySandbox {
            tool: tool.to_owned(),
            mode: mode.as_str(),
        }),
        SandboxMode::WorkspaceWrite | SandboxMode::FullAccess => Ok(()),
    }
}

/// What a built-in tool that writes may change: the run's sandbox mode and its
/// protected-paths policy. Built by [`crate::BuiltinToolsConfig::write_access`].
#[derive(Debug, Clone, Default)]
pub struct WriteAccess {
    mode: SandboxMode,
    protected: ProtectedPaths,
}

impl WriteAccess {
    /// Writes allowed by `mode`, except where `protected` refuses them.
    pub fn new(mode: SandboxMode, protected: ProtectedPaths) -> Self {
        Self { mode, protected }
    }

    /// The sandbox mode the writes obey.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Decides whether `tool` may write `resolved` (named `given` by the call) in the
    /// workspace `root`: refused in `read-only` mode before any path is looked at
    /// ([`refuse_read_only`]), then as [`ProtectedPaths::authorize_write`] decides
    /// (`preview` is what a person asked about a protected path is shown).
    pub async fn authorize(
        &self,
        tool: &str,
        root: &Path,
        given: &str,
        resolved: &ResolvedPath,
        preview: impl FnOnce() -> CallPreview + Send,
    ) -> Result<(), ToolError> {
        refuse_read_only(self.mode, tool)?;
        self.protected
            .authorize_write(tool, root, given, resolved, preview)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace_policy::WorkspacePolicy;

    fn no_preview() -> CallPreview {
        CallPreview::arguments(&serde_json::Value::Null)
    }

    #[tokio::test]
    async fn read_only_refuses_every_path_and_names_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let policy = WorkspacePolicy::new(dir.path()).unwrap();
        let resolved = policy.resolve("notes.txt").unwrap();
        let access = WriteAccess::new(SandboxMode::ReadOnly, ProtectedPaths::default());
        let err = access
            .authorize(
                "file_edit",
                policy.root(),
                "notes.txt",
                &resolved,
                no_preview,
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "refused: the sandbox is read-only (`--sandbox read-only`); nothing in the \
             workspace may be changed, so `file_edit` did not run"
        );
        for mode in [SandboxMode::WorkspaceWrite, SandboxMode::FullAccess] {
            let access = WriteAccess::new(mode, ProtectedPaths::default());
            access
                .authorize(
                    "file_edit",
                    policy.root(),
                    "notes.txt",
                    &resolved,
                    no_preview,
                )
                .await
                .unwrap();
            assert_eq!(access.mode(), mode);
        }
    }

    #[tokio::test]
    async fn the_protected_paths_still_apply_in_the_other_modes() {
        let dir = tempfile::tempdir().unwrap();
        let policy = WorkspacePolicy::new(dir.path()).unwrap();
        let resolved = policy.resolve(".git/config").unwrap();
        let access = WriteAccess::new(SandboxMode::FullAccess, ProtectedPaths::default());
        let err = access
            .authorize(
                "file_write",
                policy.root(),
                ".git/config",
                &resolved,
                no_preview,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Protected { .. }), "{err}");
    }
}
