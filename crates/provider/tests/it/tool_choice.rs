//! Tool choice (`auto`, `none`, `required`, one named tool) on every wire format:
//! each client's request, captured by a real local server answering with a recorded
//! tool-call stream of its family (strict mocks where the family has one), carries
//! the choice in the form its API defines, and the recorded answer still parses.

use futures::TryStreamExt;
use oxydra_provider::{
    AnthropicProvider, GeminiProvider, OllamaProvider, OpenAiProvider, OpenAiResponsesProvider,
    Provider, ProviderConfig, ProviderError, ProviderRequest, ToolChoice,
};
use oxydra_test_support::{MockServer, Reply, fixture};
use oxydra_types::{Message, StreamItem, ToolSchema};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const CHOICES: [fn() -> ToolChoice; 4] = [
    || ToolChoice::Auto,
    || ToolChoice::None,
    || ToolChoice::Required,
    || ToolChoice::Tool("get_weather".into()),
];

fn request(choice: ToolChoice) -> ProviderRequest {
    let mut request = ProviderRequest::new("m", vec![Message::user("Weather in Paris?")]);
    request.tools = vec![
        ToolSchema::new(
            "get_weather",
            "Current weather",
            json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
        ),
        ToolSchema::new("get_time", "Current time", json!({"type":"object"})),
    ];
    request.tool_choice = choice;
    request
}

/// Streams `choice` through the provider `make` builds for the server's URL + `suffix`;
/// returns the body the server saw and whether the answer held a tool call.
async fn sent(
    server: &MockServer,
    make: &dyn Fn(String) -> Box<dyn Provider>,
    suffix: &str,
    choice: ToolChoice,
) -> (Value, bool) {
    let before = server.requests().len();
    let provider = make(server.url(suffix));
    let items: Vec<StreamItem> = provider
        .stream(&request(choice.clone()), &CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{choice:?}: {e}"))
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("{choice:?}: {e}"));
    let called = items
        .iter()
        .any(|item| matches!(item, StreamItem::ToolCallDelta(_)));
    let requests = server.requests();
    assert_eq!(requests.len(), before + 1, "{choice:?}: one request");
    (requests[before].body.clone(), called)
}

fn tool_names(body: &Value, list: &str) -> Vec<String> {
    body[list]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .or_else(|| t["name"].as_str())
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn openai_chat_sends_tool_choice_to_the_strict_mock() {
    let server = MockServer::builder()
        .replies(vec![Reply::sse(fixture(
            "openai/gpt4o_complex_run_turn1.sse",
        ))])
        .repeat_last()
        .strict_openai()
        .start()
        .unwrap();
    let make = |url: String| -> Box<dyn Provider> {
        Box::new(OpenAiProvider::new(ProviderConfig::new(
            url,
            Some("k".into()),
        )))
    };
    let expected = [
        json!("auto"),
        json!("none"),
        json!("required"),
        json!({"type": "function", "function": {"name": "get_weather"}}),
    ];
    for (choice, expected) in CHOICES.iter().zip(expected) {
        let (body, _) = sent(&server, &make, "/v1", choice()).await;
        assert_eq!(body["tool_choice"], expected, "{:?}", choice());
        assert_eq!(tool_names(&body, "tools").len(), 2);
    }
}

#[tokio::test]
async fn openai_responses_sends_tool_choice() {
    let server = MockServer::repeating(vec![Reply::sse(fixture(
        "openai-responses/gpt4o_parallel_function_calls.sse",
    ))])
    .unwrap();
    let make = |url: String| -> Box<dyn Provider> {
        Box::new(OpenAiResponsesProvider::new(ProviderConfig::new(
            url,
            Some("k".into()),
        )))
    };
    let expected = [
        json!("auto"),
        json!("none"),
        json!("required"),
        json!({"type": "function", "name": "get_weather"}),
    ];
    for (choice, expected) in CHOICES.iter().zip(expected) {
        let (body, called) = sent(&server, &make, "/v1", choice()).await;
        assert_eq!(body["tool_choice"], expected, "{:?}", choice());
        assert!(called, "the recorded calls parse");
    }
}

#[tokio::test]
async fn anthropic_sends_auto_any_tool_none_to_the_strict_mock() {
    let server = MockServer::builder()
        .replies(vec![Reply::sse(fixture("anthropic/tool_use_response.sse"))])
        .repeat_last()
        .strict_anthropic()
        .start()
        .unwrap();
    let make = |url: String| -> Box<dyn Provider> {
        Box::new(AnthropicProvider::new(ProviderConfig::new(
            url,
            Some("k".into()),
        )))
    };
    let expected = [
        json!({"type": "auto"}),
        json!({"type": "none"}),
        json!({"type": "any"}),
        json!({"type": "tool", "name": "get_weather"}),
    ];
    for (choice, expected) in CHOICES.iter().zip(expected) {
        let (body, called) = sent(&server, &make, "", choice()).await;
        assert_eq!(body["tool_choice"], expected, "{:?}", choice());
        assert!(called, "the recorded tool_use parses");
    }
}

#[tokio::test]
async fn gemini_sends_function_calling_config() {
    let server = MockServer::repeating(vec![Reply::sse(fixture(
        "gemini/gemini2_flash_function_call_stream.sse",
    ))])
    .unwrap();
    let make = |url: String| -> Box<dyn Provider> {
        Box::new(GeminiProvider::new(ProviderConfig::new(
            url,
            Some("k".into()),
        )))
    };
    let expected = [
        json!({"mode": "AUTO"}),
        json!({"mode": "NONE"}),
        json!({"mode": "ANY"}),
        json!({"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
    ];
    for (choice, expected) in CHOICES.iter().zip(expected) {
        let (body, called) = sent(&server, &make, "", choice()).await;
        assert_eq!(
            body["toolConfig"]["functionCallingConfig"],
            expected,
            "{:?}",
            choice()
        );
        assert!(called, "the recorded functionCall parses");
    }
}

#[tokio::test]
async fn ollama_sends_tools_for_auto_none_for_none_and_refuses_what_it_cannot_force() {
    let server = MockServer::repeating(vec![
        Reply::new(200)
            .header("content-type", "application/x-ndjson")
            .body(fixture("local/ollama_qwen3_parallel_tool_calls.ndjson")),
    ])
    .unwrap();
    let make = |url: String| -> Box<dyn Provider> {
        Box::new(OllamaProvider::new(ProviderConfig::new(url, None)))
    };
    let (auto, called) = sent(&server, &make, "", ToolChoice::Auto).await;
    assert_eq!(tool_names(&auto, "tools"), ["get_weather", "get_time"]);
    assert!(
        auto.get("tool_choice").is_none(),
        "no such field in /api/chat"
    );
    assert!(called);
    let (none, _) = sent(&server, &make, "", ToolChoice::None).await;
    assert!(none.get("tools").is_none(), "`none` sends no tools: {none}");
    for forced in [ToolChoice::Required, ToolChoice::Tool("get_weather".into())] {
        let provider = make(server.url(""));
        let before = server.requests().len();
        let error = provider
            .stream(&request(forced.clone()), &CancellationToken::new())
            .await
            .err()
            .unwrap_or_else(|| panic!("{forced:?} accepted"));
        assert!(
            matches!(&error, ProviderError::InvalidRequest { message } if message.contains("tool_choice")),
            "{error}"
        );
        let error = provider
            .complete(&request(forced), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(error.to_string().contains("Ollama"), "{error}");
        assert_eq!(server.requests().len(), before, "nothing was sent");
    }
}
