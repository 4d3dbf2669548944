//! `web_fetch`: a web page as readable text, under the [`NetworkPolicy`].
//!
//! Every hop (the URL and each redirect) is vetted by the policy, which resolves
//! the host itself; the request then goes to exactly that address (reqwest's
//! `resolve` override), with proxies and automatic redirects off, so neither a
//! second DNS answer nor a redirect can reach an address the policy refused.
//!
//! HTML is turned into text on a blocking thread, within the call's timeout and
//! cancellation, and bounded by itself ([`html`]): a page too deep or too large for
//! html2text is stripped of its tags in linear time instead.

mod html;
mod nesting;

use std::time::Duration;

use async_trait::async_trait;
use oxydra_types::{SafetyTier, Source};
use reqwest::header::{CONTENT_TYPE, LOCATION};
use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use crate::call_preview::{CallPreview, cap_text};
use crate::config::BuiltinToolsConfig;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::network_policy::{NetworkPolicy, VettedUrl};
use crate::tool::ToolOutput;
use crate::typed_tool::TypedTool;

/// Width HTML is rendered to (wide, so lines are rarely wrapped).
const TEXT_WIDTH: usize = 120;

/// Arguments of `web_fetch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchArgs {
    /// The http or https URL to fetch.
    pub url: String,
}

/// Fetches a URL as text (ReadOnly).
#[derive(Debug, Clone)]
pub struct WebFetch {
    output_limit: usize,
    policy: NetworkPolicy,
}

