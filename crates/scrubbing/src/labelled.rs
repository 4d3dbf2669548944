//! Labelled values: `key <sep> value` where the key name says the value is secret.
//!
//! The labelled patterns have no literal prefix (the key can start anywhere), so they
//! are not run over the whole text. Instead their literal trigger (a secret word such
//! as `token`, `pass` or `KEY`) is searched for; around each hit the key is delimited
//! by hand and checked word by word (`key_names`). Then, by what follows the key:
//!
//! - a separator (`:`, `=`, `::=`, `var key string =`, …; see `separator`): the value
//!   pattern is run, anchored after the separator, on the rest of the line. A `Cookie:` header gives each cookie's value; an
//!   empty value or a YAML block indicator (`|`, `>-`) takes the more-indented lines
//!   below (`block`);
//! - markup or a name/value pair (`<password>…</password>`, `name="password"
//!   value="…"`, `{"name": "db_password", "value": "…"}`): see `markup`;
//! - prose (`the admin password is …`): see `prose`.

use std::ops::Range;

use regex::{Captures, Regex};

use crate::block::{indented_block, quoted_continuation};
use crate::key_names::{KeyInfo, classify_in_context, classify_key};
use crate::markup::markup_value;
use crate::merge::{Candidate, PRIORITY_KEYWORD};
use crate::prose::prose_value;
use crate::redaction::{Keyword, RedactionKind};
use crate::separator::{is_tight_colon, value_start};
use crate::value_filter::{ValueShape, is_identifier_like, is_non_secret_value, is_prose};

/// Labelled values: for each trigger hit, walk back to the start of the key it is in
/// and look at what follows the key. Markup, pairs and prose are looked for only when
/// `unseparated` (by one of the two labelled patterns).
pub(crate) fn collect_labelled(
    text: &str,
    trigger: &Regex,
    anchored: &Regex,
    unseparated: bool,
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
        // Cheap checks before any regex: the flag pattern wants a `--flag`, and the
        // key must label a secret.
        let key = text.get(key_start..key_end).unwrap_or_default();
        if !unseparated && !key.starts_with("--") {
            continue;
        }
        let Some(info) = classify(text, key_start, key) else {
            continue;
        };
        if line_end < hit.end() {
            line_end = text
                .get(hit.end()..)
                .and_then(|after| after.find('\n'))
                .map_or(text.len(), |i| hit.end() + i);
        }
        let mut found = Vec::new();
        if let Some(value_start) = value_start(bytes, key_end, key.starts_with("--"))
            && value_start <= line_end
        {
            separated_values(
                text,
                SeparatedKey {
                    key_start,
                    key_end,
                    value_start,
                    line_end,
                },
                anchored,
                info,
                &mut found,
            );
        } else if !unseparated {
            continue;
        } else if let Some(range) = markup_value(text, key_start, key_end, info) {
            found.push(range);
        } else if let Some(range) = prose_value(text, key_end, line_end, info) {
            found.push(range);
        }
        for range in found {
            done_until = done_until.max(range.end);
            out.push(Candidate {
                range,
                kind: RedactionKind::Keyword(info.keyword),
                priority: PRIORITY_KEYWORD,
            });
        }
    }
}

/// Where a separated key and its value are.
#[derive(Debug, Clone, Copy)]
struct SeparatedKey {
    key_start: usize,
    key_end: usize,
    /// After the separator and the blanks after it.
    value_start: usize,
    line_end: usize,
}

