//! The keyword automaton: an Aho-Corasick automaton over the scrubber's keywords,
//! ASCII case-insensitive, built straight into a dense DFA (one table lookup a byte,
//! no failure transitions to follow at scan time).
//!
//! It replaces `aho-corasick`'s two automata here: its contiguous NFA (cheap to build,
//! ~3.2 M instructions for the scrubber's ~340 keywords in a release build, but
//! following failure links costs ~20 instructions a byte) and its DFA (one lookup a
//! byte, but ~14.7 M instructions to build, so it was built only after a megabyte had
//! been scanned). Built here, the same DFA costs a trie, its failure links, and one
//! breadth-first pass that copies each state's row from its failure state's and writes
//! its own children over it.
//!
//! - **Byte classes.** Bytes that no keyword holds (in either case) are one class;
//!   every other byte is a class of its own, an upper-case letter sharing its
//!   lower-case letter's. A row has one entry per class.
//! - **Overlapping matches.** Each state lists every keyword ending where it is
//!   entered: its own and those of its failure chain (`pass` and `ss` both end in
//!   `pass`).
//! - **Layout.** A state is the index of its row (premultiplied: a transition is an
//!   add and a load, the chain each byte waits on). The start state is 0, the states
//!   with no keyword come in breadth-first order (the shallow ones, where a walk over
//!   plain text stays, share a few pages) and the states with one come last, so "is
//!   this a match state" is one compare. A row is exactly one entry a class wide (the
//!   scrubber's 48 classes padded to 64 had cost the table a quarter: 372 KiB against
//!   279); a match state's rank, wanted at every match, is a multiply and a shift.

/// A state: the index of its row's first entry in the table (premultiplied, so that
/// a transition is one add and one load).
pub(crate) type StateId = u32;

/// The automaton (see the module's doc).
#[derive(Debug, Clone)]
pub(crate) struct KeywordDfa {
    /// The class of each byte.
    classes: [u8; 256],
    /// `ceil(2^32 / stride)`, where a row's stride is one entry a class, no padding: a
    /// match state's rank is `(offset * rank_magic) >> 32`, a
    /// multiply, exact for every multiple of `stride` that fits a `u32` (a division, at
    /// every match, cost the bench's megabyte ~5%; rows a power of two wide cost the
    /// table a quarter of its size).
    rank_magic: u64,
    /// `next[state + class]`: the state after reading a byte of `class` in `state`.
    next: Vec<StateId>,
    /// The smallest state with keywords; every state from it on has some.
    first_match: StateId,
    /// The keywords of match state `first_match + k * stride`:
    /// `keywords[ends[k]..ends[k + 1]]`.
    ends: Vec<u32>,
    keywords: Vec<u32>,
    /// Each keyword's length in bytes.
    lengths: Vec<usize>,
}

/// A trie node while building.
#[derive(Default)]
struct Node {
    /// `(class, child)`, a handful at most.
    children: Vec<(u8, u32)>,
    /// The keywords ending here, those of the failure chain included once linked.
    words: Vec<u32>,
    /// The node of the longest proper suffix that is also a prefix of a keyword.
    fail: u32,
}

impl Node {
    fn child(&self, class: u8) -> Option<usize> {
        self.children
            .iter()
            .find(|(c, _)| *c == class)
            .map(|&(_, child)| child as usize)
    }
}

impl KeywordDfa {
    /// The automaton over `words` (matched ASCII case-insensitively; keyword `i` is
    /// `words[i]`). `None` for an empty keyword or a table larger than a [`StateId`]
    /// can index.
    pub(crate) fn build(words: &[String]) -> Option<Self> {
        let (classes, class_count) = byte_classes(words)?;
        let stride = class_count;
        let rank_magic = (1u64 << 32).div_ceil(u64::try_from(stride.max(1)).ok()?);
        let (nodes, order) = link(trie(words, &classes)?)?;
        // Every state, premultiplied, must fit a `StateId`.
        StateId::try_from(nodes.len().checked_mul(stride)?).ok()?;
        // Numbered: states without keywords first (breadth first, the start at 0),
        // then those with.
        let (plain, matching): (Vec<usize>, Vec<usize>) = order
            .iter()
            .partition(|&&node| nodes.get(node).is_some_and(|n| n.words.is_empty()));
        let mut number = vec![0 as StateId; nodes.len()];
        for (rank, &node) in plain.iter().chain(&matching).enumerate() {
            *number.get_mut(node)? = StateId::try_from(rank.checked_mul(stride)?).ok()?;
        }
        // Rows, breadth first: a state's row is its failure state's (filled already:
        // it is shallower) with its own children written over it.
        let mut next = vec![0 as StateId; nodes.len().checked_mul(stride)?];
        for &node in &order {
            let entry = nodes.get(node)?;
            let row = *number.get(node)? as usize;
            if node != 0 {
                let from = *number.get(entry.fail as usize)? as usize;
                if from.max(row).checked_add(stride)? > next.len() {
                    return None;
                }
                next.copy_within(from..from + stride, row);
            }
            for &(class, child) in &entry.children {
                *next.get_mut(row + usize::from(class))? = *number.get(child as usize)?;
            }
        }
        let mut ends = vec![0u32];
        let mut keywords = Vec::new();
        for &node in &matching {
            keywords.extend_from_slice(&nodes.get(node)?.words);
            ends.push(u32::try_from(keywords.len()).ok()?);
        }
        Some(Self {
            classes,
            rank_magic,
            next,
            first_match: StateId::try_from(plain.len().checked_mul(stride)?).ok()?,
            ends,
            keywords,
            lengths: words.iter().map(String::len).collect(),
        })
    }

