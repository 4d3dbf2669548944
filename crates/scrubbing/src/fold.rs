//! Folding disguised text to ASCII before it is scanned a second time.
//!
//! A secret can hide from ASCII patterns behind characters that look like nothing or
//! like something else: zero-width characters inside a key or a token
//! (`ghp_ab\u{200B}cd…`, `pass\u{200D}word=…`), Unicode blanks around a separator
//! (`token\u{00A0}=\u{00A0}…`), fullwidth forms (`ｐａｓｓｗｏｒｄ`) and homoglyphs, Cyrillic
//! or Greek letters drawn like Latin ones (`раssword` with a Cyrillic `р` and `а`).
//! When the text holds any of them, it is folded — zero-width characters dropped,
//! blanks made spaces, fullwidth forms and homoglyphs mapped to their ASCII look-alike
//! — and scanned again; what is found there is mapped back to the original bytes, so
//! the disguised secret is redacted whole, disguise included. ASCII text (the common
//! case) is never folded.

/// Text folded to ASCII look-alikes, with the way back.
pub(crate) struct Folded {
    /// The folded text.
    pub(crate) text: String,
    /// For each byte of `text` (and one past its end), the byte of the original text
    /// where the character it came from starts (or, past the end, the original's end).
    origin: Vec<usize>,
}

impl Folded {
    /// The original byte range of the folded range `start..end`.
    pub(crate) fn original(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        Some((*self.origin.get(start)?, *self.origin.get(end)?))
    }
}

/// How a character folds.
enum Fold {
    Keep,
    Drop,
    Into(char),
}

fn fold_char(c: char) -> Fold {
    match c {
        '\u{200B}'
        | '\u{200C}'
        | '\u{200D}'
        | '\u{2060}'
        | '\u{FEFF}'
        | '\u{00AD}'
        | '\u{180E}'
        | '\u{2061}'..='\u{2064}' => Fold::Drop,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => {
            Fold::Into(' ')
        }
        '\u{FF01}'..='\u{FF5E}' => {
            char::from_u32(u32::from(c) - 0xFEE0).map_or(Fold::Keep, Fold::Into)
        }
        _ => homoglyph(c).map_or(Fold::Keep, Fold::Into),
    }
}

/// The Latin letter a Cyrillic or Greek letter is drawn like.
fn homoglyph(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' => 'a',
        'в' => 'b',
        'с' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'ε' => 'e',
        'һ' => 'h',
        'і' | 'ι' => 'i',
        'ј' => 'j',
        'κ' => 'k',
        'ո' => 'n',
        'о' | 'ο' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'г' => 'r',
        'ѕ' => 's',
        'т' | 'τ' => 't',
        'υ' => 'u',
        'ν' => 'v',
        'ԝ' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'γ' => 'y',
        'А' | 'Α' => 'A',
        'В' | 'Β' => 'B',
        'С' => 'C',
        'Е' | 'Ε' => 'E',
        'Н' | 'Η' => 'H',
        'І' | 'Ι' => 'I',
        'Ј' => 'J',
        'К' | 'Κ' => 'K',
        'М' | 'Μ' => 'M',
        'Ν' => 'N',
        'О' | 'Ο' => 'O',
        'Р' | 'Ρ' => 'P',
        'Ѕ' => 'S',
        'Т' | 'Τ' => 'T',
        'Х' | 'Χ' => 'X',
        'У' | 'Υ' => 'Y',
        'Ζ' => 'Z',
        _ => return None,
    })
}

/// The folded text, or `None` when `text` has nothing to fold (always for ASCII).
pub(crate) fn fold(text: &str) -> Option<Folded> {
    if text.is_ascii() || !text.chars().any(|c| !matches!(fold_char(c), Fold::Keep)) {
        return None;
    }
    let mut folded = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len() + 1);
    for (at, c) in text.char_indices() {
        let out = match fold_char(c) {
            Fold::Keep => c,
            Fold::Drop => continue,
            Fold::Into(ascii) => ascii,
        };
        folded.push(out);
        origin.extend(std::iter::repeat_n(at, out.len_utf8()));
    }
    origin.push(text.len());
    Some(Folded {
        text: folded,
        origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disguises_fold_to_ascii_and_map_back() {
        let text = "раss\u{200B}word\u{00A0}= ｈｕｎｔｅｒ２";
        let folded = fold(text).unwrap();
        assert_eq!(folded.text, "password = hunter2");
        let start = folded.text.find("hunter2").unwrap();
        let (a, b) = folded.original(start, folded.text.len()).unwrap();
        assert_eq!(&text[a..b], "ｈｕｎｔｅｒ２");
        let (a, b) = folded.original(0, 8).unwrap();
        assert_eq!(&text[a..b], "раss\u{200B}word");
    }

    #[test]
    fn plain_text_is_not_folded() {
        assert!(fold("password=hunter2").is_none());
        assert!(fold("naïve café — déjà vu").is_none());
    }
}
