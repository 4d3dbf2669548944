//! Secrets known by value: redacted wherever they appear, in the encodings one command
//! line produces.
//!
//! Patterns find secrets by their shape; a secret the program itself holds (a
//! provider key, an MCP server's token, the value behind a secret handle) is found by
//! its value, which no encoding a command can apply hides:
//!
//! - **plain** and **spaced or split** (`g h p _ R 8 m K …`, `['s','k','-',…]`, over
//!   several lines, inside URL escapes `%73%6B…`): the text's ASCII letters and digits
//!   (URL escapes decoded) are searched for the value's letters and digits;
//! - **base64** (standard or URL-safe, padded or not, wrapped, alone or inside a larger
//!   encoded blob at any of the three byte alignments);
//! - **hex** (upper or lower case, `0x`/`\x`/`%`/`:` between the bytes or nothing);
//! - **decimal and octal bytes** (`115 107 45 …`, `163,153,055`, `\163\153`), padded
//!   to three digits or not.
//!
//! Each encoding is searched in a projection of the text that keeps only the
//! characters the encoding can produce (with the way back to the original bytes), so a
//! match is redacted whole, separators included. A form is only searched when it is
//! long enough that ordinary text cannot spell it by chance ([`MIN_KNOWN_SECRET_LEN`]
//! bytes for the value; twelve characters for a projected form).

use std::ops::Range;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use crate::error::ScrubError;
use crate::merge::Candidate;
use crate::redaction::RedactionKind;

/// The shortest value [`Scrubber::with_known_secrets`](crate::Scrubber::with_known_secrets)
/// accepts: shorter ones would be found in ordinary text.
pub const MIN_KNOWN_SECRET_LEN: usize = 8;

/// The shortest projected form searched (see the module docs).
const MIN_FORM_LEN: usize = 12;

/// Priority of a known secret: above every pattern.
const PRIORITY_KNOWN: u16 = 0;

/// Which characters of the text a projection keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Projection {
    /// ASCII letters and digits, URL escapes decoded first.
    Alphanumeric,
    /// Hex digits, lowercased, the `0` of a `0x` prefix dropped.
    Hex,
    /// Decimal digits.
    Digits,
    /// The byte columns of hex dump lines (`xxd`, `od -Ax -tx1z`, `hexdump -C`):
    /// the offset that starts each line and the character column that ends it left
    /// out.
    HexDump,
}

const PROJECTIONS: [Projection; 4] = [
    Projection::Alphanumeric,
    Projection::Hex,
    Projection::Digits,
    Projection::HexDump,
];

/// One automaton over the forms of every secret in one projection (or, for `None`,
/// the raw text).
#[derive(Debug)]
struct Search {
    projection: Option<Projection>,
    automaton: AhoCorasick,
    /// For each pattern of the automaton, the secret it belongs to.
    owner: Vec<usize>,
}

/// The compiled set of known secrets.
#[derive(Debug)]
pub(crate) struct KnownSecrets {
    names: Vec<Arc<str>>,
    searches: Vec<Search>,
    /// What it was compiled from, so that more can be added.
    given: Vec<(String, String)>,
}

impl KnownSecrets {
    /// Compiles `secrets` (name, value). Duplicate values are searched once.
    pub(crate) fn new(secrets: Vec<(String, String)>) -> Result<Self, ScrubError> {
        let given = secrets.clone();
        let mut names = Vec::new();
        let mut raw: Vec<(String, usize)> = Vec::new();
        let mut projected: Vec<Vec<(String, usize)>> = vec![Vec::new(); PROJECTIONS.len()];
        for (name, value) in secrets {
            if name.is_empty() {
                return Err(ScrubError::EmptyName {
                    pattern: "a known secret".to_owned(),
                });
            }
            if value.len() < MIN_KNOWN_SECRET_LEN {
                return Err(ScrubError::KnownSecretTooShort {
                    name,
                    length: value.len(),
                    minimum: MIN_KNOWN_SECRET_LEN,
                });
            }
            let owner = names.len();
            names.push(Arc::from(name));
            // A value with enough letters and digits is found, plain too, in the
            // alphanumeric projection; the raw text is searched for the others.
            if alphanumeric(value.as_bytes()).len() < MIN_FORM_LEN {
                raw.push((value.clone(), owner));
            }
            for (forms, projection) in projected.iter_mut().zip(PROJECTIONS) {
                for form in forms_of(value.as_bytes(), projection) {
                    if form.len() >= MIN_FORM_LEN {
                        forms.push((form, owner));
                    }
                }
            }
        }
        let mut searches = Vec::new();
        if let Some(search) = compile(None, raw)? {
            searches.push(search);
        }
        for (forms, projection) in projected.into_iter().zip(PROJECTIONS) {
            if let Some(search) = compile(Some(projection), forms)? {
                searches.push(search);
            }
        }
        Ok(Self {
            names,
            searches,
            given,
        })
    }

