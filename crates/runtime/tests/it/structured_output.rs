//! Typed final output: the answer comes through `final_answer`, is validated, and
//! invalid answers go back to the model within the turn budget.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{CollectingEventSink, FINAL_ANSWER_TOOL, OutputSchema, RuntimeError};
use oxydra_types::{MessageRole, RuntimeEvent, SessionId};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Forecast {
    city: String,
    celsius: i32,
}

#[tokio::test]
async fn an_invalid_answer_is_sent_back_with_its_errors_and_a_valid_one_ends_the_run() {
    let provider = scripted(vec![
        // A tool call and a broken answer in one turn: the tool runs, the answer fails.
        ScriptedTurn::tool_calls(vec![
            call("c1", "echo", r#"{"text":"Oslo"}"#),
            call(
                "c2",
                FINAL_ANSWER_TOOL,
                r#"{"city":"Oslo","celsius":"warm"}"#,
            ),
        ]),
        ScriptedTurn::tool_call("c3", FINAL_ANSWER_TOOL, r#"{"city":"Oslo","celsius":21}"#),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tool(EchoTool)
        .build()
        .unwrap();
    let session = SessionId::generate();
    let (forecast, outcome) = runtime
        .session(&session)
        .prompt("weather?")
        .output::<Forecast>()
        .await
        .unwrap()
        .finished()
        .unwrap();
    assert_eq!(
        forecast,
        Forecast {
            city: "Oslo".into(),
            celsius: 21
        }
    );
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.output, Some(json!({"city": "Oslo", "celsius": 21})));

    let requests = provider.requests();
    // The model is offered the answer tool with the type's schema, beside its tools.
    let answer_tool = requests[0]
        .tools
        .iter()
        .find(|tool| tool.name == FINAL_ANSWER_TOOL)
        .unwrap();
    assert_eq!(
        answer_tool.parameters["required"],
        json!(["city", "celsius"])
    );
    assert!(requests[0].tools.iter().any(|tool| tool.name == "echo"));
    // Both calls got results, in request order; the broken answer says what broke.
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "c1");
    assert_eq!(results[1].0, "c2");
    assert!(
        results[1].1.starts_with("Tool execution failed"),
        "{}",
        results[1].1
    );
    assert!(results[1].1.contains("celsius"), "{}", results[1].1);

    // The final event carries the value; the stored history has no orphan call.
    let last = events.events().last().cloned().unwrap();
    match last {
        RuntimeEvent::Final { output, text, .. } => {
            assert_eq!(output, Some(json!({"city": "Oslo", "celsius": 21})));
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&text).unwrap(),
                output.unwrap()
            );
        }
        other => panic!("{other:?}"),
    }
    assert_no_orphans(&runtime.session_messages(&session).await.unwrap());
}

#[tokio::test]
async fn a_text_answer_counts_when_it_is_valid_json_and_is_sent_back_otherwise() {
    let provider = scripted(vec![
        ScriptedTurn::text("It is 21 degrees in Oslo."),
        ScriptedTurn::text("```json\n{\"city\":\"Oslo\",\"celsius\":21}\n```"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events).build().unwrap();
    let forecast: Forecast = runtime.run_typed("weather?").await.unwrap();
    assert_eq!(forecast.celsius, 21);
    let second = &provider.requests()[1];
    let nudge = second.messages.last().unwrap();
    assert_eq!(nudge.role, MessageRole::User);
    assert!(nudge.text().contains(FINAL_ANSWER_TOOL), "{}", nudge.text());
}

#[tokio::test]
async fn no_valid_answer_within_the_budget_is_a_budget_error() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", FINAL_ANSWER_TOOL, r#"{"city":1}"#),
        ScriptedTurn::tool_call("c2", FINAL_ANSWER_TOOL, r#"{"city":2}"#),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let mut limits = limits();
    limits.max_turns = 2;
    let runtime = builder(provider, events).limits(limits).build().unwrap();
    let error = runtime.run_typed::<Forecast>("weather?").await.unwrap_err();
    assert!(
        matches!(error, RuntimeError::BudgetExceeded { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn a_schema_given_as_json_checks_non_object_answers() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", FINAL_ANSWER_TOOL, r#"{"value":"no"}"#),
        ScriptedTurn::tool_call("c2", FINAL_ANSWER_TOOL, r#"{"value":["a","b"]}"#),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider, events).build().unwrap();
    let schema =
        OutputSchema::new(json!({"type":"array","items":{"type":"string"},"minItems":2})).unwrap();
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("two words")
        .structured(schema)
        .await
        .unwrap();
    assert_eq!(outcome.output, Some(json!(["a", "b"])));
    assert_eq!(outcome.turns, 2);
}

#[tokio::test]
async fn tools_from_every_form_are_gathered_and_a_duplicate_name_is_refused() {
    let provider = scripted(vec![ScriptedTurn::text("hi")]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .tools((SecretTool,))
        .build()
        .unwrap();
    assert_eq!(runtime.run("hello").await.unwrap().final_text, "hi");
    let names: Vec<_> = provider.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let error = builder(provider, events)
        .tool(EchoTool)
        .tools(vec![Arc::new(EchoTool) as Arc<dyn oxydra_tools::Tool>])
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("echo"), "{error}");
}
