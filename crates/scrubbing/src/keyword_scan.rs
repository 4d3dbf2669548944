//! One pass over a text for every keyword the scrubber looks for: the secret words
//! that trigger the labelled values (`token`, `pass`, `KEY`, …; see `labelled`), the
//! literal triggers of the other built-in patterns (`ghp_`, `://`, `-----BEGIN`; see
//! `keyword_patterns`) and the keywords of gitleaks' rules (`rule_scan`).
//!
//! These used to be three searches: the labelled trigger as a case-sensitive regex
//! alternation, the other triggers as a `RegexSet` (whose `matches` walks the whole
//! text, its Teddy prefilter stopping at every `--` and `sk-`) and the rules'
//! keywords by an Aho-Corasick DFA. Each walk of the text cost about as much as the
//! others, so one automaton over the union of the words now walks it once and sorts
//! what it finds: a keyword id maps to the rules it belongs to, to whether it is a
//! labelled trigger word, and to the built-in patterns it triggers.
//!
//! The automaton ([`KeywordDfa`], built by this crate) is ASCII case-insensitive
//! (gitleaks lowercases the text before it looks for keywords); a labelled trigger
//! word counts only in the three spellings the labelled layer reads — lower,
//! Capitalised, UPPER (`token`, `Token`, `TOKEN`) — as the regex did. Keys in odd
//! mixed case (`tOkEn`) are the entropy scan's to notice.

use std::collections::HashMap;
use std::ops::Range;

use crate::keyword_dfa::{KeywordDfa, StateId};

/// The labelled values' trigger words, lowercase. Each is looked for in three
/// spellings: `key` covers `api_key`, `private_key`, …; `pass` covers `password`,
/// `passphrase`, `SMTP_PASS`; `pw` covers `pwd`; `sess` covers `sessionid`; `sig` a
/// URL's `&sig=`; `hook` a `WEBHOOK_URL`; `fresh` an `OAUTH_REFRESH`; `salt` and `dsn`
/// themselves.
pub(crate) const LABEL_WORDS: &[&str] = &[
    "token", "secret", "pass", "pw", "key", "auth", "cred", "cookie", "sess", "sig", "salt", "dsn",
    "hook", "fresh",
];

/// What one pass found.
#[derive(Debug, Default)]
pub(crate) struct Hits {
    /// Labelled trigger words in one of their three spellings, sorted by start.
    pub(crate) labels: Vec<Range<usize>>,
    /// `(rule, position of one of its keywords)`, one per occurrence of a keyword and
    /// rule, unsorted.
    pub(crate) rules: Vec<(usize, usize)>,
    /// The built-in patterns whose literal trigger occurs (bit `i`: pattern `i`).
    pub(crate) patterns: u64,
}

impl Hits {
    /// Whether built-in pattern `index`'s trigger occurs.
    pub(crate) fn triggers(&self, index: usize) -> bool {
        u32::try_from(index)
            .ok()
            .and_then(|i| 1u64.checked_shl(i))
            .is_some_and(|bit| self.patterns & bit != 0)
    }
}

/// What one keyword of the automaton stands for.
#[derive(Debug, Default, Clone)]
struct Entry {
    /// Whether it is a labelled trigger word.
    label: bool,
    /// The rules it belongs to.
    rules: Vec<usize>,
    /// `(built-in pattern, literal)`: the pattern is triggered when the text holds
    /// the literal, case and all.
    triggers: Vec<(usize, &'static str)>,
}

/// The automaton over every keyword ([`KeywordDfa`]) and what each stands for.
#[derive(Debug)]
pub(crate) struct KeywordScanner {
    dfa: KeywordDfa,
    entries: Vec<Entry>,
    /// The longest keyword's length: how far back of the middle the second of two
    /// walks starts (see [`KeywordScanner::scan`]).
    longest: usize,
}

/// Texts at least this long are walked as two halves at once.
const TWO_WALKS_FROM: usize = 4096;

/// The most built-in patterns a scanner can report (`Hits::patterns` is a `u64`).
pub(crate) const MAX_PATTERNS: usize = 64;

impl KeywordScanner {
    /// The automaton over the label words, each rule's keywords (rule `i` is the
    /// `i`-th item, keywords lowercase) and the built-in patterns' literal triggers
    /// `(pattern, literal)`, matched case-sensitively. `None` when it cannot be built
    /// or a pattern index is [`MAX_PATTERNS`] or more.
    pub(crate) fn build<'a>(
        rule_keywords: impl Iterator<Item = &'a [&'static str]>,
        triggers: impl Iterator<Item = (usize, &'static str)>,
    ) -> Option<Self> {
        let Words {
            list: words,
            entries,
            ..
        } = Words::collect(rule_keywords, triggers)?;
        // The built-in keywords' automaton was built ahead of time; any other set is
        // built here.
        let dfa = if is_static_words(&words) {
            KeywordDfa::from_static(&crate::keyword_table::TABLE, &words)
        } else {
            KeywordDfa::build(&words)?
        };
        let longest = words.iter().map(String::len).max().unwrap_or(0);
        Some(Self {
            dfa,
            entries,
            longest,
        })
    }

