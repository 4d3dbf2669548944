//! Deterministic randomness and the secret values combined with every format.

/// SplitMix64: small, deterministic, good enough to vary a corpus.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn string(&mut self, alphabet: &[u8], len: usize) -> String {
        (0..len).map(|_| char::from(*self.pick(alphabet))).collect()
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| (self.next_u64() & 0xff) as u8).collect()
    }
}

pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const LOWER_ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
pub const UPPER_ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
pub const HEX: &[u8] = b"0123456789abcdef";
const SYMBOLS: &[u8] = b"!#%*_-+.~^@";
/// Symbols that survive in a URL without percent-encoding.
const URL_SYMBOLS: &[u8] = b"-_.~!*";

const WORDS: &[&str] = &[
    "Summer", "Winter", "Spring", "Autumn", "Dragon", "Monkey", "Welcome", "Admin", "Master",
    "Shadow", "Sunshine", "Football", "Princess", "Letmein", "Qwerty", "Password", "Hunter",
    "Charlie", "Freedom", "Trustno",
];

/// What a generated secret looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Random letters, digits and symbols, 10–40 characters.
    Random,
    /// A dictionary word with digits and a symbol: `Summer2024!`.
    Dictionary,
    /// 4–7 characters with a digit.
    Short,
    /// A long random alphanumeric token (32–48).
    Token,
    /// 32 or 40 hex digits (a hex API key under a label).
    Hex,
    /// Standard base64 of random bytes.
    Base64,
    /// A lowercase dictionary word with no digit: `sunshine`.
    Word,
    /// Three or four words: `correct horse battery staple` where the format quotes
    /// values, `correct-horse-battery-staple` elsewhere.
    Passphrase,
}

pub const SHAPES: &[Shape] = &[
    Shape::Random,
    Shape::Random,
    Shape::Random,
    Shape::Dictionary,
    Shape::Dictionary,
    Shape::Dictionary,
    Shape::Short,
    Shape::Short,
    Shape::Token,
    Shape::Hex,
    Shape::Base64,
    Shape::Word,
    Shape::Passphrase,
];

const PLAIN_WORDS: &[&str] = &[
    "sunshine", "letmein", "monkey", "dragon", "hunter", "trustno", "welcome", "shadow", "correct",
    "horse", "battery", "staple", "orange", "violet", "granite", "harbor",
];

/// A secret of `shape`; `url_safe` keeps to characters a URL or shell word allows,
/// `spaces` allows blanks (the format quotes its values).
pub fn secret(rng: &mut Rng, shape: Shape, url_safe: bool, spaces: bool) -> String {
    let symbols = if url_safe { URL_SYMBOLS } else { SYMBOLS };
    match shape {
        Shape::Random => {
            let len = 10 + rng.below(31);
            let mut s = rng.string(ALNUM, len);
            // Two symbols inside and a digit, so it is not a word.
            for _ in 0..2 {
                let at = 1 + rng.below(len - 2);
                s.replace_range(at..=at, &char::from(*rng.pick(symbols)).to_string());
            }
            let at = rng.below(len);
            s.replace_range(at..=at, &rng.string(b"0123456789", 1));
            s
        }
        Shape::Dictionary => {
            let word = rng.pick(WORDS);
            let year = 1990 + rng.below(40);
            let symbol = char::from(*rng.pick(symbols));
            match rng.below(4) {
                0 => format!("{word}{year}{symbol}"),
                1 => format!("{}{}", word.to_lowercase(), rng.below(1000)),
                2 => format!("{word}@{}", rng.below(1000)),
                _ => format!("{}{symbol}{}", word, rng.string(b"0123456789", 2)),
            }
        }
        Shape::Short => {
            let len = 4 + rng.below(4);
            let mut s = rng.string(ALNUM, len);
            let at = rng.below(len);
            s.replace_range(at..=at, &rng.string(b"0123456789", 1));
            s
        }
        Shape::Token => {
            let len = 32 + rng.below(17);
            let mut s = rng.string(ALNUM, len);
            s.replace_range(0..1, &rng.string(b"0123456789", 1));
            s
        }
        Shape::Hex => {
            let len = if rng.below(2) == 0 { 32 } else { 40 };
            rng.string(HEX, len)
        }
        Shape::Word => rng.pick::<&str>(PLAIN_WORDS).to_string(),
        Shape::Passphrase => {
            let n = 3 + rng.below(2);
            let words: Vec<&str> = (0..n).map(|_| *rng.pick::<&str>(PLAIN_WORDS)).collect();
            words.join(if spaces { " " } else { "-" })
        }
        Shape::Base64 => {
            let bytes = {
                let n = 18 + 3 * rng.below(8);
                rng.bytes(n)
            };
            let b64 = base64(&bytes);
            if url_safe {
                b64.replace('+', "-").replace('/', "_")
            } else {
                b64
            }
        }
    }
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(TABLE[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
