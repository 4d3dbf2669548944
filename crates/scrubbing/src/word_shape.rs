//! Whether a token reads as words rather than random characters: the bytes a
//! candidate run is made of, the camelCase / digit-group test of its pieces, and keys
//! spelt in odd mixed case (`tOkEn`). The entropy detector, the whole-value check and
//! the value filters all ask it.

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
    if bytes.len() <= 4 || is_letters_and_number(bytes) || is_api_version(bytes) {
        return true;
    }
    match embedded_version(bytes) {
        // `GoogleCloudVisionV1p4beta1Word`: the version is one word of the name.
        Some(version) => {
            let mut rest = Vec::with_capacity(bytes.len());
            rest.extend_from_slice(bytes.get(..version.start).unwrap_or_default());
            rest.extend_from_slice(b"Ver");
            rest.extend_from_slice(bytes.get(version.end..).unwrap_or_default());
            is_camel_words(&rest)
        }
        None => is_camel_words(bytes),
    }
}

/// `V1p4beta1` in `GoogleCloudVisionV1p4beta1Word`, `V2` in `ClientV2Options`: an API's
/// version inside a camelCase name — `V` after a lowercase letter, a number, perhaps
/// `p` and a number, perhaps a lowercase stage word of [`MIN_STAGE_LETTERS`] letters
/// or more and its number, then the name's next word (a capital) or its end. The
/// first such version only.
fn embedded_version(bytes: &[u8]) -> Option<std::ops::Range<usize>> {
    (1..bytes.len()).find_map(|start| {
        let after_word = bytes.get(start - 1).is_some_and(u8::is_ascii_lowercase);
        if !after_word || bytes.get(start) != Some(&b'V') {
            return None;
        }
        let end = version_end(bytes, start, true)?;
        let at_boundary = bytes.get(end).is_none_or(u8::is_ascii_uppercase);
        at_boundary.then_some(start..end)
    })
}

/// The camelCase and digit-group test of [`is_word_piece`], on a piece longer than
/// four bytes.
fn is_camel_words(bytes: &[u8]) -> bool {
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
        // Digits between words (`parseHttp2Response`): longer words, few digit groups;
        // or a number inside a long name (`kernelUSec2SysClockWide`,
        // `EcKeyRfc5915DerType`): words as long as without digits, one digit group
        // for four words at most.
        (letters >= humps * 4 && inner_digit_groups * 2 <= humps)
            || (letters >= humps * 3 && inner_digit_groups * 4 <= humps)
    }
}

/// Fewest letters of a version's stage (`alpha`, `beta`, `main`).
const MIN_STAGE_LETTERS: usize = 4;

/// `v1alpha1`, `v1beta`, `v1p4alpha1`, `v20180820`, `V1ALPHA1`: an API's version — `v`, a number,
/// perhaps `p` and a point number, perhaps a stage word of [`MIN_STAGE_LETTERS`]
/// letters or more and its number.
fn is_api_version(bytes: &[u8]) -> bool {
    // In a constant's name the version is in capitals (`V1ALPHA1`): one case throughout.
    let lower = match bytes.first() {
        Some(b'v') => true,
        Some(b'V') => false,
        _ => return false,
    };
    version_end(bytes, 0, lower) == Some(bytes.len())
}

/// Where the API version whose `v` or `V` is at `start` ends: after its number, a `p`
/// and a point number if there are, and a stage word of [`MIN_STAGE_LETTERS`] letters
/// or more with its number if there is; its `p` and stage in lower case (`lower`) or in
/// capitals. `None` without a number, or with a stage word too short to be one.
fn version_end(bytes: &[u8], start: usize, lower: bool) -> Option<usize> {
    let letter = |b: &u8| {
        if lower {
            b.is_ascii_lowercase()
        } else {
            b.is_ascii_uppercase()
        }
    };
    let run = |from: usize, class: &dyn Fn(&u8) -> bool| {
        bytes
            .get(from..)
            .map_or(0, |rest| rest.iter().take_while(|b| class(b)).count())
    };
    let digits = |from: usize| run(from, &u8::is_ascii_digit);
    let major = digits(start + 1);
    if major == 0 {
        return None;
    }
    let mut end = start + 1 + major;
    let point = bytes
        .get(end)
        .is_some_and(|b| letter(b) && b.eq_ignore_ascii_case(&b'p'));
    if point && digits(end + 1) > 0 {
        end += 1 + digits(end + 1);
    }
    let stage = run(end, &letter);
    if stage > 0 {
        if stage < MIN_STAGE_LETTERS {
            return None;
        }
        end += stage;
        end += digits(end);
    }
    Some(end)
}

