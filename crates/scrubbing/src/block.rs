//! Values that continue below their key's line: YAML values on the next line or in a
//! `|` / `>` block, YAML plain scalars folded over more-indented lines, and string
//! literals continued with `+` on the next line.

use std::ops::Range;

/// How far the checks around a key look back or ahead on its line: bounds the work
/// per trigger hit, so a huge single line with many hits stays linear.
pub(crate) const LOOK_AROUND: usize = 4096;

/// The start of the line holding byte `pos`, looking back at most [`LOOK_AROUND`]
/// bytes (a longer line is taken to start there).
pub(crate) fn line_start(text: &str, pos: usize) -> usize {
    let mut from = pos.saturating_sub(LOOK_AROUND);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    text.get(from..pos)
        .and_then(|before| before.rfind('\n'))
        .map_or(from, |i| from + i + 1)
}

/// At most the first [`LOOK_AROUND`] bytes of `text` (on a character boundary).
pub(crate) fn ahead(text: &str) -> &str {
    let mut end = text.len().min(LOOK_AROUND);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

/// The lines after `line_end` (the end of the key's line) indented deeper than the key
/// at `key_start`, as one range from the first to the last non-blank character.
///
/// In a block scalar (`is_block`) every such line belongs to the value. Otherwise
/// (a plain value on the next line, or a folded continuation) the value stops at a
/// line that looks like structure: `key:`, `key: value`, `- item` or `# comment`.
///
/// Only a key that begins its line is a mapping's key with a value below it: before
/// it, after the indentation, at most a list's `- ` and one word with no blank in it
/// (`- name`, `"password"`, `db.password`). A key after words (`if pwd:`,
/// `elif auth:`, `while token:`) ends a line of code, and the lines below are a block
/// of statements.
pub(crate) fn indented_block(
    text: &str,
    key_start: usize,
    line_end: usize,
    is_block: bool,
) -> Option<Range<usize>> {
    let start = line_start(text, key_start);
    let before_key = text.get(start..key_start).unwrap_or_default().trim_start();
    let before_key = before_key
        .strip_prefix("- ")
        .map_or(before_key, str::trim_start);
    if before_key.contains([' ', '\t']) {
        return None;
    }
    // The mapping's key starts with that word (`db.password`, `"password"`).
    let key_column = key_start - before_key.len() - start;
    let mut pos = line_end + 1;
    let mut block: Option<Range<usize>> = None;
    while let Some(rest) = text.get(pos..) {
        if rest.is_empty() {
            break;
        }
        let line = rest.split('\n').next().unwrap_or_default();
        let content = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - content.len();
        let content = content.trim_end();
        if content.is_empty() || indent <= key_column {
            break;
        }
        let structural = content.ends_with(':')
            || content.contains(": ")
            || content.starts_with("- ")
            || content.starts_with('#');
        if !is_block && structural {
            break;
        }
        let start = pos + indent;
        let end = start + content.len();
        block = Some(block.map_or(start..end, |b| b.start..end));
        pos += line.len() + 1;
    }
    block
}

/// Most string literals joined to a quoted value.
const MAX_CONTINUATIONS: usize = 16;

/// After a quoted value ending at `value_end` (its closing quote), the string literals
/// concatenated to it — `"abc" + "def"`, `"abc" . "def"`, `"abc" "def"` (adjacent
/// literals), or the same with the next literal on the next line — as the range from
/// the first continuation's contents to the last one's.
pub(crate) fn quoted_continuation(text: &str, value_end: usize) -> Option<Range<usize>> {
    let mut found: Option<Range<usize>> = None;
    let mut close = value_end;
    for _ in 0..MAX_CONTINUATIONS {
        let Some(next) = next_literal(text, close) else {
            break;
        };
        close = next.end;
        found = Some(found.map_or(next.clone(), |f| f.start..next.end));
    }
    found
}

/// The contents of the literal concatenated after the closing quote at `close`.
fn next_literal(text: &str, close: usize) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    let quote = *bytes.get(close)?;
    if !matches!(quote, b'"' | b'\'') {
        return None;
    }
    let skip = |mut pos: usize, set: &[u8]| {
        while bytes.get(pos).is_some_and(|b| set.contains(b)) {
            pos += 1;
        }
        pos
    };
    let mut pos = skip(close + 1, b" \t");
    let operator = matches!(bytes.get(pos), Some(b'+' | b'.' | b'\\'));
    if operator {
        pos = skip(pos + 1, b" \t\r");
    }
    let newline = bytes.get(pos) == Some(&b'\n');
    if newline {
        pos = skip(pos + 1, b" \t");
    }
    // Adjacent literals need a line break or an operator between them (`"a" "b"` on
    // one line is two arguments in a shell).
    if !(operator || newline) || bytes.get(pos) != Some(&quote) {
        return None;
    }
    let start = pos + 1;
    let len = ahead(text.get(start..)?).find([char::from(quote), '\n'])?;
    (len > 0 && bytes.get(start + len) == Some(&quote)).then_some(start..start + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<'a>(text: &'a str, key: &str, is_block: bool) -> Option<&'a str> {
        let key_start = text.find(key).unwrap();
        let line_end = text[key_start..].find('\n').unwrap() + key_start;
        indented_block(text, key_start, line_end, is_block).map(|r| &text[r])
    }

    #[test]
    fn next_line_and_block_values() {
        let text = "smtp:\n  password:\n    s3cr3t!\n  port: 587\n";
        assert_eq!(block(text, "password", false), Some("s3cr3t!"));
        let text = "key: |\n  line one\n  line: two\nnext: 1\n";
        assert_eq!(block(text, "key", true), Some("line one\n  line: two"));
        let text = "password:\nport: 1\n";
        assert_eq!(block(text, "password", false), None);
        let text = "password:\n  - a\n  - b\n";
        assert_eq!(block(text, "password", false), None);
        let text = "- password:\n    s3cr3t!\n";
        assert_eq!(block(text, "password", false), Some("s3cr3t!"));
        let text = "db.password:\n  s3cr3t!\n";
        assert_eq!(block(text, "password", false), Some("s3cr3t!"));
    }

    #[test]
    fn a_key_after_words_opens_a_block_of_code() {
        for (text, key) in [
            ("if pwd:\n    dir = os.path.join(pwd, dir)\n", "pwd"),
            ("    elif auth:\n        auth = unquote(auth)\n", "auth"),
            ("while token :\n    token = next_token()\n", "token"),
        ] {
            assert_eq!(block(text, key, false), None, "{text}");
        }
    }

    #[test]
    fn continued_literals() {
        let text = "k = \"abc\" +\n    \"def\";";
        assert_eq!(quoted_continuation(text, 8).map(|r| &text[r]), Some("def"));
        assert_eq!(quoted_continuation("k = \"abc\";\n\"x\"", 8), None);
        let text = "k = \"abc\" + \"def\" + \"ghi\";";
        assert_eq!(
            quoted_continuation(text, 8).map(|r| &text[r]),
            Some("def\" + \"ghi")
        );
        let text = "k = (\"abc\"\n     \"def\"\n     \"ghi\")";
        assert_eq!(
            quoted_continuation(text, 9).map(|r| &text[r]),
            Some("def\"\n     \"ghi")
        );
        assert_eq!(quoted_continuation("k = \"abc\" \"def\"", 8), None);
    }
}
