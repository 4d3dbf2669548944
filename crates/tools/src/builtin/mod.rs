//! The built-in tools (docs/tools.md) and what they share.

mod file_edit;
mod file_list;
mod file_media;
mod file_preview;
mod file_read;
mod file_search;
mod file_state;
mod file_write;
mod line_window;
mod shell_exec;
mod web_fetch;

use std::io;
use std::path::Path;
use std::sync::Arc;

pub use file_edit::{FileEdit, FileEditArgs};
pub use file_list::{FileList, FileListArgs};
pub use file_preview::PREVIEW_MAX_FILE_BYTES;
pub use file_read::{FileRead, FileReadArgs};
pub use file_search::{FileSearch, FileSearchArgs};
pub use file_write::{FileWrite, FileWriteArgs};
pub use shell_exec::{ShellExec, ShellExecArgs};
pub use web_fetch::{WebFetch, WebFetchArgs};

use crate::beneath::{self, WorkspaceDir};
use crate::config::BuiltinToolsConfig;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tool::Tool;
use crate::workspace_policy::WorkspacePolicy;

/// Names of the built-in tools, in name order.
pub const BUILTIN_TOOL_NAMES: [&str; 7] = [
    "file_edit",
    "file_list",
    "file_read",
    "file_search",
    "file_write",
    "shell_exec",
    "web_fetch",
];

/// The built-in tool called `name`, configured by `config`.
pub fn builtin_tool(name: &str, config: &BuiltinToolsConfig) -> Option<Arc<dyn Tool>> {
    let tool: Arc<dyn Tool> = match name {
        "file_read" => Arc::new(FileRead::new(config)),
        "file_list" => Arc::new(FileList::new(config)),
        "file_search" => Arc::new(FileSearch::new(config)),
        "file_write" => Arc::new(FileWrite::new(config)),
        "file_edit" => Arc::new(FileEdit::new(config)),
        "shell_exec" => Arc::new(ShellExec::new(config)),
        "web_fetch" => Arc::new(WebFetch::new(config)),
        _ => return None,
    };
    Some(tool)
}

/// Every built-in tool, configured by `config`, in name order.
pub fn builtin_tools(config: &BuiltinToolsConfig) -> Vec<Arc<dyn Tool>> {
    BUILTIN_TOOL_NAMES
        .iter()
        .filter_map(|name| builtin_tool(name, config))
        .collect()
}

/// The workspace of a call: the policy that resolves and checks the paths a model
/// gives, and the root held open, through which every file is then opened.
#[derive(Debug)]
struct Workspace {
    policy: WorkspacePolicy,
    dir: WorkspaceDir,
}

/// The workspace policy of the call's workspace.
fn policy(ctx: &ToolContext) -> Result<WorkspacePolicy, ToolError> {
    WorkspacePolicy::new(ctx.workspace_root())
}

/// The workspace of the call, its root held open.
fn open_workspace(ctx: &ToolContext) -> Result<Workspace, ToolError> {
    let policy = policy(ctx)?;
    let dir = WorkspaceDir::open(policy.root()).map_err(|source| ToolError::Io {
        action: "opening the workspace",
        path: policy.root().display().to_string(),
        source,
    })?;
    Ok(Workspace { policy, dir })
}

impl Workspace {
    /// The error for `source`, met `action` the path the model gave as `given`
    /// (resolved to `relative`): an open that would have left the workspace is
    /// [`ToolError::OutsideWorkspace`], like the check before it.
    fn error(
        &self,
        action: &'static str,
        given: &str,
        relative: &str,
        source: io::Error,
    ) -> ToolError {
        if beneath::is_escape(&source) {
            ToolError::OutsideWorkspace {
                path: given.to_owned(),
                workspace: self.policy.root().to_owned(),
            }
        } else {
            io_error(action, relative, source)
        }
    }

    /// `absolute` (a resolved path) relative to the root, as a path (empty for the
    /// root itself).
    fn below_root<'a>(&self, absolute: &'a Path) -> &'a Path {
        absolute
            .strip_prefix(self.policy.root())
            .unwrap_or(Path::new(""))
    }
}

/// An I/O error on `relative`, with a missing file reported as such.
fn io_error(action: &'static str, relative: &str, source: io::Error) -> ToolError {
    if source.kind() == io::ErrorKind::NotFound {
        ToolError::NotFound {
            path: relative.to_owned(),
        }
    } else {
        ToolError::Io {
            action,
            path: relative.to_owned(),
            source,
        }
    }
}

/// Bytes sniffed to tell text from binary.
const SNIFF_BYTES: usize = 8 * 1024;

/// Whether `head` (the start of a file) looks binary: it holds a NUL byte in its first
/// [`SNIFF_BYTES`]. (`memchr` looks at 32 bytes a step; a byte-by-byte `any` cost
/// ~11 instructions a byte of every file read.)
fn looks_binary(head: &[u8]) -> bool {
    memchr::memchr(0, head.get(..SNIFF_BYTES).unwrap_or(head)).is_some()
}

/// Run blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ToolError::Failed(format!("file task failed: {err}")))?
}

#[cfg(test)]
pub(crate) mod test_support {
    use tokio_util::sync::CancellationToken;

    use crate::context::ToolContext;

