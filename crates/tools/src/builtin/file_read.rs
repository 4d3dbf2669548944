//! `file_read`: a text file, or a window of its lines.

use std::fs::File;
use std::io::{BufRead, BufReader};

use async_trait::async_trait;
use oxydra_types::SafetyTier;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, io_error, looks_binary, open_workspace};
use crate::config::BuiltinToolsConfig;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::protected_paths::ProtectedPaths;
use crate::tool::ToolOutput;
use crate::truncate::truncate_with_dropped;
use crate::typed_tool::TypedTool;

/// Arguments of `file_read`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileReadArgs {
    /// Path of the file, relative to the workspace root.
    pub path: String,
    /// First line to read, counting from 1 (default 1).
    pub offset: Option<u64>,
    /// How many lines to read at most (default: to the end).
    pub limit: Option<u64>,
}

/// Reads a UTF-8 text file in the workspace (ReadOnly).
#[derive(Debug, Clone)]
pub struct FileRead {
    output_limit: usize,
    protected: ProtectedPaths,
}

impl FileRead {
    /// The tool, with the output limit of `config`.
    pub fn new(config: &BuiltinToolsConfig) -> Self {
        Self {
            output_limit: config.output_limit_bytes,
            protected: config.protected.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for FileRead {
    type Args = FileReadArgs;
    const NAME: &'static str = "file_read";
    const TIER: SafetyTier = SafetyTier::ReadOnly;

    fn description(&self) -> String {
        "Read a text file in the workspace. Use offset (first line, from 1) and limit \
         (number of lines) to read part of a large file."
            .to_owned()
    }

    async fn run(&self, args: FileReadArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let start = args.offset.unwrap_or(1).max(1);
        let limit = match args.limit {
            Some(0) => {
                return Err(ToolError::InvalidArguments {
                    message: "`file_read`: limit must be at least 1".to_owned(),
                });
            }
            Some(n) => n,
            None => u64::MAX,
        };
        let ws = open_workspace(ctx)?;
        let resolved = ws.policy.resolve(&args.path)?;
        self.protected
            .check_read(&resolved.absolute, &resolved.relative)?;
        let output_limit = self.output_limit;
        let content = blocking(move || {
            let rel = resolved.relative;
            let file = ws
                .dir
                .open_read(&resolved.absolute)
                .map_err(|e| ws.error("reading", &args.path, &rel, e))?;
            let meta = file.metadata().map_err(|e| io_error("reading", &rel, e))?;
            if meta.is_dir() {
                return Err(ToolError::Failed(format!(
                    "`{rel}` is a directory; use file_list to see what it holds"
                )));
            }
            if !meta.is_file() {
                return Err(ToolError::Failed(format!(
                    "`{rel}` is not a regular file (a FIFO, socket or device); file_read only \
                     reads files"
                )));
            }
            let window = read_window(file, &rel, start, limit, output_limit)?;
            Ok(window.render(&rel, start, output_limit))
        })
        .await?;
        Ok(ToolOutput::text(content))
    }
}

/// The lines of a file that were asked for.
struct Window {
    text: String,
    /// Bytes of requested lines not kept (over the output limit).
    dropped: usize,
    /// Lines in the whole file.
    total_lines: u64,
    /// Last line in the window.
    end: u64,
}

fn read_window(
    file: File,
    rel: &str,
    start: u64,
    limit: u64,
    keep_bytes: usize,
) -> Result<Window, ToolError> {
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(|e| io_error("reading", rel, e))?;
    if looks_binary(head) {
        return Err(ToolError::Failed(format!(
            "`{rel}` is a binary file, not text; file_read only reads text"
        )));
    }
    let last = start.saturating_add(limit - 1);
    let mut window = Window {
        text: String::new(),
        dropped: 0,
        total_lines: 0,
        end: 0,
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error("reading", rel, e))?;
        if read == 0 {
            break;
        }
        window.total_lines += 1;
        let number = window.total_lines;
        if number < start || number > last {
            continue;
        }
        let text = std::str::from_utf8(&line).map_err(|_| {
            ToolError::Failed(format!(
                "`{rel}` is not UTF-8 text (line {number} is not valid UTF-8); it looks binary"
            ))
        })?;
        window.end = number;
        if window.text.len() <= keep_bytes {
            window.text.push_str(text);
        } else {
            window.dropped += text.len();
        }
    }
    if start > window.total_lines && !(start == 1 && window.total_lines == 0) {
        return Err(ToolError::InvalidArguments {
            message: format!(
                "`file_read`: offset {start} is beyond the end of `{rel}`, which has {} lines",
                window.total_lines
            ),
        });
    }
    Ok(window)
}

impl Window {
    fn render(self, rel: &str, start: u64, output_limit: usize) -> String {
        if self.total_lines == 0 {
            return format!("(`{rel}` is empty)");
        }
        let truncated = self.text.len() > output_limit || self.dropped > 0;
        let mut out = truncate_with_dropped(&self.text, output_limit, self.dropped).into_owned();
        if truncated || start > 1 || self.end < self.total_lines {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!(
                "[read lines {start}-{} of {}; use offset and limit to read other lines]",
                self.end, self.total_lines
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::workspace;
    use super::*;
    use crate::tool::Tool;

    fn tool() -> FileRead {
        FileRead::new(&BuiltinToolsConfig::default())
    }

    #[tokio::test]
    async fn reads_whole_file_and_windows() {
        let (dir, ctx) = workspace();
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("a.txt"), &text).unwrap();
        let out = tool()
            .execute(json!({"path": "a.txt"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, text);
        let out = tool()
            .execute(json!({"path": "a.txt", "offset": 3, "limit": 2}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "line 3\nline 4\n[read lines 3-4 of 10; use offset and limit to read other lines]"
        );
        let out = tool()
            .execute(json!({"path": "a.txt", "offset": 10}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content.starts_with("line 10\n[read lines 10-10 of 10"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn offset_beyond_eof_says_how_many_lines() {
        let (dir, ctx) = workspace();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree").unwrap();
        let err = tool()
            .execute(json!({"path": "a.txt", "offset": 9}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }));
        assert!(
            err.to_string()
                .contains("offset 9 is beyond the end of `a.txt`, which has 3 lines"),
            "{err}"
        );
        let err = tool()
            .execute(json!({"path": "a.txt", "limit": 0}), &ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("limit must be at least 1"));
    }

    #[tokio::test]
    async fn missing_binary_directory_and_escapes_are_clear_errors() {
        let (dir, ctx) = workspace();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/bin.dat"), b"\x7fELF\x00\x01\x02").unwrap();
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        std::fs::write(dir.path().join("empty.txt"), b"").unwrap();
        let err = tool()
            .execute(json!({"path": "sub/nope.txt"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`sub/nope.txt` does not exist in the workspace"
        );
        let err = tool()
            .execute(json!({"path": "sub/bin.dat"}), &ctx)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("`sub/bin.dat` is a binary file"),
            "{err}"
        );
        let err = tool()
            .execute(json!({"path": "latin1.txt"}), &ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not UTF-8"), "{err}");
        let err = tool()
            .execute(json!({"path": "sub"}), &ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        let err = tool()
            .execute(json!({"path": "../etc"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }));
        let err = tool()
            .execute(json!({"path": "/etc/passwd"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }));
        let out = tool()
            .execute(json!({"path": "empty.txt"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "(`empty.txt` is empty)");
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_fifo_is_refused_without_blocking() {
        let (dir, ctx) = workspace();
        let fifo = dir.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Opening a FIFO for reading blocks until a writer comes: this would hang.
        let err = tool()
            .execute(json!({"path": "pipe"}), &ctx)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("`pipe` is not a regular file"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn large_output_is_truncated_with_marker() {
        let (dir, ctx) = workspace();
        let config = BuiltinToolsConfig {
            output_limit_bytes: 100,
            ..BuiltinToolsConfig::default()
        };
        let text: String = (0..100).map(|i| format!("{i:09}\n")).collect(); // 1000 bytes
        std::fs::write(dir.path().join("big.txt"), &text).unwrap();
        let out = FileRead::new(&config)
            .execute(json!({"path": "big.txt"}), &ctx)
            .await
            .unwrap();
        assert!(out.content.starts_with(&text[..100]), "{}", out.content);
        assert!(
            out.content.contains("[... truncated 900 bytes ...]"),
            "{}",
            out.content
        );
        assert!(
            out.content
                .ends_with("[read lines 1-100 of 100; use offset and limit to read other lines]")
        );
    }
}
