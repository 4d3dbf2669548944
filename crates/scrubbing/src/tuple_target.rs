//! Tuple assignments: in `user, password = "admin", "S3cret!"` the key's value is the
//! item at its own place on the right (`"S3cret!"`), not only the first one after the
//! `=` (`"admin"`), which the labelled layer reads as any key's value.

use std::ops::Range;

/// Most targets considered (a longer list is left to the usual reading).
const MAX_TARGETS: usize = 16;

/// The item of the right side that the key at `key_start` gets when the line's text
/// before it is a list of assignment targets (`a, self.b, `: names, fields and indexes
/// between commas) and the right side, from `value_start` to `line_end`, has one item
/// per target; `None` otherwise (the key is the only target, the right side is
/// unpacked from an expression, or the line is a call's keyword arguments).
pub(crate) fn own_item(
    text: &str,
    line_start: usize,
    key_start: usize,
    value_start: usize,
    line_end: usize,
) -> Option<Range<usize>> {
    let before = text.get(line_start..key_start)?;
    // The key's own target may start before the key (`self.password`).
    let before = before.trim_end_matches(is_target_char);
    let list = before.trim().strip_suffix(',')?;
    let earlier: Vec<&str> = list.split(',').map(str::trim).collect();
    if earlier.len() >= MAX_TARGETS || !earlier.iter().all(|target| is_target(target)) {
        return None;
    }
    let index = earlier.len();
    // `key, password=None, backend=_BACKEND`: keyword arguments, not values.
    let items = top_level_items(text.get(value_start..line_end)?)?;
    // The separator was found right after the key, so the key is the last target.
    if items.len() != index + 1 {
        return None;
    }
    let item = items.get(index)?;
    Some(value_start + item.start..value_start + item.end)
}

/// `user`, `self.password`, `cfg["db"]`, `$user`: a name, a field or an index.
fn is_target(target: &str) -> bool {
    target
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'$' | b'@'))
        && target.chars().all(is_target_char)
}

/// A character of a target: a name's, a field's or an index's.
fn is_target_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '"' | '\'' | '$' | '@')
}

/// The items of `right` between commas outside quotes and brackets, blanks trimmed,
/// up to a comment (`#`, `//`) or a `;` outside them; `None` when an `=` stands
/// outside them (`a=1, b=2`: a call's keyword arguments, not values).
fn top_level_items(right: &str) -> Option<Vec<Range<usize>>> {
    let bytes = right.as_bytes();
    let mut items = Vec::new();
    let (mut depth, mut quote, mut start) = (0usize, None::<u8>, 0usize);
    let mut end = bytes.len();
    let mut at = 0;
    while let Some(&b) = bytes.get(at) {
        match quote {
            Some(_) if b == b'\\' => at += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'"' | b'\'' | b'`' => quote = Some(b),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                b',' if depth == 0 => {
                    items.push(start..at);
                    start = at + 1;
                }
                b'#' | b';' if depth == 0 => {
                    end = at;
                    break;
                }
                b'/' if depth == 0 && bytes.get(at + 1) == Some(&b'/') => {
                    end = at;
                    break;
                }
                b'=' if depth == 0 => {
                    let before = at.checked_sub(1).and_then(|i| bytes.get(i));
                    let compares = matches!(before, Some(b'=' | b'!' | b'<' | b'>'))
                        || bytes.get(at + 1) == Some(&b'=');
                    if !compares {
                        return None;
                    }
                }
                _ => {}
            },
        }
        at += 1;
    }
    items.push(start..end.max(start));
    let items = items
        .into_iter()
        .filter_map(|range| {
            let item = right.get(range.clone())?;
            let lead = item.len() - item.trim_start().len();
            let trimmed = item.trim();
            (!trimmed.is_empty()).then(|| range.start + lead..range.start + lead + trimmed.len())
        })
        .collect();
    Some(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(line: &str, key: &str) -> Option<String> {
        let key_start = line.find(key).unwrap();
        let eq = line[key_start..].find('=').unwrap() + key_start;
        let value_start = eq + 1 + line[eq + 1..].len() - line[eq + 1..].trim_start().len();
        own_item(line, 0, key_start, value_start, line.len()).map(|range| line[range].to_owned())
    }

    #[test]
    fn each_target_gets_its_own_item() {
        assert_eq!(
            value(r#"user, password = "wile", "coyote""#, "password").as_deref(),
            Some("\"coyote\"")
        );
        assert_eq!(
            value(
                "    self.user, self.password = user, password",
                "password ="
            )
            .as_deref(),
            Some("password")
        );
        assert_eq!(
            value(r#"a, b, token := f(x, y), "Zx9q,L2", 'k' // why"#, "token").as_deref(),
            Some("'k'")
        );
    }

    #[test]
    fn a_key_alone_unpacking_or_in_prose_or_a_call_has_no_item_of_its_own() {
        for (line, key) in [
            ("password = 'x', 'y'", "password"),
            ("login(user, password = 'x')", "password"),
            ("if a, password = b", "password"),
            ("    key, password=None, backend=_BACKEND", "password"),
            ("username, password = split", "password"),
            ("audited, password=hunter2-very-secret", "password"),
        ] {
            assert_eq!(value(line, key), None, "{line}");
        }
    }
}
