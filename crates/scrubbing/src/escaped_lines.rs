//! Text whose line breaks and tabs are escaped (`\n`, `\r`, `\t`): a JSON string, a
//! log line, a tool's output printed as a literal. Read as it is, the letter of the
//! escape sticks to what follows (`…\nAKIA…` reads `nAKIA…`, and no pattern that wants
//! a key to start a word finds it), and a YAML value or a PEM block inside the string
//! is one long line. So the scan reads a copy with each such escape turned into blanks
//! and a real line break, of the same length: every range found there holds for the
//! original text, and the escapes themselves are never part of a redaction.

/// A copy of `text` with `\n` made a blank and a line break and `\r`, `\t` two blanks,
/// the same length as `text`; `None` when it holds no such escape. An escaped
/// backslash (`\\n`, a literal backslash and `n`) is left as it is.
pub(crate) fn with_escapes_opened(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut opened: Option<Vec<u8>> = None;
    let mut at = memchr::memchr(b'\\', bytes)?;
    loop {
        match bytes.get(at + 1) {
            Some(b'\\') => at += 2,
            Some(escape @ (b'n' | b'r' | b't')) => {
                let copy = opened.get_or_insert_with(|| bytes.to_vec());
                if let Some(pair) = copy.get_mut(at..at + 2) {
                    pair.copy_from_slice(if *escape == b'n' { b" \n" } else { b"  " });
                }
                at += 2;
            }
            _ => at += 1,
        }
        match bytes.get(at..).and_then(|rest| memchr::memchr(b'\\', rest)) {
            Some(next) => at += next,
            None => break,
        }
    }
    // Only ASCII bytes were replaced by ASCII bytes: the copy is still UTF-8.
    opened.and_then(|copy| String::from_utf8(copy).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_open_to_blanks_and_line_breaks_of_the_same_length() {
        let text = r#"{"out": "a\nAKIA\tb\r\nc"}"#;
        let opened = with_escapes_opened(text).unwrap();
        assert_eq!(opened, "{\"out\": \"a \nAKIA  b   \nc\"}");
        assert_eq!(opened.len(), text.len());
    }

    #[test]
    fn escaped_backslashes_and_text_without_escapes_are_left() {
        assert_eq!(with_escapes_opened("plain text"), None);
        assert_eq!(with_escapes_opened(r"C:\\new\\tools"), None);
        assert_eq!(with_escapes_opened(r#"a \d+ b \"q\" \"#), None);
        assert_eq!(
            with_escapes_opened(r"C:\\new\nx").as_deref(),
            Some("C:\\\\new \nx")
        );
        assert_eq!(with_escapes_opened("é\\tü").as_deref(), Some("é  ü"));
    }
}
