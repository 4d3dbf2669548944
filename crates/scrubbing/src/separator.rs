//! The separator between a key and its value, in the syntaxes of the languages and
//! file formats that assign values:
//!
//! - `:`, `=`, `=>`, `:=` (YAML, INI, shell, JSON, Ruby/Perl/Logstash hashes, Go);
//! - Make's `::=`, `:::=`, `?=` and `+=`, PHP's `.=`;
//! - a typed declaration: Go's `var key string = …`, and an annotation before `=`
//!   (`key: string = …` in TypeScript, Kotlin, Python);
//! - after a `--flag`, blanks alone.
//!
//! `token == x` (a comparison), `token != x` and `token_counter::estimate` (a path) have
//! no separator.

/// Longest type name accepted in a typed declaration (`var key string = …`).
const MAX_TYPE_LEN: usize = 48;

/// Where the value starts after the key ending at `key_end`: past an optional
/// (escaped) closing quote of the key, the separator and the blanks after it. `None`
/// when no separator follows the key.
pub(crate) fn value_start(bytes: &[u8], key_end: usize, is_flag: bool) -> Option<usize> {
    separate(bytes, key_end, is_flag).map(|(start, _)| start)
}

/// True when an unquoted key is glued to its value by a bare `:` (`a:b`): the form of
/// references and coordinates (`io.jsonwebtoken:jjwt-jackson`, `image:tag`) more
/// than of labels.
pub(crate) fn is_tight_colon(bytes: &[u8], key_end: usize) -> bool {
    bytes.get(key_end) == Some(&b':')
        && !matches!(
            bytes.get(key_end + 1),
            Some(b' ' | b'\t' | b'=' | b':') | None
        )
}

