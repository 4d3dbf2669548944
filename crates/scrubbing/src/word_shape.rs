//! Whether a token reads as words rather than random characters: the bytes a
//! candidate run is made of, and the camelCase / digit-group test of its pieces. The
//! entropy detector, the whole-value check and the value filters all ask it.

/// Bytes that make up candidate runs: `[A-Za-z0-9+/_-]`.
#[inline]
pub(crate) const fn is_run_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-')
}

/// Rule 5 of the entropy detector: every piece between `+/_-` is digits and/or camelCase words.
pub(crate) fn is_words(token: &str) -> bool {
    token
        .split(['+', '/', '_', '-', '='])
        .filter(|p| !p.is_empty())
        .all(is_word_piece)
}

fn is_word_piece(piece: &str) -> bool {
    let bytes = piece.as_bytes();
    if bytes.len() <= 4 {
        return true;
    }
    let (mut humps, mut letters, mut inner_digit_groups) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while i < bytes.len() {
        if bytes.get(i).is_some_and(u8::is_ascii_digit) {
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if humps > 0 && i < bytes.len() {
                inner_digit_groups += 1;
            }
            continue;
        }
        let hump_start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_uppercase) {
            i += 1;
        }
        let uppers = i - hump_start;
        let lowers_start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_lowercase) {
            i += 1;
        }
        if i == hump_start {
            return false; // not alphanumeric
        }
        // `HTTPServer`: the acronym and the word after it are two humps.
        humps += if uppers > 1 && i > lowers_start { 2 } else { 1 };
        letters += i - hump_start;
    }
    if inner_digit_groups == 0 {
        // Digits only at the ends: words averaging 2.5 letters.
        letters * 2 >= humps * 5
    } else {
        // Digits between words (`parseHttp2Response`): longer words, few digit groups.
        letters >= humps * 4 && inner_digit_groups * 2 <= humps
    }
}

/// A weak label's value that is a word, identifier or path rather than data: no digit
/// and made of words (`basic`, `BASIC`, `TestParseYAMLBlock`, `oauth-proxy`, not
/// `dXNlcjpwYXNz`); or a path (`/etc/creds.json`, `~/.netrc`).
pub(crate) fn is_word_or_path(value: &str) -> bool {
    let wordy = !value.bytes().any(|b| b.is_ascii_digit())
        && value
            .split(['.', ':', '/'])
            .all(|part| part.is_empty() || is_words(part));
    wordy || is_path(value)
}

/// A file path: absolute, from the home directory, or relative with `./` or `../`
/// (`/etc/creds.json`, `~/.ssh/id_rsa`).
pub(crate) fn is_path(value: &str) -> bool {
    ["/", "~/", "./", "../"]
        .iter()
        .any(|p| value.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_pieces() {
        for piece in [
            "very",
            "HttpClient2",
            "HTTPServer",
            "python3",
            "2fa",
            "x86",
            "2024",
            "parseHttp2Response",
            "k9x2",
        ] {
            assert!(is_word_piece(piece), "{piece}");
        }
        for piece in ["aB3dE", "qWeRtYuIoP", "k9x2m7", "x86a1", "Zx9qL2mN8vB4"] {
            assert!(!is_word_piece(piece), "{piece}");
        }
    }
}
