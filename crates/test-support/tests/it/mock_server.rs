//! The mock provider server, from a real HTTP client: scripts, strictness, delivery
//! (pieces, held, hanging, endless), recording and counters.

use std::io::Write;
use std::time::Duration;

use oxydra_test_support::{MockServer, Reply, anthropic, openai};
use serde_json::json;

const PATIENCE: Duration = Duration::from_secs(10);

async fn post(url: String, body: &str) -> reqwest::Response {
    oxydra_http::client()
        .post(url)
        .header("authorization", "Bearer sk-test")
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn replies_come_in_script_order_and_every_request_is_recorded() {
    let server = MockServer::start(vec![
        Reply::json(429, "{}").header("retry-after", "7"),
        openai::text("Hello!"),
    ])
    .unwrap();
    let first = post(server.url("/v1/chat/completions?x=1"), r#"{"model":"m"}"#).await;
    assert_eq!(first.status(), 429);
    assert_eq!(first.headers()["retry-after"], "7");
    assert_eq!(first.headers()["content-length"], "2");
    let second = post(server.openai_url(), "not json").await;
    assert_eq!(second.status(), 200);
    assert_eq!(second.headers()["content-type"], "text/event-stream");
    assert!(second.headers().get("content-length").is_none());
    let text = second.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");

    // Past the script: a 500 the failing test shows.
    let third = post(server.openai_url(), "{}").await;
    assert_eq!(third.status(), 500);
    assert!(third.text().await.unwrap().contains("script exhausted"));

    assert_eq!(server.hits(), 3);
    assert_eq!(server.remaining(), 0);
    let requests = server.requests();
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].query.as_deref(), Some("x=1"));
    assert_eq!(requests[0].authorization(), Some("Bearer sk-test"));
    assert_eq!(requests[0].api_key(), None);
    assert_eq!(requests[0].body, json!({"model": "m"}));
    assert_eq!(requests[1].body, serde_json::Value::Null);
    assert_eq!(requests[1].raw_body, b"not json");
    assert!(server.wait_for_requests(3, Duration::ZERO));
    assert!(!server.wait_for_requests(4, Duration::from_millis(1)));
}

#[tokio::test]
async fn a_repeating_server_answers_with_its_last_reply() {
    let server = MockServer::repeating(vec![Reply::json(503, "busy")]).unwrap();
    for _ in 0..3 {
        assert_eq!(post(server.url("/"), "{}").await.status(), 503);
    }
    assert_eq!(server.hits(), 3);
}

