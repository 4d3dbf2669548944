//! `oxydra serve` against clients without the token that send half a request and hold
//! the connection (issue 26, 5a), with the `[serve]` bounds set short: they are cut
//! off, the connection cap holds, and the token holder is served. And the same flood
//! past the file limit (issue 42, attack 12): the cap fits the limit, and the token
//! holder is served while the flood is held open.

use crate::common;

use std::time::{Duration, Instant};

use common::serve::{CONFIG, Server, runtime, sandbox_with_config, sandbox_with_invalid_config};
use common::stderr;
use nix::sys::resource::{Resource, getrlimit, setrlimit};
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

/// The token holder's `GET /agents` on a fresh connection, answered within `guard`
/// (a failure guard, not a wait): the whole answer.
async fn token_holder(addr: &str, guard: Duration) -> String {
    let exchange = async {
        let mut holder = TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
             Connection: close\r\n\r\n"
        );
        holder.write_all(request.as_bytes()).await.unwrap();
        let mut received = Vec::new();
        holder.read_to_end(&mut received).await.ok();
        String::from_utf8_lossy(&received).into_owned()
    };
    tokio::time::timeout(guard, exchange)
        .await
        .expect("the token holder was not answered while the flood was held")
}

/// The cap `oxydra serve` says it serves: `at most N connections at once …`.
fn said_cap(line: &str) -> usize {
    line.split("at most ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|cap| cap.parse().ok())
        .unwrap_or_else(|| panic!("no cap in {line:?}"))
}

#[test]
fn a_flood_past_the_file_limit_does_not_lock_the_token_holder_out() {
    // `ulimit -n 256` (soft and hard, as in many containers) and the default bounds:
    // 256 connections configured, headers within 10 s, idle for 60 s.
    const LIMIT: u64 = 256;
    const FLOOD: usize = 300;
    // This process holds the flood: its own soft limit as high as its hard one allows.
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).ok();
    }
    let sandbox = sandbox_with_config(CONFIG);
    let server = Server::start_under_file_limit(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", TOKEN)],
        &["--addr", "127.0.0.1:0"],
        LIMIT,
        LIMIT,
    );
    let line = server.line_with("connections at once");
    let cap = said_cap(&line);
    assert!(
        u64::try_from(cap).unwrap() < LIMIT,
        "the cap does not fit the file limit: {line}"
    );
    assert!(line.contains("file limit 256"), "{line}");
    assert!(
        line.contains("lowered from max_connections = 256"),
        "{line}"
    );
    let addr = server.base.trim_start_matches("http://").to_owned();
    runtime().block_on(async {
        // More half-open connections than the server has descriptors, none with the
        // token: every other one sends half its headers, the rest nothing at all.
        let mut flood = Vec::with_capacity(FLOOD);
        for index in 0..FLOOD {
            let mut stream = TcpStream::connect(&addr).await.unwrap();
            if index % 2 == 0 {
                stream
                    .write_all(b"GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                    .await
                    .unwrap();
            }
            flood.push(stream);
        }
        // Answered while every flood connection is still held by its client, and long
        // before the header timeout (10 s) could have freed one.
        let started = Instant::now();
        let answer = token_holder(&addr, Duration::from_secs(5)).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.contains("researcher"), "{answer}");
        assert!(started.elapsed() < Duration::from_secs(5));
        // And again: the server still takes connections.
        let again = token_holder(&addr, Duration::from_secs(5)).await;
        assert!(again.starts_with("HTTP/1.1 200 OK"), "{again}");
        drop(flood);
    });
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn serve_raises_the_soft_file_limit_to_the_hard_one_and_says_the_cap() {
    // A hard limit of 4096 (or this process's own, should that be lower: only root may
    // raise it), with room for the 256 connections configured.
    let (_, own_hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let hard = own_hard.min(4096);
    assert!(
        hard >= 1024,
        "this test needs a hard file limit of 1024 at least"
    );
    let sandbox = sandbox_with_config(CONFIG);
    let server = Server::start_under_file_limit(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", TOKEN)],
        &["--addr", "127.0.0.1:0"],
        256,
        hard,
    );
    let line = server.line_with("connections at once");
    assert!(
        line.contains(&format!("file limit {hard}, raised from 256")),
        "{line}"
    );
    assert_eq!(said_cap(&line), 256, "{line}");
    #[cfg(target_os = "linux")]
    {
        let limits =
            std::fs::read_to_string(format!("/proc/{}/limits", server.child.id())).unwrap();
        let open_files = limits
            .lines()
            .find(|line| line.starts_with("Max open files"))
            .unwrap();
        assert_eq!(
            open_files.split_whitespace().collect::<Vec<_>>(),
            [
                "Max",
                "open",
                "files",
                &*hard.to_string(),
                &*hard.to_string(),
                "files"
            ],
            "{limits}"
        );
    }
    // Served (and SIGTERM's handler is in place once it answers).
    let addr = server.base.trim_start_matches("http://").to_owned();
    let answer = runtime().block_on(token_holder(&addr, Duration::from_secs(5)));
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    let (code, rest) = server.terminate();
    assert_eq!(code, Some(0), "{rest}");
}
