//! A label inside a string literal: in `"token: " + getToken()` the quote after the
//! label closes the literal the label sits in, so what follows is code, not a quoted
//! value. Counted from the label's line, within a bounded look back.

use std::ops::Range;

use regex::Captures;

/// `"token: " + getToken()`: whether the quote a quoted value (in `caps`, matched at
/// `offset` of `text`) starts with ends the string literal its label sits in, so that
/// what follows is code, not a value.
pub(crate) fn quote_ends_label_literal(
    text: &str,
    key: Range<usize>,
    caps: &Captures<'_>,
    offset: usize,
) -> bool {
    let Some(v) = caps.name("dq").or(caps.name("sq")).or(caps.name("bq")) else {
        return false;
    };
    (offset + v.start())
        .checked_sub(1)
        .and_then(|at| text.as_bytes().get(at))
        .is_some_and(|&quote| ends_label_literal(text, key, quote))
}

/// How far before a label [`ends_label_literal`] looks for its line's start.
const MAX_LITERAL_LOOKBACK: usize = 256;

/// Whether `quote`, the quote a value starts with, ends a string literal the label at
/// `key` sits in: an odd number of such quotes stands before the key on its line (not
/// counting escaped ones, nor an apostrophe between letters), and the key is not
/// itself quoted (no quote right after it, as in `"token": "…"`). Only a key within
/// [`MAX_LITERAL_LOOKBACK`] bytes of its line's start is judged.
fn ends_label_literal(text: &str, key: Range<usize>, quote: u8) -> bool {
    if !matches!(quote, b'"' | b'\'' | b'`') {
        return false;
    }
    let bytes = text.as_bytes();
    if bytes.get(key.end) == Some(&quote)
        || (bytes.get(key.end) == Some(&b'\\') && bytes.get(key.end + 1) == Some(&quote))
    {
        return false;
    }
    // The look back is bounded, so a long line of labels stays linear; a label further
    // than that from its line's start is not judged (its value is kept a value).
    let window = bytes
        .get(key.start.saturating_sub(MAX_LITERAL_LOOKBACK)..key.start)
        .unwrap_or_default();
    let line = match window.iter().rposition(|&b| b == b'\n') {
        Some(newline) => window.get(newline + 1..).unwrap_or_default(),
        None if key.start <= MAX_LITERAL_LOOKBACK => window,
        None => return false,
    };
    let mut open = false;
    for (i, &b) in line.iter().enumerate() {
        if b != quote || (i > 0 && line.get(i - 1) == Some(&b'\\')) {
            continue;
        }
        let between_letters = i > 0
            && line.get(i - 1).is_some_and(u8::is_ascii_alphanumeric)
            && line.get(i + 1).is_some_and(u8::is_ascii_alphanumeric);
        if !between_letters {
            open = !open;
        }
    }
    open
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_label_inside_a_string_literal_has_no_quoted_value_after_it() {
        // The quote after the label ends the literal the label is in: code follows.
        for text in [
            "sb.append(\"MasterUserPassword: \" + getMasterUserPassword() + \",\");",
            "sb.append(\"token: \" + getToken() + \",\");",
            "print('api_key=' + key_of(user) + '&x=1')",
            "log(`secret: ` + describe(s))",
        ] {
            assert!(crate::scrub(text).is_clean(), "{text}");
        }
        // A quoted key, a value in the other quote, an escaped quote and an apostrophe
        // in a word leave the value a value.
        for (text, secret) in [
            (
                "{\"token\": \"Zx9qL2mN8vB4kR7tY1wE\"}",
                "Zx9qL2mN8vB4kR7tY1wE",
            ),
            (
                "echo \"token: 'Zx9qL2mN8vB4kR7tY1wE'\"",
                "Zx9qL2mN8vB4kR7tY1wE",
            ),
            (
                "msg = \"the token: \\\"Zx9qL2mN8vB4kR7tY1wE\\\"\"",
                "Zx9qL2mN8vB4kR7tY1wE",
            ),
            (
                "Don't share the token: 'Zx9qL2mN8vB4kR7tY1wE'",
                "Zx9qL2mN8vB4kR7tY1wE",
            ),
            ("x = \"a\"; password = \"q8Vz!r2Lkx\"", "q8Vz!r2Lkx"),
        ] {
            let out = crate::scrub(text);
            assert!(!out.text.contains(secret), "{text} -> {}", out.text);
        }
    }
}
