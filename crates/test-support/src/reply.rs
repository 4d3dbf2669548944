//! What the mock server answers to one request.

use tokio::sync::watch;

use crate::sse::{SseEvent, encode};

/// One scripted answer: a status, headers and a body, and how the body is delivered
/// (all at once, in pieces, held until the test releases it, held for ever, or
/// generated without end).
#[derive(Debug, Clone)]
pub struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// Send the body as a stream (no `content-length`), as providers send events.
    pub(crate) stream: bool,
    /// Send the body in pieces of this many bytes (0: all at once).
    pub(crate) chunk_size: usize,
    /// Stop after this many bytes of the body until the gate opens; a gate whose
    /// [`Release`] is gone never opens.
    pub(crate) hold: Option<(usize, watch::Receiver<bool>)>,
    /// After the body, send this piece over and over until this many bytes went out
    /// in all (or the client hangs up).
    pub(crate) endless: Option<(Vec<u8>, usize)>,
}

impl Reply {
    /// An empty answer with `status` and no headers.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            stream: false,
            chunk_size: 0,
            hold: None,
            endless: None,
        }
    }

    /// A 200 `text/event-stream` answer with `body` as is (a recorded stream), sent
    /// as a stream without `content-length`, like a provider sends its events.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        let mut reply = Self::new(200)
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .body(body);
        reply.stream = true;
        reply
    }

    /// A 200 `text/event-stream` answer made of `events`.
    pub fn events(events: &[SseEvent]) -> Self {
        Self::sse(encode(events))
    }

    /// An `application/json` answer with `status` (any status: errors too), sent whole
    /// with its `content-length`.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self::new(status)
            .header("content-type", "application/json")
            .body(body)
    }

    /// A `302 Found` to `location`.
    pub fn redirect(location: impl Into<String>) -> Self {
        Self::new(302).header("location", &location.into())
    }

    /// Adds a header (`retry-after`, `content-length`, …).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Replaces the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Delivers the body in pieces of `size` bytes, yielding between them, so the
    /// client sees a stream split at arbitrary points.
    pub fn chunked(mut self, size: usize) -> Self {
        self.chunk_size = size;
        self
    }

    /// Sends the first `at` bytes of the body, then waits until the test calls
    /// [`Release::release`] before sending the rest. A [`Release`] dropped unused
    /// holds the rest for ever.
    pub fn held_at(mut self, at: usize) -> (Self, Release) {
        let (open, gate) = watch::channel(false);
        self.hold = Some((at.min(self.body.len()), gate));
        (self, Release(open))
    }

    /// Sends the whole body, then keeps the response open (no end of stream) until the
    /// client hangs up or the server stops.
    pub fn hanging(self) -> Self {
        let at = self.body.len();
        self.held_at(at).0
    }

    /// After the body, sends `piece` over and over (generated as it goes, never held
    /// whole) until `limit` bytes went out in all or the client hangs up: a hostile
    /// provider that never ends. [`crate::MockServer::bytes_sent`] tells how far it got.
    pub fn endless(mut self, piece: impl Into<Vec<u8>>, limit: usize) -> Self {
        self.endless = Some((piece.into(), limit));
        self
    }
}

/// The test's handle on a reply made with [`Reply::held_at`].
#[derive(Debug)]
pub struct Release(watch::Sender<bool>);

impl Release {
    /// Lets the server send the rest of the held body (now, or as soon as it gets there).
    pub fn release(&self) {
        self.0.send_replace(true);
    }
}
