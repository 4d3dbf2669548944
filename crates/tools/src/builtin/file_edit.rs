//! `file_edit`: replace one exact occurrence of a text in a file.

use std::io::{self, Read, Seek, SeekFrom, Write};

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

/// Arguments of `file_edit`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileEditArgs {
    /// Path of the file, relative to the workspace root.
    pub path: String,
    /// The exact text to replace; it must occur exactly once in the file.
    pub old: String,
    /// The text to put in its place.
    pub new: String,
}

/// Edits a file in the workspace by exact replacement (SideEffecting).
#[derive(Debug, Clone)]
pub struct FileEdit {
    output_limit: usize,
    access: WriteAccess,
}

impl FileEdit {
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
impl TypedTool for FileEdit {
    type Args = FileEditArgs;
    const NAME: &'static str = "file_edit";
    const TIER: SafetyTier = SafetyTier::SideEffecting;

    fn description(&self) -> String {
        "Edit a file in the workspace: replace the text `old`, which must occur exactly \
         once in the file (include enough surrounding lines to make it unique), with `new`."
            .to_owned()
    }

    fn output_limit(&self) -> Option<usize> {
        Some(self.output_limit)
    }

    /// The diff from the file's current text to the edited one (see `file_preview`).
    fn preview_args(
        &self,
        args: &FileEditArgs,
        workspace_root: &std::path::Path,
    ) -> Option<CallPreview> {
        Some(super::file_preview::file_edit(
            workspace_root,
            &args.path,
            &args.old,
            &args.new,
        ))
    }

    /// The file's content hash, and the hash of the edited text when the edit applies.
    fn state_before_args(
        &self,
        args: &FileEditArgs,
        workspace_root: &std::path::Path,
    ) -> Option<String> {
        super::file_state::edit_before(workspace_root, &args.path, &args.old, &args.new)
    }

    /// Done when the file holds the edited text; safe when it is as it was before.
    fn rerun_after_crash_args(
        &self,
        args: &FileEditArgs,
        workspace_root: &std::path::Path,
        before: Option<&str>,
    ) -> crate::rerun::RerunSafety {
        super::file_state::edit_rerun(workspace_root, &args.path, before)
    }

    async fn run(&self, args: FileEditArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if args.old.is_empty() {
            return Err(ToolError::InvalidArguments {
                message: "`file_edit`: `old` must not be empty".to_owned(),
            });
        }
        let ws = open_workspace(ctx)?;
        let resolved = ws.policy.resolve(&args.path)?;
        self.access
            .authorize(Self::NAME, ws.policy.root(), &args.path, &resolved, || {
                super::file_preview::file_edit(ws.policy.root(), &args.path, &args.old, &args.new)
            })
            .await?;
        let message = blocking(move || {
            let rel = resolved.relative;
            // One handle for the read and the write: the file edited is the file read.
            let mut file = match ws.dir.open_read_write(&resolved.absolute) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
                    return Err(ToolError::Failed(format!(
                        "`{rel}` is a directory, not a file"
                    )));
                }
                Err(e) => return Err(ws.error("opening", &args.path, &rel, e)),
            };
            let meta = file.metadata().map_err(|e| io_error("reading", &rel, e))?;
            if !meta.is_file() {
                return Err(ToolError::Failed(format!(
                    "`{rel}` is not a regular file (a FIFO, socket or device); it cannot be edited"
                )));
            }
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)
                .map_err(|e| io_error("reading", &rel, e))?;
            let text = String::from_utf8(bytes).map_err(|_| {
                ToolError::Failed(format!("`{rel}` is not UTF-8 text; it cannot be edited"))
            })?;
            let count = text.matches(args.old.as_str()).count();
            let at = match (count, text.find(args.old.as_str())) {
                (1, Some(at)) => at,
                (0, _) => {
                    return Err(ToolError::Failed(format!(
                        "`old` occurs 0 times in `{rel}`; it must match the file's text exactly \
                         (whitespace included) — read the file again"
                    )));
                }
                (n, _) => {
                    return Err(ToolError::Failed(format!(
                        "`old` occurs {n} times in `{rel}`; it must occur exactly once — \
                         include more surrounding text"
                    )));
                }
            };
            let line = text.get(..at).map_or(0, |head| head.matches('\n').count()) + 1;
            let edited = text.replacen(args.old.as_str(), &args.new, 1);
            file.set_len(0)
                .and_then(|()| file.seek(SeekFrom::Start(0)))
                .and_then(|_| file.write_all(edited.as_bytes()))
                .map_err(|e| io_error("writing", &rel, e))?;
            Ok(format!(
                "Edited `{rel}`: replaced {} bytes at line {line} with {} bytes",
                args.old.len(),
                args.new.len()
            ))
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

    fn tool() -> FileEdit {
        FileEdit::new(&BuiltinToolsConfig::default())
    }

    #[tokio::test]
    async fn replaces_exactly_one_occurrence() {
        let (dir, ctx) = workspace();
        let file = dir.path().join("a.rs");
        std::fs::write(&file, "fn a() {}\nfn b() {}\n").unwrap();
        let out = tool()
            .execute(
                json!({"path": "a.rs", "old": "fn b() {}", "new": "fn c() {}"}),
                &ctx,
            )
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "Edited `a.rs`: replaced 9 bytes at line 2 with 9 bytes"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "fn a() {}\nfn c() {}\n"
        );
    }

    #[tokio::test]
    async fn zero_or_many_occurrences_say_how_many() {
        let (dir, ctx) = workspace();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "x x x").unwrap();
        let err = tool()
            .execute(json!({"path": "a.txt", "old": "x", "new": "y"}), &ctx)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("`old` occurs 3 times in `a.txt`"),
            "{err}"
        );
        let err = tool()
            .execute(json!({"path": "a.txt", "old": "z", "new": "y"}), &ctx)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("`old` occurs 0 times in `a.txt`"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "x x x");
    }

    #[tokio::test]
    async fn bad_input_is_a_clear_error() {
        let (dir, ctx) = workspace();
        std::fs::write(dir.path().join("bin"), b"\xff\xfe").unwrap();
        let err = tool()
            .execute(json!({"path": "a.txt", "old": "", "new": "y"}), &ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("must not be empty"));
        let err = tool()
            .execute(json!({"path": "missing.txt", "old": "a", "new": "y"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`missing.txt` does not exist in the workspace"
        );
        let err = tool()
            .execute(json!({"path": "bin", "old": "a", "new": "y"}), &ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not UTF-8"));
        let err = tool()
            .execute(json!({"path": "../a", "old": "a", "new": "y"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }));
    }
}
