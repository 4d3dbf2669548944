#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! `web_fetch` against a real local server on 127.0.0.1.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use oxydra_tools::builtin::WebFetch;
use oxydra_tools::{BuiltinToolsConfig, NetworkPolicy, Tool, ToolContext, ToolError};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[derive(Clone)]
struct App {
    hits: Arc<AtomicUsize>,
    addr: SocketAddr,
}

async fn page(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<html><head><title>T</title><style>p{color:red}</style></head>\
         <body><h1>Welcome</h1><p>Hello <b>world</b>, this is a page.</p>\
         <ul><li>first</li><li>second</li></ul></body></html>",
    )
        .into_response()
}

async fn json_doc(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"answer": 42}"#,
    )
        .into_response()
}

async fn png(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    (
        [(header::CONTENT_TYPE, "image/png")],
        vec![0x89_u8, b'P', b'N', b'G', 0, 0],
    )
        .into_response()
}

async fn big(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    ([(header::CONTENT_TYPE, "text/plain")], "x".repeat(200_000)).into_response()
}

/// 100,000 nested `<div>`s (1.1 MB): html2text takes about a minute on it.
fn deep_page() -> String {
    let depth = 100_000;
    format!(
        "<html><body><p>before</p>{}deep text{}</body></html>",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    )
}

async fn deep(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    ([(header::CONTENT_TYPE, "text/html")], deep_page()).into_response()
}

async fn missing(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain")],
        "no such page",
    )
        .into_response()
}

fn redirect_to(location: String) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

async fn chain(State(app): State<App>, Path(n): Path<u32>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    if n == 0 {
        redirect_to("/page".to_owned())
    } else {
        redirect_to(format!("/chain/{}", n - 1))
    }
}

async fn to_private(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    redirect_to("http://10.0.0.1/secret".to_owned())
}

async fn to_metadata(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    redirect_to("http://169.254.169.254/latest/meta-data/".to_owned())
}

async fn to_localhost(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    redirect_to(format!("http://localhost:{}/page", app.addr.port()))
}

async fn to_ftp(State(app): State<App>) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    redirect_to("ftp://127.0.0.1/file".to_owned())
}

