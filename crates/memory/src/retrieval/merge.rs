//! Merging vector and full-text hits on min-max normalised scores.

use std::collections::HashMap;

/// Scale each score of `hits` into `[0, 1]` by the list's minimum and maximum; a list
/// whose scores are all equal maps to 1.
pub fn min_max(hits: &[(i64, f32)]) -> HashMap<i64, f32> {
    let (min, max) = hits
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), (_, s)| {
            (lo.min(*s), hi.max(*s))
        });
    let span = max - min;
    hits.iter()
        .map(|(id, score)| {
            let normalised = if span > f32::EPSILON {
                (score - min) / span
            } else {
                1.0
            };
            (*id, normalised)
        })
        .collect()
}

/// `vector_weight * v + text_weight * t` per chunk (a missing score counts 0), the
/// `top_k` best first; ties go to the older chunk.
pub fn merge(
    vector_hits: &[(i64, f32)],
    text_hits: &[(i64, f32)],
    vector_weight: f32,
    text_weight: f32,
    top_k: usize,
) -> Vec<(i64, f32)> {
    let mut merged: HashMap<i64, f32> = HashMap::new();
    for (id, score) in min_max(vector_hits) {
        *merged.entry(id).or_default() += vector_weight * score;
    }
    for (id, score) in min_max(text_hits) {
        *merged.entry(id).or_default() += text_weight * score;
    }
    let mut ranked: Vec<(i64, f32)> = merged.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(top_k);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_scales_and_handles_flat_lists() {
        let scaled = min_max(&[(1, 2.0), (2, 4.0), (3, 3.0)]);
        assert_eq!(scaled[&1], 0.0);
        assert_eq!(scaled[&2], 1.0);
        assert_eq!(scaled[&3], 0.5);
        assert_eq!(min_max(&[(7, 0.3)])[&7], 1.0);
        assert!(min_max(&[]).is_empty());
    }

    #[test]
    fn weights_decide_and_both_lists_add_up() {
        let vector = [(1, 0.9), (2, 0.1)];
        let text = [(2, 12.0), (3, 1.0)];
        assert_eq!(merge(&vector, &text, 1.0, 0.0, 1)[0].0, 1);
        assert_eq!(merge(&vector, &text, 0.0, 1.0, 1)[0].0, 2);
        let both = merge(&[(1, 0.9), (2, 0.8), (3, 0.1)], &text, 0.5, 0.5, 3);
        assert_eq!(both[0].0, 2); // strong in both lists beats strong in one
        assert_eq!(both.len(), 3);
    }
}
