//! Secrets wrapped over two lines: a key or token that a terminal, an editor or a
//! config generator broke in the middle (`API_KEY=sk-proj-abc…` / `…xyz`).
//!
//! At every line break where the line ends in a token-like run and the next line is
//! nothing but one such run (after indentation, before an optional closing quote or
//! comma), the two runs are joined. When the join is a well-known key format crossing
//! the break, or a high-entropy secret, both halves are redacted.

use std::ops::Range;

use crate::code_value::is_field_path;
use crate::entropy;
use crate::keyword_patterns::collect_builtins;
use crate::merge::{Candidate, PRIORITY_ENTROPY};
use crate::placeholder::is_placeholder;
use crate::redaction::RedactionKind;
use crate::word_shape::is_words;

/// Shortest first half considered.
const MIN_HEAD: usize = 8;
/// Shortest second half considered.
const MIN_TAIL: usize = 4;
/// Shortest join considered.
const MIN_JOINED: usize = 20;
/// Longest half considered.
const MAX_HALF: usize = 600;

/// Bytes of a wrapped run (`=` only as trailing padding of the second half).
#[inline]
fn is_wrap_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-' | b'.')
}

/// Pushes both halves of every secret wrapped over a line break in `text`.
pub(crate) fn collect(text: &str, out: &mut Vec<Candidate>) {
    let bytes = text.as_bytes();
    for newline in memchr::memchr_iter(b'\n', bytes) {
        let Some(head) = head_run(bytes, newline) else {
            continue;
        };
        let Some(tail) = tail_run(bytes, newline + 1) else {
            continue;
        };
        if head.len() + tail.len() < MIN_JOINED {
            continue;
        }
        if let (Some(a), Some(b)) = (text.get(head.clone()), text.get(tail.clone()))
            && let Some(kind) = joined_secret(a, b)
        {
            for range in [head.clone(), tail] {
                out.push(Candidate {
                    range,
                    kind: kind.clone(),
                    priority: PRIORITY_ENTROPY,
                });
            }
        }
    }
}

/// The run of token bytes ending the line that ends at `newline` (before any `\r`).
fn head_run(bytes: &[u8], newline: usize) -> Option<Range<usize>> {
    let mut end = newline;
    if end > 0 && bytes.get(end - 1) == Some(&b'\r') {
        end -= 1;
    }
    let mut start = end;
    while start > 0
        && end - start <= MAX_HALF
        && bytes.get(start - 1).is_some_and(|b| is_wrap_byte(*b))
    {
        start -= 1;
    }
    (end - start >= MIN_HEAD && end - start <= MAX_HALF).then_some(start..end)
}

/// The run of token bytes that is the whole line starting at `line_start`.
fn tail_run(bytes: &[u8], line_start: usize) -> Option<Range<usize>> {
    let mut start = line_start;
    while matches!(bytes.get(start), Some(b' ' | b'\t')) {
        start += 1;
    }
    let mut end = start;
    while bytes.get(end).is_some_and(|b| is_wrap_byte(*b)) && end - start <= MAX_HALF {
        end += 1;
    }
    if end - start < MIN_TAIL || end - start > MAX_HALF {
        return None;
    }
    while end - start < MAX_HALF + 2 && bytes.get(end) == Some(&b'=') {
        end += 1;
    }
    let mut after = end;
    if matches!(bytes.get(after), Some(b'"' | b'\'' | b',' | b';')) {
        after += 1;
    }
    if bytes.get(after) == Some(&b'\r') {
        after += 1;
    }
    matches!(bytes.get(after), None | Some(b'\n')).then_some(start..end)
}

/// The kind of secret `head + tail` is, if it is one that crosses the break.
fn joined_secret(head: &str, tail: &str) -> Option<RedactionKind> {
    // A half that alone stands for a secret (`sk_live_AAAA…` over `sk_test_BBBB…`,
    // two masked examples on two lines) is no half of a broken key: a generated key's
    // halves are random, and a masked value stays masked when its line is broken.
    if is_placeholder(head) || is_placeholder(tail) {
        return None;
    }
    let joined = format!("{head}{tail}");
    let mut found = Vec::new();
    if collect_builtins(&joined, &mut found).is_err() {
        // Fail closed: a pattern it needed did not compile.
        return Some(RedactionKind::Unverified);
    }
    let crossing = found
        .into_iter()
        .find(|c| c.range.start < head.len() && c.range.end > head.len());
    if let Some(candidate) = crossing {
        return Some(candidate.kind);
    }
    // A break after a `.` ends a sentence (`… by RFC6125.` / `Malformed,`), one
    // before a `.` goes on with a method chain (`SUITE_NAME` / `.quic`): two tokens,
    // not one broken in two.
    let at_dot = head.ends_with('.') || tail.starts_with('.');
    // A line that ends in a field path (`>>> tf2.is_strictly_proper`, `See Also:
    // sympy.geometry.point.Point`) ends in code; a next line that is one word
    // (`True`, `return`, `Point`) is a line of its own, and two halves that each read
    // as words (a type's name, then `attribute.`) are two words. A broken token has
    // none of these: its halves are random.
    // A number with a decimal point on either side (`+glaisher` / `1.2824271291…`, a
    // doctest's output) is a value printed on its own: no token is digits and dots.
    let separate = is_field_path(head)
        || is_lone_word(tail)
        || (is_words(head) && is_words(tail))
        || is_decimal(head)
        || is_decimal(tail);
    (!at_dot && !separate && entropy::looks_secret(&joined)).then_some(RedactionKind::HighEntropy)
}

