//! The llama.cpp-strict request checks, alone and as a mock server option: what a
//! llama.cpp-based server refuses is refused, and answered with its recorded 500.

use oxydra_test_support::{MockServer, Reply, fixture, validate_openai_request};
use serde_json::json;

#[test]
fn strict_validation_refuses_what_llama_cpp_servers_refuse() {
    let call = json!({"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}});
    let good = json!({"messages":[
        {"role":"system","content":"s"},
        {"role":"user","content":[{"type":"text","text":"hi"}]},
        {"role":"assistant","content":"","tool_calls":[call]},
        {"role":"tool","tool_call_id":"c1","content":"ok"},
    ]});
    assert_eq!(validate_openai_request(&good), Ok(()));
    let bad = [
        (
            json!({"messages":[{"role":"assistant","content":null,"tool_calls":[call]}]}),
            "null",
        ),
        (
            json!({"messages":[{"role":"assistant","tool_calls":[call]}]}),
            "missing",
        ),
        (
            json!({"messages":[{"role":"assistant","content":[{"type":"text","text":"x"}]}]}),
            "content is",
        ),
        (
            json!({"messages":[{"role":"user","content":[{"text":"x"}]}]}),
            "without a type",
        ),
        (
            json!({"messages":[{"role":"robot","content":"x"}]}),
            "unknown role",
        ),
        (
            json!({"messages":[{"role":"tool","tool_call_id":"c1","content":"x"}]}),
            "answers no earlier call",
        ),
        (
            json!({"messages":[{"role":"assistant","content":"","tool_calls":[call]},
            {"role":"tool","content":"x"}]}),
            "answers no earlier call",
        ),
        (
            json!({"messages":[{"role":"assistant","content":"","tool_calls":[
            {"id":"c1","type":"function","function":{"name":"t","arguments":{}}}]}]}),
            "malformed",
        ),
        (json!({"messages":"hi"}), "not an array"),
    ];
    for (body, why) in bad {
        let error = validate_openai_request(&body).unwrap_err();
        assert!(error.contains(why), "{body}: {error}");
    }
}

#[tokio::test]
async fn strict_server_answers_a_refused_request_with_the_recorded_500() {
    let server = MockServer::builder()
        .replies(vec![Reply::sse(fixture(
            "openai/gpt4o_mini_stream_turn2.sse",
        ))])
        .strict_openai()
        .start()
        .unwrap();
    let client = oxydra_http::client();
    let response = client
        .post(server.url("/v1/chat/completions"))
        .json(
            &json!({"messages":[{"role":"assistant","content":null,"tool_calls":[
            {"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("Input should be a valid string")
    );
}

#[tokio::test]
async fn a_strict_server_serves_a_valid_request_its_script() {
    let server = MockServer::builder()
        .replies(vec![
            Reply::json(200, r#"{"ok":true}"#),
            Reply::json(201, "{}"),
        ])
        .strict_openai()
        .start()
        .unwrap();
    let client = oxydra_http::client();
    let refused = client
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"messages":[{"role":"assistant","content":null}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 500);
    // The refused request used up its scripted reply, as a real turn would have.
    let served = client
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"messages":[{"role":"user","content":"hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 201);
    assert_eq!(server.hits(), 2);
    assert_eq!(
        server.requests()[0].body["messages"][0]["content"],
        json!(null)
    );
}
