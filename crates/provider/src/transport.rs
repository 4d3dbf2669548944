//! Sending a request and reading an SSE body, with cancellation and timeouts.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use oxydra_types::StreamItem;
use tokio_util::sync::CancellationToken;
use tracing::Span;

use crate::accumulator::StreamAccumulator;
use crate::call_span::{call_span, record_outcome, record_usage};
use crate::error::ProviderError;
use crate::http_error::{error_from_status, excerpt, transport_error};
use crate::provider::ProviderStream;
use crate::request::ProviderResponse;
use crate::response_cap::{ResponseCap, message_bytes, read_capped, too_large};
use crate::retry_policy::{
    SHOULD_RETRY_HEADER, parse_retry_after, parse_should_retry, with_retry_advice,
};
use crate::sse::{SseEvent, SseParser};

/// Turns SSE events of one API into stream items.
pub(crate) trait EventDecoder: Send + 'static {
    /// Decodes `event`, pushing any items it yields onto `out`.
    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<StreamItem>,
    ) -> Result<(), ProviderError>;

    /// Whether the end-of-stream marker (`[DONE]`, `message_stop`) has been seen.
    fn is_done(&self) -> bool;

    /// The end marker, for the error when the stream is cut before it.
    fn end_marker(&self) -> &'static str;

    /// The body ended (after its last event): a format whose end is the end of the
    /// body (Gemini's) yields its last items here and becomes done.
    fn end_of_body(&mut self, _out: &mut VecDeque<StreamItem>) -> Result<(), ProviderError> {
        Ok(())
    }
}

/// Decodes a whole (non-streamed) body that holds one event of the stream format
/// `decoder` reads (Gemini's `generateContent`, Ollama's `/api/chat` without
/// `stream`) into a response. `api` names the API in the error for a body that is not
/// a finished answer.
pub(crate) fn decode_whole_body<D: EventDecoder>(
    mut decoder: D,
    body: &[u8],
    api: &str,
) -> Result<ProviderResponse, ProviderError> {
    let event = SseEvent {
        event: String::new(),
        data: String::from_utf8_lossy(body).into_owned(),
    };
    let mut items = VecDeque::new();
    decoder.decode(&event, &mut items)?;
    decoder.end_of_body(&mut items)?;
    if !decoder.is_done() {
        return Err(ProviderError::Decode {
            what: format!("{api} response without {}", decoder.end_marker()),
            excerpt: excerpt(&event.data),
        });
    }
    let mut accumulator = StreamAccumulator::new();
    items.iter().for_each(|item| accumulator.push(item));
    accumulator.finish()
}

/// How a body is cut into events: server-sent events, or newline-delimited JSON.
pub(crate) trait Framing: Send + 'static {
    /// Takes `chunk` in and hands each whole event to `on_event`.
    fn feed(
        &mut self,
        chunk: &[u8],
        on_event: &mut dyn FnMut(&SseEvent) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError>;

    /// Ends the input, handing on an event left open.
    fn finish(
        &mut self,
        on_event: &mut dyn FnMut(&SseEvent) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError>;

    /// Bytes held for the event being read.
    fn pending_bytes(&self) -> usize;

    /// Events handed on so far.
    fn events_dispatched(&self) -> u64;

    /// Bytes taken in so far.
    fn bytes_consumed(&self) -> u64;

    /// What one event is called in messages ("server-sent event").
    fn unit(&self) -> &'static str;
}

impl Framing for SseParser {
    fn feed(
        &mut self,
        chunk: &[u8],
        on_event: &mut dyn FnMut(&SseEvent) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        SseParser::feed(self, chunk, on_event)
    }

    fn finish(
        &mut self,
        on_event: &mut dyn FnMut(&SseEvent) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        SseParser::finish(self, on_event)
    }

    fn pending_bytes(&self) -> usize {
        SseParser::pending_bytes(self)
    }

    fn events_dispatched(&self) -> u64 {
        SseParser::events_dispatched(self)
    }

    fn bytes_consumed(&self) -> u64 {
        SseParser::bytes_consumed(self)
    }

    fn unit(&self) -> &'static str {
        "bytes in one server-sent event"
    }
}

/// Whether a request's answer is streamed (its response begins at once) or whole
/// (its response begins when the answer is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// A streamed answer: the response must begin within the first-byte timeout.
    Streamed,
    /// A whole answer: only the request timeout bounds it.
    Whole,
}

