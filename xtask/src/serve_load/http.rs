//! One HTTP/1.1 exchange over a fresh loopback connection, as a load client makes it:
//! connect, send the request with `Connection: close`, read the answer to its end.
//! Blocking and dependency-free: the load generator runs one thread per client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long one exchange may take before it counts as an error (far over the 1.5 s a
/// `POST /runs` may take: a hung server shows as errors, not as a hung xtask).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// An answer: its status code and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// Sends `method path` with `body` (JSON, when given) to `addr` and reads the answer.
pub(crate) fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<Answer, String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|error| format!("connect: {error}"))?;
    stream
        .set_read_timeout(Some(TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(TIMEOUT)))
        .and_then(|()| stream.set_nodelay(true))
        .map_err(|error| format!("socket options: {error}"))?;
    stream
        .write_all(request(addr, method, path, body).as_bytes())
        .map_err(|error| format!("send: {error}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|error| format!("read: {error}"))?;
    parse(&raw)
}

/// The request's bytes.
fn request(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(body) = body {
        text.push_str("Content-Type: application/json\r\n");
        text.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        text.push_str(body);
    } else {
        text.push_str("\r\n");
    }
    text
}

/// Reads a whole answer (read until the server closed): the status line's code and
/// what follows the head (the server answers with `Content-Length`, not chunked, for
/// the JSON bodies read here).
fn parse(raw: &[u8]) -> Result<Answer, String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("an answer without a complete head ({} bytes)", raw.len()))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| {
            format!(
                "no status code in `{}`",
                head.lines().next().unwrap_or_default()
            )
        })?;
    Ok(Answer {
        status,
        body: body.to_owned(),
    })
}

/// The `run_id` of a `201` answer to `POST /runs`.
pub(crate) fn run_id(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    value.get("run_id")?.as_str().map(str::to_owned)
}

/// The `status` of a run (`GET /runs/{id}`).
pub(crate) fn run_status(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    value.get("status")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_with_a_body_has_its_length_and_type() {
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let text = request(addr, "POST", "/runs", Some("{\"a\":1}"));
        assert!(text.starts_with("POST /runs HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
        assert!(
            text.contains("Content-Length: 7\r\n\r\n{\"a\":1}"),
            "{text}"
        );
        assert!(text.contains("Connection: close\r\n"));
        let text = request(addr, "GET", "/agents", None);
        assert!(text.ends_with("Connection: close\r\n\r\n"), "{text}");
    }

    #[test]
    fn answers_are_read_and_bad_ones_named() {
        let answer =
            parse(b"HTTP/1.1 201 Created\r\ncontent-length: 9\r\n\r\n{\"a\":\"b\"}").unwrap();
        assert_eq!(answer.status, 201);
        assert_eq!(answer.body, "{\"a\":\"b\"}");
        assert!(parse(b"HTTP/1.1 201 Cre").unwrap_err().contains("head"));
        assert!(parse(b"garbage\r\n\r\n").unwrap_err().contains("garbage"));
        assert_eq!(
            run_id(r#"{"run_id":"run_1","status":"pending"}"#).as_deref(),
            Some("run_1")
        );
        assert_eq!(run_id("not json"), None);
        assert_eq!(
            run_status(r#"{"status":"completed"}"#).as_deref(),
            Some("completed")
        );
    }
}
