//! The context a tool call runs in.

use std::path::{Path, PathBuf};

use oxydra_types::CallId;
use tokio_util::sync::CancellationToken;

#[cfg(feature = "builtins")]
use crate::error::ToolError;
#[cfg(feature = "builtins")]
use crate::workspace_policy::WorkspacePolicy;

/// What a tool knows about the call it is serving.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Root directory of the file tools; paths are resolved inside it.
    pub workspace_root: PathBuf,
    /// Fires when the call must stop (session cancelled or timed out).
    pub cancel: CancellationToken,
    /// The id of the call being served.
    pub call_id: CallId,
    /// The call's idempotency key, when the runtime stored an intent for it (a
    /// side-effecting or privileged call run with memory): stable for the call, so a
    /// run resumed after a crash that runs the same call again uses the same key. A
    /// tool passes it on where the other side can use it (an MCP server gets it in the
    /// request's `_meta` as `oxydra/idempotencyKey`).
    pub idempotency_key: Option<String>,
}

impl ToolContext {
    /// A context for call `call_id` in `workspace_root`.
    pub fn new(
        workspace_root: impl Into<PathBuf>,
        cancel: CancellationToken,
        call_id: CallId,
    ) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            cancel,
            call_id,
            idempotency_key: None,
        }
    }

    /// The same context carrying the call's idempotency key.
    #[must_use]
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The call's idempotency key (see [`ToolContext::idempotency_key`]'s field).
    pub fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// The workspace root.
    pub fn workspace_root(&self) -> &Path {
        &self.workspace_root
    }

    /// Resolves `path`, a path the model gave, inside the workspace: relative to the
    /// root, or absolute inside it; the file need not exist yet. `..`, absolute paths
    /// outside the root and symlinks that lead out are refused with
    /// [`ToolError::OutsideWorkspace`] (its message names the path and the workspace,
    /// so the model can correct the call). The check is the file tools' own
    /// ([`WorkspacePolicy::resolve`]); the returned path is absolute, with the symlinks
    /// of its existing part resolved. It does not check the protected paths
    /// ([`WriteAccess`](crate::WriteAccess)): a tool that writes where a person would
    /// not want it to asks for consent.
    ///
    /// (With the crate's `builtins` feature, on by default and in the facade.)
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] for a path leading out,
    /// [`ToolError::InvalidArguments`] for a path too long or holding a NUL byte, and
    /// [`ToolError::Io`] when the workspace root cannot be opened.
    #[cfg(feature = "builtins")]
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let policy = WorkspacePolicy::new(&self.workspace_root)?;
        Ok(policy.resolve(path)?.absolute)
    }
}

#[cfg(all(test, feature = "builtins"))]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn context(root: &Path) -> ToolContext {
        ToolContext::new(root, CancellationToken::new(), CallId::from("c1"))
    }

    #[test]
    fn resolve_keeps_a_models_path_inside_the_workspace() {
        let workspace = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(workspace.path().join("notes")).unwrap();
        symlink(outside.path(), workspace.path().join("out")).unwrap();
        let ctx = context(workspace.path());
        let root = workspace.path().canonicalize().unwrap();

        assert_eq!(
            ctx.resolve("notes/a.txt").unwrap(),
            root.join("notes/a.txt")
        );
        assert_eq!(ctx.resolve("new.txt").unwrap(), root.join("new.txt"));
        let inside = root.join("notes/b.txt");
        assert_eq!(ctx.resolve(inside.to_str().unwrap()).unwrap(), inside);

        for escape in [
            "../../etc/passwd",
            "notes/../../x",
            "/etc/passwd",
            "out/x",
            "out",
        ] {
            let error = ctx.resolve(escape).unwrap_err();
            assert!(
                matches!(error, ToolError::OutsideWorkspace { .. }),
                "{escape}: {error:?}"
            );
            // The model reads which path was refused and where it must stay.
            let message = error.to_string();
            assert!(message.contains(escape), "{message}");
            assert!(message.contains("outside the workspace"), "{message}");
        }
    }
}
