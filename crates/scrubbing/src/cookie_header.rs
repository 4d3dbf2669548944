//! `Cookie:` and `Set-Cookie:` headers: which of their `name=value` pairs hold a
//! secret (a session cookie always; another when its value looks like data).

use std::ops::Range;

use crate::key_names::{KeyInfo, classify_key};
use crate::redaction::Keyword;
use crate::value_filter::{ValueShape, is_non_secret_value};

/// A cookie's value is secret only when it looks like data (`theme=dark` is not).
const COOKIE: KeyInfo = KeyInfo {
    keyword: Keyword::Cookie,
    is_pwd: false,
    encoded: false,
    weak: true,
};

/// `Cookie:` / `Set-Cookie:` headers.
pub(crate) fn is_cookie_header(key: &str) -> bool {
    key.eq_ignore_ascii_case("cookie") || key.eq_ignore_ascii_case("set-cookie")
}

/// The values of a `Cookie:` header's `name=value` pairs; of a `Set-Cookie:` header,
/// only the first pair (the rest are attributes such as `Path=/`).
pub(crate) fn cookie_values(
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

#[cfg(test)]
mod tests {
    use super::*;

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
