//! `file_read`: a text file, or a window of its lines; an image or a PDF is attached
//! whole as a content part ([`file_media`](super::file_media)).

use std::fs::File;
use std::io::{BufRead, BufReader, Read as _};

use async_trait::async_trait;
use oxydra_types::{SafetyTier, Source};
use schemars::JsonSchema;
use serde::Deserialize;

use super::file_media::{attach, attachable_media_type};
use super::line_window::read_window;
use super::{blocking, io_error, open_workspace};
use crate::config::BuiltinToolsConfig;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::protected::ProtectedPaths;
use crate::tool::ToolOutput;
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

/// Reads a text file in the workspace (ReadOnly): UTF-8, or Latin-1 when it is not
/// valid UTF-8. An image (PNG, JPEG, GIF, WebP) or a PDF, told by its bytes, is
/// attached whole as a content part, up to `[tools.file_read] max_media_bytes`; other
/// files with NUL bytes or many control bytes are refused as binary.
#[derive(Debug, Clone)]
pub struct FileRead {
    output_limit: usize,
    max_media_bytes: usize,
    protected: ProtectedPaths,
}

impl FileRead {
    /// The tool, with the output limit of `config`.
    pub fn new(config: &BuiltinToolsConfig) -> Self {
        Self {
            output_limit: config.output_limit_bytes,
            max_media_bytes: config.file_read.max_media_bytes,
            protected: config.protected.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for FileRead {
    type Args = FileReadArgs;
    const NAME: &'static str = "file_read";
    const TIER: SafetyTier = SafetyTier::ReadOnly;

    /// What the tool returns comes from the workspace.
    fn output_source_args(&self, _args: &FileReadArgs) -> Option<Source> {
        Some(Source::Workspace)
    }

    fn description(&self) -> String {
        "Read a text file in the workspace. Use offset (first line, from 1) and limit \
         (number of lines) to read part of a large file. An image (PNG, JPEG, GIF, WebP) \
         or a PDF is attached whole for you to look at."
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
        let file = ws
            .dir
            .open_read(&resolved.absolute)
            .map_err(|e| ws.error("reading", &args.path, &resolved.relative, e))?;
        let asked = Asked {
            rel: resolved.relative,
            start,
            limit,
            output_limit: self.output_limit,
            max_media_bytes: self.max_media_bytes,
            window_asked: args.offset.is_some() || args.limit.is_some(),
        };
        let len = regular_file_len(&file, &asked.rel)?;
        if len > INLINE_READ_BYTES {
            return blocking(move || asked.from(BufReader::with_capacity(64 * 1024, file), len))
                .await;
        }
        // A small file is read here: handing it to the blocking pool costs more than
        // the read (two thread wake-ups, and a pool thread of its own for each of a
        // batch's reads).
        match read_inline(&file, len, &asked.rel)? {
            Inline::Whole(bytes) => asked.from(bytes.as_slice(), len),
            Inline::Grew(head) => blocking(move || asked.from(read_on(head, file), len)).await,
        }
    }
}

/// What [`read_inline`] read of a file whose `fstat` put it under the bound.
enum Inline {
    /// The whole file.
    Whole(Vec<u8>),
    /// Its first `INLINE_READ_BYTES + 1` bytes: it grew past the bound since.
    Grew(Vec<u8>),
}

/// Reads `file` (`len` bytes by its `fstat`, at most [`INLINE_READ_BYTES`]) on this
/// thread, stopping one byte past the bound, so a file that grew meanwhile is never
/// read whole here.
fn read_inline(file: &File, len: u64, rel: &str) -> Result<Inline, ToolError> {
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(INLINE_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error("reading", rel, e))?;
    if u64::try_from(bytes.len()).is_ok_and(|read| read <= INLINE_READ_BYTES) {
        Ok(Inline::Whole(bytes))
    } else {
        Ok(Inline::Grew(bytes))
    }
}

/// The file's bytes from its start, for a file [`read_inline`] stopped in: `head`, what
/// it read, then the rest from the file's offset.
fn read_on(head: Vec<u8>, file: File) -> impl BufRead {
    BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(file))
}

/// Files up to this size (by their `fstat`) are read on the calling thread; larger
/// ones on the blocking pool. 64 KiB from the page cache is a few microseconds, less
/// than the two thread wake-ups of a hand-off (docs/performance.md).
const INLINE_READ_BYTES: u64 = 64 * 1024;

/// The length of the opened `file`, which must be a regular file.
fn regular_file_len(file: &File, rel: &str) -> Result<u64, ToolError> {
    let meta = file.metadata().map_err(|e| io_error("reading", rel, e))?;
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
    Ok(meta.len())
}

/// What one `file_read` call asked for, once its file is open.
struct Asked {
    rel: String,
    start: u64,
    limit: u64,
    output_limit: usize,
    max_media_bytes: usize,
    window_asked: bool,
}

impl Asked {
    /// The call's output from `reader`, the file's bytes from its start (`len` of them
    /// by its metadata): an image or a PDF attached, else the window of lines asked for.
    fn from(self, mut reader: impl BufRead, len: u64) -> Result<ToolOutput, ToolError> {
        let rel = self.rel.as_str();
        // Sniffed in the reader's own buffer: the file's start, at least the signature
        // bytes of a media file when the file has that many.
        let first_bytes = reader.fill_buf().map_err(|e| io_error("reading", rel, e))?;
        if let Some(media_type) = attachable_media_type(first_bytes) {
            return attach(
                reader,
                rel,
                media_type,
                len,
                self.max_media_bytes,
                self.window_asked,
            );
        }
        let window = read_window(reader, rel, self.start, self.limit, self.output_limit)?;
        Ok(ToolOutput::text(window.render(
            rel,
            self.start,
            self.output_limit,
        )))
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
        let out = tool()
            .execute(json!({"path": "latin1.txt"}), &ctx)
            .await
            .unwrap();
        assert!(out.content.contains("not valid UTF-8"), "{}", out.content);
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
        // The marker names the lines really shown, and where to read on.
        assert_eq!(
            out.content,
            format!(
                "{}[showed lines 1-10 of 100 (100 bytes limit); read on with offset=11]",
                &text[..100]
            )
        );
        let out = FileRead::new(&config)
            .execute(json!({"path": "big.txt", "offset": 11}), &ctx)
            .await
            .unwrap();
        assert!(out.content.starts_with("000000010\n"), "{}", out.content);
        assert!(
            out.content
                .ends_with("[showed lines 11-20 of 100 (100 bytes limit); read on with offset=21]"),
            "{}",
            out.content
        );
        let out = FileRead::new(&config)
            .execute(json!({"path": "big.txt", "offset": 95}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            format!(
                "{}[read lines 95-100 of 100; use offset and limit to read other lines]",
                &text[940..]
            )
        );
    }

    #[tokio::test]
    async fn a_line_longer_than_the_limit_is_shown_in_part_and_says_so() {
        let (dir, ctx) = workspace();
        let config = BuiltinToolsConfig {
            output_limit_bytes: 10,
            ..BuiltinToolsConfig::default()
        };
        // 'é' is two bytes: the cut at 10 bytes backs off to a char boundary.
        let long = format!("a{}\nnext\n", "é".repeat(20));
        std::fs::write(dir.path().join("long.txt"), &long).unwrap();
        let out = FileRead::new(&config)
            .execute(json!({"path": "long.txt"}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "aéééé\n[showed the first 9 of 42 bytes of line 1 (10 bytes limit); read on with \
             offset=2]"
        );
        std::fs::write(dir.path().join("last.txt"), "x".repeat(30)).unwrap();
        let out = FileRead::new(&config)
            .execute(json!({"path": "last.txt"}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content
                .ends_with("of line 1 (10 bytes limit); it is the last line]"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn latin1_text_is_decoded_and_says_so() {
        let (dir, ctx) = workspace();
        std::fs::write(dir.path().join("l1.txt"), b"caf\xe9\nna\xefve \xa9 2024\n").unwrap();
        let out = tool()
            .execute(json!({"path": "l1.txt"}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "café\nnaïve © 2024\n[decoded as Latin-1: not valid UTF-8]"
        );
        // Valid UTF-8 is never called Latin-1.
        std::fs::write(dir.path().join("u.txt"), "café\n").unwrap();
        let out = tool()
            .execute(json!({"path": "u.txt"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "café\n");
    }

    #[tokio::test]
    async fn control_bytes_without_nul_are_still_binary_but_escapes_are_text() {
        let (dir, ctx) = workspace();
        std::fs::write(
            dir.path().join("ctl.bin"),
            b"\x01\x02\x03\x04\x05ab\xff\xfe\n",
        )
        .unwrap();
        let err = tool()
            .execute(json!({"path": "ctl.bin"}), &ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("is a binary file"), "{err}");
        // A coloured log: ESC, tab, CR and form feed are text.
        let log = "\x1b[31merror\x1b[0m\tdone\r\n\x0cpage 2\n";
        std::fs::write(dir.path().join("log.txt"), log).unwrap();
        let out = tool()
            .execute(json!({"path": "log.txt"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, log);
    }

    #[test]
    fn a_small_file_is_read_without_the_blocking_pool() {
        // A runtime whose one blocking thread is taken: a read that needed the pool
        // would wait for it.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (taken, is_taken) = std::sync::mpsc::channel::<()>();
        let occupant = runtime.spawn_blocking(move || {
            taken.send(()).unwrap();
            held.recv().unwrap();
        });
        is_taken.recv().unwrap();
        let (dir, ctx) = workspace();
        let text = "a line of a note\n".repeat(100);
        std::fs::write(dir.path().join("small.txt"), &text).unwrap();
        let out = runtime
            .block_on(async {
                tokio::time::timeout(
                    std::time::Duration::from_secs(10),
                    tool().execute(json!({"path": "small.txt"}), &ctx),
                )
                .await
            })
            .expect("the read waited for the blocking pool")
            .unwrap();
        assert_eq!(out.content, text);
        release.send(()).unwrap();
        runtime.block_on(occupant).unwrap();
    }

    #[tokio::test]
    async fn files_at_and_past_the_inline_bound_are_read_whole() {
        let (dir, ctx) = workspace();
        let config = BuiltinToolsConfig {
            output_limit_bytes: 1024 * 1024,
            ..BuiltinToolsConfig::default()
        };
        let bound = usize::try_from(INLINE_READ_BYTES).unwrap();
        for len in [bound, bound + 1, 3 * bound + 7] {
            let text: String = (0..)
                .map(|i| format!("line {i}\n"))
                .flat_map(|line| line.chars().collect::<Vec<_>>())
                .take(len)
                .collect();
            std::fs::write(dir.path().join("f.txt"), &text).unwrap();
            let out = FileRead::new(&config)
                .execute(json!({"path": "f.txt"}), &ctx)
                .await
                .unwrap();
            assert!(
                out.content == text,
                "{len} bytes: read {} bytes",
                out.content.len()
            );
        }
    }

    #[test]
    fn a_file_that_grew_past_the_bound_is_read_on_from_where_the_inline_read_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grown.txt");
        let bound = usize::try_from(INLINE_READ_BYTES).unwrap();
        let text: String = (0..bound + 500)
            .map(|i| if i % 50 == 49 { '\n' } else { 'x' })
            .collect();
        std::fs::write(&path, &text).unwrap();
        let file = File::open(&path).unwrap();
        // Its `fstat` said 10 bytes when it was opened.
        let Inline::Grew(head) = read_inline(&file, 10, "grown.txt").unwrap() else {
            panic!("a file past the bound was read whole on the calling thread");
        };
        assert_eq!(head.len(), bound + 1);
        let asked = Asked {
            rel: "grown.txt".into(),
            start: 1,
            limit: u64::MAX,
            output_limit: 1024 * 1024,
            max_media_bytes: 1024,
            window_asked: false,
        };
        let out = asked.from(read_on(head, file), 10).unwrap();
        assert!(out.content == text, "read {} bytes", out.content.len());
        // A file under the bound is read whole.
        std::fs::write(&path, "short\n").unwrap();
        let file = File::open(&path).unwrap();
        let Inline::Whole(bytes) = read_inline(&file, 6, "grown.txt").unwrap() else {
            panic!("a short file was handed on");
        };
        assert_eq!(bytes, b"short\n");
    }
}
