//! A server that takes the connection and never answers: `oxydra run` fails with the
//! first-byte timeout of `[provider] first_byte_timeout_secs`, a provider error
//! (exit 1) that names the URL, long before the turn budget.

use crate::common;

use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Sandbox, events_of_type, json_lines, stderr};

/// Accepts every connection, reads what comes and never writes a byte. Counts the
/// connections; the accepted sockets stay open until the process ends.
fn silent_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counter.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    (url, accepted)
}

#[test]
fn a_server_that_never_answers_is_a_first_byte_timeout_naming_its_url() {
    let sandbox = Sandbox::new();
    let config = sandbox.path().join("config/oxydra");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[provider]\nfirst_byte_timeout_secs = 1\n\n[runtime]\nturn_timeout_secs = 60\n",
    )
    .unwrap();
    let (url, accepted) = silent_server();
    let started = Instant::now();
    let output = sandbox.run_openai(&url, &["--output", "jsonl"], "hello?");
    let took = started.elapsed();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let events = json_lines(&output);
    let errors = events_of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{events:?} {err}");
    assert_eq!(errors[0]["kind"], "provider", "{events:?}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("{url}/chat/completions")),
        "the URL is named: {message}"
    );
    assert!(message.contains("first-byte timeout"), "{message}");
    assert!(!message.contains("turn"), "not a budget exit: {message}");
    assert!(
        took < Duration::from_secs(30),
        "it waited {took:?}, as if the turn budget decided"
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "a hung server is not asked again"
    );
}

#[test]
fn a_first_byte_timeout_of_zero_is_refused_naming_the_key() {
    let sandbox = Sandbox::new();
    let config = sandbox.path().join("config/oxydra");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[provider]\nfirst_byte_timeout_secs = 0\n",
    )
    .unwrap();
    let output = sandbox.run_openai("http://127.0.0.1:9/v1", &[], "hello?");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("provider.first_byte_timeout_secs"), "{err}");
}

/// A turn that runs out of time reads the same in `run` and in `chat`: the runtime's
/// message, then the flag and key that raise the limit; only how to go on differs.
#[test]
fn run_and_chat_word_a_turn_timeout_the_same() {
    let sandbox = Sandbox::new();
    let config = sandbox.path().join("config/oxydra");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[provider]\nfirst_byte_timeout_secs = 60\n\n[runtime]\nturn_timeout_secs = 1\n",
    )
    .unwrap();
    let (url, _) = silent_server();
    let shared = "error: budget_exceeded: budget `turn_timeout` exceeded: no text or tool \
                  call arrived from the model within the 1000 ms turn timeout — raise it with \
                  --turn-timeout SECS or `turn_timeout_secs` in [runtime] (";

    let run = sandbox.run_openai(&url, &[], "hello?");
    let run_err = stderr(&run);
    assert_eq!(run.status.code(), Some(3), "{run_err}");
    assert!(run_err.contains(shared), "{run_err}");
    // Nothing of the first turn came back: the new session is not kept.
    assert!(run_err.contains("(nothing was stored)"), "{run_err}");

    let mut command = sandbox.stored_command("chat");
    command.args(["--base-url", &url]);
    let chat = common::output_with_stdin(command, b"hello?\n/exit\n");
    let chat_err = stderr(&chat);
    assert!(chat_err.contains(shared), "{chat_err}");
    assert!(
        chat_err.contains("the session keeps what was done; the next message goes on"),
        "{chat_err}"
    );
}
