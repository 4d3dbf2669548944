//! The in-memory vector cache: every stored vector of one embedding model, contiguous and
//! unit-length, so cosine similarity is a dot product.
//!
//! A search scans an 8-bit copy of the vectors first (a quarter of the memory traffic of
//! the f32 scan, which is what bounds a brute-force search), keeps a generous shortlist,
//! and ranks the shortlist by the exact f32 dot product.

use std::collections::HashMap;

/// Unit vectors of one dimension, with the chunk and session each belongs to.
#[derive(Debug, Clone)]
pub struct VectorIndex {
    dims: usize,
    ids: Vec<i64>,
    /// 0 for a chunk without a session, else 1 + the index of its session in `names`.
    sessions: Vec<u32>,
    keys: HashMap<String, u32>,
    data: Vec<f32>,
    /// `data` quantised to i8, vector by vector.
    codes: Vec<i8>,
    /// Per vector: the value of one i8 step.
    scales: Vec<f32>,
    /// The store's data generation when the cache was loaded (SQLite's `data_version`);
    /// a change means another connection wrote to the database and the cache must be
    /// reloaded.
    pub generation: i64,
}

impl VectorIndex {
    /// An empty index of `dims`-long vectors.
    pub fn new(dims: usize, generation: i64) -> Self {
        Self {
            dims: dims.max(1),
            ids: Vec::new(),
            sessions: Vec::new(),
            keys: HashMap::new(),
            data: Vec::new(),
            codes: Vec::new(),
            scales: Vec::new(),
            generation,
        }
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Add chunk `id`'s unit `vector`; a vector of another length is refused (`false`).
    pub fn push(&mut self, id: i64, session: Option<&str>, vector: &[f32]) -> bool {
        if vector.len() != self.dims {
            return false;
        }
        let key = match session {
            None => 0,
            Some(name) => {
                let next = self.keys.len() as u32 + 1;
                *self.keys.entry(name.to_owned()).or_insert(next)
            }
        };
        self.ids.push(id);
        self.sessions.push(key);
        self.data.extend_from_slice(vector);
        self.scales.push(quantize_into(vector, &mut self.codes));
        true
    }

    /// Drop every vector of `session`.
    pub fn remove_session(&mut self, session: &str) {
        let Some(key) = self.keys.remove(session) else {
            return;
        };
        let dims = self.dims;
        let mut write = 0;
        for read in 0..self.ids.len() {
            let (Some(&id), Some(&owner)) = (self.ids.get(read), self.sessions.get(read)) else {
                break;
            };
            if owner == key {
                continue;
            }
            if write != read {
                self.data
                    .copy_within(read * dims..(read + 1) * dims, write * dims);
                self.codes
                    .copy_within(read * dims..(read + 1) * dims, write * dims);
                self.scales.swap(read, write);
                if let (Some(i), Some(s)) = (self.ids.get_mut(write), self.sessions.get_mut(write))
                {
                    *i = id;
                    *s = owner;
                }
            }
            write += 1;
        }
        self.ids.truncate(write);
        self.sessions.truncate(write);
        self.data.truncate(write * dims);
        self.codes.truncate(write * dims);
        self.scales.truncate(write);
    }

    /// The `k` chunks with the highest positive cosine to the unit `query`, best first;
    /// only chunks of `session` when one is given.
    pub fn search(&self, query: &[f32], session: Option<&str>, k: usize) -> Vec<(i64, f32)> {
        if k == 0 || query.len() != self.dims {
            return Vec::new();
        }
        let filter = match session {
            None => None,
            Some(name) => match self.keys.get(name) {
                Some(&key) => Some(key),
                None => return Vec::new(),
            },
        };
        let mut query_codes = Vec::with_capacity(self.dims);
        let query_scale = quantize_into(query, &mut query_codes);
        // Pass 1: approximate scores from the i8 codes, a shortlist of row numbers.
        let shortlist_len = k.saturating_mul(4).max(200);
        let mut shortlist: Vec<(f32, usize)> = Vec::with_capacity(shortlist_len + 1);
        let rows = self.codes.chunks_exact(self.dims);
        for (row_number, ((row, &scale), &owner)) in
            rows.zip(&self.scales).zip(&self.sessions).enumerate()
        {
            if filter.is_some_and(|key| key != owner) {
                continue;
            }
            let approx = dot_i8(&query_codes, row) as f32 * query_scale * scale;
            push_top(&mut shortlist, shortlist_len, approx, row_number);
        }
        // Pass 2: exact f32 scores for the shortlist.
        let mut top: Vec<(f32, i64)> = Vec::with_capacity(k + 1);
        for (_, row_number) in shortlist {
            let start = row_number * self.dims;
            let (Some(row), Some(&id)) = (
                self.data.get(start..start + self.dims),
                self.ids.get(row_number),
            ) else {
                continue;
            };
            push_top(&mut top, k, dot(query, row), id);
        }
        top.into_iter().map(|(score, id)| (id, score)).collect()
    }
}

/// Insert `(score, item)` into `top` (best first, at most `k` long) if it belongs there;
/// scores ≤ 0 never do.
fn push_top<T>(top: &mut Vec<(f32, T)>, k: usize, score: f32, item: T) {
    if score <= 0.0 || (top.len() >= k && top.last().is_some_and(|(s, _)| score <= *s)) {
        return;
    }
    let at = top.partition_point(|(s, _)| *s >= score);
    top.insert(at, (score, item));
    top.truncate(k);
}

/// Append `vector` scaled to i8 (the largest magnitude becomes ±127) to `codes`; returns
/// the value of one step.
fn quantize_into(vector: &[f32], codes: &mut Vec<i8>) -> f32 {
    let max = vector.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
    if max <= 0.0 || !max.is_finite() {
        codes.extend(std::iter::repeat_n(0, vector.len()));
        return 0.0;
    }
    let step = max / 127.0;
    codes.extend(
        vector
            .iter()
            .map(|x| (x / step).round().clamp(-127.0, 127.0) as i8),
    );
    step
}

/// Integer dot product with sixteen independent sums (vectorised by the compiler).
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let (a16, a_rest) = a.as_chunks::<16>();
    let (b16, b_rest) = b.as_chunks::<16>();
    let mut sums = [0_i32; 16];
    for (x, y) in a16.iter().zip(b16) {
        for ((sum, p), q) in sums.iter_mut().zip(x).zip(y) {
            *sum += i32::from(*p) * i32::from(*q);
        }
    }
    let tail: i32 = a_rest
        .iter()
        .zip(b_rest)
        .map(|(p, q)| i32::from(*p) * i32::from(*q))
        .sum();
    sums.iter().sum::<i32>() + tail
}

