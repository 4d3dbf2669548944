//! Refuses requests that a web page in the user's browser makes on its own behalf.
//!
//! A page on any site can send a simple cross-site request to a loopback port, and a
//! DNS-rebinding page can even read the answers (the browser believes the API is the
//! page's own host). So every request is checked before it reaches a route:
//!
//! - `Host` must name the machine itself (`localhost`, `127.0.0.1`, `[::1]`, any
//!   port) or a configured `allowed_hosts` entry. A rebinding page's requests carry
//!   its own name (`Host: attacker.example`) and are refused with `421`. With a bearer
//!   token and no `allowed_hosts` the check is skipped: remote clients use names of
//!   their own, and a page cannot present the token.
//! - A present `Origin` must be a loopback origin on the port the API listens on, or
//!   a configured `allowed_origins` entry; `Origin: null` (sandboxed frames, files,
//!   redirects) is refused with `403`.
//! - `Sec-Fetch-Site: cross-site` is refused with `403` unless the `Origin` is one of
//!   `allowed_origins`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Uri;
use axum::http::{HeaderMap, HeaderName, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::errors::ApiError;
use crate::config::CoordinatorConfig;
use crate::host_origin::{HostEntry, Origin};

/// The host names that always mean this machine.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// `Sec-Fetch-Site`, which browsers send with every request.
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// The checks of one router: what `Host` and `Origin` may say.
#[derive(Debug, Clone)]
pub(crate) struct RequestGuard {
    check_host: bool,
    allowed_hosts: Vec<HostEntry>,
    allowed_origins: Vec<Origin>,
    port: Option<u16>,
}

impl RequestGuard {
    /// The guard for `config`, on a listener bound to `port` (when known; unknown,
    /// loopback origins of any port are accepted).
    pub(crate) fn new(config: &CoordinatorConfig, port: Option<u16>) -> Self {
        Self {
            check_host: config.auth_token.is_none() || !config.allowed_hosts.is_empty(),
            allowed_hosts: config
                .allowed_hosts
                .iter()
                .filter_map(|entry| HostEntry::parse(entry))
                .collect(),
            allowed_origins: config
                .allowed_origins
                .iter()
                .filter_map(|entry| Origin::parse(entry))
                .collect(),
            port,
        }
    }

    /// Whether a request with these headers (and URI, whose authority stands in for
    /// `Host` in HTTP/2) may proceed.
    pub(crate) fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), ApiError> {
        if self.check_host {
            self.check_host(headers, uri)?;
        }
        let origin_allowed = match headers.get(header::ORIGIN) {
            Some(value) => self.check_origin(value.to_str().unwrap_or_default())?,
            None => false,
        };
        let site = headers
            .get(SEC_FETCH_SITE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        if !origin_allowed && site.trim().eq_ignore_ascii_case("cross-site") {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "cross_site_request",
                "requests sent by a page of another site are refused (Sec-Fetch-Site: cross-site)",
            ));
        }
        Ok(())
    }

    /// Whether `Host` names this machine or an `allowed_hosts` entry.
    pub(crate) fn check_host(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), ApiError> {
        let text = match headers.get(header::HOST) {
            Some(value) => value.to_str().ok().map(str::to_owned),
            None => uri
                .authority()
                .map(|authority| authority.as_str().to_owned()),
        };
        let refused = |shown: &str| {
            ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                "host_not_allowed",
                format!(
                    "the Host `{shown}` is not a loopback name (localhost, 127.0.0.1, [::1]) \
                     nor one of serve.allowed_hosts"
                ),
            )
            .with("host", shown)
        };
        let Some(text) = text else {
            return Err(refused(""));
        };
        let Some(host) = HostEntry::parse(&text) else {
            return Err(refused(&text));
        };
        let loopback = LOOPBACK_HOSTS.contains(&host.host.as_str());
        if loopback || self.allowed_hosts.iter().any(|entry| entry.matches(&host)) {
            Ok(())
        } else {
            Err(refused(&text))
        }
    }

    /// `Ok(true)` when the origin is one of `allowed_origins`, `Ok(false)` when it is a
    /// loopback origin of this server.
    fn check_origin(&self, text: &str) -> Result<bool, ApiError> {
        let refused = || {
            ApiError::new(
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
                format!(
                    "requests from the origin `{text}` are refused: only this server's own \
                     loopback origin and serve.allowed_origins are accepted"
                ),
            )
            .with("origin", text)
        };
        let origin = Origin::parse(text).ok_or_else(refused)?;
        if self.allowed_origins.contains(&origin) {
            return Ok(true);
        }
        let loopback = matches!(origin.scheme.as_str(), "http" | "https")
            && LOOPBACK_HOSTS.contains(&origin.host.as_str())
            && self.port.is_none_or(|port| origin.port == Some(port));
        if loopback { Ok(false) } else { Err(refused()) }
    }
}

/// The middleware: refuses a request [`RequestGuard::check`] refuses.
pub(crate) async fn guard_request(
    State(guard): State<Arc<RequestGuard>>,
    request: Request,
    next: Next,
) -> Response {
    match guard.check(request.headers(), request.uri()) {
        Ok(()) => next.run(request).await,
        Err(error) => {
            tracing::warn!(
                status = %error.status,
                reason = %error.body.get("error").unwrap_or(&serde_json::Value::Null),
                "refused a request from outside the allowed hosts and origins"
            );
            error.into_response()
        }
    }
}

