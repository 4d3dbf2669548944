//! The Gemini `generateContent` wire format: request bodies.

use std::collections::HashMap;

use oxydra_types::{ContentPart, Message, MessageRole, ReasoningPart, ToolCall, ToolSchema};
use serde_json::{Map, Value, json};

use crate::http_error::object;
use crate::parts::parse_data_url;
use crate::request::{ProviderRequest, ToolChoice};

/// Failed tool results (they begin with this) are sent as `{"error": …}`.
const FAILED_TOOL_PREFIX: &str = oxydra_types::TOOL_FAILURE_PREFIX;

/// A function call's `args` object: the raw arguments parsed. Arguments that are not a
/// JSON object (the model sent bad JSON earlier) go back as
/// `{"invalid_arguments": "<raw>"}` so the API accepts the history.
fn call_args(call: &ToolCall) -> Value {
    if call.arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({"invalid_arguments": call.arguments}),
    }
}

/// Appends `parts` as a content of `role`, merging into the previous content when it
/// has the same role (the API wants `user` and `model` turns to alternate).
fn push_parts(contents: &mut Vec<Value>, role: &str, parts: Vec<Value>) {
    if parts.is_empty() {
        return;
    }
    if let Some(last) = contents.last_mut()
        && last["role"] == role
        && let Some(existing) = last["parts"].as_array_mut()
    {
        existing.extend(parts);
        return;
    }
    contents.push(json!({"role": role, "parts": parts}));
}

/// The signatures of an assistant message: the one of its text, and those of its calls.
fn signatures(message: &Message) -> (Option<&str>, HashMap<&str, &str>) {
    let mut text = None;
    let mut calls = HashMap::new();
    for part in &message.reasoning {
        if let ReasoningPart::ThoughtSignature { call_id, signature } = part {
            match call_id {
                Some(id) => {
                    calls.insert(id.as_str(), signature.as_str());
                }
                None => {
                    text.get_or_insert(signature.as_str());
                }
            }
        }
    }
    (text, calls)
}

/// The model's parts of an assistant message: its text, then one `functionCall` part per
/// call, each signature on the part it came on.
fn model_parts(message: &Message) -> Vec<Value> {
    let (text_signature, call_signatures) = signatures(message);
    let mut parts = Vec::new();
    let text = message.content.as_deref().unwrap_or_default();
    if !text.is_empty() || text_signature.is_some() {
        let mut part = object(json!({"text": text}));
        if let Some(signature) = text_signature {
            part.insert("thoughtSignature".into(), json!(signature));
        }
        parts.push(Value::Object(part));
    }
    for call in &message.tool_calls {
        let mut part = object(json!({
            "functionCall": {"name": call.name, "args": call_args(call)},
        }));
        if let Some(signature) = call_signatures.get(call.id.as_str()) {
            part.insert("thoughtSignature".into(), json!(signature));
        }
        parts.push(Value::Object(part));
    }
    parts
}

/// The `functionResponse` part answering a call: the tool's name and its output as
/// `{"result": …}` (or `{"error": …}` when the tool failed).
fn response_part(message: &Message, call_names: &HashMap<&str, &str>) -> Value {
    let text = message.text();
    let name = message
        .tool_call_id
        .as_ref()
        .and_then(|id| call_names.get(id.as_str()).copied())
        .or(message.name.as_deref())
        .unwrap_or_default();
    let response = if text.starts_with(FAILED_TOOL_PREFIX) {
        json!({"error": text})
    } else {
        json!({"result": text})
    };
    json!({"functionResponse": {"name": name, "response": response}})
}

