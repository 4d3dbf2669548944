//! Images and PDF documents through every provider's wire format, over a real local
//! server whose strict mock checks the part shapes as the real API does: a user
//! message with an image and a PDF, and a tool result with an image.

use futures::TryStreamExt;
use oxydra_provider::{
    AnthropicProvider, GeminiProvider, OllamaProvider, OpenAiProvider, OpenAiResponsesProvider,
    Provider, ProviderConfig, ProviderRequest, StreamAccumulator,
};
use oxydra_test_support::strict_parts::validate_ollama_request;
use oxydra_test_support::{MockServer, Reply, anthropic, openai, responses};
use oxydra_types::{CallId, ContentPart, Message, StreamItem, ToolCall};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The start of a real PNG file.
pub(crate) const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01";
/// The start of a real PDF file.
pub(crate) const PDF: &[u8] = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n";

pub(crate) fn png() -> ContentPart {
    ContentPart::image("image/png", PNG)
}

pub(crate) fn pdf() -> ContentPart {
    ContentPart::pdf(PDF, Some("report.pdf".into()))
}

fn b64(part: &ContentPart) -> String {
    part.base64_data().unwrap().to_owned()
}

/// A user message with an image and a PDF, a call, and its result with an image.
pub(crate) fn conversation() -> Vec<Message> {
    vec![
        Message::system("Be brief."),
        Message::user("Compare the chart with the report.").with_parts(vec![png(), pdf()]),
        Message::assistant_with_tool_calls(
            None,
            vec![ToolCall::new(
                CallId::from("c1"),
                "file_read",
                r#"{"path":"chart.png"}"#,
            )],
        ),
        Message::tool_result(CallId::from("c1"), "file_read", "chart.png").with_parts(vec![png()]),
    ]
}

async fn stream_text(provider: &dyn Provider, request: &ProviderRequest) -> String {
    let items: Vec<StreamItem> = provider
        .stream(request, &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    acc.finish().unwrap().message.content.unwrap_or_default()
}

fn only_body(server: &MockServer) -> Value {
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests[0].body.clone()
}

#[tokio::test]
async fn openai_chat_sends_image_url_and_file_parts_and_tool_parts_in_a_user_message() {
    let server = MockServer::builder()
        .strict_openai()
        .replies(vec![openai::text("Same numbers.")])
        .start()
        .unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.openai_url(), None));
    let request = ProviderRequest::new("gpt-4o", conversation());
    assert_eq!(stream_text(&provider, &request).await, "Same numbers.");
    let image_url = format!("data:image/png;base64,{}", b64(&png()));
    assert_eq!(
        only_body(&server)["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "Compare the chart with the report."},
                {"type": "image_url", "image_url": {"url": image_url}},
                {"type": "file", "file": {"filename": "report.pdf",
                    "file_data": format!("data:application/pdf;base64,{}", b64(&pdf()))}},
            ]},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "file_read", "arguments": "{\"path\":\"chart.png\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "chart.png"},
            {"role": "user", "content": [
                {"type": "text", "text": "Attached to the result of tool call c1:"},
                {"type": "image_url", "image_url": {"url": image_url}},
            ]},
        ])
    );
}

#[tokio::test]
async fn openai_chat_keeps_parallel_tool_messages_together_before_their_parts() {
    let server = MockServer::builder()
        .strict_openai()
        .replies(vec![openai::text("ok")])
        .start()
        .unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.openai_url(), None));
    let web = ContentPart::image_url("https://example.com/b.png");
    let messages = vec![
        Message::user("Read both."),
        Message::assistant_with_tool_calls(
            None,
            vec![
                ToolCall::new(CallId::from("a"), "file_read", "{}"),
                ToolCall::new(CallId::from("b"), "file_read", "{}"),
            ],
        ),
        Message::tool_result(CallId::from("a"), "file_read", "a").with_parts(vec![png()]),
        Message::tool_result(CallId::from("b"), "file_read", "b").with_parts(vec![web]),
        Message::user("And now?"),
    ];
    let request = ProviderRequest::new("gpt-4o", messages);
    assert_eq!(stream_text(&provider, &request).await, "ok");
    let body = only_body(&server);
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "user", "user"]);
    let parts = &body["messages"][4]["content"];
    assert_eq!(parts[0]["text"], "Attached to the result of tool call a:");
    assert_eq!(parts[2]["text"], "Attached to the result of tool call b:");
    assert_eq!(parts[3]["image_url"]["url"], "https://example.com/b.png");
    assert_eq!(body["messages"][5]["content"], "And now?");
}

