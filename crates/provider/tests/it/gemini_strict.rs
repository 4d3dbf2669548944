//! A Gemini stand-in as strict as the real API about conversation shape: a two-turn
//! tool round trip through the real client, and the requests the API refuses.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use oxydra_provider::{
    GeminiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest, ProviderResponse,
    StreamAccumulator,
};
use oxydra_test_support::{MockServer, RecordedRequest, Reply, fixture};
use oxydra_types::{CallId, FinishReason, Message, ReasoningPart, ToolCall};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Signatures the server handed out: (function name, args, signature).
type Issued = Arc<Mutex<Vec<(String, Value, String)>>>;

pub(crate) fn invalid(message: &str) -> Reply {
    Reply::json(
        400,
        json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})
            .to_string(),
    )
}

/// Checks a request as the API does; `Err` is the API's message. Its parts (inline
/// images and documents) are checked as the API checks them too.
pub(crate) fn validate(body: &Value, issued: &[(String, Value, String)]) -> Result<(), String> {
    oxydra_test_support::strict_parts::validate_gemini_parts(body)?;
    let contents = body["contents"]
        .as_array()
        .ok_or("* GenerateContentRequest.contents: contents is not specified")?;
    let mut expected = "user";
    let mut pending_calls: Vec<String> = Vec::new();
    for (n, content) in contents.iter().enumerate() {
        let role = content["role"].as_str().unwrap_or("");
        if role != expected {
            return Err(format!(
                "Please ensure that multiturn requests alternate between user and model (content {n} has role '{role}')."
            ));
        }
        let parts = content["parts"]
            .as_array()
            .ok_or("contents.parts must not be empty")?;
        if parts.is_empty() {
            return Err(format!("contents[{n}].parts must not be empty"));
        }
        if role == "model" {
            for part in parts {
                let Some(call) = part.get("functionCall") else {
                    continue;
                };
                let name = call["name"].as_str().unwrap_or("");
                let given = issued
                    .iter()
                    .find(|(n, args, _)| n == name && *args == call["args"]);
                if let Some((_, _, signature)) = given
                    && part.get("thoughtSignature").and_then(Value::as_str) != Some(signature)
                {
                    return Err(format!(
                        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly (function `{name}`, position {n})."
                    ));
                }
                pending_calls.push(name.to_owned());
            }
            expected = "user";
        } else {
            let answers: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("functionResponse"))
                .map(|r| r["name"].as_str().unwrap_or(""))
                .collect();
            for name in &answers {
                let Some(at) = pending_calls.iter().position(|c| c == name) else {
                    return Err(format!(
                        "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn (no call to `{name}`)."
                    ));
                };
                pending_calls.remove(at);
            }
            if !pending_calls.is_empty() {
                return Err(
                    "Please ensure that function call turn comes immediately after a user turn or after a function response turn.".into(),
                );
            }
            expected = "model";
        }
    }
    if expected != "model" {
        return Err("contents must end with a user turn".into());
    }
    Ok(())
}

/// A strict server that answers every valid request with recorded text (a turn after a
/// tool result), refusing what the API refuses: for tests of what a request carries.
pub(crate) fn strict_text_server() -> MockServer {
    MockServer::builder()
        .respond_with(|request| match validate(&request.body, &[]) {
            Ok(()) => Reply::sse(fixture(
                "gemini/gemini3_pro_text_after_tool_result_stream.sse",
            )),
            Err(message) => invalid(&message),
        })
        .start()
        .unwrap()
}

