//! A small WebDriver client (W3C JSON over HTTP) for the web console's browser test:
//! `chromedriver` started on a free port, headless Chromium sessions, elements found
//! by CSS selector, clicks, typing, text, scripts and screenshots.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The key W3C WebDriver names an element reference with.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Whether headless Chromium and chromedriver are installed.
pub fn browser_installed() -> bool {
    ["chromium", "chromedriver"].iter().all(|name| {
        Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    })
}

/// A running chromedriver; killed when dropped.
pub struct Driver {
    child: Child,
    base: String,
    client: reqwest::Client,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    /// Starts chromedriver on a free loopback port and waits (10 s) until it is ready.
    pub async fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let driver = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            client: oxydra::http::client(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(response) = driver
                .client
                .get(format!("{}/status", driver.base))
                .send()
                .await
            {
                let status: Value = response.json().await.unwrap_or_default();
                if status["value"]["ready"] == true {
                    return driver;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver never became ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A new headless Chromium session.
    pub async fn session(&self) -> Session {
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1000"]
            }
        }}});
        let response: Value = self
            .client
            .post(format!("{}/session", self.base))
            .json(&capabilities)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = response["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {response}"))
            .to_owned();
        Session {
            base: format!("{}/session/{id}", self.base),
            client: self.client.clone(),
        }
    }
}

/// One browser session.
pub struct Session {
    base: String,
    client: reqwest::Client,
}

impl Session {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        answer["value"].clone()
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// The element `css` selects, if one does now.
    pub async fn find(&self, css: &str) -> Option<String> {
        let found = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found[ELEMENT].as_str().map(str::to_owned)
    }

    /// The element `css` selects, waiting up to `wait` for it.
    pub async fn wait_for(&self, css: &str, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(element) = self.find(css).await {
                return element;
            }
            assert!(
                Instant::now() < deadline,
                "no `{css}` on the page after {wait:?}; the page says: {}",
                self.text_of("body").await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks `element`.
    pub async fn click(&self, element: &str) {
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await;
    }

    /// Types `text` into `element`.
    pub async fn type_into(&self, element: &str, text: &str) {
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Empties the input `element`.
    pub async fn clear(&self, element: &str) {
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/clear"),
            Some(json!({})),
        )
        .await;
    }

    /// The visible text of `element`.
    pub async fn text(&self, element: &str) -> String {
        self.call(
            reqwest::Method::GET,
            &format!("/element/{element}/text"),
            None,
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// The visible text of what `css` selects (empty when nothing).
    pub async fn text_of(&self, css: &str) -> String {
        match self.find(css).await {
            Some(element) => self.text(&element).await,
            None => String::new(),
        }
    }

    /// Waits up to `wait` until the text of `css` is `expected`.
    pub async fn wait_for_text(&self, css: &str, expected: &str, wait: Duration) {
        let deadline = Instant::now() + wait;
        loop {
            let text = self.text_of(css).await;
            if text == expected {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "`{css}` says `{text}`, not `{expected}`, after {wait:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Runs `script` (an async function body whose last argument is the callback) in
    /// the page; what it called back with.
    pub async fn run_async(&self, script: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/async",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// A PNG of the page.
    pub async fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let encoded = self.call(reqwest::Method::GET, "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Ends the session (the browser closes).
    pub async fn quit(self) {
        let _ = self.client.delete(&self.base).send().await;
    }
}
