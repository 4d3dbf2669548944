//! A prompt larger than the context budget, through the real binary.

use crate::common;

use common::{Sandbox, events_of_type, json_lines, output_with_stdin, stderr};
use oxydra_test_support::{MockServer, Reply};

/// The attack: a megabyte prompt on stdin. `oxydra run` ends at once with exit 2 and a
/// `prompt_too_long` error event naming the count, the budget and the fix; the
/// provider is never asked.
#[test]
fn a_megabyte_prompt_is_refused_before_any_provider_call() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[runtime]\ncontext_window = 4000\n",
    )
    .unwrap();
    let server = MockServer::repeating(vec![Reply::sse("")]).unwrap();
    let command = sandbox.oxydra_command(&server, "run");
    let prompt = "lorem ipsum dolor sit amet ".repeat(40_000);
    let output = output_with_stdin(command, prompt.as_bytes());
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let events = json_lines(&output);
    let errors = events_of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["kind"], "prompt_too_long", "{events:?}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains("context budget of"), "{message}");
    assert!(message.contains("`[runtime] context_window`"), "{message}");
    assert_eq!(server.hits(), 0, "the provider was called");
}
