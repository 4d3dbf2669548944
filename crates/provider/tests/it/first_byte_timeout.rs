//! A server that accepts the connection and never answers: a streamed request fails
//! with a first-byte timeout naming the URL after the configured time, through the
//! `ReliableProvider` too (no retry, no fallback to a whole request).

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use oxydra_provider::{
    OllamaProvider, OpenAiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
    ReliableProvider, RetryPolicy, is_retryable,
};
use oxydra_types::Message;
use tokio_util::sync::CancellationToken;

/// A listener that takes connections (the kernel completes the handshake) and never
/// reads or writes: the accepted sockets are kept open until the test ends.
struct SilentServer {
    listener: TcpListener,
    held: Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl SilentServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let held = Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepting = listener.try_clone().unwrap();
        let keep = Arc::clone(&held);
        std::thread::spawn(move || {
            for stream in accepting.incoming().flatten() {
                keep.lock().unwrap().push(stream);
            }
        });
        Self { listener, held }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.listener.local_addr().unwrap())
    }

    fn connections(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

fn config(url: String) -> ProviderConfig {
    ProviderConfig::new(url, Some("sk-secret".into()))
        .with_first_byte_timeout(Duration::from_millis(300))
}

fn request() -> ProviderRequest {
    ProviderRequest::new("m", vec![Message::user("hi")])
}

fn assert_first_byte_timeout(error: &ProviderError, url: &str) {
    match error {
        ProviderError::FirstByteTimeout { url: named, after } => {
            assert_eq!(named, url);
            assert_eq!(*after, Duration::from_millis(300));
        }
        other => panic!("not a first-byte timeout: {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains(url), "{message}");
    assert!(message.contains("first-byte timeout"), "{message}");
    assert!(message.contains("300 ms"), "{message}");
    assert!(!message.contains("sk-secret"), "{message}");
    assert!(!is_retryable(error));
}

#[tokio::test]
async fn a_stream_that_never_begins_is_a_first_byte_timeout_naming_the_url() {
    let server = SilentServer::start();
    let openai = OpenAiProvider::new(config(server.url("/v1")));
    let error = openai
        .stream(&request(), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_first_byte_timeout(&error, &server.url("/v1/chat/completions"));
    let ollama = OllamaProvider::new(config(server.url("")));
    let error = ollama
        .stream(&request(), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_first_byte_timeout(&error, &server.url("/api/chat"));
}

#[tokio::test]
async fn the_reliable_provider_neither_retries_it_nor_falls_back() {
    let server = SilentServer::start();
    let inner: Arc<dyn Provider> = Arc::new(OpenAiProvider::new(config(server.url("/v1"))));
    let reliable = ReliableProvider::new(inner, RetryPolicy::default());
    let error = reliable
        .stream(&request(), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_first_byte_timeout(&error, &server.url("/v1/chat/completions"));
    assert_eq!(server.connections(), 1, "one attempt, no fallback request");
}

#[tokio::test]
async fn a_whole_request_is_bounded_by_the_request_timeout_instead() {
    let server = SilentServer::start();
    let provider = OpenAiProvider::new(
        config(server.url("/v1")).with_timeouts(Duration::from_millis(400), Duration::from_secs(5)),
    );
    let error = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::Timeout(after) if after == Duration::from_millis(400)),
        "{error:?}"
    );
}
