//! The character classes of an entropy candidate (`entropy`'s rules 2 and 3): which
//! of lowercase, uppercase, digits and `+/_-` a run holds, and whether it is hex —
//! as a hash, or as a number written with `0x`.

/// The classes of rule 2 and the hex test of rule 3, one bit each, for a byte.
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 4;
const SYMBOL: u8 = 8;
const NOT_HEX: u8 = 16;

/// [`LOWER`] … [`NOT_HEX`] for every byte value: the class loop is one lookup and
/// one `or` a byte, where it ran five tests a byte (measured: 12% of the
/// instructions of a scrub of the bench's mixed text).
// `b < 256` indexes a 256-entry table, in a constant: an index out of bounds would
// fail the build, not a scrub.
#[allow(clippy::indexing_slicing)]
const CLASS_BITS: [u8; 256] = {
    let mut table = [0; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut bits = 0;
        if b.is_ascii_lowercase() {
            bits |= LOWER;
        }
        if b.is_ascii_uppercase() {
            bits |= UPPER;
        }
        if b.is_ascii_digit() {
            bits |= DIGIT;
        }
        if matches!(b, b'+' | b'/' | b'_' | b'-') {
            bits |= SYMBOL;
        }
        if !(b.is_ascii_hexdigit() || b == b'-') {
            bits |= NOT_HEX;
        }
        table[i] = bits;
        i += 1;
    }
    table
};

/// The [`CLASS_BITS`] of every byte of `bytes`, or-ed.
fn classes_of(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |seen, &b| {
        seen | CLASS_BITS.get(usize::from(b)).copied().unwrap_or(NOT_HEX)
    })
}

/// Whether bytes of the classes `seen` are hex written in one case, as hashes are
/// (`-` allowed, as in a UUID); hex in both cases (`6d2FabeB6ADd…`) is not a hash.
fn is_one_case_hex(seen: u8) -> bool {
    seen & NOT_HEX == 0 && !(seen & LOWER != 0 && seen & UPPER != 0)
}

/// Whether `bytes` are hex written in one case, as hashes and ids are (`-` allowed).
pub(crate) fn is_hex_in_one_case(bytes: &[u8]) -> bool {
    is_one_case_hex(classes_of(bytes))
}

/// Rules 2 and 3 of the entropy detector: a digit and a letter, and three classes
/// or 32 bytes; not hex in one case.
pub(crate) fn has_secret_class_mix(bytes: &[u8]) -> bool {
    let seen = classes_of(bytes);
    let has = |bit: u8| seen & bit != 0;
    let classes = [LOWER, UPPER, DIGIT, SYMBOL]
        .iter()
        .filter(|&&bit| has(bit))
        .count();
    has(DIGIT)
        && (has(LOWER) || has(UPPER))
        && !is_one_case_hex(seen)
        && (classes >= 3 || bytes.len() >= 32)
}

/// `0xA9FB57DBA1EEA9BC…`: a number written in hex (a curve's constant, a test
/// vector's digest), in one case like the hashes of rule 3; hex is never judged a
/// secret by its look, and the `0x` before it does not make it one.
pub(crate) fn is_hex_number(token: &str) -> bool {
    token
        .strip_prefix("0x")
        .or_else(|| token.strip_prefix("0X"))
        .is_some_and(|digits| {
            let seen = classes_of(digits.as_bytes());
            // Digits only: no `-`, which a hash's classes allow.
            !digits.is_empty() && seen & SYMBOL == 0 && is_one_case_hex(seen)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_table_is_the_class_tests() {
        for b in 0..=255u8 {
            let bits = CLASS_BITS[usize::from(b)];
            assert_eq!(bits & LOWER != 0, b.is_ascii_lowercase(), "{b:#04x}");
            assert_eq!(bits & UPPER != 0, b.is_ascii_uppercase(), "{b:#04x}");
            assert_eq!(bits & DIGIT != 0, b.is_ascii_digit(), "{b:#04x}");
            assert_eq!(bits & SYMBOL != 0, b"+/_-".contains(&b), "{b:#04x}");
            assert_eq!(
                bits & NOT_HEX == 0,
                b.is_ascii_hexdigit() || b == b'-',
                "{b:#04x}"
            );
        }
        let run = |s: &str| has_secret_class_mix(s.as_bytes());
        assert!(run("Zx9qL2mN8vB4kR7tY1wE3uI6"));
        assert!(!run("e3b0c44298fc1c149afbf4c8996fb924"), "a hash");
        assert!(run("6d2FabeB6ADd8c1e4b7a9F0c3D5e2a1b"), "hex in both cases");
        assert!(!run("abcdefghijklmnopqrstuvwx"), "no digit");
    }

    #[test]
    fn numbers_in_hex() {
        assert!(is_hex_number("0XABCDEF0123456789ABCDEF0123456789"));
        assert!(is_hex_number("0x8cb91e82a3386d28"));
        assert!(!is_hex_number("0x8cB91e82A3386d28"), "both cases");
        assert!(!is_hex_number("0xZx9qL2mN8vB4kR7tY1wE3uI6"));
        assert!(!is_hex_number("0x"));
    }
}
