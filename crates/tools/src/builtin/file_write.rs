//! `file_write`: create or overwrite a file, with its parent directories.

use std::io::{self, Write};

use async_trait::async_trait;
use oxydra_types::SafetyTier;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, io_error, open_workspace};
use crate::call_preview::CallPreview;
use crate::config::BuiltinToolsConfig;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tool::ToolOutput;
use crate::typed_tool::TypedTool;
use crate::write_access::WriteAccess;

/// Arguments of `file_write`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileWriteArgs {
    /// Path of the file, relative to the workspace root; missing directories are created.
    pub path: String,
    /// The whole new content of the file.
    pub content: String,
}

/// Writes a file in the workspace (SideEffecting).
#[derive(Debug, Clone)]
pub struct FileWrite {
    output_limit: usize,
    access: WriteAccess,
}

impl FileWrite {
    /// The tool, with the output limit and write access (sandbox mode, protected
    /// paths) of `config`.
    pub fn new(config: &BuiltinToolsConfig) -> Self {
        Self {
            output_limit: config.output_limit_bytes,
            access: config.write_access(),
        }
    }
}

#[async_trait]
impl TypedTool for FileWrite {
    type Args = FileWriteArgs;
    const NAME: &'static str = "file_write";
    const TIER: SafetyTier = SafetyTier::SideEffecting;

    fn description(&self) -> String {
        "Write a file in the workspace, replacing it if it exists and creating missing \
         parent directories."
            .to_owned()
    }

    fn output_limit(&self) -> Option<usize> {
        Some(self.output_limit)
    }

    /// The diff from the file's current text (see `file_preview`).
    fn preview_args(
        &self,
        args: &FileWriteArgs,
        workspace_root: &std::path::Path,
    ) -> Option<CallPreview> {
        Some(super::file_preview::file_write(
            workspace_root,
            &args.path,
            &args.content,
        ))
    }

    /// The file's content hash (or `absent`).
    fn state_before_args(
        &self,
        args: &FileWriteArgs,
        workspace_root: &std::path::Path,
    ) -> Option<String> {
        super::file_state::write_before(workspace_root, &args.path)
    }

    /// Done when the file holds `content`; safe when it is as it was before the call.
    fn rerun_after_crash_args(
        &self,
        args: &FileWriteArgs,
        workspace_root: &std::path::Path,
        before: Option<&str>,
    ) -> crate::rerun::RerunSafety {
        super::file_state::write_rerun(workspace_root, &args.path, &args.content, before)
    }

    async fn run(&self, args: FileWriteArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let ws = open_workspace(ctx)?;
        let resolved = ws.policy.resolve(&args.path)?;
        self.access
            .authorize(Self::NAME, ws.policy.root(), &args.path, &resolved, || {
                super::file_preview::file_write(ws.policy.root(), &args.path, &args.content)
            })
            .await?;
        let message = blocking(move || {
            let rel = resolved.relative;
            let (mut file, existed) = match ws.dir.create(&resolved.absolute) {
                Ok(created) => created,
                Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
                    return Err(ToolError::Failed(format!(
                        "`{rel}` is a directory, not a file"
                    )));
                }
                Err(e) => return Err(ws.error("writing", &args.path, &rel, e)),
            };
            let meta = file.metadata().map_err(|e| io_error("writing", &rel, e))?;
            if !meta.is_file() {
                return Err(ToolError::Failed(format!(
                    "`{rel}` is not a regular file (a FIFO, socket or device); it was not written"
                )));
            }
            file.write_all(args.content.as_bytes())
                .map_err(|e| io_error("writing", &rel, e))?;
            let verb = if existed { "Overwrote" } else { "Created" };
            Ok(format!("{verb} `{rel}` ({} bytes)", args.content.len()))
        })
        .await?;
        Ok(ToolOutput::text(message))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::workspace;
    use super::*;
    use crate::tool::Tool;

    fn tool() -> FileWrite {
        FileWrite::new(&BuiltinToolsConfig::default())
    }

    #[tokio::test]
    async fn writes_and_creates_parents() {
        let (dir, ctx) = workspace();
        let out = tool()
            .execute(json!({"path": "a/b/c.txt", "content": "hello"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "Created `a/b/c.txt` (5 bytes)");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "hello"
        );
        let out = tool()
            .execute(json!({"path": "a/b/c.txt", "content": ""}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "Overwrote `a/b/c.txt` (0 bytes)");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            ""
        );
    }

    #[tokio::test]
    async fn refuses_escapes_and_directories() {
        let (dir, ctx) = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("new.txt"), dir.path().join("dangling"))
            .unwrap();
        for path in [
            "../x.txt",
            "out/x.txt",
            "out/deep/x.txt",
            "dangling",
            "/tmp/oxydra-x.txt",
        ] {
            let err = tool()
                .execute(json!({"path": path, "content": "x"}), &ctx)
                .await
                .unwrap_err();
            assert!(
                matches!(err, ToolError::OutsideWorkspace { .. }),
                "{path}: {err}"
            );
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let err = tool()
            .execute(json!({"path": "d", "content": "x"}), &ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("is a directory"));
        let err = tool()
            .execute(json!({"path": "x"}), &ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("missing field `content`"));
    }
}
