//! A wallet's seed phrase under its label: `"mnemonic": "legal winner thank …"`,
//! `SEED_PHRASE=…`, `Secret Recovery Phrase: …`. The phrase is BIP-39's: 12, 15, 18,
//! 21 or 24 words of its English list, which is the format's own definition (taken
//! from the `bip39` crate), so a sentence after such a label is not one — it holds
//! words outside the list (`these`, `with`, `for`).

/// The words that label a seed phrase, as every match of [`pattern`] holds one:
/// `mnemonic`, or a `phrase` or `words` after `seed`, `recovery`, `backup` or `wallet`.
pub(crate) const TRIGGER: &str =
    "mnemonic|Mnemonic|MNEMONIC|phrase|Phrase|PHRASE|words|Words|WORDS";

/// One word of a phrase: BIP-39's English words have 3–8 letters.
const WORD: &str = "[a-z]{3,8}";

/// The label, a separator, then 12 to 24 [`WORD`]s that end the value: nothing but
/// punctuation after them on the line (whether their count is one of BIP-39's is
/// [`is_seed_phrase`]'s to say). The value may start on the next, indented line (YAML).
pub(crate) fn pattern() -> String {
    format!(
        r#"(?m)(?i:mnemonic|(?:seed|recovery|backup|wallet)[ _-]?(?:phrase|words))[A-Za-z0-9_ -]{{0,20}}?(?:\\?["'])?[ \t]*(?::=|=>|[:=])[ \t]*(?:\r?\n[ \t]+)?(?:\\?["'])?(?P<secret>{WORD}(?:[ \t]+{WORD}){{11,23}})[ \t]*(?:$|[^A-Za-z \t])"#
    )
}

/// Whether `phrase` (words separated by blanks) is a BIP-39 phrase's length and every
/// word is on the English list. The checksum in its last word is not required: a
/// phrase under its label is written down to be used, and one mistyped is still the
/// wallet's.
pub(crate) fn is_seed_phrase(phrase: &str) -> bool {
    let english = bip39::Language::English;
    let mut count = 0usize;
    for word in phrase.split_ascii_whitespace() {
        if english.find_word(word).is_none() {
            return false;
        }
        count += 1;
    }
    matches!(count, 12 | 15 | 18 | 21 | 24)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phrase_is_list_words_in_a_bip39_count() {
        let twelve = "legal winner thank year wave sausage worth useful legal winner thank yellow";
        assert!(is_seed_phrase(twelve));
        assert!(!is_seed_phrase(&format!("{twelve} wave")));
        assert!(!is_seed_phrase(
            "never share these words with anyone who asks for them online today"
        ));
    }
}
