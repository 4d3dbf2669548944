//! The wire JSON and headers the clients send, captured by a real local server.

use futures::TryStreamExt;
use oxydra_provider::{
    AnthropicProvider, OpenAiProvider, Provider, ProviderConfig, ProviderRequest, ToolChoice,
};
use oxydra_test_support::{MockServer, Reply, fixture};
use oxydra_types::{CallId, Message, StreamItem, ToolCall, ToolSchema};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn conversation() -> ProviderRequest {
    let mut request = ProviderRequest::new(
        "test-model",
        vec![
            Message::system("You are terse."),
            Message::user("Weather in Paris and Rome?"),
            Message::assistant_with_tool_calls(
                None,
                vec![
                    ToolCall::new(CallId::from("call_1"), "get_weather", r#"{"city":"Paris"}"#),
                    ToolCall::new(CallId::from("call_2"), "get_weather", r#"{"city":"Rome"}"#),
                ],
            ),
            Message::tool_result(CallId::from("call_1"), "get_weather", "sunny"),
            Message::tool_result(CallId::from("call_2"), "get_weather", "rain"),
        ],
    );
    request.tools = vec![ToolSchema::new(
        "get_weather",
        "Current weather",
        json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
    )];
    request.temperature = Some(0.5);
    request.max_tokens = Some(256);
    request.tool_choice = ToolChoice::Required;
    request
}

async fn drain(provider: &dyn Provider, request: &ProviderRequest) -> Vec<StreamItem> {
    provider
        .stream(request, &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test]
async fn openai_stream_request_shape_with_key() {
    // Strict: the server refuses what llama.cpp-based servers refuse.
    let server = MockServer::builder()
        .replies(vec![Reply::sse(fixture(
            "openai/gpt4o_mini_stream_turn2.sse",
        ))])
        .repeat_last()
        .strict_openai()
        .start()
        .unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(
        server.url("/v1/"),
        Some("sk-123".into()),
    ));
    drain(&provider, &conversation()).await;
    let captured = &server.requests()[0];
    assert_eq!(captured.path, "/v1/chat/completions");
    assert_eq!(captured.headers["authorization"], "Bearer sk-123");
    let body = &captured.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(
        body["tools"],
        json!([{"type":"function","function":{"name":"get_weather","description":"Current weather",
            "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role":"system","content":"You are terse."},
            {"role":"user","content":"Weather in Paris and Rome?"},
            {"role":"assistant","content":"","tool_calls":[
                {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
                {"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},
            {"role":"tool","tool_call_id":"call_1","content":"sunny"},
            {"role":"tool","tool_call_id":"call_2","content":"rain"},
        ])
    );
}

/// A keyless OpenAI provider's plain `complete` against a server that answers
/// "hello": the server (with what it captured) and the answer's text.
pub(crate) async fn keyless_hello() -> (MockServer, String) {
    let completion = json!({"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},
        "finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}});
    let server = MockServer::repeating(vec![Reply::json(200, completion.to_string())]).unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.url("/v1"), None));
    let request = ProviderRequest::new("llama3.2", vec![Message::user("hi")]);
    let response = provider
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    (server, response.message.text().to_owned())
}

#[tokio::test]
async fn openai_without_key_sends_no_auth_and_complete_is_plain_json() {
    let (server, text) = keyless_hello().await;
    assert_eq!(text, "hello");
    let captured = &server.requests()[0];
    assert!(captured.headers.get("authorization").is_none());
    assert_eq!(captured.body["stream"], false);
    assert!(captured.body.get("stream_options").is_none());
    assert!(captured.body.get("tools").is_none());
    assert!(captured.body.get("tool_choice").is_none());
}

#[tokio::test]
async fn anthropic_stream_request_shape() {
    let server =
        MockServer::repeating(vec![Reply::sse(fixture("anthropic/basic_response.sse"))]).unwrap();
    let provider =
        AnthropicProvider::new(ProviderConfig::new(server.url(""), Some("sk-ant-1".into())));
    let mut request = conversation();
    request.max_tokens = None;
    drain(&provider, &request).await;
    let captured = &server.requests()[0];
    assert_eq!(captured.path, "/v1/messages");
    assert_eq!(captured.headers["x-api-key"], "sk-ant-1");
    assert_eq!(captured.headers["anthropic-version"], "2023-06-01");
    assert!(captured.headers.get("authorization").is_none());
    let body = &captured.body;
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["system"],
        json!([{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}])
    );
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["tool_choice"], json!({"type":"any"}));
    assert_eq!(
        body["tools"],
        json!([{"name":"get_weather","description":"Current weather",
            "input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},
            "cache_control":{"type":"ephemeral"}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role":"user","content":[{"type":"text","text":"Weather in Paris and Rome?"}]},
            {"role":"assistant","content":[
                {"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}},
                {"type":"tool_use","id":"call_2","name":"get_weather","input":{"city":"Rome"}}]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"call_1","content":"sunny"},
                {"type":"tool_result","tool_use_id":"call_2","content":"rain",
                    "cache_control":{"type":"ephemeral"}}]},
        ])
    );
}

#[tokio::test]
async fn anthropic_complete_parses_whole_message() {
    let message = json!({"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-20250514",
        "content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}],
        "stop_reason":"tool_use","usage":{"input_tokens":100,"cache_read_input_tokens":20,"output_tokens":30}});
    let server = MockServer::repeating(vec![Reply::json(200, message.to_string())]).unwrap();
    let provider = AnthropicProvider::new(ProviderConfig::new(server.url("/v1"), None));
    let response = provider
        .complete(&conversation(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text(), "Checking.");
    assert_eq!(
        response.message.tool_calls[0].arguments,
        r#"{"city":"Paris"}"#
    );
    assert_eq!(response.usage.input_tokens, 120);
    assert_eq!(response.usage.cached_tokens, 20);
    let captured = &server.requests()[0];
    assert_eq!(captured.path, "/v1/messages");
    assert!(captured.headers.get("x-api-key").is_none());
    assert!(captured.body.get("stream").is_none());
}