/// Most digits in a name's number (`x25519`, `P1003`).
const MAX_NAME_NUMBER: usize = 6;

/// `x25519`, `P1003`, `512KB`: one or two letters and a number, in either order — an
/// algorithm's, a standard's or a size's name (longer words before a number are words
/// already).
fn is_letters_and_number(bytes: &[u8]) -> bool {
    let letters = bytes.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let (head, tail) = (letters.max(digits), bytes.len() - letters.max(digits));
    let short = if letters > 0 { letters } else { tail };
    let number = if letters > 0 { tail } else { digits };
    head > 0
        && tail > 0
        && (1..=2).contains(&short)
        && number <= MAX_NAME_NUMBER
        && bytes.get(head..).is_some_and(|rest| {
            rest.iter().all(|b| {
                if letters > 0 {
                    b.is_ascii_digit()
                } else {
                    b.is_ascii_alphabetic()
                }
            })
        })
}

/// Most pieces of a constant's name that are neither words nor numbers.
const MAX_CODE_PIECE: usize = 6;

/// `ECDSA_P256K1_SHA256_ASN1_SIGNING`, `CTL_P1003_1B_MEMLOCK_RANGE`: a constant's name
/// in capitals, digits and `_` — three or more pieces, one of them a word of three
/// letters or more, all words or numbers but at most one short code of up to
/// [`MAX_CODE_PIECE`] bytes (`P256K1`). A random key in capitals has long pieces of
/// mixed letters and digits (`AKIA_ZX9QL2MN8VB4KP7W`).
pub(crate) fn is_constant_with_numbers(token: &str) -> bool {
    if !token
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return false;
    }
    let pieces = || token.split('_').filter(|p| !p.is_empty());
    let odd: Vec<&str> = pieces().filter(|p| !is_word_piece(p)).collect();
    pieces().count() >= 3
        && pieces().any(|p| p.len() >= 3 && p.bytes().all(|b| b.is_ascii_uppercase()))
        && odd.len() <= 1
        && odd.iter().all(|p| p.len() <= MAX_CODE_PIECE)
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

