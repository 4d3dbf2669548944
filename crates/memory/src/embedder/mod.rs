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

/// Scale `vector` to unit length in place; a zero vector stays zero.
pub fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
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
/// the text count, or a vector of another length than it declares.
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
            check_dims(&vector, dims)?;
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
    check_dims(&vector, embedder.dimensions())?;
    normalize(&mut vector);
    Ok(vector)
}

fn check_dims(vector: &[f32], dims: usize) -> Result<(), MemoryError> {
    if vector.len() == dims {
        Ok(())
    } else {
        Err(MemoryError::Embedding(format!(
            "embedder returned {} dimensions, declared {dims}",
            vector.len()
        )))
    }
}
