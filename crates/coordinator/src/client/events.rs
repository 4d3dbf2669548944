//! A run's Server-Sent Events (`GET /runs/{id}/events`) as a client reads them:
//! `event:`, `id:` and `data:` lines, blocks ended by an empty line, comments
//! (keep-alives) skipped. A connection that drops before the run ends is opened again
//! with `Last-Event-ID`, so no event is lost or repeated.

use std::collections::VecDeque;

use futures::Stream;
use serde_json::Value;

use super::Client;
use crate::error::CoordinatorError;
use crate::person::TranscriptMessage;
use crate::run::Run;

/// How many times in a row a dropped stream is opened again before giving up.
pub const MAX_RECONNECTS: u32 = 5;

/// One event of a run's stream, as the server sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    /// `run` (the run changed), `message` (a message of its conversation), `end` (the
    /// run ended; the last event) or `error` (the server could not go on; the last
    /// event).
    pub kind: String,
    /// Its `id:`, what `Last-Event-ID` resumes after.
    pub id: Option<String>,
    /// Its data, parsed as JSON (a string when it is not JSON).
    pub data: Value,
}

impl RunEvent {
    /// The run of a `run` or `end` event.
    pub fn run(&self) -> Option<Run> {
        matches!(self.kind.as_str(), "run" | "end")
            .then(|| serde_json::from_value(self.data.clone()).ok())
            .flatten()
    }

    /// The message of a `message` event.
    pub fn message(&self) -> Option<TranscriptMessage> {
        (self.kind == "message")
            .then(|| serde_json::from_value(self.data.clone()).ok())
            .flatten()
    }

    /// Whether the stream ends with this event (`end` or `error`).
    pub fn is_last(&self) -> bool {
        matches!(self.kind.as_str(), "end" | "error")
    }
}

/// Splits the complete event blocks off the front of `buffer` (what arrived so far),
/// leaving an incomplete block in it.
pub fn take_events(buffer: &mut String) -> Vec<RunEvent> {
    let mut events = Vec::new();
    while let Some(end) = buffer.find("\n\n") {
        let block: String = buffer.drain(..end + 2).collect();
        let mut kind = String::from("message");
        let mut id = None;
        let mut data: Option<String> = None;
        for line in block.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => kind = value.to_owned(),
                "id" => id = Some(value.to_owned()),
                "data" => match &mut data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                _ => {}
            }
        }
        if let Some(data) = data {
            events.push(RunEvent {
                kind,
                id,
                data: serde_json::from_str(&data).unwrap_or(Value::String(data)),
            });
        }
    }
    events
}

/// Where a stream is between two reads.
struct Reader {
    client: Client,
    path: String,
    last: Option<String>,
    response: Option<reqwest::Response>,
    buffer: String,
    queued: VecDeque<RunEvent>,
    reconnects: u32,
    done: bool,
}

impl Reader {
    /// The next event, or `None` once the stream ended.
    async fn next(&mut self) -> Option<Result<RunEvent, CoordinatorError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(event) = self.queued.pop_front() {
                self.done = event.is_last();
                return Some(Ok(event));
            }
            let Some(response) = self.response.as_mut() else {
                match self.open().await {
                    Ok(response) => self.response = Some(response),
                    Err(error) => {
                        self.done = true;
                        return Some(Err(error));
                    }
                }
                continue;
            };
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    self.reconnects = 0;
                    self.buffer.push_str(&String::from_utf8_lossy(&chunk));
                    for event in take_events(&mut self.buffer) {
                        if event.id.is_some() {
                            self.last.clone_from(&event.id);
                        }
                        self.queued.push_back(event);
                    }
                }
                // Closed (or broken) before the end: open it again after the last id.
                Ok(None) | Err(_) => {
                    self.response = None;
                    self.buffer.clear();
                    self.reconnects += 1;
                    if self.reconnects > MAX_RECONNECTS {
                        self.done = true;
                        return Some(Err(self.client.failure(
                            None,
                            "unreachable",
                            "the run's event stream kept closing before the run ended".into(),
                        )));
                    }
                }
            }
        }
    }

    /// Opens the stream, after the last event received if any.
    async fn open(&self) -> Result<reqwest::Response, CoordinatorError> {
        let mut request = self.client.http.get(self.client.url(&self.path));
        if let Some(last) = &self.last {
            request = request.header("Last-Event-ID", last);
        }
        let response = self.client.authorized(request).send().await;
        let response = response.map_err(|error| self.client.unreachable(&error))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        Err(self.client.answered(status, &text))
    }
}

/// The events of `path` read from `client`, after `last_event_id`.
pub(crate) fn stream(
    client: Client,
    path: String,
    last_event_id: Option<String>,
) -> impl Stream<Item = Result<RunEvent, CoordinatorError>> + Send + 'static {
    let reader = Reader {
        client,
        path,
        last: last_event_id,
        response: None,
        buffer: String::new(),
        queued: VecDeque::new(),
        reconnects: 0,
        done: false,
    };
    futures::stream::unfold(reader, |mut reader| async move {
        let next = reader.next().await?;
        Some((next, reader))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_become_events_and_comments_are_skipped() {
        let mut buffer = String::from(
            ": keep-alive\n\nevent: run\nid: 0.1f\ndata: {\"status\":\"running\"}\n\nevent: end\nda",
        );
        let events = take_events(&mut buffer);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, "run");
        assert_eq!(events[0].id.as_deref(), Some("0.1f"));
        assert_eq!(events[0].data["status"], "running");
        assert!(!events[0].is_last());
        assert_eq!(buffer, "event: end\nda");
    }

    #[test]
    fn data_lines_join_and_text_that_is_not_json_stays_text() {
        let mut buffer = String::from("data: one\ndata: two\n\nevent: error\ndata:\n\n");
        let events = take_events(&mut buffer);
        assert_eq!(events[0].kind, "message");
        assert_eq!(events[0].data, Value::String("one\ntwo".into()));
        assert_eq!(events[0].message(), None);
        assert_eq!(events[0].run(), None);
        assert_eq!(events[1].kind, "error");
        assert!(events[1].is_last());
        assert!(buffer.is_empty());
    }
}
