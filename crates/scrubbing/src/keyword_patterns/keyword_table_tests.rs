//! The built-in keywords' automaton generated ahead of time (`keyword_table.rs`): it
//! is what `KeywordDfa::build` gives, and finds what a built one finds.

use super::*;
use crate::keyword_dfa::KeywordDfa;

/// The built-in scanner's keywords, in its automaton's order.
fn builtin_words() -> Vec<String> {
    let (keywords, triggers) = scanner_inputs(&pattern_defs()).unwrap();
    KeywordScanner::keywords(keywords.into_iter(), triggers.into_iter()).unwrap()
}

/// `keyword_table.rs` is the automaton `KeywordDfa::build` gives for the built-in
/// keywords: a change to a keyword, a pattern's trigger or the automaton's layout
/// fails here until the table is generated again
/// (`OXYDRA_WRITE_KEYWORD_TABLE=1 cargo nextest run -p oxydra-scrubbing
/// generated_keyword_table`). A stale table is never used (the scanner compares the
/// keywords first), but would cost every process its build again.
#[test]
fn generated_keyword_table_is_the_built_automaton() {
    let words = builtin_words();
    let source = KeywordDfa::build(&words).unwrap().render_static(&words);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/keyword_table.rs");
    if std::env::var_os("OXYDRA_WRITE_KEYWORD_TABLE").is_some() {
        std::fs::write(&path, &source).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == source,
        "{} is stale: run OXYDRA_WRITE_KEYWORD_TABLE=1 cargo nextest run -p \
         oxydra-scrubbing generated_keyword_table",
        path.display()
    );
    // And the built-in scanner takes it: the same keywords, found the same way.
    let static_words: Vec<&str> = crate::keyword_table::WORDS.to_vec();
    assert_eq!(words, static_words);
}

/// A scanner over other keywords than the built-in ones builds its own automaton, and
/// one over the built-in ones finds what the built one finds.
#[test]
fn the_static_automaton_finds_what_a_built_one_finds() {
    let words = builtin_words();
    let built = KeywordDfa::build(&words).unwrap();
    let taken = KeywordDfa::from_static(&crate::keyword_table::TABLE, &words);
    let text = "export GITHUB_TOKEN=ghp_x; password: hunter2 -----BEGIN KEY; AKIA mnemonic \
                postgres://u:p@h/db xoxb- sk-ant- Authorization: Bearer abc";
    let walk = |dfa: &KeywordDfa| {
        let mut state = dfa.start();
        let mut found = Vec::new();
        for (at, &byte) in text.as_bytes().iter().enumerate() {
            state = dfa.next_state(state, byte);
            if dfa.is_match(state) {
                found.extend(dfa.keywords(state).iter().map(|&id| (id, at)));
            }
        }
        found
    };
    let found = walk(&built);
    assert!(found.len() > 10, "{found:?}");
    assert_eq!(walk(&taken), found);
}
