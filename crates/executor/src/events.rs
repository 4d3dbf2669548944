//! Where the executor reports `ToolStarted` / `ToolCompleted` / `ToolFailed`.

use std::sync::Mutex;

use oxydra_types::RuntimeEvent;
use tokio::sync::mpsc::UnboundedSender;

/// Receives the executor's tool events. `emit` must not block: it is called from the
/// executor's own task while calls are in flight.
pub trait ToolEventSink: Send + Sync {
    /// Take one event.
    fn emit(&self, event: RuntimeEvent);
}

/// Drops every event.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopEventSink;

impl ToolEventSink for NoopEventSink {
    fn emit(&self, _event: RuntimeEvent) {}
}

/// Keeps every event in order, for callers that read them after the batch.
#[derive(Debug, Default)]
pub struct CollectingEventSink {
    events: Mutex<Vec<RuntimeEvent>>,
}

impl CollectingEventSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The events so far, in the order they were emitted.
    pub fn events(&self) -> Vec<RuntimeEvent> {
        match self.events.lock() {
            Ok(events) => events.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Take the events so far, leaving the sink empty.
    pub fn take(&self) -> Vec<RuntimeEvent> {
        match self.events.lock() {
            Ok(mut events) => std::mem::take(&mut *events),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

impl ToolEventSink for CollectingEventSink {
    fn emit(&self, event: RuntimeEvent) {
        match self.events.lock() {
            Ok(mut events) => events.push(event),
            Err(poisoned) => poisoned.into_inner().push(event),
        }
    }
}

/// Forwards events to a channel; a closed receiver drops them.
impl ToolEventSink for UnboundedSender<RuntimeEvent> {
    fn emit(&self, event: RuntimeEvent) {
        // A receiver that went away no longer wants events; that is not an error here.
        let _ = self.send(event);
    }
}