    /// A temporary workspace and a context for it.
    pub(crate) fn workspace() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path(), CancellationToken::new(), "call-test".into());
        (dir, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_tiers_and_required_match_the_design() {
        use oxydra_types::SafetyTier::*;
        let tools = builtin_tools(&BuiltinToolsConfig::default());
        let expected = [
            ("file_edit", SideEffecting, vec!["new", "old", "path"]),
            ("file_list", ReadOnly, vec![]),
            ("file_read", ReadOnly, vec!["path"]),
            ("file_search", ReadOnly, vec!["pattern"]),
            ("file_write", SideEffecting, vec!["content", "path"]),
            ("shell_exec", Privileged, vec!["command"]),
            ("web_fetch", ReadOnly, vec!["url"]),
        ];
        assert_eq!(tools.len(), expected.len());
        for (tool, (name, tier, required)) in tools.iter().zip(expected) {
            let schema = tool.schema();
            assert_eq!(schema.name, name);
            assert_eq!(tool.safety_tier(), tier, "{name}");
            let mut got: Vec<String> = schema.parameters["required"]
                .as_array()
                .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default();
            got.sort();
            assert_eq!(got, required, "{name}");
            assert_eq!(schema.parameters["type"], "object", "{name}");
            assert!(!schema.description.is_empty());
        }
        assert!(builtin_tool("nope", &BuiltinToolsConfig::default()).is_none());
    }

    #[test]
    fn each_tool_names_where_its_output_comes_from() {
        use oxydra_types::Source;
        let config = BuiltinToolsConfig::default();
        let source = |name: &str, args: serde_json::Value| {
            builtin_tool(name, &config).unwrap().output_source(&args)
        };
        assert_eq!(
            source(
                "web_fetch",
                serde_json::json!({"url": " https://x.test/a "})
            ),
            Some(Source::Web("https://x.test/a".into()))
        );
        for (name, args) in [
            ("file_read", serde_json::json!({"path": "README.md"})),
            ("file_list", serde_json::json!({})),
            ("file_search", serde_json::json!({"pattern": "x"})),
        ] {
            assert_eq!(source(name, args), Some(Source::Workspace), "{name}");
        }
        assert_eq!(
            source("shell_exec", serde_json::json!({"command": "ls"})),
            Some(Source::Command)
        );
        for (name, args) in [
            (
                "file_write",
                serde_json::json!({"path": "a", "content": "b"}),
            ),
            (
                "file_edit",
                serde_json::json!({"path": "a", "old": "c", "new": "d"}),
            ),
        ] {
            assert_eq!(source(name, args), None, "{name}");
        }
        // Arguments that do not parse name no source (the call fails anyway).
        assert_eq!(source("web_fetch", serde_json::json!({"url": 3})), None);
    }

    #[tokio::test]
    async fn read_only_mode_refuses_every_tool_that_writes_and_changes_nothing() {
        use crate::sandbox::{SandboxConfig, SandboxMode};
        let (dir, ctx) = test_support::workspace();
        std::fs::write(dir.path().join("notes.txt"), "keep me").unwrap();
        let config = BuiltinToolsConfig {
            sandbox: SandboxConfig {
                mode: SandboxMode::ReadOnly,
                ..SandboxConfig::default()
            },
            ..BuiltinToolsConfig::default()
        };
        let calls = [
            (
                "file_write",
                serde_json::json!({"path": "notes.txt", "content": "x"}),
            ),
            (
                "file_write",
                serde_json::json!({"path": "new/file.txt", "content": "x"}),
            ),
            (
                "file_edit",
                serde_json::json!({"path": "notes.txt", "old": "keep", "new": "lost"}),
            ),
        ];
        for (name, args) in calls {
            let err = builtin_tool(name, &config)
                .unwrap()
                .execute(args.clone(), &ctx)
                .await
                .unwrap_err();
            assert!(
                matches!(err, ToolError::ReadOnlySandbox { .. }),
                "{name} {args}: {err}"
            );
            let message = err.to_string();
            assert!(message.contains("`--sandbox read-only`"), "{message}");
            assert!(message.contains(name), "{message}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
            "keep me"
        );
        assert!(!dir.path().join("new").exists());
        // Reading stays allowed.
        let out = builtin_tool("file_read", &config)
            .unwrap()
            .execute(serde_json::json!({"path": "notes.txt"}), &ctx)
            .await
            .unwrap();
        assert!(out.content.contains("keep me"), "{}", out.content);
    }

    #[test]
    fn parameter_types_match_the_design() {
        let config = BuiltinToolsConfig::default();
        let props = |name: &str| {
            builtin_tool(name, &config).unwrap().schema().parameters["properties"].clone()
        };
        let ty = |v: &serde_json::Value| v["type"].clone();
        let read = props("file_read");
        assert_eq!(ty(&read["path"]), "string");
        assert_eq!(ty(&read["offset"]), serde_json::json!(["integer", "null"]));
        assert_eq!(ty(&read["limit"]), serde_json::json!(["integer", "null"]));
        let list = props("file_list");
        assert_eq!(ty(&list["path"]), "string");
        assert_eq!(list["path"]["default"], ".");
        assert_eq!(ty(&list["recursive"]), "boolean");
        assert_eq!(
            ty(&props("shell_exec")["timeout_secs"]),
            serde_json::json!(["integer", "null"])
        );
        assert_eq!(ty(&props("web_fetch")["url"]), "string");
        assert_eq!(
            ty(&props("file_search")["path"]),
            serde_json::json!(["string", "null"])
        );
    }
}
