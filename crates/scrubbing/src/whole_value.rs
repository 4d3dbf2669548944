//! A value is redacted whole: a high-entropy run found by the entropy scan is
//! extended over the pieces joined to it (`SG.-4ajvzb=…=hj1o519iw`, `hvs.…`,
//! `qpF8Q~…`), so no part of it survives next to the marker.

use crate::word_shape::{is_run_byte, is_words};

/// A piece the whole-value extension stops at: part of a path or URL (it holds `/`),
/// or a lowercase word of 5+ letters (`byteimg`, `image`: a host's or file's name).
fn is_host_or_path_piece(piece: &[u8]) -> bool {
    piece.contains(&b'/')
        || (piece.len() > 4 && piece.iter().all(|b| b.is_ascii_lowercase() || *b == b'-'))
}

/// How far a secret is extended over joined pieces, each way (bytes).
pub(crate) const MAX_EXTEND: usize = 256;

/// A value is redacted whole: a high-entropy run at `start..end` is extended over the
/// pieces joined to it by `.`, `~`, `%` or an inner `=` (`SG.xxx.yyy`, `hvs.…`,
/// `qpF8Q~…`, `…=u6pimyvp=5hi_…`), so none of its characters survive next to the
/// marker. On the left an `=` stops the extension when the piece before it is made of
/// words: that is a label (`key=…`), not part of the value.
pub(crate) fn whole_value(bytes: &[u8], mut start: usize, mut end: usize) -> (usize, usize) {
    let (left_limit, right_limit) = (start.saturating_sub(MAX_EXTEND), end + MAX_EXTEND);
    // A backslash joins too, unless it starts an escape (`\n`, `\"`, `\u00…`).
    let joins_right = |end: usize| match bytes.get(end) {
        Some(b'.' | b'~' | b'%' | b'=') => true,
        Some(b'\\') => !matches!(
            bytes.get(end + 1),
            Some(b'n' | b't' | b'r' | b'u' | b'x' | b'0' | b'"' | b'\'' | b'\\' | b'/')
        ),
        _ => false,
    };
    // What looked like base64 padding (`…uI6=`) is an inner `=` when a piece follows.
    while end > start + 1
        && bytes.get(end - 1) == Some(&b'=')
        && bytes.get(end).is_some_and(|b| is_run_byte(*b))
    {
        end -= 1;
    }
    while end < right_limit
        && joins_right(end)
        && bytes.get(end + 1).is_some_and(|b| is_run_byte(*b))
    {
        let mut piece_end = end + 1;
        while piece_end < right_limit && bytes.get(piece_end).is_some_and(|b| is_run_byte(*b)) {
            piece_end += 1;
        }
        if is_host_or_path_piece(bytes.get(end + 1..piece_end).unwrap_or_default()) {
            break;
        }
        end = piece_end;
    }
    while start > left_limit + 1 {
        let Some(&joiner) = bytes.get(start - 1) else {
            break;
        };
        if !matches!(joiner, b'.' | b'~' | b'%' | b'=')
            || !bytes.get(start - 2).is_some_and(|b| is_run_byte(*b))
        {
            break;
        }
        let mut piece_start = start - 1;
        while piece_start > left_limit
            && bytes.get(piece_start - 1).is_some_and(|b| is_run_byte(*b))
        {
            piece_start -= 1;
        }
        let piece = std::str::from_utf8(bytes.get(piece_start..start - 1).unwrap_or_default())
            .unwrap_or_default();
        // `--password=…`, `-e KEY=…`: a flag's name is a label too.
        let is_label = piece
            .trim_start_matches('-')
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && is_words(piece);
        if (joiner == b'=' && is_label) || is_host_or_path_piece(piece.as_bytes()) {
            // A word after a token type's short prefix (`dp.audit.…`) is the value's
            // own type name, not a host's or file's.
            match typed_prefix_start(bytes, piece_start, left_limit) {
                Some(prefix_start) if joiner == b'.' && !piece.contains('/') => {
                    start = prefix_start;
                }
                _ => {}
            }
            break;
        }
        start = piece_start;
    }
    (start, end)
}

