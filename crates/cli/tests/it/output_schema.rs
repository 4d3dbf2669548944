//! `oxydra run --output-schema FILE`: the answer validates against the file's schema,
//! an invalid one goes back to the model, and the value lands in the `final` event.

use crate::common;

use common::{Sandbox, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, openai};
use serde_json::json;

const SCHEMA: &str = r#"{"type":"object","properties":{"city":{"type":"string"},
    "celsius":{"type":"integer"}},"required":["city","celsius"],"additionalProperties":false}"#;

#[test]
fn the_final_event_carries_the_validated_output() {
    let sandbox = Sandbox::new();
    let schema = sandbox.workspace.join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    let server = MockServer::builder()
        .strict_openai()
        .replies(vec![
            openai::tool_calls(&[("c1", "final_answer", r#"{"city":"Oslo"}"#)]),
            openai::tool_calls(&[("c2", "final_answer", r#"{"city":"Oslo","celsius":4}"#)]),
        ])
        .start()
        .unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &[
            "--output",
            "jsonl",
            "--output-schema",
            schema.to_str().unwrap(),
        ],
        "weather in Oslo",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["output"], json!({"city": "Oslo", "celsius": 4}));
    let bodies: Vec<_> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2);
    let tool = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "final_answer")
        .unwrap();
    assert_eq!(
        tool["function"]["parameters"]["required"],
        json!(["city", "celsius"])
    );
    let sent_back = bodies[1]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(sent_back["role"], "tool");
    assert!(
        sent_back["content"].as_str().unwrap().contains("celsius"),
        "{sent_back}"
    );

    // Text output prints the value.
    let server = MockServer::start(vec![openai::tool_calls(&[(
        "c1",
        "final_answer",
        r#"{"city":"Rome","celsius":20}"#,
    )])])
    .unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--output-schema", schema.to_str().unwrap()],
        "weather in Rome",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let printed: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(printed, json!({"city": "Rome", "celsius": 20}));
}

#[test]
fn a_bad_schema_file_exits_2_naming_it_before_any_request() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![]).unwrap();
    let cases = [
        ("missing.json", None),
        ("not_json.json", Some("{ nope")),
        ("bad_schema.json", Some(r#"{"type":"no-such-type"}"#)),
    ];
    for (name, content) in cases {
        let path = sandbox.workspace.join(name);
        if let Some(content) = content {
            std::fs::write(&path, content).unwrap();
        }
        let output = sandbox.run_openai(
            &server.openai_url(),
            &["--output-schema", path.to_str().unwrap()],
            "hi",
        );
        assert_eq!(output.status.code(), Some(2), "{name}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(name),
            "{name}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("--output-schema"),
            "{}",
            stderr(&output)
        );
    }
    assert!(server.requests().is_empty());
}
