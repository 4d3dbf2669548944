//! `web_fetch` against a real local server on 127.0.0.1.

use oxydra_test_support::{MockServer, RecordedRequest, Reply};
use oxydra_tools::builtin::WebFetch;
use oxydra_tools::{BuiltinToolsConfig, NetworkPolicy, Tool, ToolContext, ToolError};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// 100,000 nested `<div>`s (1.1 MB): html2text takes about a minute on it.
fn deep_page() -> String {
    let depth = 100_000;
    format!(
        "<html><body><p>before</p>{}deep text{}</body></html>",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    )
}

fn page(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
    Reply::new(200)
        .header("content-type", content_type)
        .body(body)
}

/// The site: pages of each kind, redirect chains and redirects to refused places.
fn site(request: &RecordedRequest) -> Reply {
    if request.method != "GET" {
        return Reply::new(405);
    }
    let port = request
        .header("host")
        .and_then(|host| host.rsplit(':').next())
        .unwrap_or_default()
        .to_owned();
    match request.path.as_str() {
        "/page" => page(
            "text/html; charset=utf-8",
            "<html><head><title>T</title><style>p{color:red}</style></head>\
             <body><h1>Welcome</h1><p>Hello <b>world</b>, this is a page.</p>\
             <ul><li>first</li><li>second</li></ul></body></html>",
        ),
        "/json" => page("application/json", r#"{"answer": 42}"#),
        "/png" => page("image/png", vec![0x89_u8, b'P', b'N', b'G', 0, 0]),
        "/big" => page("text/plain", "x".repeat(200_000)),
        "/deep" => page("text/html", deep_page()),
        "/missing" => Reply::new(404)
            .header("content-type", "text/plain")
            .body("no such page"),
        "/to-private" => Reply::redirect("http://10.0.0.1/secret"),
        "/to-metadata" => Reply::redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-localhost" => Reply::redirect(format!("http://localhost:{port}/page")),
        "/to-ftp" => Reply::redirect("ftp://127.0.0.1/file"),
        path => match path
            .strip_prefix("/chain/")
            .and_then(|n| n.parse::<u32>().ok())
        {
            Some(0) => Reply::redirect("/page"),
            Some(n) => Reply::redirect(format!("/chain/{}", n - 1)),
            None => Reply::new(404),
        },
    }
}

async fn server() -> MockServer {
    MockServer::builder().respond_with(site).start().unwrap()
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
    let text = fetch(&allow_local(), &format!("http://{}/page", app.addr()))
        .await
        .unwrap();
    assert!(
        text.starts_with(&format!("URL: http://{}/page\n\n", app.addr())),
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
async fn fetches_with_no_crypto_provider_installed_and_installs_none() {
    // reqwest 0.13 without a process-wide rustls provider panics when a client uses its
    // own TLS set-up, even for `http://`; `oxydra_http::client_builder` sets its own.
    assert!(rustls::crypto::CryptoProvider::get_default().is_none());
    let app = server().await;
    let text = fetch(&allow_local(), &format!("http://{}/json", app.addr()))
        .await
        .unwrap();
    assert!(text.ends_with(r#"{"answer": 42}"#), "{text}");
    assert!(rustls::crypto::CryptoProvider::get_default().is_none());
}

#[tokio::test]
async fn json_passes_through_and_other_types_are_refused() {
    let app = server().await;
    let text = fetch(&allow_local(), &format!("http://{}/json", app.addr()))
        .await
        .unwrap();
    assert!(text.ends_with(r#"{"answer": 42}"#), "{text}");
    let err = fetch(&allow_local(), &format!("http://{}/png", app.addr()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`image/png`"), "{err}");
    let err = fetch(&allow_local(), &format!("http://{}/missing", app.addr()))
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
    let text = fetch(&allow_local(), &format!("http://{}/chain/4", app.addr()))
        .await
        .unwrap();
    assert!(
        text.starts_with(&format!("URL: http://{}/page", app.addr())),
        "{text}"
    );
    assert!(text.contains("Welcome"));
    // Six redirects are one too many.
    let before = app.hits();
    let err = fetch(&allow_local(), &format!("http://{}/chain/5", app.addr()))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("too many redirects: more than 5"),
        "{err}"
    );
    assert_eq!(app.hits() - before, 6, "the sixth redirect is not followed");
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
        let err = fetch(&allow_local(), &format!("http://{}/{path}", app.addr()))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ToolError::NetworkRefused { .. }),
            "{path}: {err}"
        );
        assert!(err.to_string().contains(needle), "{path}: {err}");
    }
    // Only the redirecting handlers were reached; the page behind `localhost` was not.
    assert_eq!(app.hits(), 4);
}

#[tokio::test]
async fn body_is_capped() {
    let app = server().await;
    let mut config = allow_local();
    config.web_fetch.max_body_bytes = 1000;
    config.output_limit_bytes = 100_000;
    let text = fetch(&config, &format!("http://{}/big", app.addr()))
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
    let text = fetch(&config, &format!("http://{}/big", app.addr()))
        .await
        .unwrap();
    assert!(text.len() < 600);
    assert!(text.contains("[... truncated "), "{text}");
}

#[tokio::test]
async fn local_and_private_targets_are_refused_without_allow_list() {
    let app = server().await;
    let config = BuiltinToolsConfig::default();
    let port = app.addr().port();
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
    assert_eq!(app.hits(), 0, "nothing reached the server");
}

#[tokio::test]
async fn cancellation_stops_a_fetch() {
    let app = server().await;
    let ctx = ctx();
    ctx.cancel.cancel();
    let err = WebFetch::new(&allow_local())
        .execute(
            json!({ "url": format!("http://{}/page", app.addr()) }),
            &ctx,
        )
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
    let text = fetch(&config, &format!("http://{}/deep", app.addr()))
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
    let url = format!("http://{}/deep", app.addr());
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
