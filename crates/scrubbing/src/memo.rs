//! What a scrubber found in the texts it scrubbed last ([`Memo`]), so that scrubbing
//! the same text again costs a compare instead of a scan.
//!
//! A run scrubs most tool outputs twice or more: once in the event that reports the
//! call, once in the result the model reads, and a clean text once more where it is
//! stored. A scan costs ~90 instructions a byte (1 MB mixed bench, callgrind); finding
//! a remembered text costs a compare of lengths per entry and one compare of the
//! whole text, a fraction of an instruction a byte. No hash is taken: hashing every
//! text looked up cost more (SipHash, ~1.5 instructions a byte) than the compares it
//! would save, since remembered texts of the same length are rare and a compare
//! stops at the first differing byte. Even at worst (every entry of the same length
//! and prefix) a lookup compares at most the memo's byte bound, far less than a
//! scan. Short texts (a tool's name and arguments) are remembered too, on a shelf of
//! their own: their scan costs little each time, but they come back in every event.
//!
//! A memo belongs to one configuration: [`crate::Scrubber`]'s builders give a scrubber
//! whose configuration changes a fresh memo, so a text scrubbed before a known secret
//! was added is scanned again.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use crate::redaction::Redaction;

/// Texts shorter than this go on the short shelf ([`SHORT`]), the others on the long.
const MIN_LEN: usize = 256;

/// The most bytes of text the long shelf remembers, all entries together; a text
/// longer than this is never remembered.
const MAX_BYTES: usize = 4 << 20;

/// How many texts a shelf keeps and how many bytes of them.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    capacity: usize,
    max_bytes: usize,
}

/// Tool outputs, file contents, answers: the texts scrubbed again on their way from
/// the event to the model and the store.
const LONG: Bounds = Bounds {
    capacity: 64,
    max_bytes: MAX_BYTES,
};

/// A tool's name and arguments, a progress line: each event's short texts are
/// scrubbed where the run emits it and again where it is printed, and the same calls
/// come back turn after turn. A scan of a short text costs ~3,700 instructions
/// (most of it fixed: the passes each text goes through); looking it up here, a
/// compare of lengths per entry and of the bytes of those as long, a few hundred.
const SHORT: Bounds = Bounds {
    capacity: 64,
    max_bytes: 64 * MIN_LEN,
};

/// The texts a scrubber scrubbed last and the redactions it found in each, most
/// recent last: short and long texts on shelves of their own, so that an event's
/// short texts never push out the long ones.
#[derive(Default)]
pub(crate) struct Memo {
    long: Mutex<Entries>,
    short: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    list: VecDeque<Entry>,
    bytes: usize,
}

struct Entry {
    text: Box<str>,
    redactions: Vec<Redaction>,
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("Memo");
        for (name, shelf) in [("long", &self.long), ("short", &self.short)] {
            let entries = shelf.lock().unwrap_or_else(PoisonError::into_inner);
            out.field(name, &(entries.list.len(), entries.bytes));
        }
        out.finish()
    }
}

impl Memo {
    /// Whether `text` is one the memo would remember: not empty (nothing to scan),
    /// not longer than the long shelf holds.
    pub(crate) fn worth_it(text: &str) -> bool {
        (1..=MAX_BYTES).contains(&text.len())
    }

    /// The shelf for `text` and its bounds.
    fn shelf(&self, text: &str) -> (&Mutex<Entries>, Bounds) {
        if text.len() < MIN_LEN {
            (&self.short, SHORT)
        } else {
            (&self.long, LONG)
        }
    }

    /// The redactions found in `text` when it was scrubbed last, if it is remembered.
    pub(crate) fn get(&self, text: &str) -> Option<Vec<Redaction>> {
        let (shelf, _) = self.shelf(text);
        let entries = shelf.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .list
            .iter()
            .rev()
            .find(|entry| entry.holds(text))
            .map(|entry| entry.redactions.clone())
    }

    /// Remembers `redactions` as what `text` holds, forgetting the oldest texts of its
    /// shelf past the shelf's bounds.
    pub(crate) fn put(&self, text: &str, redactions: &[Redaction]) {
        if !Self::worth_it(text) {
            return;
        }
        let (shelf, bounds) = self.shelf(text);
        let mut entries = shelf.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.list.iter().any(|entry| entry.holds(text)) {
            return;
        }
        entries.bytes += text.len();
        entries.list.push_back(Entry {
            text: text.into(),
            redactions: redactions.to_vec(),
        });
        while entries.list.len() > bounds.capacity || entries.bytes > bounds.max_bytes {
            let Some(oldest) = entries.list.pop_front() else {
                break;
            };
            entries.bytes = entries.bytes.saturating_sub(oldest.text.len());
        }
    }
}

