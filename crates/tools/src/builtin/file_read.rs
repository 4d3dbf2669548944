//! `file_read`: a text file, or a window of its lines; an image or a PDF is attached
//! whole as a content part ([`file_media`](super::file_media)).

use std::fs::File;
use std::io::{BufRead, BufReader};

use async_trait::async_trait;
use oxydra_types::{SafetyTier, Source};
use schemars::JsonSchema;
use serde::Deserialize;

use super::file_media::{attach, attachable_media_type, head};
use super::{blocking, io_error, looks_binary, open_workspace};
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
        let output_limit = self.output_limit;
        let max_media_bytes = self.max_media_bytes;
        let window_asked = args.offset.is_some() || args.limit.is_some();
        blocking(move || {
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
            let mut reader = BufReader::with_capacity(64 * 1024, file);
            if let Some(media_type) = attachable_media_type(&head(&mut reader, &rel)?) {
                return attach(
                    reader,
                    &rel,
                    media_type,
                    meta.len(),
                    max_media_bytes,
                    window_asked,
                );
            }
            let window = read_window(reader, &rel, start, limit, output_limit)?;
            Ok(ToolOutput::text(window.render(&rel, start, output_limit)))
        })
        .await
    }
}

/// The lines of a file that were asked for, and how much of them fits the output limit.
struct Window {
    text: String,
    /// Lines in the whole file.
    total_lines: u64,
    /// Last line asked for that the file has.
    end: u64,
    /// Last whole line kept in `text` (0 when none).
    shown_end: u64,
    /// Lines asked for were left out because the output limit was reached.
    cut: bool,
    /// The first line asked for alone is over the limit: its number, the bytes of
    /// it kept and its length.
    partial: Option<(u64, usize, usize)>,
    /// Some kept line was not valid UTF-8 and was decoded as Latin-1.
    latin1: bool,
}

fn read_window(
    mut reader: BufReader<File>,
    rel: &str,
    start: u64,
    limit: u64,
    keep_bytes: usize,
) -> Result<Window, ToolError> {
    let head = reader.fill_buf().map_err(|e| io_error("reading", rel, e))?;
    if looks_binary(head) || mostly_control_bytes(head) {
        return Err(ToolError::Failed(format!(
            "`{rel}` is a binary file, not text; file_read reads text, and attaches \
             images (PNG, JPEG, GIF, WebP) and PDF documents"
        )));
    }
    let last = start.saturating_add(limit - 1);
    let mut window = Window {
        text: String::new(),
        total_lines: 0,
        end: 0,
        shown_end: 0,
        cut: false,
        partial: None,
        latin1: false,
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
        window.end = number;
        if window.cut {
            continue;
        }
        let text = decode_line(&line, &mut window.latin1);
        if window.text.len() + text.len() <= keep_bytes {
            window.text.push_str(&text);
            window.shown_end = number;
            continue;
        }
        window.cut = true;
        if window.text.is_empty() {
            let mut cut = keep_bytes.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            window.text.push_str(text.get(..cut).unwrap_or_default());
            window.partial = Some((number, cut, text.len()));
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

/// `line` as text: as UTF-8 when it is valid UTF-8, otherwise decoded as Latin-1
/// (every byte is the character of the same number), noting that in `latin1`.
fn decode_line<'a>(line: &'a [u8], latin1: &mut bool) -> std::borrow::Cow<'a, str> {
    match std::str::from_utf8(line) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => {
            *latin1 = true;
            std::borrow::Cow::Owned(line.iter().map(|&b| char::from(b)).collect())
        }
    }
}

/// More than one byte in ten of `head` is a control byte that text does not hold
/// (anything below space other than tab, newline, carriage return, form feed and
/// escape, and DEL): the file is binary even without a NUL byte.
fn mostly_control_bytes(head: &[u8]) -> bool {
    let control = head
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || b == 0x7f)
        .count();
    control > 0 && control * 10 > head.len()
}

/// `bytes` as people say it: `16 KiB`, `1 MiB`, or `100 bytes`.
fn human_bytes(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

impl Window {
    /// The text kept, then one line for each note: the encoding when it was not
    /// UTF-8, and which lines were shown when that is not the whole file. The line
    /// numbers in the note are those of the text kept, so they always agree with it.
    fn render(self, rel: &str, start: u64, output_limit: usize) -> String {
        if self.total_lines == 0 {
            return format!("(`{rel}` is empty)");
        }
        let mut notes = Vec::new();
        if self.latin1 {
            notes.push("[decoded as Latin-1: not valid UTF-8]".to_owned());
        }
        let limit = human_bytes(output_limit);
        let read_on = |next: u64| {
            if next > self.total_lines {
                "it is the last line".to_owned()
            } else {
                format!("read on with offset={next}")
            }
        };
        if let Some((number, kept, len)) = self.partial {
            notes.push(format!(
                "[showed the first {kept} of {len} bytes of line {number} ({limit} limit); {}]",
                read_on(number + 1)
            ));
        } else if self.cut {
            notes.push(format!(
                "[showed lines {start}-{} of {} ({limit} limit); {}]",
                self.shown_end,
                self.total_lines,
                read_on(self.shown_end + 1)
            ));
        } else if start > 1 || self.end < self.total_lines {
            notes.push(format!(
                "[read lines {start}-{} of {}; use offset and limit to read other lines]",
                self.end, self.total_lines
            ));
        }
        let mut out = self.text;
        for note in notes {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&note);
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
    fn limits_are_named_in_units_people_use() {
        assert_eq!(human_bytes(16 * 1024), "16 KiB");
        assert_eq!(human_bytes(2 * 1024 * 1024), "2 MiB");
        assert_eq!(human_bytes(100), "100 bytes");
        assert_eq!(human_bytes(1500), "1500 bytes");
    }
}