    /// The secrets it was compiled from, by name and value.
    pub(crate) fn given(&self) -> &[(String, String)] {
        &self.given
    }

    /// Adds a candidate for every known secret in `text`, in any of its encodings.
    pub(crate) fn collect(&self, text: &str, out: &mut Vec<Candidate>) {
        for search in &self.searches {
            match search.projection {
                None => {
                    for found in search.automaton.find_iter(text) {
                        self.push(search, found.pattern().as_usize(), found.range(), out);
                    }
                }
                Some(projection) => {
                    let projected = project(text, projection);
                    if projected.text.len() < MIN_FORM_LEN {
                        continue;
                    }
                    for found in search.automaton.find_iter(projected.text.as_slice()) {
                        if let Some(range) = projected.original(found.range()) {
                            self.push(search, found.pattern().as_usize(), range, out);
                        }
                    }
                }
            }
        }
    }

    fn push(&self, search: &Search, pattern: usize, range: Range<usize>, out: &mut Vec<Candidate>) {
        let Some(name) = search
            .owner
            .get(pattern)
            .and_then(|owner| self.names.get(*owner))
        else {
            return;
        };
        out.push(Candidate {
            range,
            kind: RedactionKind::KnownSecret(Arc::clone(name)),
            priority: PRIORITY_KNOWN,
        });
    }
}

fn compile(
    projection: Option<Projection>,
    mut forms: Vec<(String, usize)>,
) -> Result<Option<Search>, ScrubError> {
    forms.sort();
    forms.dedup_by(|a, b| a.0 == b.0);
    if forms.is_empty() {
        return Ok(None);
    }
    let automaton = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        // A few dozen forms: a DFA is small and the fastest to search with. In a
        // projection every character is a letter or digit a form starts with, so a
        // prefilter finds a candidate at nearly every byte and only slows the DFA.
        .kind(Some(AhoCorasickKind::DFA))
        .prefilter(projection.is_none())
        .build(forms.iter().map(|(form, _)| form.as_bytes()))
        .map_err(|source| ScrubError::KnownSecrets {
            message: source.to_string(),
        })?;
    Ok(Some(Search {
        projection,
        automaton,
        owner: forms.into_iter().map(|(_, owner)| owner).collect(),
    }))
}

/// The forms of `value` searched in `projection`.
fn forms_of(value: &[u8], projection: Projection) -> Vec<String> {
    match projection {
        Projection::Alphanumeric => {
            let mut forms = vec![alphanumeric(value)];
            forms.extend((0..3).map(|shift| alphanumeric(base64_core(value, shift).as_bytes())));
            forms
        }
        Projection::Hex | Projection::HexDump => {
            vec![value.iter().map(|byte| format!("{byte:02x}")).collect()]
        }
        Projection::Digits => vec![
            value.iter().map(|byte| format!("{byte}")).collect(),
            value.iter().map(|byte| format!("{byte:03}")).collect(),
            value.iter().map(|byte| format!("{byte:o}")).collect(),
            value.iter().map(|byte| format!("{byte:03o}")).collect(),
        ],
    }
}