impl Entry {
    /// Whether this entry remembers `text`: the lengths first, then the bytes.
    fn holds(&self, text: &str) -> bool {
        self.text.len() == text.len() && *self.text == *text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redaction::RedactionKind;

    fn redaction(start: usize) -> Redaction {
        Redaction {
            range: start..start + 4,
            kind: RedactionKind::HighEntropy,
        }
    }

    #[test]
    fn a_text_is_found_by_its_whole_content() {
        let memo = Memo::default();
        let text = "x".repeat(MIN_LEN);
        assert_eq!(memo.get(&text), None);
        memo.put(&text, &[redaction(3)]);
        assert_eq!(memo.get(&text), Some(vec![redaction(3)]));
        let other = format!("{}y", &text[1..]);
        assert_eq!(memo.get(&other), None);
    }

    /// A scrubber with a memo answers as one without, the first time and the next.
    #[test]
    fn a_remembered_text_scrubs_as_a_scanned_one() {
        let plain = crate::Scrubber::new();
        let remembering = crate::Scrubber::new().with_memo();
        let filler = "cargo build --release finished in 12.3s\n".repeat(8);
        for secret in [
            "",
            "password=hunter2hunter2",
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlX2hlcmU",
            "AKIAIOSFODNN7EXAMPLF key id",
        ] {
            let text = format!("{filler}{secret}\n{filler}");
            let expected = plain.scrub(&text);
            for _ in 0..2 {
                let got = remembering.clone().scrub(&text);
                assert_eq!(got.text, expected.text);
                assert_eq!(got.redactions, expected.redactions);
                assert_eq!(got.is_clean(), secret.is_empty());
            }
        }
    }

    /// A secret made known, or entropy detection turned on, after a text was
    /// remembered is found in it: the new configuration has a memo of its own.
    #[test]
    fn a_changed_configuration_scans_again() {
        let scrubber = crate::Scrubber::new()
            .with_entropy_detection(false)
            .with_memo();
        let phrase = "correct-horse-battery-staple";
        let random = "Zq8vL2xN7pR4tW9kY3mB6cD1fG5hJ0sV";
        let text = format!("{}say {phrase} then {random}\n", "ok\n".repeat(100));
        let before = scrubber.scrub(&text);
        assert!(before.is_clean(), "{}", before.text);
        let knowing = scrubber
            .clone()
            .with_known_secrets([("PHRASE", phrase)])
            .unwrap();
        let after = knowing.scrub(&text);
        assert!(!after.text.contains(phrase), "{}", after.text);
        assert!(after.text.contains(random), "{}", after.text);
        let with_entropy = knowing.with_entropy_detection(true);
        let last = with_entropy.scrub(&text);
        assert!(
            !last.text.contains(phrase) && !last.text.contains(random),
            "{}",
            last.text
        );
        // The first configuration still remembers its own answer.
        assert!(scrubber.scrub(&text).is_clean());
    }

    #[test]
    fn empty_and_huge_texts_are_not_remembered() {
        let memo = Memo::default();
        memo.put("", &[]);
        assert_eq!(memo.get(""), None);
        let huge = "x".repeat(MAX_BYTES + 1);
        memo.put(&huge, &[]);
        assert_eq!(memo.get(&huge), None);
    }

    #[test]
    fn the_oldest_texts_are_forgotten_past_the_bounds() {
        let memo = Memo::default();
        let texts: Vec<String> = (0..=LONG.capacity).map(|i| format!("{i:0>300}")).collect();
        for text in &texts {
            memo.put(text, &[]);
        }
        assert_eq!(memo.get(&texts[0]), None);
        assert_eq!(memo.get(&texts[LONG.capacity]), Some(Vec::new()));
        let big = "b".repeat(MAX_BYTES / 2 + 1);
        memo.put(&big, &[]);
        memo.put(&big.replace('b', "c"), &[]);
        assert_eq!(memo.get(&big), None, "over the byte bound");
        assert_eq!(memo.get(&texts[LONG.capacity]), None);
    }

    /// Short texts have a shelf of their own: however many an event brings, the long
    /// texts stay remembered.
    #[test]
    fn short_texts_never_push_out_long_ones() {
        let memo = Memo::default();
        let long = "l".repeat(MIN_LEN);
        memo.put(&long, &[redaction(0)]);
        let shorts: Vec<String> = (0..=SHORT.capacity * 3)
            .map(|i| format!("{{\"path\":\"notes/{i}.txt\"}}"))
            .collect();
        for short in &shorts {
            memo.put(short, &[]);
        }
        assert_eq!(memo.get(&long), Some(vec![redaction(0)]));
        assert_eq!(
            memo.get(&shorts[0]),
            None,
            "the oldest short text is forgotten"
        );
        assert_eq!(memo.get(shorts.last().unwrap()), Some(Vec::new()));
        let one = "a".repeat(MIN_LEN - 1);
        memo.put(&one, &[redaction(2)]);
        assert_eq!(memo.get(&one), Some(vec![redaction(2)]));
    }
}
