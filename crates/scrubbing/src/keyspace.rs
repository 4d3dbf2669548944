//! How many bits a value can hold at most: its length times the bits of the smallest
//! alphabet its characters come from (lowercase letters, capitals, digits, the rest).
//! A generated key or token is drawn from a space far larger than a short word's.

/// Characters outside letters and digits counted as one alphabet (printable ASCII's
/// punctuation; a non-ASCII character counts there too).
const OTHER_ALPHABET: u32 = 32;

/// The bits of the space a value of this length and these character classes is drawn
/// from: `write` 23.5, `T1528` 25.9, `Zx9qL2mN8vB4kR7t` 95.3.
pub(crate) fn keyspace_bits(value: &str) -> f64 {
    let (mut lower, mut upper, mut digit, mut other) = (false, false, false, false);
    for c in value.chars() {
        match c {
            'a'..='z' => lower = true,
            'A'..='Z' => upper = true,
            '0'..='9' => digit = true,
            _ => other = true,
        }
    }
    let alphabet = u32::from(lower) * 26
        + u32::from(upper) * 26
        + u32::from(digit) * 10
        + u32::from(other) * OTHER_ALPHABET;
    let length = u32::try_from(value.chars().count()).unwrap_or(u32::MAX);
    f64::from(length) * f64::from(alphabet.max(1)).log2()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_words_hold_few_bits() {
        assert!(keyspace_bits("write") < 24.0);
        assert!(keyspace_bits("T1528") < 26.0);
        assert!(keyspace_bits("nextchar") < 38.0);
        assert!(keyspace_bits("correcthorse") > 56.0);
        assert!(keyspace_bits("Zx9qL2mN8vB4kR7t") > 95.0);
        assert_eq!(keyspace_bits(""), 0.0);
    }
}
