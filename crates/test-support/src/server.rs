//! The mock provider HTTP server: a real HTTP/1.1 server on `127.0.0.1`, answering
//! each request with the next scripted [`Reply`] and recording every request.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use futures::{Stream, StreamExt, future, stream};

use crate::reply::Reply;
use crate::request::RecordedRequest;
use crate::serve_timing::{Answering, ServeTimes, Timing};
use crate::strict_anthropic::{IssuedThinking, issued_thinking, validate_anthropic_request};
use crate::strict_openai::{STRICT_REFUSAL, validate_openai_request};

/// Computes the answer to a request from the request itself.
type Responder = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

/// What a request beyond the script gets: a 500 the test sees in its failure.
const EXHAUSTED: &str = r#"{"error":{"message":"script exhausted","type":"server_error"}}"#;

/// How a [`MockServer`] answers; built with [`MockServer::builder`].
#[derive(Default)]
pub struct MockServerBuilder {
    replies: Vec<Reply>,
    repeat_last: bool,
    only: Option<(String, String)>,
    strict_openai: bool,
    strict_anthropic: bool,
    responder: Option<Responder>,
}

impl MockServerBuilder {
    /// The script: the n-th request gets the n-th reply.
    pub fn replies(mut self, replies: Vec<Reply>) -> Self {
        self.replies = replies;
        self
    }

    /// Once the script is used up, the last reply answers every further request
    /// (instead of a 500 "script exhausted").
    pub fn repeat_last(mut self) -> Self {
        self.repeat_last = true;
        self
    }

    /// Like the real API, serves only `method` on `path` with JSON bodies: another
    /// method or path gets 404, a `content-type` other than `application/json` 415 and
    /// a body that is not JSON 400, none of them using a scripted reply.
    pub fn only(mut self, method: &str, path: &str) -> Self {
        self.only = Some((method.to_owned(), path.to_owned()));
        self
    }

    /// Checks each request as a llama.cpp-based server does
    /// ([`validate_openai_request`]): one that fails uses up its scripted reply but is
    /// answered HTTP 500 with that server's recorded body ([`STRICT_REFUSAL`]), the
    /// reason printed to stderr. Catches a request OpenAI takes but a local server
    /// refuses.
    pub fn strict_openai(mut self) -> Self {
        self.strict_openai = true;
        self
    }

    /// Checks each request as the Anthropic Messages API does
    /// ([`validate_anthropic_request`]), remembering the thinking blocks of every
    /// stream it sends so that one sent back altered or dropped is caught: a request
    /// that fails uses up its scripted reply but is answered HTTP 400
    /// `invalid_request_error` with the reason (also printed to stderr).
    pub fn strict_anthropic(mut self) -> Self {
        self.strict_anthropic = true;
        self
    }

    /// Answers every request with what `responder` makes of it (instead of a script):
    /// a server that routes by path or computes from the body.
    pub fn respond_with(
        mut self,
        responder: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.responder = Some(Arc::new(responder));
        self
    }

    /// Starts the server on `127.0.0.1` with a free port.
    pub fn start(self) -> std::io::Result<MockServer> {
        let shared = Arc::new(Shared {
            script: Mutex::new(self.replies.into()),
            last: Mutex::new(None),
            repeat_last: self.repeat_last,
            only: self.only,
            strict_openai: self.strict_openai,
            strict_anthropic: self.strict_anthropic,
            issued: Mutex::new(Vec::new()),
            responder: self.responder,
            requests: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            hits: Arc::new(AtomicUsize::new(0)),
            connections: Arc::new(AtomicUsize::new(0)),
            bytes_sent: AtomicUsize::new(0),
            open_bodies: Mutex::new(0),
            idle: Condvar::new(),
            went_idle: tokio::sync::Notify::new(),
            timing: Arc::new(Timing::default()),
        });
        MockServer::run(shared)
    }
}

struct Shared {
    script: Mutex<VecDeque<Reply>>,
    last: Mutex<Option<Reply>>,
    repeat_last: bool,
    only: Option<(String, String)>,
    strict_openai: bool,
    strict_anthropic: bool,
    issued: Mutex<Vec<IssuedThinking>>,
    responder: Option<Responder>,
    requests: Mutex<Vec<RecordedRequest>>,
    arrived: Condvar,
    hits: Arc<AtomicUsize>,
    connections: Arc<AtomicUsize>,
    bytes_sent: AtomicUsize,
    open_bodies: Mutex<usize>,
    idle: Condvar,
    went_idle: tokio::sync::Notify,
    timing: Arc<Timing>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A local provider stand-in for tests: answers requests with scripted [`Reply`]s in
/// order and records each request (method, path, headers, body).
///
/// It runs on its own thread with its own tokio runtime, so synchronous tests (which
/// start the `oxydra` binary) and async tests use it alike; it stops when dropped.
///
/// ```
/// use oxydra_test_support::{MockServer, openai};
///
/// let server = MockServer::start(vec![openai::text("Hello!")]).unwrap();
/// assert!(server.openai_url().starts_with("http://127.0.0.1:"));
/// assert_eq!(server.remaining(), 1);
/// ```
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl MockServer {
    /// A server that answers the n-th request with `replies[n]`; a request beyond the
    /// script gets HTTP 500 "script exhausted".
    pub fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        Self::builder().replies(replies).start()
    }

