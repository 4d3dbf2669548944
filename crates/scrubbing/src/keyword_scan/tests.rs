//! The keyword pass: spellings, triggers, bounds. Its equivalence with the three
//! searches it replaced, on the corpora, is tested in `keyword_patterns`.

use super::*;

fn scanner(triggers: &[(usize, &'static str)]) -> KeywordScanner {
    let rules: [&[&'static str]; 2] = [&["sk", "ghp_"], &["token"]];
    KeywordScanner::build(rules.into_iter(), triggers.iter().copied()).unwrap()
}

#[test]
fn label_words_count_in_three_spellings_only() {
    let hits = scanner(&[]).scan("token Token TOKEN tOkEn ToKen apiKey PASSWORD pAss");
    let words: Vec<&str> = hits
        .labels
        .iter()
        .map(|r| &"token Token TOKEN tOkEn ToKen apiKey PASSWORD pAss"[r.clone()])
        .collect();
    assert_eq!(words, ["token", "Token", "TOKEN", "Key", "PASS"]);
    assert!(is_trigger_spelling(b"key") && is_trigger_spelling(b"K"));
    assert!(!is_trigger_spelling(b"") && !is_trigger_spelling(b"kEY"));
}

#[test]
fn overlapping_words_are_all_found_and_labels_sorted_by_start() {
    // `pass` and `salt` overlap, `sess` and `sig` too; all are reported.
    let text = "passalt sessig";
    let hits = scanner(&[]).scan(text);
    let words: Vec<&str> = hits.labels.iter().map(|r| &text[r.clone()]).collect();
    assert_eq!(words, ["pass", "salt", "sess", "sig"]);
    assert!(hits.labels.windows(2).all(|w| w[0].start < w[1].start));
}

#[test]
fn rule_keywords_are_case_insensitive_and_shared_with_labels() {
    let text = "SK-x Token ghp_";
    let mut rules = scanner(&[]).scan(text).rules;
    rules.sort_unstable();
    // `token` is both a label word and rule 1's keyword.
    assert_eq!(rules, [(0, 0), (0, 11), (1, 5)]);
}

#[test]
fn a_trigger_is_matched_case_sensitively() {
    let scanner = scanner(&[(3, "AKIA"), (5, "sk-"), (5, "SK-")]);
    assert_eq!(scanner.scan("akia").patterns, 0);
    let hits = scanner.scan("AKIA sk-");
    assert!(hits.triggers(3) && hits.triggers(5) && !hits.triggers(4));
    assert!(!hits.triggers(64) && !hits.triggers(usize::MAX));
}

#[test]
fn too_many_patterns_or_an_empty_trigger_are_refused() {
    let none: [&[&'static str]; 0] = [];
    assert!(KeywordScanner::build(none.into_iter(), [(MAX_PATTERNS, "x")].into_iter()).is_none());
    assert!(KeywordScanner::build(none.into_iter(), [(0, "")].into_iter()).is_none());
    assert!(KeywordScanner::build(none.into_iter(), [(63, "x")].into_iter()).is_some());
}

#[test]
fn plain_text_and_adversarial_text_find_nothing_or_stay_bounded() {
    let scanner = scanner(&[(0, "--")]);
    let hits = scanner.scan("");
    assert!(hits.labels.is_empty() && hits.rules.is_empty() && hits.patterns == 0);
    // Every byte a hit: linear in the text, one entry per occurrence.
    let text = "sk".repeat(50_000);
    assert_eq!(scanner.scan(&text).rules.len(), 50_000);
    let text = "-".repeat(10_001);
    assert!(scanner.scan(&text).triggers(0));
    // Not ASCII: matches stay on character boundaries.
    let text = "тоkеn token ключ";
    for r in scanner.scan(text).labels {
        assert!(text.get(r).is_some());
    }
}

/// What one walk from the start finds: the reference for the two walks of a long
/// text.
fn one_walk(scanner: &KeywordScanner, text: &str) -> Hits {
    let mut hits = Hits::default();
    let dfa = &scanner.dfa;
    scanner.walk_rest(dfa, dfa.start(), 0, 0, text.as_bytes(), &mut hits);
    hits.labels.sort_unstable_by_key(|r| r.start);
    hits
}

#[test]
fn two_walks_of_a_long_text_find_what_one_walk_finds_across_the_middle() {
    let scanner = scanner(&[(0, "-----BEGIN"), (1, "sk-"), (2, "AKIA")]);
    let words = "-----BEGIN Token passalt ghp_ SK-AKIA sessig ";
    for len in [TWO_WALKS_FROM - 1, TWO_WALKS_FROM, 10_001] {
        // Every placement of the words around the middle, a keyword ending at it,
        // starting at it and straddling it included.
        for shift in 0..=words.len() + 2 {
            let middle = len / 2;
            let mut text = "z".repeat(middle.saturating_sub(shift));
            text.push_str(words);
            text.push_str(&"q".repeat(len.saturating_sub(text.len())));
            let both = scanner.scan(&text);
            let one = one_walk(&scanner, &text);
            assert_eq!(both.labels, one.labels, "len {len}, shift {shift}");
            assert_eq!(both.patterns, one.patterns, "len {len}, shift {shift}");
            let (mut a, mut b) = (both.rules, one.rules);
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "len {len}, shift {shift}");
            assert!(!b.is_empty() && one.labels.len() == 5, "{:?}", one.labels);
        }
    }
}

/// The keyword automaton finds what `aho-corasick`'s overlapping search (the crate
/// it replaced) finds over the same words, in short texts and in long ones walked as
/// two halves.
#[test]
fn the_automaton_finds_what_aho_corasick_finds() {
    let rules: [&[&'static str]; 2] = [&["sk", "ghp_"], &["token"]];
    let triggers = [(0, "://"), (1, "-----BEGIN"), (2, "AKIA")];
    let scanner = KeywordScanner::build(rules.into_iter(), triggers.into_iter()).unwrap();
    // The words in the order `build` numbers them.
    let mut words: Vec<String> = Vec::new();
    let listed = LABEL_WORDS
        .iter()
        .chain(rules.iter().flat_map(|r| r.iter()))
        .chain(triggers.iter().map(|(_, t)| t));
    for word in listed {
        let lower = word.to_ascii_lowercase();
        if !words.contains(&lower) {
            words.push(lower);
        }
    }
    let reference = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(&words)
        .unwrap();
    let line = "token=abc Token: PASS sk-1 ghp_x https://u:p@h -----BEGIN key salt; AKIA akia ";
    let long = line.repeat(200);
    let odd = "ключ: тоkеn\u{0}\u{ff}passsessig\tSECRET_KEY=x; \u{2028}cookie";
    for text in [line, "", "t", "tok", long.as_str(), &long[1..], odd] {
        let got = scanner.scan(text);
        let mut want = Hits::default();
        for found in reference.find_overlapping_iter(text) {
            scanner.found(
                found.pattern().as_usize(),
                found.range(),
                text.as_bytes(),
                &mut want,
            );
        }
        want.labels.sort_unstable_by_key(|r| r.start);
        let mut rules = (got.rules.clone(), want.rules.clone());
        rules.0.sort_unstable();
        rules.1.sort_unstable();
        assert_eq!(got.labels, want.labels, "{text:.40}");
        assert_eq!(rules.0, rules.1, "{text:.40}");
        assert_eq!(got.patterns, want.patterns, "{text:.40}");
    }
    assert!(!scanner.scan(&long).labels.is_empty());
}
