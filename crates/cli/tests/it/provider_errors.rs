//! What a provider's refusal looks like on stderr and in the event stream: whether a
//! key was sent and from where, the provider's whole message, and a transport failure
//! said once.

use crate::common;

use common::{Sandbox, events_of_type, json_lines, stderr};
use oxydra_test_support::{MockServer, Reply};

const REFUSED: &str = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;

#[test]
fn a_refused_key_names_the_variable_it_came_from() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![Reply::json(401, REFUSED)]).unwrap();
    sandbox.write_trusted_config("[provider]\napi_key_env = \"MY_PROVIDER_KEY\"\n");
    let mut command = sandbox.stored_command("run");
    command
        .env("MY_PROVIDER_KEY", "sk-test-not-a-real-key-12345")
        .args(["--base-url", &server.openai_url(), "hello"]);
    let output = command.output().unwrap();
    let err = stderr(&output);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("the server refused the API key from MY_PROVIDER_KEY"),
        "{err}"
    );
    assert!(err.contains("Incorrect API key provided"), "{err}");
    assert!(!err.contains("no API key was sent"), "{err}");
}

#[test]
fn a_refusal_without_a_key_says_none_was_sent_and_how_to_send_one() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![Reply::json(401, REFUSED)]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &[], "hello");
    let err = stderr(&output);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("no API key was sent"), "{err}");
    assert!(err.contains("api_key_env in [provider]"), "{err}");
    assert!(!err.contains("refused the API key"), "{err}");
}

#[test]
fn a_long_validation_message_reaches_stderr_and_the_events_whole() {
    let sandbox = Sandbox::new();
    let detail: String = (0..150).map(|i| format!("field{i:04} ")).collect();
    assert_eq!(detail.len(), 1500);
    let body = serde_json::json!({"error": {"message": detail, "type": "invalid_request_error"}});
    let server = MockServer::start(vec![Reply::json(400, body.to_string())]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "jsonl"], "hello");
    let err = stderr(&output);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(err.contains(detail.trim_end()), "{err}");
    let events = json_lines(&output);
    let errors = events_of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{events:?}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains(detail.trim_end()), "{message}");
}

#[test]
fn a_refused_connection_is_one_line_without_repeats() {
    let sandbox = Sandbox::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let output = sandbox.run_openai(&format!("http://{addr}/v1"), &[], "hello");
    let err = stderr(&output);
    assert_ne!(output.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find(|line| line.starts_with("error:"))
        .unwrap_or_else(|| panic!("no error line in {err}"));
    assert!(
        line.contains(&format!("cannot connect to http://{addr}/v1")),
        "{line}"
    );
    assert!(!line.contains("provider error"), "{line}");
    assert!(!line.contains("transport error"), "{line}");
    // `error:` itself and at most the system's "(os error 111)".
    assert!(line.matches("error").count() <= 2, "{line}");
}
