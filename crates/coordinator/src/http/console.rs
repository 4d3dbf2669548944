//! The web console at `/` (`CoordinatorConfig::console`): one hand-written page,
//! script and style sheet, embedded in the binary, served with a strict Content
//! Security Policy (no inline script or style, everything from this origin only, no
//! framing). The assets hold no data, so they are served without the bearer token;
//! the page trades the one-time code of a `#login=` fragment for it (`POST
//! /console/login`, [`super::login`]) or asks for it, keeps it in the tab's
//! sessionStorage and sends it with every API call, which the API's guards (token,
//! `Host`, `Origin`, fetch metadata) check as for any client.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("../../console/index.html");
const SCRIPT: &str = include_str!("../../console/app.js");
const STYLE: &str = include_str!("../../console/app.css");

/// The policy every console response carries.
pub const CONSOLE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONSOLE_CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `GET /`: the console page.
#[utoipa::path(get, path = "/", tag = "console", responses(
    (status = 200, description = "The web console (HTML; no token needed, it holds no data)", content_type = "text/html", body = String),
))]
pub(crate) async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

/// `GET /console/app.js`: the console's script.
#[utoipa::path(get, path = "/console/app.js", tag = "console", responses(
    (status = 200, description = "The console's script", content_type = "text/javascript", body = String),
))]
pub(crate) async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /console/app.css`: the console's style sheet.
#[utoipa::path(get, path = "/console/app.css", tag = "console", responses(
    (status = 200, description = "The console's style sheet", content_type = "text/css", body = String),
))]
pub(crate) async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_no_inline_script_or_style_and_loads_its_own() {
        assert!(INDEX.contains(r#"<script src="/console/app.js" defer></script>"#));
        assert_eq!(
            INDEX.matches("<script").count(),
            1,
            "one script, from a file"
        );
        assert!(!INDEX.contains("<style"), "no inline style sheet");
        assert!(!INDEX.contains(" style="), "no inline style attribute");
        let handler = INDEX.split(" on").skip(1).any(|rest| {
            let name: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert!(!handler, "no inline event handler");
        // The script builds no HTML from text.
        assert!(!SCRIPT.contains("innerHTML") && !SCRIPT.contains("outerHTML"));
        assert!(!SCRIPT.contains("eval(") && !SCRIPT.contains("new Function"));
    }
}
