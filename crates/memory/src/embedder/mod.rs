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