/// A part as a Gemini part: its bytes (or those of its `data:` URL) inline as
/// `inlineData` with their `mimeType`, or a File API URI as `fileData`. Web URLs were
/// refused before ([`crate::parts::check`]).
fn part_to_wire(part: &ContentPart) -> Value {
    let inline =
        |mime_type: &str, data: &str| json!({"inlineData": {"mimeType": mime_type, "data": data}});
    match part {
        ContentPart::Image { media_type, data }
        | ContentPart::Document {
            media_type, data, ..
        } => inline(media_type, data),
        ContentPart::ImageUrl { url } => match parse_data_url(url) {
            Some((media_type, data)) => inline(media_type, data),
            None => json!({"fileData": {"fileUri": url}}),
        },
    }
}

/// The system instruction (every system message, joined) and the contents.
fn messages_to_wire(messages: &[Message]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<&str> = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    for message in messages {
        match message.role {
            MessageRole::System => system.push(message.text()),
            MessageRole::User => {
                let text = message.text();
                let mut parts = Vec::with_capacity(message.parts.len() + 1);
                if !text.is_empty() {
                    parts.push(json!({"text": text}));
                }
                parts.extend(message.parts.iter().map(part_to_wire));
                push_parts(&mut contents, "user", parts);
            }
            MessageRole::Assistant => {
                for call in &message.tool_calls {
                    call_names.insert(call.id.as_str(), call.name.as_str());
                }
                push_parts(&mut contents, "model", model_parts(message));
            }
            MessageRole::Tool => {
                // A result's parts follow its `functionResponse` in the same turn.
                let mut parts = Vec::with_capacity(message.parts.len() + 1);
                parts.push(response_part(message, &call_names));
                parts.extend(message.parts.iter().map(part_to_wire));
                push_parts(&mut contents, "user", parts);
            }
        }
    }
    let system: Vec<&str> = system.into_iter().filter(|s| !s.is_empty()).collect();
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, contents)
}

/// A tool as a function declaration. Its JSON Schema goes whole in
/// `parametersJsonSchema` (which takes JSON Schema, unlike `parameters`, which takes
/// an OpenAPI subset); `$schema` is dropped.
fn declaration(tool: &ToolSchema) -> Value {
    let mut declaration = object(json!({
        "name": tool.name,
        "description": tool.description,
    }));
    let parameters = match &tool.parameters {
        Value::Object(schema) => {
            let mut schema = schema.clone();
            schema.remove("$schema");
            (!schema.is_empty()).then_some(Value::Object(schema))
        }
        _ => None,
    };
    if let Some(parameters) = parameters {
        declaration.insert("parametersJsonSchema".into(), parameters);
    }
    Value::Object(declaration)
}

/// Whether `model` thinks (Gemini 2.5 and later); older Gemini models and Gemma
/// refuse a `thinkingConfig`.
pub(crate) fn thinks(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    name.starts_with("gemini-") && !(name.starts_with("gemini-1") || name.starts_with("gemini-2.0"))
}

