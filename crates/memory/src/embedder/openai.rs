//! An embedder calling an OpenAI-compatible `POST {base_url}/embeddings` endpoint.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use super::{Embedder, normalize};
use crate::error::MemoryError;

/// Where and how [`OpenAiEmbedder`] asks for embeddings.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedderConfig {
    /// API root, e.g. `https://api.openai.com/v1` (no trailing `/embeddings`).
    pub base_url: String,
    /// Bearer token; `None` sends no `Authorization` header (local servers).
    pub api_key: Option<String>,
    /// The embedding model, e.g. `text-embedding-3-small`.
    pub model: String,
    /// The length of the vectors the model returns.
    pub dimensions: usize,
    /// Send `dimensions` in the request (models that can shorten their vectors).
    pub send_dimensions: bool,
    /// Time limit of one request; default 60 s.
    pub timeout: Duration,
}

impl OpenAiEmbedderConfig {
    /// A config for `model` at `base_url` returning `dimensions`-long vectors.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, dimensions: usize) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            dimensions,
            send_dimensions: false,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Embeddings from an OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp...).
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    config: OpenAiEmbedderConfig,
    client: reqwest::Client,
}

#[derive(Serialize)]
struct EmbeddingRequest<'a> {
    model: &'a str,
    input: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
}

#[derive(Deserialize)]
struct EmbeddingResponse {
    data: Vec<EmbeddingData>,
}

#[derive(Deserialize)]
struct EmbeddingData {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl OpenAiEmbedder {
    /// An embedder using `client` for its requests.
    pub fn new(config: OpenAiEmbedderConfig, client: reqwest::Client) -> Self {
        Self { config, client }
    }

    fn url(&self) -> String {
        format!("{}/embeddings", self.config.base_url.trim_end_matches('/'))
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, MemoryError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let url = self.url();
        let span = tracing::debug_span!("memory.embed", url = %url, inputs = texts.len());
        self.request(&url, texts).instrument(span).await
    }

    fn dimensions(&self) -> usize {
        self.config.dimensions
    }

    fn model(&self) -> String {
        format!("openai:{}:{}", self.config.model, self.config.dimensions)
    }
}

impl OpenAiEmbedder {
    async fn request(&self, url: &str, texts: &[String]) -> Result<Vec<Vec<f32>>, MemoryError> {
        let body = EmbeddingRequest {
            model: &self.config.model,
            input: texts,
            dimensions: self
                .config
                .send_dimensions
                .then_some(self.config.dimensions),
        };
        let mut request = self
            .client
            .post(url)
            .timeout(self.config.timeout)
            .json(&body);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|error| MemoryError::Embedding(format!("POST {url}: {error}")))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            let text: String = text.chars().take(500).collect();
            return Err(MemoryError::Embedding(format!(
                "POST {url}: status {status}: {text}"
            )));
        }
        let parsed: EmbeddingResponse = response.json().await.map_err(|error| {
            MemoryError::Embedding(format!("POST {url}: bad response: {error}"))
        })?;
        order_and_check(parsed.data, texts.len(), self.config.dimensions)
            .map_err(|message| MemoryError::Embedding(format!("POST {url}: {message}")))
    }
}

/// Put the vectors in input order and check their number and length.
fn order_and_check(
    data: Vec<EmbeddingData>,
    expected: usize,
    dimensions: usize,
) -> Result<Vec<Vec<f32>>, String> {
    if data.len() != expected {
        return Err(format!("{} embeddings for {expected} inputs", data.len()));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.into_iter().enumerate() {
        let index = item.index.unwrap_or(position);
        if item.embedding.len() != dimensions {
            return Err(format!(
                "embedding {index} has {} dimensions, expected {dimensions}",
                item.embedding.len()
            ));
        }
        let mut vector = item.embedding;
        normalize(&mut vector);
        match slots.get_mut(index) {
            Some(slot @ None) => *slot = Some(vector),
            Some(Some(_)) => return Err(format!("embedding index {index} repeated")),
            None => return Err(format!("embedding index {index} out of range")),
        }
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(index, slot)| slot.ok_or_else(|| format!("no embedding for input {index}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(index: usize, embedding: Vec<f32>) -> EmbeddingData {
        EmbeddingData {
            embedding,
            index: Some(index),
        }
    }

    #[test]
    fn reorders_by_index() {
        let out =
            order_and_check(vec![item(1, vec![0.0, 2.0]), item(0, vec![3.0, 0.0])], 2, 2).unwrap();
        assert_eq!(out, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
    }

    #[test]
    fn rejects_wrong_count_size_and_index() {
        assert!(order_and_check(vec![item(0, vec![1.0])], 2, 1).is_err());
        assert!(order_and_check(vec![item(0, vec![1.0, 2.0])], 1, 1).is_err());
        assert!(order_and_check(vec![item(3, vec![1.0])], 1, 1).is_err());
        let repeated = order_and_check(vec![item(0, vec![1.0]), item(0, vec![1.0])], 2, 1);
        assert!(repeated.unwrap_err().contains("repeated"));
    }
}
