//! A bare labelled value that is the start of prose rather than data: a lowercase word
//! before more words (a commit subject, `token: fix the refresh`), a capitalised word
//! that starts a sentence (a docstring's field description, `password: The password
//! for the replica.`, `page_token: Optional. A token from …`), or the last word of a
//! sentence in markup (`… a password to authenticate.</p>`).

/// True when a bare value is a lowercase word followed by more words: prose such as
/// a commit subject `token: fix the refresh` rather than `token: a1b2c3`.
pub(crate) fn is_prose(value: &str, rest: &str) -> bool {
    value.bytes().all(|b| b.is_ascii_lowercase())
        && rest
            .strip_prefix(' ')
            .is_some_and(|r| r.bytes().next().is_some_and(|b| b.is_ascii_lowercase()))
}

/// `kwargs to pass to gapic.MakeClient`: the word at `key_start` follows `to` and
/// a blank, so in prose it is a verb (`to pass`), not a secret's name (`the password
/// to the db`).
pub(crate) fn is_infinitive(text: &str, key_start: usize) -> bool {
    text.get(..key_start).is_some_and(|before| {
        before
            .strip_suffix(' ')
            .and_then(|b| b.strip_suffix("to"))
            .is_some_and(|b| b.is_empty() || b.ends_with([' ', '\t', '(']))
    })
}

/// Fewest letters of the word after a sentence's first (`A` is a word, but a lone
/// letter after a value is more often a code's piece).
const MIN_NEXT_WORD: usize = 2;

/// `The` before ` password for the replica.`, `Optional.` before ` A token from …`: a
/// capitalised word (a capital, then lowercase letters, maybe a `.`, `,` or `:`)
/// followed by a blank and another word — a sentence, as a docstring describes a
/// field or an argument under its name. A secret written bare is one token; a
/// password with a blank in it is quoted.
pub(crate) fn is_sentence_start(value: &str, rest: &str) -> bool {
    let word = value.trim_end_matches(['.', ',', ':']);
    let mut bytes = word.bytes();
    let capitalised = bytes.next().is_some_and(|b| b.is_ascii_uppercase())
        && word.len() >= 2
        && bytes.all(|b| b.is_ascii_lowercase())
        && value.len() - word.len() <= 1;
    let next_word = |r: &str| {
        let letters = r.bytes().take_while(u8::is_ascii_alphabetic).count();
        (letters >= MIN_NEXT_WORD || r.starts_with(['A', 'a']))
            && r.as_bytes()
                .get(letters)
                .is_none_or(|b| b.is_ascii_whitespace() || b.is_ascii_punctuation())
    };
    capitalised
        && rest
            .strip_prefix(' ')
            .map(|r| r.strip_prefix(' ').unwrap_or(r))
            .is_some_and(next_word)
}

/// `authenticate.</p>`, `changing.</code>`: the last word of a sentence in markup — a
/// word, maybe with its `.`, `,` or `)`, then a closing tag. A secret does not end in
/// a closing tag; one written in markup is inside the tags.
pub(crate) fn is_markup_word(value: &str) -> bool {
    let Some((word, tag)) = value.split_once("</") else {
        return false;
    };
    let word = word.trim_end_matches(['.', ',', ')', ':', ';']);
    !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_alphabetic())
        && tag
            .strip_suffix('>')
            .is_some_and(|name| !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::redacted;

    #[test]
    fn prose_after_a_label() {
        assert!(is_prose("fix", " the refresh"));
        assert!(!is_prose("fix", ""));
        assert!(!is_prose("a1b2", " the"));
        assert!(is_sentence_start("The", " password for the replica."));
        assert!(is_sentence_start(
            "Optional.",
            " A token from the last call"
        ));
        assert!(is_sentence_start(
            "Optional.",
            "  If unset, the first page."
        ));
        assert!(is_sentence_start("Initial", " password."));
        assert!(!is_sentence_start("The", ""), "one word");
        assert!(!is_sentence_start("Hunter2", " is"), "a digit");
        assert!(
            !is_sentence_start("ZxQwErTy", " next"),
            "not one capitalised word"
        );
        assert!(
            !is_sentence_start("Summer", " # the password"),
            "a comment follows"
        );
        assert!(is_infinitive("kwargs to pass", 10));
        assert!(!is_infinitive("the password", 4));
        assert!(!is_infinitive("into pass", 5));
        assert!(is_markup_word("authenticate.</p>"));
        assert!(is_markup_word("version</code>"));
        assert!(!is_markup_word("Zx9qL2mN8vB4</p>"), "not a word");
        assert!(!is_markup_word("word</"));
    }

    #[test]
    fn descriptions_are_kept_and_secrets_redacted() {
        for text in [
            "    page_token: Optional. A cursor from the previous list call.\n",
            "    password: The replica's password, write only.\n",
            "\"doc\": \"<p>The role needs a password to sign in.</p>\",\n",
        ] {
            assert!(redacted(text).is_empty(), "{text}: {:?}", redacted(text));
        }
        for (text, secret) in [
            ("password: Hunter2 # the admin's\n", "Hunter2"),
            ("page_token: Zx9qL2mN8vB4kR7tY1wE\n", "Zx9qL2mN8vB4kR7tY1wE"),
            ("password: Marigold\n", "Marigold"),
        ] {
            let found = redacted(text);
            assert!(
                found.len() == 1 && found[0].starts_with(secret),
                "{text}: {found:?}"
            );
        }
    }
}
