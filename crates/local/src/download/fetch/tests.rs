//! The download against a local HTTP server that behaves like the hub: a redirect
//! carrying `X-Linked-Etag`/`X-Linked-Size`, then a CDN that honours `Range`.

use std::sync::Arc;

use oxydra_test_support::{MockServer, RecordedRequest, Reply};
use sha2::{Digest, Sha256};

use super::*;
use crate::download::NoProgress;

fn model_bytes() -> Vec<u8> {
    (0..200_000u32).map(|i| (i % 251) as u8).collect()
}

fn sha_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The hub: `/o/r/resolve/main/m.gguf` redirects to `/cdn/m.gguf`, announcing
/// `etag` and `size`; the CDN serves `body`, with ranges unless `ranges` is false.
fn hub(body: Vec<u8>, etag: String, size: usize, ranges: bool) -> MockServer {
    let body = Arc::new(body);
    MockServer::builder()
        .respond_with(move |request: &RecordedRequest| {
            if request.path == "/o/r/resolve/main/m.gguf" {
                return Reply::redirect("/cdn/m.gguf")
                    .header("x-linked-etag", &format!("\"{etag}\""))
                    .header("x-linked-size", &size.to_string());
            }
            if request.path != "/cdn/m.gguf" {
                return Reply::new(404);
            }
            let start = request
                .header("range")
                .filter(|_| ranges)
                .and_then(|r| r.strip_prefix("bytes="))
                .and_then(|r| r.strip_suffix('-'))
                .and_then(|r| r.parse::<usize>().ok());
            match start {
                Some(start) if start >= body.len() => Reply::new(416),
                Some(start) => Reply::new(206)
                    .header(
                        "content-range",
                        &format!("bytes {start}-{}/{}", body.len() - 1, body.len()),
                    )
                    .body(body[start..].to_vec()),
                None => Reply::new(200).body(body.to_vec()),
            }
        })
        .start()
        .unwrap()
}

fn url(server: &MockServer) -> String {
    format!("http://{}/o/r/resolve/main/m.gguf", server.addr())
}

#[tokio::test]
async fn downloads_through_the_redirect_and_checks_the_sha() {
    let bytes = model_bytes();
    let server = hub(bytes.clone(), sha_hex(&bytes), bytes.len(), true);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("hf/o/r/m.gguf");
    download(&url(&server), &target, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), bytes);
    assert!(!part_path(&target).exists());
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.header("range").is_none())
    );
}

#[tokio::test]
async fn an_interrupted_download_resumes_with_a_range_request() {
    let bytes = model_bytes();
    let server = hub(bytes.clone(), sha_hex(&bytes), bytes.len(), true);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("m.gguf");
    std::fs::write(part_path(&target), &bytes[..70_000]).unwrap();
    download(&url(&server), &target, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), bytes);
    let cdn = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/cdn/m.gguf")
        .unwrap();
    assert_eq!(cdn.header("range"), Some("bytes=70000-"));
}

#[tokio::test]
async fn a_server_that_ignores_the_range_restarts_the_file() {
    let bytes = model_bytes();
    let server = hub(bytes.clone(), sha_hex(&bytes), bytes.len(), false);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("m.gguf");
    std::fs::write(part_path(&target), b"stale bytes from elsewhere").unwrap();
    download(&url(&server), &target, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), bytes);
}

#[tokio::test]
async fn a_corrupt_download_is_deleted_and_reported() {
    let bytes = model_bytes();
    let server = hub(bytes.clone(), sha_hex(b"something else"), bytes.len(), true);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("m.gguf");
    let error = download(&url(&server), &target, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(
        matches!(error, LocalError::DownloadCorrupt { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("sha256"), "{error}");
    assert!(!target.exists());
    assert!(!part_path(&target).exists());
}

#[tokio::test]
async fn a_corrupt_resume_is_caught_by_the_sha() {
    // The part file on disk does not match the start of the real file.
    let bytes = model_bytes();
    let server = hub(bytes.clone(), sha_hex(&bytes), bytes.len(), true);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("m.gguf");
    std::fs::write(part_path(&target), vec![0u8; 50_000]).unwrap();
    let error = download(&url(&server), &target, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(
        matches!(error, LocalError::DownloadCorrupt { .. }),
        "{error}"
    );
    assert!(!part_path(&target).exists());
    // The next try starts afresh and succeeds.
    download(&url(&server), &target, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), bytes);
}

#[tokio::test]
async fn a_short_body_keeps_the_part_for_a_resume() {
    let bytes = model_bytes();
    // The hub announces more than the CDN sends: the transfer was cut.
    let server = hub(bytes.clone(), sha_hex(&bytes), bytes.len() + 10, true);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("m.gguf");
    let error = download(&url(&server), &target, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(
        matches!(error, LocalError::DownloadTransfer { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("resume"), "{error}");
    assert!(!target.exists());
    assert_eq!(
        std::fs::metadata(part_path(&target)).unwrap().len(),
        bytes.len() as u64
    );
}

#[tokio::test]
async fn an_error_status_is_reported_with_the_url() {
    let server = MockServer::builder()
        .respond_with(|_: &RecordedRequest| Reply::new(404))
        .start()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("m.gguf");
    let error = download(&url(&server), &target, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(
        matches!(error, LocalError::DownloadStatus { status: 404, .. }),
        "{error}"
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn endless_redirects_stop() {
    let server = MockServer::builder()
        .respond_with(|_: &RecordedRequest| Reply::redirect("/again"))
        .start()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let error = download(&url(&server), &dir.path().join("m.gguf"), &mut NoProgress)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("redirect"), "{error}");
}

#[test]
fn etags_give_a_sha_only_when_they_are_one() {
    let sha = "a".repeat(64);
    assert_eq!(sha256_of_etag(&format!("\"{sha}\"")), Some(sha.clone()));
    assert_eq!(
        sha256_of_etag(&format!("W/\"{}\"", sha.to_uppercase())),
        Some(sha)
    );
    assert_eq!(sha256_of_etag("\"abc123\""), None);
    assert_eq!(sha256_of_etag(&"g".repeat(64)), None);
}
