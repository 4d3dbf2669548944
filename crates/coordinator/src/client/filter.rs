//! The filters of `GET /runs` as a client sends them ([`RunFilter`]).

use crate::run::RunStatus;

/// Which runs [`Client::list_runs`](super::Client::list_runs) asks for: the query
/// parameters of `GET /runs`, each left out when `None`.
///
/// The values go to the server as given and the server checks them: a bad one is
/// answered `400 invalid_query` naming it (`CoordinatorError::Client` with that
/// `field`), so a client and the server never disagree on what is valid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only runs with this status (`pending`, `running`, `waiting_approval`,
    /// `completed`, `failed`, `cancelled`; see [`RunFilter::with_status`]).
    pub status: Option<String>,
    /// Only runs of this blueprint.
    pub agent: Option<String>,
    /// Only runs created since: Unix milliseconds, or a duration back from now
    /// (`90s`, `15m`, `2h`, `7d`).
    pub since: Option<String>,
    /// At most this many runs (1 to 500; the server's default is 50).
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page: the page after it.
    pub cursor: Option<String>,
}

impl RunFilter {
    /// Every run, the server's first page.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same filter, only runs with `status`.
    pub fn with_status(mut self, status: RunStatus) -> Self {
        self.status = Some(status.as_str().to_owned());
        self
    }

    /// The same filter, the page after `cursor` (a page's `next_cursor`).
    pub fn after(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// The query string (without `?`), empty without a filter.
    pub(crate) fn query(&self) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        let limit = self.limit.map(|limit| limit.to_string());
        for (key, value) in [
            ("status", self.status.as_deref()),
            ("agent", self.agent.as_deref()),
            ("since", self.since.as_deref()),
            ("limit", limit.as_deref()),
            ("cursor", self.cursor.as_deref()),
        ] {
            if let Some(value) = value {
                query.append_pair(key, value);
            }
        }
        query.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_given_filters_are_sent_and_values_are_encoded() {
        assert_eq!(RunFilter::new().query(), "");
        let filter = RunFilter {
            agent: Some("a&b=c d".into()),
            limit: Some(7),
            ..RunFilter::new().with_status(RunStatus::WaitingApproval)
        }
        .after("5.run_ab");
        assert_eq!(
            filter.query(),
            "status=waiting_approval&agent=a%26b%3Dc+d&limit=7&cursor=5.run_ab"
        );
    }
}