/// The URL of `request` without its query or credentials, for messages.
fn shown_url(request: &reqwest::Request) -> String {
    let url = request.url();
    format!(
        "{}://{}{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port().map(|p| format!(":{p}")).unwrap_or_default()
    ) + url.path()
}

/// Sends `request` and returns the response when its status is a success; otherwise
/// reads the body and maps it to a [`ProviderError`]. Stops at once on `cancel`. A
/// streamed request whose response does not begin within the config's
/// `first_byte_timeout` is a [`ProviderError::FirstByteTimeout`].
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    config: &crate::config::ProviderConfig,
    cancel: &CancellationToken,
    answer: Answer,
) -> Result<reqwest::Response, ProviderError> {
    let timeout = config.request_timeout;
    let (client, request) = request.build_split();
    let request = request.map_err(|e| transport_error(&e, timeout))?;
    let url = shown_url(&request);
    let (wait, first_byte) = match answer {
        Answer::Streamed if config.first_byte_timeout < timeout => {
            (config.first_byte_timeout, true)
        }
        Answer::Streamed | Answer::Whole => (timeout, false),
    };
    let sending = tokio::time::timeout(wait, client.execute(request));
    let response = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(ProviderError::Cancelled),
        result = sending => match result {
            Err(_) if first_byte => {
                return Err(ProviderError::FirstByteTimeout { url, after: wait });
            }
            Err(_) => return Err(ProviderError::Timeout(wait)),
            Ok(result) => result.map_err(|e| transport_error(&e, wait))?,
        },
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()));
    let should_retry = response
        .headers()
        .get(SHOULD_RETRY_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_should_retry);
    let body = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(ProviderError::Cancelled),
        body = tokio::time::timeout(timeout, read_capped(response, MAX_ERROR_BODY_BYTES)) => match body {
            Ok(Ok(Ok(body))) => String::from_utf8_lossy(&body).into_owned(),
            Ok(Ok(Err(_))) => format!("(an error body of more than {MAX_ERROR_BODY_BYTES} bytes)"),
            Ok(Err(_)) | Err(_) => String::new(),
        },
    };
    Err(with_retry_advice(
        with_key_source(
            error_from_status(status.as_u16(), retry_after, &body),
            config,
        ),
        should_retry,
    ))
}

/// An authentication error saying whether a key was sent and from which variable
/// ([`ProviderConfig::api_key_source`](crate::ProviderConfig::api_key_source)); any
/// other error as it is.
fn with_key_source(error: ProviderError, config: &crate::config::ProviderConfig) -> ProviderError {
    match error {
        ProviderError::Auth { status, message } => ProviderError::Auth {
            status,
            message: format!(
                "{}: {message}",
                key_use(config.api_key.is_some(), config.api_key_source.as_deref())
            ),
        },
        other => other,
    }
}

/// Whether a key was sent, and from where, in words.
pub(crate) fn key_use(sent: bool, source: Option<&str>) -> String {
    match (sent, source) {
        (true, Some(var)) => format!("the server refused the API key from {var}"),
        (true, None) => "the server refused the API key".to_owned(),
        (false, Some(var)) => {
            format!("no API key was sent (set {var}, or api_key_env in [provider])")
        }
        (false, None) => {
            "no API key was sent (name the variable that holds one with api_key_env in [provider])"
                .to_owned()
        }
    }
}

/// The most of an error response's body that is read (it is only quoted).
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Reads a whole body of at most `limit` bytes, with cancellation and a timeout.
pub(crate) async fn read_body(
    response: reqwest::Response,
    limit: usize,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Vec<u8>, ProviderError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ProviderError::Cancelled),
        body = tokio::time::timeout(timeout, read_capped(response, limit)) => match body {
            Err(_) => Err(ProviderError::Timeout(timeout)),
            Ok(body) => body.map_err(|e| transport_error(&e, timeout))?,
        },
    }
}

struct SseState<S, D, F> {
    body: S,
    parser: F,
    decoder: D,
    queue: VecDeque<StreamItem>,
    error: Option<ProviderError>,
    ended: bool,
    cancel: CancellationToken,
    idle_timeout: Duration,
    span: Span,
    started: Instant,
    /// The first bytes of the body, kept until an event has been read, to quote
    /// when the body turns out not to be an event stream at all.
    head: Vec<u8>,
    /// The bytes of text, reasoning and tool calls decoded so far, against the response cap.
    cap: ResponseCap,
    /// The most one event (or one line) may take.
    max_event_bytes: usize,
}

/// How much of the body's start is kept for [`SseState::head`].
const HEAD_BYTES: usize = 300;

