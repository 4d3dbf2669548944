//! A web page the user visits attacks the API on 127.0.0.1: a cross-site "simple"
//! request (`text/plain`, a form) that needs no CORS preflight, a DNS-rebinding page
//! whose requests carry its own `Host`, a foreign `Origin`. Each is refused before any
//! run is created, and the counting executor proves none ran.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use oxydra_coordinator::{
    Coordinator, CoordinatorConfig, RunError, RunExecutor, RunOutcome, RunRequest,
};
use serde_json::json;
use support::{Served, standard_blueprints};

/// Counts the runs it executes; each completes at once.
struct Counting(Arc<AtomicUsize>);

#[async_trait]
impl RunExecutor for Counting {
    async fn execute(&self, _run: RunRequest) -> Result<RunOutcome, RunError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"output": "done"}).into())
    }
}

async fn counted(config: CoordinatorConfig) -> (Served, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let executor = Arc::new(Counting(Arc::clone(&count)));
    let coordinator = Coordinator::with_executor(config, standard_blueprints(), move |_| {
        executor as Arc<dyn RunExecutor>
    })
    .await
    .unwrap();
    (Served::start(coordinator).await, count)
}

const RUN: &str = r#"{"agent_name": "researcher", "parameters": {"prompt": "rm -rf ~"}}"#;

/// Starts one legitimate run and waits for it: afterwards the counter holds every run
/// that was ever executed, the refused ones included had they been created.
async fn one_legitimate_run(server: &Served, count: &AtomicUsize, expected_before: usize) {
    assert_eq!(count.load(Ordering::SeqCst), expected_before);
    let (status, created) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": "hi"}}))
        .await;
    assert_eq!(status, 201, "{created}");
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(count.load(Ordering::SeqCst), expected_before + 1);
}

#[tokio::test]
async fn a_cross_site_text_plain_or_form_post_is_415_and_creates_no_run() {
    let (server, count) = counted(CoordinatorConfig::default()).await;
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut request = server.client.post(server.url("/runs")).body(RUN);
        if let Some(value) = content_type {
            request = request.header("content-type", value);
        }
        let (status, body) = server.send(request).await;
        assert_eq!(status, 415, "{content_type:?}: {body}");
        assert_eq!(body["error"], "unsupported_media_type");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("application/json"),
            "{body}"
        );
    }
    // The 415 comes before the body is read: an oversized or broken body changes nothing.
    let (status, _) = server
        .send(
            server
                .client
                .post(server.url("/runs"))
                .header("content-type", "text/plain")
                .body("{not json"),
        )
        .await;
    assert_eq!(status, 415);
    // Only the JSON run below was ever created and executed.
    one_legitimate_run(&server, &count, 0).await;
    server.stop().await;
}

#[tokio::test]
async fn a_dns_rebinding_host_is_refused_on_every_route() {
    let (server, count) = counted(CoordinatorConfig::default()).await;
    let (_, created) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": "x"}}))
        .await;
    let run_id = created["run_id"].as_str().unwrap().to_owned();
    server.finished(&run_id).await;
    let run_path = format!("/runs/{run_id}");
    for host in [
        "evil.example",
        "evil.example:8080",
        "127.0.0.1.evil.example",
    ] {
        for request in [
            server.client.get(server.url("/agents")),
            server.client.get(server.url(&run_path)),
            server.client.delete(server.url(&run_path)),
            server
                .client
                .post(server.url("/runs"))
                .header("content-type", "application/json")
                .body(RUN),
        ] {
            let (status, body) = server.send(request.header("host", host)).await;
            assert_eq!(status, 421, "{host}: {body}");
            assert_eq!(body["error"], "host_not_allowed");
            assert!(body.get("result").is_none(), "{body}");
        }
    }
    // The loopback names still work.
    for host in ["localhost", "127.0.0.1:1", "[::1]:8080"] {
        let (status, _) = server
            .send(
                server
                    .client
                    .get(server.url("/agents"))
                    .header("host", host),
            )
            .await;
        assert_eq!(status, 200, "{host}");
    }
    one_legitimate_run(&server, &count, 1).await;
    server.stop().await;
}

#[tokio::test]
async fn a_foreign_or_null_origin_and_cross_site_fetches_are_403() {
    let (server, count) = counted(CoordinatorConfig::default()).await;
    let post = || {
        server
            .client
            .post(server.url("/runs"))
            .header("content-type", "application/json")
            .body(RUN)
    };
    for origin in [
        "http://evil.example",
        "https://evil.example",
        "null",
        "http://localhost:1",
    ] {
        let (status, body) = server.send(post().header("origin", origin)).await;
        assert_eq!(status, 403, "{origin}: {body}");
        assert_eq!(body["error"], "origin_not_allowed");
    }
    let (status, body) = server
        .send(post().header("sec-fetch-site", "cross-site"))
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "cross_site_request");
    // A page served by the API's own origin may call it.
    let own = server.base.clone();
    let (status, body) = server
        .send(
            post()
                .header("origin", own.as_str())
                .header("sec-fetch-site", "same-origin"),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    server.finished(body["run_id"].as_str().unwrap()).await;
    one_legitimate_run(&server, &count, 1).await;
    server.stop().await;
}

#[tokio::test]
async fn allowed_hosts_and_origins_extend_the_defaults() {
    let config = CoordinatorConfig {
        allowed_hosts: vec!["oxydra.lan".into()],
        allowed_origins: vec!["https://dash.example.lan".into()],
        ..CoordinatorConfig::default()
    };
    let (server, _count) = counted(config).await;
    let (status, _) = server
        .send(
            server
                .client
                .get(server.url("/agents"))
                .header("host", "oxydra.lan:8080")
                .header("origin", "https://dash.example.lan")
                .header("sec-fetch-site", "cross-site"),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = server
        .send(
            server
                .client
                .get(server.url("/agents"))
                .header("host", "other.lan"),
        )
        .await;
    assert_eq!(status, 421);
    server.stop().await;
}

#[tokio::test]
async fn with_a_token_the_host_check_is_skipped_but_the_token_is_not() {
    let config = CoordinatorConfig {
        auth_token: Some("s3cret".into()),
        ..CoordinatorConfig::default()
    };
    let (server, _count) = counted(config).await;
    let get = || {
        server
            .client
            .get(server.url("/agents"))
            .header("host", "oxydra.lan")
    };
    let (status, _) = server.send(get()).await;
    assert_eq!(status, 401);
    let (status, _) = server.send(get().bearer_auth("s3cret")).await;
    assert_eq!(status, 200);
    // The Origin check still applies.
    let (status, _) = server
        .send(
            get()
                .bearer_auth("s3cret")
                .header("origin", "http://evil.example"),
        )
        .await;
    assert_eq!(status, 403);
    server.stop().await;
}