/// The attack on the test itself: a client that posts to the wrong place or sends a
/// body that is not JSON must not get a scripted success, as with the real API.
#[tokio::test]
async fn a_strict_route_refuses_other_paths_methods_content_types_and_bodies() {
    let server = MockServer::builder()
        .only("POST", anthropic::MESSAGES_PATH)
        .replies(vec![anthropic::text("Hi.")])
        .start()
        .unwrap();
    let wrong_path = post(server.url("/v1/chat/completions"), "{}").await;
    assert_eq!(wrong_path.status(), 404);
    assert!(
        wrong_path
            .text()
            .await
            .unwrap()
            .contains("no route for POST")
    );
    let wrong_method = oxydra_http::client()
        .get(server.url("/v1/messages"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_method.status(), 404);
    let not_declared = oxydra_http::client()
        .post(server.url("/v1/messages"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(not_declared.status(), 415);
    let not_json = post(server.url("/v1/messages"), "{broken").await;
    assert_eq!(not_json.status(), 400);
    assert!(
        not_json
            .text()
            .await
            .unwrap()
            .contains("invalid_request_error")
    );
    assert_eq!(server.remaining(), 1, "a refused request uses no reply");
    let good = post(server.url("/v1/messages"), "{}").await;
    assert_eq!(good.status(), 200);
    assert!(good.text().await.unwrap().contains("event: message_stop"));
    assert_eq!(server.hits(), 5);
}

#[tokio::test]
async fn a_responder_computes_each_answer_from_the_request() {
    let server = MockServer::builder()
        .respond_with(|request| match request.path.as_str() {
            "/echo" => Reply::json(200, request.raw_body.clone()),
            "/away" => Reply::redirect("/echo"),
            _ => Reply::new(404).body("no such page"),
        })
        .start()
        .unwrap();
    let echoed = post(server.url("/echo"), r#"{"n":1}"#).await;
    assert_eq!(echoed.text().await.unwrap(), r#"{"n":1}"#);
    let missing = oxydra_http::client()
        .get(server.url("/nowhere"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let client = oxydra_http::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let moved = client.get(server.url("/away")).send().await.unwrap();
    assert_eq!(moved.status(), 302);
    assert_eq!(moved.headers()["location"], "/echo");
}

#[tokio::test]
async fn a_chunked_body_arrives_whole() {
    let body = "data: 0123456789\n\n".repeat(50);
    let server = MockServer::start(vec![Reply::sse(body.clone()).chunked(7)]).unwrap();
    let text = post(server.url("/"), "{}").await.text().await.unwrap();
    assert_eq!(text, body);
    assert!(server.wait_idle_async(PATIENCE).await);
    assert_eq!(server.bytes_sent(), body.len());
}

/// Each piece goes out as its own HTTP chunk: the framing shows the sizes.
#[test]
fn a_chunked_body_goes_out_in_pieces_of_the_given_size() {
    let raw = String::from_utf8(raw_response(&Reply::sse("abcdefghij").chunked(3))).unwrap();
    let body = &raw[raw.find("\r\n\r\n").unwrap() + 4..];
    assert_eq!(
        body,
        "3\r\nabc\r\n3\r\ndef\r\n3\r\nghi\r\n1\r\nj\r\n0\r\n\r\n"
    );
}

#[tokio::test]
async fn a_held_body_stops_until_the_test_releases_it() {
    let body = "0123456789abcdef";
    let (reply, release) = Reply::new(200)
        .header("content-length", &body.len().to_string())
        .body(body)
        .held_at(10);
    let server = MockServer::start(vec![reply]).unwrap();
    let mut response = post(server.url("/"), "{}").await;
    let mut got = Vec::new();
    while got.len() < 10 {
        got.extend_from_slice(&response.chunk().await.unwrap().unwrap());
    }
    assert_eq!(got, b"0123456789");
    // Nothing past the hold point was even produced.
    assert_eq!(server.bytes_sent(), 10);
    assert!(!server.wait_idle(Duration::ZERO));
    release.release();
    while let Some(chunk) = response.chunk().await.unwrap() {
        got.extend_from_slice(&chunk);
    }
    assert_eq!(got, body.as_bytes());
    assert!(server.wait_idle_async(PATIENCE).await);
}

#[tokio::test]
async fn a_hanging_body_stays_open_until_the_client_hangs_up() {
    let server = MockServer::start(vec![openai::hold_after_text("Working on it")]).unwrap();
    let mut response = post(server.openai_url(), "{}").await;
    let mut got = Vec::new();
    while !String::from_utf8_lossy(&got).contains("Working on it") {
        got.extend_from_slice(&response.chunk().await.unwrap().unwrap());
    }
    assert!(!server.wait_idle(Duration::ZERO), "the stream ended");
    drop(response);
    assert!(server.wait_idle_async(PATIENCE).await);
}

/// The attack a hostile provider makes: a body without end. The server generates it
/// as it goes and counts what it handed on, so a test can bound what a client read.
#[tokio::test]
async fn an_endless_body_stops_when_the_client_hangs_up() {
    let limit = 200 * 1024 * 1024;
    let server = MockServer::start(vec![
        Reply::sse("data: start\n\n").endless("x".repeat(4096), limit),
    ])
    .unwrap();
    let mut response = post(server.url("/"), "{}").await;
    let mut read = 0;
    while read < 1024 * 1024 {
        read += response.chunk().await.unwrap().unwrap().len();
    }
    drop(response);
    assert!(server.wait_idle_async(PATIENCE).await);
    let sent = server.bytes_sent();
    assert!(sent >= read, "{sent} < {read}");
    assert!(sent < 16 * 1024 * 1024, "{sent} bytes went out");
}

#[tokio::test]
async fn a_small_endless_limit_ends_the_body() {
    let server = MockServer::start(vec![Reply::sse("h").endless("ab", 6)]).unwrap();
    let text = post(server.url("/"), "{}").await.text().await.unwrap();
    assert_eq!(text, "hababab");
}

#[test]
fn connections_count_even_without_a_request() {
    let server = MockServer::start(vec![Reply::json(200, "{}")]).unwrap();
    let silent = std::net::TcpStream::connect(server.addr()).unwrap();
    let mut talker = std::net::TcpStream::connect(server.addr()).unwrap();
    write!(
        talker,
        "GET / HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
        server.addr()
    )
    .unwrap();
    assert!(server.wait_for_requests(1, PATIENCE));
    // Connections are accepted in order: the silent one was accepted first.
    assert_eq!(server.connections(), 2);
    assert_eq!(server.hits(), 1);
    drop(silent);
}

#[tokio::test]
async fn a_bad_scripted_header_fails_loudly() {
    let server = MockServer::start(vec![Reply::json(200, "{}").header("bad name", "x")]).unwrap();
    assert_eq!(post(server.url("/"), "{}").await.status(), 500);
}

#[test]
fn scripted_turns_are_well_formed_streams() {
    let text = String::from_utf8(raw_response(&openai::text("héllo wörld"))).unwrap();
    assert!(text.contains(r#""content":"héllo""#), "{text}");
    let calls = String::from_utf8(raw_response(&openai::tool_calls(&[(
        "c1",
        "file_read",
        r#"{"path":"ü.md"}"#,
    )])))
    .unwrap();
    assert!(calls.contains(r#""finish_reason":"tool_calls""#));
    let uses = String::from_utf8(raw_response(&anthropic::tool_uses(&[(
        "t1",
        "f",
        r#"{"a":1}"#,
    )])))
    .unwrap();
    assert!(uses.contains(r#""stop_reason":"tool_use""#));
}

/// The body a reply sends, through a real server.
fn raw_response(reply: &Reply) -> Vec<u8> {
    let server = MockServer::start(vec![reply.clone()]).unwrap();
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    write!(
        stream,
        "POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
    )
    .unwrap();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut stream, &mut raw).unwrap();
    raw
}