    /// The keywords [`KeywordScanner::build`] gives its automaton for these inputs, in
    /// the automaton's order.
    #[cfg(test)]
    pub(crate) fn keywords<'a>(
        rule_keywords: impl Iterator<Item = &'a [&'static str]>,
        triggers: impl Iterator<Item = (usize, &'static str)>,
    ) -> Option<Vec<String>> {
        Words::collect(rule_keywords, triggers).map(|words| words.list)
    }

    /// Every keyword of `text`, in one pass.
    ///
    /// A long text is walked as two halves at once: the first from its start to the
    /// middle, the second from `longest` bytes before the middle to the end, reporting
    /// only what ends after the middle. The second walk is in the same state as one
    /// from the text's start from the middle on (a state is the longest suffix read
    /// that begins a keyword, at most `longest` bytes), so every keyword is found once.
    /// One walk is a chain of dependent loads (each transition needs the state before
    /// it); two independent chains keep the core busy while each waits.
    pub(crate) fn scan(&self, text: &str) -> Hits {
        let dfa = &self.dfa;
        let mut hits = Hits::default();
        let bytes = text.as_bytes();
        let start = dfa.start();
        let middle = bytes.len() / 2;
        if bytes.len() < TWO_WALKS_FROM || middle <= self.longest {
            self.walk_rest(dfa, start, 0, 0, bytes, &mut hits);
        } else {
            let second_from = middle - self.longest;
            let (first, second) = (
                bytes.get(..middle).unwrap_or_default(),
                bytes.get(second_from..).unwrap_or_default(),
            );
            let (mut a, mut b) = (start, start);
            let mut done = 0;
            while done < middle {
                let (Some(rest_a), Some(rest_b)) = (first.get(done..), second.get(done..middle))
                else {
                    break;
                };
                let (next_a, next_b, taken) = walk_two(dfa, a, rest_a, b, rest_b);
                (a, b) = (next_a, next_b);
                done += taken;
                self.matches_at(dfa, a, done, 0, bytes, &mut hits);
                self.matches_at(dfa, b, second_from + done, middle, bytes, &mut hits);
            }
            self.walk_rest(dfa, b, second_from + middle, middle, bytes, &mut hits);
        }
        // Two trigger words never start at the same byte (none is a prefix of
        // another).
        hits.labels.sort_unstable_by_key(|r| r.start);
        hits
    }

    /// Walks from `state` at `from` to the end of `bytes`, recording each keyword that
    /// ends after `after`.
    fn walk_rest(
        &self,
        dfa: &KeywordDfa,
        mut state: StateId,
        from: usize,
        after: usize,
        bytes: &[u8],
        hits: &mut Hits,
    ) {
        // One transition per byte. The walk
        // between matches is a loop of its own (`walk`): with the matches handled in
        // the same loop, the state was kept on the stack and every transition waited
        // for a store and a load of it.
        let mut end = from;
        while let Some(rest) = bytes.get(end..).filter(|rest| !rest.is_empty()) {
            let (next, advanced) = walk(dfa, state, rest);
            state = next;
            end += advanced;
            self.matches_at(dfa, state, end, after, bytes, hits);
        }
    }

    /// Records the keywords of `state` (none unless it is a match state), which end at
    /// `end`, when `end` is after `after`.
    fn matches_at(
        &self,
        dfa: &KeywordDfa,
        state: StateId,
        end: usize,
        after: usize,
        bytes: &[u8],
        hits: &mut Hits,
    ) {
        if end <= after || !dfa.is_match(state) {
            return;
        }
        for &id in dfa.keywords(state) {
            let start = end.saturating_sub(dfa.keyword_len(id));
            self.found(id as usize, start..end, bytes, hits);
        }
    }

    /// Records keyword `id` found at `range`.
    fn found(&self, id: usize, range: Range<usize>, bytes: &[u8], hits: &mut Hits) {
        let (Some(entry), Some(word)) = (self.entries.get(id), bytes.get(range.clone())) else {
            return;
        };
        hits.rules
            .extend(entry.rules.iter().map(|&rule| (rule, range.start)));
        if entry.label && is_trigger_spelling(word) {
            hits.labels.push(range);
        }
        for &(pattern, literal) in &entry.triggers {
            if word == literal.as_bytes() {
                hits.patterns |= 1u64 << (pattern % MAX_PATTERNS);
            }
        }
    }
}