async fn server() -> App {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let app = App {
        hits: Arc::new(AtomicUsize::new(0)),
        addr: listener.local_addr().unwrap(),
    };
    let router = Router::new()
        .route("/page", get(page))
        .route("/json", get(json_doc))
        .route("/png", get(png))
        .route("/big", get(big))
        .route("/missing", get(missing))
        .route("/deep", get(deep))
        .route("/chain/{n}", get(chain))
        .route("/to-private", get(to_private))
        .route("/to-metadata", get(to_metadata))
        .route("/to-localhost", get(to_localhost))
        .route("/to-ftp", get(to_ftp))
        .with_state(app.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    app
}

fn allow_local() -> BuiltinToolsConfig {
    BuiltinToolsConfig {
        web_fetch: NetworkPolicy {
            allow_hosts: vec!["127.0.0.1".into()],
            ..NetworkPolicy::default()
        },
        ..BuiltinToolsConfig::default()
    }
}

fn ctx() -> ToolContext {
    ToolContext::new(
        std::env::temp_dir(),
        CancellationToken::new(),
        "call-web".into(),
    )
}

async fn fetch(config: &BuiltinToolsConfig, url: &str) -> Result<String, ToolError> {
    WebFetch::new(config)
        .execute(json!({ "url": url }), &ctx())
        .await
        .map(|out| out.content)
}

#[tokio::test]
async fn html_becomes_readable_text() {
    let app = server().await;
    let text = fetch(&allow_local(), &format!("http://{}/page", app.addr))
        .await
        .unwrap();
    assert!(
        text.starts_with(&format!("URL: http://{}/page\n\n", app.addr)),
        "{text}"
    );
    assert!(text.contains("Welcome"), "{text}");
    assert!(
        text.contains("Hello **world**, this is a page.") || text.contains("Hello world"),
        "{text}"
    );
    assert!(text.contains("first") && text.contains("second"), "{text}");
    assert!(!text.contains("<b>") && !text.contains("<p>"), "{text}");
    assert!(!text.contains("color:red"), "{text}");
}

#[tokio::test]
async fn json_passes_through_and_other_types_are_refused() {
    let app = server().await;
    let text = fetch(&allow_local(), &format!("http://{}/json", app.addr))
        .await
        .unwrap();
    assert!(text.ends_with(r#"{"answer": 42}"#), "{text}");
    let err = fetch(&allow_local(), &format!("http://{}/png", app.addr))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`image/png`"), "{err}");
    let err = fetch(&allow_local(), &format!("http://{}/missing", app.addr))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("404 Not Found") && err.to_string().contains("no such page"),
        "{err}"
    );
}

#[tokio::test]
async fn redirects_are_followed_up_to_five() {
    let app = server().await;
    // /chain/4 → 3 → 2 → 1 → 0 → /page: five redirects.
    let text = fetch(&allow_local(), &format!("http://{}/chain/4", app.addr))
        .await
        .unwrap();
    assert!(
        text.starts_with(&format!("URL: http://{}/page", app.addr)),
        "{text}"
    );
    assert!(text.contains("Welcome"));
    // Six redirects are one too many.
    let before = app.hits.load(Ordering::SeqCst);
    let err = fetch(&allow_local(), &format!("http://{}/chain/5", app.addr))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("too many redirects: more than 5"),
        "{err}"
    );
    assert_eq!(
        app.hits.load(Ordering::SeqCst) - before,
        6,
        "the sixth redirect is not followed"
    );
}

#[tokio::test]
async fn redirects_to_refused_addresses_are_refused() {
    let app = server().await;
    for (path, needle) in [
        ("to-private", "10.0.0.1 (a private address)"),
        ("to-metadata", "cloud metadata"),
        ("to-localhost", "`localhost` resolves to"),
        ("to-ftp", "not `ftp`"),
    ] {
        let err = fetch(&allow_local(), &format!("http://{}/{path}", app.addr))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ToolError::NetworkRefused { .. }),
            "{path}: {err}"
        );
        assert!(err.to_string().contains(needle), "{path}: {err}");
    }
    // Only the redirecting handlers were reached; the page behind `localhost` was not.
    assert_eq!(app.hits.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn body_is_capped() {
    let app = server().await;
    let mut config = allow_local();
    config.web_fetch.max_body_bytes = 1000;
    config.output_limit_bytes = 100_000;
    let text = fetch(&config, &format!("http://{}/big", app.addr))
        .await
        .unwrap();
    assert_eq!(text.matches('x').count(), 1000);
    assert!(
        text.ends_with("[body cut at 1000 bytes by the web_fetch size limit]"),
        "{text}"
    );
    // The output limit applies on top.
    let mut config = allow_local();
    config.output_limit_bytes = 500;
    let text = fetch(&config, &format!("http://{}/big", app.addr))
        .await
        .unwrap();
    assert!(text.len() < 600);
    assert!(text.contains("[... truncated "), "{text}");
}

#[tokio::test]
async fn local_and_private_targets_are_refused_without_allow_list() {
    let app = server().await;
    let config = BuiltinToolsConfig::default();
    let port = app.addr.port();
    for url in [
        format!("http://127.0.0.1:{port}/page"),
        format!("http://localhost:{port}/page"),
        format!("http://[::1]:{port}/page"),
        format!("http://0x7f000001:{port}/page"),
        format!("http://2130706433:{port}/page"),
        format!("http://127.1:{port}/page"),
        format!("http://[::ffff:127.0.0.1]:{port}/page"),
        "http://10.0.0.1/".to_owned(),
        "http://192.168.0.1/".to_owned(),
        "http://172.16.5.4/".to_owned(),
        "http://100.64.0.1/".to_owned(),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://metadata.google.internal/computeMetadata/v1/".to_owned(),
        "http://[fd00:ec2::254]/".to_owned(),
        "http://[fe80::1]/".to_owned(),
        "http://0.0.0.0/".to_owned(),
        "ftp://127.0.0.1/file".to_owned(),
        "file:///etc/passwd".to_owned(),
    ] {
        let err = fetch(&config, &url).await.unwrap_err();
        assert!(
            matches!(err, ToolError::NetworkRefused { .. }),
            "{url}: {err}"
        );
    }
    assert_eq!(
        app.hits.load(Ordering::SeqCst),
        0,
        "nothing reached the server"
    );
}

#[tokio::test]
async fn cancellation_stops_a_fetch() {
    let app = server().await;
    let ctx = ctx();
    ctx.cancel.cancel();
    let err = WebFetch::new(&allow_local())
        .execute(json!({ "url": format!("http://{}/page", app.addr) }), &ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Cancelled));
}

/// The attack: a page nested 100,000 deep. It is converted as plain text, well within
/// the tool's timeout (which would otherwise turn the call into a timeout error).
#[tokio::test]
async fn a_deeply_nested_page_degrades_to_plain_text_within_the_timeout() {
    let app = server().await;
    let mut config = allow_local();
    config.web_fetch.timeout_secs = 10;
    let text = fetch(&config, &format!("http://{}/deep", app.addr))
        .await
        .unwrap();
    assert!(text.contains("before"), "{text}");
    assert!(text.contains("deep text"), "{text}");
    assert!(
        text.contains("nests its elements too deeply to lay out"),
        "{text}"
    );
    assert!(!text.contains("<div>"), "{text}");
}

/// While the deep page is fetched and converted, other tasks of a single-threaded
/// runtime keep running: a ping-pong with another task completes its rounds before the
/// fetch has finished.
#[tokio::test(flavor = "current_thread")]
async fn other_tasks_progress_while_a_deep_page_converts() {
    let app = server().await;
    let config = allow_local();
    let url = format!("http://{}/deep", app.addr);
    let fetch = tokio::spawn(async move { fetch(&config, &url).await });
    let (ping_tx, mut ping_rx) = tokio::sync::mpsc::channel::<u32>(1);
    let (pong_tx, mut pong_rx) = tokio::sync::mpsc::channel::<u32>(1);
    tokio::spawn(async move {
        while let Some(n) = ping_rx.recv().await {
            if pong_tx.send(n).await.is_err() {
                break;
            }
        }
    });
    let mut rounds = 0;
    while !fetch.is_finished() {
        ping_tx.send(rounds).await.unwrap();
        assert_eq!(pong_rx.recv().await, Some(rounds));
        rounds += 1;
    }
    let text = fetch.await.unwrap().unwrap();
    assert!(text.contains("deep text"), "{text}");
    assert!(rounds > 0);
}