fn alphanumeric(bytes: &[u8]) -> String {
    bytes
        .iter()
        .filter(|byte| byte.is_ascii_alphanumeric())
        .map(|byte| char::from(*byte))
        .collect()
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The base64 characters that depend on `value` alone when it starts `shift` bytes
/// (0, 1 or 2) into a larger encoded blob: the characters the bytes before it or after
/// it share are left out.
fn base64_core(value: &[u8], shift: usize) -> String {
    let mut bytes = vec![0u8; shift];
    bytes.extend_from_slice(value);
    let mut encoded = String::with_capacity(bytes.len() * 4 / 3 + 4);
    for chunk in bytes.chunks(3) {
        let mut group = [0u8; 3];
        for (slot, byte) in group.iter_mut().zip(chunk) {
            *slot = *byte;
        }
        let bits = (u32::from(group[0]) << 16) | (u32::from(group[1]) << 8) | u32::from(group[2]);
        let chars = chunk.len() + 1;
        for index in 0..chars {
            let sextet = (bits >> (18 - 6 * index)) & 0x3f;
            if let Some(byte) = BASE64.get(sextet as usize) {
                encoded.push(char::from(*byte));
            }
        }
    }
    // Leading characters holding bits of the bytes before the value, and a last one
    // holding bits of the bytes after it.
    let lead = match shift {
        0 => 0,
        1 => 2,
        _ => 3,
    };
    let tail = usize::from(!bytes.len().is_multiple_of(3));
    let end = encoded.len().saturating_sub(tail);
    encoded.get(lead..end).unwrap_or_default().to_owned()
}

/// How many kept characters lie between two recorded origins: a match's original
/// range is found by scanning on from the last origin before it, so the projection
/// records one position per this many characters instead of one per character.
const ORIGIN_STRIDE: usize = 64;

/// The characters of a text one projection keeps, with the way back to the original.
struct Projected<'t> {
    projection: Projection,
    /// The original text.
    source: &'t [u8],
    /// The kept characters (ASCII).
    text: Vec<u8>,
    /// Where kept character `k * ORIGIN_STRIDE` starts in `source`.
    origin: Vec<usize>,
}

impl Projected<'_> {
    /// Whether every kept character's origin is recorded: in dump lines, where the
    /// characters skipped (offsets, the character column) are not what `step` skips.
    fn dense(&self) -> bool {
        self.projection == Projection::HexDump
    }

    fn keep(&mut self, character: u8, at: usize) {
        if self.dense() || self.text.len().is_multiple_of(ORIGIN_STRIDE) {
            self.origin.push(at);
        }
        self.text.push(character);
    }

    /// Where kept character `kept` starts in the source, and the byte after it.
    fn locate(&self, kept: usize) -> Option<Range<usize>> {
        if self.dense() {
            let at = *self.origin.get(kept)?;
            return Some(at..at + 1);
        }
        let mut at = *self.origin.get(kept / ORIGIN_STRIDE)?;
        let mut count = kept - kept % ORIGIN_STRIDE;
        loop {
            let (character, next) = step(self.projection, self.source, at)?;
            if character.is_some() {
                if count == kept {
                    return Some(at..next);
                }
                count += 1;
            }
            at = next;
        }
    }

    /// The original range from the first kept character of `range` to its last.
    fn original(&self, range: Range<usize>) -> Option<Range<usize>> {
        let first = self.locate(range.start)?;
        let last = self.locate(range.end.checked_sub(1)?)?;
        Some(first.start..last.end)
    }
}

/// One step of `projection` over `bytes` at `index`: the character kept there (if any)
/// and where the next step starts; `None` at the end.
#[inline]
fn step(projection: Projection, bytes: &[u8], index: usize) -> Option<(Option<u8>, usize)> {
    let byte = *bytes.get(index)?;
    let next = index + 1;
    Some(match projection {
        Projection::Alphanumeric => {
            if byte == b'%'
                && let Some(decoded) = percent_escape(bytes, index)
            {
                (
                    decoded.is_ascii_alphanumeric().then_some(decoded),
                    index + 3,
                )
            } else {
                (byte.is_ascii_alphanumeric().then_some(byte), next)
            }
        }
        Projection::Hex => {
            let prefix = byte == b'0'
                && matches!(bytes.get(next), Some(b'x' | b'X'))
                && bytes.get(index + 2).is_some_and(u8::is_ascii_hexdigit);
            let kept = byte.is_ascii_hexdigit() && !prefix;
            (kept.then_some(byte.to_ascii_lowercase()), next)
        }
        Projection::Digits => (byte.is_ascii_digit().then_some(byte), next),
        // Dump lines are projected by `project_dump`, with every origin recorded.
        Projection::HexDump => (None, next),
    })
}

fn project(text: &str, projection: Projection) -> Projected<'_> {
    let bytes = text.as_bytes();
    let mut projected = Projected {
        projection,
        source: bytes,
        text: Vec::with_capacity(bytes.len() / 2),
        origin: Vec::new(),
    };
    if projection == Projection::HexDump {
        project_dump(text, &mut projected);
        return projected;
    }
    match projection {
        // The common characters decide in one comparison each; only a `%`, or a `0`
        // before an `x`, needs `step`'s look ahead.
        Projection::Digits => {
            for (index, byte) in bytes.iter().enumerate() {
                if byte.is_ascii_digit() {
                    projected.keep(*byte, index);
                }
            }
        }
        Projection::Hex => {
            for (index, byte) in bytes.iter().enumerate() {
                if byte.is_ascii_hexdigit()
                    && (*byte != b'0'
                        || matches!(step(projection, bytes, index), Some((Some(_), _))))
                {
                    projected.keep(byte.to_ascii_lowercase(), index);
                }
            }
        }
        _ => {
            let mut index = 0;
            while let Some(byte) = bytes.get(index) {
                if byte.is_ascii_alphanumeric() {
                    projected.keep(*byte, index);
                    index += 1;
                    continue;
                }
                let Some((kept, next)) = step(projection, bytes, index) else {
                    break;
                };
                if let Some(character) = kept {
                    projected.keep(character, index);
                }
                index = next;
            }
        }
    }
    projected
}

