//! How chunks are stored, for every backend: texts become [`NewChunk`]s with their unit
//! vectors ([`embed_chunks`]), and a vector is kept as little-endian `f32` bytes
//! ([`encode_vector`], [`decode_vector`]) where the database has no vector type.

use crate::embedder::{Embedder, embed_texts};
use crate::error::MemoryError;

/// A chunk to insert: its text and unit vector.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    /// The text.
    pub text: String,
    /// Its unit embedding.
    pub vector: Vec<f32>,
}

/// `texts` without the blank ones, each with its unit vector from `embedder`, in order:
/// what a backend's `store_chunks` inserts (nothing to insert for no text).
pub async fn embed_chunks(
    embedder: &dyn Embedder,
    texts: Vec<String>,
) -> Result<Vec<NewChunk>, MemoryError> {
    let texts: Vec<String> = texts.into_iter().filter(|t| !t.trim().is_empty()).collect();
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let vectors = embed_texts(embedder, &texts).await?;
    Ok(texts
        .into_iter()
        .zip(vectors)
        .map(|(text, vector)| NewChunk { text, vector })
        .collect())
}

/// A vector as little-endian `f32` bytes.
pub fn encode_vector(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes little-endian `f32` bytes into `out` (cleared first). A trailing partial
/// value is ignored; the caller's length check against the expected dimensions
/// reports such a blob (see [`VectorIndex::push`](crate::VectorIndex::push)).
pub fn decode_vector(blob: &[u8], out: &mut Vec<f32>) {
    out.clear();
    let (values, _) = blob.as_chunks::<4>();
    out.extend(values.iter().map(|bytes| f32::from_le_bytes(*bytes)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedder::HashingEmbedder;

    #[test]
    fn vectors_round_trip_little_endian() {
        let vector = vec![1.5_f32, -0.25, 0.0, f32::MAX];
        let blob = encode_vector(&vector);
        assert_eq!(blob.len(), 16);
        assert_eq!(&blob[..4], &1.5_f32.to_le_bytes());
        let mut out = vec![9.0];
        decode_vector(&blob, &mut out);
        assert_eq!(out, vector);
    }

    #[test]
    fn a_cut_blob_decodes_its_whole_values_only() {
        let mut out = Vec::new();
        let mut blob = encode_vector(&[1.0, 2.0]);
        blob.extend([0xff, 0xff, 0xff]);
        decode_vector(&blob, &mut out);
        assert_eq!(out, [1.0, 2.0]);
        decode_vector(&[0x01], &mut out);
        assert!(out.is_empty());
    }

    #[tokio::test]
    async fn blank_texts_are_dropped_and_the_rest_embedded_in_order() {
        let embedder = HashingEmbedder::default();
        let chunks = embed_chunks(
            &embedder,
            vec!["alpha".into(), "  \n".into(), String::new(), "beta".into()],
        )
        .await
        .unwrap();
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["alpha", "beta"]);
        for chunk in &chunks {
            assert_eq!(chunk.vector.len(), embedder.dimensions());
            let norm: f32 = chunk.vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{norm}");
        }
        assert!(
            embed_chunks(&embedder, vec![" ".into()])
                .await
                .unwrap()
                .is_empty()
        );
    }
}