/// Whether `words` are the keywords `keyword_table.rs` was generated from, in its
/// order.
fn is_static_words(words: &[String]) -> bool {
    let table = &crate::keyword_table::WORDS;
    words.len() == table.len() && words.iter().zip(table).all(|(word, &built)| word == built)
}

/// Walks `dfa` from `state` over `bytes` until it enters a match state: that state and
/// how many bytes were taken (the last of them ends the match), or the state after
/// every byte and `bytes.len()`.
#[inline(always)]
fn walk(dfa: &KeywordDfa, mut state: StateId, bytes: &[u8]) -> (StateId, usize) {
    let dfa = dfa.transitions();
    for (at, &byte) in bytes.iter().enumerate() {
        state = dfa.next_state(state, byte);
        if dfa.is_match(state) {
            return (state, at + 1);
        }
    }
    (state, bytes.len())
}

/// [`walk`] over `a` and `b` (of one length) at once, until either enters a match
/// state: both states and how many bytes each took.
#[inline(always)]
fn walk_two(
    dfa: &KeywordDfa,
    mut a: StateId,
    first: &[u8],
    mut b: StateId,
    second: &[u8],
) -> (StateId, StateId, usize) {
    let dfa = dfa.transitions();
    for (at, (&x, &y)) in first.iter().zip(second).enumerate() {
        a = dfa.next_state(a, x);
        b = dfa.next_state(b, y);
        if dfa.is_match(a) || dfa.is_match(b) {
            return (a, b, at + 1);
        }
    }
    (a, b, first.len().min(second.len()))
}

/// The keywords while a scanner is built: each once, lowercased, with its entry.
#[derive(Default)]
struct Words {
    list: Vec<String>,
    index: HashMap<String, usize>,
    entries: Vec<Entry>,
}

impl Words {
    /// The label words, each rule's keywords and the patterns' literal triggers, each
    /// once with what it stands for. `None` for an empty keyword or a pattern index
    /// of [`MAX_PATTERNS`] or more.
    fn collect<'a>(
        rule_keywords: impl Iterator<Item = &'a [&'static str]>,
        triggers: impl Iterator<Item = (usize, &'static str)>,
    ) -> Option<Self> {
        let mut words = Words::default();
        for word in LABEL_WORDS {
            words.entry(word)?.label = true;
        }
        for (rule, keywords) in rule_keywords.enumerate() {
            for word in keywords {
                words.entry(word)?.rules.push(rule);
            }
        }
        for (pattern, literal) in triggers {
            if pattern >= MAX_PATTERNS || literal.is_empty() {
                return None;
            }
            words.entry(literal)?.triggers.push((pattern, literal));
        }
        Some(words)
    }

    /// The entry of `word` (lowercased), added if new.
    fn entry(&mut self, word: &str) -> Option<&mut Entry> {
        let lower = word.to_ascii_lowercase();
        let at = match self.index.get(&lower) {
            Some(&at) => at,
            None => {
                let at = self.list.len();
                self.index.insert(lower.clone(), at);
                self.list.push(lower);
                self.entries.push(Entry::default());
                at
            }
        };
        self.entries.get_mut(at)
    }
}

/// Lower, Capitalised or UPPER: the spellings the labelled layer reads.
fn is_trigger_spelling(word: &[u8]) -> bool {
    let Some((first, rest)) = word.split_first() else {
        return false;
    };
    let lower_rest = rest.iter().all(u8::is_ascii_lowercase);
    (first.is_ascii_lowercase() && lower_rest)
        || (first.is_ascii_uppercase() && (lower_rest || rest.iter().all(u8::is_ascii_uppercase)))
}

#[cfg(test)]
mod tests;