impl<S, D, F> SseState<S, D, F>
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Send + Unpin + 'static,
    D: EventDecoder,
    F: Framing,
{
    /// Reads more of the body, filling the queue (or setting the error / end).
    async fn fill(&mut self) {
        let next = tokio::select! {
            biased;
            () = self.cancel.cancelled() => {
                self.error = Some(ProviderError::Cancelled);
                return;
            }
            next = tokio::time::timeout(self.idle_timeout, self.body.next()) => next,
        };
        let Self {
            parser,
            decoder,
            queue,
            head,
            cap,
            ..
        } = self;
        let mut decode = |event: &SseEvent| {
            let before = queue.len();
            decoder.decode(event, queue)?;
            let taken = queue
                .iter()
                .skip(before)
                .try_for_each(|item| cap.take(item));
            if taken.is_err() {
                // Nothing of the event that passed the cap is handed on.
                queue.truncate(before);
            }
            taken
        };
        let outcome = match next {
            Err(_) => Err(ProviderError::Timeout(self.idle_timeout)),
            Ok(Some(Ok(chunk))) => {
                if parser.events_dispatched() == 0 && head.len() < HEAD_BYTES {
                    let room = HEAD_BYTES - head.len();
                    head.extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
                }
                parser.feed(&chunk, &mut decode).and_then(|()| {
                    if parser.pending_bytes() > self.max_event_bytes {
                        Err(too_large(self.max_event_bytes, parser.unit()))
                    } else {
                        Ok(())
                    }
                })
            }
            Ok(Some(Err(error))) => Err(transport_error(&error, self.idle_timeout)),
            Ok(None) => parser.finish(&mut decode).and_then(|()| {
                if !decoder.is_done() {
                    decoder.end_of_body(queue)?;
                }
                if decoder.is_done() {
                    Ok(())
                } else if parser.events_dispatched() == 0 {
                    Err(ProviderError::Decode {
                        what: format!(
                            "event stream: the body ({} bytes) held no events",
                            parser.bytes_consumed()
                        ),
                        excerpt: excerpt(&String::from_utf8_lossy(head)),
                    })
                } else {
                    Err(ProviderError::Transport {
                        message: format!(
                            "stream ended before {} after {} bytes",
                            decoder.end_marker(),
                            parser.bytes_consumed()
                        ),
                    })
                }
            }),
        };
        match outcome {
            Err(error) => self.error = Some(error),
            Ok(()) if self.decoder.is_done() => self.ended = true,
            Ok(()) => {}
        }
    }

    fn finish_span(&self, outcome: &str) {
        let millis = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.span.record("latency_ms", millis);
        self.span
            .in_scope(|| tracing::debug!(outcome, "provider stream ended"));
    }
}

/// One non-streaming call: sends `request` under a `provider.call` span, reads the
/// body and hands it to `parse`, recording the outcome on the span.
pub(crate) async fn complete_call(
    provider: &str,
    model: &str,
    request: reqwest::RequestBuilder,
    config: &crate::config::ProviderConfig,
    cancel: &CancellationToken,
    parse: impl FnOnce(&[u8]) -> Result<ProviderResponse, ProviderError>,
) -> Result<ProviderResponse, ProviderError> {
    use tracing::Instrument;
    let span = call_span(provider, model, false);
    let started = Instant::now();
    let timeout = config.request_timeout;
    let result = async {
        let response = send(request, config, cancel, Answer::Whole).await?;
        let bytes = read_body(response, config.max_wire_bytes(), timeout, cancel).await?;
        let response = parse(&bytes)?;
        if message_bytes(&response.message) > config.max_response_bytes {
            return Err(too_large(
                config.max_response_bytes,
                crate::response_cap::TEXT_AND_CALLS,
            ));
        }
        Ok(response)
    }
    .instrument(span.clone())
    .await;
    record_outcome(&span, started, &result);
    result
}

/// One streaming call: sends `request` under a `provider.call` span and, once the
/// status is a success, returns the SSE body decoded by `decoder`.
pub(crate) async fn stream_call<D: EventDecoder>(
    provider: &str,
    model: &str,
    request: reqwest::RequestBuilder,
    config: &crate::config::ProviderConfig,
    cancel: &CancellationToken,
    decoder: D,
) -> Result<ProviderStream, ProviderError> {
    framed_stream_call(
        provider,
        model,
        request,
        config,
        cancel,
        SseParser::new(),
        decoder,
    )
    .await
}

