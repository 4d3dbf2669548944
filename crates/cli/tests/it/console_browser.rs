//! The web console of `oxydra serve` in a real browser (headless Chromium through
//! chromedriver, Debian's `chromium` and `chromium-driver`: scripts/install-browser.sh):
//! a person logs in through the one-time URL `serve` prints (the code leaves the
//! address bar and cannot be used again); starts a run from a blueprint's form, sees
//! the server's 400 on the fields they got wrong, fixes them and sees the run start;
//! sees what a waiting call will do, approves it and sees the run complete; denies
//! another with a reason the model reads; a page of another origin holding the token
//! still cannot decide anything. Under a run's **Changes** a person sees what it
//! changed, is shown the diff when a file changed since, and reverts it.
//!
//! Without Chromium the test says so and passes, unless `CI` is set: CI installs it
//! (`cargo xtask setup`), so there it must run.

use crate::common;

use std::time::Duration;

use common::Sandbox;
use common::approvals::{
    ASK_CONFIG, WRITTEN, last_tool_result, start_run, the_pending_write, wait_for_status,
    writer_provider,
};
use common::serve::{Server, runtime, sandbox_with_config};
use common::webdriver::{Driver, browser_installed};
use serde_json::json;

const TOKEN: &str = "console-test-token-0123456789abcdef";

/// A deterministic blueprint whose form has two checked fields.
const READER: &str = r#"
[[agents]]
name = "reader"
type = "deterministic"
description = "Reads a text file"
parameters_schema = { type = "object", required = ["path", "lines"], properties = { path = { type = "string", pattern = "^[a-z]+[.]txt$" }, lines = { type = "integer", minimum = 1, maximum = 100 } } }
[[agents.steps]]
tool = "file_read"
args = { path = "{{path}}" }
"#;
const WAIT: Duration = Duration::from_secs(20);

/// A client of the API that sends the token.
fn authorized_client() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {TOKEN}").parse().unwrap(),
    );
    oxydra::http::client_builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

/// Serves `page` (HTML) to every request on a free loopback port: another origin.
async fn other_origin(page: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://localhost:{}", listener.local_addr().unwrap().port());
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0_u8; 4096];
                let _ = socket.read(&mut request).await;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    base
}

/// Waits until what `css` selects says something.
/// The JSON body of a GET the API must answer.
async fn get_json(api: &reqwest::Client, url: &str) -> serde_json::Value {
    api.get(url).send().await.unwrap().json().await.unwrap()
}

