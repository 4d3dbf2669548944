//! The `Provider` trait.

use std::any::Any;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Stream;
use oxydra_types::{Message, StreamItem};
use tokio_util::sync::CancellationToken;

use crate::error::ProviderError;
use crate::request::{ProviderRequest, ProviderResponse, ToolChoice};

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

    /// Whether the model is a small one that needs help with tools: it rarely decides
    /// to call a tool on its own, tells few tools apart, and rarely stops calling once
    /// it has. The runtime gives such a model its small-model defaults (fewer tools, a
    /// tool choice per turn; see `oxydra_runtime::SmallModelDefaults`). Default: no;
    /// the embedded model says yes under a billion parameters.
    fn is_small_model(&self) -> bool {
        false
    }

    /// This provider for runs whose file tools work under `workspace`, when knowing
    /// it changes what the provider does (the embedded small model holds the file
    /// tools' `path` arguments to the workspace's real paths); `None` when it makes
    /// no difference (the default).
    fn for_workspace(&self, _workspace: &Path) -> Option<Arc<dyn Provider>> {
        None
    }

    /// The tool choice a run that opens with `messages` should begin with when its
    /// caller chose none, or `None` for no preference (the default). The embedded
    /// small model, given a workspace ([`for_workspace`](Self::for_workspace)), asks
    /// for a call when the last user message names a path of the workspace that
    /// exists: what that path holds is something only a tool can show it.
    fn opening_tool_choice(&self, _messages: &[Message]) -> Option<ToolChoice> {
        None
    }
}
