//! Where a run's events go: the [`EventSink`] trait that takes each [`RuntimeEvent`],
//! the runtime's sink, a per-run sink and the stream form.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use oxydra_executor::HookChain;
pub use oxydra_executor::{CollectingEventSink, NoopEventSink};
use oxydra_scrubbing::Scrubber;
pub use oxydra_types::RuntimeEvent;
use oxydra_types::{RuntimeProgressEvent, RuntimeProgressKind, Usage};
use tokio::sync::mpsc;

use crate::event_scrub::scrub_event;

/// Receives the [`RuntimeEvent`]s of runs: progress, streamed text, tool and
/// lifecycle events, each run ending with one `final` or `error` event. Give one to
/// the whole runtime with [`AgentRuntimeBuilder::event_sink`](crate::AgentRuntimeBuilder::event_sink)
/// or to one run with [`RunRequest::events`](crate::RunRequest::events).
///
/// Events arrive scrubbed of secrets. `emit` must not block: it is called from the
/// run's task, and from the executor's while tool calls are in flight.
pub trait EventSink: Send + Sync {
    /// Take one event.
    fn emit(&self, event: RuntimeEvent);
}

/// Drops every event.
impl EventSink for NoopEventSink {
    fn emit(&self, _event: RuntimeEvent) {}
}

/// Keeps every event in order (read them with `events` or `take`).
impl EventSink for CollectingEventSink {
    fn emit(&self, event: RuntimeEvent) {
        oxydra_executor::ToolEventSink::emit(self, event);
    }
}

/// Forwards events to a channel; a closed receiver drops them.
impl EventSink for mpsc::UnboundedSender<RuntimeEvent> {
    fn emit(&self, event: RuntimeEvent) {
        // A receiver that went away no longer wants events; that is not an error here.
        let _ = self.send(event);
    }
}

/// The events of one run as a [`Stream`]; it ends when the run has ended (after its
/// `final` or `error` event).
#[derive(Debug)]
pub struct RuntimeEventStream {
    receiver: mpsc::UnboundedReceiver<RuntimeEvent>,
}

impl RuntimeEventStream {
    pub(crate) fn new(receiver: mpsc::UnboundedReceiver<RuntimeEvent>) -> Self {
        Self { receiver }
    }

    /// The next event, or `None` once the run has ended and every event was taken
    /// (the same as `StreamExt::next`, without needing `futures`).
    pub async fn recv(&mut self) -> Option<RuntimeEvent> {
        self.receiver.recv().await
    }
}

impl Stream for RuntimeEventStream {
    type Item = RuntimeEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RuntimeEvent>> {
        self.receiver.poll_recv(cx)
    }
}

/// The sinks of one run; every event is scrubbed, then goes to each of them. Cheap to
/// clone (shared inside).
#[derive(Clone)]
pub(crate) struct RunEvents {
    scrubber: Scrubber,
    runtime_sink: Arc<dyn EventSink>,
    run_sink: Option<Arc<dyn EventSink>>,
    channel: Option<mpsc::UnboundedSender<RuntimeEvent>>,
    max_turns: usize,
    /// Their `on_event` gets every event, scrubbed, after the sinks.
    hooks: HookChain,
}

impl RunEvents {
    pub(crate) fn new(
        scrubber: Scrubber,
        runtime_sink: Arc<dyn EventSink>,
        run_sink: Option<Arc<dyn EventSink>>,
        channel: Option<mpsc::UnboundedSender<RuntimeEvent>>,
        max_turns: usize,
    ) -> Self {
        Self {
            scrubber,
            runtime_sink,
            run_sink,
            channel,
            max_turns,
            hooks: HookChain::default(),
        }
    }

    /// The same events, also handed to the `on_event` of `hooks`.
    pub(crate) fn with_hooks(mut self, hooks: HookChain) -> Self {
        self.hooks = hooks;
        self
    }

    /// A progress event of `kind` at `turn`.
    pub(crate) fn progress(&self, kind: RuntimeProgressKind, turn: usize) {
        self.emit(RuntimeEvent::Progress(RuntimeProgressEvent::new(
            kind,
            turn,
            self.max_turns,
        )));
    }

    /// A piece of streamed text.
    pub(crate) fn text_delta(&self, text: &str) {
        self.emit(RuntimeEvent::TextDelta {
            text: text.to_owned(),
        });
    }

    /// A piece of streamed reasoning.
    pub(crate) fn reasoning_delta(&self, text: &str) {
        self.emit(RuntimeEvent::ReasoningDelta {
            text: text.to_owned(),
        });
    }

    /// The end of a turn.
    pub(crate) fn turn_completed(&self, turn: usize, usage: Usage) {
        self.emit(RuntimeEvent::TurnCompleted { turn, usage });
    }
}

impl EventSink for RunEvents {
    /// Scrubs `event` (the one place every event of a run passes, the executor's tool
    /// events included) and hands it to each sink, then to each hook's `on_event`.
    fn emit(&self, event: RuntimeEvent) {
        let event = scrub_event(&self.scrubber, event);
        if let Some(channel) = &self.channel {
            // A dropped receiver only means nobody listens any more.
            let _ = channel.send(event.clone());
        }
        if let Some(sink) = &self.run_sink {
            sink.emit(event.clone());
        }
        if self.hooks.is_empty() {
            self.runtime_sink.emit(event);
        } else {
            self.runtime_sink.emit(event.clone());
            self.hooks.on_event(&event);
        }
    }
}

/// The executor reports a run's tool events through its own sink trait; they take
/// the same path as the run's other events.
impl oxydra_executor::ToolEventSink for RunEvents {
    fn emit(&self, event: RuntimeEvent) {
        EventSink::emit(self, event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn every_sink_and_the_stream_get_each_event() {
        let runtime_sink = Arc::new(CollectingEventSink::new());
        let run_sink = Arc::new(CollectingEventSink::new());
        let (tx, rx) = mpsc::unbounded_channel();
        let events = RunEvents::new(
            Scrubber::new(),
            runtime_sink.clone(),
            Some(run_sink.clone()),
            Some(tx),
            8,
        );
        events.progress(RuntimeProgressKind::ProviderCall, 1);
        events.text_delta("hi");
        events.turn_completed(1, Usage::new(1, 1, 0));
        drop(events);
        let streamed: Vec<RuntimeEvent> = RuntimeEventStream::new(rx).collect().await;
        assert_eq!(streamed.len(), 3);
        assert_eq!(runtime_sink.events(), streamed);
        assert_eq!(run_sink.take(), streamed);
        assert!(run_sink.events().is_empty());
        match &streamed[0] {
            RuntimeEvent::Progress(progress) => {
                assert_eq!(progress.message, "[1/8] Calling the model")
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_tool_error_is_scrubbed_before_any_sink_sees_it() {
        let runtime_sink = Arc::new(CollectingEventSink::new());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let events = RunEvents::new(Scrubber::new(), runtime_sink.clone(), None, Some(tx), 8);
        events.emit(RuntimeEvent::ToolFailed {
            call_id: oxydra_types::CallId::from("call_1"),
            name: "web_fetch".into(),
            error: "HTTP 500: password=hunter2-very-secret".into(),
        });
        let streamed = rx.try_recv().unwrap();
        assert_eq!(runtime_sink.events(), vec![streamed.clone()]);
        let json = serde_json::to_string(&streamed).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
        assert!(json.contains("password=[REDACTED]"), "{json}");
    }
}
