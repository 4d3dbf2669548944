//! Running the data rules (`rule_data`) over a text.
//!
//! One Aho-Corasick automaton over every rule's keywords (ASCII case-insensitive, as
//! gitleaks lowercases the text before it looks for keywords; shared with the
//! labelled values' trigger words, `keyword_scan`) says which rules can match and
//! where. A rule's regex then runs only on the lines holding one of its
//! keywords (a few lines around them for the rules that span lines: `curl` commands
//! continued with `\`, Kubernetes secrets), so a plain text runs none of them.
//! What a rule finds is its secret group, checked against the rule's entropy floor and
//! the allowlists as gitleaks checks them.

use regex::Captures;
use std::ops::Range;

use crate::lazy_regex::Unavailable;
use crate::merge::{Candidate, PRIORITY_RULE};
use crate::placeholder::is_placeholder;
use crate::redaction::RedactionKind;
use crate::rule_data::{Allowlist, Rule, Target, rules};
use crate::shannon::shannon_entropy;

/// Lines taken on each side of a keyword for a rule that spans lines.
const CONTEXT_LINES: usize = 6;

/// Pushes what the data rules find in `text` onto `out`.
#[cfg(test)]
pub(crate) fn collect(text: &str, out: &mut Vec<Candidate>) -> Result<(), Unavailable> {
    let hits = crate::keyword_patterns::scan(text)?;
    collect_hits(text, hits.rules, out)
}

/// Pushes what the data rules find in `text` onto `out`, given where their keywords
/// are (`keyword_scan`): `(rule, position of one of its keywords)`.
pub(crate) fn collect_hits(
    text: &str,
    mut hits: Vec<(usize, usize)>,
    out: &mut Vec<Candidate>,
) -> Result<(), Unavailable> {
    let set = rules()?;
    // Rules without keywords (v8.30.1 has none) run over the whole text.
    hits.extend(
        set.rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.keywords.is_empty())
            .map(|(index, _)| (index, 0)),
    );
    if hits.is_empty() {
        return Ok(());
    }
    hits.sort_unstable();
    hits.dedup();
    let mut index = 0;
    while let Some(&(rule_index, _)) = hits.get(index) {
        let Some(rule) = set.rules.get(rule_index) else {
            break;
        };
        let mut window: Option<Range<usize>> = None;
        while let Some(&(r, at)) = hits.get(index) {
            if r != rule_index {
                break;
            }
            index += 1;
            if window.as_ref().is_some_and(|w| at < w.end) {
                continue;
            }
            let next = if rule.keywords.is_empty() {
                0..text.len()
            } else {
                lines_around(text, at, if rule.multiline { CONTEXT_LINES } else { 0 })
            };
            window = match window {
                Some(w) if next.start <= w.end => Some(w.start..next.end.max(w.end)),
                Some(w) => {
                    run(rule, &set.global, text, w, out)?;
                    Some(next)
                }
                None => Some(next),
            };
        }
        if let Some(w) = window {
            run(rule, &set.global, text, w, out)?;
        }
    }
    Ok(())
}

/// The line holding byte `at`, with `extra` lines on each side.
fn lines_around(text: &str, at: usize, extra: usize) -> Range<usize> {
    let bytes = text.as_bytes();
    let mut start =
        memchr::memrchr(b'\n', bytes.get(..at).unwrap_or_default()).map_or(0, |i| i + 1);
    let mut end =
        memchr::memchr(b'\n', bytes.get(at..).unwrap_or_default()).map_or(text.len(), |i| at + i);
    for _ in 0..extra {
        start = memchr::memrchr(
            b'\n',
            bytes.get(..start.saturating_sub(1)).unwrap_or_default(),
        )
        .map_or(0, |i| i + 1);
        end = memchr::memchr(
            b'\n',
            bytes.get(end.saturating_add(1)..).unwrap_or_default(),
        )
        .map_or(text.len(), |i| end + 1 + i);
    }
    start..end
}

/// Runs `rule` over `text[window]`.
fn run(
    rule: &Rule,
    global: &Allowlist,
    text: &str,
    window: Range<usize>,
    out: &mut Vec<Candidate>,
) -> Result<(), Unavailable> {
    let Some(hay) = text.get(window.clone()) else {
        return Ok(());
    };
    let regex = rule.regex.get()?;
    for caps in regex.captures_iter(hay) {
        let Some(whole) = caps.get(0) else { continue };
        let secret = secret_range(rule, regex, &caps).unwrap_or_else(|| whole.range());
        let (Some(secret_text), Some(match_text)) =
            (hay.get(secret.clone()), hay.get(whole.range()))
        else {
            continue;
        };
        if secret.is_empty() {
            continue;
        }
        if rule
            .entropy
            .is_some_and(|floor| shannon_entropy(secret_text) <= floor)
        {
            continue;
        }
        // What stands for a secret without being one, by the test the built-in
        // formats and the labelled values apply: a documentation example masked with
        // `x`, `X`, `*` or `#` (`…/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX`), a
        // format's prefix and one key held down (`sk_live_AAAAAAAA…`), a template
        // reference (`${TOKEN}`, `<your-key>`). No generated secret is shaped so.
        if is_placeholder(secret_text) {
            continue;
        }
        let (start, end) =
            whole_token(text, window.start + secret.start, window.start + secret.end);
        let line = lines_around(text, start, 0);
        let line_text = text.get(line).unwrap_or_default();
        let context = (secret_text, match_text, line_text);
        if allowed(&rule.allow, context)? || allowed(global, context)? {
            continue;
        }
        out.push(Candidate {
            range: start..end,
            kind: RedactionKind::Rule(rule.id),
            priority: PRIORITY_RULE,
        });
    }
    Ok(())
}