    /// The start state.
    pub(crate) const fn start(&self) -> StateId {
        0
    }

    /// The state after `byte` in `state`.
    #[inline(always)]
    pub(crate) fn next_state(&self, state: StateId, byte: u8) -> StateId {
        let at = state as usize + usize::from(class_in(&self.classes, byte));
        // Every state's row holds every class (`build`); the start state is the
        // answer if it ever did not.
        self.next.get(at).copied().unwrap_or(0)
    }

    /// Whether keywords end in `state`.
    #[inline(always)]
    pub(crate) fn is_match(&self, state: StateId) -> bool {
        state >= self.first_match
    }

    /// The keywords ending in `state` (none unless it is a match state).
    pub(crate) fn keywords(&self, state: StateId) -> &[u32] {
        let Some(rank) = state
            .checked_sub(self.first_match)
            .map(|offset| ((u64::from(offset) * self.rank_magic) >> 32) as usize)
        else {
            return &[];
        };
        let (Some(&from), Some(&to)) = (self.ends.get(rank), self.ends.get(rank + 1)) else {
            return &[];
        };
        self.keywords
            .get(from as usize..to as usize)
            .unwrap_or_default()
    }

    /// The length in bytes of keyword `id`.
    pub(crate) fn keyword_len(&self, id: u32) -> usize {
        self.lengths.get(id as usize).copied().unwrap_or(0)
    }
}

/// The trie of `words` by class; `None` for an empty word.
fn trie(words: &[String], classes: &[u8; 256]) -> Option<Vec<Node>> {
    let mut nodes = vec![Node::default()];
    for (id, word) in words.iter().enumerate() {
        if word.is_empty() {
            return None;
        }
        let mut at = 0;
        for &byte in word.as_bytes() {
            let class = class_in(classes, byte);
            at = match nodes.get(at)?.child(class) {
                Some(child) => child,
                None => {
                    let child = nodes.len();
                    nodes.push(Node::default());
                    nodes
                        .get_mut(at)?
                        .children
                        .push((class, u32::try_from(child).ok()?));
                    child
                }
            };
        }
        nodes.get_mut(at)?.words.push(u32::try_from(id).ok()?);
    }
    Some(nodes)
}

/// Links each node to its failure node and gives it the keywords of its failure
/// chain; returns the nodes and their breadth-first order.
fn link(mut nodes: Vec<Node>) -> Option<(Vec<Node>, Vec<usize>)> {
    let mut order = vec![0usize];
    let mut head = 0;
    while let Some(&node) = order.get(head) {
        head += 1;
        for k in 0..nodes.get(node)?.children.len() {
            let (class, child) = *nodes.get(node)?.children.get(k)?;
            let child = child as usize;
            let fail = if node == 0 {
                0
            } else {
                // The longest suffix of the parent's that goes on by `class`.
                let mut at = nodes.get(node)?.fail as usize;
                loop {
                    if let Some(next) = nodes.get(at)?.child(class) {
                        break next;
                    }
                    if at == 0 {
                        break 0;
                    }
                    at = nodes.get(at)?.fail as usize;
                }
            };
            let inherited = nodes.get(fail)?.words.clone();
            let entry = nodes.get_mut(child)?;
            entry.fail = u32::try_from(fail).ok()?;
            entry.words.extend(inherited);
            order.push(child);
        }
    }
    Some((nodes, order))
}

/// The class of `byte` in `classes`.
#[inline(always)]
#[allow(
    clippy::indexing_slicing,
    reason = "a byte indexes a 256-entry table: it cannot be out of bounds, and no check is compiled"
)]
fn class_in(classes: &[u8; 256], byte: u8) -> u8 {
    classes[usize::from(byte)]
}

