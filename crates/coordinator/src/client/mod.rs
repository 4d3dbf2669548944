//! The typed HTTP client of the coordinator's API (feature `client`): what
//! `oxydra runs` and `oxydra approvals` use, for a program of your own that lists,
//! follows, cancels and starts runs of a running `oxydra serve`, and decides the
//! approvals they wait for.
//!
//! Answers are the API's own types ([`Run`], [`RunPage`], [`ApprovalView`],
//! [`RunCreated`], [`AgentListing`], [`RunChanges`], [`RunReverted`]); a refusal is
//! [`CoordinatorError::Client`] with the HTTP status, the server's error `code` and
//! the `field` it named. The client reads no environment: the base URL and the bearer
//! token are arguments.
//!
//! ```no_run
//! use futures::StreamExt;
//! use oxydra_coordinator::client::{Client, RunFilter};
//! use oxydra_coordinator::{ApprovalDecision, RunStatus};
//!
//! # async fn demo() -> Result<(), oxydra_coordinator::CoordinatorError> {
//! let client = Client::new("http://127.0.0.1:8080", Some("the-token".into()))?;
//! let created = client
//!     .create_run("researcher", serde_json::json!({"prompt": "Find X."}))
//!     .await?;
//! // Decide what waits, then follow the run to its end.
//! for waiting in client.list_approvals().await? {
//!     let decision = ApprovalDecision::ApproveOnce;
//!     client
//!         .decide(&waiting.waiting.run_id, waiting.waiting.approval.approval_id.as_str(), &decision)
//!         .await?;
//! }
//! let mut events = Box::pin(client.events(&created.run_id, None));
//! while let Some(event) = events.next().await {
//!     let event = event?;
//!     if let Some(run) = event.run() {
//!         println!("{}: {}", run.run_id, run.status);
//!     }
//! }
//! let page = client
//!     .list_runs(&RunFilter::new().with_status(RunStatus::Completed))
//!     .await?;
//! println!("{} completed", page.runs.len());
//! # Ok(())
//! # }
//! ```

mod events;
mod filter;

pub use events::{MAX_RECONNECTS, RunEvent, take_events};
pub use filter::RunFilter;

use futures::Stream;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::coordinator::{AgentListing, RunCreated};
use crate::error::CoordinatorError;
use crate::person::{ApprovalView, RunPage};
use crate::run::Run;
use crate::run_changes::{RevertRequest, RunChanges, RunReverted};
use oxydra_runtime::ApprovalDecision;

/// A client of one running `oxydra serve` (its HTTP API, docs/coordinator.md).
///
/// Cheap to clone: clones share the connection pool.
#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

/// The body of `GET /approvals`.
#[derive(Deserialize)]
struct ApprovalList {
    approvals: Vec<ApprovalView>,
}

impl Client {
    /// A client of the server at `base_url` (`http://` or `https://` with a host; a
    /// path prefix is kept), sending `token` as `Authorization: Bearer` when given.
    ///
    /// Fails with `CoordinatorError::Client` (code `invalid_url`, no status) when
    /// `base_url` is not such a URL. Nothing is sent yet.
    pub fn new(base_url: &str, token: Option<String>) -> Result<Self, CoordinatorError> {
        let base = url::Url::parse(base_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| CoordinatorError::Client {
                server: base_url.to_owned(),
                status: None,
                code: "invalid_url".into(),
                message: format!(
                    "expected the http:// or https:// URL of an `oxydra serve`, found `{base_url}`"
                ),
                field: None,
            })?;
        Ok(Self {
            base: base.as_str().trim_end_matches('/').to_owned(),
            token,
            http: oxydra_http::client(),
        })
    }

    /// The server's base URL, without a trailing `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `GET /runs`: a page of runs, newest first, as `filter` asks; its
    /// `next_cursor` continues ([`RunFilter::after`]).
    pub async fn list_runs(&self, filter: &RunFilter) -> Result<RunPage, CoordinatorError> {
        let query = filter.query();
        let path = if query.is_empty() {
            "/runs".to_owned()
        } else {
            format!("/runs?{query}")
        };
        self.send(self.http.get(self.url(&path))).await
    }

    /// `GET /runs/{id}`: one run.
    pub async fn run(&self, run_id: &str) -> Result<Run, CoordinatorError> {
        let path = format!("/runs/{}", segment(run_id));
        self.send(self.http.get(self.url(&path))).await
    }

    /// `DELETE /runs/{id}`: cancels the run; the run as it is afterwards.
    pub async fn cancel(&self, run_id: &str) -> Result<Run, CoordinatorError> {
        let path = format!("/runs/{}", segment(run_id));
        self.send(self.http.delete(self.url(&path))).await
    }

    /// `GET /runs/{id}/changes`: what the run changed in the workspace, per turn.
    pub async fn changes(&self, run_id: &str) -> Result<RunChanges, CoordinatorError> {
        let path = format!("/runs/{}/changes", segment(run_id));
        self.send(self.http.get(self.url(&path))).await
    }

    /// `POST /runs/{id}/revert`: takes the files back to the state before
    /// `request.to_turn` (default: everything the run changed). Paths changed since
    /// by someone else refuse it (code `revert_conflicts`, naming them) unless
    /// `request.force`; an active run refuses it (`run_active`).
    pub async fn revert(
        &self,
        run_id: &str,
        request: &RevertRequest,
    ) -> Result<RunReverted, CoordinatorError> {
        let path = format!("/runs/{}/revert", segment(run_id));
        self.send(self.http.post(self.url(&path)).json(request))
            .await
    }