async fn wait_for_some_text(page: &common::webdriver::Session, css: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    while page.text_of(css).await.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "`{css}` stays empty; the page says: {}",
            page.text_of("body").await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_person_approves_and_denies_from_the_console_and_another_origin_cannot() {
    if !browser_installed() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the browser test: scripts/install-browser.sh installs chromium and chromedriver"
        );
        eprintln!(
            "SKIPPED: the web console's browser test needs chromium and chromedriver \
             (scripts/install-browser.sh)"
        );
        return;
    }
    let rt = runtime();
    let provider = writer_provider();
    let sandbox = sandbox_with_config(&format!("{ASK_CONFIG}{READER}"));
    std::fs::write(sandbox.workspace.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let url = provider.openai_url();
    let server = Server::start_with(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", TOKEN)],
        &["--addr", "127.0.0.1:0", "--base-url", &url],
    );
    let console_line = server.line_with("web console at");
    // The one place the login code appears: the URL printed for the person.
    let login_url = console_line
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap()
        .to_owned();
    let code = login_url
        .strip_prefix(&format!("{}/#login=", server.base))
        .unwrap_or_else(|| panic!("{console_line}"))
        .to_owned();
    assert!(
        code.len() >= 32 && code.bytes().all(|b| b.is_ascii_hexdigit()),
        "{code}"
    );
    assert!(!console_line.contains(TOKEN), "{console_line}");
    let api = authorized_client();
    rt.block_on(async {
        let driver = Driver::start().await;
        let page = driver.session().await;
        // The person opens the printed URL: logged in, the code gone from the address
        // bar and used up.
        page.goto(&login_url).await;
        page.wait_for("#app:not([hidden]) #start-form", WAIT).await;
        let address = page
            .run_async(
                "arguments[arguments.length - 1](location.href)",
                json!([]),
            )
            .await;
        assert_eq!(address, json!(format!("{}/", server.base)));
        let again = oxydra::http::client()
            .post(server.url("/console/login"))
            .json(&json!({ "code": code }))
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 401);

        // The start-run form: wrong values are shown on their fields, then fixed.
        // Choosing the blueprint (chromedriver's click on an <option> does not change
        // a <select>; keys do, as a person's typing would).
        let open = page.wait_for("#start summary", WAIT).await;
        page.click(&open).await;
        page.wait_for("#agent option[value=\"reader\"]", WAIT).await;
        let agent = page.wait_for("#agent", WAIT).await;
        page.type_into(&agent, "reader").await;
        let path = page.wait_for("#fields [name=\"path\"]", WAIT).await;
        let lines = page.wait_for("#fields [name=\"lines\"]", WAIT).await;
        page.type_into(&path, "Notes.TXT").await;
        page.type_into(&lines, "0").await;
        let submit = page.wait_for("#start-form button[type=\"submit\"]", WAIT).await;
        page.click(&submit).await;
        let lines_error = "label[data-field=\"lines\"] .field-error";
        let path_error = "label[data-field=\"path\"] .field-error";
        wait_for_some_text(&page, lines_error).await;
        let shown = page.text_of(lines_error).await;
        assert!(shown.contains('1') || shown.contains("minimum"), "{shown}");
        assert!(!page.text_of(path_error).await.is_empty());
        if let Ok(dir) = std::env::var("OXYDRA_CONSOLE_SCREENSHOTS") {
            std::fs::write(format!("{dir}/console-form-errors.png"), page.screenshot().await)
                .unwrap();
        }
        let runs = get_json(&api, &server.url("/runs?agent=reader")).await;
        assert_eq!(runs["runs"], json!([]), "a refused form starts no run");
        page.clear(&path).await;
        page.type_into(&path, "notes.txt").await;
        page.clear(&lines).await;
        page.type_into(&lines, "3").await;
        page.click(&submit).await;
        page.wait_for_text("#run-status", "completed", WAIT).await;
        assert_eq!(page.text_of(lines_error).await, "");
        assert_eq!(page.text_of(path_error).await, "");
        let runs = get_json(&api, &server.url("/runs?agent=reader")).await;
        assert_eq!(
            runs["runs"][0]["parameters"],
            json!({"path": "notes.txt", "lines": 3})
        );
        assert_eq!(page.text_of("#run-id").await, runs["runs"][0]["run_id"].as_str().unwrap());

        let run_id = start_run(&api, &server, "write out.txt").await;
        let run = wait_for_status(&api, &server.base, &run_id, "waiting_approval").await;
        let approval_id = the_pending_write(&run);
        let item = format!("li[data-approval-id=\"{approval_id}\"]");
        page.wait_for(&item, WAIT).await;
        let shown = page.text_of(&format!("{item} pre.diff")).await;
        assert!(shown.contains("+hello"), "the page shows the change: {shown}");
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        let why = page.text_of(&format!("{item} .why")).await;
        assert!(why.contains("the tool has a requires_consent rule"), "{why}");
        if let Ok(dir) = std::env::var("OXYDRA_CONSOLE_SCREENSHOTS") {
            std::fs::write(format!("{dir}/console-approval.png"), page.screenshot().await).unwrap();
        }
        let approve = page.wait_for(&format!("{item} button.approve-once"), WAIT).await;
        page.click(&approve).await;
        // Deciding shows the run (in place of the form's run shown before); the person
        // sees it complete, with the answer.
        page.wait_for_text("#run-id", &run_id, WAIT).await;
        page.wait_for_text("#run-status", "completed", WAIT).await;
        assert_eq!(page.text_of("#run-result").await, "done");
        assert_eq!(
            std::fs::read_to_string(sandbox.workspace.join("out.txt")).unwrap(),
            WRITTEN
        );
        if let Ok(dir) = std::env::var("OXYDRA_CONSOLE_SCREENSHOTS") {
            std::fs::write(format!("{dir}/console-run.png"), page.screenshot().await).unwrap();
        }

        // A denial with a reason: the model reads it.
        let second = start_run(&api, &server, "write out.txt").await;
        let run = wait_for_status(&api, &server.base, &second, "waiting_approval").await;
        let second_approval = the_pending_write(&run);
        let item = format!("li[data-approval-id=\"{second_approval}\"]");
        let reason = page.wait_for(&format!("{item} input.reason"), WAIT).await;
        page.type_into(&reason, "not before the review").await;
        let deny = page.wait_for(&format!("{item} button.deny"), WAIT).await;
        page.click(&deny).await;
        wait_for_status(&api, &server.base, &second, "completed").await;
        assert!(
            last_tool_result(&provider).contains("not before the review"),
            "{}",
            last_tool_result(&provider)
        );

        // Another origin, even holding the token, cannot decide: its request is
        // refused (a JSON POST needs a CORS preflight the API never grants; a simple
        // one is refused for its Origin) and the run still waits.
        let third = start_run(&api, &server, "write out.txt").await;
        let run = wait_for_status(&api, &server.base, &third, "waiting_approval").await;
        let third_approval = the_pending_write(&run);
        let elsewhere = other_origin("<!doctype html><title>elsewhere</title><p>hi</p>").await;
        page.goto(&format!("{elsewhere}/")).await;
        let target = format!("{}/runs/{third}/approvals/{third_approval}", server.base);
        let outcome = page
            .run_async(
                r#"const [url, token, done] = arguments;
                   const results = [];
                   fetch(url, {method: "POST", headers: {"Content-Type": "application/json",
                       "Authorization": "Bearer " + token}, body: '{"decision":"approve_once"}'})
                     .then(r => results.push("json:" + r.status), e => results.push("json:blocked"))
                     .then(() => fetch(url, {method: "POST", mode: "no-cors",
                       headers: {"Content-Type": "text/plain"}, body: '{"decision":"approve_once"}'}))
                     .then(r => results.push("simple:" + r.type), e => results.push("simple:blocked"))
                     .then(() => done(results));"#,
                json!([target, TOKEN]),
            )
            .await;
        assert_eq!(outcome[0], "json:blocked", "{outcome}");
        let still = wait_for_status(&api, &server.base, &third, "waiting_approval").await;
        assert_eq!(still["pending_approvals"][0]["approval_id"], third_approval.as_str());
        page.quit().await;
    });
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}

