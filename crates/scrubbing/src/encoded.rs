//! Decoding base64 and hex to see whether they hide a secret: `user:password` (a
//! Docker or Basic `auth`) or text the built-in patterns find a secret in (a hex- or
//! base64-encoded token, `.env` file or `.dockerconfigjson`). Random key material and
//! hashes decode to binary and are rejected at their first unprintable byte.

/// `user:password` with no blanks: what Docker and HTTP Basic encode.
pub(crate) fn is_credential_pair(text: &str) -> bool {
    let Some((user, password)) = text.split_once(':') else {
        return false;
    };
    !user.is_empty()
        && user.len() <= 128
        && user
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@' | b'+'))
        && password.len() >= 3
        && !password.starts_with("//")
        && password.bytes().all(|b| b.is_ascii_graphic())
}

/// True when the built-in patterns find a secret in decoded text, or when a pattern
/// it needed is unavailable (fail closed: the encoded text is then redacted).
pub(crate) fn holds_secret(text: &str) -> bool {
    let mut found = Vec::new();
    crate::keyword_patterns::collect_builtins(text, &mut found).is_err() || !found.is_empty()
}

/// Shortest hex run decoded and checked (16 bytes of text).
const MIN_HEX_TEXT: usize = 32;

/// Hex of printable text that is `user:password` or holds a secret the patterns find.
/// A hash decodes to binary, and is rejected at its first unprintable byte.
pub(crate) fn is_encoded_secret_hex(token: &str) -> bool {
    let bytes = token.as_bytes();
    if bytes.len() < MIN_HEX_TEXT
        || !bytes.len().is_multiple_of(2)
        || !bytes.iter().all(u8::is_ascii_hexdigit)
    {
        return false;
    }
    let mut decoded = String::with_capacity(bytes.len() / 2);
    for pair in bytes.chunks_exact(2) {
        let byte = std::str::from_utf8(pair)
            .ok()
            .and_then(|p| u8::from_str_radix(p, 16).ok());
        match byte {
            Some(b) if (0x20..=0x7e).contains(&b) || matches!(b, 0x09 | 0x0a | 0x0d) => {
                decoded.push(char::from(b));
            }
            _ => return false,
        }
    }
    is_credential_pair(&decoded) || holds_secret(&decoded)
}

/// Rule 6: standard or URL-safe base64 that decodes to text: the text, or `None` for
/// anything else (random key material decodes to binary). Text is printable ASCII
/// with tabs and line breaks, and also UTF-8 of other scripts (`w6TDqcOo…`, a
/// translation) and NUL-separated strings (a compiled message catalog, at most one
/// byte in [`MAX_NUL_SHARE`]), as a line of a longer blob holds them: such a line may
/// cut a character at either end. Random bytes pass for this one time in millions
/// at 18 bytes (each byte is a control character or an invalid UTF-8 sequence more
/// often than not).
pub(crate) fn base64_text(token: &str) -> Option<String> {
    let body = token.trim_end_matches('=');
    let standard = body.contains(['+', '/']);
    let url_safe = body.contains(['-', '_']);
    if (standard && url_safe) || body.len() % 4 == 1 {
        return None;
    }
    let (mut acc, mut bits) = (0u32, 0u32);
    let mut decoded: Vec<u8> = Vec::with_capacity(body.len() * 3 / 4);
    for b in body.bytes() {
        let value = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            let byte = u8::try_from((acc >> bits) & 0xff).ok()?;
            acc &= (1 << bits) - 1;
            let text_byte = (0x20..=0x7e).contains(&byte)
                || matches!(byte, 0x00 | 0x09 | 0x0a | 0x0d)
                || byte >= 0x80;
            if !text_byte {
                return None;
            }
            decoded.push(byte);
        }
    }
    let nuls = decoded.iter().filter(|b| **b == 0).count();
    if decoded.is_empty() || nuls * MAX_NUL_SHARE > decoded.len() {
        return None;
    }
    let text = utf8_inside(&decoded)?;
    Some(text.replace('\0', "\n"))
}

/// At most one byte in this many of decoded text may be a NUL (a separator).
const MAX_NUL_SHARE: usize = 8;

/// `bytes` as UTF-8, allowing a character cut at either end (a line of a longer
/// blob); `None` when anything else is not UTF-8.
fn utf8_inside(bytes: &[u8]) -> Option<&str> {
    // A cut character leaves at most three continuation bytes at the start.
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (0x80..0xc0).contains(*b))
        .count();
    let rest = bytes.get(skip..)?;
    match std::str::from_utf8(rest) {
        Ok(text) => Some(text),
        // Only an incomplete character at the very end is forgiven.
        Err(error) if error.error_len().is_none() => {
            std::str::from_utf8(rest.get(..error.valid_up_to())?).ok()
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_text_is_recognised() {
        assert_eq!(
            base64_text("dGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==").as_deref(),
            Some("the quick brown fox jumps over the lazy dog")
        );
        assert_eq!(base64_text("wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"), None);
    }

    #[test]
    fn base64_of_other_scripts_and_of_nul_separated_strings_is_text() {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let utf8 = engine.encode("äéèęöő, grüße aus Köln".as_bytes());
        assert!(base64_text(&utf8).is_some(), "{utf8}");
        // A line of a longer blob cuts a character at its start.
        let cut = engine.encode(&"xäéèęöőäéèęöőäéè".as_bytes()[2..]);
        assert!(base64_text(&cut).is_some(), "{cut}");
        let catalog = engine.encode(b"There is %s file\0There are %s files\0Project-Id");
        assert!(base64_text(&catalog).is_some(), "{catalog}");
        // Random key material, and text that is mostly NULs, are not text.
        assert_eq!(base64_text("Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF"), None);
        assert_eq!(
            base64_text(&engine.encode([0u8, 0, 0, 65, 0, 0, 66, 0, 0])),
            None
        );
    }

    #[test]
    fn hex_of_text_holding_a_secret() {
        // hex("ghp_16C7e42F292c6912E7710c838347Ae178B4a") and of `deploy:Summer2024!`.
        let hex: String = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(is_encoded_secret_hex(&hex));
        assert!(is_encoded_secret_hex("6465706c6f793a53756d6d657232303234"));
        // A SHA-256 decodes to binary; hex of prose holds nothing.
        assert!(!is_encoded_secret_hex(
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        ));
        assert!(!is_encoded_secret_hex(
            "68656c6c6f20776f726c642068656c6c6f20776f726c64"
        ));
    }
}