/// The byte columns of the text's hex dump lines: a line that starts with an offset
/// (four or more hex digits, a `:` after them or not) followed by groups of two to
/// eight hex digits; the groups up to the first other word are kept.
fn project_dump(text: &str, projected: &mut Projected<'_>) {
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let mut words = words_at(line);
        let is_offset = |word: &str| {
            let digits = word.strip_suffix(':').unwrap_or(word);
            digits.len() >= 4 && digits.bytes().all(|b| b.is_ascii_hexdigit())
        };
        if words.next().is_some_and(|(_, word)| is_offset(word)) {
            for (at, word) in words {
                let group = word.len().is_multiple_of(2)
                    && (2..=8).contains(&word.len())
                    && word.bytes().all(|b| b.is_ascii_hexdigit());
                if !group {
                    break;
                }
                for (offset, byte) in word.bytes().enumerate() {
                    projected.keep(byte.to_ascii_lowercase(), line_start + at + offset);
                }
            }
        }
        line_start += line.len();
    }
}

/// The whitespace-separated words of `line` with the byte offset of each.
fn words_at(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = line;
    let mut at = 0;
    std::iter::from_fn(move || {
        let trimmed = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
        at += rest.len() - trimmed.len();
        let end = trimmed
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(trimmed.len());
        let (word, after) = trimmed.split_at_checked(end)?;
        if word.is_empty() {
            return None;
        }
        let found = (at, word);
        at += word.len();
        rest = after;
        Some(found)
    })
}

/// The byte of a `%XX` escape at `index`.
fn percent_escape(bytes: &[u8], index: usize) -> Option<u8> {
    let high = char::from(*bytes.get(index + 1)?).to_digit(16)?;
    let low = char::from(*bytes.get(index + 2)?).to_digit(16)?;
    u8::try_from(high * 16 + low).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    fn standard_base64(bytes: &[u8]) -> String {
        STANDARD.encode(bytes)
    }

    #[test]
    fn an_aligned_core_is_the_encoding_less_its_partial_last_character() {
        assert_eq!(base64_core(b"foobar", 0), "Zm9vYmFy");
        assert_eq!(base64_core(b"fooba", 0), "Zm9vYm");
        assert_eq!(base64_core(b"foob", 0), "Zm9vY");
    }

    #[test]
    fn a_shifted_core_is_inside_the_encoding_of_any_prefix() {
        let value = b"sk-proj-Abc123Def456Ghi789";
        for prefix in [&b""[..], b"x", b"xy", b"xyz", b"TOKEN=", b"ab"] {
            for suffix in [&b""[..], b"\n", b"!!", b"tail"] {
                let mut whole = prefix.to_vec();
                whole.extend_from_slice(value);
                whole.extend_from_slice(suffix);
                let encoded = standard_base64(&whole);
                let core = base64_core(value, prefix.len() % 3);
                assert!(
                    encoded.contains(&core),
                    "{core} not in {encoded} (prefix {prefix:?})"
                );
            }
        }
    }

    #[test]
    fn projections_map_back_to_the_original_bytes() {
        let text = "a %41 0x4b, b";
        let hex = project(text, Projection::Hex);
        assert_eq!(hex.text, b"a414bb");
        let alnum = project(text, Projection::Alphanumeric);
        assert_eq!(alnum.text, b"aA0x4bb");
        assert_eq!(alnum.original(1..2), Some(2..5));
    }

    #[test]
    fn a_dump_keeps_its_byte_columns_only() {
        let text = "00000000: 736b 2d70  sk-p\n000010 61 62  |ab|\nnot 6162 a dump\n";
        let dump = project(text, Projection::HexDump);
        assert_eq!(dump.text, b"736b2d706162");
        assert_eq!(dump.original(0..1), Some(10..11));
        let words: Vec<_> = words_at("  ab  cd e").collect();
        assert_eq!(words, [(2, "ab"), (6, "cd"), (9, "e")]);
    }
}
