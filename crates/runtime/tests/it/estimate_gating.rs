//! Its own test binary, so no other test has loaded the encoder: a history whose bytes
//! pass the budget but whose estimate is well under it is budgeted by estimate.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{CollectingEventSink, testing};
use oxydra_types::SessionId;

#[tokio::test]
async fn a_history_that_fits_by_estimate_is_neither_counted_exactly_nor_cut() {
    // 2 000 available tokens; every call and its result carry 300 ASCII bytes each
    // (about 110 tokens by estimate), so four turns hold more bytes than the budget
    // (about 2 500) but an estimate of under half of it.
    let payload = "word ".repeat(60);
    let turns: Vec<ScriptedTurn> = (0..4)
        .map(|i| {
            ScriptedTurn::tool_call(
                &format!("c{i}"),
                "echo",
                &format!(r#"{{"text":"{payload}"}}"#),
            )
        })
        .chain([ScriptedTurn::text("done")])
        .collect();
    let provider = scripted(turns);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .limits(window_limits(2_100, 100, 100.0))
        .build()
        .unwrap();
    runtime
        .session(&SessionId::generate())
        .prompt("go")
        .await
        .unwrap();
    let requests = provider.requests();
    let last = requests.last().unwrap();
    let bytes: usize = last
        .messages
        .iter()
        .map(|m| {
            m.text().len()
                + m.tool_calls
                    .iter()
                    .map(|c| c.arguments.len())
                    .sum::<usize>()
        })
        .sum();
    assert!(
        bytes > 1_000,
        "the history passes the budget in bytes ({bytes})"
    );
    // Nothing was cut: the question, four calls with their results.
    assert_eq!(last.messages.len(), 1 + 4 * 2);
    assert_eq!(tool_results(last).len(), 4);
    assert!(
        !testing::encoder_loaded(),
        "an estimate well under the budget needs no encoder"
    );
    assert_eq!(testing::messages_counted_on_this_thread(), 0);
}