fn separate(bytes: &[u8], key_end: usize, is_flag: bool) -> Option<(usize, bool)> {
    let mut pos = key_end;
    let mut backslashes = 0;
    // `\"key\"`, `\\\"key\\\"`: JSON inside (JSON inside) a JSON string.
    while bytes.get(pos) == Some(&b'\\') && backslashes < MAX_ESCAPES {
        pos += 1;
        backslashes += 1;
    }
    if matches!(bytes.get(pos), Some(b'"' | b'\'')) {
        pos += 1;
    } else if backslashes > 0 {
        return None;
    }
    // `char secret[25] = "…"`: a C array's length.
    if bytes.get(pos) == Some(&b'[') {
        let digits = bytes
            .get(pos + 1..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if bytes.get(pos + 1 + digits) == Some(&b']') {
            pos += digits + 2;
        }
    }
    let blanks_from = pos;
    pos = skip_blanks(bytes, pos);
    let blank_before = pos > blanks_from;
    // `if (api_key == "…")`: a comparison with a string literal is a hard-coded secret.
    if let Some(len) = comparison(bytes, pos) {
        let after = skip_blanks(bytes, pos + len);
        return matches!(bytes.get(after), Some(b'"' | b'\'')).then_some((after, false));
    }
    if let Some(len) = operator(bytes, pos) {
        let after = skip_blanks(bytes, pos + len);
        let tight = pos == key_end && is_tight_colon(bytes, key_end);
        // `key: Type = value`: the annotation is not the value.
        if len == 1
            && bytes.get(pos) == Some(&b':')
            && let Some(end) = typed_assignment(bytes, after)
        {
            return Some((end, false));
        }
        return Some((after, tight));
    }
    // `var key string = value`: a type name between the key and `=`.
    if blank_before && let Some(end) = typed_assignment(bytes, pos) {
        return Some((end, false));
    }
    (is_flag && blank_before).then_some((pos, false))
}

/// Most backslashes before a key's closing quote (JSON escaped twice is `\\\"`).
const MAX_ESCAPES: usize = 7;

/// The length of the assignment operator at `pos`, if there is one.
fn operator(bytes: &[u8], pos: usize) -> Option<usize> {
    let at = |i: usize| bytes.get(pos + i).copied();
    let len = match (at(0), at(1), at(2), at(3)) {
        (Some(b':'), Some(b':'), Some(b':'), Some(b'=')) => 4,
        (Some(b':'), Some(b':'), Some(b'='), _) => 3,
        (Some(b':' | b'?' | b'.' | b'+'), Some(b'='), _, _) => 2,
        (Some(b'='), Some(b'>'), _, _) => 2,
        // `::` is a path, `==` a comparison.
        (Some(b':'), Some(b':'), _, _) | (Some(b'='), Some(b'='), _, _) => return None,
        (Some(b':' | b'='), _, _, _) => 1,
        _ => return None,
    };
    // `key := = x` or `key ?== x` is not an assignment.
    (len == 1 || at(len) != Some(b'=')).then_some(len)
}

/// The length of a comparison operator at `pos` (`==`, `!=`, `===`, `!==`).
fn comparison(bytes: &[u8], pos: usize) -> Option<usize> {
    let rest = bytes.get(pos..)?;
    ["===", "!==", "==", "!="]
        .iter()
        .find(|op| rest.starts_with(op.as_bytes()))
        .map(|op| op.len())
}

/// `Type = ` at `pos` (a type name, blanks, a single `=`): the position after the
/// `=` and the blanks after it.
fn typed_assignment(bytes: &[u8], pos: usize) -> Option<usize> {
    let first = *bytes.get(pos)?;
    if !(first.is_ascii_alphabetic() || matches!(first, b'_' | b'*' | b'[')) {
        return None;
    }
    let mut end = pos;
    while bytes.get(end).is_some_and(|b| {
        b.is_ascii_alphanumeric()
            || matches!(b, b'_' | b'.' | b'*' | b'[' | b']' | b'<' | b'>' | b'?')
    }) {
        end += 1;
        if end - pos > MAX_TYPE_LEN {
            return None;
        }
    }
    // A blank before the `=`: `YWJj=` is base64 padding, not `Type =`.
    let eq = skip_blanks(bytes, end);
    let is_assign =
        eq > end && bytes.get(eq) == Some(&b'=') && !matches!(bytes.get(eq + 1), Some(b'=' | b'>'));
    is_assign.then(|| skip_blanks(bytes, eq + 1))
}

fn skip_blanks(bytes: &[u8], mut pos: usize) -> usize {
    while matches!(bytes.get(pos), Some(b' ' | b'\t')) {
        pos += 1;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value after the key `key` in `text`.
    fn value(text: &str, is_flag: bool) -> Option<&str> {
        let key_end = text.find("key").unwrap() + 3;
        value_start(text.as_bytes(), key_end, is_flag).map(|i| &text[i..])
    }

    #[test]
    fn assignment_syntaxes() {
        for (text, expected) in [
            ("key: v", "v"),
            ("key=v", "v"),
            ("\"key\" = v", "v"),
            (r#"\"key\": v"#, "v"),
            ("key => v", "v"),
            ("key := v", "v"),
            ("key ::= v", "v"),
            ("key :::= v", "v"),
            ("key ?= v", "v"),
            ("$key .= \"v\"", "\"v\""),
            ("key += v", "v"),
            ("var key string = \"v\"", "\"v\""),
            ("const key []byte = v", "v"),
            ("let key: string = \"v\"", "\"v\""),
            ("key: Option<String> = v", "v"),
            ("key := `v`", "`v`"),
            ("key: YWJj= x", "YWJj= x"),
            (r#"\\\"key\\\": \\\"v"#, r#"\\\"v"#),
            ("char key[25] = \"v\"", "\"v\""),
            ("if (key == \"v\")", "\"v\")"),
            ("if (key !== 'v')", "'v')"),
        ] {
            assert_eq!(value(text, false), Some(expected), "{text}");
        }
        assert_eq!(value("--key v", true), Some("v"));
        assert_eq!(value("--key=v", true), Some("v"));
    }

    #[test]
    fn no_separator() {
        for text in [
            "key v",
            "key::estimate",
            "key == x",
            "key != null",
            "key != x",
            "key string",
            "key string == x",
            "key :== x",
        ] {
            assert_eq!(value(text, false), None, "{text}");
        }
        assert_eq!(value("--key\n", true), None);
    }

    #[test]
    fn tight_colons() {
        assert!(is_tight_colon(b"io.jsonwebtoken:jjwt", 15));
        assert!(!is_tight_colon(b"token: abc", 5));
        assert!(!is_tight_colon(b"token:", 5));
        assert!(!is_tight_colon(b"token:=abc", 5));
    }
}
