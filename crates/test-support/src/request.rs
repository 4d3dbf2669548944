//! A request as the mock server received it.

use axum::http::HeaderMap;

/// One request the mock server received, in arrival order.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The method (`POST`, `GET`, …).
    pub method: String,
    /// The path (`/v1/chat/completions`, `/v1/messages`), without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// Every header.
    pub headers: HeaderMap,
    /// The body as sent.
    pub raw_body: Vec<u8>,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: serde_json::Value,
}

impl RecordedRequest {
    /// The header `name` as text, if present and printable.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// The `authorization` header (OpenAI-style bearer keys).
    pub fn authorization(&self) -> Option<&str> {
        self.header("authorization")
    }

    /// The `x-api-key` header (Anthropic-style keys).
    pub fn api_key(&self) -> Option<&str> {
        self.header("x-api-key")
    }

    /// The content of the first `tool` message of an OpenAI chat-completions request:
    /// the tool result the model got back.
    pub fn first_tool_result(&self) -> Option<String> {
        self.body
            .get("messages")?
            .as_array()?
            .iter()
            .find(|message| message.get("role").and_then(|role| role.as_str()) == Some("tool"))?
            .get("content")?
            .as_str()
            .map(str::to_owned)
    }
}