/// [`stream_call`] for a body cut into events by `framing`.
pub(crate) async fn framed_stream_call<D: EventDecoder, F: Framing>(
    provider: &str,
    model: &str,
    request: reqwest::RequestBuilder,
    config: &crate::config::ProviderConfig,
    cancel: &CancellationToken,
    framing: F,
    decoder: D,
) -> Result<ProviderStream, ProviderError> {
    use tracing::Instrument;
    let span = call_span(provider, model, true);
    let started = Instant::now();
    let response = send(request, config, cancel, Answer::Streamed)
        .instrument(span.clone())
        .await
        .inspect_err(|error| {
            span.in_scope(|| tracing::debug!(error = %error, "provider call failed"));
        })?;
    Ok(sse_stream(
        response,
        framing,
        decoder,
        SseLimits {
            cancel: cancel.clone(),
            idle_timeout: config.stream_idle_timeout,
            max_response_bytes: config.max_response_bytes,
            max_event_bytes: config.max_wire_bytes(),
        },
        span,
        started,
    ))
}

/// What bounds an SSE stream.
pub(crate) struct SseLimits {
    /// Stops the stream at once.
    pub cancel: CancellationToken,
    /// Longest silence between two chunks.
    pub idle_timeout: Duration,
    /// The most text and tool-call bytes the response may hold.
    pub max_response_bytes: usize,
    /// The most one event (or line) may take.
    pub max_event_bytes: usize,
}

/// A [`ProviderStream`] over an SSE `response`, decoded by `decoder`.
///
/// Items come out in order; a failure (cancellation, timeout, broken connection,
/// undecodable event, cut before the end marker, a response or event past its cap) is
/// yielded once as an error and ends the stream. The stream ends after the decoder has seen the end marker, without
/// waiting for the server to close the connection.
pub(crate) fn sse_stream<D: EventDecoder, F: Framing>(
    response: reqwest::Response,
    framing: F,
    decoder: D,
    limits: SseLimits,
    span: Span,
    started: Instant,
) -> ProviderStream {
    let state = SseState {
        body: Box::pin(response.bytes_stream()),
        parser: framing,
        decoder,
        queue: VecDeque::new(),
        error: None,
        ended: false,
        cancel: limits.cancel,
        idle_timeout: limits.idle_timeout,
        span,
        started,
        head: Vec::new(),
        cap: ResponseCap::new(limits.max_response_bytes),
        max_event_bytes: limits.max_event_bytes,
    };
    Box::pin(futures::stream::unfold(Some(state), |state| async move {
        let mut state = state?;
        loop {
            if let Some(item) = state.queue.pop_front() {
                record_usage(&state.span, &item);
                return Some((Ok(item), Some(state)));
            }
            if let Some(error) = state.error.take() {
                state.finish_span("error");
                state
                    .span
                    .in_scope(|| tracing::debug!(error = %error, "provider stream failed"));
                return Some((Err(error), None));
            }
            if state.ended {
                state.finish_span("ok");
                return None;
            }
            state.fill().await;
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;

    fn refused(config: &ProviderConfig) -> String {
        let error = error_from_status(401, None, r#"{"error":{"message":"Incorrect API key"}}"#);
        with_key_source(error, config).to_string()
    }

    #[test]
    fn a_refused_key_names_its_variable() {
        let config = ProviderConfig::new("http://x", Some("sk-1".into()))
            .with_api_key_source("OPENAI_API_KEY");
        assert_eq!(
            refused(&config),
            "authentication failed (401): the server refused the API key from OPENAI_API_KEY: Incorrect API key"
        );
        let config = ProviderConfig::new("http://x", Some("sk-1".into()));
        assert!(refused(&config).contains("the server refused the API key: Incorrect"));
    }

    #[test]
    fn a_missing_key_says_none_was_sent_and_how_to_send_one() {
        let config = ProviderConfig::new("http://x", None);
        let message = refused(&config);
        assert!(message.contains("no API key was sent"), "{message}");
        assert!(message.contains("api_key_env in [provider]"), "{message}");
        let config = ProviderConfig::new("http://x", None).with_api_key_source("MY_KEY");
        assert!(refused(&config).contains("no API key was sent (set MY_KEY, or api_key_env"));
    }

    #[test]
    fn other_errors_are_left_as_they_are() {
        let config = ProviderConfig::new("http://x", None);
        let error = with_key_source(error_from_status(400, None, "bad"), &config);
        assert_eq!(error.to_string(), "invalid request: HTTP 400: bad");
    }
}
