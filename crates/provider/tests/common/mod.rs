//! A real local HTTP server (axum on 127.0.0.1:0) for the provider tests.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs,
    dead_code
)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt;

/// The fixtures directory (`OXYDRA_FIXTURES` overrides).
pub fn fixtures_dir() -> PathBuf {
    std::env::var_os("OXYDRA_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
        })
}

pub fn fixture(name: &str) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// How the server answers one request.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Send the body in pieces of this many bytes (0: all at once).
    pub chunk_size: usize,
    /// Keep the connection open after the body instead of ending it.
    pub hang: bool,
}

impl Reply {
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into(),
            chunk_size: 0,
            hang: false,
        }
    }

    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            chunk_size: 0,
            hang: false,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn chunked(mut self, size: usize) -> Self {
        self.chunk_size = size;
        self
    }

    pub fn hanging(mut self) -> Self {
        self.hang = true;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Captured {
    pub path: String,
    pub headers: HeaderMap,
    pub body: serde_json::Value,
}

#[derive(Clone)]
struct Shared {
    /// Check each request as a llama.cpp-based server would (see
    /// [`validate_openai_request`]) and answer its recorded 500 when it fails.
    strict: bool,
    replies: Arc<Vec<Reply>>,
    hits: Arc<AtomicUsize>,
    captured: Arc<Mutex<Vec<Captured>>>,
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicUsize>,
    pub captured: Arc<Mutex<Vec<Captured>>>,
}

impl TestServer {
    /// `http://127.0.0.1:port` + `suffix`.
    pub fn url(&self, suffix: &str) -> String {
        format!("http://{}{suffix}", self.addr)
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }
}

async fn handle(
    State(shared): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let hit = shared.hits.fetch_add(1, Ordering::SeqCst);
    let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    let refused = if shared.strict {
        validate_openai_request(&body).err()
    } else {
        None
    };
    shared.captured.lock().unwrap().push(Captured {
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let reply = match refused {
        Some(reason) => {
            eprintln!("strict server refused the request: {reason}");
            Reply::json(500, fixture(STRICT_REFUSAL))
        }
        None => shared.replies[hit.min(shared.replies.len() - 1)].clone(),
    };
    let size = if reply.chunk_size == 0 {
        reply.body.len().max(1)
    } else {
        reply.chunk_size
    };
    let chunks: Vec<Bytes> = reply
        .body
        .chunks(size)
        .map(Bytes::copy_from_slice)
        .collect();
    let pieces = futures::stream::iter(chunks).then(|chunk| async move {
        tokio::task::yield_now().await;
        Ok::<_, Infallible>(chunk)
    });
    let body = if reply.hang {
        Body::from_stream(pieces.chain(futures::stream::pending()))
    } else {
        Body::from_stream(pieces)
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap();
    for (name, value) in &reply.headers {
        response.headers_mut().insert(
            name.parse::<axum::http::HeaderName>().unwrap(),
            value.parse().unwrap(),
        );
    }
    response
}

/// Serves `replies`: the n-th request gets `replies[n]` (the last one repeats).
pub async fn serve(replies: Vec<Reply>) -> TestServer {
    serve_with(replies, false).await
}

/// Like [`serve`], but each request must pass [`validate_openai_request`]; one that
/// fails is answered as llama-cpp-python answers it: HTTP 500 with its recorded body.
pub async fn serve_strict(replies: Vec<Reply>) -> TestServer {
    serve_with(replies, true).await
}

/// What a llama.cpp-based server answered to an assistant message with `content: null`.
pub const STRICT_REFUSAL: &str = "local/llama_cpp_python_500_null_assistant_content.json";

/// Checks a chat-completions request body as a llama.cpp-based server (llama.cpp's
/// server, llama-cpp-python) does: `messages` is an array; each message has a known
/// role and a `content` that is a string (or, for system and user messages, an array
/// of typed parts), never `null` or missing; an assistant's `tool_calls` carry an id,
/// `type: function`, a name and a string of arguments; a tool message's
/// `tool_call_id` names a call of an earlier assistant message.
pub fn validate_openai_request(body: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value;
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("`messages` is not an array")?;
    let mut call_ids: Vec<&str> = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if !["system", "user", "assistant", "tool"].contains(&role) {
            return Err(format!("messages[{at}]: unknown role {role:?}"));
        }
        match message.get("content") {
            Some(Value::String(_)) => {}
            Some(Value::Array(parts)) if role == "system" || role == "user" => {
                if parts
                    .iter()
                    .any(|part| part.get("type").and_then(Value::as_str).is_none())
                {
                    return Err(format!("messages[{at}]: a content part without a type"));
                }
            }
            Some(Value::Null) => return Err(format!("messages[{at}]: content is null")),
            Some(other) => return Err(format!("messages[{at}]: content is {other}")),
            None => return Err(format!("messages[{at}]: content is missing")),
        }
        if let Some(calls) = message.get("tool_calls") {
            let calls = calls
                .as_array()
                .filter(|_| role == "assistant")
                .ok_or(format!(
                    "messages[{at}]: tool_calls is not an assistant's list"
                ))?;
            for call in calls {
                let id = call.get("id").and_then(Value::as_str);
                let kind = call.get("type").and_then(Value::as_str);
                let name = call.pointer("/function/name").and_then(Value::as_str);
                let arguments = call.pointer("/function/arguments").and_then(Value::as_str);
                match (id, kind, name, arguments) {
                    (Some(id), Some("function"), Some(_), Some(_)) => call_ids.push(id),
                    _ => return Err(format!("messages[{at}]: malformed tool call {call}")),
                }
            }
        }
        if role == "tool" {
            let id = message.get("tool_call_id").and_then(Value::as_str);
            match id {
                Some(id) if call_ids.contains(&id) => {}
                _ => {
                    return Err(format!(
                        "messages[{at}]: tool_call_id {id:?} answers no earlier call"
                    ));
                }
            }
        }
    }
    Ok(())
}

async fn serve_with(replies: Vec<Reply>, strict: bool) -> TestServer {
    assert!(!replies.is_empty());
    let shared = Shared {
        strict,
        replies: Arc::new(replies),
        hits: Arc::new(AtomicUsize::new(0)),
        captured: Arc::new(Mutex::new(Vec::new())),
    };
    let server = TestServer {
        addr: "127.0.0.1:0".parse().unwrap(),
        hits: shared.hits.clone(),
        captured: shared.captured.clone(),
    };
    let app = Router::new().fallback(handle).with_state(shared);
    let listener = tokio::net::TcpListener::bind(server.addr).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    TestServer { addr, ..server }
}
