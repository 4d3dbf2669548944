//! An in-process OTLP/HTTP collector for the export tests: `POST /v1/traces` with an
//! `application/x-protobuf` body, decoded as a real collector does; another content
//! type is refused with 415, another path with 404, a body that does not decode with
//! 400. Every span received is kept, with its resource's and scope's names.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;

/// An attribute value, as far as the tests need it.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Strings(Vec<String>),
    Other(String),
}

impl Attr {
    fn from_any(value: Option<&AnyValue>) -> Self {
        match value.and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::StringValue(s)) => Self::Str(s.clone()),
            Some(any_value::Value::IntValue(i)) => Self::Int(*i),
            Some(any_value::Value::DoubleValue(f)) => Self::Float(*f),
            Some(any_value::Value::BoolValue(b)) => Self::Bool(*b),
            Some(any_value::Value::ArrayValue(array)) => {
                let strings: Option<Vec<String>> = array
                    .values
                    .iter()
                    .map(|v| match &v.value {
                        Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                        _ => None,
                    })
                    .collect();
                match strings {
                    Some(strings) => Self::Strings(strings),
                    None => Self::Other(format!("{array:?}")),
                }
            }
            other => Self::Other(format!("{other:?}")),
        }
    }
}

fn attributes(list: &[KeyValue]) -> HashMap<String, Attr> {
    list.iter()
        .map(|kv| (kv.key.clone(), Attr::from_any(kv.value.as_ref())))
        .collect()
}

/// One span as the collector received it.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub trace_id: Vec<u8>,
    pub span_id: Vec<u8>,
    /// Empty for a root span.
    pub parent_span_id: Vec<u8>,
    pub name: String,
    /// The protobuf `SpanKind` (1 internal, 3 client).
    pub kind: i32,
    /// The protobuf status code (0 unset, 1 ok, 2 error).
    pub status_code: i32,
    pub attributes: HashMap<String, Attr>,
    pub resource: HashMap<String, Attr>,
    pub scope: String,
}

impl ReceivedSpan {
    /// The attribute `key`, failing the test when it is missing.
    pub fn attr(&self, key: &str) -> &Attr {
        self.attributes
            .get(key)
            .unwrap_or_else(|| panic!("span {} has no {key}: {:?}", self.name, self.attributes))
    }

    pub fn str(&self, key: &str) -> &str {
        match self.attr(key) {
            Attr::Str(s) => s,
            other => panic!("{key} of {} is not a string: {other:?}", self.name),
        }
    }

    pub fn int(&self, key: &str) -> i64 {
        match self.attr(key) {
            Attr::Int(i) => *i,
            other => panic!("{key} of {} is not an integer: {other:?}", self.name),
        }
    }
}

#[derive(Default)]
struct Received {
    spans: Mutex<Vec<ReceivedSpan>>,
    requests: AtomicUsize,
}

/// The collector; it stops when dropped.
pub struct Collector {
    addr: SocketAddr,
    received: Arc<Received>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Collector {
    /// A collector on `127.0.0.1` with a free port, on a thread of its own.
    pub fn start() -> Self {
        Self::on(std::net::TcpListener::bind("127.0.0.1:0").unwrap())
    }

    /// A collector on `127.0.0.1:port`, if that port is free.
    pub fn start_on(port: u16) -> Option<Self> {
        std::net::TcpListener::bind(("127.0.0.1", port))
            .ok()
            .map(Self::on)
    }

    fn on(listener: std::net::TcpListener) -> Self {
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Received::default());
        let state = Arc::clone(&received);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        std::thread::spawn(move || {
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = Router::new()
                    .route("/v1/traces", post(traces))
                    .fallback(|| async { StatusCode::NOT_FOUND })
                    .with_state(state);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Self {
            addr,
            received,
            stop: Some(stop),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base endpoint, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far, in the order received.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.received.spans.lock().unwrap().clone()
    }

    /// Export requests accepted so far.
    pub fn requests(&self) -> usize {
        self.received.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn traces(
    State(received): State<Arc<Received>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type != "application/x-protobuf" {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "protobuf only").into_response();
    }
    let request = match ExportTraceServiceRequest::decode(body) {
        Ok(request) => request,
        Err(error) => return (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
    };
    let mut spans = Vec::new();
    for resource_spans in &request.resource_spans {
        let resource = resource_spans
            .resource
            .as_ref()
            .map(|r| attributes(&r.attributes))
            .unwrap_or_default();
        for scope_spans in &resource_spans.scope_spans {
            let scope = scope_spans
                .scope
                .as_ref()
                .map(|s| s.name.clone())
                .unwrap_or_default();
            for span in &scope_spans.spans {
                spans.push(ReceivedSpan {
                    trace_id: span.trace_id.clone(),
                    span_id: span.span_id.clone(),
                    parent_span_id: span.parent_span_id.clone(),
                    name: span.name.clone(),
                    kind: span.kind,
                    status_code: span.status.as_ref().map_or(0, |s| s.code),
                    attributes: attributes(&span.attributes),
                    resource: resource.clone(),
                    scope: scope.clone(),
                });
            }
        }
    }
    received.spans.lock().unwrap().extend(spans);
    received.requests.fetch_add(1, Ordering::SeqCst);
    (
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
        .into_response()
}

/// A collector that takes connections and never answers: what a hung or black-holed
/// collector looks like to the exporter.
pub struct SilentCollector {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl SilentCollector {
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (count, stopped) = (Arc::clone(&connections), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        held.push(stream);
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        });
        Self {
            addr,
            connections,
            stop,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections taken so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for SilentCollector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