/// The console's extra check: `Host` names this machine (or an `allowed_hosts` entry)
/// even when a bearer token lets the API skip it. The console's routes need no token
/// (its login trades a code for one), so a DNS-rebinding page is refused by name.
pub(crate) async fn guard_console_host(
    State(guard): State<Arc<RequestGuard>>,
    request: Request,
    next: Next,
) -> Response {
    match guard.check_host(request.headers(), request.uri()) {
        Ok(()) => next.run(request).await,
        Err(error) => {
            tracing::warn!("refused a console request for another host name");
            error.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn guard(config: CoordinatorConfig) -> RequestGuard {
        RequestGuard::new(&config, Some(8080))
    }

    fn code(result: Result<(), ApiError>) -> Option<String> {
        result
            .err()
            .map(|error| error.body["error"].as_str().unwrap().to_owned())
    }

    #[test]
    fn loopback_hosts_pass_with_any_port_and_others_are_421() {
        let guard = guard(CoordinatorConfig::default());
        let uri = Uri::from_static("/agents");
        for host in [
            "localhost:8080",
            "127.0.0.1:9",
            "[::1]:8080",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert_eq!(
                guard.check(&headers(&[("host", host)]), &uri),
                Ok(()),
                "{host}"
            );
        }
        for host in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.nip.io:8080",
            "user@localhost:8080",
            "localhost.",
            "",
        ] {
            let error = guard.check(&headers(&[("host", host)]), &uri).unwrap_err();
            assert_eq!(error.status, StatusCode::MISDIRECTED_REQUEST, "{host}");
            assert_eq!(error.body["error"], "host_not_allowed");
        }
        assert_eq!(
            code(guard.check(&HeaderMap::new(), &uri)).as_deref(),
            Some("host_not_allowed")
        );
        // HTTP/2 carries the authority in the URI.
        let h2 = Uri::from_static("http://localhost:8080/agents");
        assert_eq!(guard.check(&HeaderMap::new(), &h2), Ok(()));
    }

    #[test]
    fn allowed_hosts_add_names_and_a_token_alone_skips_the_host_check() {
        let config = CoordinatorConfig {
            allowed_hosts: vec!["api.example.lan".into(), "box.lan:9000".into()],
            ..CoordinatorConfig::default()
        };
        let guard = RequestGuard::new(&config, None);
        let uri = Uri::from_static("/agents");
        for host in ["api.example.lan:8080", "API.example.lan", "box.lan:9000"] {
            assert_eq!(
                guard.check(&headers(&[("host", host)]), &uri),
                Ok(()),
                "{host}"
            );
        }
        for host in ["box.lan:9001", "box.lan", "evil.example"] {
            assert!(
                guard.check(&headers(&[("host", host)]), &uri).is_err(),
                "{host}"
            );
        }
        let token_only = RequestGuard::new(
            &CoordinatorConfig {
                auth_token: Some("t".into()),
                ..CoordinatorConfig::default()
            },
            None,
        );
        assert_eq!(
            token_only.check(&headers(&[("host", "oxydra.lan:8080")]), &uri),
            Ok(())
        );
        let token_and_hosts = RequestGuard::new(
            &CoordinatorConfig {
                auth_token: Some("t".into()),
                ..config
            },
            None,
        );
        assert!(
            token_and_hosts
                .check(&headers(&[("host", "oxydra.lan:8080")]), &uri)
                .is_err()
        );
    }

    #[test]
    fn foreign_null_and_other_port_origins_are_403() {
        let guard = guard(CoordinatorConfig::default());
        let uri = Uri::from_static("/runs");
        let with_origin = |origin: &str| {
            guard.check(
                &headers(&[("host", "127.0.0.1:8080"), ("origin", origin)]),
                &uri,
            )
        };
        for origin in [
            "http://localhost:8080",
            "http://127.0.0.1:8080",
            "http://[::1]:8080",
            "HTTP://LOCALHOST:8080",
        ] {
            assert_eq!(with_origin(origin), Ok(()), "{origin}");
        }
        for origin in [
            "http://evil.example",
            "https://evil.example:8080",
            "null",
            "http://localhost:3000",
            "http://localhost",
            "file://",
            "http://user@localhost:8080",
            "not an origin",
        ] {
            let error = with_origin(origin).unwrap_err();
            assert_eq!(error.status, StatusCode::FORBIDDEN, "{origin}");
            assert_eq!(error.body["error"], "origin_not_allowed", "{origin}");
        }
    }

    #[test]
    fn allowed_origins_are_accepted_even_cross_site() {
        let config = CoordinatorConfig {
            allowed_origins: vec!["https://dash.example.lan".into()],
            ..CoordinatorConfig::default()
        };
        let guard = RequestGuard::new(&config, Some(8080));
        let uri = Uri::from_static("/runs");
        let allowed = headers(&[
            ("host", "localhost:8080"),
            ("origin", "https://dash.example.lan:443"),
            ("sec-fetch-site", "cross-site"),
        ]);
        assert_eq!(guard.check(&allowed, &uri), Ok(()));
        let other = headers(&[
            ("host", "localhost:8080"),
            ("origin", "http://dash.example.lan"),
        ]);
        assert!(guard.check(&other, &uri).is_err());
    }

    #[test]
    fn cross_site_fetches_are_403_without_an_origin_too() {
        let guard = guard(CoordinatorConfig::default());
        let uri = Uri::from_static("/runs/x");
        let error = guard
            .check(
                &headers(&[("host", "localhost:8080"), ("sec-fetch-site", "cross-site")]),
                &uri,
            )
            .unwrap_err();
        assert_eq!(error.status, StatusCode::FORBIDDEN);
        assert_eq!(error.body["error"], "cross_site_request");
        for site in ["same-origin", "none", "same-site"] {
            assert_eq!(
                guard.check(
                    &headers(&[("host", "localhost:8080"), ("sec-fetch-site", site)]),
                    &uri
                ),
                Ok(()),
                "{site}"
            );
        }
    }
}
