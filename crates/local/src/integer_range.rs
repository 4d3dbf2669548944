//! GBNF for the integers a JSON Schema's `minimum`/`maximum` allow: `{"minimum": 1}`
//! becomes `[1-9] [0-9]{0,15}`, `{"minimum": 1, "maximum": 250}` becomes `[1-9] | [1-9]
//! [0-9] | "1" [0-9]{2} | "2" ([0-4] [0-9] | "50")`. Numbers are written as JSON
//! writes them: no leading zero, no `+`. A bound below zero keeps the sign's side loose
//! (any negative number); the tool's own schema check still holds the exact range.

/// Most digits an integer of the grammar has (as the unbounded `integral-part`).
const MAX_DIGITS: usize = 16;

/// The alternatives of a rule matching the integers in `[min, max]`; `None` bounds
/// are open. `None` when the bounds leave nothing (`min > max`).
pub(crate) fn integer_rule(min: Option<i64>, max: Option<i64>) -> Option<String> {
    if let (Some(low), Some(high)) = (min, max)
        && low > high
    {
        return None;
    }
    let negative = match min {
        // Any negative number down to the bound: loosened to any negative number.
        Some(low) if low >= 0 => None,
        _ => Some("\"-\" [1-9] [0-9]{0,15}".to_owned()),
    };
    let low = min.map_or(0, |low| low.max(0)).unsigned_abs();
    let positive = match max {
        Some(high) if high < 0 => None,
        Some(high) => Some(range(low, high.unsigned_abs())),
        None => Some(at_least(low)),
    };
    let rule = [negative, positive]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" | ");
    Some(rule)
}

/// The integers from `low` up, without an upper bound: those with as many digits as
/// `low` from it, then any with more digits.
fn at_least(low: u64) -> String {
    let digits = low.to_string().len();
    if low == 0 {
        return "[0] | [1-9] [0-9]{0,15}".to_owned();
    }
    let top = 10u64.saturating_pow(u32::try_from(digits).unwrap_or(u32::MAX)) - 1;
    let same_length = range(low, top);
    if digits >= MAX_DIGITS {
        return same_length;
    }
    format!("{same_length} | [1-9] [0-9]{{{digits},{}}}", MAX_DIGITS - 1)
}

/// The integers in `[low, high]` (`low <= high`), one set of alternatives per length.
fn range(low: u64, high: u64) -> String {
    let (low_text, high_text) = (low.to_string(), high.to_string());
    let mut alternatives = Vec::new();
    for digits in low_text.len()..=high_text.len() {
        let shortest = if digits == 1 {
            0
        } else {
            10u64.saturating_pow(u32::try_from(digits - 1).unwrap_or(u32::MAX))
        };
        let longest = 10u64
            .saturating_pow(u32::try_from(digits).unwrap_or(u32::MAX))
            .saturating_sub(1);
        let from = low.max(shortest).to_string();
        let to = high.min(longest).to_string();
        alternatives.extend(same_length(from.as_bytes(), to.as_bytes()));
    }
    alternatives.join(" | ")
}

/// The alternatives matching the digit strings from `low` to `high`, both of one
/// length (`low <= high`).
fn same_length(low: &[u8], high: &[u8]) -> Vec<String> {
    let (Some((&first_low, rest_low)), Some((&first_high, rest_high))) =
        (low.split_first(), high.split_first())
    else {
        return Vec::new();
    };
    let first = char::from(first_low);
    if rest_low.is_empty() {
        return vec![digit_class(first, char::from(first_high))];
    }
    if first_low == first_high {
        return vec![format!(
            "\"{first}\" {}",
            group(same_length(rest_low, rest_high))
        )];
    }
    let tail = rest_low.len();
    let all = |digit: u8, bytes: &[u8]| bytes.iter().all(|b| *b == digit);
    let mut alternatives = Vec::new();
    // The first digit's own run, unless it covers every tail (`100`…`199`).
    let mut middle_from = first_low;
    if !all(b'0', rest_low) {
        let nines = vec![b'9'; tail];
        alternatives.push(format!(
            "\"{first}\" {}",
            group(same_length(rest_low, &nines))
        ));
        middle_from += 1;
    }
    let mut middle_to = first_high;
    let last_whole = all(b'9', rest_high);
    if !last_whole {
        middle_to -= 1;
    }
    if middle_from <= middle_to {
        alternatives.push(format!(
            "{} {}",
            digit_class(char::from(middle_from), char::from(middle_to)),
            any_digits(tail)
        ));
    }
    if !last_whole {
        let zeros = vec![b'0'; tail];
        alternatives.push(format!(
            "\"{}\" {}",
            char::from(first_high),
            group(same_length(&zeros, rest_high))
        ));
    }
    alternatives
}

/// `[a-b]`, or `[a]` for one digit.
fn digit_class(from: char, to: char) -> String {
    if from == to {
        format!("[{from}]")
    } else {
        format!("[{from}-{to}]")
    }
}

/// Exactly `count` digits.
fn any_digits(count: usize) -> String {
    if count == 1 {
        "[0-9]".to_owned()
    } else {
        format!("[0-9]{{{count}}}")
    }
}

