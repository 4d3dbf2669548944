//! The 20-turn scenario's server, from a real HTTP client and as the `scenario_server`
//! binary: each reply in the form its request asks for, and when it was asked and how
//! long answering took.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxydra_test_support::{MockServer, Reply, file_read_scenario, monotonic_now, openai};

async fn post(url: String, body: &str) -> reqwest::Response {
    oxydra_http::client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_request_for_a_stream_gets_one_and_any_other_a_whole_reply() {
    let server = file_read_scenario::server().unwrap();
    let url = || format!("{}/chat/completions", server.openai_url());
    let streamed = post(url(), r#"{"stream":true}"#).await;
    assert_eq!(streamed.headers()["content-type"], "text/event-stream");
    let text = streamed.text().await.unwrap();
    assert!(text.contains("call_0_7"), "{text}");
    // The OpenAI default: no `stream` is a whole reply; the script goes on.
    for (turn, body) in [(1, r#"{"stream":false}"#), (2, "{}")] {
        let whole = post(url(), body).await;
        assert_eq!(whole.headers()["content-type"], "application/json");
        let json: serde_json::Value = whole.json().await.unwrap();
        let calls = json["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap();
        assert_eq!(calls[0]["id"], format!("call_{turn}_0"));
    }
    for _ in 3..file_read_scenario::REQUESTS {
        assert_eq!(post(url(), "{}").await.status(), 200);
    }
    let past = post(url(), "{}").await;
    assert_eq!(past.status(), 500);
    assert!(past.text().await.unwrap().contains("script exhausted"));
    assert_eq!(server.hits(), file_read_scenario::REQUESTS + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_arrival_is_on_the_shared_clock_and_answering_lasts_until_the_body_ends() {
    let (held, release) = openai::text("Hello!").held_at(10);
    let server = MockServer::start(vec![held, Reply::json(200, "{}")]).unwrap();
    assert_eq!(server.serve_times().first_request, None);
    let before = monotonic_now().unwrap();
    let pending = tokio::spawn(post(server.openai_url(), "{}"));
    assert!(server.wait_for_requests(1, Duration::from_secs(10)));
    let seen = Instant::now();
    let after = monotonic_now().unwrap();
    let first = server.serve_times().first_request.unwrap();
    assert!(
        before <= first && first <= after,
        "{before:?} {first:?} {after:?}"
    );
    // The body is held: its request is still being answered and counts nothing yet.
    assert_eq!(server.serve_times().answering, Duration::ZERO);
    let held_for = seen.elapsed();
    release.release();
    let text = pending.await.unwrap().text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    assert!(server.wait_idle_async(Duration::from_secs(10)).await);
    let one = server.serve_times().answering;
    assert!(one >= held_for, "{one:?} < {held_for:?}");
    // A whole reply adds its own time; the first arrival stays.
    post(server.openai_url(), "{}").await;
    let times = server.serve_times();
    assert!(times.answering > one);
    assert_eq!(times.first_request, Some(first));
}

/// Reads the server's URL line, then makes `requests` requests.
fn serve_and_ask(requests: usize) -> (std::process::Output, Vec<String>) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_scenario_server"))
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    let mut url = String::new();
    stdout.read_line(&mut url).unwrap();
    let url = format!("{}/chat/completions", url.trim());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for _ in 0..requests {
            post(url.clone(), r#"{"stream":true}"#)
                .await
                .text()
                .await
                .unwrap();
        }
    });
    server.stdin.take().unwrap().write_all(b"\n").unwrap();
    let lines: Vec<String> = stdout.lines().map(Result::unwrap).collect();
    (server.wait_with_output().unwrap(), lines)
}

#[test]
fn the_binary_reports_what_it_served_and_when() {
    let before = monotonic_now().unwrap();
    let (output, lines) = serve_and_ask(file_read_scenario::REQUESTS);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(lines[0], "requests 21 of 21");
    let timing: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(timing[0], "timing", "{lines:?}");
    let first: u128 = timing[1].parse().unwrap();
    assert!(first >= before.as_nanos());
    let answering: u128 = timing[2].parse().unwrap();
    assert!(answering > 0);
}

#[test]
fn a_short_run_fails_the_server_and_an_unasked_one_has_no_first_request() {
    let (output, lines) = serve_and_ask(0);
    assert!(!output.status.success());
    assert_eq!(lines, ["requests 0 of 21", "timing - 0"]);
    assert!(String::from_utf8_lossy(&output.stderr).contains("served 0 of the scenario's 21"));
}
