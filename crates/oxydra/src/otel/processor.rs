//! The span processor in front of the batch exporter: each finished span is given
//! the conventions' attribute types and scrubbed of secrets before it is queued.

use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};

use super::{conventions, scrub};

/// Shapes and scrubs each finished span, then hands it to `next`.
#[derive(Debug)]
pub(crate) struct ExportProcessor<P> {
    next: P,
}

impl<P> ExportProcessor<P> {
    pub(crate) fn new(next: P) -> Self {
        Self { next }
    }
}

impl<P: SpanProcessor> SpanProcessor for ExportProcessor<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.next.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        conventions::shape(&mut span);
        scrub::scrub_span(&mut span);
        self.next.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.next.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.next.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.next.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use opentelemetry::trace::Status;
    use opentelemetry::{Array, KeyValue, StringValue, Value};

    use super::*;
    use crate::otel::scrub::tests::span_data;

    /// A processor that keeps what it is given and counts flushes and shutdowns.
    #[derive(Debug, Default, Clone)]
    struct Keep {
        spans: Arc<Mutex<Vec<SpanData>>>,
        calls: Arc<Mutex<Vec<String>>>,
    }

    impl SpanProcessor for Keep {
        fn on_start(&self, _span: &mut Span, _cx: &Context) {}
        fn on_end(&self, span: SpanData) {
            self.spans.lock().unwrap().push(span);
        }
        fn force_flush(&self) -> OTelSdkResult {
            self.calls.lock().unwrap().push("flush".into());
            Ok(())
        }
        fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
            self.calls
                .lock()
                .unwrap()
                .push(format!("shutdown {}", timeout.as_millis()));
            Ok(())
        }
    }

    #[test]
    fn spans_reach_the_exporter_shaped_and_scrubbed() {
        let kept = Keep::default();
        let processor = ExportProcessor::new(kept.clone());
        processor.on_end(span_data(
            "chat m",
            vec![
                KeyValue::new("gen_ai.response.finish_reasons", "stop"),
                KeyValue::new("note", "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            ],
            "event",
            Status::Unset,
        ));
        let spans = kept.spans.lock().unwrap();
        assert_eq!(spans.len(), 1);
        assert_eq!(
            spans[0].attributes[0].value,
            Value::Array(Array::String(vec![StringValue::from("stop")]))
        );
        let note = spans[0].attributes[1].value.as_str();
        assert!(!note.contains("ghp_abcdefghij"), "{note}");
    }

    #[test]
    fn flush_and_shutdown_reach_the_exporter() {
        let kept = Keep::default();
        let processor = ExportProcessor::new(kept.clone());
        processor.force_flush().unwrap();
        processor
            .shutdown_with_timeout(Duration::from_millis(1500))
            .unwrap();
        assert_eq!(*kept.calls.lock().unwrap(), ["flush", "shutdown 1500"]);
    }
}
