//! Merging raw matches into sorted, non-overlapping redactions, and writing the
//! scrubbed text.

use std::ops::Range;

use crate::redaction::{Redaction, RedactionKind};

/// Priority of the built-in well-known formats (lower wins a tie); they use their
/// pattern index.
pub(crate) const PRIORITY_CUSTOM: u16 = 300;
/// Priority of the data rules (`rule_data`): after the built-in formats, before user
/// patterns.
pub(crate) const PRIORITY_RULE: u16 = 250;
/// Priority of labelled values (`password=…`).
pub(crate) const PRIORITY_KEYWORD: u16 = 600;
/// Priority of high-entropy strings.
pub(crate) const PRIORITY_ENTROPY: u16 = 1000;

/// One raw match before merging.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub(crate) range: Range<usize>,
    pub(crate) kind: RedactionKind,
    pub(crate) priority: u16,
}

/// Sorts candidates and merges overlapping ones: the leftmost match wins, then the
/// longest, then the one with the lowest priority number; a match that overlaps the
/// winner extends it (the union is redacted) and gives up its kind.
pub(crate) fn merge(mut candidates: Vec<Candidate>) -> Vec<Redaction> {
    candidates.sort_by(|a, b| {
        a.range
            .start
            .cmp(&b.range.start)
            .then(b.range.end.cmp(&a.range.end))
            .then(a.priority.cmp(&b.priority))
    });
    let mut merged: Vec<Redaction> = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        if candidate.range.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some(last) if candidate.range.start < last.range.end => {
                last.range.end = last.range.end.max(candidate.range.end);
            }
            _ => merged.push(Redaction {
                range: candidate.range,
                kind: candidate.kind,
            }),
        }
    }
    merged
}

/// Drops candidates that overlap a redaction marker already in `text` (`[REDACTED]`,
/// `[REDACTED:high-entropy]`, ...), so scrubbing scrubbed text changes nothing.
pub(crate) fn drop_marker_overlaps(text: &str, candidates: &mut Vec<Candidate>) {
    const MARKER: &str = "[REDACTED";
    if candidates.is_empty() || !text.contains(MARKER) {
        return;
    }
    let markers: Vec<Range<usize>> = text
        .match_indices(MARKER)
        .map(|(start, _)| {
            let after = start + MARKER.len();
            let tail = text.get(after..).unwrap_or_default();
            let label_len = tail
                .bytes()
                .take(64)
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'-'))
                .count();
            let closed = tail.as_bytes().get(label_len) == Some(&b']');
            start..after + label_len + usize::from(closed)
        })
        .collect();
    candidates.retain(|candidate| {
        let first = markers.partition_point(|m| m.end <= candidate.range.start);
        markers
            .get(first)
            .is_none_or(|m| m.start >= candidate.range.end)
    });
}

/// Writes `text` with every redaction's range replaced by its kind's replacement.
pub(crate) fn render(text: &str, redactions: &[Redaction]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for redaction in redactions {
        if let Some(clean) = text.get(cursor..redaction.range.start) {
            out.push_str(clean);
        }
        out.push_str(redaction.kind.replacement());
        cursor = redaction.range.end;
    }
    if let Some(rest) = text.get(cursor..) {
        out.push_str(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redaction::Keyword;

    fn cand(range: Range<usize>, kind: RedactionKind, priority: u16) -> Candidate {
        Candidate {
            range,
            kind,
            priority,
        }
    }

    #[test]
    fn leftmost_then_longest_then_priority_wins_and_overlaps_extend() {
        let merged = merge(vec![
            cand(5..9, RedactionKind::HighEntropy, PRIORITY_ENTROPY),
            cand(
                2..6,
                RedactionKind::Keyword(Keyword::Token),
                PRIORITY_KEYWORD,
            ),
            cand(2..6, RedactionKind::Jwt, 3),
            cand(12..14, RedactionKind::HighEntropy, PRIORITY_ENTROPY),
            cand(14..15, RedactionKind::PrivateKey, 0),
            cand(7..7, RedactionKind::PrivateKey, 0),
        ]);
        assert_eq!(
            merged,
            vec![
                Redaction {
                    range: 2..9,
                    kind: RedactionKind::Jwt
                },
                Redaction {
                    range: 12..14,
                    kind: RedactionKind::HighEntropy
                },
                Redaction {
                    range: 14..15,
                    kind: RedactionKind::PrivateKey
                },
            ]
        );
    }

    #[test]
    fn render_replaces_each_range() {
        let text = "a=SECRET b=KEY";
        let redactions = vec![
            Redaction {
                range: 2..8,
                kind: RedactionKind::Keyword(Keyword::Secret),
            },
            Redaction {
                range: 11..14,
                kind: RedactionKind::HighEntropy,
            },
        ];
        assert_eq!(
            render(text, &redactions),
            "a=[REDACTED] b=[REDACTED:high-entropy]"
        );
    }
}