/// A secret widened to the whole token it is part of: rules of a fixed length
/// (`glsoat-` + 20) also match the head of a longer token, whose tail must not be
/// left after the marker.
fn whole_token(text: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let token = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'/' | b'=');
    let joined = |b: Option<&u8>| b.copied().is_some_and(token);
    if joined(bytes.get(end.wrapping_sub(1))) {
        while joined(bytes.get(end)) {
            end += 1;
        }
    }
    // On the left `=` ends a label (`TOKEN=…`), not a piece of the value.
    let joined_left = |b: Option<&u8>| b.copied().is_some_and(|b| b != b'=' && token(b));
    if joined_left(bytes.get(start)) {
        while start > 0 && joined_left(bytes.get(start - 1)) {
            start -= 1;
        }
    }
    (start, end)
}

/// The secret's range in the haystack: the rule's secret group, or else the first
/// unnamed group that matched (a named group marks a piece of the token, as in
/// gitleaks' `jwt-base64`, and is never the secret alone).
fn secret_range(rule: &Rule, regex: &regex::Regex, caps: &Captures<'_>) -> Option<Range<usize>> {
    match usize::try_from(rule.group) {
        Ok(group) => caps.get(group).map(|m| m.range()),
        Err(_) => regex
            .capture_names()
            .enumerate()
            .skip(1)
            .filter(|(_, name)| name.is_none())
            .find_map(|(i, _)| caps.get(i))
            .filter(|m| !m.is_empty())
            .map(|m| m.range()),
    }
}

/// Whether an allowlist accepts a finding: (secret, whole match, line).
fn allowed(
    allow: &Allowlist,
    (secret, whole, line): (&str, &str, &str),
) -> Result<bool, Unavailable> {
    if !allow.stopwords.is_empty() {
        let lower = secret.to_ascii_lowercase();
        if allow.stopwords.iter().any(|w| lower.contains(w)) {
            return Ok(true);
        }
    }
    for (target, regex) in &allow.regexes {
        let against = match target {
            Target::Secret => secret,
            Target::Match => whole,
            Target::Line => line,
        };
        if regex.get()?.is_match(against) {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(&str, &'static str)> {
        let mut out = Vec::new();
        collect(text, &mut out).unwrap();
        out.iter()
            .map(|c| {
                let RedactionKind::Rule(id) = c.kind else {
                    panic!("{:?}", c.kind)
                };
                (&text[c.range.clone()], id)
            })
            .collect()
    }

    #[test]
    fn a_rule_redacts_its_secret_group_only() {
        let text = "SHIPPO_API_TOKEN=shippo_live_0c1b8f6a3e9d2c4b5a7f8e9d0c1b2a3f4e5d6c7b\n";
        assert_eq!(
            found(text),
            [(
                "shippo_live_0c1b8f6a3e9d2c4b5a7f8e9d0c1b2a3f4e5d6c7b",
                "shippo-api-token"
            )]
        );
    }

    #[test]
    fn a_secret_is_widened_to_its_whole_token() {
        let text = "glsoat-PREfix_helloworld380_testin_pretty_long_token_long\n";
        assert_eq!(found(text), [(text.trim_end(), "gitlab-scim-token")]);
        assert_eq!(whole_token("ab cd=ef.", 3, 4), (3, 8));
        assert_eq!(whole_token("KEY=abcdef", 5, 7), (4, 10));
        assert_eq!(whole_token("x 'secret' y", 3, 9), (3, 9));
    }

    #[test]
    fn keywords_are_case_insensitive_and_plain_text_runs_nothing() {
        assert!(found("nothing to see here, just prose").is_empty());
        let text = "Config: DOPPLER = dp.pt.k7psT2mQx9LbV4nZ8rW1cY6hJ3dF5gA0sE2uI9oP7lK4j";
        assert_eq!(found(text).len(), 1, "{:?}", found(text));
    }

    #[test]
    fn the_entropy_floor_and_allowlists_hold() {
        // Same shape, too little entropy (a repeated character).
        assert!(
            found("SHIPPO_API_TOKEN=shippo_live_0000000000000000000000000000000000000000")
                .is_empty()
        );
        // A format's prefix and one key held down: the built-in formats' stand-in
        // test holds for the rules too (`digitalocean-refresh-token` has no entropy
        // floor of its own, so only that test keeps this one out).
        let held_down = format!("token: dor_v1_{}\n", "a".repeat(64));
        assert!(found(&held_down).is_empty(), "{:?}", found(&held_down));
        let real =
            "token: dor_v1_0c1b8f6a3e9d2c4b5a7f8e9d0c1b2a3f4e5d6c7b0c1b8f6a3e9d2c4b5a7f8e9d\n";
        assert_eq!(found(real).len(), 1);
        // A template placeholder is in gitleaks' global allowlist.
        assert!(lines_around("a\nbc\nd", 3, 0) == (2..4));
        assert_eq!(lines_around("a\nbc\nd", 3, 1), 0..6);
        assert_eq!(lines_around("abc", 0, 3), 0..3);
    }

    #[test]
    fn a_keyword_on_every_line_costs_one_search_per_run_of_lines() {
        // Adversarial: the keyword on each of many lines and no secret.
        let text = "sk sk sk\n".repeat(20_000);
        assert!(found(&text).is_empty());
    }
}
