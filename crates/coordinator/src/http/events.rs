//! `GET /runs/{id}/events`: a run as Server-Sent Events. First what is stored (the
//! run, then its conversation's messages), then each change as it happens, until the
//! run ends (an `end` event, then the stream closes).
//!
//! Events: `run` (the run as `GET /runs/{id}` answers it, whenever it changes),
//! `message` (one stored message of the conversation, scrubbed:
//! [`TranscriptMessage`](crate::TranscriptMessage)), `end` (the ended run). Every
//! event has an `id:` of the form `<last message sequence>.<run fingerprint>`, so a
//! client reconnecting with `Last-Event-ID` gets only the messages after it and the
//! run only if it changed since. The state is read from the store (polled), so any
//! coordinator sharing the store serves the same stream.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;

use super::errors::ApiError;
use super::extract::PathParam;
use crate::coordinator::Coordinator;
use crate::run::Run;

/// How often the store is read for changes.
const POLL: Duration = Duration::from_millis(250);

/// Where a stream is: the last message sequence sent and the fingerprint of the last
/// run sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Position {
    sequence: u64,
    fingerprint: u64,
}

impl Position {
    /// Reads a `Last-Event-ID`.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (sequence, fingerprint) = text.trim().split_once('.')?;
        Some(Self {
            sequence: sequence.parse().ok()?,
            fingerprint: u64::from_str_radix(fingerprint, 16).ok()?,
        })
    }

    fn id(self) -> String {
        format!("{}.{:016x}", self.sequence, self.fingerprint)
    }
}

/// FNV-1a of `bytes`: stable across processes and builds (unlike `DefaultHasher`).
fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

struct RunStream {
    coordinator: Coordinator,
    run_id: String,
    at: Position,
    queued: VecDeque<Event>,
    first: bool,
    done: bool,
}

impl RunStream {
    /// Reads what changed since `at` into `queued`.
    async fn read(&mut self) -> Result<(), ApiError> {
        let run = self.coordinator.get_run(&self.run_id).await?;
        let messages = self
            .coordinator
            .transcript(&self.run_id, self.at.sequence)
            .await?;
        for message in messages {
            self.at.sequence = message.sequence;
            let data = serde_json::to_string(&message).unwrap_or_default();
            self.queued.push_back(
                Event::default()
                    .event("message")
                    .id(self.at.id())
                    .data(data),
            );
        }
        self.push_run(&run);
        Ok(())
    }

    fn push_run(&mut self, run: &Run) {
        let data = serde_json::to_string(run).unwrap_or_default();
        let print = fingerprint(data.as_bytes());
        let ended = run.status.is_terminal();
        if print != self.at.fingerprint || ended {
            self.at.fingerprint = print;
            let kind = if ended { "end" } else { "run" };
            self.queued
                .push_back(Event::default().event(kind).id(self.at.id()).data(data));
        }
        self.done = ended;
    }

    async fn next(mut self) -> Option<(Result<Event, Infallible>, Self)> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some((Ok(event), self));
            }
            if self.done {
                return None;
            }
            if !self.first {
                tokio::time::sleep(POLL).await;
            }
            self.first = false;
            if let Err(error) = self.read().await {
                let data = error.body.to_string();
                self.done = true;
                return Some((Ok(Event::default().event("error").data(data)), self));
            }
        }
    }
}

/// `GET /runs/{id}/events`.
#[utoipa::path(
    get,
    path = "/runs/{id}/events",
    tag = "runs",
    params(
        ("id" = String, Path, description = "The run id"),
        ("Last-Event-ID" = Option<String>, Header, description = "The `id` of the last event received: resume after it"),
    ),
    responses(
        (status = 200, description = "`text/event-stream`: events `run`, `message`, `end` (then the stream closes)", content_type = "text/event-stream", body = String),
        (status = 400, description = "`invalid_header`: a `Last-Event-ID` this server did not send", body = crate::api_schemas::ErrorBody),
        (status = 404, description = "`run_not_found`", body = crate::api_schemas::ErrorBody),
    )
)]
pub(crate) async fn run_events(
    State(coordinator): State<Coordinator>,
    PathParam(run_id): PathParam,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let at = match headers.get("last-event-id") {
        None => Position::default(),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(Position::parse)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_header",
                    "`Last-Event-ID` must be the `id` of an event of this stream",
                )
                .with("field", "Last-Event-ID")
            })?,
    };
    // A run that does not exist is a 404 before the stream starts.
    coordinator.get_run(&run_id).await?;
    let state = RunStream {
        coordinator,
        run_id,
        at,
        queued: VecDeque::new(),
        first: true,
        done: false,
    };
    let stream = futures::stream::unfold(state, RunStream::next);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_reads_back_its_id_and_nothing_else() {
        let at = Position {
            sequence: 12,
            fingerprint: fingerprint(b"run"),
        };
        assert_eq!(Position::parse(&at.id()), Some(at));
        for bad in ["", "12", "x.00", "12.zz", "-1.00"] {
            assert_eq!(Position::parse(bad), None, "{bad}");
        }
    }
}
