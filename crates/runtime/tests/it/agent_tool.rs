//! An agent offered to another as a tool: a supervisor hands a task to a sub-agent,
//! which runs it under its own budget, its events nested under the calling call.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{AgentRuntime, CollectingEventSink, RuntimeLimits};
use oxydra_types::RuntimeEvent;

#[tokio::test]
async fn a_supervisor_delegates_to_a_sub_agent_and_sees_its_events_nested() {
    // The sub-agent uses a tool, then answers.
    let researcher_model = scripted(vec![
        ScriptedTurn::tool_call("r1", "echo", r#"{"text":"Oslo facts"}"#),
        ScriptedTurn::text("Oslo is the capital of Norway."),
    ]);
    let researcher = AgentRuntime::builder()
        .provider(researcher_model.clone())
        .model("small-model")
        .tool(EchoTool)
        .build()
        .unwrap();
    let supervisor_model = scripted(vec![
        ScriptedTurn::tool_call("s1", "researcher", r#"{"task":"What is Oslo?"}"#),
        ScriptedTurn::text("Done: Oslo is Norway's capital."),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let supervisor = builder(supervisor_model.clone(), events.clone())
        .tool(
            researcher
                .as_tool("researcher", "Finds facts")
                .events_to(events.clone()),
        )
        .build()
        .unwrap();
    let outcome = supervisor.run("Tell me about Oslo").await.unwrap();
    assert_eq!(outcome.final_text, "Done: Oslo is Norway's capital.");
    // The sub-agent got the task alone, and its answer was the call's result.
    let sub_requests = researcher_model.requests();
    assert_eq!(sub_requests.len(), 2);
    assert_eq!(
        sub_requests[0].messages.last().unwrap().text(),
        "What is Oslo?"
    );
    let results = tool_results(&supervisor_model.requests()[1]);
    assert_eq!(
        results,
        [("s1".to_owned(), "Oslo is the capital of Norway.".to_owned())]
    );
    // Its events arrived nested under the supervisor's call id, ending with its final.
    let nested: Vec<RuntimeEvent> = events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            RuntimeEvent::SubAgent {
                call_id,
                agent,
                event,
            } => {
                assert_eq!(call_id.as_str(), "s1");
                assert_eq!(agent, "researcher");
                Some(*event)
            }
            _ => None,
        })
        .collect();
    assert!(
        nested
            .iter()
            .any(|e| matches!(e, RuntimeEvent::ToolCompleted { name, .. } if name == "echo"))
    );
    assert!(
        matches!(nested.last(), Some(RuntimeEvent::Final { .. })),
        "{nested:?}"
    );
}

#[tokio::test]
async fn a_sub_agent_out_of_budget_is_a_failed_call_not_a_failed_supervisor() {
    let looping = scripted(vec![
        ScriptedTurn::tool_call("r1", "echo", r#"{"text":"a"}"#),
        ScriptedTurn::tool_call("r2", "echo", r#"{"text":"b"}"#),
    ]);
    let sub = AgentRuntime::builder()
        .provider(looping)
        .model("small-model")
        .tool(EchoTool)
        .limits({
            let mut custom = RuntimeLimits::default();
            custom.max_turns = 1;
            custom
        })
        .build()
        .unwrap();
    let supervisor_model = scripted(vec![
        ScriptedTurn::tool_call("s1", "helper", r#"{"task":"loop"}"#),
        ScriptedTurn::text("The helper gave up."),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let supervisor = builder(supervisor_model.clone(), events)
        .tool(sub.as_tool("helper", "Helps"))
        .build()
        .unwrap();
    let outcome = supervisor.run("go").await.unwrap();
    assert_eq!(outcome.final_text, "The helper gave up.");
    let results = tool_results(&supervisor_model.requests()[1]);
    assert!(
        results[0].1.starts_with("Tool execution failed"),
        "{results:?}"
    );
    assert!(results[0].1.contains("max_turns"), "{results:?}");
}
