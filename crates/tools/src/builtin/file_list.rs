//! `file_list`: the entries of a directory, optionally recursive.

use std::fs::File;
use std::path::Path;

use async_trait::async_trait;
use oxydra_types::{SafetyTier, Source};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{blocking, io_error, open_workspace};
use crate::beneath::{self, EntryKind};
use crate::config::BuiltinToolsConfig;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tool::ToolOutput;
use crate::typed_tool::TypedTool;

/// Entries listed at most; a longer listing ends with a note.
const MAX_ENTRIES: usize = 2000;

/// Arguments of `file_list`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileListArgs {
    /// Directory to list, relative to the workspace root.
    #[serde(default = "dot")]
    pub path: String,
    /// Whether to list subdirectories too (default false).
    #[serde(default)]
    pub recursive: bool,
}

fn dot() -> String {
    ".".to_owned()
}

/// Lists a directory of the workspace (ReadOnly).
#[derive(Debug, Clone)]
pub struct FileList {
    output_limit: usize,
}

impl FileList {
    /// The tool, with the output limit of `config`.
    pub fn new(config: &BuiltinToolsConfig) -> Self {
        Self {
            output_limit: config.output_limit_bytes,
        }
    }
}

#[async_trait]
impl TypedTool for FileList {
    type Args = FileListArgs;
    const NAME: &'static str = "file_list";
    const TIER: SafetyTier = SafetyTier::ReadOnly;

    /// What the tool returns comes from the workspace.
    fn output_source_args(&self, _args: &FileListArgs) -> Option<Source> {
        Some(Source::Workspace)
    }

    fn description(&self) -> String {
        "List the files and directories at a path in the workspace (default: the root), \
         one per line, directories ending in `/`, symlinks in `@`. Set recursive to \
         include subdirectories."
            .to_owned()
    }

    fn output_limit(&self) -> Option<usize> {
        Some(self.output_limit)
    }

    async fn run(&self, args: FileListArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let ws = open_workspace(ctx)?;
        let resolved = ws.policy.resolve(&args.path)?;
        let cancel = ctx.cancel.clone();
        let listing = blocking(move || {
            let rel = &resolved.relative;
            let dir = ws
                .dir
                .open_read(&resolved.absolute)
                .map_err(|e| ws.error("listing", &args.path, rel, e))?;
            let meta = dir.metadata().map_err(|e| io_error("listing", rel, e))?;
            if !meta.is_dir() {
                return Err(ToolError::Failed(format!(
                    "`{rel}` is a file, not a directory; use file_read to read it"
                )));
            }
            let mut lines = Vec::new();
            let base = ws.below_root(&resolved.absolute);
            let complete = walk(&dir, base, args.recursive, &cancel, &mut lines)?;
            if lines.is_empty() {
                return Ok(format!("(`{rel}` is empty)"));
            }
            let mut out = lines.join("\n");
            if !complete {
                out.push_str(&format!("\n[stopped after {MAX_ENTRIES} entries]"));
            }
            Ok(out)
        })
        .await?;
        Ok(ToolOutput::text(listing))
    }
}

/// Push the entries of `dir` (open at `base`, relative to the root; sorted, depth
/// first) onto `lines`; `false` when the entry cap stopped the walk. Each child is
/// opened from its parent's handle; symlinks are listed, never followed.
fn walk(
    dir: &File,
    base: &Path,
    recursive: bool,
    cancel: &CancellationToken,
    lines: &mut Vec<String>,
) -> Result<bool, ToolError> {
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let entries = beneath::entries(dir).map_err(|e| {
        let shown = if base.as_os_str().is_empty() {
            ".".to_owned()
        } else {
            base.display().to_string()
        };
        io_error("listing", &shown, e)
    })?;
    for (name, kind) in entries {
        if lines.len() >= MAX_ENTRIES {
            return Ok(false);
        }
        let path = base.join(&name);
        let rel = path.display().to_string();
        match kind {
            EntryKind::Symlink => lines.push(format!("{rel}@")),
            EntryKind::Dir => {
                lines.push(format!("{rel}/"));
                if !recursive {
                    continue;
                }
                // Gone or swapped for a symlink since it was listed: nothing to descend.
                let Ok(child) = beneath::open_child_dir(dir, &name) else {
                    continue;
                };
                if !walk(&child, &path, recursive, cancel, lines)? {
                    return Ok(false);
                }
            }
            EntryKind::File | EntryKind::Other => lines.push(rel),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::workspace;
    use super::*;
    use crate::tool::Tool;

    fn tool() -> FileList {
        FileList::new(&BuiltinToolsConfig::default())
    }

    #[tokio::test]
    async fn lists_flat_and_recursive() {
        let (dir, ctx) = workspace();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("b.txt"), "").unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/deep/x.rs"), "").unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc-link")).unwrap();
        let out = tool().execute(json!({}), &ctx).await.unwrap();
        assert_eq!(out.content, "b.txt\netc-link@\nsrc/");
        let out = tool()
            .execute(json!({"recursive": true}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "b.txt\netc-link@\nsrc/\nsrc/deep/\nsrc/deep/x.rs\nsrc/lib.rs"
        );
        let out = tool().execute(json!({"path": "src"}), &ctx).await.unwrap();
        assert_eq!(out.content, "src/deep/\nsrc/lib.rs");
    }

    #[tokio::test]
    async fn bad_paths_are_clear_errors() {
        let (dir, ctx) = workspace();
        std::fs::write(dir.path().join("f.txt"), "").unwrap();
        std::fs::create_dir(dir.path().join("empty")).unwrap();
        let err = tool()
            .execute(json!({"path": "nope"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "`nope` does not exist in the workspace");
        let err = tool()
            .execute(json!({"path": "f.txt"}), &ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("is a file, not a directory"));
        let err = tool()
            .execute(json!({"path": ".."}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }));
        let out = tool()
            .execute(json!({"path": "empty"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "(`empty` is empty)");
        let err = tool()
            .execute(json!({"recursive": "yes"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }));
    }

    #[tokio::test]
    async fn symlinked_dir_outside_is_refused() {
        let (dir, ctx) = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let err = tool()
            .execute(json!({"path": "out"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
    }

    #[tokio::test]
    async fn cancelled_walk_stops() {
        let (dir, ctx) = workspace();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        ctx.cancel.cancel();
        let err = tool()
            .execute(json!({"recursive": true}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Cancelled));
    }
}
