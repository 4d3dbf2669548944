//! The client of a running `oxydra serve` (`oxydra runs`, `oxydra approvals`): where
//! the server is (`--server URL`, else `OXYDRA_SERVER`, else
//! `http://127.0.0.1:8080`), its bearer token (`OXYDRA_TOKEN`, else
//! `OXYDRA_SERVE_TOKEN`, the variable `serve` reads its own from), JSON requests whose
//! failures become [`CliError::Api`] with the server's error code, and a run's
//! Server-Sent Events ([`events`]).

pub mod events;

use serde_json::Value;

use crate::error::CliError;

/// The server when neither `--server` nor `OXYDRA_SERVER` says.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8080";

/// A connection to one `oxydra serve`.
#[derive(Debug, Clone)]
pub struct Server {
    base: url::Url,
    token: Option<String>,
    client: reqwest::Client,
}

/// The first of `names` set in the environment to a non-empty value.
fn env(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
}

impl Server {
    /// The server of `--server` (`flag`), `OXYDRA_SERVER` or the default, with the
    /// token of `OXYDRA_TOKEN` / `OXYDRA_SERVE_TOKEN`.
    pub fn from_flag(flag: Option<&str>) -> Result<Self, CliError> {
        let text = flag
            .map(str::to_owned)
            .or_else(|| env(&["OXYDRA_SERVER"]))
            .unwrap_or_else(|| DEFAULT_SERVER.to_owned());
        let base = url::Url::parse(&text)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| CliError::Flag {
                flag: "--server",
                message: format!(
                    "expected the URL of an `oxydra serve`, like {DEFAULT_SERVER}, found `{text}`"
                ),
            })?;
        Ok(Self {
            base,
            token: env(&["OXYDRA_TOKEN", "OXYDRA_SERVE_TOKEN"]),
            client: oxydra::http::client(),
        })
    }

    /// The server's URL as given.
    pub fn base(&self) -> &str {
        self.base.as_str().trim_end_matches('/')
    }

    /// The URL of `path` (which starts with `/`; its segments already encoded).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    /// `request` with the token.
    pub fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Sends `request`; the JSON answer of a 2xx, else the server's error.
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value, CliError> {
        let response = self
            .authorized(request)
            .send()
            .await
            .map_err(|error| self.unreachable(&error))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|error| self.unreachable(&error))?;
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(body);
        }
        Err(api_error(status.as_u16(), &body, self.base()))
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> Result<Value, CliError> {
        self.send(self.client.get(self.url(path))).await
    }

    /// `POST path` with the JSON `body`.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        self.send(self.client.post(self.url(path)).json(body)).await
    }

    /// `DELETE path`.
    pub async fn delete(&self, path: &str) -> Result<Value, CliError> {
        self.send(self.client.delete(self.url(path))).await
    }

    /// The client, for a request of one's own (a stream).
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    fn unreachable(&self, error: &reqwest::Error) -> CliError {
        CliError::Server {
            server: self.base().to_owned(),
            message: format!("cannot reach the server: {error}"),
        }
    }
}

/// The error a server answered with `status` and `body` (`{error, message, …}`).
pub fn api_error(status: u16, body: &Value, server: &str) -> CliError {
    let code = body["error"].as_str().unwrap_or("http_error").to_owned();
    let mut message = body["message"]
        .as_str()
        .map_or_else(|| format!("the server answered {status}"), str::to_owned);
    if status == 401 {
        message.push_str(" (set OXYDRA_TOKEN to the token `oxydra serve` was started with)");
    }
    if let Some(field) = body["field"].as_str() {
        message = format!("{message} (field `{field}`)");
    }
    CliError::Api {
        server: server.to_owned(),
        status,
        code,
        message,
    }
}

/// The member `key` of `value` (`null` when it has none).
pub fn field<'a>(value: &'a Value, key: &str) -> &'a Value {
    value.get(key).unwrap_or(&Value::Null)
}

/// `segment` percent-encoded for a URL path.
pub fn segment(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_must_be_an_http_url() {
        for bad in ["localhost:8080", "ftp://x", "", "http://"] {
            assert!(Server::from_flag(Some(bad)).is_err(), "{bad}");
        }
        let server = Server::from_flag(Some("http://127.0.0.1:9/")).unwrap();
        assert_eq!(server.url("/runs"), "http://127.0.0.1:9/runs");
    }

    #[test]
    fn an_error_keeps_the_servers_code_and_field() {
        let body =
            serde_json::json!({"error": "invalid_query", "message": "bad", "field": "since"});
        let error = api_error(400, &body, "http://x");
        assert_eq!(error.kind(), "invalid_query");
        assert!(error.to_string().contains("field `since`"), "{error}");
        assert_eq!(error.exit(), crate::exit_code::Exit::Usage);
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }
}