/// The values of `key <sep> …`: a cookie header's values, the inline value (with its
/// continuation lines), or the indented block below an empty value.
fn separated_values(
    text: &str,
    at: SeparatedKey,
    value: &Regex,
    info: KeyInfo,
    found: &mut Vec<Range<usize>>,
) {
    let SeparatedKey {
        key_start,
        key_end,
        value_start,
        line_end,
    } = at;
    let key = text.get(key_start..key_end).unwrap_or_default();
    if is_cookie_header(key) {
        cookie_values(text, key_end, line_end, key.len() > "cookie".len(), found);
        return;
    }
    let Some(rest) = text.get(value_start..line_end) else {
        return;
    };
    if let Some(caps) = value.captures(rest)
        && let Some((range, _)) =
            labelled_value_with(rest, &caps, info, is_tight_colon(text.as_bytes(), key_end))
    {
        let range = range.start + value_start..range.end + value_start;
        let quoted = caps.name("uv").is_none();
        let after = text.get(range.end..line_end).unwrap_or_default();
        if quoted {
            if let Some(next) = quoted_continuation(text, range.end) {
                found.push(next);
            }
        } else if after.trim().is_empty()
            && let Some(block) = indented_block(text, key_start, line_end, false)
            && text
                .get(block.clone())
                .is_some_and(|b| !b.contains([' ', '\t']))
        {
            found.push(range.start..block.end);
            return;
        }
        found.push(range);
        return;
    }
    // Nothing (or only a YAML block indicator) after the separator: the value is on
    // the lines below.
    let after_sep = rest.trim();
    let is_block = matches!(after_sep, "|" | "|-" | "|+" | ">" | ">-" | ">+");
    if (after_sep.is_empty() || is_block)
        && let Some(block) = indented_block(text, key_start, line_end, is_block)
        && let Some(value) = text.get(block.clone())
    {
        let value = value.trim_matches(['"', '\'']);
        let shape = if is_block {
            ValueShape::Quoted
        } else {
            ValueShape::Unquoted { next: None }
        };
        if !is_non_secret_value(value, info, shape) {
            found.push(block);
        }
    }
}

/// A cookie's value is secret only when it looks like data (`theme=dark` is not).
const COOKIE: KeyInfo = KeyInfo {
    keyword: Keyword::Cookie,
    is_pwd: false,
    encoded: false,
    weak: true,
};

/// `Cookie:` / `Set-Cookie:` headers.
fn is_cookie_header(key: &str) -> bool {
    key.eq_ignore_ascii_case("cookie") || key.eq_ignore_ascii_case("set-cookie")
}

/// The values of a `Cookie:` header's `name=value` pairs; of a `Set-Cookie:` header,
/// only the first pair (the rest are attributes such as `Path=/`).
fn cookie_values(
    text: &str,
    key_end: usize,
    line_end: usize,
    set_cookie: bool,
    found: &mut Vec<Range<usize>>,
) {
    let Some(header) = text.get(key_end..line_end) else {
        return;
    };
    let Some(colon) = header.find(':') else {
        return;
    };
    let mut offset = key_end + colon + 1;
    let body = header.get(colon + 1..).unwrap_or_default();
    for pair in body.split(';') {
        if let Some(eq) = pair.find('=') {
            let value = pair.get(eq + 1..).unwrap_or_default();
            let trimmed = value.trim_end_matches(['\r', ' ', '\'', '"']);
            // A cookie value has no blanks, quotes or backticks: otherwise this is
            // prose that mentions a `Cookie:` header.
            if trimmed.contains([' ', '\t', '"', '\'', '`', '\\']) {
                break;
            }
            let start = offset + eq + 1;
            // A session cookie (`sid`, `PHPSESSID`, `auth`, `remember_token`) is
            // secret whatever it looks like; another only when it looks like data.
            let name = pair.get(..eq).unwrap_or_default().trim();
            let lower = name.to_ascii_lowercase();
            let session = lower.contains("sid") || lower.contains("sess");
            let info = match classify_key(name) {
                Some(info) => KeyInfo {
                    weak: false,
                    ..info
                },
                None if session => KeyInfo {
                    weak: false,
                    ..COOKIE
                },
                None => COOKIE,
            };
            if !is_non_secret_value(trimmed, info, ValueShape::Quoted) {
                found.push(start..start + trimmed.len());
            }
        }
        if set_cookie {
            break;
        }
        offset += pair.len() + 1;
    }
}