impl WebFetch {
    /// The tool, with the output limit and network policy of `config`.
    pub fn new(config: &BuiltinToolsConfig) -> Self {
        Self {
            output_limit: config.output_limit_bytes,
            policy: config.web_fetch.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for WebFetch {
    type Args = WebFetchArgs;
    const NAME: &'static str = "web_fetch";
    const TIER: SafetyTier = SafetyTier::ReadOnly;

    /// The page: `web:<url>`, the URL as the model asked for it.
    fn output_source_args(&self, args: &WebFetchArgs) -> Option<Source> {
        Some(Source::Web(args.url.trim().to_owned()))
    }

    fn description(&self) -> String {
        "Fetch an http(s) URL and return its content as text (HTML is converted to \
         readable text; JSON and plain text pass through). Private and local network \
         addresses are refused."
            .to_owned()
    }

    fn output_limit(&self) -> Option<usize> {
        Some(self.output_limit)
    }

    /// The URL.
    fn preview_args(
        &self,
        args: &WebFetchArgs,
        _workspace_root: &std::path::Path,
    ) -> Option<CallPreview> {
        Some(CallPreview::Fetch {
            url: cap_text(args.url.trim().to_owned()),
        })
    }

    async fn run(&self, args: WebFetchArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let url = Url::parse(args.url.trim()).map_err(|err| ToolError::InvalidArguments {
            message: format!("`web_fetch`: `{}` is not a valid URL: {err}", args.url),
        })?;
        let timeout = Duration::from_secs(self.policy.timeout_secs.max(1));
        tokio::select! {
            result = tokio::time::timeout(timeout, self.fetch(url)) => match result {
                Ok(result) => result,
                Err(_) => Err(ToolError::Timeout { secs: timeout.as_secs() }),
            },
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

/// A body read up to the cap.
struct Body {
    bytes: Vec<u8>,
    truncated: bool,
}

impl WebFetch {
    async fn fetch(&self, mut url: Url) -> Result<ToolOutput, ToolError> {
        let mut redirects = 0;
        loop {
            let vetted = self.policy.vet(&url).await?;
            let response = send(&vetted).await?;
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|value| value.to_str().ok())
                    .ok_or_else(|| {
                        ToolError::Failed(format!("{url} answered {status} without a Location"))
                    })?;
                let next = url.join(location).map_err(|err| {
                    ToolError::Failed(format!(
                        "{url} redirected to an invalid URL `{location}`: {err}"
                    ))
                })?;
                redirects += 1;
                if redirects > self.policy.max_redirects {
                    return Err(ToolError::Failed(format!(
                        "too many redirects: more than {} (the last one to {next})",
                        self.policy.max_redirects
                    )));
                }
                tracing::debug!(from = %url, to = %next, "web_fetch follows a redirect");
                url = next;
                continue;
            }
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .map(|value| value.to_ascii_lowercase());
            let kind = classify(content_type.as_deref()).ok_or_else(|| {
                ToolError::Failed(format!(
                    "{url} returned content of type `{}`, which web_fetch cannot turn into text",
                    content_type.as_deref().unwrap_or("")
                ))
            })?;
            let body = read_body(response, self.policy.max_body_bytes, &url).await?;
            let rendered = render(kind, body.bytes, &url).await?;
            let text = rendered.text;
            if !status.is_success() {
                let excerpt: String = text.chars().take(500).collect();
                return Err(ToolError::Failed(format!(
                    "{url} answered {status}:\n{excerpt}"
                )));
            }
            let mut content = format!("URL: {url}\n\n{text}");
            if let Some(reason) = rendered.plain_because {
                if !content.ends_with('\n') {
                    content.push('\n');
                }
                content.push_str(&format!("[{reason}: its text is shown without layout]"));
            }
            if body.truncated {
                if !content.ends_with('\n') {
                    content.push('\n');
                }
                content.push_str(&format!(
                    "[body cut at {} bytes by the web_fetch size limit]",
                    self.policy.max_body_bytes
                ));
            }
            return Ok(ToolOutput::text(content));
        }
    }
}

/// One request to the vetted address, no proxy, no automatic redirects.
async fn send(vetted: &VettedUrl) -> Result<reqwest::Response, ToolError> {
    let mut builder = oxydra_http::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("oxydra-web-fetch/", env!("CARGO_PKG_VERSION")));
    if let Some(domain) = &vetted.domain {
        builder = builder.resolve(domain, vetted.addr);
    }
    let client = builder
        .build()
        .map_err(|err| ToolError::Failed(format!("cannot build the HTTP client: {err}")))?;
    client
        .get(vetted.url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/plain, application/json, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|err| ToolError::Failed(format!("fetching {} failed: {err}", vetted.url)))
}

/// How a body is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
}

fn classify(content_type: Option<&str>) -> Option<Kind> {
    let Some(content_type) = content_type else {
        return Some(Kind::Text);
    };
    let mime = content_type.split(';').next().unwrap_or_default().trim();
    match mime {
        "text/html" | "application/xhtml+xml" => Some(Kind::Html),
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/ld+json" => Some(Kind::Text),
        _ if mime.starts_with("text/") || mime.ends_with("+json") || mime.ends_with("+xml") => {
            Some(Kind::Text)
        }
        _ => None,
    }
}

async fn read_body(
    mut response: reqwest::Response,
    cap: usize,
    url: &Url,
) -> Result<Body, ToolError> {
    let mut body = Body {
        bytes: Vec::new(),
        truncated: false,
    };
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| ToolError::Failed(format!("reading the body of {url} failed: {err}")))?
    {
        let room = cap.saturating_sub(body.bytes.len());
        if chunk.len() > room {
            body.bytes
                .extend_from_slice(chunk.get(..room).unwrap_or_default());
            body.truncated = true;
            break;
        }
        body.bytes.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The text of a body.
struct Rendered {
    text: String,
    /// Why an HTML page was reduced to plain text, if it was.
    plain_because: Option<&'static str>,
}

/// Turns a body into text. HTML conversion runs on a blocking thread (it is CPU work
/// bounded by [`html::to_text`]'s limits); the caller's timeout and cancellation stop
/// the wait for it.
async fn render(kind: Kind, bytes: Vec<u8>, url: &Url) -> Result<Rendered, ToolError> {
    match kind {
        Kind::Html => {
            let converted =
                convert_off_thread(bytes, url, |html| html::to_text(html, TEXT_WIDTH)).await?;
            Ok(Rendered {
                text: converted.text,
                plain_because: converted.plain_because,
            })
        }
        Kind::Text => {
            if bytes.contains(&0) {
                return Err(ToolError::Failed(format!("{url} returned binary content")));
            }
            Ok(Rendered {
                text: String::from_utf8_lossy(&bytes).into_owned(),
                plain_because: None,
            })
        }
    }
}

/// Runs `convert` on `html` on a blocking thread and waits for it.
async fn convert_off_thread(
    html: Vec<u8>,
    url: &Url,
    convert: impl FnOnce(&[u8]) -> Result<html::Converted, String> + Send + 'static,
) -> Result<html::Converted, ToolError> {
    tokio::task::spawn_blocking(move || convert(&html))
        .await
        .map_err(|err| ToolError::Failed(format!("converting the HTML of {url} failed: {err}")))?
        .map_err(|err| {
            ToolError::Failed(format!("cannot convert the HTML of {url} to text: {err}"))
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::workspace;
    use super::*;
    use crate::tool::Tool;

    #[test]
    fn content_types() {
        assert_eq!(classify(Some("text/html; charset=utf-8")), Some(Kind::Html));
        assert_eq!(classify(Some("application/json")), Some(Kind::Text));
        assert_eq!(classify(Some("application/problem+json")), Some(Kind::Text));
        assert_eq!(classify(Some("text/plain")), Some(Kind::Text));
        assert_eq!(classify(None), Some(Kind::Text));
        assert_eq!(classify(Some("image/png")), None);
        assert_eq!(classify(Some("application/octet-stream")), None);
    }

    #[tokio::test]
    async fn bad_urls_are_refused_before_any_connection() {
        let (_dir, ctx) = workspace();
        let tool = WebFetch::new(&BuiltinToolsConfig::default());
        let err = tool
            .execute(json!({"url": "not a url"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        let err = tool
            .execute(json!({"url": "ftp://example.com/f"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::NetworkRefused { .. }), "{err}");
    }

    /// The conversion runs off the async thread: on a single-threaded runtime, a
    /// conversion that waits for another task of that runtime still finishes (run on
    /// the runtime's own thread, it would wait forever and fail).
    #[tokio::test(flavor = "current_thread")]
    async fn html_conversion_leaves_the_async_thread_free() {
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
        let other_task = tokio::spawn(async move {
            started_rx.await.unwrap();
            go_tx.send(()).unwrap();
        });
        let url = Url::parse("http://example.com/").unwrap();
        let converted = convert_off_thread(b"<p>hi</p>".to_vec(), &url, move |html| {
            started_tx.send(()).unwrap();
            go_rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .map_err(|_| "the other task never ran".to_owned())?;
            html::to_text(html, 80)
        })
        .await
        .unwrap();
        assert!(converted.text.contains("hi"));
        other_task.await.unwrap();
    }
}
