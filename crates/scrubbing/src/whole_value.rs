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
            break;
        }
        start = piece_start;
    }
    (start, end)
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
