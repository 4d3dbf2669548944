//! The facade re-exports the data model every layer shares.

use oxydra::types::{Message, MessageRole, RuntimeEvent};

#[test]
fn facade_exposes_the_data_model() {
    let message = Message::user("hello");
    assert_eq!(message.role, MessageRole::User);
    let event: RuntimeEvent = serde_json::from_str(r#"{"type":"text_delta","text":"hi"}"#).unwrap();
    assert_eq!(event, RuntimeEvent::TextDelta { text: "hi".into() });
}

#[test]
fn recorded_fixtures_are_in_the_repository() {
    let dir = oxydra_test_support::fixtures_dir();
    assert!(
        dir.join("openai/gpt4o_mini_stream_turn2.sse").is_file(),
        "recorded provider streams missing at {}",
        dir.display()
    );
}
