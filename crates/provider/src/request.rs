//! Requests to and responses from a provider.

use oxydra_types::{FinishReason, Message, ModelFallback, ToolSchema, Usage};

/// Whether and which tools the model may call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool.
    Tool(String),
}

/// What is sent to a provider.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderRequest {
    /// The model's name at the provider.
    pub model: String,
    /// The conversation; system messages included (the Anthropic client lifts them out).
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSchema>,
    /// Largest output, in tokens.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Tool choice.
    pub tool_choice: ToolChoice,
}

impl ProviderRequest {
    /// A request for `model` with `messages`, no tools and provider defaults.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
            tool_choice: ToolChoice::Auto,
        }
    }
}

/// A whole response.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderResponse {
    /// The assistant message: text and tool calls with their raw argument strings.
    pub message: Message,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Tokens used.
    pub usage: Usage,
    /// The model's reasoning text, when the server sent it apart from the answer
    /// (`reasoning_content`, `reasoning`); `None` when it sent none. Never part of
    /// the message.
    pub reasoning: Option<String>,
    /// The fallback models this call passed through, in order, when the model asked
    /// failed after its retries (see [`ReliableProvider`](crate::ReliableProvider)):
    /// the last one's `to` wrote this response. Empty when the model asked answered.
    pub fallbacks: Vec<ModelFallback>,
}

impl ProviderResponse {
    /// The model that wrote this response: the last fallback taken, else `asked`.
    pub fn answered_by<'a>(&'a self, asked: &'a str) -> &'a str {
        self.fallbacks
            .last()
            .map_or(asked, |fallback| fallback.to.as_str())
    }
}
