//! Conversations over the Responses API against a mock as strict as OpenAI: the
//! reasoning item of turn 1 goes back in turn 2 unchanged, before the call it led to
//! and its output; what OpenAI refuses, the mock refuses too.

use futures::StreamExt;
use oxydra_provider::{
    OpenAiResponsesProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
    ProviderResponse, ReasoningEffort, StreamAccumulator,
};
use oxydra_test_support::responses::{self, strict_server};
use oxydra_test_support::{Reply, fixture};
use oxydra_types::{CallId, Message, ReasoningPart, ToolSchema};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn provider(url: String) -> OpenAiResponsesProvider {
    OpenAiResponsesProvider::new(
        ProviderConfig::new(url, Some("sk-test".into()))
            .with_reasoning_effort(ReasoningEffort::Low),
    )
}

async fn stream(provider: &OpenAiResponsesProvider, request: &ProviderRequest) -> ProviderResponse {
    let mut stream = provider
        .stream(request, &CancellationToken::new())
        .await
        .unwrap();
    let mut acc = StreamAccumulator::new();
    while let Some(item) = stream.next().await {
        acc.push(&item.unwrap());
    }
    acc.finish().unwrap()
}

fn tool() -> ToolSchema {
    ToolSchema::new(
        "final_result",
        "The final response which ends this conversation",
        json!({"type": "object", "properties": {"result": {"type": "integer"}}}),
    )
}

/// The reasoning item the recorded turn 1 ended with, as it came.
fn recorded_item(name: &str) -> Value {
    String::from_utf8(fixture(name))
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str::<Value>(data).unwrap())
        .find(|event| {
            event["type"] == "response.output_item.done" && event["item"]["type"] == "reasoning"
        })
        .map(|event| event["item"].clone())
        .unwrap()
}

#[tokio::test]
async fn turn_two_sends_turn_ones_reasoning_back_before_its_call_and_output() {
    let name = "openai-responses/gpt5_reasoning_function_call.sse";
    let server = strict_server(vec![Reply::sse(fixture(name)), responses::text("6666")]).unwrap();
    let provider = provider(server.openai_url());
    let mut request = ProviderRequest::new(
        "gpt-5",
        vec![Message::system("Be exact."), Message::user("What is 6666?")],
    );
    request.tools = vec![tool()];
    let turn1 = stream(&provider, &request).await;
    let call = turn1.message.tool_calls[0].clone();
    request.messages.push(turn1.message.clone());
    request.messages.push(Message::tool_result(
        call.id.clone(),
        &call.name,
        "Final result processed.",
    ));
    let turn2 = stream(&provider, &request).await;
    assert_eq!(turn2.message.text(), "6666");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(first["store"], false);
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        first["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    assert_eq!(first["instructions"], "Be exact.");

    let recorded = recorded_item(name);
    let input = requests[1].body["input"].as_array().unwrap().clone();
    assert_eq!(
        input,
        vec![
            json!({"role": "user", "content": "What is 6666?"}),
            json!({"type": "reasoning", "id": recorded["id"], "summary": [],
                   "encrypted_content": recorded["encrypted_content"]}),
            json!({"type": "function_call", "call_id": "call_CWXgs68YprAjp6t0371hiPOI",
                   "name": "final_result", "arguments": "{\"result\":6666}"}),
            json!({"type": "function_call_output", "call_id": "call_CWXgs68YprAjp6t0371hiPOI",
                   "output": "Final result processed."}),
        ]
    );
    // Byte for byte: the encrypted blob in the raw body is the recorded one.
    let raw = String::from_utf8(requests[1].raw_body.clone()).unwrap();
    assert!(raw.contains(recorded["encrypted_content"].as_str().unwrap()));
}

#[tokio::test]
async fn summaries_go_back_with_the_item_and_a_whole_response_round_trips() {
    let name = "openai-responses/gpt55_reasoning_encrypted_function_call.json";
    let server = strict_server(vec![
        Reply::json(200, fixture(name)),
        responses::reasoning_then_calls(
            ("rs_2", "**Checking**", "gAAAA-two"),
            &[("call_2", "final_result", "{\"result\":1}")],
        ),
        responses::text("done"),
    ])
    .unwrap();
    let provider = provider(server.openai_url());
    let mut request = ProviderRequest::new("gpt-5.5", vec![Message::user("Population?")]);
    request.tools = vec![tool()];
    let turn1 = provider
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(turn1.message.reasoning.len(), 1);
    let call = turn1.message.tool_calls[0].clone();
    request.messages.push(turn1.message);
    request
        .messages
        .push(Message::tool_result(call.id.clone(), &call.name, "42"));
    let turn2 = stream(&provider, &request).await;
    assert_eq!(
        turn2.message.reasoning,
        vec![ReasoningPart::Reasoning {
            id: "rs_2".into(),
            summary: vec!["**Checking**".into()],
            encrypted_content: Some("gAAAA-two".into()),
        }]
    );
    request.messages.push(turn2.message);
    request.messages.push(Message::tool_result(
        CallId::from("call_2"),
        "final_result",
        "ok",
    ));
    let turn3 = stream(&provider, &request).await;
    assert_eq!(turn3.message.text(), "done");

    let input = server.requests()[2].body["input"].clone();
    let kinds: Vec<&str> = input
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(
        kinds,
        vec![
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "reasoning",
            "function_call",
            "function_call_output",
        ]
    );
    assert_eq!(
        input[4]["summary"],
        json!([{"type": "summary_text", "text": "**Checking**"}])
    );
}

#[tokio::test]
async fn the_strict_mock_refuses_what_openai_refuses() {
    // A tool result whose call the conversation lost.
    let server = strict_server(vec![responses::text("never")]).unwrap();
    let provider = provider(server.openai_url());
    let request = ProviderRequest::new(
        "gpt-5",
        vec![
            Message::user("x"),
            Message::tool_result(CallId::from("call_lost"), "f", "out"),
        ],
    );
    let error = provider
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap_err();
    match error {
        ProviderError::InvalidRequest { message } => {
            assert!(
                message
                    .contains("No tool call found for function call output with call_id call_lost"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }

    // Encrypted reasoning asked of a model without reasoning (an effort set for gpt-4o).
    let error = provider
        .complete(
            &ProviderRequest::new("gpt-4o", vec![Message::user("x")]),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("Encrypted content is not supported"),
        "{error}"
    );

    // Without an effort, gpt-4o is asked for no encrypted reasoning and is answered
    // (with the one reply, which the refused requests did not use up).
    let plain = OpenAiResponsesProvider::new(ProviderConfig::new(server.openai_url(), None));
    let response = stream(
        &plain,
        &ProviderRequest::new("gpt-4o", vec![Message::user("x")]),
    )
    .await;
    assert_eq!(response.message.text(), "never");
}
