//! Labelled values: `key <sep> value` where the key name says the value is secret.
//!
//! The labelled patterns have no literal prefix (the key can start anywhere), so they
//! are not run over the whole text. Instead their literal trigger (a secret word such
//! as `token` or `KEY`) is searched for; around each hit the key is delimited by hand,
//! checked word by word (`key_names`), and must be followed by a separator; only then
//! is the full pattern run, anchored at the start of the key, on the rest of the line.

use std::ops::Range;

use regex::{Captures, Regex};

use crate::key_names::classify_key;
use crate::merge::{Candidate, PRIORITY_KEYWORD};
use crate::redaction::{Keyword, RedactionKind};
use crate::value_filter::{ValueShape, is_non_secret_value};

/// Labelled values: for each trigger hit, walk back to the start of the key it is in
/// and try the anchored pattern there, on the rest of the line.
pub(crate) fn collect_labelled(
    text: &str,
    trigger: &Regex,
    anchored: &Regex,
    out: &mut Vec<Candidate>,
) {
    let bytes = text.as_bytes();
    let mut done_until = 0;
    // End of the line of the latest hit, found once per line (hits on a long line
    // must not each search for it again).
    let mut line_end = 0;
    for hit in trigger.find_iter(text) {
        if hit.start() < done_until {
            continue;
        }
        let is_key_byte = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-');
        let mut key_start = hit.start();
        while key_start > 0 && bytes.get(key_start - 1).is_some_and(is_key_byte) {
            key_start -= 1;
        }
        let mut key_end = hit.end();
        while bytes.get(key_end).is_some_and(is_key_byte) {
            key_end += 1;
        }
        done_until = key_end;
        // Cheap checks before the regex: the key must label a secret and be followed
        // by a separator.
        let key = text.get(key_start..key_end).unwrap_or_default();
        if classify_key(key).is_none()
            || !followed_by_separator(bytes, key_end, key.starts_with("--"))
        {
            continue;
        }
        if line_end < hit.end() {
            line_end = text
                .get(hit.end()..)
                .and_then(|after| after.find('\n'))
                .map_or(text.len(), |i| hit.end() + i);
        }
        let Some(rest) = text.get(key_start..line_end) else {
            continue;
        };
        if let Some(caps) = anchored.captures(rest) {
            if let Some(whole) = caps.get(0) {
                done_until = done_until.max(key_start + whole.end());
            }
            if let Some((range, keyword)) = labelled_value(rest, &caps) {
                out.push(Candidate {
                    range: range.start + key_start..range.end + key_start,
                    kind: RedactionKind::Keyword(keyword),
                    priority: PRIORITY_KEYWORD,
                });
            }
        }
    }
}

/// True when `pos` is followed by an optional (escaped) quote, blanks and `:` or `=`
/// — or, after a `--flag`, by a blank.
fn followed_by_separator(bytes: &[u8], mut pos: usize, is_flag: bool) -> bool {
    if bytes.get(pos) == Some(&b'\\') {
        pos += 1;
    }
    if matches!(bytes.get(pos), Some(b'"' | b'\'')) {
        pos += 1;
    }
    let blanks_from = pos;
    while matches!(bytes.get(pos), Some(b' ' | b'\t')) {
        pos += 1;
    }
    matches!(bytes.get(pos), Some(b':' | b'=')) || (is_flag && pos > blanks_from)
}

/// The secret value of a `key <sep> value` match, if the key labels a secret and the
/// value is not obviously harmless.
pub(crate) fn labelled_value(text: &str, caps: &Captures<'_>) -> Option<(Range<usize>, Keyword)> {
    let key = classify_key(caps.name("key")?.as_str())?;
    let (value, shape) = if let Some(v) = caps.name("dq").or(caps.name("sq")).or(caps.name("eq")) {
        (v, ValueShape::Quoted)
    } else {
        let v = caps.name("uv")?;
        let next = text.get(v.end()..).and_then(|rest| rest.chars().next());
        (v, ValueShape::Unquoted { next })
    };
    if is_non_secret_value(value.as_str(), key, shape) {
        return None;
    }
    let mut range = value.range();
    if matches!(shape, ValueShape::Unquoted { .. }) {
        range.end = extend_over_ampersands(text.as_bytes(), range.end);
    }
    Some((range, key.keyword))
}

/// A bare value stops at `&` (the next URL query parameter), but `Tr0ub4dor&3` in a
/// `.env` file is one password: extend over `&…` unless it starts a `name=` pair.
fn extend_over_ampersands(bytes: &[u8], mut end: usize) -> usize {
    let is_value_byte = |b: &u8| !b.is_ascii_whitespace() && !b"\"'`,;&[](){}<>\\".contains(b);
    while bytes.get(end) == Some(&b'&') {
        let mut segment_end = end + 1;
        while bytes.get(segment_end).is_some_and(is_value_byte) {
            segment_end += 1;
        }
        let segment = bytes.get(end + 1..segment_end).unwrap_or_default();
        let name_len = segment
            .iter()
            .take_while(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'[' | b']')
            })
            .count();
        let starts_pair = name_len > 0 && segment.get(name_len) == Some(&b'=');
        if starts_pair {
            break;
        }
        end = segment_end;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators() {
        assert!(followed_by_separator(b"key: v", 3, false));
        assert!(followed_by_separator(b"\"key\" = v", 4, false));
        assert!(followed_by_separator(br#"\"key\": v"#, 5, false));
        assert!(!followed_by_separator(b"key v", 3, false));
        assert!(followed_by_separator(b"--key v", 5, true));
        assert!(!followed_by_separator(b"--key\n", 5, true));
    }

    #[test]
    fn ampersands_inside_values_are_kept() {
        let text = b"a=Tr0ub4dor&3&more rest";
        assert_eq!(extend_over_ampersands(text, 11), 18);
        let query = b"t=abc&fields=id";
        assert_eq!(extend_over_ampersands(query, 5), 5);
        let tail = b"t=abc&";
        assert_eq!(extend_over_ampersands(tail, 5), 6);
    }
}