/// Dot product with eight independent sums, which the compiler turns into SIMD.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a8, a_rest) = a.as_chunks::<8>();
    let (b8, b_rest) = b.as_chunks::<8>();
    let mut sums = [0.0_f32; 8];
    for (x, y) in a8.iter().zip(b8) {
        for ((sum, p), q) in sums.iter_mut().zip(x).zip(y) {
            *sum += p * q;
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(p, q)| p * q).sum();
    sums.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(values: &[f32]) -> Vec<f32> {
        let mut v = values.to_vec();
        crate::embedder::normalize(&mut v);
        v
    }

    #[test]
    fn dot_matches_naive_for_odd_lengths() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..19).map(|i| 3.0 - i as f32).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-3);
    }

    #[test]
    fn quantised_dot_approximates_the_exact_one() {
        let a = unit(&(0..37).map(|i| (i as f32 * 0.7).sin()).collect::<Vec<_>>());
        let b = unit(&(0..37).map(|i| (i as f32 * 0.3).cos()).collect::<Vec<_>>());
        let (mut qa, mut qb) = (Vec::new(), Vec::new());
        let (sa, sb) = (quantize_into(&a, &mut qa), quantize_into(&b, &mut qb));
        let approx = dot_i8(&qa, &qb) as f32 * sa * sb;
        assert!(
            (approx - dot(&a, &b)).abs() < 0.02,
            "{approx} vs {}",
            dot(&a, &b)
        );
        let mut zero = Vec::new();
        assert_eq!(quantize_into(&[0.0, 0.0], &mut zero), 0.0);
        assert_eq!(zero, vec![0, 0]);
    }

    #[test]
    fn many_vectors_rank_exactly_after_the_shortlist() {
        let mut index = VectorIndex::new(16, 0);
        let mut state = 7_u64;
        let mut vectors = Vec::new();
        for id in 0..2_000 {
            let v: Vec<f32> = (0..16)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
                })
                .collect();
            let v = unit(&v);
            index.push(id, if id % 2 == 0 { Some("even") } else { None }, &v);
            vectors.push(v);
        }
        let query = vectors[123].clone();
        let mut exact: Vec<(i64, f32)> = vectors
            .iter()
            .enumerate()
            .map(|(id, v)| (id as i64, dot(&query, v)))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1));
        let found = index.search(&query, None, 10);
        let expected: Vec<i64> = exact.iter().take(10).map(|h| h.0).collect();
        assert_eq!(found.iter().map(|h| h.0).collect::<Vec<_>>(), expected);
        assert_eq!(found[0].0, 123);
        assert!(
            index
                .search(&query, Some("even"), 10)
                .iter()
                .all(|h| h.0 % 2 == 0)
        );
        index.remove_session("even");
        assert_eq!(index.len(), 1_000);
        assert!(!index.is_empty());
        assert!(VectorIndex::new(16, 0).is_empty());
        assert_eq!(index.search(&query, None, 1)[0].0, 123);
    }

    #[test]
    fn finds_best_first_with_scope_and_removal() {
        let mut index = VectorIndex::new(3, 0);
        assert!(index.push(1, None, &unit(&[1.0, 0.0, 0.0])));
        assert!(index.push(2, Some("a"), &unit(&[0.9, 0.1, 0.0])));
        assert!(index.push(3, Some("b"), &unit(&[0.0, 1.0, 0.0])));
        assert!(index.push(4, Some("a"), &unit(&[-1.0, 0.0, 0.0])));
        assert!(!index.push(5, None, &[1.0]));
        let query = unit(&[1.0, 0.0, 0.0]);
        let ids: Vec<i64> = index.search(&query, None, 10).iter().map(|h| h.0).collect();
        assert_eq!(ids, vec![1, 2]); // orthogonal and opposite vectors are not hits
        assert_eq!(index.search(&query, None, 1).len(), 1);
        let ids: Vec<i64> = index
            .search(&query, Some("a"), 10)
            .iter()
            .map(|h| h.0)
            .collect();
        assert_eq!(ids, vec![2]);
        assert!(index.search(&query, Some("zzz"), 10).is_empty());
        index.remove_session("a");
        assert_eq!(index.len(), 2);
        let ids: Vec<i64> = index
            .search(&unit(&[0.5, 1.0, 0.0]), None, 10)
            .iter()
            .map(|h| h.0)
            .collect();
        assert_eq!(ids, vec![3, 1]);
    }
}
