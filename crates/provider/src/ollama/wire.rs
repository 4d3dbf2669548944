//! Ollama's native `/api/chat` wire format: request bodies.

use oxydra_types::{Message, MessageRole, ToolCall};
use serde_json::{Map, Value, json};

use crate::error::ProviderError;
use crate::http_error::object;
use crate::parts::{ImageSource, image_source};
use crate::request::{ProviderRequest, ToolChoice};

/// A tool call's `arguments` as the object Ollama wants. Arguments that are not a JSON
/// object (the model sent bad JSON earlier) go back as `{"invalid_arguments": "<raw>"}`.
fn call_arguments(call: &ToolCall) -> Value {
    if call.arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({"invalid_arguments": call.arguments}),
    }
}

fn message_to_wire(message: &Message) -> Value {
    let mut wire = object(json!({
        "role": message.role.as_str(),
        "content": message.text(),
    }));
    match message.role {
        MessageRole::Assistant if !message.tool_calls.is_empty() => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|call| {
                    json!({"function": {"name": call.name, "arguments": call_arguments(call)}})
                })
                .collect();
            wire.insert("tool_calls".into(), Value::Array(calls));
        }
        MessageRole::Tool => {
            if let Some(name) = &message.name {
                wire.insert("tool_name".into(), json!(name));
            }
        }
        _ => {}
    }
    // Images go as base64 (no `data:` prefix) in `images`, on the message they belong
    // to (a tool result's too). Only image bytes reach here: documents and web URLs
    // were refused before ([`crate::parts::check`]).
    let images: Vec<Value> = message
        .parts
        .iter()
        .filter_map(|part| match image_source(part) {
            Some(ImageSource::Bytes { data, .. }) => Some(json!(data)),
            _ => None,
        })
        .collect();
    if !images.is_empty() {
        wire.insert("images".into(), Value::Array(images));
    }
    Value::Object(wire)
}

/// Refuses a tool choice `/api/chat` cannot carry: it has no `tool_choice`, so
/// `auto` sends the tools and `none` sends none, but `required` or a named tool
/// cannot be enforced, and a run that depends on it is told so before anything is
/// sent rather than answered in text.
pub(crate) fn check_tool_choice(request: &ProviderRequest) -> Result<(), ProviderError> {
    let forced = match &request.tool_choice {
        ToolChoice::Auto | ToolChoice::None => return Ok(()),
        ToolChoice::Required => "`required`".to_owned(),
        ToolChoice::Tool(name) => format!("the tool `{name}`"),
    };
    Err(ProviderError::InvalidRequest {
        message: format!(
            "Ollama's /api/chat has no tool_choice, so it cannot force {forced}: \
             use tool choice `auto` or `none` with provider `ollama`"
        ),
    })
}

/// The JSON body of an `/api/chat` request.
pub(crate) fn request_body(request: &ProviderRequest, stream: bool) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message_to_wire).collect();
    let mut body = object(json!({
        "model": request.model,
        "messages": messages,
        "stream": stream,
    }));
    if !request.tools.is_empty() && request.tool_choice != ToolChoice::None {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    let mut options = Map::new();
    if let Some(max_tokens) = request.max_tokens {
        options.insert("num_predict".into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        options.insert("temperature".into(), json!(temperature));
    }
    if !options.is_empty() {
        body.insert("options".into(), Value::Object(options));
    }
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use oxydra_types::{CallId, ToolSchema};

    use super::*;

    #[test]
    fn calls_go_as_objects_and_results_name_their_tool() {
        let mut request = ProviderRequest::new(
            "qwen3:4b",
            vec![
                Message::system("be brief"),
                Message::user("weather?"),
                Message::assistant_with_tool_calls(
                    None,
                    vec![
                        ToolCall::new(CallId::from("c1"), "get_weather", r#"{"city":"Tokyo"}"#),
                        ToolCall::new(CallId::from("c2"), "noop", ""),
                    ],
                ),
                Message::tool_result(CallId::from("c1"), "get_weather", "sunny"),
            ],
        );
        request.tools = vec![ToolSchema::new(
            "get_weather",
            "Weather",
            json!({"type": "object"}),
        )];
        request.max_tokens = Some(64);
        let body = request_body(&request, true);
        assert_eq!(body["stream"], true);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[2]["content"], "", "never null");
        assert_eq!(
            messages[2]["tool_calls"],
            json!([{"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}},
                   {"function": {"name": "noop", "arguments": {}}}])
        );
        assert_eq!(
            messages[3],
            json!({"role": "tool", "content": "sunny", "tool_name": "get_weather"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
        assert_eq!(body["options"], json!({"num_predict": 64}));
    }
}
