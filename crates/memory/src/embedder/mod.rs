//! Turning text into vectors.

mod hashing;
mod openai;

pub use hashing::HashingEmbedder;
pub use openai::{OpenAiEmbedder, OpenAiEmbedderConfig};

use async_trait::async_trait;

use crate::error::MemoryError;

/// Turns texts into fixed-size vectors for similarity search.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// One vector of [`dimensions`](Embedder::dimensions) floats per input text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, MemoryError>;

    /// The length of every vector this embedder returns.
    fn dimensions(&self) -> usize;

    /// A name for the vector space (model and dimensions); vectors stored under another
    /// name are not compared with this embedder's. Override it: the default,
    /// `custom:{dimensions}`, cannot tell two custom embedders of one size apart.
    fn model(&self) -> String {
        format!("custom:{}", self.dimensions())
    }
}

/// Scale `vector` to unit length in place; a zero vector stays zero, and so does a
/// vector holding a NaN or an infinity.
pub fn normalize(vector: &mut [f32]) {
    let mut norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm.is_infinite() {
        // The squares overflowed: bring the largest value to 1 first.
        let largest = vector.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
        if largest.is_finite() {
            for x in vector.iter_mut() {
                *x /= largest;
            }
            norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        }
    }
    if norm > 0.0 && norm.is_finite() {
        for x in vector.iter_mut() {
            *x /= norm;
        }
    }
}

/// How many texts go to the embedder in one call.
const EMBED_BATCH: usize = 64;

/// Unit vectors for `texts`, in order, asking `embedder` for at most 64 at a time.
///
/// # Errors
/// [`MemoryError::Embedding`] when the embedder fails, returns a vector count other than
/// the text count, a vector of another length than it declares, or a value that is NaN
/// or infinite (no backend could rank it).
pub async fn embed_texts(
    embedder: &dyn Embedder,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, MemoryError> {
    let dims = embedder.dimensions();
    let mut out = Vec::with_capacity(texts.len());
    for batch in texts.chunks(EMBED_BATCH) {
        let vectors = embedder.embed(batch).await?;
        if vectors.len() != batch.len() {
            return Err(MemoryError::Embedding(format!(
                "{} vectors for {} texts",
                vectors.len(),
                batch.len()
            )));
        }
        for mut vector in vectors {
            check_vector(&vector, dims)?;
            normalize(&mut vector);
            out.push(vector);
        }
    }
    Ok(out)
}

/// The unit vector of one search query.
///
/// # Errors
/// As [`embed_texts`], and when the embedder returns no vector.
pub async fn embed_query(embedder: &dyn Embedder, query: &str) -> Result<Vec<f32>, MemoryError> {
    let mut vectors = embedder.embed(&[query.to_owned()]).await?;
    let mut vector = vectors
        .pop()
        .ok_or_else(|| MemoryError::Embedding("no vector for the query".into()))?;
    check_vector(&vector, embedder.dimensions())?;
    normalize(&mut vector);
    Ok(vector)
}

/// Refuses a vector of another length than `dims`, or with a NaN or infinite value.
fn check_vector(vector: &[f32], dims: usize) -> Result<(), MemoryError> {
    if vector.len() != dims {
        return Err(MemoryError::Embedding(format!(
            "embedder returned {} dimensions, declared {dims}",
            vector.len()
        )));
    }
    match vector.iter().position(|x| !x.is_finite()) {
        Some(at) => Err(MemoryError::Embedding(format!(
            "embedder returned a non-finite value ({}) at dimension {at}",
            vector.get(at).copied().unwrap_or(f32::NAN)
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns the vectors it was made with, whatever it is asked.
    struct Fixed(Vec<Vec<f32>>, usize);

    #[async_trait]
    impl Embedder for Fixed {
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, MemoryError> {
            Ok(self.0.iter().take(texts.len()).cloned().collect())
        }
        fn dimensions(&self) -> usize {
            self.1
        }
    }

    #[tokio::test]
    async fn vectors_of_the_wrong_length_or_not_finite_are_refused() {
        let texts = vec!["a".to_owned()];
        for (vector, expected) in [
            (vec![1.0, 0.0], "2 dimensions, declared 3"),
            (vec![1.0, f32::NAN, 0.0], "NaN"),
            (vec![f32::INFINITY, 0.0, 0.0], "inf"),
        ] {
            let embedder = Fixed(vec![vector], 3);
            for error in [
                embed_texts(&embedder, &texts).await.unwrap_err(),
                embed_query(&embedder, "a").await.unwrap_err(),
            ] {
                assert!(
                    matches!(&error, MemoryError::Embedding(m) if m.contains(expected)),
                    "{error}"
                );
            }
        }
        let embedder = Fixed(vec![vec![3.0, 4.0, 0.0]], 3);
        assert_eq!(
            embed_query(&embedder, "a").await.unwrap(),
            vec![0.6, 0.8, 0.0]
        );
    }

    #[test]
    fn normalize_survives_overflowing_squares_and_leaves_zero_alone() {
        let mut huge = vec![3.0e30_f32, 4.0e30, 0.0];
        normalize(&mut huge);
        assert!(
            (huge[0] - 0.6).abs() < 1e-6 && (huge[1] - 0.8).abs() < 1e-6,
            "{huge:?}"
        );
        let mut zero = vec![0.0_f32; 4];
        normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 4]);
    }
}
