//! Values that run along an alphabet (`abcdefghij`, `0123456789`, `ABCDEF0123456789`,
//! `1234567890`): what a person types to fill a field, never a generated value. Such a
//! run is one of a handful of strings however long it is, so it holds no secret; other
//! scanners skip it for the same reason (detect-secrets' `is_sequential_string`
//! filter). The test is on the shape, not on a list of strings: each character is the
//! one after the previous in its class (digits, lowercase or uppercase letters), or a
//! class ended (`9`, `z`, `Z`, or `f`/`F` where hex digits end) and the next one starts
//! (`0`, `a`, `A`), or `9` wraps to `0`, or the `0` a keyboard puts after `9` goes on
//! to `a` (`1234567890abcdef`). The same run typed twice
//! (`1234567890abcdef1234567890abcdef`) is not cleared: other projects' rule tests
//! call it an IBM Cloud HMAC key (docs/scrubbing.md, "Where a false positive and a
//! miss pull in opposite directions").

/// Fewest characters a run along an alphabet needs to be told from a short value
/// that happens to be ordered (`abc1`, `xyz`).
const MIN_RUN: usize = 6;

/// True when `value` runs along an alphabet from its first character to its last,
/// with at least [`MIN_RUN`] characters, each letter or digit.
pub(crate) fn is_sequential(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() >= MIN_RUN
        && bytes.iter().all(u8::is_ascii_alphanumeric)
        && bytes.windows(2).all(|pair| match pair {
            [previous, next] => follows(*previous, *next),
            _ => false,
        })
}

/// Whether `next` comes right after `previous` along an alphabet.
fn follows(previous: u8, next: u8) -> bool {
    let same_class = previous.is_ascii_digit() && next.is_ascii_digit()
        || previous.is_ascii_lowercase() && next.is_ascii_lowercase()
        || previous.is_ascii_uppercase() && next.is_ascii_uppercase();
    if same_class && previous.checked_add(1) == Some(next) {
        return true;
    }
    let class_ends = matches!(previous, b'9' | b'z' | b'Z' | b'f' | b'F');
    // `…7890abc`: the digits in a keyboard's order, `0` last, then the letters.
    let keyboard_zero = previous == b'0' && matches!(next, b'a' | b'A');
    (class_ends && matches!(next, b'0' | b'a' | b'A')) || keyboard_zero
}

/// True when `value` is a format's prefix — one or more groups of a letter and up to
/// seven letters or digits, each ending in `_` or `-` (`ghp_`, `xoxp-`, `sk_test_`) —
/// followed by a run along an alphabet (`ghp_1234567890`, `xoxp-1234567890`): the
/// prefix says which format, the run fills the rest by hand.
pub(crate) fn is_prefixed_sequence(value: &str) -> bool {
    after_format_prefix(value).is_some_and(is_sequential)
}

/// Fewest times one character must repeat after a format's prefix to be a key held
/// down rather than a value (the same count that makes a whole value of one repeated
/// character a mask, `placeholder::is_placeholder`).
const MIN_REPEAT: usize = 8;

/// True when `value` is a format's prefix (as [`is_prefixed_sequence`] reads it)
/// followed by one character repeated at least [`MIN_REPEAT`] times
/// (`sk_live_AAAAAAAAAAAAAAAAAAAAAAAA`, `glpat-11111111111111111111`): a key held down
/// to fill a documented format, which no generator makes.
pub(crate) fn is_prefixed_repeat(value: &str) -> bool {
    after_format_prefix(value).is_some_and(|rest| {
        let mut chars = rest.chars();
        chars.next().is_some_and(|first| {
            first.is_ascii_alphanumeric()
                && chars.clone().all(|c| c == first)
                && chars.count() + 1 >= MIN_REPEAT
        })
    })
}

/// What follows a format's prefix of one or more groups (a letter and up to seven
/// letters or digits, each ending in `_` or `-`); `None` without such a prefix.
fn after_format_prefix(value: &str) -> Option<&str> {
    let mut rest = value;
    let mut groups = 0;
    while let Some(cut) = rest.find(['_', '-']) {
        let group = rest.get(..cut).unwrap_or_default();
        let is_group = (1..=8).contains(&group.len())
            && group
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic())
            && group.bytes().all(|b| b.is_ascii_alphanumeric());
        if !is_group {
            break;
        }
        rest = rest.get(cut + 1..).unwrap_or_default();
        groups += 1;
    }
    (groups > 0).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_and_a_run_is_a_typed_example() {
        for value in [
            "ghp_1234567890",
            "xoxp-1234567890",
            "sk_test_abcdefghij",
            "dop_v1_0123456789",
        ] {
            assert!(is_prefixed_sequence(value), "{value}");
        }
        for value in [
            "1234567890",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "xoxp-1234567890-9876543210",
            "sk_test_abc",
            "prefix_",
        ] {
            assert!(!is_prefixed_sequence(value), "{value}");
        }
    }

    #[test]
    fn a_prefix_and_one_key_held_down_is_a_typed_example() {
        for value in [
            "sk_live_AAAAAAAAAAAAAAAAAAAAAAAA",
            "pk_test_BBBBBBBBBBBBBBBBBBBBBBB",
            "glpat-11111111111111111111",
            "xoxb-00000000",
        ] {
            assert!(is_prefixed_repeat(value), "{value}");
        }
        for value in [
            // No prefix: a whole value of one character is `is_placeholder`'s.
            "AAAAAAAAAAAA",
            // Seven is short of a key held down.
            "sk_live_AAAAAAA",
            // A generated body, or two characters.
            "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "sk_live_ABABABABABABABAB",
            "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
            "prefix_",
            "sk_live_--------",
        ] {
            assert!(!is_prefixed_repeat(value), "{value}");
        }
    }

    #[test]
    fn runs_along_an_alphabet_are_sequential() {
        for value in [
            "abcdef",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "0123456789",
            "1234567890",
            "abcdefghijklmnopqrstuvwxyz0123456789",
            "0123456789abcdefghijklmnopqrstuvwxyz",
            "0123456789abcdef",
            "ABCDEF0123456789",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "456789abcdefgh",
            "mnopqrst",
            "1234567890abcdef",
        ] {
            assert!(is_sequential(value), "{value}");
        }
    }

    #[test]
    fn values_that_break_the_run_or_are_short_are_not() {
        for value in [
            "abcde",
            "abcdeg",
            "abc123",
            "0123456789abcdex",
            "aBcDeF",
            "ghp_abcdefghij",
            "a1b2c3d4e5",
            "zyxwvu",
            "R8mKq2ZxP9vL",
            "abcdef-012345",
            "1234567890abcdef1234567890abcdef",
            "0a0a0a0a",
        ] {
            assert!(!is_sequential(value), "{value}");
        }
    }
}