    /// `GET /runs/{id}/events`: the run's events as they come, after
    /// `last_event_id` (a [`RunEvent::id`]) when given: first what is stored, then
    /// each change, until the `end` event (the stream then ends).
    ///
    /// A connection that drops before the end is opened again after the last event
    /// received, at most [`MAX_RECONNECTS`] times in a row. An error (an unknown run,
    /// a bad `Last-Event-ID`, no answer) is the stream's last item.
    pub fn events(
        &self,
        run_id: &str,
        last_event_id: Option<&str>,
    ) -> impl Stream<Item = Result<RunEvent, CoordinatorError>> + Send + 'static {
        events::stream(
            self.clone(),
            format!("/runs/{}/events", segment(run_id)),
            last_event_id.map(str::to_owned),
        )
    }

    /// `GET /approvals`: the approvals waiting across runs, oldest first, each with
    /// what it will do.
    pub async fn list_approvals(&self) -> Result<Vec<ApprovalView>, CoordinatorError> {
        let list: ApprovalList = self.send(self.http.get(self.url("/approvals"))).await?;
        Ok(list.approvals)
    }

    /// `POST /runs/{run}/approvals/{approval}`: decides one request run `run_id`
    /// waits for (a denial's reason is in [`ApprovalDecision::Deny`]); the run as it
    /// is afterwards.
    pub async fn decide(
        &self,
        run_id: &str,
        approval_id: &str,
        decision: &ApprovalDecision,
    ) -> Result<Run, CoordinatorError> {
        let path = format!(
            "/runs/{}/approvals/{}",
            segment(run_id),
            segment(approval_id)
        );
        self.send(self.http.post(self.url(&path)).json(decision))
            .await
    }

    /// `POST /runs`: starts a run of blueprint `agent` with `parameters` (checked
    /// against its schema by the server: `parameter_validation_failed`).
    pub async fn create_run(
        &self,
        agent: &str,
        parameters: Value,
    ) -> Result<RunCreated, CoordinatorError> {
        let body = json!({"agent_name": agent, "parameters": parameters});
        self.send(self.http.post(self.url("/runs")).json(&body))
            .await
    }

    /// `GET /agents`: the server's blueprints.
    pub async fn agents(&self) -> Result<AgentListing, CoordinatorError> {
        self.send(self.http.get(self.url("/agents"))).await
    }

    /// The URL of `path` (which starts with `/`, its segments encoded).
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `request` with the token.
    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Sends `request`: the answer of a 2xx read as `T`, else the server's error.
    async fn send<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, CoordinatorError> {
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
        if !status.is_success() {
            return Err(self.answered(status.as_u16(), &text));
        }
        serde_json::from_str(&text).map_err(|error| {
            self.failure(
                Some(status.as_u16()),
                "invalid_response",
                format!("the server's answer is not what the API answers: {error}"),
            )
        })
    }

    /// The error the server answered with `status` and the body `text`
    /// (`{error, message, field?}`).
    fn answered(&self, status: u16, text: &str) -> CoordinatorError {
        let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let word = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
        CoordinatorError::Client {
            server: self.base.clone(),
            status: Some(status),
            code: word("error").unwrap_or_else(|| "http_error".into()),
            message: word("message").unwrap_or_else(|| format!("the server answered {status}")),
            field: word("field"),
        }
    }

    /// No answer: `error` from reqwest.
    fn unreachable(&self, error: &reqwest::Error) -> CoordinatorError {
        self.failure(
            None,
            "unreachable",
            format!("cannot reach the server: {error}"),
        )
    }

    /// A failure of this client's own.
    fn failure(&self, status: Option<u16>, code: &str, message: String) -> CoordinatorError {
        CoordinatorError::Client {
            server: self.base.clone(),
            status,
            code: code.to_owned(),
            message,
            field: None,
        }
    }
}

/// `segment` percent-encoded for a URL path.
fn segment(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_must_be_an_http_url_with_a_host() {
        for bad in ["localhost:8080", "ftp://x", "", "http://", "not a url"] {
            let Err(CoordinatorError::Client { code, status, .. }) = Client::new(bad, None) else {
                panic!("{bad} was taken");
            };
            assert_eq!((code.as_str(), status), ("invalid_url", None), "{bad}");
        }
        let client = Client::new("http://127.0.0.1:9/prefix/", None).unwrap();
        assert_eq!(client.url("/runs"), "http://127.0.0.1:9/prefix/runs");
    }

    #[test]
    fn an_answer_keeps_the_servers_code_and_field_and_a_bare_status_is_http_error() {
        let client = Client::new("http://127.0.0.1:9", None).unwrap();
        let error = client.answered(
            400,
            r#"{"error": "invalid_query", "message": "bad", "field": "since"}"#,
        );
        let CoordinatorError::Client {
            status,
            code,
            field,
            ..
        } = &error
        else {
            panic!("{error:?}");
        };
        assert_eq!(
            (*status, code.as_str(), field.as_deref()),
            (Some(400), "invalid_query", Some("since"))
        );
        assert!(
            error.to_string().ends_with("bad (field `since`)"),
            "{error}"
        );
        let bare = client.answered(502, "<html>bad gateway</html>");
        assert!(matches!(
            &bare,
            CoordinatorError::Client { code, status: Some(502), field: None, .. } if code == "http_error"
        ));
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }
}
