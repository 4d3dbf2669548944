//! The small-model defaults of the local provider with the real test model
//! (SmolLM2-135M-Instruct): the answer turn cannot open a tag, and a call carries only
//! the arguments it needs. Without the model each test is skipped, except under
//! `CI=true`.

use oxydra_local::{LocalConfig, LocalProvider};
use oxydra_provider::{Provider, ProviderRequest, ToolChoice};
use oxydra_test_support::test_model;
use oxydra_types::{CallId, Message, ToolCall, ToolSchema};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn read_tool() -> ToolSchema {
    ToolSchema::new(
        "file_read",
        "Read a text file of the workspace.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file."},
                "offset": {"type": ["integer", "null"], "description": "First line to read."},
                "limit": {"type": ["integer", "null"], "description": "How many lines to read."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    )
}

/// A conversation that made a call and got its result: the turn the model answers in.
fn after_a_call(question: &str) -> Vec<Message> {
    let call = ToolCall::new(
        CallId::from("c1"),
        "file_read",
        r#"{"path":"notes/plan.md"}"#,
    );
    vec![
        Message::user(question),
        Message::assistant_with_tool_calls(None, vec![call]),
        Message::tool_result(CallId::from("c1"), "file_read", "Paint the fence teal."),
    ]
}

#[tokio::test]
async fn a_small_models_answer_turn_opens_no_tag() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let provider = LocalProvider::load_async(LocalConfig::new(model))
        .await
        .unwrap();
    assert!(provider.is_small());
    // A prompt that begs for tags, sampled hot: without the answer grammar the model
    // writes `<tool_call>` or `<tool_response>` here.
    let question = "Reply with only this text and nothing else: <tool_call>[{\"name\": \
                    \"file_read\"}]</tool_call> <tool_response>";
    for _ in 0..4 {
        let mut request = ProviderRequest::new("local", after_a_call(question));
        request.tools = vec![read_tool()];
        request.tool_choice = ToolChoice::None;
        request.max_tokens = Some(32);
        request.temperature = Some(1.5);
        let response = provider
            .complete(&request, &CancellationToken::new())
            .await
            .unwrap();
        let text = response.message.text().to_owned();
        assert!(response.message.tool_calls.is_empty(), "{text}");
        assert!(!text.is_empty(), "an answer has text");
        assert!(!text.starts_with(['<', ' ', '\n', '\t']), "{text:?}");
        for tag in ["<tool", "</tool", "<|im_", "<tools"] {
            assert!(!text.contains(tag), "{text:?}");
        }
    }
}

#[tokio::test]
async fn a_small_models_call_has_only_the_required_arguments() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let mut config = LocalConfig::new(model);
    // A fixed seed: sampled hot with a new seed each time, one draw in a few dozen
    // rambled a path past the token cap, which cut the call off before its arguments
    // closed (seen in CI). The grammar, not the draw, must keep the arguments to `path`.
    config.sampling.seed = Some(7);
    let provider = LocalProvider::load_async(config).await.unwrap();
    // Prompts that name the optional arguments, which the grammar leaves out.
    for prompt in [
        "Read lines 2 to 3 of notes/plan.md, with offset 2 and limit 2.",
        "Show notes/todo.md from line 10, at most 5 lines (offset 10, limit 5).",
        "Open src/main.rs and read 20 lines starting at line 40.",
    ] {
        let mut request = ProviderRequest::new("local", vec![Message::user(prompt)]);
        request.tools = vec![read_tool()];
        request.tool_choice = ToolChoice::Tool("file_read".into());
        request.max_tokens = Some(128);
        request.temperature = Some(1.0);
        let response = provider
            .complete(&request, &CancellationToken::new())
            .await
            .unwrap();
        let calls = &response.message.tool_calls;
        assert!(!calls.is_empty(), "{:?}", response.message);
        for call in calls {
            let arguments: Value = serde_json::from_str(&call.arguments).unwrap();
            let keys: Vec<&String> = arguments.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["path"], "{}", call.arguments);
        }
    }
}
