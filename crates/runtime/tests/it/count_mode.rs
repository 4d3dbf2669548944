//! The count mode belongs to each context window: one runtime counting exactly (with
//! the process's encoder loaded) leaves another runtime budgeting by estimate, and the
//! other way round.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{AgentRuntime, CollectingEventSink, testing};
use oxydra_types::SessionId;
use tokio_util::sync::CancellationToken;

/// A runtime whose 50-token budget a long question nears by estimate: it counts
/// exactly.
fn exact_runtime() -> (AgentRuntime, Arc<oxydra_provider::ScriptedProvider>) {
    let provider = scripted(vec![ScriptedTurn::text("ok"), ScriptedTurn::text("ok")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .limits(window_limits(60, 10, 100.0))
        .build()
        .unwrap();
    (runtime, provider)
}

/// A runtime whose history passes its budget in bytes but not by estimate: four tool
/// turns of 300 ASCII bytes each against 2 000 tokens.
fn estimate_runtime() -> (AgentRuntime, Arc<oxydra_provider::ScriptedProvider>) {
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
    (runtime, provider)
}

const LONG_QUESTION: &str = "a question long enough to pass the byte bound of the budget, and long enough that its estimate nears the budget too";

#[tokio::test(flavor = "current_thread")]
async fn two_runtimes_in_one_process_keep_their_own_count_modes() {
    let cancel = CancellationToken::new();
    let (exact, _) = exact_runtime();
    let exact_session = SessionId::generate();
    let before = testing::messages_counted_on_this_thread();
    exact
        .session(&exact_session)
        .prompt(LONG_QUESTION)
        .cancel(&cancel)
        .await
        .unwrap();
    assert!(testing::encoder_loaded());
    assert_eq!(
        testing::messages_counted_on_this_thread() - before,
        1,
        "the first runtime counts its question exactly"
    );

    // The encoder is loaded, yet the second runtime budgets by estimate: nothing is
    // counted exactly and nothing is cut.
    let (estimating, provider) = estimate_runtime();
    let before = testing::messages_counted_on_this_thread();
    estimating
        .session(&SessionId::generate())
        .prompt("go")
        .cancel(&cancel)
        .await
        .unwrap();
    assert_eq!(testing::messages_counted_on_this_thread() - before, 0);
    let last = provider.requests().last().cloned().unwrap();
    assert_eq!(last.messages.len(), 1 + 4 * 2);
    assert_eq!(tool_results(&last).len(), 4);

    // And the second runtime's estimates leave the first counting exactly: its next run
    // counts the new messages (its answer and the new question).
    let before = testing::messages_counted_on_this_thread();
    exact
        .session(&exact_session)
        .prompt(LONG_QUESTION)
        .cancel(&cancel)
        .await
        .unwrap();
    assert_eq!(testing::messages_counted_on_this_thread() - before, 2);
}
