//! The window of lines `file_read` shows of a text file: the lines asked for, as many
//! of them as fit the output limit, decoded as UTF-8 or Latin-1, and the notes that say
//! which lines were shown and how to read on.

use std::io::BufRead;

use super::{io_error, looks_binary};
use crate::error::ToolError;

/// The lines of a file that were asked for, and how much of them fits the output limit.
pub(super) struct Window {
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

pub(super) fn read_window(
    mut reader: impl BufRead,
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
    let control: usize = head
        .iter()
        .map(|&b| usize::from(CONTROL_BYTES.get(usize::from(b)).copied().unwrap_or(0)))
        .sum();
    control > 0 && control * 10 > head.len()
}

/// 1 for each of [`mostly_control_bytes`]' control bytes, by byte value: a load a
/// byte, ~6 instructions a byte of every file read against ~10 for the comparisons
/// (the tools are built for size, where the compiler does not vectorise this loop).
static CONTROL_BYTES: [u8; 256] = control_byte_table();

#[allow(
    clippy::indexing_slicing,
    reason = "evaluated when compiling: an index out of range is a compile error"
)]
const fn control_byte_table() -> [u8; 256] {
    let mut table = [0u8; 256];
    let mut byte = 0u8;
    while byte < 0x20 {
        if !matches!(byte, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b) {
            table[byte as usize] = 1;
        }
        byte += 1;
    }
    table[0x7f] = 1;
    table
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
    pub(super) fn render(self, rel: &str, start: u64, output_limit: usize) -> String {
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
    use super::*;

    #[test]
    fn limits_are_named_in_units_people_use() {
        assert_eq!(human_bytes(16 * 1024), "16 KiB");
        assert_eq!(human_bytes(2 * 1024 * 1024), "2 MiB");
        assert_eq!(human_bytes(100), "100 bytes");
        assert_eq!(human_bytes(1500), "1500 bytes");
    }

    /// The table agrees with the plain test on every byte value, and the share is
    /// counted over the whole head.
    #[test]
    fn control_bytes_are_counted_as_the_plain_test_counts_them() {
        let plain =
            |b: u8| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || b == 0x7f;
        for b in 0..=u8::MAX {
            assert_eq!(
                CONTROL_BYTES[usize::from(b)],
                u8::from(plain(b)),
                "byte {b:#04x}"
            );
        }
        // 1,000 control bytes among 9,000 letters is not more than one in ten; one more is.
        let mut text = vec![b'a'; 9_000];
        text.extend(std::iter::repeat_n(0x01, 1_000));
        assert!(!mostly_control_bytes(&text));
        text.push(0x01);
        assert!(mostly_control_bytes(&text));
        assert!(!mostly_control_bytes(b""));
        assert!(!mostly_control_bytes(b"plain\ttext\r\n\x1b[1m"));
    }

    #[test]
    fn a_nul_in_the_sniffed_bytes_is_binary_and_one_after_them_is_not() {
        let mut head = vec![b'a'; super::super::SNIFF_BYTES];
        assert!(!looks_binary(&head));
        head.push(0);
        assert!(!looks_binary(&head));
        if let Some(last) = head.get_mut(super::super::SNIFF_BYTES - 1) {
            *last = 0;
        }
        assert!(looks_binary(&head));
    }
}