/// Longest prefix a token type starts with before its type name (`dp` of `dp.audit.`).
const MAX_TYPE_PREFIX: usize = 4;

/// Where a token's type prefix starts when the piece at `piece_start` follows one: a
/// `.` and before it 1–[`MAX_TYPE_PREFIX`] letters or digits that begin the value (no
/// run byte or joiner before them), as in `dp.audit.<random>` or `dp.scim.<random>`.
fn typed_prefix_start(bytes: &[u8], piece_start: usize, left_limit: usize) -> Option<usize> {
    let dot = piece_start.checked_sub(1)?;
    if bytes.get(dot) != Some(&b'.') {
        return None;
    }
    let mut prefix_start = dot;
    while prefix_start > left_limit
        && bytes
            .get(prefix_start - 1)
            .is_some_and(u8::is_ascii_alphanumeric)
    {
        prefix_start -= 1;
    }
    let len = dot - prefix_start;
    let begins_value = prefix_start == 0
        || bytes
            .get(prefix_start - 1)
            .is_some_and(|b| !is_run_byte(*b) && !matches!(b, b'.' | b'~' | b'%'));
    ((1..=MAX_TYPE_PREFIX).contains(&len) && begins_value).then_some(prefix_start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_extended_over_its_joined_pieces() {
        let whole = |text: &str, piece: &str| {
            let start = text.find(piece).unwrap();
            let (s, e) = whole_value(text.as_bytes(), start, start + piece.len());
            text[s..e].to_owned()
        };
        assert_eq!(
            whole(
                "t hvs.CAESIP2jTxc9S2K7Z6CtcFWQv7-044m done",
                "CAESIP2jTxc9S2K7Z6CtcFWQv7-044m"
            ),
            "hvs.CAESIP2jTxc9S2K7Z6CtcFWQv7-044m"
        );
        assert_eq!(
            whole(
                "'dO29Q~F5-VwnW.lZdd11xFF_t5NAXCaGwDl9NbT1'",
                "lZdd11xFF_t5NAXCaGwDl9NbT1"
            ),
            "dO29Q~F5-VwnW.lZdd11xFF_t5NAXCaGwDl9NbT1"
        );
        assert_eq!(
            whole(
                "x SG.-4ajvzb=Zx9qL2mN8vB4kR7tY1wE3uI6=hj1o519iw y",
                "Zx9qL2mN8vB4kR7tY1wE3uI6"
            ),
            "SG.-4ajvzb=Zx9qL2mN8vB4kR7tY1wE3uI6=hj1o519iw"
        );
        // A token type's prefix and type name go with it; a lone name stays.
        assert_eq!(
            whole(
                "dp.audit.bAqhcVzrhy5cRHkOlNTc0Ve6w5NUDCpcutm8vGE9myi",
                "bAqhcVzrhy5cRHkOlNTc0Ve6w5NUDCpcutm8vGE9myi"
            ),
            "dp.audit.bAqhcVzrhy5cRHkOlNTc0Ve6w5NUDCpcutm8vGE9myi"
        );
        assert_eq!(
            whole(
                "key: image.bAqhcVzrhy5cRHkOlNTc0Ve6w5NUDCpcutm8vGE9myi",
                "bAqhcVzrhy5cRHkOlNTc0Ve6w5NUDCpcutm8vGE9myi"
            ),
            "bAqhcVzrhy5cRHkOlNTc0Ve6w5NUDCpcutm8vGE9myi"
        );
        assert_eq!(
            whole(
                "cdn.files.example.bAqhcVzrhy5cRHkOlNTc0Ve6w5NUDCpcutm8vGE9myi",
                "bAqhcVzrhy5cRHkOlNTc0Ve6w5NUDCpcutm8vGE9myi"
            ),
            "bAqhcVzrhy5cRHkOlNTc0Ve6w5NUDCpcutm8vGE9myi"
        );
        // A label before `=` stays.
        assert_eq!(
            whole(
                "api_key=Zx9qL2mN8vB4kR7tY1wE3uI6",
                "Zx9qL2mN8vB4kR7tY1wE3uI6"
            ),
            "Zx9qL2mN8vB4kR7tY1wE3uI6"
        );
    }
}
