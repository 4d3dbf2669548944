//! A local HTTP server that plays scripted provider responses, one per request, and
//! records every request it receives.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` line (Anthropic names its events; OpenAI does not).
    pub event: Option<String>,
    /// The `data:` payload.
    pub data: String,
}

impl SseEvent {
    /// An unnamed event.
    pub fn data(data: impl Into<String>) -> Self {
        Self {
            event: None,
            data: data.into(),
        }
    }

    /// A named event.
    pub fn named(event: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            event: Some(event.into()),
            data: data.into(),
        }
    }

    fn encode(&self) -> String {
        match &self.event {
            Some(event) => format!("event: {event}\ndata: {}\n\n", self.data),
            None => format!("data: {}\n\n", self.data),
        }
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete `text/event-stream` response.
    Sse(Vec<SseEvent>),
    /// Sends these events, then holds the stream open until the server stops.
    Hold(Vec<SseEvent>),
    /// A plain response with this status and JSON body.
    Status(u16, String),
    /// A recorded stream file, served as is.
    Raw(String),
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The request path (`/v1/chat/completions`, `/v1/messages`).
    pub path: String,
    /// The `authorization` header, if any.
    pub authorization: Option<String>,
    /// The `x-api-key` header, if any.
    pub api_key: Option<String>,
    /// The JSON body (`Null` if it was not JSON).
    pub body: serde_json::Value,
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    arrived: Condvar,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The scripted server: runs on its own thread (with its own tokio runtime) so both
/// synchronous tests and async code can use it; stops when dropped.
pub struct ScriptServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ScriptServer {
    /// Starts a server on 127.0.0.1 with a free port that answers requests with
    /// `replies`, in order. A request beyond the script gets HTTP 500.
    pub fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            ..Shared::default()
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let app = Router::new().fallback(handle).with_state(state);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Ok(Self {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT` (Anthropic base URL).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` (OpenAI base URL).
    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Waits until `count` requests have arrived (or `timeout` passed); returns whether they did.
    pub fn wait_for_requests(&self, count: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut requests = lock(&self.shared.requests);
        while requests.len() < count {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            requests = match self.shared.arrived.wait_timeout(requests, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }

    /// Replies not yet used.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.replies).len()
    }
}

impl Drop for ScriptServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Held streams keep a graceful shutdown waiting: do not join the thread;
        // it ends with the process.
        drop(self.thread.take());
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header_text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let request = RecordedRequest {
        path: uri.path().to_owned(),
        authorization: header_text("authorization"),
        api_key: header_text("x-api-key"),
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    };
    let reply = lock(&shared.replies).pop_front();
    lock(&shared.requests).push(request);
    shared.arrived.notify_all();
    match reply {
        Some(Reply::Sse(events)) => sse(Body::from(encode(&events))),
        Some(Reply::Raw(text)) => sse(Body::from(text)),
        Some(Reply::Hold(events)) => {
            let first =
                futures::stream::iter(vec![Ok::<_, Infallible>(Bytes::from(encode(&events)))]);
            sse(Body::from_stream(first.chain(futures::stream::pending())))
        }
        Some(Reply::Status(status, body)) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"error":{"message":"script exhausted","type":"server_error"}}"#,
        )
            .into_response(),
    }
}

fn encode(events: &[SseEvent]) -> String {
    events.iter().map(SseEvent::encode).collect()
}

fn sse(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