    /// Like [`MockServer::start`], but the last reply answers every request past the
    /// script (a provider that keeps failing the same way).
    pub fn repeating(replies: Vec<Reply>) -> std::io::Result<Self> {
        Self::builder().replies(replies).repeat_last().start()
    }

    /// A server with more choices: a route it is strict about, llama.cpp-strict
    /// request checks, a responder.
    pub fn builder() -> MockServerBuilder {
        MockServerBuilder::default()
    }

    fn run(shared: Arc<Shared>) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let state = Arc::clone(&shared);
        std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let connections = Arc::clone(&state.connections);
                // Like real API servers, no Nagle delay: without it, a streamed
                // answer's second write waits for the client's delayed ACK (~40 ms).
                let listener = listener.tap_io(move |tcp| {
                    connections.fetch_add(1, Ordering::SeqCst);
                    let _ = tcp.set_nodelay(true);
                });
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
        })
    }

    /// The socket address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` followed by `path` (`""` for an Anthropic base URL).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` (an OpenAI base URL).
    pub fn openai_url(&self) -> String {
        self.url("/v1")
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// How many requests arrived.
    pub fn hits(&self) -> usize {
        self.shared.hits.load(Ordering::SeqCst)
    }

    /// The live count behind [`MockServer::hits`], for a task that watches it.
    pub fn hit_counter(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.shared.hits)
    }

    /// How many TCP connections it accepted (a connection that never sent a whole
    /// request counts too).
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Scripted replies not yet used.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// Body bytes handed to the connection so far, over all responses.
    pub fn bytes_sent(&self) -> usize {
        self.shared.bytes_sent.load(Ordering::SeqCst)
    }

    /// When the first request arrived (`CLOCK_MONOTONIC`) and the time spent answering
    /// requests so far ([`ServeTimes`]).
    pub fn serve_times(&self) -> ServeTimes {
        self.shared.timing.snapshot()
    }

    /// Waits until `count` requests have arrived or `timeout` passed; returns whether
    /// they did.
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

    /// Waits until no response body is being streamed (each streamed body ended or its
    /// client hung up) or `timeout` passed; returns whether it is idle. After it,
    /// [`MockServer::bytes_sent`] is final. It blocks the thread: for synchronous tests
    /// (whose client is another process); async tests use
    /// [`MockServer::wait_idle_async`].
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut open = lock(&self.shared.open_bodies);
        while *open > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            open = match self.shared.idle.wait_timeout(open, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }

    /// [`MockServer::wait_idle`] for async tests: waits without blocking the test's
    /// runtime, which may be running the client's connection (whose hang-up ends the
    /// body). Needs a tokio runtime with time enabled.
    pub async fn wait_idle_async(&self, timeout: Duration) -> bool {
        let idle = async {
            loop {
                let went_idle = self.shared.went_idle.notified();
                tokio::pin!(went_idle);
                went_idle.as_mut().enable();
                if *lock(&self.shared.open_bodies) == 0 {
                    return;
                }
                went_idle.await;
            }
        };
        tokio::time::timeout(timeout, idle).await.is_ok()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // A held stream keeps the graceful shutdown waiting: the thread is not joined;
        // it ends with the process.
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    // Timed from the head's arrival, before the body is read.
    let answering = shared.timing.arrived();
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let headers = request.headers().clone();
    let body = match Bytes::from_request(request, &()).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    let request = RecordedRequest {
        method,
        path,
        query,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
        raw_body: body.to_vec(),
    };
    let reply = shared.answer(&request);
    lock(&shared.requests).push(request);
    shared.hits.fetch_add(1, Ordering::SeqCst);
    shared.arrived.notify_all();
    respond(reply, &shared, answering)
}

