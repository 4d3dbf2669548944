use super::*;
use oxydra_types::ToolSchema;

fn body(request: &ProviderRequest, effort: Option<ReasoningEffort>) -> Value {
    serde_json::to_value(request_body(request, effort, true)).unwrap()
}

fn reasoning(id: &str, encrypted: Option<&str>) -> ReasoningPart {
    ReasoningPart::Reasoning {
        id: id.into(),
        summary: vec!["**Plan**".into()],
        encrypted_content: encrypted.map(str::to_owned),
    }
}

#[test]
fn a_conversation_becomes_instructions_and_input_items() {
    let assistant = Message::assistant_with_tool_calls(
        None,
        vec![ToolCall::new(
            CallId::from("call_1"),
            "file_read",
            r#"{"path":"a"}"#,
        )],
    )
    .with_reasoning(vec![reasoning("rs_1", Some("gAAAA=="))]);
    let mut request = ProviderRequest::new(
        "gpt-5-mini",
        vec![
            Message::system("be brief"),
            Message::user("read a"),
            assistant,
            Message::tool_result(CallId::from("call_1"), "file_read", "contents"),
        ],
    );
    request.max_tokens = Some(500);
    request.tools = vec![ToolSchema::new(
        "file_read",
        "Reads a file",
        json!({"type": "object"}),
    )];
    assert_eq!(
        body(&request, Some(ReasoningEffort::Low)),
        json!({
            "model": "gpt-5-mini",
            "instructions": "be brief",
            "input": [
                {"role": "user", "content": "read a"},
                {"type": "reasoning", "id": "rs_1",
                 "summary": [{"type": "summary_text", "text": "**Plan**"}],
                 "encrypted_content": "gAAAA=="},
                {"type": "function_call", "call_id": "call_1", "name": "file_read",
                 "arguments": "{\"path\":\"a\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "contents"},
            ],
            "tools": [{"type": "function", "name": "file_read",
                       "description": "Reads a file", "parameters": {"type": "object"}}],
            "tool_choice": "auto",
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "reasoning": {"effort": "low", "summary": "auto"},
            "max_output_tokens": 500,
        })
    );
}

#[test]
fn encrypted_reasoning_is_asked_of_reasoning_models_only() {
    let request = ProviderRequest::new("gpt-4o", vec![Message::user("x")]);
    let plain = body(&request, None);
    assert!(plain.get("include").is_none(), "{plain}");
    assert!(plain.get("reasoning").is_none());
    assert!(plain.get("instructions").is_none());
    assert_eq!(plain["store"], false);
    // An effort asks for reasoning whatever the model's name.
    let local = ProviderRequest::new("glm-4.7-flash", vec![Message::user("x")]);
    assert_eq!(
        body(&local, Some(ReasoningEffort::High))["include"],
        json!(["reasoning.encrypted_content"])
    );
    for (model, reasoning) in [
        ("o3-mini", true),
        ("o1", true),
        ("openai/o4-mini", true),
        ("gpt-5-nano", true),
        ("gpt-5-chat-latest", false),
        ("gpt-4.1", false),
        ("o3x", false),
    ] {
        assert_eq!(is_reasoning_model(model), reasoning, "{model}");
    }
}

#[test]
fn reasoning_without_encrypted_content_or_a_following_item_is_not_sent() {
    let request = ProviderRequest::new(
        "o3-mini",
        vec![
            Message::user("x"),
            // Reasoning that led nowhere (cut by the output limit).
            Message::assistant("").with_reasoning(vec![reasoning("rs_a", Some("e"))]),
            Message::user("again"),
            // LM Studio's reasoning: raw text, nothing to send back.
            Message::assistant("Hi").with_reasoning(vec![reasoning("rs_b", None)]),
        ],
    );
    assert_eq!(
        body(&request, None)["input"],
        json!([
            {"role": "user", "content": "x"},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": "Hi"},
        ])
    );
}

#[test]
fn system_messages_join_into_instructions_and_tool_choice_names_a_function() {
    let mut request = ProviderRequest::new(
        "gpt-4o",
        vec![
            Message::system("a"),
            Message::user("x"),
            Message::system("b"),
        ],
    );
    request.tools = vec![ToolSchema::new("t", "d", json!({}))];
    request.tool_choice = ToolChoice::Tool("t".into());
    let body = body(&request, None);
    assert_eq!(body["instructions"], "a\n\nb");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "name": "t"})
    );
}

#[test]
fn a_whole_response_keeps_reasoning_text_calls_and_usage() {
    let body = br#"{"status":"completed","output":[
        {"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Think"}],"encrypted_content":"enc"},
        {"id":"msg_1","type":"message","content":[{"type":"output_text","text":"Calling."}]},
        {"id":"fc_1","type":"function_call","call_id":"call_9","name":"f","arguments":"{}"},
        {"id":"ci_1","type":"code_interpreter_call","code":"print(1)","outputs":[]}
    ],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4,"cache_write_tokens":2},
    "output_tokens":7,"output_tokens_details":{"reasoning_tokens":5}}}"#;
    let response = parse_response(body).unwrap();
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.message.text(), "Calling.");
    assert_eq!(response.message.tool_calls[0].id.as_str(), "call_9");
    assert_eq!(response.reasoning.as_deref(), Some("Think"));
    assert_eq!(
        response.message.reasoning,
        vec![ReasoningPart::Reasoning {
            id: "rs_1".into(),
            summary: vec!["Think".into()],
            encrypted_content: Some("enc".into()),
        }]
    );
    assert_eq!(
        response.usage,
        Usage::new(10, 7, 4)
            .with_cache_write_tokens(2)
            .with_reasoning_tokens(5)
    );
}

#[test]
fn incomplete_is_length_and_failed_names_its_code() {
    let body = br#"{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}"#;
    assert_eq!(
        parse_response(body).unwrap().finish_reason,
        FinishReason::Length
    );
    let body = br#"{"status":"failed","error":{"code":"insufficient_quota","message":"You exceeded your current quota"},"output":[]}"#;
    let error = parse_response(body).unwrap_err();
    assert!(
        matches!(error, ProviderError::InvalidRequest { .. }),
        "{error:?}"
    );
    assert!(!crate::is_retryable(&error));
    let text = error.to_string();
    assert!(
        text.contains("insufficient_quota") && text.contains("exceeded your current quota"),
        "{text}"
    );
    let error = failure(&WireError {
        code: Some(json!("server_error")),
        message: Some("boom".into()),
        ..WireError::default()
    });
    assert!(crate::is_retryable(&error), "{error:?}");
    match parse_response(b"{\"output\": 5}") {
        Err(ProviderError::Decode { excerpt, .. }) => assert!(excerpt.contains("output")),
        other => panic!("{other:?}"),
    }
}