/// Each byte's class and the number of classes: 0 for the bytes no keyword holds, one
/// class for each other byte, shared by an ASCII letter's two cases. `None` when the
/// keywords hold more distinct bytes than a class can number.
#[allow(
    clippy::indexing_slicing,
    reason = "bytes index 256-entry tables: none can be out of bounds"
)]
fn byte_classes(words: &[String]) -> Option<([u8; 256], usize)> {
    let mut used = [false; 256];
    for byte in words.iter().flat_map(|w| w.bytes()) {
        used[usize::from(byte.to_ascii_lowercase())] = true;
    }
    let mut classes = [0u8; 256];
    let mut count: usize = 1;
    for byte in 0..=255u8 {
        if byte.is_ascii_uppercase() || !used[usize::from(byte)] {
            continue;
        }
        let class = u8::try_from(count).ok()?;
        classes[usize::from(byte)] = class;
        if byte.is_ascii_lowercase() {
            classes[usize::from(byte.to_ascii_uppercase())] = class;
        }
        count += 1;
    }
    Some((classes, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_ascii_lowercase()).collect()
    }

    /// Every (keyword, end) the automaton reports over `text`.
    fn found(dfa: &KeywordDfa, text: &str) -> Vec<(u32, usize)> {
        let mut state = dfa.start();
        let mut out = Vec::new();
        for (at, &byte) in text.as_bytes().iter().enumerate() {
            state = dfa.next_state(state, byte);
            for &id in dfa.keywords(state) {
                out.push((id, at + 1));
            }
            assert_eq!(dfa.is_match(state), !dfa.keywords(state).is_empty());
        }
        out.sort_unstable();
        out
    }

    /// The same by brute force: every keyword at every end, case folded.
    fn brute(list: &[String], text: &str) -> Vec<(u32, usize)> {
        let lower = text.to_ascii_lowercase();
        let mut out = Vec::new();
        for (id, word) in list.iter().enumerate() {
            for end in word.len()..=lower.len() {
                if lower.as_bytes().get(end - word.len()..end) == Some(word.as_bytes()) {
                    out.push((u32::try_from(id).unwrap(), end));
                }
            }
        }
        out.sort_unstable();
        out
    }

    #[test]
    fn overlapping_and_nested_keywords_are_all_found_in_either_case() {
        let list = words(&[
            "pass",
            "ss",
            "password",
            "sk-",
            "-----begin",
            "key",
            "monkey",
        ]);
        let dfa = KeywordDfa::build(&list).unwrap();
        for text in [
            "PASSWORD passWord sk-sk- -----BEGIN MONKEY key",
            "pa ss passs sspassword",
            "",
            "тоkеn pаss ключ pass",
            "-------begin",
        ] {
            assert_eq!(found(&dfa, text), brute(&list, text), "{text}");
        }
    }

    #[test]
    fn random_texts_over_the_keywords_alphabet_match_brute_force() {
        let list = words(&["ab", "abc", "bca", "c", "aab", "bb", "a-b", "ABAB"]);
        let dfa = KeywordDfa::build(&list).unwrap();
        let alphabet = b"abcABC- x";
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..500 {
            let len = (seed % 40) as usize;
            let text: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    char::from(alphabet[(seed % alphabet.len() as u64) as usize])
                })
                .collect();
            assert_eq!(found(&dfa, &text), brute(&list, &text), "{text}");
        }
    }

    #[test]
    fn an_empty_keyword_is_refused_and_no_keywords_find_nothing() {
        assert!(KeywordDfa::build(&words(&["a", ""])).is_none());
        let none = KeywordDfa::build(&[]).unwrap();
        assert!(found(&none, "anything at all").is_empty());
    }

    /// Keywords over every ASCII byte and multi-byte characters (as many classes as
    /// UTF-8 text can need) match as brute force does.
    #[test]
    fn keywords_of_many_distinct_bytes_match_as_brute_force_does() {
        let mut list: Vec<String> = (0..=127u8)
            .filter(|b| !b.is_ascii_uppercase())
            .map(|b| format!("x{}", char::from(b)))
            .collect();
        list.extend(["é", "жж", "😀", "x😀é"].map(str::to_owned));
        let dfa = KeywordDfa::build(&list).unwrap();
        let text = "xAx\u{0}x\u{7f}xz éжжж 😀x😀é X😀É";
        assert_eq!(found(&dfa, text), brute(&list, text));
        assert!(found(&dfa, text).len() > 8);
    }

    #[test]
    fn the_rank_multiply_divides_every_multiple_of_the_stride_exactly() {
        for stride in 1u32..=256 {
            let magic = (1u64 << 32).div_ceil(u64::from(stride));
            let last = u32::MAX / stride;
            for k in (0..=1000).chain(last - 1000..=last) {
                let offset = k * stride;
                assert_eq!(
                    (u64::from(offset) * magic) >> 32,
                    u64::from(k),
                    "{stride} {k}"
                );
            }
        }
    }

    #[test]
    fn match_states_come_last_and_the_start_is_zero() {
        let list = words(&["token", "to"]);
        let dfa = KeywordDfa::build(&list).unwrap();
        assert_eq!(dfa.start(), 0);
        assert!(!dfa.is_match(dfa.start()));
        let t = dfa.next_state(dfa.start(), b'T');
        let to = dfa.next_state(t, b'o');
        assert!(!dfa.is_match(t) && dfa.is_match(to));
        assert_eq!(dfa.keywords(to), [1]);
        assert_eq!(dfa.keyword_len(0), 5);
        assert_eq!(dfa.keyword_len(9), 0);
    }
}
