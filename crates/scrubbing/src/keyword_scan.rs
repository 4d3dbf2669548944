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
//! The automaton is ASCII case-insensitive (gitleaks lowercases the text before it
//! looks for keywords); a labelled trigger word counts only in the three spellings the
//! labelled layer reads — lower, Capitalised, UPPER (`token`, `Token`, `TOKEN`) — as
//! the regex did. Keys in odd mixed case (`tOkEn`) are the entropy scan's to notice.

use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use aho_corasick::automaton::Automaton;
use aho_corasick::automaton::StateID;
use aho_corasick::dfa::DFA;
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{Anchored, MatchKind, StartKind};

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

/// The automata over every keyword and what each stands for.
///
/// Two automata over the same words: a contiguous NFA, built at once, and a DFA, built
/// once the scanner has walked [`DFA_AFTER`] bytes. The DFA walks a byte several times
/// faster but costs ~14.7 M instructions to build (release), the NFA ~4.9 M: a short
/// run (a few tool calls) never pays for the DFA, a long one gets it once it pays.
#[derive(Debug)]
pub(crate) struct KeywordScanner {
    nfa: NFA,
    /// Built on the first scan after [`DFA_AFTER`] bytes (`None` inside: it could not
    /// be built, and the NFA goes on).
    dfa: OnceLock<Option<DFA>>,
    /// Bytes walked by the NFA so far.
    walked: AtomicUsize,
    /// The keywords, lowercase, kept for building the DFA.
    words: Vec<String>,
    entries: Vec<Entry>,
    /// The longest keyword's length: how far back of the middle the second of two
    /// walks starts (see [`KeywordScanner::scan`]).
    longest: usize,
}

/// Texts at least this long are walked as two halves at once.
const TWO_WALKS_FROM: usize = 4096;

/// Bytes the NFA walks before the DFA is built: where the DFA's cheaper walk has paid
/// for its build. Measured in a release build of the 20-turn run (callgrind, the
/// runtime's scrub memo on): the DFA's build costs ~9.8 M instructions more than the
/// NFA's, and the NFA's walk ~10 more a byte; the run scrubs just under a megabyte,
/// and the two came out within 0.3% of each other over the whole run.
const DFA_AFTER: usize = 1 << 20;

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
        let mut words: Vec<String> = Vec::new();
        let mut entries: Vec<Entry> = Vec::new();
        for word in LABEL_WORDS {
            entry(&mut words, &mut entries, word)?.label = true;
        }
        for (rule, keywords) in rule_keywords.enumerate() {
            for word in keywords {
                entry(&mut words, &mut entries, word)?.rules.push(rule);
            }
        }
        for (pattern, literal) in triggers {
            if pattern >= MAX_PATTERNS || literal.is_empty() {
                return None;
            }
            entry(&mut words, &mut entries, literal)?
                .triggers
                .push((pattern, literal));
        }
        // With 280 keywords, two-letter ones among them, in both cases, no prefilter
        // skips much: both automata are walked by hand (`scan`), without a prefilter,
        // unanchored only.
        let nfa = NFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(&words)
            .ok()?;
        nfa.start_state(Anchored::No).ok()?;
        let longest = words.iter().map(String::len).max().unwrap_or(0);
        Some(Self {
            nfa,
            dfa: OnceLock::new(),
            walked: AtomicUsize::new(0),
            words,
            entries,
            longest,
        })
    }

    /// The DFA over the same words as the NFA, the first time `text` takes the bytes
    /// walked to [`DFA_AFTER`] or beyond; `None` before (and if it cannot be built).
    fn dfa_for(&self, text: &str) -> Option<&DFA> {
        if let Some(built) = self.dfa.get() {
            return built.as_ref();
        }
        let walked = self.walked.fetch_add(text.len(), Ordering::Relaxed);
        if walked.saturating_add(text.len()) < DFA_AFTER {
            return None;
        }
        self.dfa.get_or_init(|| build_dfa(&self.words)).as_ref()
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
        match self.dfa_for(text) {
            Some(dfa) => self.scan_with(dfa, text),
            None => self.scan_with(&self.nfa, text),
        }
    }

    /// [`KeywordScanner::scan`] with one of the automata.
    fn scan_with<A: Automaton>(&self, dfa: &A, text: &str) -> Hits {
        let mut hits = Hits::default();
        let bytes = text.as_bytes();
        // Checked in `build` (and `build_dfa`).
        let Ok(start) = dfa.start_state(Anchored::No) else {
            return hits;
        };
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
    fn walk_rest<A: Automaton>(
        &self,
        dfa: &A,
        mut state: StateID,
        from: usize,
        after: usize,
        bytes: &[u8],
        hits: &mut Hits,
    ) {
        // One transition per byte; the overlapping iterator of `aho-corasick` spent
        // about twice the instructions per byte around the same transitions. The walk
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
    fn matches_at<A: Automaton>(
        &self,
        dfa: &A,
        state: StateID,
        end: usize,
        after: usize,
        bytes: &[u8],
        hits: &mut Hits,
    ) {
        if end <= after || !dfa.is_match(state) {
            return;
        }
        for index in 0..dfa.match_len(state) {
            let id = dfa.match_pattern(state, index);
            let start = end.saturating_sub(dfa.pattern_len(id));
            self.found(id.as_usize(), start..end, bytes, hits);
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

/// Walks `dfa` from `state` over `bytes` until it enters a match state: that state and
/// how many bytes were taken (the last of them ends the match), or the state after
/// every byte and `bytes.len()`.
#[inline(always)]
fn walk<A: Automaton>(dfa: &A, mut state: StateID, bytes: &[u8]) -> (StateID, usize) {
    for (at, &byte) in bytes.iter().enumerate() {
        state = dfa.next_state(Anchored::No, state, byte);
        if dfa.is_match(state) {
            return (state, at + 1);
        }
    }
    (state, bytes.len())
}

/// [`walk`] over `a` and `b` (of one length) at once, until either enters a match
/// state: both states and how many bytes each took.
#[inline(always)]
fn walk_two<A: Automaton>(
    dfa: &A,
    mut a: StateID,
    first: &[u8],
    mut b: StateID,
    second: &[u8],
) -> (StateID, StateID, usize) {
    for (at, (&x, &y)) in first.iter().zip(second).enumerate() {
        a = dfa.next_state(Anchored::No, a, x);
        b = dfa.next_state(Anchored::No, b, y);
        if dfa.is_match(a) || dfa.is_match(b) {
            return (a, b, at + 1);
        }
    }
    (a, b, first.len().min(second.len()))
}

/// The DFA over `words`: one transition a byte, the fast walk for long scrubbing.
/// `None` if it cannot be built (the NFA goes on).
fn build_dfa(words: &[String]) -> Option<DFA> {
    let dfa = DFA::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .prefilter(false)
        .start_kind(StartKind::Unanchored)
        .build(words)
        .ok()?;
    dfa.start_state(Anchored::No).ok()?;
    Some(dfa)
}

/// The entry of `word` (lowercased), added if new.
fn entry<'e>(
    words: &mut Vec<String>,
    entries: &'e mut Vec<Entry>,
    word: &str,
) -> Option<&'e mut Entry> {
    let lower = word.to_ascii_lowercase();
    let at = match words.iter().position(|w| *w == lower) {
        Some(at) => at,
        None => {
            words.push(lower);
            entries.push(Entry::default());
            entries.len() - 1
        }
    };
    entries.get_mut(at)
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
