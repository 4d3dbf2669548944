//! A candidate run of the entropy scan that holds `/`: a path or a URL's part, whose
//! segments are judged one by one (`/usr/lib/python3/…`, `https://hooks…/T0/B0/<token>`),
//! or random base64 that happens to hold `/`, judged whole.

use crate::whole_value::MAX_EXTEND;
use crate::word_shape::is_words;

/// True when the run starting at `start` is part of a URL: `://` comes before it in
/// the same blank-delimited word (`https://hooks.slack.com/services/T0/B0/…`). Its
/// `/` segments are then judged one by one, like a path's.
pub(crate) fn in_url(text: &str, start: usize) -> bool {
    let from = start.saturating_sub(MAX_EXTEND);
    let before = text.as_bytes().get(from..start).unwrap_or_default();
    let word_start = before
        .iter()
        .rposition(|b| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'(' | b'<'))
        .map_or(0, |i| i + 1);
    before
        .get(word_start..)
        .is_some_and(|word| word.windows(3).any(|w| w == b"://"))
}

/// A candidate with `/` is a path when at least two of its segments, and at least
/// half of them, are words ([`is_path_word`]).
pub(crate) fn is_path_run(token: &str) -> bool {
    let (mut segments, mut wordy) = (0, 0);
    for segment in token.split('/').filter(|s| !s.is_empty()) {
        segments += 1;
        if is_path_word(segment) {
            wordy += 1;
        }
    }
    wordy >= 2 && wordy * 2 >= segments
}

/// A path's segment that reads as a name: words, and when four bytes or fewer (which
/// [`is_words`] takes whole) written as a name is: one case or capitalised, or a name
/// and a number or version (`usr`, `lib`, `v2`, `x86`, `GPL`, `7.0`). Four random base64
/// characters between two `/` (`K7mD`, `a9Zq`) are seldom that.
fn is_path_word(segment: &str) -> bool {
    if segment.len() > 4 {
        return is_words(segment);
    }
    let bytes = segment.as_bytes();
    let letters = bytes.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let (name, rest) = bytes.split_at(letters);
    let one_case = name.iter().all(u8::is_ascii_lowercase)
        || name.iter().all(u8::is_ascii_uppercase)
        || name.split_first().is_some_and(|(first, tail)| {
            first.is_ascii_uppercase() && tail.iter().all(u8::is_ascii_lowercase)
        });
    one_case
        && rest
            .iter()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-' | b'+'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_names_and_versions_but_not_random_base64() {
        for path in [
            "/usr/lib/x86_64-linux-gnu/libssl.so.3",
            "docs/en/VMware-vSphere/7.0/GUID",
        ] {
            assert!(is_path_run(path), "{path}");
        }
        assert!(!is_path_run("K7mD/a9Zq/bPxRfiCYEXAMPLEKEYz0Aq"));
    }

    #[test]
    fn a_run_after_a_scheme_in_the_same_word_is_in_a_url() {
        let text = "see https://hooks.example.com/services/T0/abc";
        assert!(in_url(text, text.find("services").unwrap()));
        assert!(!in_url("a /services/x", 2));
    }
}