/// `PythonTokenTypes.ERRORTOKEN`, `Name.Variable`, `ATNState.INVALID_STATE_NUMBER`: two
/// or more identifiers joined by `.`, each made of words — an enum's member or a
/// class's attribute. A dotted token (a JWT, `pat14.e33f14eb…`) has random pieces.
pub(crate) fn is_dotted_name(value: &str) -> bool {
    let mut parts = 0usize;
    for part in value.split('.') {
        let identifier = part
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !identifier || !is_words(part) {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// `#d8dee9`, `#FFF`, `#ansiyellow`: a colour in a style sheet — `#` and three, four,
/// six or eight hex digits, or `#` and a lowercase name.
pub(crate) fn is_colour(value: &str) -> bool {
    let Some(rest) = value.strip_prefix('#') else {
        return false;
    };
    let hex = matches!(rest.len(), 3 | 4 | 6 | 8) && rest.bytes().all(|b| b.is_ascii_hexdigit());
    let name = !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_lowercase());
    hex || name
}

/// `tokenfunc`, `lookahead`, `TSPECIALS`, `EOF`: a word or a name — letters of one case
/// only, with vowels for at least a quarter of them, as words have (random letters
/// have about one in five, `zxqlmnvbkpwrtydh` none). A generated value of eight
/// characters or more is of one case by chance about once in a thousand, and a
/// shorter one holds too few bits to be a credential.
pub(crate) fn is_single_case_word(value: &str) -> bool {
    let one_case = value.bytes().all(|b| b.is_ascii_lowercase())
        || value.bytes().all(|b| b.is_ascii_uppercase());
    let vowels = value
        .bytes()
        .filter(|b| matches!(b.to_ascii_lowercase(), b'a' | b'e' | b'i' | b'o' | b'u'))
        .count();
    !value.is_empty() && one_case && vowels * 4 >= value.len()
}

/// A word in odd mixed case: two lowercase-to-uppercase steps at most two letters
/// apart (`tOkEn`, `ToKeN`, `PaSsWoRd`), which camelCase (`apiToken`) never has.
pub(crate) fn is_odd_case(word: &[u8]) -> bool {
    let mut last_step: Option<usize> = None;
    for (i, pair) in word.windows(2).enumerate() {
        if let [a, b] = pair
            && a.is_ascii_lowercase()
            && b.is_ascii_uppercase()
        {
            if last_step.is_some_and(|at| i - at <= 2) {
                return true;
            }
            last_step = Some(i);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random_tokens::{BASE62, random_tokens};

    #[test]
    fn odd_case_words() {
        for key in ["tOkEn", "ToKeN", "PaSsWoRd", "sEcReT_kEy"] {
            assert!(is_odd_case(key.as_bytes()), "{key}");
        }
        for key in [
            "apiToken",
            "API_KEY",
            "HttpClient",
            "getAToken",
            "XMLHttpRequest",
        ] {
            assert!(!is_odd_case(key.as_bytes()), "{key}");
        }
    }

    #[test]
    fn random_letters_and_digits_seldom_read_as_words() {
        // Measured: 2.5% at 24 characters, 1.8% at 32, 0.4% at 48 (9.7%, 6.8% and 5.0%
        // when a number inside a name allowed words of 2.5 letters on average).
        for (len, most) in [(24, 0.035), (32, 0.025), (48, 0.01)] {
            let tokens = random_tokens(BASE62, len, 4000, 0x9e37_79b9_7f4a_7c15);
            let words = tokens.iter().filter(|t| is_words(t)).count();
            let share = words as f64 / tokens.len() as f64;
            assert!(share <= most, "{len} characters: {share:.4} read as words");
        }
        assert!(!is_words("35kHVLA1E068nvrwUTgabkh8xvGGTpSpsVjGcpVNfis"));
        // Names with a number inside them still read as words.
        for name in [
            "kernelUSec2SysClockWide",
            "EcKeyRfc5915DerType",
            "parseHttp2Response",
        ] {
            assert!(is_words(name), "{name}");
        }
    }

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
        for piece in [
            "x25519",
            "P1003",
            "J1939",
            "512KB",
            "256mb",
            "readUSec2SysClockWide",
            "FlushL1CacheOnContextSwitch",
            "v1alpha1",
            "v1beta",
            "v1p4alpha1",
            "v20180820",
            "V1ALPHA1",
            "GoogleCloudVisionV1p4beta1Word",
            "GoogleCloudAiplatformV1beta1Schema",
            "ClientV2Options",
        ] {
            assert!(is_word_piece(piece), "{piece}");
        }
        for piece in [
            "aB3dE",
            "qWeRtYuIoP",
            "k9x2m7",
            "x86a1",
            "Zx9qL2mN8vB4",
            "x1234567",
            "512KBz",
            "v8xkq2",
            "v1alpha1x9",
            "vx1alpha",
            "V1alpha1",
            "Zx9qV7mN8vB4kR7t",
            "GoogleV1p4beta1x9Qz2Lm8",
        ] {
            assert!(!is_word_piece(piece), "{piece}");
        }
    }

    #[test]
    fn names_phrases_and_colours() {
        for name in [
            "PythonTokenTypes.ERRORTOKEN",
            "Name.Variable",
            "ATNState.INVALID_STATE_NUMBER",
            "_NoValueSet.NO_VALUE_SET",
            "Token.Name.Function",
        ] {
            assert!(is_dotted_name(name), "{name}");
        }
        for token in [
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
            "pat14.e33f14eb2f7a41c9a8b3d5e6f7081920",
            "Zx9qL2mN8vB4.kR7tY1wE",
            "ERRORTOKEN",
            "1.2.3",
        ] {
            assert!(!is_dotted_name(token), "{token}");
        }
        for colour in ["#d8dee9", "#FFF", "#ansiyellow", "#AB0909C0"] {
            assert!(is_colour(colour), "{colour}");
        }
        for value in ["#d8dee", "d8dee9", "#Zx9qL2", "#"] {
            assert!(!is_colour(value), "{value}");
        }
        for word in ["tokenfunc", "EOF", "lookahead"] {
            assert!(is_single_case_word(word), "{word}");
        }
        for value in ["TokenFunc", "abc1", "", "zxqlmnvbkpwrtydh"] {
            assert!(!is_single_case_word(value), "{value}");
        }
    }

    #[test]
    fn constants_with_numbers() {
        for name in [
            "DH_KEM_X25519_HKDF_SHA256_AES_256",
            "ECDSA_P384K1_SHA3_512_FIXED",
            "CTL_P2001_7B_QUEUE_DEPTH_MAX",
            "PAGE_FLAG_ENCODE_512KB",
        ] {
            assert!(is_constant_with_numbers(name), "{name}");
        }
        for token in [
            "AKIA_ZX9QL2MN8VB4KP7W_PROD",
            "K9X2M7_Q8W3E5_ZX9QL2_ABC",
            "Zx9q_L2mN_8vB4_kR7t",
            "A1B2_C3D4",
        ] {
            assert!(!is_constant_with_numbers(token), "{token}");
        }
    }
}
