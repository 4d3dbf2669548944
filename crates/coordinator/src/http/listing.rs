//! `GET /runs` (a page of runs, filtered) and `GET /approvals` (what waits for a
//! person). A bad query parameter is `400 invalid_query` naming the field.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;

use super::errors::ApiError;
use crate::coordinator::Coordinator;
use crate::person::{ApprovalView, RunPage};
use crate::run::{RunStatus, now_millis};
use crate::run_query::{MAX_RUN_PAGE, RunCursor, RunQuery};

/// The query parameters of `GET /runs`.
#[derive(Debug, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub(crate) struct RunListParams {
    /// Only runs with this status: `pending`, `running`, `waiting_approval`,
    /// `completed`, `failed` or `cancelled`.
    status: Option<String>,
    /// Only runs of this blueprint.
    agent: Option<String>,
    /// Only runs created at or after this time: Unix milliseconds, or a duration
    /// back from now (`90s`, `15m`, `2h`, `7d`).
    since: Option<String>,
    /// At most this many runs (1 to 500, default 50).
    limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// A `400 invalid_query` naming `field`.
fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message).with("field", field)
}

/// Reads `GET /runs`'s query string into a [`RunQuery`].
pub(crate) fn run_query(raw: Option<&str>, now: i64) -> Result<RunQuery, ApiError> {
    let mut query = RunQuery::default();
    let mut seen: Vec<String> = Vec::new();
    for (key, value) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        if seen.iter().any(|other| *other == key) {
            return Err(invalid(&key, format!("`{key}` is given more than once")));
        }
        seen.push(key.to_string());
        match key.as_ref() {
            "status" => {
                query.status = Some(RunStatus::parse(&value).ok_or_else(|| {
                    invalid(
                        "status",
                        "`status` must be one of pending, running, waiting_approval, \
                         completed, failed, cancelled",
                    )
                })?);
            }
            "agent" => {
                if value.is_empty() || value.len() > 256 {
                    return Err(invalid(
                        "agent",
                        "`agent` must be a blueprint name (1 to 256 bytes)",
                    ));
                }
                query.agent = Some(value.into_owned());
            }
            "since" => query.since = Some(since(&value, now)?),
            "limit" => {
                query.limit = value
                    .parse::<u32>()
                    .ok()
                    .filter(|limit| (1..=MAX_RUN_PAGE).contains(limit))
                    .ok_or_else(|| {
                        invalid(
                            "limit",
                            format!("`limit` must be an integer from 1 to {MAX_RUN_PAGE}"),
                        )
                    })?;
            }
            "cursor" => {
                query.after = Some(RunCursor::parse(&value).ok_or_else(|| {
                    invalid(
                        "cursor",
                        "`cursor` must be the `next_cursor` of a previous page",
                    )
                })?);
            }
            other => {
                return Err(invalid(
                    other,
                    format!(
                        "unknown query parameter `{other}`: the filters are status, agent, \
                         since, limit and cursor"
                    ),
                ));
            }
        }
    }
    Ok(query)
}

/// `since`: Unix milliseconds, or `<n>s|m|h|d` back from `now`.
fn since(value: &str, now: i64) -> Result<i64, ApiError> {
    let bad = || {
        invalid(
            "since",
            "`since` must be Unix milliseconds or a duration back from now (`15m`, `2h`, `7d`)",
        )
    };
    if let Ok(millis) = value.parse::<i64>() {
        return if millis >= 0 { Ok(millis) } else { Err(bad()) };
    }
    let unit = value.chars().last().ok_or_else(bad)?;
    let count: i64 = value
        .get(..value.len() - unit.len_utf8())
        .and_then(|count| count.parse().ok())
        .filter(|count| *count >= 0)
        .ok_or_else(bad)?;
    let millis_per = match unit {
        's' => 1_000,
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        _ => return Err(bad()),
    };
    count
        .checked_mul(millis_per)
        .map(|back| now.saturating_sub(back))
        .ok_or_else(bad)
}

/// `GET /runs`: runs newest first, filtered, a page at a time.
#[utoipa::path(
    get,
    path = "/runs",
    tag = "runs",
    params(RunListParams),
    responses(
        (status = 200, description = "A page of runs, newest first", body = RunPage),
        (status = 400, description = "`invalid_query`, with `field` naming the bad parameter", body = crate::api_schemas::ErrorBody),
    )
)]
pub(crate) async fn list_runs(
    State(coordinator): State<Coordinator>,
    RawQuery(raw): RawQuery,
) -> Result<Json<RunPage>, ApiError> {
    let query = run_query(raw.as_deref(), now_millis())?;
    Ok(Json(coordinator.list_runs(query).await?))
}

/// `GET /approvals`: the approvals waiting across runs, oldest first, each with what
/// it will do.
#[utoipa::path(
    get,
    path = "/approvals",
    tag = "approvals",
    responses(
        (status = 200, description = "The approvals that wait, oldest first, each with its `preview` (`kind`: `command`, `url`, `diff` or `arguments`)", body = ApprovalList),
    )
)]
pub(crate) async fn list_approvals(
    State(coordinator): State<Coordinator>,
) -> Result<Json<ApprovalList>, ApiError> {
    Ok(Json(ApprovalList {
        approvals: coordinator.waiting_approvals().await?,
    }))
}

/// The body of `GET /approvals`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub(crate) struct ApprovalList {
    /// The approvals that wait, oldest first.
    approvals: Vec<ApprovalView>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(raw: &str) -> String {
        let error = run_query(Some(raw), 10_000_000).unwrap_err();
        assert_eq!(error.status, StatusCode::BAD_REQUEST);
        assert_eq!(error.body["error"], "invalid_query");
        error.body["field"].as_str().unwrap().to_owned()
    }

    #[test]
    fn every_filter_is_read() {
        let query = run_query(
            Some("status=waiting_approval&agent=writer&since=2h&limit=7&cursor=5.run_ab"),
            10_000_000,
        )
        .unwrap();
        assert_eq!(query.status, Some(RunStatus::WaitingApproval));
        assert_eq!(query.agent.as_deref(), Some("writer"));
        assert_eq!(query.since, Some(10_000_000 - 7_200_000));
        assert_eq!(query.limit, 7);
        assert_eq!(query.after, Some(RunCursor::after(5, "run_ab")));
        assert_eq!(run_query(Some("since=1234"), 0).unwrap().since, Some(1234));
        assert_eq!(run_query(None, 0).unwrap(), RunQuery::default());
    }

    #[test]
    fn a_bad_parameter_is_400_naming_it() {
        assert_eq!(field("status=done"), "status");
        assert_eq!(field("since=yesterday"), "since");
        assert_eq!(field("since=-5"), "since");
        assert_eq!(field("since=99999999999999999d"), "since");
        assert_eq!(field("limit=0"), "limit");
        assert_eq!(field("limit=501"), "limit");
        assert_eq!(field("limit=ten"), "limit");
        assert_eq!(field("cursor=nope"), "cursor");
        assert_eq!(field("agent="), "agent");
        assert_eq!(field("order=asc"), "order");
        assert_eq!(field("status=pending&status=running"), "status");
    }
}
