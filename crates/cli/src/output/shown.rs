//! Text from a model or a tool made safe to show to a person on a terminal.
//!
//! A tool's name or arguments can carry characters that change what a person sees:
//! ANSI escape sequences (colours, cursor moves, clearing the line), other control
//! characters, bidirectional overrides and isolates (`U+202E` shows `exe.txt` as
//! `txt.exe`) and zero-width characters. [`escape`] writes each of them as a visible
//! `\u{…}` escape, so what is shown is what will run.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal raw.
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
                // Zero-width and invisible characters.
                | '\u{00ad}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200d}'
                | '\u{2060}'..='\u{2064}'
                | '\u{feff}'
        )
}

/// `text` with every control, bidirectional and zero-width character written as
/// `\u{…}` (lowercase hex); borrowed when there is none.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// A JSON text with every hidden character (see [`escape`]) written as a JSON `\uXXXX`
/// escape: the same JSON value, but safe to land on a terminal. (`serde_json` leaves
/// bidirectional marks, zero-width characters, DEL and C1 controls raw.)
pub fn escape_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_hidden) {
        return Cow::Borrowed(json);
    }
    let mut shown = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_hidden(c) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_its_value_with_hidden_characters_escaped() {
        let value = serde_json::json!({"command": "echo \u{202e}txt.exe\u{9b}\u{7f}\u{200b}"});
        let text = serde_json::to_string(&value).unwrap();
        let shown = escape_json(&text);
        assert!(!shown.chars().any(is_hidden), "{shown}");
        assert!(shown.contains("\\u202e"), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
        assert!(matches!(escape_json("{\"a\":\"é\"}"), Cow::Borrowed(_)));
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(escape("ls -la ~/été"), Cow::Borrowed(_)));
    }

    #[test]
    fn bidi_overrides_and_isolates_are_escaped() {
        assert_eq!(escape("rm \u{202e}txt.exe"), "rm \\u{202e}txt.exe");
        assert_eq!(
            escape("a\u{2066}b\u{2069}\u{200f}\u{061c}"),
            "a\\u{2066}b\\u{2069}\\u{200f}\\u{61c}"
        );
    }

    #[test]
    fn ansi_sequences_and_controls_are_escaped() {
        assert_eq!(
            escape("\u{1b}[2K\rsafe\u{7}\u{9b}"),
            "\\u{1b}[2K\\u{d}safe\\u{7}\\u{9b}"
        );
        assert_eq!(escape("a\nb"), "a\\u{a}b");
    }

    #[test]
    fn zero_width_characters_are_escaped() {
        assert_eq!(escape("cu\u{200b}rl\u{feff}"), "cu\\u{200b}rl\\u{feff}");
    }
}
