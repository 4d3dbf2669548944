//! The encoder is loaded lazily. nextest runs each test in a process of its own, so no
//! other test has loaded the encoder before these look.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{CollectingEventSink, testing};
use oxydra_types::SessionId;

#[tokio::test]
async fn the_encoder_loads_only_when_the_context_may_be_near_its_budget() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"hi"}"#),
        ScriptedTurn::text("short answer"),
        ScriptedTurn::text("second answer"),
    ]);
    let runtime = builder(provider, Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime.session(&session).prompt("hello").await.unwrap();
    assert!(
        !testing::encoder_loaded(),
        "a small context needs no exact count"
    );

    let provider = scripted(vec![ScriptedTurn::text("ok")]);
    let runtime = builder(provider, Arc::new(CollectingEventSink::new()))
        .limits(window_limits(60, 10, 100.0))
        .build()
        .unwrap();
    runtime
        .session(&SessionId::generate())
        // Its estimate (about 44 tokens) passes 70% of the 50 available, its byte
        // count the whole budget; its exact count fits.
        .prompt("a question long enough to pass the byte bound of the budget, and long enough that its estimate nears the budget too")
        .await
        .unwrap();
    assert!(testing::encoder_loaded());
    // The encoder was loaded on a blocking thread, not on the runtime's (this) thread.
    let loader = testing::encoder_load_thread().unwrap();
    assert_ne!(loader, std::thread::current().id());
}