impl Shared {
    fn answer(&self, request: &RecordedRequest) -> Reply {
        if let Some((method, path)) = &self.only {
            if request.method != *method || request.path != *path {
                let message = format!("no route for {} {}", request.method, request.path);
                return error(404, &message, "not_found_error");
            }
            let json_type = request
                .header("content-type")
                .is_some_and(|kind| kind.starts_with("application/json"));
            if !json_type {
                let message = "expected a request with `content-type: application/json`";
                return error(415, message, "invalid_request_error");
            }
            if request.body.is_null() {
                return error(400, "the body is not JSON", "invalid_request_error");
            }
        }
        let reply = self.scripted(request);
        if self.strict_openai
            && let Err(reason) = validate_openai_request(&request.body)
        {
            eprintln!("strict mock server refused the request: {reason}");
            return Reply::json(500, crate::fixture(STRICT_REFUSAL));
        }
        if self.strict_anthropic {
            let verdict = validate_anthropic_request(&request.body, &lock(&self.issued));
            if let Err(reason) = verdict {
                eprintln!("strict Anthropic mock refused the request: {reason}");
                let body = serde_json::json!({"type": "error",
                    "error": {"type": "invalid_request_error", "message": reason}});
                return Reply::json(400, body.to_string());
            }
            lock(&self.issued).extend(issued_thinking(&reply.body));
        }
        reply
    }

    fn scripted(&self, request: &RecordedRequest) -> Reply {
        if let Some(responder) = &self.responder {
            return responder(request);
        }
        let next = lock(&self.script).pop_front();
        let mut last = lock(&self.last);
        match next {
            Some(reply) => {
                if self.repeat_last {
                    *last = Some(reply.clone());
                }
                reply
            }
            None => match &*last {
                Some(reply) => reply.clone(),
                None => Reply::json(500, EXHAUSTED),
            },
        }
    }
}

fn error(status: u16, message: &str, kind: &str) -> Reply {
    let body = serde_json::json!({"error": {"message": message, "type": kind}});
    Reply::json(status, body.to_string())
}

/// The response to `reply`; `answering` ends with the streamed body, or here for a
/// whole one.
fn respond(reply: Reply, shared: &Arc<Shared>, answering: Answering) -> Response {
    let Reply {
        status,
        headers,
        mut body,
        stream,
        chunk_size,
        hold,
        endless,
    } = reply;
    let streamed = stream || chunk_size > 0 || hold.is_some() || endless.is_some();
    let body = if streamed {
        let (rest, gate) = match hold {
            Some((at, gate)) => (body.split_off(at), Some(gate)),
            None => (Vec::new(), None),
        };
        let size = if chunk_size == 0 {
            usize::MAX
        } else {
            chunk_size
        };
        let wait = stream::once(async move {
            if let Some(mut gate) = gate
                && gate.wait_for(|open| *open).await.is_err()
            {
                // The test dropped its release: the rest never comes.
                future::pending::<()>().await;
            }
        })
        .filter_map(|()| future::ready(None::<Bytes>));
        let pieces = stream::iter(pieces(body, size))
            .chain(wait)
            .chain(stream::iter(pieces(rest, size)))
            .chain(endless_pieces(endless));
        Body::from_stream(counted(pieces, Arc::clone(shared), answering))
    } else {
        shared.bytes_sent.fetch_add(body.len(), Ordering::SeqCst);
        drop(answering);
        Body::from(body)
    };
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response.headers_mut().insert(name, value);
        } else {
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        }
    }
    response
}

fn pieces(bytes: Vec<u8>, size: usize) -> Vec<Bytes> {
    bytes
        .chunks(size.max(1))
        .map(Bytes::copy_from_slice)
        .collect()
}

fn endless_pieces(endless: Option<(Vec<u8>, usize)>) -> impl Stream<Item = Bytes> + Send {
    let (piece, limit) = endless.unwrap_or_default();
    let piece = Bytes::from(piece);
    stream::unfold(0_usize, move |sent| {
        let piece = piece.clone();
        future::ready((sent < limit && !piece.is_empty()).then(|| {
            let next = sent + piece.len();
            (piece, next)
        }))
    })
}

/// Yields between pieces (so a chunked body really arrives in pieces), counts the
/// bytes handed on and keeps the body counted as open until the stream is dropped.
fn counted(
    pieces: impl Stream<Item = Bytes> + Send + 'static,
    shared: Arc<Shared>,
    answering: Answering,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let open = OpenBody::new(shared, answering);
    pieces.then(move |piece| {
        open.count(piece.len());
        async move {
            tokio::task::yield_now().await;
            Ok(piece)
        }
    })
}

/// A streamed body in flight; dropping it wakes [`MockServer::wait_idle`] and ends
/// the request's answering time.
struct OpenBody {
    shared: Arc<Shared>,
    answering: Option<Answering>,
}

impl OpenBody {
    fn new(shared: Arc<Shared>, answering: Answering) -> Self {
        *lock(&shared.open_bodies) += 1;
        Self {
            shared,
            answering: Some(answering),
        }
    }

    fn count(&self, bytes: usize) {
        self.shared.bytes_sent.fetch_add(bytes, Ordering::SeqCst);
    }
}

impl Drop for OpenBody {
    fn drop(&mut self) {
        // The time is in before a waiter wakes.
        drop(self.answering.take());
        let mut open = lock(&self.shared.open_bodies);
        *open = open.saturating_sub(1);
        self.shared.idle.notify_all();
        self.shared.went_idle.notify_waiters();
    }
}