#[tokio::test]
async fn responses_sends_input_image_and_input_file_in_messages_and_function_output() {
    let server = responses::strict_server(vec![responses::text("Same numbers.")]).unwrap();
    let provider =
        OpenAiResponsesProvider::new(ProviderConfig::new(server.openai_url(), Some("sk".into())));
    let request = ProviderRequest::new("gpt-4o", conversation());
    assert_eq!(stream_text(&provider, &request).await, "Same numbers.");
    let image_url = format!("data:image/png;base64,{}", b64(&png()));
    let image = json!({"type": "input_image", "image_url": image_url, "detail": "auto"});
    let body = only_body(&server);
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(
        body["input"],
        json!([
            {"role": "user", "content": [
                {"type": "input_text", "text": "Compare the chart with the report."},
                image,
                {"type": "input_file", "filename": "report.pdf",
                 "file_data": format!("data:application/pdf;base64,{}", b64(&pdf()))},
            ]},
            {"type": "function_call", "call_id": "c1", "name": "file_read",
             "arguments": "{\"path\":\"chart.png\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": [
                {"type": "input_text", "text": "chart.png"},
                image,
            ]},
        ])
    );
}

#[tokio::test]
async fn anthropic_sends_image_and_document_blocks_with_cache_control_still_placed() {
    let server = MockServer::builder()
        .only("POST", anthropic::MESSAGES_PATH)
        .strict_anthropic()
        .replies(vec![anthropic::text("Same numbers.")])
        .start()
        .unwrap();
    let provider =
        AnthropicProvider::new(ProviderConfig::new(server.url(""), Some("sk-ant".into())));
    let request = ProviderRequest::new("claude-haiku-4-5", conversation());
    assert_eq!(stream_text(&provider, &request).await, "Same numbers.");
    let image = json!({"type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(&png())}});
    let body = only_body(&server);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "Compare the chart with the report."},
                image,
                {"type": "document", "title": "report.pdf",
                 "source": {"type": "base64", "media_type": "application/pdf", "data": b64(&pdf())}},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "file_read", "input": {"path": "chart.png"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1",
                 "content": [{"type": "text", "text": "chart.png"}, image],
                 "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
}

#[tokio::test]
async fn anthropic_puts_the_cache_breakpoint_on_a_trailing_image_and_takes_image_urls() {
    let server = MockServer::builder()
        .only("POST", anthropic::MESSAGES_PATH)
        .strict_anthropic()
        .replies(vec![anthropic::text("A cat.")])
        .start()
        .unwrap();
    let provider =
        AnthropicProvider::new(ProviderConfig::new(server.url(""), Some("sk-ant".into())));
    let data_url = format!("data:image/png;base64,{}", b64(&png()));
    let request = ProviderRequest::new(
        "claude-haiku-4-5",
        vec![
            Message::system("s"),
            Message::user("").with_parts(vec![
                ContentPart::image_url("https://example.com/cat.png"),
                ContentPart::image_url(data_url),
            ]),
        ],
    );
    assert_eq!(stream_text(&provider, &request).await, "A cat.");
    let body = only_body(&server);
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(&png())},
             "cache_control": {"type": "ephemeral"}},
        ])
    );
}

#[tokio::test]
async fn gemini_sends_inline_data_parts_after_the_text_and_the_function_response() {
    let server = crate::gemini_strict::strict_text_server();
    let provider = GeminiProvider::new(ProviderConfig::new(server.url(""), Some("k".into())));
    let request = ProviderRequest::new("gemini-2.5-flash", conversation());
    assert!(!stream_text(&provider, &request).await.is_empty());
    let inline = |part: &ContentPart, mime: &str| json!({"inlineData": {"mimeType": mime, "data": b64(part)}});
    let body = only_body(&server);
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}]})
    );
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [
                {"text": "Compare the chart with the report."},
                inline(&png(), "image/png"),
                inline(&pdf(), "application/pdf"),
            ]},
            {"role": "model", "parts": [{"functionCall": {"name": "file_read", "args": {"path": "chart.png"}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "file_read", "response": {"result": "chart.png"}}},
                inline(&png(), "image/png"),
            ]},
        ])
    );
}

pub(crate) fn ollama_server() -> MockServer {
    let done = concat!(
        r#"{"model":"m","message":{"role":"assistant","content":"A chart."},"done":false}"#,
        "\n",
        r#"{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2}"#,
        "\n"
    );
    MockServer::builder()
        .respond_with(
            move |request| match validate_ollama_request(&request.body) {
                Ok(()) => Reply::new(200)
                    .header("content-type", "application/x-ndjson")
                    .body(done),
                Err(message) => Reply::json(400, json!({"error": message}).to_string()),
            },
        )
        .start()
        .unwrap()
}

#[tokio::test]
async fn ollama_sends_images_as_base64_on_the_user_and_the_tool_message() {
    let server = ollama_server();
    let provider = OllamaProvider::new(ProviderConfig::new(server.url(""), None));
    let data_url = format!("data:image/png;base64,{}", b64(&png()));
    let mut messages = conversation();
    // Ollama takes no documents: the user sends a second image, by `data:` URL.
    messages[1] = Message::user("Compare the charts.")
        .with_parts(vec![png(), ContentPart::image_url(data_url)]);
    let request = ProviderRequest::new("qwen2.5vl", messages);
    assert_eq!(stream_text(&provider, &request).await, "A chart.");
    let body = only_body(&server);
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "Compare the charts.", "images": [b64(&png()), b64(&png())]})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "content": "chart.png", "tool_name": "file_read", "images": [b64(&png())]})
    );
    assert!(body["messages"][0].get("images").is_none());
}