/// The strict server: answers turn 1 with a signed function call (recorded from
/// gemini-3-pro) and later turns with text, refusing what the API refuses.
fn strict_server() -> MockServer {
    let issued: Issued = Arc::new(Mutex::new(Vec::new()));
    let turn1 = fixture("gemini/gemini3_pro_function_call_thought_signature_stream.sse");
    let signature = String::from_utf8_lossy(&turn1)
        .split("\"thoughtSignature\": \"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    MockServer::builder()
        .respond_with(move |request: &RecordedRequest| {
            let mut issued = issued.lock().unwrap();
            if let Err(message) = validate(&request.body, &issued) {
                return invalid(&message);
            }
            let has_answers = request.body["contents"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| {
                    c["parts"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|p| p.get("functionResponse").is_some())
                });
            if has_answers {
                Reply::sse(fixture(
                    "gemini/gemini3_pro_text_after_tool_result_stream.sse",
                ))
            } else {
                issued.push(("get_country".into(), json!({}), signature.clone()));
                Reply::sse(turn1.clone())
            }
        })
        .start()
        .unwrap()
}

async fn turn(
    provider: &GeminiProvider,
    messages: Vec<Message>,
) -> Result<ProviderResponse, ProviderError> {
    let request = ProviderRequest::new("gemini-3-pro-preview", messages);
    let mut stream = provider.stream(&request, &CancellationToken::new()).await?;
    let mut acc = StreamAccumulator::new();
    while let Some(item) = stream.next().await {
        acc.push(&item?);
    }
    acc.finish()
}

#[tokio::test]
async fn two_turns_carry_the_signature_back_on_its_call() {
    let server = strict_server();
    let provider = GeminiProvider::new(ProviderConfig::new(server.url(""), Some("k".into())));
    let mut messages = vec![Message::user("What is the capital of my country?")];
    let first = turn(&provider, messages.clone()).await.unwrap();
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    let call = first.message.tool_calls[0].clone();
    messages.push(first.message.clone());
    messages.push(Message::tool_result(
        call.id.clone(),
        call.name.clone(),
        "Mexico",
    ));
    let second = turn(&provider, messages).await.unwrap();
    assert_eq!(
        second.message.text(),
        "The capital of Mexico is Mexico City."
    );

    let sent = &server.requests()[1].body;
    let model = &sent["contents"][1];
    assert_eq!(model["role"], "model");
    let part = &model["parts"][0];
    assert_eq!(
        part["functionCall"],
        json!({"name": "get_country", "args": {}})
    );
    assert!(
        part["thoughtSignature"]
            .as_str()
            .unwrap()
            .starts_with("EpwICpkIAXLI2nxl")
    );
    assert_eq!(
        sent["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse": {"name": "get_country", "response": {"result": "Mexico"}}}]})
    );
}

#[tokio::test]
async fn a_call_without_its_signature_is_refused() {
    let server = strict_server();
    let provider = GeminiProvider::new(ProviderConfig::new(server.url(""), Some("k".into())));
    let mut messages = vec![Message::user("What is the capital of my country?")];
    let mut first = turn(&provider, messages.clone()).await.unwrap().message;
    let call = first.tool_calls[0].clone();
    first.reasoning.clear();
    messages.push(first);
    messages.push(Message::tool_result(call.id, call.name, "Mexico"));
    let error = turn(&provider, messages).await.unwrap_err();
    assert!(
        matches!(&error, ProviderError::InvalidRequest { message } if message.contains("missing a thought_signature")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_signature_of_another_call_does_not_pass() {
    let server = strict_server();
    let provider = GeminiProvider::new(ProviderConfig::new(server.url(""), Some("k".into())));
    let mut messages = vec![Message::user("What is the capital of my country?")];
    let mut first = turn(&provider, messages.clone()).await.unwrap().message;
    let call = first.tool_calls[0].clone();
    // The signature is kept but moved to the text: the call part goes without it.
    for part in &mut first.reasoning {
        if let ReasoningPart::ThoughtSignature { call_id, .. } = part {
            *call_id = None;
        }
    }
    messages.push(first);
    messages.push(Message::tool_result(call.id, call.name, "Mexico"));
    assert!(matches!(
        turn(&provider, messages).await,
        Err(ProviderError::InvalidRequest { .. })
    ));
}

#[tokio::test]
async fn wrong_alternation_and_unanswered_or_stray_responses_are_refused() {
    let server = strict_server();
    let provider = GeminiProvider::new(ProviderConfig::new(server.url(""), Some("k".into())));
    // History starting with the model.
    let error = turn(
        &provider,
        vec![Message::assistant("Hello"), Message::user("hi")],
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&error, ProviderError::InvalidRequest { message } if message.contains("alternate")),
        "{error:?}"
    );
    // A functionResponse that answers no call.
    let error = turn(
        &provider,
        vec![
            Message::user("hi"),
            Message::assistant("Let me think."),
            Message::tool_result(CallId::from("call_x"), "get_country", "Mexico"),
        ],
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&error, ProviderError::InvalidRequest { message } if message.contains("no call to `get_country`")),
        "{error:?}"
    );
    // A call left unanswered.
    let call = ToolCall::new(CallId::from("call_y"), "get_weather", "{}");
    let error = turn(
        &provider,
        vec![
            Message::user("hi"),
            Message::assistant_with_tool_calls(None, vec![call]),
            Message::user("never mind"),
        ],
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, ProviderError::InvalidRequest { .. }),
        "{error:?}"
    );
}