/// A decimal number, maybe signed, maybe elided (`-0.3157184520538900`,
/// `3.14159265358979…216420199` written with `...`): digits and dots, one dot at least.
fn is_decimal(half: &str) -> bool {
    let digits = half.trim_start_matches(['+', '-']);
    digits.bytes().next().is_some_and(|b| b.is_ascii_digit())
        && digits.contains('.')
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// One word in lowercase or capitalised, perhaps ending a sentence (`True`, `return`,
/// `attribute.`): a random half of a base62 token is that regular by chance one time
/// in 16 at four characters, in 90 at six, in 500 at eight.
fn is_lone_word(tail: &str) -> bool {
    let word = tail.strip_suffix('.').unwrap_or(tail);
    let mut bytes = word.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic()) && bytes.all(|b| b.is_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn halves(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        collect(text, &mut out);
        out.iter().map(|c| &text[c.range.clone()]).collect()
    }

    #[test]
    fn wrapped_keys_are_found() {
        let text = "key:\nghp_16C7e42F292c\n6912E7710c838347Ae178B4a\n";
        assert_eq!(
            halves(text),
            ["ghp_16C7e42F292c", "6912E7710c838347Ae178B4a"]
        );
        let text = "API_KEY=Zx9qL2mN8vB4kR7t\n  Y1wE3uI6oP0aS5dF\"\n";
        assert_eq!(halves(text), ["Zx9qL2mN8vB4kR7t", "Y1wE3uI6oP0aS5dF"]);
    }

    #[test]
    fn a_decimal_number_is_no_half_of_a_token() {
        assert!(is_decimal(
            "1.282427129100622636875342568869791727767688927325"
        ));
        assert!(is_decimal("-0.31571845205389007685"));
        assert!(is_decimal(
            "3.141592653589793238462643383279502884...216420199"
        ));
        assert!(
            !is_decimal("1282427129100622636875"),
            "no dot: digits may end a token"
        );
        assert!(!is_decimal("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0"));
        assert!(!is_decimal("."));
        assert!(
            halves(">>> +glaisher\n1.282427129100622636875342568869791727767688927325\n")
                .is_empty()
        );
    }

    #[test]
    fn plain_lines_are_not_joined() {
        for text in [
            "parse_config_file\nRunning tests\n",
            "9fceb02d0ae598e95dc970b74767f19372d61af8\n1a2b3c4d5e6f7a8b9c0d\n",
            "see README.md\ndone\n",
            "NODE_ENV=production\nADMIN_PW=Admin.13\n",
            "_auth=ZGVwbG95Ojc0UXpWTW9KUWt3MUpFdWE1LTR6QXgxS1QyUF9nVA==\nalways-auth=true\n",
            "dGhlIHF1aWNrIGJyb3duIGZveCBq\ndW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==\n",
            "/// as specified in RFC9110.\n    HeaderFieldInvalid,\n",
            "    let x = CIPHER_SUITE_AES_GCM\n        .hkdf_provider\n",
            "        >>> tf2.is_strictly_proper\n        True\n",
            "    sympy.geometry.point.Point\n    sympy.geometry.line.Line2D\n",
            "    # see http://bugs.python.org/issue21876\n    return\n",
            "  value: A GoogleCloudAiplatformV1ExplanationMetadata\n    attribute.\n",
            "  see parseHttp2ResponseHeaders\n    andTrailersOnce\n",
            "STRIPE_KEY=sk_live_AAAAAAAAAAAAAAAAAAAAAAAA\nsk_test_BBBBBBBBBBBBBBBBBBBBBBBB\n",
            "token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n  Zx9qL2mN8vB4kR7t\n",
        ] {
            assert!(halves(text).is_empty(), "{text}");
        }
    }
}