/// The secret value of a `key <sep> value` match, if the key labels a secret and the
/// value is not obviously harmless.
pub(crate) fn labelled_value(text: &str, caps: &Captures<'_>) -> Option<(Range<usize>, Keyword)> {
    let key = caps.name("key")?.as_str();
    let start = caps.name("key")?.start();
    let info = classify(text, start, key)?;
    let tight = is_tight_colon(text.as_bytes(), caps.name("key")?.end());
    labelled_value_with(text, caps, info, tight)
}

/// What the key at `key_start` says about its value: by its own words, else by its
/// context (`?key=`, `API key:`), else as a bare `key` that takes key material.
fn classify(text: &str, key_start: usize, key: &str) -> Option<KeyInfo> {
    let own = classify_key(key);
    own.filter(|info| !info.encoded)
        .or_else(|| classify_in_context(text, key_start, key))
        .or(own)
}

fn labelled_value_with(
    text: &str,
    caps: &Captures<'_>,
    info: KeyInfo,
    tight: bool,
) -> Option<(Range<usize>, Keyword)> {
    let quoted = caps
        .name("dq")
        .or(caps.name("sq"))
        .or(caps.name("eq"))
        .or(caps.name("bq"));
    if let Some(v) = quoted {
        let close = text.as_bytes().get(v.end()).copied();
        let after_close = text.as_bytes().get(v.end() + 1).copied();
        // `"<xsd:element name="Agency…`: a quote followed by a letter did not close a
        // string; and a backtick string with a blank is a command substitution.
        if after_close.is_some_and(|b| b.is_ascii_alphanumeric())
            || (close == Some(b'`') && v.as_str().contains([' ', '\t']))
        {
            return None;
        }
    }
    let (value, shape) = if let Some(v) = quoted {
        (v, ValueShape::Quoted)
    } else {
        let v = caps.name("uv")?;
        let next = text.get(v.end()..).and_then(|rest| rest.chars().next());
        (v, ValueShape::Unquoted { next })
    };
    if is_non_secret_value(value.as_str(), info, shape) {
        return None;
    }
    if matches!(shape, ValueShape::Unquoted { .. })
        && is_prose(value.as_str(), text.get(value.end()..).unwrap_or_default())
    {
        return None;
    }
    if tight && is_identifier_like(value.as_str()) {
        return None;
    }
    let mut range = value.range();
    if matches!(shape, ValueShape::Unquoted { .. }) {
        range.end = extend_over_ampersands(text.as_bytes(), range.end);
    }
    Some((range, info.keyword))
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
    fn ampersands_inside_values_are_kept() {
        let text = b"a=Tr0ub4dor&3&more rest";
        assert_eq!(extend_over_ampersands(text, 11), 18);
        let query = b"t=abc&fields=id";
        assert_eq!(extend_over_ampersands(query, 5), 5);
        let tail = b"t=abc&";
        assert_eq!(extend_over_ampersands(tail, 5), 6);
    }

    #[test]
    fn cookie_header_values() {
        let text = "Cookie: theme=dark; sessionid=abc123xyz; csrf=Zx9qL2mN; sid=battery\r\n";
        let mut found = Vec::new();
        cookie_values(text, 6, text.len() - 2, false, &mut found);
        let values: Vec<&str> = found.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(values, ["abc123xyz", "Zx9qL2mN", "battery"]);
        let text = "Set-Cookie: sid=abc123; Path=/; HttpOnly";
        let mut found = Vec::new();
        cookie_values(text, 10, text.len(), true, &mut found);
        assert_eq!(found.len(), 1);
        assert_eq!(&text[found[0].clone()], "abc123");
        let text = "`Cookie:` redacts the value of each `name=value` pair that looks like";
        let mut found = Vec::new();
        cookie_values(text, 7, text.len(), false, &mut found);
        assert!(found.is_empty(), "{found:?}");
    }
}
