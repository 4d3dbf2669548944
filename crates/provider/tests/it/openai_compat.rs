//! OpenAI-compatible servers as they behave: multi-turn tool conversations against a
//! server as strict as llama.cpp's, and tool calls a local model wrote as text.

use futures::TryStreamExt;
use oxydra_provider::{
    OpenAiProvider, Provider, ProviderConfig, ProviderRequest, ProviderResponse, StreamAccumulator,
    ToolChoice,
};
use oxydra_test_support::{MockServer, Reply, fixture};
use oxydra_types::{FinishReason, Message, ToolSchema};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn provider(url: String) -> OpenAiProvider {
    OpenAiProvider::new(ProviderConfig::new(url, None))
}

fn tools(names: &[&str]) -> Vec<ToolSchema> {
    names
        .iter()
        .map(|name| ToolSchema::new(*name, "a tool", json!({"type": "object"})))
        .collect()
}

async fn stream(provider: &OpenAiProvider, request: &ProviderRequest) -> ProviderResponse {
    let items: Vec<_> = provider
        .stream(request, &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    acc.finish().unwrap()
}

/// The conversation after `response`: its message and one result per call.
fn next_turn(request: &ProviderRequest, response: &ProviderResponse) -> ProviderRequest {
    let mut next = request.clone();
    next.messages.push(response.message.clone());
    for call in &response.message.tool_calls {
        next.messages
            .push(Message::tool_result(call.id.clone(), &call.name, "7"));
    }
    next
}

/// A server as strict as llama.cpp's: it answers a request such a server refuses
/// with that server's recorded 500; the last reply repeats.
fn strict(replies: Vec<Reply>) -> MockServer {
    MockServer::builder()
        .replies(replies)
        .repeat_last()
        .strict_openai()
        .start()
        .unwrap()
}

#[tokio::test]
async fn streamed_tool_conversation_passes_a_strict_server() {
    let server = strict(vec![
        Reply::sse(fixture("local/llamacpp_qwen3_reasoning_then_tool_call.sse")),
        Reply::sse(fixture("openai/gpt4o_mini_stream_turn2.sse")),
    ]);
    let provider = provider(server.url("/v1"));
    let mut request = ProviderRequest::new("qwen3", vec![Message::user("2 - 5?")]);
    request.tools = tools(&["subtract"]);
    let first = stream(&provider, &request).await;
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert!(first.reasoning.is_some());
    let second = stream(&provider, &next_turn(&request, &first)).await;
    // The strict server would have answered 500 to a `content: null`.
    assert_eq!(second.message.text(), "The capital of the UK is London.");
    let sent = &server.requests()[1].body["messages"];
    assert_eq!(sent[1]["content"], "");
    assert_eq!(sent[1]["tool_calls"][0]["id"], "call_REDACTED_1");
    assert_eq!(sent[2]["tool_call_id"], "call_REDACTED_1");
    // Reasoning is kept beside the answer, never sent back as its text.
    assert!(!sent.to_string().contains("Okay, the user wants"));
}

#[tokio::test]
async fn whole_tool_conversation_passes_a_strict_server() {
    let done = json!({"choices":[{"index":0,"message":{"role":"assistant","content":"Done."},
        "finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2}});
    let server = strict(vec![
        Reply::json(
            200,
            fixture("local/llama_cpp_python_tool_call_with_function_call.json"),
        ),
        Reply::json(200, done.to_string()),
    ]);
    let provider = provider(server.url("/v1"));
    let mut request = ProviderRequest::new("smollm2", vec![Message::user("list plan.md")]);
    request.tools = tools(&["file_list"]);
    let cancel = CancellationToken::new();
    let first = provider.complete(&request, &cancel).await.unwrap();
    assert_eq!(first.message.tool_calls.len(), 1);
    let second = provider
        .complete(&next_turn(&request, &first), &cancel)
        .await
        .unwrap();
    assert_eq!(second.message.text(), "Done.");
    assert_eq!(server.hits(), 2);
}

fn sse_text(pieces: &[&str]) -> Vec<u8> {
    let mut body = String::new();
    for piece in pieces {
        let chunk = json!({"choices":[{"index":0,"delta":{"content":piece},"finish_reason":null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    );
    body.push_str(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":12}}\n\n",
    );
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

#[tokio::test]
async fn hermes_tool_call_written_as_text_is_recovered_over_http() {
    let body = sse_text(&[
        "I will read it.\n",
        "<tool_",
        "call>\n{\"name\": \"file_read\", \"arguments\": ",
        "{\"path\": \"notes.md\"}}\n</tool_call>",
    ]);
    for chunk in [0, 5] {
        let server = strict(vec![
            Reply::sse(body.clone()).chunked(chunk),
            Reply::sse(fixture("openai/gpt4o_mini_stream_turn2.sse")),
        ]);
        let provider = provider(server.url("/v1"));
        let mut request = ProviderRequest::new("qwen2.5", vec![Message::user("read notes.md")]);
        request.tools = tools(&["file_read", "file_write"]);
        let response = stream(&provider, &request).await;
        assert_eq!(response.message.text(), "I will read it.\n");
        let call = &response.message.tool_calls[0];
        assert_eq!(response.message.tool_calls.len(), 1);
        assert_eq!(call.name, "file_read");
        assert_eq!(call.arguments, r#"{"path":"notes.md"}"#);
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        // The recovered call's id is answered by the next turn, strictly checked.
        stream(&provider, &next_turn(&request, &response)).await;
        assert_eq!(server.hits(), 2);
    }
}

#[tokio::test]
async fn text_calls_are_not_recovered_when_tools_are_off_or_unknown() {
    let body = sse_text(&["<tool_call>{\"name\": \"file_read\", \"arguments\": {}}</tool_call>"]);
    for (names, choice) in [
        (&["file_read"][..], ToolChoice::None),
        (&["file_write"][..], ToolChoice::Auto),
    ] {
        let server = strict(vec![Reply::sse(body.clone())]);
        let mut request = ProviderRequest::new("m", vec![Message::user("x")]);
        request.tools = tools(names);
        request.tool_choice = choice;
        let response = stream(&provider(server.url("/v1")), &request).await;
        assert!(response.message.tool_calls.is_empty());
        assert_eq!(
            response.message.text(),
            "<tool_call>{\"name\": \"file_read\", \"arguments\": {}}</tool_call>"
        );
        assert_eq!(response.finish_reason, FinishReason::Stop);
    }
}

#[tokio::test]
async fn fenced_json_call_in_a_whole_response_is_recovered() {
    let content =
        "Let me look.\n```json\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a\"}}\n```";
    let body = json!({"choices":[{"index":0,"message":{"role":"assistant","content":content},
        "finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9}});
    let server = strict(vec![Reply::json(200, body.to_string())]);
    let mut request = ProviderRequest::new("m", vec![Message::user("read a")]);
    request.tools = tools(&["file_read"]);
    let response = provider(server.url("/v1"))
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text(), "Let me look.");
    assert_eq!(response.message.tool_calls[0].name, "file_read");
    assert_eq!(response.message.tool_calls[0].arguments, r#"{"path":"a"}"#);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
}

#[tokio::test]
async fn an_empty_200_stream_is_an_error_not_an_empty_answer() {
    // llama-cpp-python may answer a streamed request with tools this way.
    let server = strict(vec![Reply::sse(Vec::new())]);
    let mut request = ProviderRequest::new("smollm2", vec![Message::user("x")]);
    request.tools = tools(&["file_list"]);
    let result: Result<Vec<_>, _> = provider(server.url("/v1"))
        .stream(&request, &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await;
    let error = result.unwrap_err();
    // A decode error, which the runtime answers by falling back to `complete`.
    assert!(
        matches!(&error, oxydra_provider::ProviderError::Decode { what, .. } if what.contains("held no events")),
        "{error:?}"
    );
}
