//! No secret leaves in a span: every text a finished span carries (its name, string
//! attributes, event names and attributes, error description) is scrubbed before the
//! span is handed to the exporter, as the log lines are.

use std::borrow::Cow;

use opentelemetry::trace::Status;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::SpanData;
use oxydra_scrubbing::scrub;

/// Scrubs every text of `span` in place.
pub(crate) fn scrub_span(span: &mut SpanData) {
    scrub_cow(&mut span.name);
    scrub_attributes(&mut span.attributes);
    for event in span.events.events.iter_mut() {
        scrub_cow(&mut event.name);
        scrub_attributes(&mut event.attributes);
    }
    if let Status::Error { description } = &mut span.status {
        scrub_cow(description);
    }
}

fn scrub_attributes(attributes: &mut [KeyValue]) {
    for attribute in attributes {
        match &mut attribute.value {
            Value::String(text) => scrub_string_value(text),
            Value::Array(Array::String(texts)) => texts.iter_mut().for_each(scrub_string_value),
            _ => {}
        }
    }
}

fn scrub_string_value(value: &mut StringValue) {
    let scrubbed = scrub(value.as_str());
    if !scrubbed.is_clean() {
        *value = StringValue::from(scrubbed.into_owned());
    }
}

fn scrub_cow(text: &mut Cow<'static, str>) {
    let scrubbed = scrub(text);
    if !scrubbed.is_clean() {
        *text = Cow::Owned(scrubbed.into_owned());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::SystemTime;

    use opentelemetry::InstrumentationScope;
    use opentelemetry::trace::{Event, SpanContext, SpanId, SpanKind};
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};

    use super::*;

    const KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD";

    /// A finished span with `attributes`, one event and `status`.
    pub(crate) fn span_data(
        name: &str,
        attributes: Vec<KeyValue>,
        event: &str,
        status: Status,
    ) -> SpanData {
        let mut events = SpanEvents::default();
        events.events.push(Event::new(
            event.to_owned(),
            SystemTime::now(),
            vec![KeyValue::new("error", format!("401: bad key {KEY}"))],
            0,
        ));
        SpanData {
            span_context: SpanContext::empty_context(),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Owned(name.to_owned()),
            start_time: SystemTime::now(),
            end_time: SystemTime::now(),
            attributes,
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status,
            instrumentation_scope: InstrumentationScope::builder("test").build(),
        }
    }

    #[test]
    fn every_text_of_a_finished_span_is_scrubbed() {
        let mut span = span_data(
            &format!("chat {KEY}"),
            vec![
                KeyValue::new("gen_ai.request.model", "gpt-4o-mini"),
                KeyValue::new("detail", format!("password=hunter2-very-secret {KEY}")),
                KeyValue::new(
                    "list",
                    Value::Array(Array::String(vec![StringValue::from(KEY.to_owned())])),
                ),
                KeyValue::new("gen_ai.usage.input_tokens", 150_i64),
            ],
            &format!("provider call failed: {KEY}"),
            Status::error(format!("refused {KEY}")),
        );
        scrub_span(&mut span);
        let everything = format!("{span:?}");
        assert!(!everything.contains("sk-proj-abcdefghij"), "{everything}");
        assert!(!everything.contains("hunter2"), "{everything}");
        assert!(span.name.starts_with("chat "), "{}", span.name);
        // What holds no secret is left as it was, numbers included.
        assert_eq!(span.attributes[0].value, Value::from("gpt-4o-mini"));
        assert_eq!(span.attributes[3].value, Value::I64(150));
        assert!(
            span.events.events[0]
                .name
                .starts_with("provider call failed: ")
        );
        assert!(
            matches!(&span.status, Status::Error { description } if description.starts_with("refused "))
        );
    }
}
