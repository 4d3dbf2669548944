//! A small, fast Server-Sent Events parser.
//!
//! Bytes go in as they arrive from the network ([`SseParser::feed`]); whole events
//! come out. Lines end in `\n`, `\r\n` or `\r`; `data:` lines of one event are joined
//! with `\n`; comment lines (`:` first) are skipped; an event ends at a blank line.
//! Events and lines split across chunks are stitched together, including a `\r\n`
//! split between two chunks. [`SseParser::finish`] flushes an event left open at the
//! end of the body (some servers omit the final blank line).

/// One Server-Sent Event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when absent (the SSE default type is `message`).
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// An incremental SSE parser. Reuses its buffers between events.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    /// The event being built.
    current: SseEvent,
    /// Whether the current event has any `data:` line.
    has_data: bool,
    /// The previous chunk ended in `\r`: a `\n` starting the next chunk belongs to it.
    after_cr: bool,
    /// Bytes taken in, for diagnostics.
    consumed: u64,
    /// Events delivered so far.
    dispatched: u64,
}

impl SseParser {
    /// A new parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes fed so far.
    pub fn bytes_consumed(&self) -> u64 {
        self.consumed
    }

    /// Events delivered so far.
    pub fn events_dispatched(&self) -> u64 {
        self.dispatched
    }

    /// Bytes held for the event being read: the part of a line not yet ended and the
    /// `data` gathered so far. A caller bounds one event's size by checking this after
    /// each [`feed`](Self::feed).
    pub fn pending_bytes(&self) -> usize {
        self.partial
            .len()
            .saturating_add(self.current.data.len())
            .saturating_add(self.current.event.len())
    }

    /// Whether input is pending: part of a line, or an event not yet ended.
    pub fn has_pending(&self) -> bool {
        !self.partial.is_empty() || self.has_data || !self.current.event.is_empty()
    }

    /// Takes `chunk` in and calls `on_event` for each event it completes. Stops early
    /// and returns the error if `on_event` fails.
    pub fn feed<E>(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(&SseEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        self.consumed = self.consumed.saturating_add(chunk.len() as u64);
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(tail) = rest.strip_prefix(b"\n") {
                rest = tail;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let (line, after) = rest.split_at(end);
            let terminator_len = match after {
                [b'\r', b'\n', ..] => 2,
                [b'\r'] => {
                    self.after_cr = true;
                    1
                }
                _ => 1,
            };
            rest = after.get(terminator_len..).unwrap_or_default();
            if self.partial.is_empty() {
                self.line(line, &mut on_event)?;
            } else {
                self.partial.extend_from_slice(line);
                let whole = std::mem::take(&mut self.partial);
                let outcome = self.line(&whole, &mut on_event);
                self.partial = whole;
                self.partial.clear();
                outcome?;
            }
        }
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Ends the input: a last line without a newline is read, and an event left
    /// open is delivered.
    pub fn finish<E>(
        &mut self,
        mut on_event: impl FnMut(&SseEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.partial.is_empty() {
            let whole = std::mem::take(&mut self.partial);
            self.line(&whole, &mut on_event)?;
        }
        self.line(b"", &mut on_event)
    }

    /// Processes one line (without its terminator).
    fn line<E>(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(&SseEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        if line.is_empty() {
            if self.has_data {
                self.dispatched = self.dispatched.saturating_add(1);
                let outcome = on_event(&self.current);
                self.current.data.clear();
                self.current.event.clear();
                self.has_data = false;
                return outcome;
            }
            self.current.event.clear();
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(0) => return Ok(()), // comment
            Some(colon) => {
                let (field, value) = line.split_at(colon);
                let value = value.get(1..).unwrap_or_default();
                (field, value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => {
                self.current.event.clear();
                self.current.event.push_str(&String::from_utf8_lossy(value));
            }
            _ => {} // id, retry and unknown fields are not needed
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for chunk in input.chunks(size) {
            parser
                .feed::<()>(chunk, |e| {
                    events.push(e.clone());
                    Ok(())
                })
                .unwrap();
        }
        parser
            .finish::<()>(|e| {
                events.push(e.clone());
                Ok(())
            })
            .unwrap();
        events
    }

    fn event(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn parses_fields_comments_and_multiline_data_at_any_chunking() {
        let input =
            b": keep-alive\r\nevent: ping\r\ndata: {\"a\":1}\r\n\r\ndata: one\ndata:two\n\n\
            id: 7\nretry: 10\ndata: x\r\rdata: last";
        let expected = vec![
            event("ping", "{\"a\":1}"),
            event("", "one\ntwo"),
            event("", "x"),
            event("", "last"),
        ];
        for size in 1..=input.len() {
            assert_eq!(parse_in_chunks(input, size), expected, "chunk size {size}");
        }
    }

    #[test]
    fn events_without_data_are_not_dispatched_and_utf8_split_is_joined() {
        let input = "event: lonely\n\ndata: héllo ✓\n\n".as_bytes();
        for size in 1..=input.len() {
            assert_eq!(parse_in_chunks(input, size), vec![event("", "héllo ✓")]);
        }
    }

    #[test]
    fn pending_bytes_grow_with_an_unfinished_event_and_reset_after_it() {
        let mut parser = SseParser::new();
        parser
            .feed::<()>(b"data: abc\ndata: de", |_| Ok(()))
            .unwrap();
        assert_eq!(parser.pending_bytes(), "abc".len() + "data: de".len());
        parser.feed::<()>(b"f\n\n", |_| Ok(())).unwrap();
        assert_eq!(parser.pending_bytes(), 0);
    }

    #[test]
    fn callback_errors_stop_parsing() {
        let mut parser = SseParser::new();
        let mut seen = 0;
        let result = parser.feed(b"data: a\n\ndata: b\n\n", |_| {
            seen += 1;
            Err("stop")
        });
        assert_eq!(result, Err("stop"));
        assert_eq!(seen, 1);
    }
}
