//! Every recorded stream in the shared fixtures, served over a real local HTTP server
//! and parsed by the real clients.

use futures::StreamExt;
use oxydra_provider::{
    AnthropicProvider, OpenAiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
    ProviderResponse, StreamAccumulator,
};
use oxydra_test_support::{MockServer, Reply, fixture};
use oxydra_types::{FinishReason, Message, StreamItem, Usage};
use tokio_util::sync::CancellationToken;

fn request(model: &str) -> ProviderRequest {
    ProviderRequest::new(model, vec![Message::user("hi")])
}

/// Streams `name` through `provider`, served whole and in 7-byte pieces; both must
/// give the same items. Returns the assembled response and the items.
async fn stream_fixture(
    name: &str,
    make: impl Fn(String) -> Box<dyn Provider>,
    suffix: &str,
) -> (ProviderResponse, Vec<StreamItem>) {
    let mut results = Vec::new();
    for chunk in [0, 7, 64] {
        let server = MockServer::repeating(vec![Reply::sse(fixture(name)).chunked(chunk)]).unwrap();
        let provider = make(server.url(suffix));
        let mut stream = provider
            .stream(&request("m"), &CancellationToken::new())
            .await
            .unwrap();
        let mut items = Vec::new();
        while let Some(item) = stream.next().await {
            items.push(item.unwrap_or_else(|e| panic!("{name} (chunk {chunk}): {e}")));
        }
        assert!(
            matches!(items.last(), Some(StreamItem::Finish(_))),
            "{name}: finish last"
        );
        results.push(items);
    }
    assert_eq!(results[0], results[1], "{name}: chunking changed the items");
    assert_eq!(results[0], results[2], "{name}: chunking changed the items");
    let items = results.swap_remove(0);
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    (acc.finish().unwrap(), items)
}

fn openai(url: String) -> Box<dyn Provider> {
    Box::new(OpenAiProvider::new(ProviderConfig::new(
        url,
        Some("sk-test".into()),
    )))
}

fn anthropic(url: String) -> Box<dyn Provider> {
    Box::new(AnthropicProvider::new(ProviderConfig::new(
        url,
        Some("sk-ant".into()),
    )))
}

fn calls(response: &ProviderResponse) -> Vec<(&str, &str, &str)> {
    response
        .message
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect()
}

/// Asserts a turn that is tool calls only: the `expected` calls (id, name, arguments),
/// no text, finish reason `ToolCalls`, and `usage`.
#[track_caller]
fn assert_only_calls(response: &ProviderResponse, expected: &[(&str, &str, &str)], usage: Usage) {
    assert_eq!(calls(response), expected);
    assert_eq!(response.message.content, None);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage);
}

#[tokio::test]
async fn openai_parallel_tool_calls() {
    let (response, items) =
        stream_fixture("openai/gpt4o_complex_run_turn1.sse", openai, "/v1").await;
    assert_eq!(
        calls(&response),
        vec![
            ("call_q2UyBRP7eXNTzAoR8lEhjc9Z", "get_country", "{}"),
            ("call_b51ijcpFkDiTQG1bQzsrmtW5", "get_product_name", "{}"),
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Usage::new(364, 40, 0));
    assert_eq!(response.message.content, None);
    // The usage-only chunk after finish_reason still comes before Finish.
    let n = items.len();
    assert!(matches!(items[n - 2], StreamItem::Usage(_)));
}

#[tokio::test]
async fn openai_arguments_split_over_many_deltas() {
    let (response, _) = stream_fixture("openai/gpt4o_complex_run_turn2.sse", openai, "/v1").await;
    assert_eq!(
        calls(&response),
        vec![(
            "call_LwxJUB9KppVyogRRLQsamRJv",
            "get_weather",
            r#"{"city":"Mexico City"}"#
        )]
    );
    assert_eq!(response.usage, Usage::new(423, 15, 0));
}

#[tokio::test]
async fn openai_long_nested_arguments() {
    let (response, _) = stream_fixture("openai/gpt4o_complex_run_turn3.sse", openai, "/v1").await;
    let expected = r#"{"answers":[{"label":"Capital","answer":"The capital of Mexico is Mexico City."},{"label":"Weather","answer":"The weather in Mexico City is currently sunny."},{"label":"Product Name","answer":"The product name is Pydantic AI."}]}"#;
    assert_eq!(
        calls(&response),
        vec![("call_CCGIWaMeYWmxOQ91orkmTvzn", "final_result", expected)]
    );
    assert_eq!(response.usage, Usage::new(448, 62, 0));
    let parsed = response.message.tool_calls[0].parsed_arguments().unwrap();
    assert_eq!(
        parsed["answers"][2]["answer"],
        "The product name is Pydantic AI."
    );
}

#[tokio::test]
async fn openai_mini_tool_call_then_text() {
    let (response, _) = stream_fixture("openai/gpt4o_mini_stream_turn1.sse", openai, "/v1").await;
    assert_eq!(
        calls(&response),
        vec![(
            "call_ZR5UUuTt3pf61kjwAJIYdVMj",
            "get_capital",
            r#"{"country":"UK"}"#
        )]
    );
    assert_eq!(response.usage, Usage::new(53, 15, 0));

    let (response, _) = stream_fixture("openai/gpt4o_mini_stream_turn2.sse", openai, "/v1").await;
    assert_eq!(response.message.text(), "The capital of the UK is London.");
    assert!(response.message.tool_calls.is_empty());
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, Usage::new(78, 9, 0));
}

