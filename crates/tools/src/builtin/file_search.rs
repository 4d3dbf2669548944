//! `file_search`: lines matching a regex, as `file:line: text`.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use oxydra_types::SafetyTier;
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{blocking, io_error, looks_binary, policy};
use crate::config::BuiltinToolsConfig;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::protected_paths::ProtectedPaths;
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
        let policy = policy(ctx)?;
        let resolved = policy.resolve(args.path.as_deref().unwrap_or("."))?;
        self.protected
            .check_read(&resolved.absolute, &resolved.relative)?;
        let protected = self.protected.clone();
        let cancel = ctx.cancel.clone();
        let max_results = self.max_results;
        let text = blocking(move || {
            let rel = &resolved.relative;
            std::fs::metadata(&resolved.absolute).map_err(|e| io_error("searching", rel, e))?;
            let mut search = Search {
                regex,
                root: policy.root().to_owned(),
                cancel,
                max_results,
                protected,
                matches: Vec::new(),
            };
            let complete = search.path(&resolved.absolute)?;
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
    root: PathBuf,
    cancel: CancellationToken,
    max_results: usize,
    /// Files that may not be read: skipped.
    protected: ProtectedPaths,
    matches: Vec<String>,
}

impl Search {
    /// Search a file or directory; `false` once the result cap is reached.
    fn path(&mut self, path: &Path) -> Result<bool, ToolError> {
        if self.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return Ok(true);
        };
        if meta.is_dir() {
            let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
                Ok(entries) => entries.filter_map(Result::ok).map(|e| e.path()).collect(),
                Err(_) => return Ok(true),
            };
            entries.sort();
            for entry in entries {
                let skipped = entry
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| SKIPPED_DIRS.contains(&n));
                if !skipped && !self.path(&entry)? {
                    return Ok(false);
                }
            }
            Ok(true)
        } else if meta.is_file()
            && meta.len() <= MAX_FILE_BYTES
            && !self.protected.refuses_read(path)
        {
            Ok(self.file(path))
        } else {
            // Symlinks are not followed (they may lead outside); huge files are skipped.
            Ok(true)
        }
    }

    /// Search one file; binary and non-UTF-8 files are skipped.
    fn file(&mut self, path: &Path) -> bool {
        let Ok(bytes) = std::fs::read(path) else {
            return true;
        };
        if looks_binary(&bytes) {
            return true;
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return true;
        };
        let rel = path
            .strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string();
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
