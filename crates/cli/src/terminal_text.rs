//! The one sanitizer for text shown on a terminal that is not Oxydra's own.
//!
//! Answers, Markdown, tool names and arguments, `sessions show`, error lines (which
//! quote providers and tools), MCP tool descriptions and MCP server stderr, progress
//! messages and log lines all pass through [`sanitize`] before they reach a terminal.
//! What a person sees is then exactly the text: nothing in it can move the cursor,
//! erase a line, set the window title (OSC 2), write the clipboard (OSC 52), hide what
//! follows (SGR 8, black on black) or reorder what is shown (bidirectional overrides).
//!
//! Every character of these classes is written as a visible escape, `\u{…}` with the
//! code point in lowercase hex (`ESC` shows as `\u{1b}`, `U+202E` as `\u{202e}`):
//! - C0 controls (`U+0000`–`U+001F`) but the line feed and tab of [`Layout::Lines`],
//!   DEL (`U+007F`) and C1 controls (`U+0080`–`U+009F`). `ESC` and the 8-bit CSI
//!   `U+009B` start every terminal escape sequence; a carriage return (`\r`) goes back
//!   to the start of the line and overwrites it. A `\r` right before `\n` (a Windows
//!   line end) is dropped instead: it overwrites nothing.
//! - Bidirectional marks, embeddings, overrides and isolates (`U+061C`, `U+200E`,
//!   `U+200F`, `U+202A`–`U+202E`, `U+2066`–`U+2069`).
//! - Zero-width and invisible characters (`U+00AD`, `U+034F`, `U+115F`, `U+1160`,
//!   `U+180E`, `U+200B`–`U+200D`, `U+2028`, `U+2029`, `U+2060`–`U+2064`, `U+3164`,
//!   `U+FEFF`, `U+FFA0`, `U+FFF9`–`U+FFFB`, the tag characters `U+E0000`–`U+E007F`).
//!
//! Text meant for people is sanitized on every stream, terminal or not: a pipe or a
//! file ends at a terminal too (`oxydra sessions show ID | head`, `mcp list | less -R`,
//! `2>&1 | tee log`). Only formats meant for programs keep the exact text: JSON and
//! JSON lines carry it JSON-escaped ([`escape_json`]: the same value, nothing raw), and
//! `oxydra scrub` is a filter that must give back what it was given.
//!
//! Before any question, [`reset_before_question`] resets the attributes (SGR 0) on a
//! fresh line, so nothing printed before can style the question away.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;

/// Select Graphic Rendition 0: every attribute (colour, conceal, …) back to normal.
pub const RESET_ATTRIBUTES: &str = "\x1b[0m";

/// What of a text's layout is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Lines of text: line feeds and tabs are kept.
    Lines,
    /// One line (a tool line, a name, a summary): line feeds and tabs are escaped too.
    OneLine,
    /// Log lines of Oxydra's logger: as [`Layout::Lines`], and the logger's own colour
    /// sequences (`ESC [` digits and `;` `m`) are kept. The logger (`tracing-subscriber`)
    /// itself writes every `ESC` of the values it formats as the text `\x1b`, so an
    /// `ESC` left in a log line is one of its colours.
    LogLines,
}

/// Whether `c` must not reach a terminal raw (line feeds and tabs included).
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            // Bidirectional marks, embeddings, overrides and isolates.
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                // Zero-width, invisible and line-breaking format characters.
                | '\u{00ad}'
                | '\u{034f}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200d}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{2060}'..='\u{2064}'
                | '\u{3164}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// Where the first character that [`is_hidden`] might flag starts: the first byte that
/// is not printable ASCII (`0x20..=0x7e`). Every character before it is shown as it is,
/// and the bytes before it are ASCII, so it is a character boundary. A run's output is
/// mostly ASCII: this walks it a byte at a time with no UTF-8 decoding or range table
/// (in `--output jsonl`, the char-by-char check was 4% of a 20-turn run's instructions).
fn first_suspect(text: &str) -> Option<usize> {
    text.bytes().position(|b| !(0x20..0x7f).contains(&b))
}

/// Whether `text` holds a character `hidden` flags, decoding only the characters at
/// the bytes [`first_suspect`] stops at (line feeds and tabs among them: `hidden` says
/// whether they are kept) and skipping the printable ASCII between them.
fn any_hidden(text: &str, hidden: impl Fn(char) -> bool) -> bool {
    let mut rest = text;
    while let Some(tail) = first_suspect(rest).and_then(|at| rest.get(at..)) {
        let Some(c) = tail.chars().next() else {
            return false;
        };
        if hidden(c) {
            return true;
        }
        rest = tail.get(c.len_utf8()..).unwrap_or_default();
    }
    false
}

