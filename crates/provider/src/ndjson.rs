//! A small newline-delimited JSON reader.
//!
//! Bytes go in as they arrive ([`NdjsonReader::feed`]); each whole line comes out as
//! the `data` of an [`SseEvent`] (so the stream decoders read both formats alike).
//! Lines end in `\n` (a `\r` before it is dropped); blank lines are skipped; a line
//! split across chunks is stitched together. [`NdjsonReader::finish`] hands on a last
//! line that has no newline.

use crate::sse::SseEvent;

/// An incremental NDJSON line reader. Reuses its buffers between lines.
#[derive(Debug, Default)]
pub struct NdjsonReader {
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    /// The line being handed on.
    current: SseEvent,
    /// Bytes taken in, for diagnostics.
    consumed: u64,
    /// Lines delivered so far.
    dispatched: u64,
}

impl NdjsonReader {
    /// A new reader.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes fed so far.
    pub fn bytes_consumed(&self) -> u64 {
        self.consumed
    }

    /// Lines delivered so far.
    pub fn lines_dispatched(&self) -> u64 {
        self.dispatched
    }

    /// Bytes held of a line not yet ended. A caller bounds one line's size by checking
    /// this after each [`feed`](Self::feed).
    pub fn pending_bytes(&self) -> usize {
        self.partial.len()
    }

    /// Takes `chunk` in and calls `on_line` for each line it completes. Stops early and
    /// returns the error if `on_line` fails.
    pub fn feed<E>(
        &mut self,
        chunk: &[u8],
        mut on_line: impl FnMut(&SseEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        self.consumed = self.consumed.saturating_add(chunk.len() as u64);
        let mut rest = chunk;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            let (line, after) = rest.split_at(end);
            rest = after.get(1..).unwrap_or_default();
            if self.partial.is_empty() {
                self.line(line, &mut on_line)?;
            } else {
                self.partial.extend_from_slice(line);
                let whole = std::mem::take(&mut self.partial);
                let outcome = self.line(&whole, &mut on_line);
                self.partial = whole;
                self.partial.clear();
                outcome?;
            }
        }
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Ends the input: a last line without a newline is handed on.
    pub fn finish<E>(
        &mut self,
        mut on_line: impl FnMut(&SseEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        let whole = std::mem::take(&mut self.partial);
        self.line(&whole, &mut on_line)
    }

    fn line<E>(
        &mut self,
        line: &[u8],
        on_line: &mut impl FnMut(&SseEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        self.current.data.clear();
        self.current.data.push_str(&String::from_utf8_lossy(line));
        self.dispatched = self.dispatched.saturating_add(1);
        on_line(&self.current)
    }
}

impl crate::transport::Framing for NdjsonReader {
    fn feed(
        &mut self,
        chunk: &[u8],
        on_event: &mut dyn FnMut(&SseEvent) -> Result<(), crate::ProviderError>,
    ) -> Result<(), crate::ProviderError> {
        NdjsonReader::feed(self, chunk, on_event)
    }

    fn finish(
        &mut self,
        on_event: &mut dyn FnMut(&SseEvent) -> Result<(), crate::ProviderError>,
    ) -> Result<(), crate::ProviderError> {
        NdjsonReader::finish(self, on_event)
    }

    fn pending_bytes(&self) -> usize {
        NdjsonReader::pending_bytes(self)
    }

    fn events_dispatched(&self) -> u64 {
        self.dispatched
    }

    fn bytes_consumed(&self) -> u64 {
        self.consumed
    }

    fn unit(&self) -> &'static str {
        "bytes in one NDJSON line"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_in_chunks(input: &[u8], size: usize) -> Vec<String> {
        let mut reader = NdjsonReader::new();
        let mut lines = Vec::new();
        for chunk in input.chunks(size) {
            reader
                .feed::<()>(chunk, |e| {
                    lines.push(e.data.clone());
                    Ok(())
                })
                .unwrap();
        }
        reader
            .finish::<()>(|e| {
                lines.push(e.data.clone());
                Ok(())
            })
            .unwrap();
        lines
    }

    #[test]
    fn lines_survive_any_chunking() {
        let input = b"{\"a\":1}\r\n\n  \n{\"b\":\"\xc3\xa9\"}\n{\"c\":3}";
        for size in 1..input.len() {
            assert_eq!(
                lines_in_chunks(input, size),
                vec!["{\"a\":1}", "{\"b\":\"\u{e9}\"}", "{\"c\":3}"],
                "chunk size {size}"
            );
        }
    }

    #[test]
    fn a_line_not_ended_is_pending_and_counted() {
        let mut reader = NdjsonReader::new();
        reader.feed::<()>(b"{\"x\":", |_| Ok(())).unwrap();
        assert_eq!(reader.pending_bytes(), 5);
        assert_eq!(reader.lines_dispatched(), 0);
        let mut seen = 0;
        reader
            .feed::<()>(b"1}\n", |_| {
                seen += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(
            (seen, reader.pending_bytes(), reader.bytes_consumed()),
            (1, 0, 8)
        );
    }

    #[test]
    fn an_error_stops_feeding() {
        let mut reader = NdjsonReader::new();
        let mut seen = 0;
        let outcome = reader.feed(b"a\nb\nc\n", |_| {
            seen += 1;
            Err("stop")
        });
        assert_eq!((outcome, seen), (Err("stop"), 1));
    }
}
