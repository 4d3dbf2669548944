//! Random tokens from a fixed seed, as key generators write them, for the tests that
//! measure how often the scrubber's shape tests take random text for something else.

/// Base62: letters of both cases and digits.
pub(crate) const BASE62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/// Standard base64's alphabet, with `+` and `/`.
pub(crate) const BASE64: &[u8] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `count` tokens of `len` characters of `alphabet`, drawn by xorshift from `seed`: the
/// same tokens on every run and machine.
pub(crate) fn random_tokens(alphabet: &[u8], len: usize, count: usize, seed: u64) -> Vec<String> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let at = usize::try_from(state % alphabet.len() as u64).unwrap_or(0);
                    char::from(alphabet.get(at).copied().unwrap_or(b'A'))
                })
                .collect()
        })
        .collect()
}