#[tokio::test]
async fn anthropic_text_ping_and_split_tool_json() {
    let (response, _) = stream_fixture("anthropic/tool_use_response.sse", anthropic, "").await;
    assert_eq!(
        response.message.text(),
        "I'll check the current weather in Paris for you."
    );
    assert_eq!(
        calls(&response),
        vec![(
            "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            "get_weather",
            r#"{"location": "Paris"}"#
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Usage::new(377, 65, 0));
}

#[tokio::test]
async fn anthropic_basic_text() {
    let (response, _) = stream_fixture("anthropic/basic_response.sse", anthropic, "").await;
    assert_eq!(response.message.text(), "Hello there!");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, Usage::new(11, 6, 0));
}

#[tokio::test]
async fn anthropic_cut_off_tool_json_is_kept_raw() {
    let (response, _) = stream_fixture(
        "anthropic/incomplete_partial_json_response.sse",
        anthropic,
        "",
    )
    .await;
    assert_eq!(
        response.message.text(),
        "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now."
    );
    let call = &response.message.tool_calls[0];
    assert_eq!(call.id.as_str(), "toolu_01EKqbqmZrGRXy18eN7m9kvY");
    assert_eq!(call.name, "make_file");
    assert_eq!(
        call.arguments,
        "{\"filename\": \"taxes.txt\", \"lines_of_text\": [\n\"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s\",\n\"\",\n\"## INTRODUCTION\",\n\"\",\n\"Filing taxes"
    );
    assert!(call.parsed_arguments().is_err(), "never silently {{}}");
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert_eq!(response.usage, Usage::new(450, 124, 0));
}

#[tokio::test]
async fn anthropic_refusal() {
    let (response, _) = stream_fixture("anthropic/refusal_response.sse", anthropic, "").await;
    assert_eq!(response.finish_reason, FinishReason::Refusal);
    assert_eq!(response.message.text(), "");
    assert_eq!(response.usage, Usage::new(20, 0, 0));
}

#[tokio::test]
async fn openrouter_429_body_is_rate_limited_with_retry_after() {
    let server = MockServer::repeating(vec![
        Reply::json(429, fixture("openai/openrouter_429_rate_limited.json"))
            .header("retry-after", "2"),
    ])
    .unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.url("/api/v1"), None));
    let error = provider
        .complete(
            &request("google/gemini-2.0-flash-exp:free"),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    match error {
        ProviderError::RateLimited {
            retry_after,
            message,
        } => {
            assert_eq!(retry_after, Some(std::time::Duration::from_secs(2)));
            assert!(
                message.contains("temporarily rate-limited upstream"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests()[0].path, "/api/v1/chat/completions");
}

// ---- Every OpenAI-compatible recording (OpenAI, Groq, llama.cpp, llama-cpp-python,
// Ollama's /v1). Ollama's native NDJSON and LM Studio's Responses stream are other
// wire formats, parsed elsewhere.

fn usage_items(items: &[StreamItem]) -> usize {
    items
        .iter()
        .filter(|item| matches!(item, StreamItem::Usage(_)))
        .count()
}

/// `name` served as a whole JSON body (and in 7-byte pieces) to `complete`.
async fn complete_fixture(name: &str, request: &ProviderRequest) -> ProviderResponse {
    let mut results = Vec::new();
    for chunk in [0, 7] {
        let server =
            MockServer::repeating(vec![Reply::json(200, fixture(name)).chunked(chunk)]).unwrap();
        let response = openai(server.url("/v1"))
            .complete(request, &CancellationToken::new())
            .await
            .unwrap_or_else(|e| panic!("{name} (chunk {chunk}): {e}"));
        results.push(response);
    }
    assert_eq!(
        results[0], results[1],
        "{name}: chunking changed the response"
    );
    results.swap_remove(0)
}

/// `name` served as the body of an HTTP `status` to `complete`.
async fn error_fixture(name: &str, status: u16) -> ProviderError {
    let server = MockServer::repeating(vec![Reply::json(status, fixture(name))]).unwrap();
    openai(server.url("/v1"))
        .complete(&request("m"), &CancellationToken::new())
        .await
        .unwrap_err()
}

#[tokio::test]
async fn openai_usage_with_cached_tokens() {
    let (response, items) =
        stream_fixture("openai/gpt41_stream_cached_tokens.sse", openai, "/v1").await;
    assert_eq!(response.message.text(), "Farewell.");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, Usage::new(1144, 3, 1024));
    assert_eq!(response.reasoning, None);
    assert_eq!(usage_items(&items), 1);
}

#[tokio::test]
async fn openai_obfuscation_fields_and_empty_choices_usage_chunk() {
    // reasoning_tokens (64 here) has no field in `Usage` yet.
    let (response, _) = stream_fixture(
        "openai/gpt5mini_stream_reasoning_tokens_usage.sse",
        openai,
        "/v1",
    )
    .await;
    assert_eq!(response.message.text(), "Hi — how can I help you today?");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(
        response.usage,
        Usage::new(7, 82, 0).with_reasoning_tokens(64)
    );
    assert!(response.message.tool_calls.is_empty());
}

#[tokio::test]
async fn groq_reasoning_then_a_whole_tool_call_in_one_chunk() {
    let (response, items) = stream_fixture(
        "openai/groq_gptoss120b_reasoning_tool_call_one_chunk.sse",
        openai,
        "/v1",
    )
    .await;
    assert_eq!(
        response.reasoning.as_deref(),
        Some(
            r#"We need to call the function with correct parameter "name". Provide a name, e.g., "example"."#
        )
    );
    assert_eq!(
        calls(&response),
        vec![(
            "fc_bfb39741-3748-4def-9886-a93fc9c64a90",
            "get_something_by_name",
            r#"{"name":"example"}"#
        )]
    );
    assert_eq!(response.message.content, None);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    // Usage sits on the finish chunk; its copy under `x_groq` is not counted twice.
    assert_eq!(
        response.usage,
        Usage::new(304, 49, 0).with_reasoning_tokens(23)
    );
    assert_eq!(usage_items(&items), 1);
}

#[tokio::test]
async fn llamacpp_qwen3_reasoning_content_then_tool_call() {
    let (response, _) = stream_fixture(
        "local/llamacpp_qwen3_reasoning_then_tool_call.sse",
        openai,
        "/v1",
    )
    .await;
    assert_eq!(
        response.reasoning.as_deref(),
        Some(
            "Okay, the user wants to calculate 2 minus 5. Let me check the available tools. There's an subtract function that takes x and y. Here, x should be 2 and y should be 5. So the function call would be subtract with x=2 and y=5. That should give the correct result.\n"
        )
    );
    assert_only_calls(
        &response,
        &[("call_REDACTED_1", "subtract", r#"{"x": 2, "y": 5}"#)],
        Usage::new(291, 97, 290),
    );
}

#[tokio::test]
async fn llamacpp_two_no_argument_calls_and_mistral_token_by_token() {
    let (response, _) =
        stream_fixture("local/llamacpp_qwen3_two_tool_calls.sse", openai, "/v1").await;
    assert_eq!(
        calls(&response),
        vec![
            ("call_REDACTED_1", "lookup_harbor_label", "{}"),
            ("call_REDACTED_2", "lookup_orchard_label", "{}"),
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Usage::new(286, 42, 0));

    let (response, _) = stream_fixture("local/llamacpp_mistral_tool_call.sse", openai, "/v1").await;
    assert_only_calls(
        &response,
        &[("call_REDACTED_1", "subtract", r#"{"x": 2, "y": 5}"#)],
        Usage::new(664, 18, 663),
    );
}

#[tokio::test]
async fn llamacpp_call_cut_by_length_keeps_raw_arguments_and_length() {
    let (response, _) =
        stream_fixture("local/llamacpp_tool_call_cut_by_length.sse", openai, "/v1").await;
    // The call stays the model's, raw: the executor answers invalid JSON with an
    // error result the model can correct, and `Length` says why it was cut.
    assert_eq!(
        calls(&response),
        vec![("call_REDACTED_1", "record", r#"{"note": "The"#)]
    );
    assert!(response.message.tool_calls[0].parsed_arguments().is_err());
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert_eq!(response.usage, Usage::new(165, 20, 164));
}

#[tokio::test]
async fn openai_whole_responses_with_cached_and_reasoning_usage() {
    let response = complete_fixture("openai/gpt56_cached_tokens.json", &request("m")).await;
    assert_eq!(response.message.text(), "OK");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, Usage::new(4020, 4, 4012));

    let response = complete_fixture(
        "openai/gpt56_reasoning_exhausted_cache_write.json",
        &request("m"),
    )
    .await;
    assert_eq!(response.message.content.as_deref(), Some(""));
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert_eq!(
        response.usage,
        Usage::new(1220, 100, 0)
            .with_cache_write_tokens(1217)
            .with_reasoning_tokens(100)
    );
    assert_eq!(response.usage.uncached_input_tokens(), 3);

    let response = complete_fixture("openai/o3mini_reasoning_tokens.json", &request("m")).await;
    assert!(
        response
            .message
            .text()
            .starts_with("When it comes to crossing a river")
    );
    assert!(
        response
            .message
            .text()
            .ends_with("ive or professional guidance. Stay safe!")
    );
    assert_eq!(response.message.text().chars().count(), 2496);
    assert_eq!(
        response.usage,
        Usage::new(577, 2320, 0).with_reasoning_tokens(1792)
    );
    assert_eq!(response.reasoning, None);
}

#[tokio::test]
async fn openai_whole_response_with_three_parallel_calls() {
    let response = complete_fixture(
        "openai/gpt5nano_parallel_tool_calls_reasoning_tokens.json",
        &request("m"),
    )
    .await;
    assert_eq!(
        calls(&response),
        vec![
            (
                "call_Putc2jV5GhiIZMwx8mDcI61Q",
                "parallel_local_search_one",
                r#"{"query": "latest OpenAI model release notes"}"#
            ),
            (
                "call_iyjwcvkL3PdoOddxsqkHCT9T",
                "parallel_local_search_two",
                r#"{"query": "latest Anthropic model release notes"}"#
            ),
            (
                "call_G728RseEU7SbGk5YTiyyp9IH",
                "parallel_local_search_three",
                r#"{"query": "latest Gemini model release notes"}"#
            ),
        ]
    );
    assert_eq!(response.message.content, None);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage::new(378, 1497, 0).with_reasoning_tokens(1408)
    );
}

#[tokio::test]
async fn llama_cpp_python_legacy_function_call_is_no_second_call() {
    let response = complete_fixture(
        "local/llama_cpp_python_tool_call_with_function_call.json",
        &request("smollm2"),
    )
    .await;
    assert_only_calls(
        &response,
        &[(
            "call__0_file_list_cmpl-1908a734-62a2-4e51-8b44-e7b5f8b22a9d",
            "file_list",
            r#"{"path": "plan.md", "recursive": false}"#,
        )],
        Usage::new(916, 14, 0),
    );
}

#[tokio::test]
async fn ollama_v1_reasoning_field_and_empty_content_beside_a_call() {
    let response = complete_fixture(
        "local/ollama_gptoss20b_openai_compat_tool_call.json",
        &request("gpt-oss:20b"),
    )
    .await;
    let reasoning = response.reasoning.as_deref().unwrap();
    assert!(reasoning.starts_with("The conversation: user asked"));
    assert!(reasoning.ends_with("We need to provide answer in JSON format. Let's do that."));
    assert_only_calls(
        &response,
        &[(
            "call_o2vnpxrw",
            "final_result",
            r#"{"city":"Paris","country":"France"}"#,
        )],
        Usage::new(206, 194, 0),
    );
}

#[tokio::test]
async fn gemma_tool_code_naming_no_tool_stays_text() {
    let mut request = request("gemma-3");
    request.tools = vec![oxydra_types::ToolSchema::new(
        "subtract",
        "x - y",
        serde_json::json!({"type": "object"}),
    )];
    let response = complete_fixture("local/llamacpp_gemma3_tool_call_as_text.json", &request).await;
    // `print` is not one of the request's tools: nothing is recovered.
    assert_eq!(response.message.text(), "```tool_code\nprint(2 - 5)\n```");
    assert!(response.message.tool_calls.is_empty());
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, Usage::new(19, 15, 14));
}

#[tokio::test]
async fn recorded_error_bodies_map_to_their_kinds() {
    match error_fixture("local/llamacpp_400_exceed_context_size.json", 400).await {
        ProviderError::ContextLengthExceeded { message } => {
            assert!(message.contains("2009 tokens"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    match error_fixture("openai/groq_400_tool_use_failed.json", 400).await {
        ProviderError::InvalidRequest { message } => {
            assert!(message.contains("Tool call validation failed"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    match error_fixture(
        "local/llama_cpp_python_500_null_assistant_content.json",
        500,
    )
    .await
    {
        ProviderError::Server {
            status: 500,
            message,
        } => {
            assert!(message.starts_with("8 validation errors"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}
