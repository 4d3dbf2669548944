//! A local embedder: signed feature hashing of words, word pairs and character trigrams.

use async_trait::async_trait;

use super::{Embedder, normalize};
use crate::error::MemoryError;

/// Deterministic, offline embedder (the default).
///
/// Each lowercase word (weight 1), each pair of neighbouring words (0.5) and each
/// character trigram of a word (0.25, so "deploy" and "deployment" stay close) is hashed
/// with 64-bit FNV-1a; the hash picks a dimension and, with one more bit, a sign. The
/// result is L2-normalised, so texts sharing many features have a high cosine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashingEmbedder {
    dimensions: usize,
}

impl HashingEmbedder {
    /// An embedder producing `dimensions`-long vectors (at least 1).
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions: dimensions.max(1),
        }
    }

    /// The vector of one text.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0_f32; self.dimensions];
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        for word in &words {
            self.add(&mut vector, &[b"w:", word.as_bytes()], 1.0);
            let chars: Vec<char> = format!("^{word}$").chars().collect();
            for gram in chars.windows(3) {
                let gram: String = gram.iter().collect();
                self.add(&mut vector, &[b"c:", gram.as_bytes()], 0.25);
            }
        }
        for pair in words.windows(2) {
            if let [first, second] = pair {
                self.add(
                    &mut vector,
                    &[b"b:", first.as_bytes(), b" ", second.as_bytes()],
                    0.5,
                );
            }
        }
        normalize(&mut vector);
        vector
    }

    fn add(&self, vector: &mut [f32], parts: &[&[u8]], weight: f32) {
        let hash = fnv1a(parts);
        let slot = (hash % self.dimensions as u64) as usize;
        let sign = if (hash >> 63) & 1 == 1 { -1.0 } else { 1.0 };
        if let Some(value) = vector.get_mut(slot) {
            *value += sign * weight;
        }
    }
}

impl Default for HashingEmbedder {
    /// 256 dimensions.
    fn default() -> Self {
        Self::new(256)
    }
}

fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in *part {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    // Mix the high bits down so `% dimensions` and the sign bit are independent.
    hash ^= hash >> 29;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^ (hash >> 32)
}

#[async_trait]
impl Embedder for HashingEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, MemoryError> {
        Ok(texts.iter().map(|text| self.embed_one(text)).collect())
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn model(&self) -> String {
        format!("hashing-v1-{}", self.dimensions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn deterministic_normalised_and_sized() {
        let embedder = HashingEmbedder::new(64);
        let a = embedder.embed_one("The quick brown fox");
        assert_eq!(a.len(), 64);
        assert_eq!(a, embedder.embed_one("the QUICK brown fox!"));
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-5);
    }

    #[test]
    fn similar_texts_are_closer_than_unrelated_ones() {
        let embedder = HashingEmbedder::default();
        let query = embedder.embed_one("deploy the kubernetes cluster");
        let related = embedder.embed_one("how to deploy a kubernetes cluster on bare metal");
        let unrelated = embedder.embed_one("banana bread recipe with walnuts");
        assert!(cosine(&query, &related) > cosine(&query, &unrelated) + 0.2);
    }

    #[test]
    fn empty_and_punctuation_give_zero_vectors() {
        let embedder = HashingEmbedder::new(8);
        assert!(embedder.embed_one("").iter().all(|x| *x == 0.0));
        assert!(embedder.embed_one("?!... --").iter().all(|x| *x == 0.0));
        assert_eq!(HashingEmbedder::new(0).dimensions(), 1);
    }
}
