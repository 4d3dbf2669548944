//! The `Provider` trait.

use std::any::Any;
use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;
use oxydra_types::StreamItem;
use tokio_util::sync::CancellationToken;

use crate::error::ProviderError;
use crate::request::{ProviderRequest, ProviderResponse};

/// A stream of items from a provider; it ends after a [`StreamItem::Finish`], and a
/// stream cut before its end yields an error rather than ending quietly.
pub type ProviderStream = Pin<Box<dyn Stream<Item = Result<StreamItem, ProviderError>> + Send>>;

/// What a provider (and the model behind it) can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderCapabilities {
    /// Supports `stream`.
    pub streaming: bool,
    /// Supports tool calling.
    pub tool_calling: bool,
    /// May return several tool calls in one message.
    pub parallel_tool_calls: bool,
    /// Context window, in tokens.
    pub context_window: u32,
    /// Largest output, in tokens.
    pub max_output_tokens: u32,
}

/// An LLM behind an API.
///
/// A provider is `Any` so that a wrapper can be recognised behind an
/// `Arc<dyn Provider>` ([`ReliableProvider::downcast`](crate::ReliableProvider::downcast)).
#[async_trait]
pub trait Provider: Any + Send + Sync {
    /// A short name for logs (`openai`, `anthropic`, …).
    fn name(&self) -> &str;

    /// What this provider can do for `model`.
    fn capabilities(&self, model: &str) -> ProviderCapabilities;

    /// One whole response. Returns [`ProviderError::Cancelled`] as soon as `cancel` fires.
    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError>;

    /// A streamed response. The request is sent before this returns; reading the
    /// stream yields its items. Dropping the stream aborts the request.
    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError>;
}