/// Alternatives as one element of a sequence.
fn group(alternatives: Vec<String>) -> String {
    match alternatives.as_slice() {
        [one] if !one.contains(' ') => one.clone(),
        _ => format!("({})", alternatives.join(" | ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `rule` (a GBNF sequence of alternatives over literals, digit classes
    /// and `[0-9]{n}` / `[0-9]{m,n}` repeats) matches `text`: a small matcher for the
    /// shapes this module writes, so each range is checked by value.
    fn matches(rule: &str, text: &str) -> bool {
        ends(rule, text, 0).contains(&text.len())
    }

    /// The positions of `text` where a match of the alternatives `rule` starting at
    /// `at` can end.
    fn ends(rule: &str, text: &str, at: usize) -> Vec<usize> {
        split_top(rule, '|')
            .iter()
            .flat_map(|alt| sequence_ends(alt.trim(), text, at))
            .collect()
    }

    fn sequence_ends(seq: &str, text: &str, at: usize) -> Vec<usize> {
        let mut positions = vec![at];
        for element in split_top(seq, ' ') {
            let element = element.trim();
            if element.is_empty() {
                continue;
            }
            positions = positions
                .into_iter()
                .flat_map(|p| element_ends(element, text, p))
                .collect();
        }
        positions
    }

    fn element_ends(element: &str, text: &str, at: usize) -> Vec<usize> {
        let rest = &text[at..];
        if let Some(inner) = element.strip_prefix('(').and_then(|e| e.strip_suffix(')')) {
            return ends(inner, text, at);
        }
        if let Some(literal) = element.strip_prefix('"').and_then(|e| e.strip_suffix('"')) {
            return if rest.starts_with(literal) {
                vec![at + literal.len()]
            } else {
                vec![]
            };
        }
        let close = element.find(']').unwrap();
        let class = &element[1..close];
        let (from, to) = match class.as_bytes() {
            [a, b'-', b] => (*a, *b),
            [a] => (*a, *a),
            _ => panic!("{class}"),
        };
        let (min, max) = match &element[close + 1..] {
            "" => (1, 1),
            counts => {
                let counts = &counts[1..counts.len() - 1];
                match counts.split_once(',') {
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (counts.parse().unwrap(), counts.parse().unwrap()),
                }
            }
        };
        let run = rest.bytes().take_while(|b| (from..=to).contains(b)).count();
        (min..=max.min(run)).map(|n| at + n).collect()
    }

    /// `text` split at `separator` outside parentheses and quotes.
    fn split_top(text: &str, separator: char) -> Vec<&str> {
        let (mut depth, mut quoted, mut start, mut out) = (0, false, 0, Vec::new());
        for (i, c) in text.char_indices() {
            match c {
                '"' => quoted = !quoted,
                '(' if !quoted => depth += 1,
                ')' if !quoted => depth -= 1,
                c if c == separator && depth == 0 && !quoted => {
                    out.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(&text[start..]);
        out
    }

    #[test]
    fn every_range_matches_exactly_its_numbers() {
        let bounds = [
            (0, 0),
            (0, 9),
            (1, 1),
            (1, 250),
            (7, 12),
            (10, 99),
            (15, 1_024),
            (100, 199),
            (99, 100),
            (123, 4_567),
            (5, 5_000),
            (999, 1_000),
        ];
        for (low, high) in bounds {
            let rule = integer_rule(Some(low), Some(high)).unwrap();
            for n in 0..=6_000i64 {
                let wanted = (low..=high).contains(&n);
                assert_eq!(
                    matches(&rule, &n.to_string()),
                    wanted,
                    "{n} in [{low}, {high}]: {rule}"
                );
            }
            assert!(!matches(&rule, "-1"), "{rule}");
            assert!(
                !matches(&rule, &format!("0{low}")),
                "a leading zero: {rule}"
            );
        }
    }

    #[test]
    fn an_open_upper_bound_takes_every_longer_number() {
        for low in [0, 1, 3, 10, 42, 999] {
            let rule = integer_rule(Some(low), None).unwrap();
            for n in 0..=3_000i64 {
                assert_eq!(
                    matches(&rule, &n.to_string()),
                    n >= low,
                    "{n} from {low}: {rule}"
                );
            }
            assert!(matches(&rule, "123456789012345"), "{rule}");
        }
    }

    #[test]
    fn negative_bounds_stay_loose_on_the_negative_side() {
        let rule = integer_rule(Some(-5), Some(3)).unwrap();
        assert!(matches(&rule, "-400"), "{rule}");
        assert!(matches(&rule, "3") && !matches(&rule, "4"), "{rule}");
        let rule = integer_rule(None, Some(-2)).unwrap();
        assert!(matches(&rule, "-2") && !matches(&rule, "0"), "{rule}");
        assert_eq!(integer_rule(Some(3), Some(2)), None);
        let rule = integer_rule(Some(i64::MAX - 1), None).unwrap();
        assert!(matches(&rule, &i64::MAX.to_string()), "{rule}");
    }
}