/// The JSON body of a `generateContent` / `streamGenerateContent` request.
pub(crate) fn request_body(request: &ProviderRequest, thinking_budget: Option<u32>) -> Value {
    let (system, contents) = messages_to_wire(&request.messages);
    let mut body = object(json!({"contents": contents}));
    if let Some(system) = system {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request.tools.iter().map(declaration).collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
        let config = match &request.tool_choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        body.insert(
            "toolConfig".into(),
            json!({"functionCallingConfig": config}),
        );
    }
    let mut generation = Map::new();
    if let Some(max_tokens) = request.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        generation.insert("temperature".into(), json!(temperature));
    }
    if thinks(&request.model) || thinking_budget.is_some() {
        let mut thinking = object(json!({"includeThoughts": true}));
        if let Some(budget) = thinking_budget {
            thinking.insert("thinkingBudget".into(), json!(budget));
        }
        generation.insert("thinkingConfig".into(), Value::Object(thinking));
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

/// The tool names a request's `functionResponse` parts answer, for tests.
#[cfg(test)]
fn answered(body: &Value) -> Vec<String> {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["functionResponse"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use oxydra_types::CallId;

    use super::*;

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall::new(CallId::from(id), name, args)
    }

    #[test]
    fn roles_signatures_and_grouped_results() {
        let assistant = Message::assistant_with_tool_calls(
            Some("Let me look.".into()),
            vec![
                call("c1", "read", r#"{"path":"a"}"#),
                call("c2", "list", "{bad"),
            ],
        )
        .with_reasoning(vec![
            ReasoningPart::ThoughtSignature {
                call_id: Some(CallId::from("c1")),
                signature: "sig-call".into(),
            },
            ReasoningPart::ThoughtSignature {
                call_id: None,
                signature: "sig-text".into(),
            },
            ReasoningPart::RedactedThinking {
                data: "other".into(),
            },
        ]);
        let request = ProviderRequest::new(
            "gemini-2.5-flash",
            vec![
                Message::system("be brief"),
                Message::user("go"),
                assistant,
                Message::tool_result(CallId::from("c1"), "wrong-name", "one"),
                Message::tool_result(CallId::from("c2"), "list", "Tool execution failed: no"),
                Message::system("later"),
                Message::user("and?"),
            ],
        );
        let body = request_body(&request, Some(512));
        assert_eq!(
            body["systemInstruction"]["parts"][0]["text"],
            "be brief\n\nlater"
        );
        let contents = body["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 3);
        assert_eq!(contents[1]["role"], "model");
        let parts = contents[1]["parts"].as_array().unwrap();
        assert_eq!(
            parts[0],
            json!({"text": "Let me look.", "thoughtSignature": "sig-text"})
        );
        assert_eq!(
            parts[1],
            json!({"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "sig-call"})
        );
        assert_eq!(
            parts[2],
            json!({"functionCall": {"name": "list", "args": {"invalid_arguments": "{bad"}}})
        );
        assert_eq!(contents[2]["role"], "user");
        let answers = contents[2]["parts"].as_array().unwrap();
        assert_eq!(
            answers.len(),
            3,
            "both results and the next question in one content"
        );
        assert_eq!(
            answers[0],
            json!({"functionResponse": {"name": "read", "response": {"result": "one"}}})
        );
        assert_eq!(
            answers[1]["functionResponse"]["response"]["error"],
            "Tool execution failed: no"
        );
        assert_eq!(answers[2], json!({"text": "and?"}));
        assert_eq!(answered(&body), vec!["read", "list"]);
        assert_eq!(
            body["generationConfig"]["thinkingConfig"],
            json!({"includeThoughts": true, "thinkingBudget": 512})
        );
    }

    #[test]
    fn tools_go_as_json_schema_and_choice_maps() {
        let mut request = ProviderRequest::new("gemini-2.0-flash", vec![Message::user("hi")]);
        request.tools = vec![ToolSchema::new(
            "read",
            "Read a file",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                   "properties": {"path": {"type": "string"}}, "additionalProperties": false}),
        )];
        request.tool_choice = ToolChoice::Tool("read".into());
        request.max_tokens = Some(100);
        let body = request_body(&request, None);
        let declaration = &body["tools"][0]["functionDeclarations"][0];
        assert_eq!(declaration["name"], "read");
        assert!(declaration["parametersJsonSchema"].get("$schema").is_none());
        assert_eq!(
            declaration["parametersJsonSchema"]["additionalProperties"],
            false
        );
        assert_eq!(
            body["toolConfig"]["functionCallingConfig"],
            json!({"mode": "ANY", "allowedFunctionNames": ["read"]})
        );
        assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 100}));
    }

    #[test]
    fn only_thinking_models_get_a_thinking_config() {
        assert!(thinks("gemini-2.5-pro"));
        assert!(thinks("models/gemini-3-pro-preview"));
        assert!(!thinks("gemini-2.0-flash"));
        assert!(!thinks("gemini-1.5-pro"));
        assert!(!thinks("gemma-3-27b-it"));
    }
}