/// The length in bytes of the colour sequence (`ESC [ 0-9; m`) at the start of `rest`,
/// if one starts there.
fn colour_sequence(rest: &str) -> Option<usize> {
    let body = rest.strip_prefix("\x1b[")?;
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (body.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

/// THE sanitizer: `text` with every character that could change what a terminal
/// shows (see the module's documentation) written as a visible `\u{…}` escape, what
/// `layout` keeps kept. Borrowed when nothing had to change.
pub fn sanitize(text: &str, layout: Layout) -> Cow<'_, str> {
    let keeps = |c: char| layout != Layout::OneLine && matches!(c, '\n' | '\t');
    if !any_hidden(text, |c| is_hidden(c) && !keeps(c)) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if layout == Layout::LogLines
            && let Some(len) = colour_sequence(rest)
        {
            shown.push_str(rest.get(..len).unwrap_or_default());
            rest = rest.get(len..).unwrap_or_default();
            continue;
        }
        rest = rest.get(c.len_utf8()..).unwrap_or_default();
        if c == '\r' && layout != Layout::OneLine && rest.starts_with('\n') {
            continue;
        }
        if is_hidden(c) && !keeps(c) {
            let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// [`sanitize`] for one line: `sanitize(text, Layout::OneLine)`.
pub fn one_line(text: &str) -> Cow<'_, str> {
    sanitize(text, Layout::OneLine)
}

/// [`sanitize`] for lines of text: `sanitize(text, Layout::Lines)`.
pub fn lines(text: &str) -> Cow<'_, str> {
    sanitize(text, Layout::Lines)
}

/// A JSON text (as `serde_json` writes it) with every character [`sanitize`] escapes
/// written as a JSON `\uXXXX` escape: the same JSON value, safe to land on a
/// terminal. (`serde_json` leaves bidirectional marks, zero-width characters, DEL and
/// C1 controls raw.) Line feeds and tabs are kept: `serde_json` writes them raw only as
/// the whitespace between values of pretty-printed JSON. For `--output jsonl`, whose
/// lines are JSON whatever they are written to, and JSON shown on a terminal.
pub fn escape_json(json: &str) -> Cow<'_, str> {
    let hidden = |c: char| is_hidden(c) && !matches!(c, '\n' | '\t');
    if !any_hidden(json, hidden) {
        return Cow::Borrowed(json);
    }
    let mut shown = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if hidden(c) {
            let mut units = [0_u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(shown, "\\u{unit:04x}");
            }
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// Resets the attributes (SGR 0) and, unless the cursor is known to be at the start
/// of a line (`at_line_start`), starts a new line: written before every question, so
/// that what was printed before (an answer ending in "conceal", black on black) cannot
/// hide it.
pub fn reset_before_question(out: &mut impl Write, at_line_start: bool) -> std::io::Result<()> {
    out.write_all(RESET_ATTRIBUTES.as_bytes())?;
    if !at_line_start {
        out.write_all(b"\n")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte pre-check decides as the char-by-char check does, for every ASCII byte
    /// and the non-ASCII characters around the flagged ranges, alone and after text.
    #[test]
    fn the_ascii_pre_check_agrees_with_the_char_check() {
        let mut chars: Vec<char> = (0u8..0x80).map(char::from).collect();
        chars.extend([
            '\u{80}',
            '\u{9f}',
            '\u{a0}',
            '\u{ad}',
            'é',
            '\u{061c}',
            '\u{200b}',
            '\u{200e}',
            '\u{2028}',
            '\u{202e}',
            '\u{2066}',
            '\u{feff}',
            '中',
            '🦀',
            '\u{e0001}',
            '\u{10ffff}',
        ]);
        for c in chars {
            for text in [c.to_string(), format!("plain {c} text"), format!("été{c}")] {
                for keep_breaks in [false, true] {
                    let hidden =
                        |c: char| is_hidden(c) && !(keep_breaks && matches!(c, '\n' | '\t'));
                    assert_eq!(
                        any_hidden(&text, hidden),
                        text.chars().any(hidden),
                        "{text:?} (keep_breaks {keep_breaks})"
                    );
                }
            }
        }
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(lines("ls -la ~/été\n\tok"), Cow::Borrowed(_)));
        assert!(matches!(one_line("ls -la ~/été"), Cow::Borrowed(_)));
        assert!(matches!(lines("emoji 🦀 and 中文"), Cow::Borrowed(_)));
    }

    #[test]
    fn escape_sequences_are_shown_not_run() {
        // OSC 2 (window title), OSC 52 (clipboard), cursor up + erase line, SGR 8.
        let attack =
            "\u{1b}]2;pwned\u{7}\u{1b}]52;c;ZWNobyBoaQ==\u{7}\u{1b}[1A\u{1b}[2K\u{1b}[8;30;40m";
        let shown = lines(attack);
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "{shown}"
        );
        assert_eq!(
            shown,
            "\\u{1b}]2;pwned\\u{7}\\u{1b}]52;c;ZWNobyBoaQ==\\u{7}\\u{1b}[1A\\u{1b}[2K\\u{1b}[8;30;40m"
        );
    }

    #[test]
    fn c0_controls_but_line_feed_and_tab_are_escaped() {
        assert_eq!(
            lines("a\u{0}b\u{8}c\u{b}d\u{c}e\u{e}f"),
            "a\\u{0}b\\u{8}c\\u{b}d\\u{c}e\\u{e}f"
        );
        assert_eq!(lines("keep\n\tthis"), "keep\n\tthis");
        assert_eq!(one_line("not\n\there"), "not\\u{a}\\u{9}here");
    }

    #[test]
    fn a_carriage_return_cannot_overwrite_a_line() {
        assert_eq!(lines("✓ safe\rEVIL"), "✓ safe\\u{d}EVIL");
        // A Windows line end overwrites nothing: its `\r` is dropped.
        assert_eq!(lines("one\r\ntwo\r\n"), "one\ntwo\n");
        assert_eq!(one_line("one\r\n"), "one\\u{d}\\u{a}");
    }

    #[test]
    fn del_and_c1_controls_are_escaped() {
        // U+009B is the 8-bit CSI: `\u{9b}2J` would clear the screen.
        assert_eq!(
            lines("a\u{7f}b\u{9b}2J\u{85}\u{9d}"),
            "a\\u{7f}b\\u{9b}2J\\u{85}\\u{9d}"
        );
    }

    #[test]
    fn bidi_controls_are_escaped() {
        assert_eq!(lines("rm \u{202e}txt.exe"), "rm \\u{202e}txt.exe");
        assert_eq!(
            lines(
                "\u{202a}\u{202b}\u{202c}\u{202d}\u{2066}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}\u{61c}"
            ),
            "\\u{202a}\\u{202b}\\u{202c}\\u{202d}\\u{2066}\\u{2067}\\u{2068}\\u{2069}\\u{200e}\\u{200f}\\u{61c}"
        );
    }

    #[test]
    fn zero_width_and_invisible_characters_are_escaped() {
        assert_eq!(
            lines("cu\u{200b}r\u{200c}l\u{200d}\u{2060}\u{feff}\u{ad}"),
            "cu\\u{200b}r\\u{200c}l\\u{200d}\\u{2060}\\u{feff}\\u{ad}"
        );
        // Tag characters smuggle invisible ASCII.
        assert_eq!(lines("ok\u{e0041}\u{e007f}"), "ok\\u{e0041}\\u{e007f}");
        assert_eq!(lines("a\u{2028}b"), "a\\u{2028}b");
    }

    #[test]
    fn log_lines_keep_only_the_loggers_colours() {
        let line = "\u{1b}[33m WARN\u{1b}[0m provider failed: \\x1b[8m\r\u{202e}\n";
        assert_eq!(
            sanitize(line, Layout::LogLines),
            "\u{1b}[33m WARN\u{1b}[0m provider failed: \\x1b[8m\\u{d}\\u{202e}\n"
        );
        // Any other sequence is escaped, even in a log line.
        assert_eq!(
            sanitize("\u{1b}]2;t\u{7}\u{1b}[2K", Layout::LogLines),
            "\\u{1b}]2;t\\u{7}\\u{1b}[2K"
        );
        assert_eq!(sanitize("\u{1b}[", Layout::LogLines), "\\u{1b}[");
    }

    #[test]
    fn json_keeps_its_value_with_hidden_characters_escaped() {
        let value = serde_json::json!({"command": "echo \u{202e}txt.exe\u{9b}\u{7f}\u{200b}"});
        let text = serde_json::to_string(&value).unwrap();
        let shown = escape_json(&text);
        assert!(!shown.chars().any(is_hidden), "{shown}");
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let shown = escape_json(&pretty);
        assert!(shown.contains("{\n  \"command\""), "{shown}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            value
        );
        assert!(shown.contains("\\u202e"), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
        assert!(matches!(escape_json("{\"a\":\"é\"}"), Cow::Borrowed(_)));
        let tag = escape_json("\"\u{e0041}\"");
        assert_eq!(tag, "\"\\udb40\\udc41\"");
    }

    #[test]
    fn a_question_starts_with_reset_attributes_on_a_fresh_line() {
        let mut out = Vec::new();
        reset_before_question(&mut out, false).unwrap();
        assert_eq!(out, b"\x1b[0m\n");
        let mut out = Vec::new();
        reset_before_question(&mut out, true).unwrap();
        assert_eq!(out, b"\x1b[0m");
    }
}