/// `file_write` allowed, one `writer` agent.
const ALLOW_WRITER: &str = r#"
[runtime]
approve = "allow"

[[agents]]
name = "writer"
type = "agent"
description = "Writes files"
system_prompt = "You write files."
tools = ["file_write"]
"#;

#[test]
fn a_person_sees_a_run_s_changes_and_reverts_them_from_the_console() {
    if !browser_installed() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the browser test: scripts/install-browser.sh installs chromium and chromedriver"
        );
        eprintln!("SKIPPED: the console's changes test needs chromium and chromedriver");
        return;
    }
    let rt = runtime();
    let provider = writer_provider();
    let sandbox = sandbox_with_config(ALLOW_WRITER);
    let url = provider.openai_url();
    let server = Server::start_with(
        &sandbox,
        &[("OXYDRA_SERVE_TOKEN", TOKEN)],
        &["--addr", "127.0.0.1:0", "--base-url", &url],
    );
    let console_line = server.line_with("web console at");
    let login_url = console_line
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap()
        .to_owned();
    let out = sandbox.workspace.join("out.txt");
    let api = authorized_client();
    rt.block_on(async {
        let run_id = start_run(&api, &server, "write out.txt").await;
        wait_for_status(&api, &server.base, &run_id, "completed").await;
        let driver = Driver::start().await;
        let page = driver.session().await;
        page.goto(&login_url).await;
        let listed = page
            .wait_for(&format!("#runs li[data-run-id=\"{run_id}\"]"), WAIT)
            .await;
        page.click(&listed).await;
        page.wait_for_text("#run-status", "completed", WAIT).await;
        let open = page.wait_for("#changes-panel summary", WAIT).await;
        page.click(&open).await;
        page.wait_for("#changes .path code", WAIT).await;
        assert_eq!(page.text_of("#changes .path code").await, "out.txt");
        let diff = page.text_of("#changes pre.diff").await;
        assert!(diff.contains("+hello"), "{diff}");
        assert!(!diff.contains('\u{1b}'), "{diff:?}");

        // Someone edits the file: the revert is refused and the diff shown.
        std::fs::write(&out, "edited by hand\n").unwrap();
        let revert = page.wait_for("#revert", WAIT).await;
        page.click(&revert).await;
        wait_for_some_text(&page, "#revert-result").await;
        assert!(
            page.text_of("#revert-result")
                .await
                .contains("changed since"),
            "{}",
            page.text_of("#revert-result").await
        );
        let conflict = page.text_of("#revert-conflicts pre.diff").await;
        assert!(conflict.contains("-edited by hand"), "{conflict}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "edited by hand\n");
        if let Ok(dir) = std::env::var("OXYDRA_CONSOLE_SCREENSHOTS") {
            std::fs::write(
                format!("{dir}/console-changes.png"),
                page.screenshot().await,
            )
            .unwrap();
        }

        // Overwriting was asked for: reverted, and the turn shows as reverted.
        let force = page.wait_for("#revert-force", WAIT).await;
        page.click(&force).await;
        page.click(&revert).await;
        page.wait_for_text("#revert-result", "put back 1 path(s)", WAIT)
            .await;
        assert!(!out.exists());
        page.wait_for_text("#changes h3", "Turn 1 (reverted)", WAIT)
            .await;
        page.quit().await;
    });
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn no_console_turns_the_page_off_and_the_page_carries_a_strict_policy() {
    let sandbox = Sandbox::new();
    let rt = runtime();
    let on = Server::start(&sandbox, &[]);
    let client = oxydra::http::client();
    rt.block_on(async {
        let page = client.get(on.url("/")).send().await.unwrap();
        assert_eq!(page.status(), 200);
        let policy = page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(policy.contains("script-src 'self'"), "{policy}");
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        let script = client.get(on.url("/console/app.js")).send().await.unwrap();
        assert_eq!(script.status(), 200);
        // A page of another origin cannot even load it.
        let framed = client
            .get(on.url("/"))
            .header("origin", "https://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(framed.status(), 403);
    });
    drop(on);
    let off = Server::start_with(&sandbox, &[], &["--addr", "127.0.0.1:0", "--no-console"]);
    rt.block_on(async {
        let page = client.get(off.url("/")).send().await.unwrap();
        assert_eq!(page.status(), 404);
    });
}
