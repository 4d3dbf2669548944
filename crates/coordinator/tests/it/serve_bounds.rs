//! The attacks of issue 26 (5a) and issue 42 (12), over real TCP: clients without the
//! token that send half a request (or nothing) and hold the connection. Each is cut off
//! by the header, body or idle timeout; with the cap full, a new connection sheds the
//! oldest unauthenticated idle one (of the peer holding the most), so the token holder
//! is served at once; authenticated connections and requests in flight are never shed.

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

/// `short(cap)` with header, body and idle timers far longer than any test: only the
/// cap and shedding decide.
fn long_timers(cap: usize) -> CoordinatorConfig {
    CoordinatorConfig {
        header_read_timeout_ms: 60_000,
        body_read_timeout_ms: 60_000,
        idle_timeout_ms: 60_000,
        ..short(cap)
    }
}

#[tokio::test]
async fn a_full_cap_sheds_the_oldest_half_sent_request_for_the_token_holder() {
    const CAP: usize = 4;
    let server = served(long_timers(CAP)).await;
    // Half headers (no token yet, sheddable), a half body (the token sent, a request in
    // flight: never shed), alternately.
    let mut slow = Vec::new();
    for index in 0..CAP {
        let bytes = if index % 2 == 0 {
            HALF_HEADERS.to_owned()
        } else {
            half_body()
        };
        slow.push(slow_client(&server, &bytes).await);
    }
    let status = tokio::time::timeout(HANG, token_holder(&server))
        .await
        .unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        until_closed(&mut slow[0]).await,
        "",
        "the oldest half-sent headers are shed for the token holder"
    );
    for (index, stream) in slow.iter_mut().enumerate().skip(1) {
        assert!(!closed_now(stream).await, "slow client {index} was cut too");
    }
    // A request in flight ends when its client goes; then stopping waits for nothing.
    drop(slow);
    tokio::time::timeout(HANG, server.stop())
        .await
        .expect("shutdown waited for a half-sent request");
}

/// A connection of the token holder that was served one `GET /agents` and stays open
/// (keep-alive): authenticated, so never shed.
async fn served_keep_alive(server: &Served) -> TcpStream {
    let mut stream = TcpStream::connect(addr(server)).await.unwrap();
    let request =
        format!("GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    let complete = |received: &[u8]| {
        let text = String::from_utf8_lossy(received);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return false;
        };
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap();
        body.len() >= length
    };
    while !complete(&received) {
        let read = tokio::time::timeout(HANG, stream.read(&mut chunk))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(read, 0, "closed before the answer ended");
        received.extend_from_slice(&chunk[..read]);
    }
    assert!(received.starts_with(b"HTTP/1.1 200 OK"));
    stream
}

#[tokio::test]
async fn a_full_cap_of_authenticated_connections_keeps_the_next_one_waiting_until_one_ends() {
    let server = served(long_timers(2)).await;
    let first = served_keep_alive(&server).await;
    let second = served_keep_alive(&server).await;
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
    // Nothing to shed: both connections were authenticated.
    tokio::time::sleep(Duration::from_millis(300)).await;
    if holder.is_finished() {
        let answer = holder.await.unwrap();

        panic!("served past a full cap of authenticated connections: {answer:?}");
    }
    drop(first);
    let answer = tokio::time::timeout(HANG, holder).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    drop(second);
    tokio::time::timeout(HANG, server.stop())
        .await
        .expect("shutdown hung");
}

#[tokio::test]
async fn a_full_cap_of_half_sent_headers_keeps_no_one_waiting_and_stopping_does_not_wait() {
    let server = served(long_timers(2)).await;
    let _first = slow_client(&server, HALF_HEADERS).await;
    let _second = slow_client(&server, HALF_HEADERS).await;
    let status = tokio::time::timeout(HANG, token_holder(&server))
        .await
        .unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    // Stopping does not wait for the slow client still holding a connection.
    tokio::time::timeout(HANG, server.stop())
        .await
        .expect("shutdown waited for a half-sent request");
}

/// A connection to `server` from the loopback address `source` (Linux routes all of
/// 127.0.0.0/8 to `lo`): another peer.
#[cfg(target_os = "linux")]
async fn connect_from(server: &Served, source: [u8; 4], bytes: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(std::net::SocketAddr::from((source, 0)))
        .unwrap();
    let mut stream = socket.connect(addr(server).parse().unwrap()).await.unwrap();
    stream.write_all(bytes.as_bytes()).await.unwrap();
    stream
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_flood_from_one_peer_sheds_its_own_connections_not_another_peer_s() {
    let server = served(long_timers(3)).await;
    // Another peer's client, oldest of all, still sending its headers. Its grace ends
    // first (the flood comes a moment later): the flood's next connection must wait
    // for the flood's own grace, not shed this one.
    let mut other = connect_from(&server, [127, 0, 0, 1], HALF_HEADERS).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut flood = Vec::new();
    for _ in 0..2 {
        flood.push(connect_from(&server, [127, 0, 0, 2], HALF_HEADERS).await);
    }
    // The cap is full; the flood's next connection displaces its own oldest.
    flood.push(connect_from(&server, [127, 0, 0, 2], "").await);
    assert_eq!(until_closed(&mut flood[0]).await, "", "the flood's oldest");
    assert!(
        !closed_now(&mut other).await,
        "another peer's connection was shed"
    );
    for stream in flood.iter_mut().skip(1) {
        assert!(!closed_now(stream).await);
    }
    // The other peer finishes its request, with the token: served.
    let rest = format!("1\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n");
    other.write_all(rest.as_bytes()).await.unwrap();
    let answer = until_closed(&mut other).await;
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    drop(flood);
    tokio::time::timeout(HANG, server.stop())
        .await
        .expect("shutdown hung");
}
