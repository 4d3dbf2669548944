//! Server-sent events, as a provider streams them.

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` line (Anthropic names its events; OpenAI does not).
    pub event: Option<String>,
    /// The `data:` payload.
    pub data: String,
}

impl SseEvent {
    /// An unnamed event.
    pub fn data(data: impl Into<String>) -> Self {
        Self {
            event: None,
            data: data.into(),
        }
    }

    /// A named event.
    pub fn named(event: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            event: Some(event.into()),
            data: data.into(),
        }
    }

    /// The event on the wire, blank line included.
    pub fn encode(&self) -> String {
        match &self.event {
            Some(event) => format!("event: {event}\ndata: {}\n\n", self.data),
            None => format!("data: {}\n\n", self.data),
        }
    }
}

/// `events` on the wire, one after the other.
pub(crate) fn encode(events: &[SseEvent]) -> String {
    events.iter().map(SseEvent::encode).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_unnamed_events_encode_as_the_wire_has_them() {
        let events = [SseEvent::named("ping", "{}"), SseEvent::data("[DONE]")];
        assert_eq!(encode(&events), "event: ping\ndata: {}\n\ndata: [DONE]\n\n");
    }
}
