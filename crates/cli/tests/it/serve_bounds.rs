//! `oxydra serve` against clients without the token that send half a request and hold
//! the connection (issue 26, 5a), with the `[serve]` bounds set short: they are cut
//! off, the connection cap holds, and the token holder is served.

use crate::common;

use std::time::Duration;

use common::serve::{CONFIG, Server, runtime, sandbox_with_config, sandbox_with_invalid_config};
use common::stderr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "bounds-s3cret";

/// Far longer than the timers: a read that takes this long is a hang.
const HANG: Duration = Duration::from_secs(10);

async fn until_closed(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    tokio::time::timeout(HANG, stream.read_to_end(&mut received))
        .await
        .expect("the server never closed the connection")
        .ok();
    String::from_utf8_lossy(&received).into_owned()
}

#[test]
fn half_sent_requests_are_cut_off_and_the_token_holder_is_served() {
    let config = format!(
        "[serve]\nmax_connections = 3\nheader_read_timeout_ms = 300\n\
         body_read_timeout_ms = 300\nidle_timeout_ms = 300\n{CONFIG}"
    );
    let sandbox = sandbox_with_config(&config);
    let server = Server::start_with(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", TOKEN)],
        &["--addr", "127.0.0.1:0"],
    );
    let addr = server.base.trim_start_matches("http://").to_owned();
    runtime().block_on(async {
        let mut slow = Vec::new();
        for _ in 0..3 {
            let mut stream = TcpStream::connect(&addr).await.unwrap();
            stream
                .write_all(b"GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                .await
                .unwrap();
            slow.push(stream);
        }
        let mut holder = TcpStream::connect(&addr).await.unwrap();
        let request = format!(
            "GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
             Connection: close\r\n\r\n"
        );
        holder.write_all(request.as_bytes()).await.unwrap();
        let answer = until_closed(&mut holder).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.contains("researcher"), "{answer}");
        for stream in &mut slow {
            let cut = until_closed(stream).await;
            assert!(!cut.contains("200 OK"), "{cut}");
        }
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn a_zero_bound_is_a_config_error_naming_the_key() {
    for key in [
        "max_connections",
        "header_read_timeout_ms",
        "body_read_timeout_ms",
        "idle_timeout_ms",
    ] {
        let sandbox = sandbox_with_invalid_config(&format!("[serve]\n{key} = 0\n"));
        let output = sandbox.command().args(["agents", "list"]).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{key}");
        assert!(
            stderr(&output).contains(&format!("serve.{key}")),
            "{}",
            stderr(&output)
        );
    }
}
