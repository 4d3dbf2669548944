//! A run's Server-Sent Events (`GET /runs/{id}/events`) read as they come: `event:`,
//! `id:` and `data:` lines, blocks ended by an empty line, comments (keep-alives)
//! skipped. A dropped connection is resumed with `Last-Event-ID`.

use serde_json::Value;

use super::{Server, api_error, segment};
use crate::error::CliError;

/// One event of a run's stream.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    /// `run`, `message`, `end` or `error`.
    pub kind: String,
    /// Its `id:` (to resume after).
    pub id: Option<String>,
    /// Its data, parsed.
    pub data: Value,
}

/// Splits complete event blocks off the front of `buffer`.
pub fn take_events(buffer: &mut String) -> Vec<RunEvent> {
    let mut events = Vec::new();
    while let Some(end) = buffer.find("\n\n") {
        let block: String = buffer.drain(..end + 2).collect();
        let mut kind = String::from("message");
        let mut id = None;
        let mut data = String::new();
        let mut any = false;
        for line in block.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => kind = value.to_owned(),
                "id" => id = Some(value.to_owned()),
                "data" => {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(value);
                    any = true;
                }
                _ => {}
            }
        }
        if any {
            events.push(RunEvent {
                kind,
                id,
                data: serde_json::from_str(&data).unwrap_or(Value::String(data)),
            });
        }
    }
    events
}

/// Reads run `run_id`'s events from `server`, handing each to `seen`, until the run
/// ends (`end`) or `seen` returns `false`. A connection that drops before the end is
/// opened again after the last event received (at most 5 times in a row).
pub async fn follow(
    server: &Server,
    run_id: &str,
    mut seen: impl FnMut(&RunEvent) -> Result<bool, CliError>,
) -> Result<(), CliError> {
    let url = server.url(&format!("/runs/{}/events", segment(run_id)));
    let mut last: Option<String> = None;
    let mut retries = 0;
    loop {
        let mut request = server.client().get(&url);
        if let Some(last) = &last {
            request = request.header("Last-Event-ID", last);
        }
        let response =
            server
                .authorized(request)
                .send()
                .await
                .map_err(|error| CliError::Server {
                    server: server.base().to_owned(),
                    message: format!("cannot reach the server: {error}"),
                })?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let body = response.json::<Value>().await.unwrap_or(Value::Null);
            return Err(api_error(status, &body, server.base()));
        }
        let mut response = response;
        let mut buffer = String::new();
        while let Some(chunk) = response.chunk().await.ok().flatten() {
            retries = 0;
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            for event in take_events(&mut buffer) {
                if event.id.is_some() {
                    last.clone_from(&event.id);
                }
                if !seen(&event)? || event.kind == "end" || event.kind == "error" {
                    return Ok(());
                }
            }
        }
        retries += 1;
        if retries > 5 {
            return Err(CliError::Server {
                server: server.base().to_owned(),
                message: "the run's event stream kept closing before the run ended".into(),
            });
        }
    }
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
        assert_eq!(buffer, "event: end\nda");
    }
}
