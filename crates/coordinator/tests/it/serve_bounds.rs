//! The attack of issue 26 (5a), over real TCP: clients without the token that send
//! half a request and hold the connection. Each is cut off by the header or body
//! timeout, the connection cap holds, and the token holder is served once the slow
//! clients are gone.

use crate::support;

use std::time::Duration;

use oxydra_coordinator::{Coordinator, CoordinatorConfig, RunnerDeps};
use serde_json::json;
use support::{Served, registry, standard_blueprints};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "s3cret-serve-token";

/// Far longer than any timer of these tests: a read that takes this long is a hang.
const HANG: Duration = Duration::from_secs(10);

async fn served(config: CoordinatorConfig) -> Served {
    let deps = RunnerDeps::new(registry(vec![]), ".");
    Served::start(
        Coordinator::new(config, standard_blueprints(), deps)
            .await
            .unwrap(),
    )
    .await
}

fn short(max_connections: usize) -> CoordinatorConfig {
    CoordinatorConfig {
        auth_token: Some(TOKEN.into()),
        max_connections,
        header_read_timeout_ms: 300,
        body_read_timeout_ms: 300,
        idle_timeout_ms: 300,
        ..CoordinatorConfig::default()
    }
}

fn addr(server: &Served) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

/// A connection that sent `bytes` and then nothing more.
async fn slow_client(server: &Served, bytes: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr(server)).await.unwrap();
    stream.write_all(bytes.as_bytes()).await.unwrap();
    stream
}

/// Everything the server sends until it closes the connection (a hang fails).
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    tokio::time::timeout(HANG, stream.read_to_end(&mut received))
        .await
        .expect("the server never closed the connection")
        .ok();
    String::from_utf8_lossy(&received).into_owned()
}

/// Whether the server has answered or closed `stream` already: a read that does not
/// wait (a close is delivered on loopback before the server takes its next step).
async fn closed_now(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 64];
    tokio::time::timeout(Duration::from_millis(50), stream.read(&mut byte))
        .await
        .is_ok()
}

/// The token holder's `GET /agents`, on a fresh connection: its status line.
async fn token_holder(server: &Served) -> String {
    let mut stream = TcpStream::connect(addr(server)).await.unwrap();
    let request = format!(
        "GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let answer = until_closed(&mut stream).await;
    answer.lines().next().unwrap_or_default().to_owned()
}

const HALF_HEADERS: &str = "GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";

fn half_body() -> String {
    let body = json!({"agent_name": "web-crawler", "parameters": {"url": "https://example.com"}})
        .to_string();
    format!(
        "POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        body.len(),
        &body[..body.len() / 2]
    )
}

#[tokio::test]
async fn a_client_that_sends_half_the_headers_is_cut_off() {
    let server = served(short(16)).await;
    let mut slow = slow_client(&server, HALF_HEADERS).await;
    let answer = until_closed(&mut slow).await;
    assert!(!answer.contains("200 OK"), "{answer}");
    // The server still serves.
    assert_eq!(token_holder(&server).await, "HTTP/1.1 200 OK");
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_sends_half_the_body_is_answered_408_and_cut_off() {
    let server = served(short(16)).await;
    let mut slow = slow_client(&server, &half_body()).await;
    let answer = until_closed(&mut slow).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"request_timeout\""), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_when_idle() {
    let server = served(short(16)).await;
    let mut silent = TcpStream::connect(addr(&server)).await.unwrap();
    assert_eq!(until_closed(&mut silent).await, "");
    server.stop().await;
}

#[tokio::test]
async fn the_cap_holds_and_the_token_holder_is_served_once_slow_clients_are_cut_off() {
    const CAP: usize = 4;
    let server = served(short(CAP)).await;
    let mut slow = Vec::new();
    for index in 0..CAP {
        let bytes = if index % 2 == 0 {
            HALF_HEADERS.to_owned()
        } else {
            half_body()
        };
        slow.push(slow_client(&server, &bytes).await);
    }
    let status = token_holder(&server).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    // The holder was served only after a slow client had been cut off: with the cap
    // full no fifth connection is taken.
    let mut any_closed = false;
    for stream in &mut slow {
        any_closed |= closed_now(stream).await;
    }
    assert!(
        any_closed,
        "the token holder was served while the cap was full of slow clients"
    );
    for stream in &mut slow {
        until_closed(stream).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn a_full_cap_keeps_the_next_connection_waiting_until_one_ends() {
    // Timers far longer than the test: only the cap decides.
    let config = CoordinatorConfig {
        header_read_timeout_ms: 60_000,
        idle_timeout_ms: 60_000,
        ..short(2)
    };
    let server = served(config).await;
    let first = slow_client(&server, HALF_HEADERS).await;
    let _second = slow_client(&server, HALF_HEADERS).await;
    let holder = tokio::spawn({
        let base = server.base.clone();
        async move {
            let mut stream = TcpStream::connect(base.trim_start_matches("http://"))
                .await
                .unwrap();
            let request = format!(
                "GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Connection: close\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            until_closed(&mut stream).await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!holder.is_finished(), "served past a full cap");
    drop(first);
    let answer = tokio::time::timeout(HANG, holder).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    // Stopping does not wait for the slow client still holding a connection.
    tokio::time::timeout(HANG, server.stop())
        .await
        .expect("shutdown waited for a half-sent request");
}
