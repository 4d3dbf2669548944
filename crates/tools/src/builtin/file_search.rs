//! `file_search`: lines matching a regex, as `file:line: text`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use oxydra_types::{SafetyTier, Source};
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{blocking, looks_binary, open_workspace};
use crate::beneath::{self, EntryKind};
use crate::config::BuiltinToolsConfig;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::protected::ProtectedPaths;
use crate::tool::ToolOutput;
use crate::typed_tool::TypedTool;

/// Files larger than this are skipped.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// A matching line longer than this is shortened.
const MAX_LINE_CHARS: usize = 300;
/// Directories never searched.
const SKIPPED_DIRS: &[&str] = &[".git"];

/// Arguments of `file_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileSearchArgs {
    /// Regular expression (Rust `regex` syntax) to look for in each line.
    pub pattern: String,
    /// File or directory to search, relative to the workspace root (default: all of it).
    pub path: Option<String>,
}

/// Searches text files of the workspace for a regex (ReadOnly).
#[derive(Debug, Clone)]
pub struct FileSearch {
    output_limit: usize,
    max_results: usize,
    protected: ProtectedPaths,
}

impl FileSearch {
    /// The tool, with the limits of `config`.
    pub fn new(config: &BuiltinToolsConfig) -> Self {
        Self {
            output_limit: config.output_limit_bytes,
            max_results: config.file_search.max_results.max(1),
            protected: config.protected.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for FileSearch {
    type Args = FileSearchArgs;
    const NAME: &'static str = "file_search";
    const TIER: SafetyTier = SafetyTier::ReadOnly;

    /// What the tool returns comes from the workspace.
    fn output_source_args(&self, _args: &FileSearchArgs) -> Option<Source> {
        Some(Source::Workspace)
    }

    fn description(&self) -> String {
        "Search the text files under a path of the workspace (default: all of it) for \
         lines matching a regular expression. Prints `file:line: text` per match; \
         binary files and .git are skipped."
            .to_owned()
    }

    fn output_limit(&self) -> Option<usize> {
        Some(self.output_limit)
    }

    async fn run(&self, args: FileSearchArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let regex = Regex::new(&args.pattern).map_err(|err| ToolError::InvalidArguments {
            message: format!("`file_search`: invalid regex `{}`: {err}", args.pattern),
        })?;
        let ws = open_workspace(ctx)?;
        let given = args.path.unwrap_or_else(|| ".".to_owned());
        let resolved = ws.policy.resolve(&given)?;
        self.protected
            .check_read(&resolved.absolute, &resolved.relative)?;
        let protected = self.protected.clone();
        let root = ws.policy.root().to_path_buf();
        let cancel = ctx.cancel.clone();
        let max_results = self.max_results;
        let text = blocking(move || {
            let rel = &resolved.relative;
            let start = ws
                .dir
                .open_read(&resolved.absolute)
                .map_err(|e| ws.error("searching", &given, rel, e))?;
            let mut search = Search {
                regex,
                cancel,
                max_results,
                protected,
                root,
                matches: Vec::new(),
            };
            let complete = search.start(start, ws.below_root(&resolved.absolute))?;
            if search.matches.is_empty() {
                return Ok(format!("no matches for `{}` in `{rel}`", args.pattern));
            }
            let mut out = search.matches.join("\n");
            if !complete {
                out.push_str(&format!(
                    "\n[stopped after {max_results} matches; narrow the pattern or path]"
                ));
            }
            Ok(out)
        })
        .await?;
        Ok(ToolOutput::text(text))
    }
}

struct Search {
    regex: Regex,
    cancel: CancellationToken,
    max_results: usize,
    /// Files that may not be read: skipped.
    protected: ProtectedPaths,
    /// The workspace root, which the relative paths of the walk are below.
    root: PathBuf,
    matches: Vec<String>,
}

impl Search {
    /// Search what `start` (open at `rel`, relative to the root) is: a directory
    /// or a file. `false` once the result cap is reached.
    fn start(&mut self, start: File, rel: &Path) -> Result<bool, ToolError> {
        match start.metadata() {
            Ok(meta) if meta.is_dir() => self.dir(&start, rel),
            Ok(meta) if meta.is_file() => Ok(self.file(&start, rel)),
            _ => Ok(true),
        }
    }

    /// Search the directory `dir` (open at `base`), each child opened from its
    /// handle; symlinks are never followed (they may lead outside).
    fn dir(&mut self, dir: &File, base: &Path) -> Result<bool, ToolError> {
        if self.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Ok(entries) = beneath::entries(dir) else {
            return Ok(true);
        };
        for (name, kind) in entries {
            if self.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            if name.to_str().is_some_and(|n| SKIPPED_DIRS.contains(&n)) {
                continue;
            }
            let path = base.join(&name);
            // An entry gone or swapped for a symlink since it was listed fails to
            // open, and is skipped.
            let more = match kind {
                EntryKind::Dir => match beneath::open_child_dir(dir, &name) {
                    Ok(child) => self.dir(&child, &path)?,
                    Err(_) => true,
                },
                EntryKind::File if self.protected.refuses_read(&self.root.join(&path)) => true,
                EntryKind::File => match beneath::open_child_file(dir, &name) {
                    Ok(file) => self.file(&file, &path),
                    Err(_) => true,
                },
                EntryKind::Symlink | EntryKind::Other => true,
            };
            if !more {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Search one open file (`rel` names it); anything but a regular file, huge,
    /// binary and non-UTF-8 files are skipped.
    fn file(&mut self, mut file: &File, rel: &Path) -> bool {
        let is_small_file = file
            .metadata()
            .is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_FILE_BYTES);
        if !is_small_file {
            return true;
        }
        let mut bytes = Vec::new();
        if file.read_to_end(&mut bytes).is_err() {
            return true;
        }
        if looks_binary(&bytes) {
            return true;
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return true;
        };
        let rel = rel.display().to_string();
        for (index, line) in text.lines().enumerate() {
            if self.regex.is_match(line) {
                if self.matches.len() >= self.max_results {
                    return false;
                }
                self.matches
                    .push(format!("{rel}:{}: {}", index + 1, shorten(line)));
            }
        }
        true
    }
}

fn shorten(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", line.get(..cut).unwrap_or(line)),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::workspace;
    use super::*;
    use crate::tool::Tool;

    fn tool() -> FileSearch {
        FileSearch::new(&BuiltinToolsConfig::default())
    }

    #[tokio::test]
    async fn finds_lines_as_file_line_text() {
        let (dir, ctx) = workspace();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(
            dir.path().join("src/a.rs"),
            "fn main() {}\nlet x = 1;\nfn helper() {}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("b.txt"), "nothing\nfn in text\n").unwrap();
        std::fs::write(dir.path().join("bin.dat"), b"fn \x00 binary").unwrap();
        std::fs::write(dir.path().join(".git/config"), "fn hidden").unwrap();
        let out = tool()
            .execute(json!({"pattern": r"^fn \w+"}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "b.txt:2: fn in text\nsrc/a.rs:1: fn main() {}\nsrc/a.rs:3: fn helper() {}"
        );
        let out = tool()
            .execute(json!({"pattern": "helper", "path": "src/a.rs"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "src/a.rs:3: fn helper() {}");
        let out = tool()
            .execute(json!({"pattern": "zzz"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "no matches for `zzz` in `.`");
    }

    #[tokio::test]
    async fn results_are_capped() {
        let (dir, ctx) = workspace();
        let text: String = (0..50).map(|i| format!("hit {i}\n")).collect();
        std::fs::write(dir.path().join("many.txt"), text).unwrap();
        let mut config = BuiltinToolsConfig::default();
        config.file_search.max_results = 5;
        let out = FileSearch::new(&config)
            .execute(json!({"pattern": "hit"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content.lines().count(), 6);
        assert!(
            out.content
                .ends_with("[stopped after 5 matches; narrow the pattern or path]")
        );
    }

    #[tokio::test]
    async fn bad_input_is_a_clear_error() {
        let (_dir, ctx) = workspace();
        let err = tool()
            .execute(json!({"pattern": "(unclosed"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }));
        let text = err.to_string();
        assert!(
            text.contains("invalid regex `(unclosed`") && text.contains("unclosed group"),
            "{text}"
        );
        let err = tool()
            .execute(json!({"pattern": "x", "path": "nope"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "`nope` does not exist in the workspace");
        let err = tool()
            .execute(json!({"pattern": "x", "path": "../"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }));
    }

    #[test]
    fn long_lines_are_shortened() {
        let line = "é".repeat(400);
        let short = shorten(&line);
        assert_eq!(short.chars().count(), MAX_LINE_CHARS + 1);
        assert!(short.ends_with('…'));
    }
}
